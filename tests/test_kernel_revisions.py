"""Whole kernels from revisions of the user's git tree: `locklab kernel --source DIR --rev
LABEL=REV`, `locklab kernel build --rev` and `locklab bisect --kernel`. Bad input is one line
before anything is built; the revisions of one tree share a work tree, each taking only the
files it changes; `make test-slow` builds and boots revisions of a git tree made from Debian's
6.1 tree, and bisects them booted."""

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import (
    BROKEN_SUBJECT,
    RTMUTEX_ANCHOR,
    RTMUTEX_C,
    SLOW_AT,
    commit_edit,
    edit_file,
    git,
    locklab_cli,
)

pytestmark = pytest.mark.skipif(
    not Path("/usr/src/linux-source-6.1.tar.xz").exists(),
    reason="linux-source-6.1 is not installed (make deps installs it)",
)


def one_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    return proc.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["kernel", "build", "--rev", "a=v6.1"], "--rev needs --source DIR, a kernel git tree"),
        (["kernel", "build", "--source", "{repo}", "--rev", "a=v9.9"], "no such revision"),
        (["kernel", "build", "--source", "{repo}", "--rev", "a=v6.1", "--rev", "a=master"],
         "label 'a' given twice"),
        (["kernel", "--rev", "a=v6.1", "--kernel", "bzImage"],
         "give one of --kernel, --patch/--rev, --images and --host-kernel"),
        (["kernel", "--rev", "a=v6.1", "--exec", "true"],
         "--rev needs --source DIR, a kernel git tree"),
    ],
)  # fmt: skip
def test_bad_revisions_are_one_line_before_any_build(kernel_repo, tmp_path, args, says):
    argv = [arg.replace("{repo}", str(kernel_repo)) for arg in args]
    store = [] if argv[1] == "build" else ["--store", str(tmp_path / "s")]
    assert says in one_line(locklab_cli(*argv, *store))


@pytest.mark.slow  # a cold kernel build from an exported tree: about 10 min on 2 cores
@pytest.mark.timeout(2400)
def test_a_kernel_builds_and_boots_from_a_revision_of_a_git_tree(tmp_path):
    repository = _whole_6_1_repo(tmp_path)
    built = locklab_cli("kernel", "build", "--source", str(repository), "--rev", "base=v6.1",
                        timeout=2000)  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    commit = git(repository, "rev-parse", "v6.1").strip()
    assert f"from {repository} v6.1 ({commit[:12]} 'Linux 6.1')" in built.stdout, built.stdout
    assert git(repository, "status", "--porcelain") == "", "the checkout changed"
    booted = locklab_cli(
        "kernel", "--source", str(repository), "--rev", "base=v6.1", "--type", "rtmutex_lock",
        "--nwriters", "1", "--repeat", "1", "--duration", "5", "--accel", "tcg",
        "--store", str(tmp_path / "s"), timeout=600,
    )  # fmt: skip
    assert booted.returncode == 0, booted.stderr[-3000:]
    assert "base" in booted.stdout
    inside = locklab_cli(
        "kernel", "--source", str(repository), "--rev", "base=v6.1", "--exec", "true",
        "--repeat", "1", "--accel", "tcg", "--store", str(tmp_path / "s"), timeout=600,
    )  # fmt: skip
    assert inside.returncode == 0, inside.stderr[-3000:]


def test_revisions_of_one_tree_share_a_work_tree_taking_what_differs(tmp_path, monkeypatch):
    from locklab.kernel import build, revisions

    monkeypatch.setattr(revisions, "REVISIONS", tmp_path / "revisions")
    repository = tmp_path / "repo"
    repository.mkdir()
    for name, text in (("Makefile", "all:\n"), ("kept.c", "kept\n"), ("changed.c", "old\n"),
                       ("removed.c", "removed\n")):  # fmt: skip
        (repository / name).write_text(text)
    git(repository, "init", "-q", "-b", "master")
    git(repository, "add", "-A")
    git(repository, "commit", "-q", "-m", "one")
    (repository / "changed.c").write_text("new\n")
    (repository / "removed.c").unlink()
    (repository / "added.c").write_text("added\n")
    git(repository, "add", "-A")
    git(repository, "commit", "-q", "-m", "two")
    first = revisions.read_revision(repository, "HEAD~1", ())
    second = revisions.read_revision(repository, "HEAD", ())
    work = tmp_path / "work"

    def switch(exported: revisions.Revision) -> list[str]:
        """What a build of `exported` writes into the work tree."""
        revision = (repository.resolve(), exported.commit)
        base, differing = build._prepare_work_tree(work, exported.tree, revision)
        return build._sync_work_tree(work, base, exported.tree, differing)

    assert switch(first) == []
    kept = (work / "kept.c").stat().st_ino
    assert switch(second) == ["added.c", "changed.c", "removed.c"]
    assert (work / "changed.c").read_text() == "new\n" and (work / "added.c").exists()
    assert not (work / "removed.c").exists()
    assert (work / "kept.c").stat().st_ino == kept  # untouched, so make rebuilds nothing of it
    assert (first.tree / "changed.c").read_text() == "old\n"  # an export is never written
    assert switch(second) == []  # as the last build left it: nothing to rebuild
    assert switch(first) == ["added.c", "changed.c", "removed.c"]
    assert (work / "changed.c").read_text() == "old\n" and (work / "removed.c").exists()
    assert not (work / "added.c").exists()
    shutil.rmtree(first.tree)  # the base's export removed: a work tree of its own again
    second_again = revisions.read_revision(repository, "HEAD", ())
    assert switch(second_again) == [] and (work / "changed.c").read_text() == "new\n"


