"""The engine's watchdog on a loaded host (docs/engine.md, "The watchdog"): a deadlock is caught
by the watchdog, not by the front end's outer kill, and called a deadlock; a holder that other
tasks keep off the CPU is called starved. The host is loaded by busy processes the test starts,
each bounded by `timeout` and killed by the test. Nothing asserts on time."""

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import CORES, bench_path, plugin_path
from locklab.model.limits import engine_time_limit_s
from locklab.run.engine import Engine
from locklab.run.outcome import EXIT_WATCHDOG, EngineOutcome

WATCHDOG_S = 1.0
# Where the kernel keeps no scheduler statistics (CONFIG_SCHED_INFO off) the line cannot say.
needs_schedstat = pytest.mark.skipif(
    not Path("/proc/self/schedstat").exists(), reason="no /proc/self/schedstat on this kernel"
)


@contextmanager
def busy_processes(count: int, cpus: str | None = None) -> Iterator[None]:
    """`count` processes that spin (each ends itself after 60 s), on `cpus` if given."""
    pin = ["taskset", "-c", cpus] if cpus else []  # taskset execs: the process is the spinner
    spin = "import time\nend = time.monotonic() + 60\nwhile time.monotonic() < end: pass"
    spinners = [subprocess.Popen([*pin, sys.executable, "-c", spin]) for _ in range(count)]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def measure(args: list[str], warmup_s: float, duration_s: float):
    """One engine run as the front end makes it: killed at the front end's limit."""
    timing = ["--warmup", str(warmup_s), "--duration", str(duration_s)]
    return Engine(bench_path("opt")).run(
        [*args, *timing, "--watchdog", str(WATCHDOG_S)],
        timeout_s=engine_time_limit_s(warmup_s, duration_s, WATCHDOG_S),
    )


@needs_schedstat
def test_a_deadlock_on_a_loaded_host_is_the_watchdogs_and_called_a_deadlock():
    """Spinning waiters of a lock that is never released, beside twice as many busy processes
    as CPUs: the watchdog ends the run (not the outer kill), calls it a deadlock, since every
    thread got a CPU in the meantime, and says how much of the time the threads ran and waited.
    Before, the line said nothing of the host."""
    plugin = ["--plugin", str(plugin_path("opt", "never_unlock")), "--lock", "never_unlock"]
    with busy_processes(2 * CORES):
        outcome = measure([*plugin, "--nwriters", "4"], 0, 0.5)
    assert outcome.status == "watchdog", outcome.error_line()
    line = outcome.error_line()
    assert "deadlock or livelock" in line and "waited for a CPU" in line, line


@needs_schedstat
def test_a_holder_kept_off_the_cpu_is_called_starved():
    """Two writers of a ticket lock that each hold it for 50 ms of work, on one CPU. Once both
    threads run (calibration done), the test renices the engine's threads to 19 and pins three
    busy processes to that CPU: the holder gets a sliver of it, so no acquisition comes within
    the watchdog. That is a preempted holder, not a deadlock: the run is still the watchdog's,
    and its line says starved. Before, it was called a deadlock."""
    args = ["--lock", "ticket", "--nwriters", "2", "--hold-ns", "50000000", "--pin", "0",
            "--warmup", "0", "--duration", "20", "--watchdog", str(WATCHDOG_S)]  # fmt: skip
    engine = subprocess.Popen(
        ["taskset", "-c", "0", str(bench_path("opt")), *args, "--json", "-"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        tasks = Path(f"/proc/{engine.pid}/task")
        deadline = time.monotonic() + 30
        while len(list(tasks.iterdir())) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)  # the control thread and both writers: calibrated, started
        for task in tasks.iterdir():
            os.setpriority(os.PRIO_PROCESS, int(task.name), 19)
        with busy_processes(3, cpus="0"):
            _, stderr = engine.communicate(timeout=engine_time_limit_s(0, 20, WATCHDOG_S))
    finally:
        engine.kill()
        engine.wait()
    assert engine.returncode == 3, stderr
    assert "starved by other tasks, not called a deadlock" in stderr, stderr


def test_a_watchdog_whose_report_was_lost_is_still_a_watchdog_run():
    """The handler's last resort (the control thread got no CPU to write the report) leaves its
    line and exit status 3 without a JSON: the run is stored as the watchdog's, with that line,
    not as an error."""
    line = "locklab-bench: watchdog: no acquisition in 1 s with lock 'x', and the control thread"
    outcome = EngineOutcome(["locklab-bench"], EXIT_WATCHDOG, None, line + "\n", 2.0)
    assert outcome.status == "watchdog"
    assert outcome.error_line() == line
