"""One table from a patch's measurements in several places (the engine, a booted kernel, a
program): each place's experiment is analysed alone, against its own baseline, and the analyses
are laid side by side. So every verdict compares like with like (a kernel's locktorture with the
same kernel's baseline, never with the engine), and each column group carries its place's unit.

Under the verdicts, one line per patch set says whether the places agree: the same direction
(faster, slower, equal within the minimum effect, or no clear difference) in every place.
"""

from __future__ import annotations

from dataclasses import replace

from locklab.analysis import stats
from locklab.analysis.cells import Analysis, Column, Section


def combine(
    places: list[tuple[str, Analysis]], emulated: frozenset[str] = frozenset(), noun: str = "places"
) -> Analysis:
    """The analyses of one campaign's places, in this order, as one analysis whose columns are
    "PLACE LABEL" (units per column: the places' measures differ). `emulated`: the places
    whose timings come from an emulated machine. `noun`: what the places are (the hosts of
    --hosts are places too: one machine's verdict is never another's baseline)."""
    first = places[0][1]
    columns: list[Column] = []
    rows = sorted({row for _, analysis in places for s in analysis.sections for row in s.rows})
    section = Section((), rows)
    title: list[str] = []
    for place, analysis in places:
        if len(analysis.sections) != 1:
            raise ValueError(f"{place}: a place's experiment sweeps one axis only")
        own = analysis.sections[0]
        offset = len(columns)
        for index, column in enumerate(analysis.columns):
            compared = None if column.compared_to is None else column.compared_to + offset
            columns.append(replace(column, header=f"{place} {column.header}",
                                   compared_to=compared, unit=analysis.unit))  # fmt: skip
            for row in rows:
                section.cells[offset + index, row] = own.cells.get((index, row))
            if index in own.verdicts:
                section.verdicts[offset + index] = own.verdicts[index]
            if index in own.disturbed:
                section.disturbed[offset + index] = own.disturbed[index]
        section.oversubscribed |= own.oversubscribed
        section.notes += [f"{place}: {note}" for note in own.notes]
        title += [f"{place}: {line}" for line in analysis.title]
    combined = Analysis(title, first.row_axis, columns, [section], first.settings,
                        f"each {noun.removesuffix('s')}'s {first.baseline_name}", "")  # fmt: skip
    combined.footer = agreement_lines(combined, [place for place, _ in places], emulated, noun)
    return combined


def _direction(analysis: Analysis, column: int) -> str:
    """What one column's cells say against its baseline: 'failed runs', 'not tested', the
    measure's words for higher and lower (at least the minimum effect), 'equal within +-X%'
    when every tested cell is, else 'no clear difference'."""
    section = analysis.sections[0]
    cells = [section.cells.get((column, row)) for row in section.rows]
    found = [cell for cell in cells if cell is not None]
    if any(cell.failed_runs for cell in found):
        return "failed runs"
    settings = analysis.settings
    judged = {c.comparison.judgement(settings.min_effect) for c in found if c.comparison}
    judged.discard(stats.UNTESTED)
    if not judged:
        return "not tested"
    measure = settings.measure
    pairs = ((stats.HIGHER, measure.higher), (stats.LOWER, measure.lower))
    words = [word for judgement, word in pairs if judgement in judged]
    if words:
        return " and ".join(words)
    if judged == {stats.EQUAL}:
        return f"equal within \u00b1{settings.min_effect:g}%"
    return "no clear difference"


def agreement_lines(
    analysis: Analysis, places: list[str], emulated: frozenset[str], noun: str = "places"
) -> list[str]:
    """Per compared label, whether the places agree, and what each says where they do not.
    A place in `emulated` ran under emulation: it is named so, since its timings mean little."""
    by_label: dict[str, list[tuple[str, str]]] = {}
    for index, column in enumerate(analysis.columns):
        if column.compared_to is None:
            continue
        place, _, label = column.header.partition(" ")
        named = f"{place} (emulated)" if place in emulated else place
        by_label.setdefault(label, []).append((named, _direction(analysis, index)))
    lines = []
    for label, found in by_label.items():
        said = "; ".join(f"{place}: {direction}" for place, direction in found)
        directions = {direction for _, direction in found if direction != "not tested"}
        caught = [place for place, direction in found if direction == "failed runs"]
        if caught:
            line = f"caught in {', '.join(caught)} ({said})"
        elif len(found) < 2:
            line = f"measured in one {noun.removesuffix('s')} only ({said})"
        elif len(directions) == 1:
            line = f"the {noun} agree: {directions.pop()} in each"
        else:
            line = f"the {noun} differ ({said})"
        lines.append(f"  {label}: {line}")
    if lines:
        lines.insert(0, f"Across {noun} ({', '.join(places)}), each against its own baseline:")
    return lines
