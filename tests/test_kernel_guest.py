"""Programs inside built kernels (`locklab kernel --patch ... --exec`) and the kernel's own
checkers as findings (`--debug kcsan,lockdep,kasan`).

The parsing tests run everywhere. The end-to-end tests boot, under emulation, the kernel that
test_kernel_build.py builds (the comment-only test patch; programs run from the host's root
over 9p), and build one kernel of their own with KCSAN and lockdep and the two deliberately
broken locktorture patches, whose reports must come out as findings. Skipped, with the
reason, where the packages are missing."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from locklab.errors import LocklabError
from locklab.kernel import build as kernel_build
from locklab.kernel import build_inputs, cyclictest, findings, guest
from locklab.kernel.qemu import console_verdict, missing_cpus
from locklab.store import Store

PATCHES = ROOT / "campaigns" / "patches"
TEST_PATCH = PATCHES / "test" / "0001-rtmutex-comment-only.patch"
RACY_PATCH = PATCHES / "broken" / "0002-locktorture-unmarked-counter-outside-the-lock.patch"
INVERTED_PATCH = PATCHES / "broken" / "0003-locktorture-two-locks-in-both-orders.patch"
LOCKLAB = [sys.executable, "-m", "locklab.cli"]

KCSAN_REPORT = """\
[   12.345678] ==================================================================
[   12.345901] BUG: KCSAN: data-race in lock_torture_writer / lock_torture_writer
[   12.346000]
[   12.346100] read-write to 0xffffffff82c0e4a8 of 8 bytes by task 61 on cpu 1:
[   12.346200]  lock_torture_writer+0x1b3/0x2a0
"""
LOCKDEP_SPLAT = """\
[    3.100000] ======================================================
[    3.100001] WARNING: possible circular locking dependency detected
[    3.100002] 6.1.192 #1 Not tainted
[    3.100003] ------------------------------------------------------
[    3.100004] lock_torture_wr/60 is trying to acquire lock:
[    3.100005] ffffffff82a3c0b8 (locklab_lock_a){+.+.}-{2:2}, at: lock_torture_writer+0x5c/0x2a0
[    3.100006]
[    3.100007] but task is already holding lock:
[    3.100008] ffffffff82a3c0d0 (locklab_lock_b){+.+.}-{2:2}, at: lock_torture_writer+0x4f/0x2a0
"""
KASAN_REPORT = "[    5.0] BUG: KASAN: slab-out-of-bounds in foo_write+0x10/0x20\n"
WARN_LINE = "[ 6.0] WARNING: CPU: 1 PID: 55 at kernel/locking/rtmutex.c:1234 rt_mutex_x+0x1/0x2\n"


def one_line(error: pytest.ExceptionInfo) -> str:
    message = str(error.value)
    assert "\n" not in message
    return message


# --- findings: read from consoles ------------------------------------------------------------


def test_each_checker_report_is_a_finding_with_its_sites():
    found = findings.findings(KCSAN_REPORT + LOCKDEP_SPLAT + KASAN_REPORT + WARN_LINE)
    assert [f.line() for f in found] == [
        "KCSAN data-race: lock_torture_writer vs lock_torture_writer",
        "lockdep possible circular locking dependency detected: locklab_lock_a vs "
        "locklab_lock_b",
        "KASAN slab-out-of-bounds in foo_write",
        "WARNING at kernel/locking/rtmutex.c:1234 in rt_mutex_x",
    ]
    assert findings.summary(found * 2).startswith("2 KCSAN data-race")


def test_a_checker_report_is_not_a_crash_but_an_oops_still_is():
    assert console_verdict(KCSAN_REPORT + KASAN_REPORT) is None
    crashed = KCSAN_REPORT + "[   13.0] BUG: kernel NULL pointer dereference, address: 0\n"
    assert console_verdict(crashed).startswith("bug: ")
    assert console_verdict("[ 1.0] Kernel panic - not syncing: sysrq").startswith("panic")


def test_a_clean_console_has_no_findings():
    assert findings.findings("[ 0.1] Linux version 6.1\n[ 0.2] Run /init\n") == []


def test_a_guest_short_of_cpus_is_a_failed_run():
    # Every guest before ACPI was built in brought up one CPU whatever -smp said.
    assert missing_cpus("LOCKLAB-CPUS 1\n", 2) == "the guest brought up 1 of 2 CPUs"
    assert missing_cpus("LOCKLAB-CPUS 2\n", 2) is None


# --- the guest's markers ---------------------------------------------------------------------


def guest_console(*lines: str) -> guest.GuestRun:
    run = guest.GuestRun("\n".join(lines), "", "tcg", limit_s=10)
    guest.read_markers(run)
    return run


def test_markers_give_status_wall_time_and_context_switches():
    run = guest_console(f"{guest.BEGIN} ctxt=100 uptime=1.50", f"{guest.END} status=0 "
                        "ctxt=350 uptime=3.75")  # fmt: skip
    assert (run.outcome, run.exit_status, run.context_switches) == ("ok", 0, 250)
    assert run.wall_s == pytest.approx(2.25)


@pytest.mark.parametrize(
    "lines, says",
    [
        ((f"{guest.BEGIN} ctxt=1 uptime=1", f"{guest.END} status=3 ctxt=2 uptime=2"),
         "exit status 3"),
        ((f"{guest.BEGIN} ctxt=1 uptime=1", f"{guest.END} status=139 ctxt=2 uptime=2"),
         "killed by signal 11"),
        ((f"{guest.BEGIN} ctxt=1 uptime=1", f"{guest.END} status=137 ctxt=2 uptime=12"),
         "hung: killed after 10 s"),
        ((f"{guest.BEGIN} ctxt=1 uptime=1", f"{guest.END} status=127 ctxt=2 uptime=2"),
         "command not found"),
        ((f"{guest.BEGIN} ctxt=1 uptime=1",), "stopped before the program ended"),
        ((guest.MOUNT_FAILED,), "could not mount the host's root"),
        (("Linux version 6.1",), "did not start the program"),
    ],
)  # fmt: skip
def test_a_program_that_fails_is_a_failed_run_saying_how(lines, says):
    run = guest_console(*lines)
    assert run.failed and says in run.outcome


# --- options, checked before anything builds -------------------------------------------------


def test_debug_options_are_checked_in_one_line():
    assert build_inputs.debug_options(["kcsan", "lockdep"])["KCSAN"] == "y"
    with pytest.raises(LocklabError) as error:
        build_inputs.debug_options(["kcsan", "kasan"])
    assert "KCSAN depends on !KASAN" in one_line(error)
    with pytest.raises(LocklabError) as error:
        build_inputs.debug_options(["tsan"])
    assert "unknown checker 'tsan'" in one_line(error)


@pytest.mark.parametrize(
    "args, says",
    [
        (["--exec", "true"], "give the kernels to build and boot with --patch"),
        (["--patch", "k0", "--exec", "true 'unclosed"], "--exec: No closing quotation"),
        (["--patch", "k0", "--exec", "true", "--threads", "1,x"], "threads"),
        (["--patch", "k0", "--exec", "true", "--timeout", "0"], "--timeout must be above 0"),
        (["--patch", "k0", "--exec", "true", "--threads", "1,2"], "no {threads} to vary"),
        (["--patch", "k0", "--exec", "true", "--debug", "kasan,kcsan"], "cannot be built"),
        (["--patch", "k0", "--exec", "true", "--param", "stutter=0"], "--param is locktorture"),
        (["--kernel", "x", "--debug", "kcsan"], "--debug: only for kernels built here"),
        (["--kernel", "x", "--threads", "2"], "only with --exec"),
    ],
)  # fmt: skip
def test_bad_exec_options_are_one_line_and_exit_2(tmp_path, args, says):
    proc = subprocess.run([*LOCKLAB, "kernel", *args, "--store", str(tmp_path / "s.db")],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert says in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "Traceback" not in proc.stderr


# --- end to end, under emulation -------------------------------------------------------------


def boot_tools() -> None:
    missing = [t for t in ("make", "gcc", "flex", "bison", "qemu-system-x86_64")
               if shutil.which(t) is None]  # fmt: skip
    if not kernel_build.SOURCE_TARBALL.exists():
        missing.append("linux-source-6.1")
    if not guest.BUSYBOX.exists():
        missing.append("busybox-static")
    if missing:
        pytest.skip(f"kernel guest test skipped: {', '.join(missing)} missing")


def locklab(tmp_path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    command = [*LOCKLAB, *args, "--store", str(tmp_path / "s.db"), "--plain"]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=tmp_path)


@pytest.mark.timeout(1500)
def test_a_program_runs_inside_the_patched_kernel_and_a_crash_is_a_failed_run(tmp_path):
    """The program is a copy under /tmp (pytest's tmp_path), where users keep scratch programs:
    the guest mounts a fresh /tmp, and what the command names under it is carried in."""
    boot_tools()
    scratch = tmp_path / "x"
    scratch.mkdir()
    program = scratch / "probe"
    shutil.copy(ROOT / "build" / "opt" / "pi-futex-load", program)
    proc = locklab(
        tmp_path, "kernel", "--patch", f"ci-test={TEST_PATCH}", "--exec",
        f"{program} {{threads}} 2000", "--threads", "1,2", "--metric-regex", r"ops/s: (\S+)",
        "--accel", "tcg", "--timeout", "60",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "inside each kernel" in proc.stdout
    assert "qemu-tcg (emulated: timing not representative" in proc.stdout
    runs = Store(tmp_path / "s.db").runs(Store(tmp_path / "s.db").experiments()[0])
    assert len(runs) == 2 and all(r.status == "ok" for r in runs)
    for run in runs:
        switches = run.result["guest"]["context_switches"]
        assert isinstance(switches, int) and switches > 0
        assert "ok" in run.result["output_tail"]
    table = locklab(tmp_path, "table", "1", "--metric", "ctxsw-op", timeout=60)
    assert "guest context switches/1k ops" in table.stdout, table.stderr

    # A program that crashes the kernel, and one that hangs: failed runs, one line each, the
    # console kept, within the time limits.
    crash = locklab(
        tmp_path, "kernel", "--patch", f"ci-test={TEST_PATCH}", "--exec",
        "sh -c 'echo c > /proc/sysrq-trigger'", "--accel", "tcg", "--timeout", "30",
        "--name", "crash",
    )  # fmt: skip
    assert crash.returncode == 1, crash.stderr[-2000:]
    assert "panic" in crash.stderr and "Traceback" not in crash.stderr
    assert list((tmp_path / "kernel-logs" / "crash").glob("ci-test-*.log"))
    hang = locklab(
        tmp_path, "kernel", "--patch", f"ci-test={TEST_PATCH}", "--exec", "sleep 600",
        "--accel", "tcg", "--timeout", "3", "--name", "hang",
    )  # fmt: skip
    assert hang.returncode == 1 and "hung: killed after 3 s" in hang.stderr, hang.stderr


@pytest.mark.slow  # a cold KCSAN + lockdep kernel build: 11 min of CI's 30 (make test-slow)
@pytest.mark.timeout(1800)
def test_kcsan_and_lockdep_report_the_broken_patches_as_findings(tmp_path):
    boot_tools()
    proc = locklab(
        tmp_path, "kernel", "--patch", f"checkers={RACY_PATCH},{INVERTED_PATCH}",
        "--debug", "kcsan,lockdep", "--type", "spin_lock", "--nwriters", "2",
        "--duration", "12", "--param", "stutter=0", "--param", "shuffle_interval=0",
        "--accel", "tcg", timeout=1700,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Kernel checkers' findings:" in proc.stdout, proc.stdout[-3000:]
    line = next(text for text in proc.stdout.splitlines() if text.startswith("checkers: "))
    assert "KCSAN data-race: lock_torture_writer vs lock_torture_writer" in line, line
    assert "lockdep possible circular locking dependency detected" in line, line
    assert "locklab_lock_a" in line and "locklab_lock_b" in line, line


def test_what_a_command_names_under_tmp_and_run_is_carried_into_the_guest(tmp_path):
    folder = tmp_path / "probe-dir"
    folder.mkdir()
    (folder / "data").write_text("1\n")
    top = Path("/tmp", *tmp_path.relative_to("/tmp").parts[:1]) if tmp_path.is_relative_to(
        "/tmp") else None  # fmt: skip
    command = f"{folder}/probe --input={folder}/data /etc/hostname /tmp/no-such-folder/x"
    assert guest.carried_folders(command) == ([top] if top else [])
    assert guest.carried_folders("sleep 1; cat /proc/uptime") == []
    lines = guest._carry_lines([Path("/tmp/x y")])
    assert "$B mount -o bind '/host-tmp/x y' '/root/tmp/x y'" in lines


# --- cyclictest's histogram (seed 003's latency) ---------------------------------------------

CYCLICTEST_OUTPUT = """\
# /dev/cpu_dma_latency set to 0us
# Histogram
000000 000000\t000000
000001 000050\t000040
000002 000045\t000050
000003 000004\t000009
000004 000000\t000000
# Total: 000000100 000000100
# Min Latencies: 00001 00001
# Avg Latencies: 00001 00002
# Max Latencies: 00007 00003
# Histogram Overflows: 00001 00000
"""


def test_cyclictest_histogram_gives_max_and_p99_over_every_thread():
    figures = cyclictest.latency(CYCLICTEST_OUTPUT)
    # 198 bucketed samples + 1 overflow: the 99th percentile is the 198th, in bucket 3.
    assert figures == {"max_us": 7.0, "p99_us": 3.0, "samples": 199.0}
    assert cyclictest.latency("no histogram here\n") is None


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_seed_003_builds_preempt_rt_6_12_and_measures_latency_and_throughput(tmp_path):
    """`make test-slow`: Linux 6.12 with PREEMPT_RT, stock and never spinning, under cyclictest
    and hackbench (about 5 minutes to build on 2 cores, 1.5 minutes to run)."""
    boot_tools()
    missing = [tool for tool in ("cyclictest", "hackbench") if shutil.which(tool) is None]
    if missing or not kernel_build.debian_source("6.12")[0].exists():
        pytest.skip("seed 003 needs rt-tests and linux-source-6.12 (scripts/install-deps.sh)")
    proc = locklab(tmp_path, "campaign", str(ROOT / "campaigns" / "seed-003-kernel.toml"),
                   "--repeat", "2", timeout=2300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    # One table: throughput, context switches and latency, against the kernel that never spins.
    for header in ("throughput adaptive (ops/s)", "ctxsw-op adaptive (guest context switches",
                   "rt-p99 adaptive (cyclictest p99 latency us)",
                   "rt-max adaptive (cyclictest max latency us)"):  # fmt: skip
        assert header in proc.stdout, proc.stdout[-3000:]
    assert "Linux 6.12" in proc.stdout and "qemu-" in proc.stdout
