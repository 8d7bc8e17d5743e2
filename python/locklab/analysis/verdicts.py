"""Verdicts: one line per compared column and section, saying where it is significantly higher
or lower than its baseline (for throughput: faster or slower) and where it is noisy; and the
legend of the table's markers."""

from __future__ import annotations

import math

from locklab.analysis import disturbance, stats, window_events
from locklab.analysis.model import Section, Settings

# How each axis reads in a verdict: (unit after a value, name of the whole axis).
AXIS_WORDS: dict[str, tuple[str, str]] = {
    "nwriters": ("writers", "thread count"),
    "nreaders": ("readers", "reader count"),
    "hold_ns": ("ns held", "hold time"),
    "gap_ns": ("ns between", "gap"),
    "cs_lines": ("lines", "cs_lines"),
}


def verdict(section: Section, column: int, axis: str, settings: Settings) -> str:
    """One line: where this column is significantly higher or lower than its baseline by at
    least the minimum effect (for throughput: faster or slower), significant but below it,
    shown equal within it, or inconclusive (with about how many runs would settle it)."""
    axis_name = AXIS_WORDS[axis][1]
    judged: dict[str, list[tuple[int, stats.Comparison]]] = {}
    noisy, tested = [], []
    for row in section.rows:
        cell = section.cells.get((column, row))
        if cell is None or cell.comparison is None:
            continue
        if cell.noisy:
            noisy.append(row)
        judgement = cell.comparison.judgement(settings.min_effect)
        if judgement == stats.UNTESTED:
            continue
        tested.append(row)
        judged.setdefault(judgement, []).append((row, cell.comparison))
    if not tested:
        return "not tested: fewer than 2 successful runs per cell"
    measure = settings.measure
    effect = f"{settings.min_effect:g}%"
    words = {
        stats.HIGHER: measure.higher, stats.LOWER: measure.lower,
        stats.BELOW_MIN: f"significant but below {effect}",
        stats.EQUAL: f"equal within \u00b1{effect}", stats.INCONCLUSIVE: "inconclusive",
    }  # fmt: skip
    parts = []
    for judgement, word in words.items():
        found = judged.get(judgement, [])
        if not found:
            continue
        rows = [row for row, _ in found]
        if len(rows) == len(tested) and len(tested) > 1:
            where = f"at every {axis_name}"
        else:
            where = f"at {(w := _where(rows, tested))} {_unit(axis, w)}"
        if judgement in (stats.HIGHER, stats.LOWER, stats.BELOW_MIN):
            parts.append(f"{word} {where} {_figures([c for _, c in found], settings.min_effect)}")
        elif judgement == stats.INCONCLUSIVE:
            parts.append(f"{word} {where}{_settle([c for _, c in found], settings.min_effect)}")
        else:
            parts.append(f"{word} {where}")
    line = "; ".join(parts)
    crowded = [row for row in tested if row in section.oversubscribed]
    if crowded:
        where = _where(crowded, section.rows)
        line += f"; oversubscribed at {where} {_unit(axis, where)}"
    if noisy:
        where = _where(noisy, section.rows)
        at = (f"at every {axis_name}" if len(noisy) == len(section.rows) > 1
              else f"at {where} {_unit(axis, where)}")  # fmt: skip
        line += f"; noisy (CV > {settings.noise_cv:.0%}) {at}"
        cells = [c for row in noisy if (c := section.cells.get((column, row))) is not None]
        disturbed = sum(len(c.disturbed) for c in cells)
        if disturbed:
            runs = sum(len(c.runs) for c in cells)
            line += f" ({disturbed} of {runs} runs disturbed)"
    return line + _short_window(section, column, axis) + _rare_events(section, column, axis)


def _short_window(section: Section, column: int, axis: str) -> str:
    """'; window too short for its 100 ms long holds at 1 writer (1 of 3 runs met one)'."""
    cells = {row: cell for row in section.rows
             if (cell := section.cells.get((column, row))) is not None
             and cell.short_window_runs}  # fmt: skip
    if not cells:
        return ""
    where = _where(list(cells), section.rows)
    hold = window_events.hold_text(max(c.short_window_hold_ns for c in cells.values()))
    met = sum(c.short_window_runs for c in cells.values())
    runs = sum(len(c.runs) for c in cells.values())
    return (f"; window too short for its {hold} long holds at {where} {_unit(axis, where)} "
            f"({met} of {runs} runs met one; longer runs settle it, not more)")  # fmt: skip


def _rare_events(section: Section, column: int, axis: str) -> str:
    """'; too few rwsem writer hand-offs at 4 writers (0 to 3 per run; longer runs settle it,
    not more)', one clause per event."""
    found: dict[str, dict[int, range]] = {}
    for row in section.rows:
        if (cell := section.cells.get((column, row))) is not None:
            for name, counts in cell.rare_events.items():
                found.setdefault(name, {})[row] = counts
    clauses = []
    for name, rows in found.items():
        where = _where(list(rows), section.rows)
        least = min(r.start for r in rows.values())
        most = max(r.stop - 1 for r in rows.values())
        clauses.append(f"; too few {window_events.RARE_EVENTS[name]} at {where} "
                       f"{_unit(axis, where)} ({least} to {most} per run; longer runs settle "
                       "it, not more)")  # fmt: skip
    return "".join(clauses)


