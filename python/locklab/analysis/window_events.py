"""Workload events a measured window is too short for.

locktorture's delays (--torture-delays) hold the lock for a long time, rarely: 100 ms to 1 s,
about once in 200,000 acquisitions per writer. Such a hold is part of the workload: a run it
falls in stays in its cell's mean (a simulated 4 ms window inside a 100 ms hold measures
0 ops/s), and the engine counts it in the run's `torture_delays` even when it began in the
warm-up. But where one hold takes more of a run's window than the verdict's minimum effect,
whether a run met one decides its figure, and averaging a few runs does not make that a
measurement of the workload: the cell is flagged as too short for that event. Longer windows
settle it, not more runs.

The locks' own rare events are the same kind of thing: an rwsem's hand-off (one jiffy of
waiting), CNA's flush of its secondary queue (1 or 10 ms), a time-bounded spin that ran out.
The engine counts them in the window (`lock_events`: lock.h's own, and a kernel: lock's
lockevent counters). A cell whose runs drew one of them fewer than FEW_EVENTS times each on
average, some runs more than others, and whose figures spread by more than the minimum effect,
may owe its spread to which runs drew them: it is flagged too short as well. The rule lives
here only.
"""

from __future__ import annotations

from locklab.store import Run

TOO_SHORT_MARK = "#"
ROLES = ("writer", "reader")
# Fewer than this many per run on average: a count whose run-to-run spread (Poisson's, about
# one over its square root) is a third of it or more.
FEW_EVENTS = 10
# The events with a time constant of a window's order, by the name the engine reports, and
# what the verdict calls them.
RARE_EVENTS = {
    "spin_expired": "spin budgets run out",
    "queue_flush": "secondary-queue flushes",
    "rwsem_wlock_handoff": "rwsem writer hand-offs",
    "rwsem_rlock_handoff": "rwsem reader hand-offs",
}


def long_hold_ns(run: Run, min_effect_pct: float) -> int:
    """The longest of locktorture's long holds that this run counted and that lasts more than
    `min_effect_pct` of its window; 0 when it counted none such."""
    result = run.result or {}
    window_ns = (result.get("window_s") or 0) * 1e9
    delays = result.get("torture_delays") or {}
    held = [
        role["long_ns"]
        for name in ROLES
        if (role := delays.get(name)) and role.get("long") and role.get("long_ns")
    ]
    return max((ns for ns in held if ns > min_effect_pct / 100 * window_ns), default=0)


def rare_events(run: Run) -> dict[str, int]:
    """The run's counts of RARE_EVENTS in its window (none for a run that reports none)."""
    counted = (run.result or {}).get("lock_events") or {}
    every = {**counted, **(counted.get("plugin") or {})}
    return {name: int(every[name]) for name in RARE_EVENTS if isinstance(every.get(name), int)}


def too_few(runs: list[Run], values: list[float], min_effect_pct: float) -> dict[str, range]:
    """The rare events this cell's runs drew too few of to decide its figure: name -> the
    range of counts per run (see the module's rule)."""
    if len(values) < 2 or not (mean := sum(values) / len(values)):
        return {}
    if (max(values) - min(values)) / abs(mean) * 100 <= min_effect_pct:
        return {}
    counts: dict[str, list[int]] = {}
    for run in runs:
        for name, count in rare_events(run).items():
            counts.setdefault(name, []).append(count)
    return {
        name: range(min(found), max(found) + 1)
        for name, found in counts.items()
        if len(found) == len(runs) and min(found) != max(found)
        and sum(found) / len(found) < FEW_EVENTS
    }  # fmt: skip


def rule_text(min_effect_pct: float) -> str:
    return (
        f"{TOO_SHORT_MARK} window too short for a long hold a run met (one hold > "
        f"{min_effect_pct:g}% of the window), or for a rare event of the lock's its runs drew "
        f"fewer than {FEW_EVENTS} of each, unevenly, while they spread by more than "
        f"{min_effect_pct:g}%"
    )


def hold_text(ns: int) -> str:
    """'100 ms', '1 s'."""
    return f"{ns / 1e9:g} s" if ns >= 1_000_000_000 else f"{ns / 1e6:g} ms"
