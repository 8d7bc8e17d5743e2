"""More threads than virtual CPUs: the simulator's run queues (native/sim/runqueue.c,
docs/scheduler.md) give each CPU's threads slices of it as Linux's fair scheduler does, a
sleeper leaves its CPU to the next, and the switches are counted as getrusage() counts them.
On the tiny 4-CPU profile of test_sim.py, whose scheduler period scales by 1 + log2(4):
sched_latency 18 ms, so two threads of one CPU get 9 ms each, ended at the next 4 ms tick.
Then priorities: the engine's priority-inversion scenario, a SCHED_FIFO preemption and a boost
through the ports' and the tree's rtmutex."""

from pathlib import Path

import pytest
from conftest import BUILD
from locklab.kernel.from_source import build_source_lock
from locklab.model.machine_profile import load_profile
from test_sim import TINY_PROFILE, figures, simulate, tiny_machine


@pytest.fixture(scope="module")
def machine(tmp_path_factory) -> Path:
    """test_sim.py's tiny 2-socket, 4-CPU profile."""
    return tiny_machine(tmp_path_factory.mktemp("sched"))


WINDOW = ["--duration", "0.1", "--warmup", "0.01"]


def switches(result: dict) -> tuple[int, int]:
    counted = result["context_switches"]
    return counted["voluntary"], counted["involuntary"]


def test_two_spinners_pinned_to_one_cpu_take_turns_a_slice_each(machine):
    """Two ticket spinners on CPU 0: the one whose turn it is runs only in its own slice, so
    one acquisition per slice, and each slice ends in a preemption: 9 ms rounded up to a tick,
    9 to 12 ms, so 8 to 11 in 0.1 s; a thread reads its counts at its own acquisitions, so
    the window's ends cut a slice or two off."""
    proc, result = simulate(machine, ["--lock", "ticket", "--nwriters", "2", "--pin", "0",
                                      *WINDOW])  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    voluntary, involuntary = switches(result)
    assert voluntary == 0 and 6 <= involuntary <= 11, result["context_switches"]
    assert involuntary - 2 <= result["total_acquisitions"] <= involuntary + 2
    again, same = simulate(machine, ["--lock", "ticket", "--nwriters", "2", "--pin", "0",
                                     *WINDOW])  # fmt: skip
    assert figures(same) == figures(result)  # deterministic, as every simulated run


def test_spinners_collapse_where_parkers_sleep_and_leave_the_cpu(machine):
    """Twice as many writers as CPUs: ticket's waiters spin through the slices the next in
    line needs; with wait=spin-then-park they sleep, and a sleeper's CPU goes to its neighbour
    at once, with no preemption at all."""
    args = ["--nwriters", "8", "--pin", "scatter", *WINDOW]
    proc, spinning = simulate(machine, ["--lock", "ticket", *args])
    assert proc.returncode == 0, proc.stderr
    proc, parking = simulate(machine, ["--lock", "ticket", "--param", "wait=spin-then-park",
                                       *args])  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert parking["throughput_ops_per_s"] > 100 * spinning["throughput_ops_per_s"] > 0
    assert switches(spinning)[0] == 0 and switches(spinning)[1] > 0
    assert switches(parking)[0] > 0 and switches(parking)[1] == 0


def test_a_yield_hands_the_cpu_to_the_thread_waiting_for_it(machine):
    proc, result = simulate(machine, ["--lock", "ticket", "--param", "wait=yield",
                                      "--nwriters", "8", "--pin", "scatter", *WINDOW])  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    _, involuntary = switches(result)
    assert involuntary > result["total_acquisitions"] > 0  # many yields for each hand-over


@pytest.mark.parametrize("pin", ["scatter", "none"])
def test_a_cpu_of_its_own_never_waits(machine, pin):
    proc, result = simulate(machine, ["--lock", "ticket", "--nwriters", "4", "--pin", pin,
                                      "--duration", "0.001", "--warmup", "0.0001"])  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert switches(result) == (0, 0)


def pi_scenario(machine, lock: str, *extra: str) -> dict:
    """The engine's --scenario pi-inversion (docs/engine.md) on the simulated machine: low
    (SCHED_FIFO 10) holds the lock, medium (20) burns its CPU for ten holds, high (30) waits,
    all pinned to one CPU; here nothing needs a privilege, and the order is the model's."""
    proc, result = simulate(machine, ["--lock", lock, "--scenario", "pi-inversion", "--ops", "5",
                                      "--hold-ns", "100000", *extra])  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert result["scenario"] == "pi-inversion" and result["iterations"] == 5
    return result