def _settle(comparisons: list[stats.Comparison], min_effect: float) -> str:
    """' (about 12 runs per cell would settle it)', from the widest of these intervals."""
    needed = [c.runs_to_settle(min_effect) for c in comparisons]
    if any(n is None for n in needed):
        return f" (more than {stats.MOST_RUNS} runs per cell, or longer runs, would settle it)"
    return f" (about {max(n for n in needed if n is not None)} runs per cell would settle it)"


COLLAPSE_PCT = -50.0  # a drop this deep at an oversubscribed point is explained, not just shown


def oversubscribed_note(
    section: Section, columns: list, axis: str, cpus: int, settings: Settings
) -> str:
    """What an oversubscribed row measures, and which columns collapsed there and why."""
    rows = sorted(section.oversubscribed)
    where = _where(rows, section.rows)
    collapsed = []
    for index, column in enumerate(columns):
        worst = min(
            (cell.comparison.rel_pct for row in rows
             if (cell := section.cells.get((index, row))) is not None and cell.comparison
             and cell.comparison.p_value is not None),
            default=0.0,
        )  # fmt: skip
        if worst <= COLLAPSE_PCT:
            collapsed.append(f"{column.header} ({worst:+.0f}%)")
    note = (
        f"oversubscribed: {where} {_unit(axis, where)} on {cpus} CPUs, more threads than CPUs: a "
        "spinning waiter burns the CPU a preempted holder needs, and a FIFO lock (ticket, mcs, "
        "clh, qspinlock) stalls whenever the next waiter in line is preempted, for a scheduler "
        "tick; such points measure the scheduler as much as the lock (a spinning lock's "
        "--param wait=spin-then-park sleeps instead)"
    )
    if collapsed:
        note += f". Collapsed there: {', '.join(collapsed)}"
    return note


def disturbed_line(section: Section, column: int, axis: str) -> str:
    """Where this column's runs were disturbed and by what: '2 of 3 runs at 2 writers, 1 of 3
    at 4 writers (steal up to 4.1%)'; '' when none were."""
    parts, found = [], []
    for row in section.rows:
        cell = section.cells.get((column, row))
        if cell is None or not cell.disturbed:
            continue
        found += cell.disturbed
        runs = "runs " if not parts else ""
        parts.append(
            f"{len(cell.disturbed)} of {len(cell.runs)} {runs}at {row} {_unit(axis, str(row))}"
        )
    if not parts:
        return ""
    return f"{', '.join(parts)} {disturbance.describe_disturbed(found)}".rstrip()


def _where(rows: list[int], all_rows: list[int]) -> str:
    """Name a set of axis values briefly: '2', '>= 8', '<= 4', '2-8' or '1, 4, 16'."""
    if len(rows) == 1:
        return str(rows[0])
    positions = [all_rows.index(row) for row in rows]
    contiguous = positions == list(range(positions[0], positions[0] + len(positions)))
    if contiguous and positions[-1] == len(all_rows) - 1:
        return f">= {rows[0]}"
    if contiguous and positions[0] == 0:
        return f"<= {rows[-1]}"
    if contiguous:
        return f"{rows[0]}-{rows[-1]}"
    return ", ".join(str(row) for row in rows)


def _figures(comparisons: list[stats.Comparison], min_effect: float) -> str:
    p_max = max(
        (c.p_adjusted if c.p_adjusted is not None else c.p_value) or 0.0 for c in comparisons
    )
    relation = "=" if len(comparisons) == 1 else " <= "
    rels = sorted((c.rel_pct for c in comparisons if not math.isnan(c.rel_pct)), key=abs)
    if not rels:  # no per cent of a baseline of 0
        return f"(from a baseline of 0, {_p(relation, p_max)})"
    rest = ", and from a baseline of 0 at the rest" if len(rels) < len(comparisons) else ""
    least, most = (stats.shown_pct(rel, min_effect) for rel in (rels[0], rels[-1]))
    if len(comparisons) == 1 and comparisons[0].ci_pct is not None:
        interval = stats.shown_interval(comparisons[0].ci_pct, min_effect)
        return f"({least}% {interval}, {_p('=', p_max)})"
    if len(rels) == 1 or least == most:
        return f"({least}%{rest}, {_p(relation, p_max)})"
    return f"({least}% to {most}%{rest}, {_p(' <= ', p_max)})"


def _p(relation: str, p_value: float) -> str:
    return "p < 0.001" if p_value < 0.001 else f"p{relation}{p_value:.3f}"


def _unit(axis: str, where: str) -> str:
    """'1 writer' but '2 writers', '>= 2 writers'."""
    unit = AXIS_WORDS[axis][0]
    return (
        unit.removesuffix("s") if where == "1" and unit.endswith("s") and " " not in unit else unit
    )
