"""What the machine did to the runs besides the lock: which runs were disturbed, and the one-line
summary of the machine's fitness that heads every table and report.

A run is **disturbed** when, during its measured window, the hypervisor took at least
``STEAL_DISTURBED`` of its CPUs' time (steal, from /proc/stat), or when its threads, which did
not sleep of their own accord and had a CPU each, lost more than ``CPU_LOST_DISTURBED`` of the
window to other tasks: CPU time (getrusage) under the window's length. Measured on this
project's 2-vCPU VM, one spinning thread keeps 0.99 of its CPU on a quiet machine and 0.50 with
a busy loop on the same CPU; two threads on two CPUs keep 0.95, the rest going to the engine's
own control thread and the kernel's housekeeping (about 100 preemptions/s per thread, which is
why a count of preemptions alone cannot tell a disturbed run). With more threads than CPUs, or
a lock whose waiters sleep, time off the CPU is the workload, not a disturbance. A disturbed
run that lost at least ``WINDOW_LOST_UNMEASURED`` of its window (to steal or to other tasks)
measured next to nothing of the lock (a run at 0.0 kops/s, "100% of the window lost"): it is
listed with the others but left out of its cell's mean and test. The rule lives here only.
"""

from __future__ import annotations

from dataclasses import dataclass

from locklab.store import Run

STEAL_DISTURBED = 0.02  # share of the window's CPU time the hypervisor took
CPU_LOST_DISTURBED = 0.10  # share of each thread's window spent off its CPU, not sleeping
# A thread that sleeps (voluntary switches) more often than this is off its CPU by design.
VOLUNTARY_SLEEPS_PER_S = 10.0
# A run that lost this share of its window to the host is not a sample of the lock.
WINDOW_LOST_UNMEASURED = 0.9
MARKER = "*"


@dataclass(frozen=True)
class RunDisturbance:
    steal: float | None  # fraction of the run's CPU time, None: not measured
    preemptions_per_s: float | None  # involuntary switches per thread per second
    cpu_lost: float | None  # share of the window off the CPU; None: not judged (see above)
    cache_miss_reason: str | None  # why there is no cache-miss figure, if there is none

    @property
    def stolen(self) -> bool:
        return self.steal is not None and self.steal >= STEAL_DISTURBED

    @property
    def preempted(self) -> bool:
        return self.cpu_lost is not None and self.cpu_lost > CPU_LOST_DISTURBED

    @property
    def disturbed(self) -> bool:
        return self.stolen or self.preempted

    @property
    def unmeasured(self) -> bool:
        """It lost (nearly) all of its window to the host: left out of the mean."""
        lost = max(self.steal or 0.0, self.cpu_lost or 0.0)
        return self.disturbed and lost >= WINDOW_LOST_UNMEASURED


def rule_text() -> str:
    return (
        f"steal >= {STEAL_DISTURBED:.0%}, or threads that neither sleep nor outnumber the CPUs "
        f"losing > {CPU_LOST_DISTURBED:.0%} of the window to other tasks; a run that lost "
        f">= {WINDOW_LOST_UNMEASURED:.0%} of it is left out of the mean"
    )


def of_run(run: Run) -> RunDisturbance | None:
    """None for runs that recorded neither steal nor context switches (older engines, logs)."""
    if (run.machine or {}).get("simulated"):  # virtual time: nothing on the host reaches it
        return None
    result = run.result or {}
    steal = result.get("steal")
    switches = result.get("context_switches") or {}
    if steal is None and "involuntary" not in switches:
        return None
    threads = len(result.get("threads") or [])
    window = result.get("window_s") or 0
    preemptions = voluntary = None
    if threads and window > 0:
        if switches.get("involuntary") is not None:
            preemptions = switches["involuntary"] / threads / window
        if switches.get("voluntary") is not None:
            voluntary = switches["voluntary"] / threads / window
    cpus = (steal or {}).get("cpus") or (run.machine or {}).get("cpus_allowed") or 0
    utilisation = (result.get("cpu") or {}).get("utilisation")
    judged = (
        threads > 0
        and bool(cpus)
        and threads <= cpus
        and utilisation is not None
        and voluntary is not None
        and voluntary <= VOLUNTARY_SLEEPS_PER_S
    )
    cpu_lost = max(0.0, 1.0 - utilisation / threads) if judged else None
    miss_reason = (result.get("cache_misses") or {}).get("reason")
    return RunDisturbance((steal or {}).get("fraction"), preemptions, cpu_lost, miss_reason)


