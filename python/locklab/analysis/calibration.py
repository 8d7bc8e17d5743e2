"""A/A calibration: how often the verdict calls noise significant on this machine.

One lock runs as many pairs of identical variants (a1/b1, a2/b2, ...), all their runs interleaved
in one shuffled schedule as any experiment's are. Each b is judged against its own a exactly as
a table judges a lock against its baseline (the same test, Holm's correction over the lock's
cells, the minimum effect); a cell is one (pair, point). With nothing to find, the share of cells
called significant estimates the verdict's false-positive rate, to be held against alpha (as
Fuchsia's perfcompare calibrates its comparisons).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from locklab.analysis import stats
from locklab.analysis.cells import Analysis, Column, Settings, analyse_columns, runs_by_variant
from locklab.model.spec import ExperimentSpec, Variant
from locklab.store import Experiment, Run

FIRST, SECOND = "a", "b"  # the labels' prefixes of each pair


def pair_variants(lock: str, pairs: int) -> list[Variant]:
    return [Variant(f"{side}{k}", lock) for k in range(1, pairs + 1) for side in (FIRST, SECOND)]


def analyse_pairs(experiment: Experiment, runs: list[Run], settings: Settings) -> Analysis:
    """Each pair's b compared with its a."""
    grouped = runs_by_variant(runs)
    columns: list[Column] = []
    for variant in experiment.spec.variants:
        first = variant.label.startswith(FIRST)
        columns.append(Column(variant.label, None if first else len(columns) - 1,
                              grouped.get(variant.label, {})))  # fmt: skip
    return analyse_columns([], experiment.spec, columns, settings)


@dataclass
class Calibration:
    cells: int = 0
    uncorrected: int = 0  # cells whose own p is below alpha, before Holm's correction
    judged: Counter = field(default_factory=Counter)  # judgement -> cells
    significant_by_row: Counter = field(default_factory=Counter)
    cells_by_row: Counter = field(default_factory=Counter)

    @property
    def significant(self) -> int:
        return sum(self.judged[j] for j in (stats.HIGHER, stats.LOWER, stats.BELOW_MIN))

    @property
    def share(self) -> float:
        return self.significant / self.cells if self.cells else 0.0


def calibrate(analysis: Analysis) -> Calibration:
    found = Calibration()
    min_effect = analysis.settings.min_effect
    for section in analysis.sections:
        for (index, row), cell in section.cells.items():
            if analysis.columns[index].compared_to is None or cell is None:
                continue
            if cell.comparison is None or cell.comparison.p_value is None:
                continue
            judgement = cell.comparison.judgement(min_effect)
            found.cells += 1
            found.uncorrected += cell.comparison.p_value < analysis.settings.alpha
            found.judged[judgement] += 1
            found.cells_by_row[row] += 1
            found.significant_by_row[row] += judgement in (stats.HIGHER, stats.LOWER,
                                                           stats.BELOW_MIN)  # fmt: skip
    return found


def report_lines(spec: ExperimentSpec, found: Calibration, settings: Settings) -> list[str]:
    lock = spec.variants[0].lock
    effect = f"{settings.min_effect:g}%"
    correction = ", Holm-adjusted per pair" if settings.correction == "holm" else ""
    share = found.share
    lines = [
        f"A/A calibration: {lock} against itself, {found.cells} cells "
        f"({len(spec.variants) // 2} pairs x {len(spec.points())} points), {spec.repeat} runs "
        f"per cell of {spec.duration_s:g} s, interleaved",
        f"called significant: {found.significant} of {found.cells} cells ({share:.1%}; "
        f"nominal alpha {settings.alpha:g}, {stats.TEST_NAMES[settings.test]}{correction})",
        f"  each cell alone, without Holm's correction: {found.uncorrected} "
        f"({found.uncorrected / max(found.cells, 1):.1%})",
        f"  of which a change of {effect} or more (faster or slower): "
        f"{found.judged[stats.HIGHER] + found.judged[stats.LOWER]}; below {effect}: "
        f"{found.judged[stats.BELOW_MIN]}",
        f"equal within \u00b1{effect}: {found.judged[stats.EQUAL]}; inconclusive: "
        f"{found.judged[stats.INCONCLUSIVE]}",
        f"per {spec.row_axis()}: " + ", ".join(
            f"{row}: {found.significant_by_row[row]} of {found.cells_by_row[row]}"
            for row in sorted(found.cells_by_row)),
    ]  # fmt: skip
    if found.cells < 200:
        lines.append(f"note: {found.cells} cells are few to estimate a rate near alpha; "
                     "200 or more are (--cells)")  # fmt: skip
    within = "within" if share <= settings.alpha else "ABOVE"
    lines.append(f"verdict: the false-positive share is {within} alpha "
                 f"({share:.1%} {'<=' if share <= settings.alpha else '>'} "
                 f"{settings.alpha:.0%})")  # fmt: skip
    return lines