@pytest.mark.parametrize(
    ("lock", "inherits"),
    [("rtmutex", True), ("rtmutex_adaptive", True), ("rtmutex_rt_2_6_24", True),
     ("futex_mutex", False), ("mutex", False)],
)  # fmt: skip
def test_a_higher_priority_preempts_and_inheritance_bounds_the_inversion(machine, lock,
                                                                        inherits):  # fmt: skip
    """Medium's wake-up of high preempts medium at once (FIFO 30 over 20); with priority
    inheritance the port's boost (sched_setscheduler() on the owner's thread) puts low above
    medium, so high waits about one hold (0.1 ms); without it, medium's whole burst (1 ms)."""
    result = pi_scenario(machine, lock)
    assert result["lock_has_priority_inheritance"] is inherits
    assert result["high_before_medium"] == (5 if inherits else 0)
    longest = result["high_wait_ns"]["max"]
    assert (longest < 300_000) if inherits else (longest > 1_000_000), result["high_wait_ns"]


def test_the_kernels_rtmutex_boosts_through_the_shim(machine):
    """The tree's own rt_mutex_setprio() tells the model (kshim/sched.c): high waits one hold."""
    plugin = build_source_lock("rtmutex", "stock", [], "sim", BUILD / "opt" / "locklab-bench",
                               sim_machine=machine.read_text())  # fmt: skip
    result = pi_scenario(machine, "kernel:rtmutex", "--plugin", str(plugin.plugin))
    assert result["high_before_medium"] == 5
    assert result["high_wait_ns"]["max"] < 300_000, result["high_wait_ns"]


def test_the_kernels_mutex_spinners_leave_a_cpu_another_thread_needs(machine):
    """Twice as many writers as CPUs under the tree's 6.1 mutex: its optimistic spinners run
    with preemption off, and leave their spin on need_resched() (the model's answer) and on an
    owner off its CPU; without them a spinner held its CPU against a preempted owner until the
    watchdog (64 writers on mach1)."""
    plugin = build_source_lock("mutex", "stock", [], "sim", BUILD / "opt" / "locklab-bench",
                               sim_machine=machine.read_text())  # fmt: skip
    proc, result = simulate(machine, ["--plugin", str(plugin.plugin), "--lock", "kernel:mutex",
                                      "--nwriters", "16", "--pin", "scatter",
                                      "--duration", "0.05", "--warmup", "0.01"])  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert result["total_acquisitions"] > 1000 and result["violations"]["total"] == 0


def test_a_woken_thread_starts_as_late_as_its_idle_cpu_wakes(tmp_path):
    """A profile's wake_to_run replaces context_switch for a wake-up on an idle CPU, and a
    deeper idle state, whose target residency the CPU was idle for, adds its exit latency:
    the rtmutex's hand-overs at three writers, each to a waiter that slept (no equal-priority
    steal), slow down in that order."""

    def rate(costs: str) -> float:
        name = f"wake-{len(list(tmp_path.iterdir()))}"
        text = TINY_PROFILE.replace('name = "tiny-2s"', f'name = "{name}"').replace(
            "[sources]\n",
            f"{costs}[sources]\nwake_to_run = 'estimate: test'\n"
            "idle_states = 'estimate: test'\n",
        )
        (tmp_path / f"{name}.toml").write_text(text)
        flat = tmp_path / f"{name}.machine"
        flat.write_text(load_profile(tmp_path / f"{name}.toml").flat_text())
        proc, result = simulate(flat, ["--lock", "rtmutex", "--nwriters", "3", "--pin",
                                       "scatter", "--duration", "0.002", "--warmup",
                                       "0.0002"])  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return result["throughput_ops_per_s"]

    context_switch = rate("")  # 4000 cycles a wake-up
    shallow = rate("wake_to_run = 40000\n")
    deep = rate("wake_to_run = 40000\nidle_states = [[40000, 0], [400000, 2000]]\n")
    assert context_switch > 2 * shallow > 0
    assert shallow > 2 * deep > 0
