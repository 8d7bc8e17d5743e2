"""The tuner: find one value of a lock's tunable that holds up everywhere (seed 004's open
problem: no automatic way to find spinlock_delay).

Objective: for each value v and each point p of the axes (thread counts x workloads), the
throughput relative to the best value at that point, r(v, p) = T(v, p) / max_v' T(v', p). The
tuner maximises the worst case, min_p r(v, p): one value that avoids the cliffs, rather than
the one that wins on average and collapses somewhere.

Search: a coarse grid over [lo, hi] (log-spaced unless a step is given, since such tunables
span decades), then rounds of refinement between the best value's neighbours. Every
measurement is an ordinary stored experiment, one variant per value.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

Point = tuple[tuple[str, int], ...]
Measurements = dict[tuple[int, Point], float]


@dataclass
class TuneResult:
    value: int
    worst_relative: float  # min over points of T(value, p) / best at p
    relative: dict[tuple[int, Point], float]
    best_at: dict[Point, int]  # the best value at each point
    evaluated: list[int]


def grid(lo: int, hi: int, step: int | None, count: int) -> list[int]:
    """The coarse grid: every `step` from lo (at most `count` of them, evenly thinned), or
    `count` log-spaced integers from lo to hi."""
    if step:
        values = list(range(lo, hi + 1, step))
        if len(values) > count:
            values = [values[round(i * (len(values) - 1) / (count - 1))] for i in range(count)]
        return sorted(set(values) | {lo})
    if lo <= 0:
        return sorted({lo, *grid(1, hi, None, count - 1)}) if hi >= 1 else [lo]
    ratio = (hi / lo) ** (1 / max(count - 1, 1))
    return sorted({min(hi, round(lo * ratio**i)) for i in range(count)} | {lo, hi})


def assess(measurements: Measurements) -> TuneResult:
    values = sorted({value for value, _ in measurements})
    points = sorted({point for _, point in measurements})
    best_at = {p: max(values, key=lambda v: measurements.get((v, p), -math.inf)) for p in points}
    relative = {
        (v, p): measurements[v, p] / measurements[best_at[p], p]
        if measurements[best_at[p], p] > 0
        else 0.0
        for v in values
        for p in points
        if (v, p) in measurements
    }
    worst = {v: min(relative.get((v, p), 0.0) for p in points) for v in values}
    # Ties: the smaller value (less waiting, the safer choice for a delay).
    chosen = max(values, key=lambda v: (worst[v], -v))
    return TuneResult(chosen, worst[chosen], relative, best_at, values)


def refine(evaluated: list[int], chosen: int, step: int | None, count: int) -> list[int]:
    """New values strictly between the chosen value's evaluated neighbours."""
    below = max((v for v in evaluated if v < chosen), default=chosen)
    above = min((v for v in evaluated if v > chosen), default=chosen)
    unit = step or 1
    candidates = set()
    for low, high in ((below, chosen), (chosen, above)):
        for i in range(1, count + 1):
            value = low + round((high - low) * i / (count + 1) / unit) * unit
            if low < value < high:
                candidates.add(value)
    return sorted(candidates - set(evaluated))


def search(
    evaluate: Callable[[list[int]], Measurements],
    lo: int,
    hi: int,
    step: int | None = None,
    grid_points: int = 8,
    rounds: int = 2,
    per_side: int = 2,
) -> TuneResult:
    """Coarse grid, then `rounds` refinements around the best worst-case value."""
    measurements = dict(evaluate(grid(lo, hi, step, grid_points)))
    result = assess(measurements)
    for _ in range(rounds):
        # Around the chosen value, and around each point's best: the relative throughputs are
        # only as good as the bests they are divided by.
        new = sorted(
            {
                value
                for centre in {result.value, *result.best_at.values()}
                for value in refine(result.evaluated, centre, step, per_side)
            }
        )
        if not new:
            break
        measurements |= evaluate(new)
        result = assess(measurements)
    return result
