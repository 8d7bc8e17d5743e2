"""`locklab bisect` over a small kernel git tree (conftest.make_kernel_repo): its branch
`regress` slows rt_mutex_lock() in one commit and breaks mutual exclusion in a later one.
Bisect must name each, simulated (one deterministic run a side) and measured (the verdict's
repeats), resume from its journal, leave the checkout as it was, and refuse bad input in one
line."""

import subprocess
from pathlib import Path

import pytest
from conftest import (
    BROKEN_SUBJECT,
    RTMUTEX_ANCHOR,
    RTMUTEX_C,
    SLOW_SUBJECT,
    commit_edit,
    git,
    locklab_cli,
)

pytestmark = pytest.mark.skipif(
    not Path("/usr/src/linux-source-6.1.tar.xz").exists(),
    reason="linux-source-6.1 is not installed (make deps installs it)",
)


def bisect(repository: Path, store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return locklab_cli("bisect", "--source", str(repository), "--lock", "kernel:rtmutex",
                       "--store", str(store), *args)  # fmt: skip


def first_bad(proc: subprocess.CompletedProcess[str]) -> str:
    line = next(text for text in proc.stdout.splitlines() if text.startswith("first bad commit"))
    return line.split(" ", 4)[4]


def test_simulated_bisect_names_the_slow_commit_and_resumes(kernel_repo, tmp_path):
    before = git(kernel_repo, "status", "--porcelain", "--untracked-files=all")
    # One writer: at two, the pauses keep the unlocker out long enough for the woken waiter,
    # and the convoy goes (docs/kernels.md): that commit makes it faster there.
    args = ("--good", "master", "--bad", "regress~2", "--nwriters", "1", "--sim",
            "lent-xeon-16")  # fmt: skip
    proc = bisect(kernel_repo, tmp_path, *args)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "got slower between master and regress~2" in proc.stdout
    assert first_bad(proc) == SLOW_SUBJECT
    assert "the last two steps (simulated on lent-xeon-16)" in proc.stdout
    assert git(kernel_repo, "status", "--porcelain", "--untracked-files=all") == before
    assert git(kernel_repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "master"
    journal = list(tmp_path.glob("bisect-*.json"))
    assert len(journal) == 1
    again = bisect(kernel_repo, tmp_path, *args)  # from the journal: the same answer
    assert again.returncode == 0 and first_bad(again) == SLOW_SUBJECT
    assert again.stdout == proc.stdout


def test_simulated_bisect_names_the_commit_that_breaks_mutual_exclusion(kernel_repo, tmp_path):
    proc = bisect(kernel_repo, tmp_path, "--good", "master", "--bad", "regress", "--nwriters",
                  "2", "--sim", "lent-xeon-16")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "fails its runs between master and regress" in proc.stdout
    assert first_bad(proc) == BROKEN_SUBJECT


def test_a_commit_that_does_not_build_is_skipped(kernel_repo, tmp_path):
    clone = tmp_path / "linux"
    git(tmp_path, "clone", "-q", str(kernel_repo), str(clone))
    git(clone, "checkout", "-q", "-b", "unbuilt", "origin/master")
    commit_edit(clone, RTMUTEX_C, RTMUTEX_ANCHOR, RTMUTEX_ANCHOR + "this does not compile;\n",
                "locking/rtmutex: break the build")  # fmt: skip
    commit_edit(clone, RTMUTEX_C, "this does not compile;\n", "", "locking/rtmutex: mend it")
    git(clone, "cherry-pick", "origin/regress~3")  # the slow commit, on top
    unbuilt = git(clone, "rev-parse", "HEAD~2").strip()
    proc = bisect(clone, tmp_path / "s", "--good", "origin/master", "--bad", "unbuilt",
                  "--nwriters", "1", "--sim", "lent-xeon-16")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert first_bad(proc) == SLOW_SUBJECT
    assert f"not built): {unbuilt[:12]}" in proc.stdout, proc.stdout
    assert f"break the build: skip (does not build at {unbuilt[:12]}" in proc.stderr, proc.stderr


def test_measured_bisect_names_the_slow_commit(kernel_repo, tmp_path):
    proc = bisect(kernel_repo, tmp_path, "--good", "master", "--bad", "regress~2",
                  "--nwriters", "1", "--duration", "0.05", "--repeat", "2")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert first_bad(proc) == SLOW_SUBJECT


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--good", "v9.9", "--bad", "regress"], "--good v9.9: no such revision in"),
        (["--good", "master", "--bad", "nosuch~3"], "--bad nosuch~3: no such revision in"),
        (["--good", "regress", "--bad", "master"], "--good is not an ancestor of --bad"),
        (["--good", "master", "--bad", "master"], "the same commit"),
        (["--good", "v6.1", "--bad", "docs", "--sim", "lent-xeon-16"], "nothing to bisect"),
        (["--good", "master", "--bad", "regress", "--sim", "lent-xeon-16", "--nwriters", "99"],
         "need more than its 16 CPUs"),
        (["--good", "master", "--bad", "regress", "--kernel", "--sim", "lent-xeon-16"],
         "--kernel: not with --sim"),
        (["--good", "master", "--bad", "regress", "--kernel", "--warmup", "1"],
         "--kernel: not with --warmup"),
        (["--good", "master", "--bad", "regress", "--kernel", "--duration", "2"],
         "leaves fewer than two of locktorture's reports"),
        (["--good", "master", "--bad", "regress", "--cpus", "4"], "--cpus: only with --kernel"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line(kernel_repo, tmp_path, args, message):
    proc = bisect(kernel_repo, tmp_path, *args)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert message in proc.stderr.strip().splitlines()[-1], proc.stderr[-2000:]


def test_a_folder_that_is_not_a_git_tree_is_one_line(tmp_path):
    proc = bisect(tmp_path, tmp_path / "store", "--good", "a", "--bad", "b")
    assert proc.returncode == 2 and "not a git tree" in proc.stderr


def history(repository: Path, store: Path, *args: str,
            lock: str = "kernel:rtmutex") -> subprocess.CompletedProcess[str]:  # fmt: skip
    return locklab_cli("history", "--source", str(repository), "--lock", lock,
                       "--store", str(store), *args)  # fmt: skip


def test_history_judges_each_commit_against_the_one_before(kernel_repo, tmp_path):
    chart, report = tmp_path / "history.png", tmp_path / "history.html"
    args = ("--range", "v6.1..regress", "--nwriters", "2", "--sim", "lent-xeon-16", "-o",
            str(chart), "--report", str(report))  # fmt: skip
    proc = history(kernel_repo, tmp_path, *args)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [line for line in proc.stdout.splitlines() if line.startswith("  ") and
            not line.strip().startswith("commit")]  # fmt: skip
    # v6.1, then the four commits that touch what kernel:rtmutex compiles (not the READMEs).
    subjects = ["Linux 6.1", "locking/rtmutex: add a comment", SLOW_SUBJECT,
                "locking/rtmutex: a longer comment", BROKEN_SUBJECT]  # fmt: skip
    assert [row.split(None, 1)[1][:30].strip() for row in rows] == [
        subject[:30].strip() for subject in subjects]  # fmt: skip
    assert rows[1].endswith("equal") and rows[2].endswith("HIGHER")  # the convoy goes
    assert "failed:" in rows[4]
    assert chart.stat().st_size > 0
    page = report.read_text()
    assert page.count("<svg") == 1 and "<?xml" not in page
    assert "locking/rtmutex: DELIBERATELY BROKEN" in page and "kernel:rtmutex at 2 writers" in page
    again = history(kernel_repo, tmp_path, *args)
    assert "0 runs to take (5 kept)" in again.stderr and again.stdout == proc.stdout
    bad = history(kernel_repo, tmp_path, "--range", "v6.1", "--nwriters", "1")
    assert bad.returncode == 2 and "give A..B" in bad.stderr
    bad = history(kernel_repo, tmp_path, "--range", "v6.1..nosuch", "--nwriters", "1")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr, bad.stderr[-2000:]
    assert "--range v6.1..nosuch: no such revision nosuch in" in bad.stderr.splitlines()[-1]
    bad = history(kernel_repo, tmp_path, "--range", "v6.1..regress", "--report", "x.pdf")
    assert bad.returncode == 2 and "name a .html file" in bad.stderr


def test_history_with_readers(kernel_repo, tmp_path):
    """kernel:rwsem's readers beside its writers; a lock without readers refused in one line."""
    proc = history(kernel_repo, tmp_path, "--range", "v6.1..master", "--nwriters", "1",
                   "--nreaders", "2", "--sim", "lent-xeon-16", lock="kernel:rwsem")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("kernel:rwsem at 1 writer and 2 readers over v6.1..master")
    proc = history(kernel_repo, tmp_path, "--range", "v6.1..master", "--nreaders", "2",
                   "--sim", "lent-xeon-16")  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "is not a reader-writer lock" in proc.stderr.strip().splitlines()[-1]


def test_a_commit_that_compiles_the_same_files_is_judged_unmeasured(kernel_repo, tmp_path):
    """v6.1..regress~3: the README commit (docs) leaves every compiled file as v6.1 has it."""
    proc = bisect(kernel_repo, tmp_path, "--good", "v6.1", "--bad", "regress~3", "--nwriters",
                  "1", "--sim", "lent-xeon-16")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "README: say more: good (the same compiled files as v6.1)" in proc.stderr
    assert first_bad(proc) == SLOW_SUBJECT