# A booted step must see the slowdown through an emulated guest's noise: 100 us per lock.
BOOT_SLOW_SUBJECT = "locking/rtmutex: wait 100 us in rt_mutex_lock()"


def _whole_6_1_repo(folder: Path) -> Path:
    """Debian's 6.1 tree as a git tree, one commit, tag v6.1."""
    from locklab.kernel.build import unpack_default_source

    repository = folder / "linux"
    # Hard links: git only reads the files, and a commit on top writes new ones (edit_file).
    subprocess.run(["cp", "-al", str(unpack_default_source()), str(repository)], check=True)
    git(repository, "init", "-q", "-b", "master")
    git(repository, "add", "-A", "-f")
    git(repository, "commit", "-q", "-m", "Linux 6.1")
    git(repository, "tag", "v6.1")
    return repository


def _whole_kernel_repo(folder: Path) -> Path:
    """_whole_6_1_repo's tree, then: a comment, the slow commit, a longer comment, the
    deliberately broken patch."""
    repository = _whole_6_1_repo(folder)
    commit_edit(repository, RTMUTEX_C, RTMUTEX_ANCHOR, RTMUTEX_ANCHOR + "/* a comment */\n",
                "locking/rtmutex: add a comment")  # fmt: skip
    api = "kernel/locking/rtmutex_api.c"
    edit_file(repository, api, "#include <linux/spinlock.h>\n",
              "#include <linux/spinlock.h>\n#include <linux/delay.h>\n")  # fmt: skip
    commit_edit(repository, api, SLOW_AT, SLOW_AT + "\tudelay(100);\n", BOOT_SLOW_SUBJECT)
    commit_edit(repository, RTMUTEX_C, "/* a comment */\n", "/* a comment, longer */\n",
                "locking/rtmutex: a longer comment")  # fmt: skip
    broken = Path(__file__).resolve().parents[1] / "campaigns" / "patches" / "broken" / (
        "0001-rtmutex-take-an-owned-lock-now-and-then.patch")  # fmt: skip
    edit_file(repository, RTMUTEX_C, "", "")  # a new file, not the unpacked tree's
    subprocess.run(["patch", "-s", "-p1", "-i", str(broken)], cwd=repository, check=True)
    git(repository, "commit", "-q", "-am", BROKEN_SUBJECT)
    return repository


@pytest.mark.slow  # a cold kernel build, then one incremental build per commit: see docs
@pytest.mark.timeout(3600)
def test_a_booted_bisect_names_the_slow_commit_and_the_broken_one(tmp_path):
    repository = _whole_kernel_repo(tmp_path)
    status = git(repository, "status", "--porcelain")

    def bisect(bad: str, *args: str) -> subprocess.CompletedProcess[str]:
        return locklab_cli("bisect", "--source", str(repository), "--lock", "kernel:rtmutex",
                           "--kernel", "--accel", "tcg", "--good", "v6.1", "--bad", bad,
                           "--store", str(tmp_path / "s"), *args, timeout=3000)  # fmt: skip

    # Emulated (TCG), one writer's 4 s runs vary by about 20% from boot to boot: a comment
    # commit is judged equal only within a wide margin. The slow commit is 99% slower.
    slow = bisect("master~1", "--nwriters", "1", "--duration", "4", "--min-effect", "50",
                  "--repeat", "3", "--max-repeat", "8")  # fmt: skip
    assert slow.returncode == 0, slow.stderr[-3000:]
    assert "got slower between v6.1 and master~1" in slow.stdout, slow.stdout
    assert f"first bad commit: {git(repository, 'rev-parse', 'master~2').strip()} " \
        f"{BOOT_SLOW_SUBJECT}" in slow.stdout, slow.stdout  # fmt: skip
    broken = bisect("master", "--nwriters", "2", "--duration", "8", "--repeat", "2")
    assert broken.returncode == 0, broken.stderr[-3000:]
    assert "fails its runs between v6.1 and master" in broken.stdout, broken.stdout
    assert f"first bad commit: {git(repository, 'rev-parse', 'master').strip()} " \
        f"{BROKEN_SUBJECT}" in broken.stdout, broken.stdout  # fmt: skip
    assert git(repository, "status", "--porcelain") == status, "the checkout changed"
