"""The simulator's two runtimes (native/sim/scheduler.c, "Contexts"), at the smallest scale:
every program thread's code as a context swapped on one host thread (the default), and each
on a host thread of its own with the baton handed between them (LOCKLAB_SIM_SWITCH=threads).
The order of the threads is the runtime's decision, not the host's, so one binary gives the
same figures both ways, field for field but the host's own; thread-local storage stays each
thread's own; a deadlock, a crash and Ctrl-C end a run as before."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import test_sim
from conftest import BUILD, plugin_path
from locklab.analysis.seed_spread import virtual_figures as virtual
from locklab.kernel.from_source import build_source_lock
from locklab.model.machine_profile import find_profile

SIM = test_sim.SIM
RUNTIMES = ("threads", "contexts")
WINDOW = ["--duration", "0.0005", "--warmup", "0.0001", "--pin", "scatter"]


@pytest.fixture(scope="module")
def machine(tmp_path_factory) -> Path:
    """A 16-CPU profile of one socket, and a 4-socket one for the runs across sockets."""
    folder = tmp_path_factory.mktemp("contexts")
    for name in ("lent-xeon-16", "x5-4"):
        (folder / f"{name}.machine").write_text(find_profile(name).flat_text())
    return folder


def simulate(machine: Path, runtime: str, args: list[str], env: dict[str, str] | None = None):
    """test_sim's run of the simulator, with this runtime."""
    return test_sim.simulate(machine, args, {"LOCKLAB_SIM_SWITCH": runtime, **(env or {})})


def both_runtimes(machine: Path, args: list[str]) -> dict[str, dict]:
    results = {}
    for runtime in RUNTIMES:
        proc, result = simulate(machine, runtime, args)
        assert proc.returncode == 0, f"{runtime}: {proc.stderr[-1500:]}"
        results[runtime] = result
    return results


@pytest.mark.parametrize(
    "profile, lock, writers",
    [("lent-xeon-16", "mcs", 2), ("lent-xeon-16", "ticket", 4), ("x5-4", "qspinlock", 8),
     ("x5-4", "cna", 8), ("lent-xeon-16", "futex_mutex", 4)],
)  # fmt: skip
def test_both_runtimes_give_the_same_figures(machine, profile, lock, writers):
    """Spinning, queueing across sockets, and sleeping in futexes: identical but for host_*."""
    args = ["--lock", lock, "--nwriters", str(writers), *WINDOW]
    runs = both_runtimes(machine / f"{profile}.machine", args)
    assert virtual(runs["threads"]) == virtual(runs["contexts"])
    assert runs["contexts"]["total_acquisitions"] > 0
    # The same hand-overs, made in user space: as many, and each far cheaper.
    assert runs["threads"]["simulation"]["host_switches"] == runs["contexts"]["simulation"][
        "host_switches"]  # fmt: skip


def test_the_thread_pointer_by_system_call_gives_the_same_figures(machine):
    """Where the kernel has no FSGSBASE, each swap sets the thread pointer with
    arch_prctl(ARCH_SET_FS): the fallback, forced here, with the thread-local plugin."""
    flat = machine / "lent-xeon-16.machine"
    args = ["--plugin", str(plugin_path("sim", "tls_ticket")), "--lock", "tls_ticket",
            "--nwriters", "4", *WINDOW]  # fmt: skip
    runs = both_runtimes(flat, args)
    proc, by_call = simulate(flat, "contexts", args, env={"LOCKLAB_SIM_FSBASE": "arch_prctl"})
    assert proc.returncode == 0, proc.stderr[-1500:]
    assert virtual(by_call) == virtual(runs["contexts"])


def test_a_kernel_lock_gives_the_same_figures(machine):
    """The tree's rtmutex, whose waiters sleep in futexes and whose shim keeps a task per
    thread in thread-local storage."""
    flat = machine / "lent-xeon-16.machine"
    engine = BUILD / "opt" / "locklab-bench"  # the simulator's is found beside it
    plugin = build_source_lock("rtmutex", "stock", [], "sim", engine,
                               sim_machine=flat.read_text())  # fmt: skip
    args = ["--plugin", str(plugin.plugin), "--lock", "kernel:rtmutex", "--nwriters", "4",
            *WINDOW]  # fmt: skip
    runs = both_runtimes(flat, args)
    assert virtual(runs["threads"]) == virtual(runs["contexts"])
    assert runs["contexts"]["total_acquisitions"] > 0


def test_thread_local_storage_stays_each_threads_own(machine):
    """tls_ticket keeps its ticket in thread-local storage and aborts on another thread's
    block, or on a gettid() that is not its own host thread's."""
    args = ["--plugin", str(plugin_path("sim", "tls_ticket")), "--lock", "tls_ticket",
            "--nwriters", "8", *WINDOW]  # fmt: skip
    runs = both_runtimes(machine / "lent-xeon-16.machine", args)
    assert virtual(runs["threads"]) == virtual(runs["contexts"])
    assert runs["contexts"]["status"] == "ok" and runs["contexts"]["violations"]["total"] == 0


def test_a_deadlock_ends_the_same_way_in_both(machine):
    args = ["--plugin", str(plugin_path("sim", "never_unlock")), "--lock", "never_unlock",
            "--nwriters", "2", "--watchdog", "0.1"]  # fmt: skip
    for runtime in RUNTIMES:
        proc, result = simulate(machine / "lent-xeon-16.machine", runtime, args)
        assert proc.returncode == 3, proc.stderr
        assert result["status"] == "watchdog"
        assert "thread 1 on CPU" in proc.stderr


def test_a_broken_lock_fails_the_same_way_in_both(machine):
    """The deliberately broken lock lets two writers in: the engine's check fails its run with
    the same violations, and the same counts, both ways."""
    args = ["--plugin", str(plugin_path("sim", "broken_tts")), "--lock", "broken_tts",
            "--nwriters", "4", *WINDOW]  # fmt: skip
    results = []
    for runtime in RUNTIMES:
        proc, result = simulate(machine / "lent-xeon-16.machine", runtime, args)
        assert proc.returncode != 0 and result is not None, proc.stderr
        results.append(virtual(result))
    assert results[0] == results[1]
    assert results[0]["status"] == "violation" and results[0]["violations"]["total"] > 0


def test_ctrl_c_ends_a_run_of_contexts_at_once(machine):
    """SIGINT reaches the host thread that runs every context (the parked ones block it)."""
    proc = subprocess.Popen(
        [str(SIM), "--lock", "mcs", "--nwriters", "8", "--duration", "100", "--json", "-"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "LOCKLAB_SIM_MACHINE": str(machine / "x5-4.machine")},
    )  # fmt: skip
    try:
        time.sleep(1.0)
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGINT


def test_an_unknown_runtime_is_one_line(machine):
    proc, _ = simulate(machine / "lent-xeon-16.machine", "fibres", ["--lock", "mcs", *WINDOW])
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "locklab-sim: error: LOCKLAB_SIM_SWITCH is contexts or threads, not 'fibres'"
    ]
