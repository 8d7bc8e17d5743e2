"""Workload events a measured window is too short for.

locktorture's delays (--torture-delays) hold the lock for a long time, rarely: 100 ms to 1 s,
about once in 200,000 acquisitions per writer. Such a hold is part of the workload: a run it
falls in stays in its cell's mean (a simulated 4 ms window inside a 100 ms hold measures
0 ops/s), and the engine counts it in the run's `torture_delays` even when it began in the
warm-up. But where one hold takes more of a run's window than the verdict's minimum effect,
whether a run met one decides its figure, and averaging a few runs does not make that a
measurement of the workload: the cell is flagged as too short for that event. Longer windows
settle it, not more runs. The rule lives here only.
"""

from __future__ import annotations

from locklab.store import Run

TOO_SHORT_MARK = "#"
ROLES = ("writer", "reader")


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


def rule_text(min_effect_pct: float) -> str:
    return (
        f"{TOO_SHORT_MARK} window too short for a long hold a run met (one hold > "
        f"{min_effect_pct:g}% of the window)"
    )


def hold_text(ns: int) -> str:
    """'100 ms', '1 s'."""
    return f"{ns / 1e9:g} s" if ns >= 1_000_000_000 else f"{ns / 1e6:g} ms"
