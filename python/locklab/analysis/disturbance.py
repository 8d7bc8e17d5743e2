"""What the machine did to the runs besides the lock: which runs were disturbed, and the one-line
summary of the machine's fitness that heads every table and report.

A run is **disturbed** when, during its measured window, the hypervisor took at least
``STEAL_DISTURBED`` of its CPUs' time (steal, from /proc/stat), or, with no more threads than
CPUs, its threads were preempted more than ``PREEMPTIONS_DISTURBED`` times per thread per second
(involuntary context switches): then another task shared its CPUs. With more threads than CPUs
preemption is the workload itself and does not count. The rule lives here only.
"""

from __future__ import annotations

from dataclasses import dataclass

from locklab.store import Run

STEAL_DISTURBED = 0.02  # share of the window's CPU time the hypervisor took
PREEMPTIONS_DISTURBED = 10.0  # involuntary context switches per thread per second
MARKER = "*"


@dataclass(frozen=True)
class RunDisturbance:
    steal: float | None  # fraction of the run's CPU time, None: not measured
    preemptions_per_s: float | None  # involuntary switches per thread per second
    oversubscribed: bool  # more threads than CPUs: preemption is expected
    cache_miss_reason: str | None  # why there is no cache-miss figure, if there is none

    @property
    def disturbed(self) -> bool:
        stolen = self.steal is not None and self.steal >= STEAL_DISTURBED
        preempted = (
            not self.oversubscribed
            and self.preemptions_per_s is not None
            and self.preemptions_per_s > PREEMPTIONS_DISTURBED
        )
        return stolen or preempted


def rule_text() -> str:
    return (
        f"steal >= {STEAL_DISTURBED:.0%}, or > {PREEMPTIONS_DISTURBED:g} involuntary "
        "switches/s per thread with threads <= CPUs"
    )


def of_run(run: Run) -> RunDisturbance | None:
    """None for runs that recorded neither steal nor context switches (older engines, logs)."""
    result = run.result or {}
    steal = result.get("steal")
    switches = result.get("context_switches") or {}
    if steal is None and "involuntary" not in switches:
        return None
    threads = len(result.get("threads") or [])
    window = result.get("window_s") or 0
    preemptions = None
    if threads and window > 0 and switches.get("involuntary") is not None:
        preemptions = switches["involuntary"] / threads / window
    cpus = (steal or {}).get("cpus") or (run.machine or {}).get("cpus_allowed") or 0
    misses = result.get("cache_misses") or {}
    return RunDisturbance(
        (steal or {}).get("fraction"),
        preemptions,
        bool(cpus) and threads > cpus,
        misses.get("reason"),
    )


def disturbed_runs(runs: list[Run]) -> list[tuple[Run, RunDisturbance]]:
    return [(run, d) for run in runs if (d := of_run(run)) is not None and d.disturbed]


def describe_disturbed(found: list[RunDisturbance]) -> str:
    """What disturbed these runs: '(steal up to 4.1%, up to 130 preemptions/s per thread)'."""
    steals = [d.steal for d in found if d.steal is not None and d.steal >= STEAL_DISTURBED]
    preempted = [
        d.preemptions_per_s
        for d in found
        if not d.oversubscribed
        and d.preemptions_per_s is not None
        and d.preemptions_per_s > PREEMPTIONS_DISTURBED
    ]
    parts = []
    if steals:
        parts.append(f"steal up to {_percent(max(steals))}")
    if preempted:
        parts.append(f"up to {max(preempted):.0f} preemptions/s per thread")
    return f"({', '.join(parts)})" if parts else ""


def _percent(fraction: float) -> str:
    pct = 100 * fraction
    return f"{pct:.1f}%" if pct < 10 else f"{pct:.0f}%"


def summary_line(runs: list[Run]) -> str:
    """'noisy machine: VM, 2 vCPUs, 3.1% steal during runs, 2 of 9 runs disturbed, no perf
    counters' from what the runs stored (the engine's figures and the sweep's machine check);
    'quiet machine: ...' when nothing there can disturb a measurement."""
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