def disturbed_runs(runs: list[Run]) -> list[tuple[Run, RunDisturbance]]:
    return [(run, d) for run in runs if (d := of_run(run)) is not None and d.disturbed]


def is_sample(run: Run) -> bool:
    """A successful run whose figure enters its cell's mean: not one whose window the host
    took (WINDOW_LOST_UNMEASURED)."""
    if run.status != "ok":
        return False
    found = of_run(run)
    return found is None or not found.unmeasured


def describe_disturbed(found: list[RunDisturbance]) -> str:
    """What disturbed these runs: '(steal up to 4.1%, up to 48% of the window lost to other
    tasks, 130 preemptions/s per thread)'."""
    steals = [d.steal for d in found if d.stolen and d.steal is not None]
    preempted = [d for d in found if d.preempted and d.cpu_lost is not None]
    parts = []
    if steals:
        parts.append(f"steal up to {_percent(max(steals))}")
    if preempted:
        worst = max(preempted, key=lambda d: d.cpu_lost or 0.0)
        lost = f"up to {_percent(worst.cpu_lost or 0.0)} of the window lost to other tasks"
        if worst.preemptions_per_s is not None:
            lost += f", {worst.preemptions_per_s:.0f} preemptions/s per thread"
        parts.append(lost)
    unmeasured = sum(d.unmeasured for d in found)
    if unmeasured:
        parts.append(f"{unmeasured} left out of the mean, having lost >= "
                     f"{WINDOW_LOST_UNMEASURED:.0%} of the window")  # fmt: skip
    return f"({', '.join(parts)})" if parts else ""


def _percent(fraction: float) -> str:
    pct = 100 * fraction
    return f"{pct:.1f}%" if pct < 10 else f"{pct:.0f}%"


def summary_line(runs: list[Run]) -> str:
    """'noisy machine: VM, 2 vCPUs, 3.1% steal during runs, 2 of 9 runs disturbed, no perf
    counters' from what the runs stored (the engine's figures and the sweep's machine check);
    'quiet machine: ...' when nothing there can disturb a measurement."""
    machines = [run.machine for run in runs if run.machine]  # a failed run may have none
    if machines and all(machine.get("simulated") for machine in machines):
        return ("simulated machine: virtual time, which nothing on this host disturbs; its "
                "p-values and intervals are the spread across seeds of the model (tie order, "
                "latency draws), not measurement noise")  # fmt: skip
    checks = [c for run in runs if (c := (run.machine or {}).get("check"))]
    measured = [(run, d) for run in runs if (d := of_run(run)) is not None]
    if not checks and not measured:
        return "machine check: not recorded for these runs (see 'locklab doctor')"
    check: dict = checks[0] if checks else {}
    noisy: list[str] = []
    notes: list[str] = []
    cpus = next((m.get("cpus_online") for run in runs if (m := run.machine)), None)
    if check.get("vm"):
        noisy.append("VM")
        if cpus:
            noisy.append(f"{cpus} vCPUs")
    elif cpus:
        notes.append(f"{cpus} CPUs")
    steals = [d.steal for _, d in measured if d.steal is not None]
    if steals:
        mean = sum(steals) / len(steals)
        text = f"{_percent(mean)} steal during runs"
        (noisy if mean >= STEAL_DISTURBED / 2 else notes).append(text)
    disturbed = [d for _, d in measured if d.disturbed]
    if measured:
        text = f"{len(disturbed)} of {len(measured)} runs disturbed"
        (noisy if disturbed else notes).append(text)
    for key, warning in (
        ("frequency_fixed", "frequency not fixed"),
        ("boost_off", "turbo/boost on"),
        ("smt_off", "SMT on"),
        ("irqbalance_off", "irqbalance running"),
        ("numa_balancing_off", "NUMA balancing on"),
    ):
        if check.get(key) is False:
            noisy.append(warning)
    if check.get("isolated_cpus") == "":
        notes.append("no isolated CPUs")
    if any((d.cache_miss_reason or "").startswith("perf_event_open") for _, d in measured):
        notes.append("no perf counters")
    label = "noisy machine" if noisy else "quiet machine"
    return f"{label}: {', '.join(noisy + notes) or 'nothing to report'}"
