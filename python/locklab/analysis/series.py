"""The series that figures draw from an analysis, for the HTML report and the static figures
alike: per column of a section, the runs and the mean with its 95% CI, the rel % points, the mean
of a per-run figure, and the throughput over a run's window. Read from the analysis's cells,
never computed again."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from locklab.analysis.cells import Section
from locklab.store import Run


@dataclass
class CellSeries:
    """One column of a section: every run as a point, and the mean with its 95% CI per row."""

    run_rows: list[int] = field(default_factory=list)
    run_values: list[float] = field(default_factory=list)
    rows: list[int] = field(default_factory=list)
    means: list[float] = field(default_factory=list)
    errors: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class RelativePoint:
    row: int
    rel_pct: float
    significant: bool
    p_value: float | None
    ci_pct: tuple[float, float] | None = None  # the 95% interval of rel %


def cell_series(section: Section, index: int) -> CellSeries:
    series = CellSeries()
    for row in section.rows:
        cell = section.cells.get((index, row))
        if cell is None or cell.summary.n == 0:
            continue
        series.run_rows += [row] * len(cell.values)
        series.run_values += cell.values
        series.rows.append(row)
        series.means.append(cell.summary.mean)
        series.errors.append(cell.summary.ci95 or 0.0)
    return series


def relative_points(section: Section, index: int) -> list[RelativePoint]:
    """rel % against the column's baseline at each row that was compared."""
    return [
        RelativePoint(
            row,
            cell.comparison.rel_pct,
            cell.comparison.significant,
            cell.comparison.p_value,
            cell.comparison.ci_pct,
        )  # fmt: skip
        for row in section.rows
        if (cell := section.cells.get((index, row))) is not None
        and cell.comparison is not None
        and cell.summary.n > 0
    ]


def rows_and_runs(section: Section, index: int) -> list[tuple[int, list[Run]]]:
    """The successful runs of one column at each row of a section."""
    return [
        (row, cell.runs if (cell := section.cells.get((index, row))) else [])
        for row in section.rows
    ]


def mean_series(
    section: Section, index: int, value: Callable[[Run], float | None]
) -> tuple[list[int], list[float]]:
    """(rows, mean over the cell's runs) of one per-run figure, where runs reported it."""
    rows, means = [], []
    for row, runs in rows_and_runs(section, index):
        values = [v for v in map(value, runs) if v is not None]
        if values:
            rows.append(row)
            means.append(sum(values) / len(values))
    return rows, means


def window_series(section: Section, index: int) -> list[tuple[int, list[float], list[float]]]:
    """(row, seconds into the window, ops/s) of the first repeat of each cell that has them."""
    found = []
    for row, runs in rows_and_runs(section, index):
        run = min(runs, key=lambda r: r.repeat, default=None)
        intervals = ((run.result or {}).get("intervals") or []) if run else []
        if intervals:
            found.append((row, [i["t_s"] for i in intervals], [i["ops_per_s"] for i in intervals]))
    return found
