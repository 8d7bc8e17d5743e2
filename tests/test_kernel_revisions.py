"""Whole kernels from revisions of the user's git tree: `locklab kernel --source DIR --rev
LABEL=REV` and `locklab kernel build --rev`. Bad input is one line before anything is built;
`make test-slow` builds and boots a revision of a git tree made from Debian's 6.1 tree."""

import subprocess
from pathlib import Path

import pytest
from conftest import git, locklab_cli

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
    from locklab.kernel.build import unpack_default_source

    repository = tmp_path / "linux"
    # Hard links: git only reads the files, and nothing here writes one.
    subprocess.run(["cp", "-al", str(unpack_default_source()), str(repository)], check=True)
    git(repository, "init", "-q", "-b", "master")
    git(repository, "add", "-A", "-f")
    git(repository, "commit", "-q", "-m", "Linux 6.1")
    git(repository, "tag", "v6.1")
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
