"""What a table shows, as data: the statistics settings, and an analysis's columns, sections
and cells (computed by cells.py, judged by verdicts.py, printed by output/table.py), with the
legend of the table's markers."""

from __future__ import annotations

from dataclasses import dataclass, field

from locklab.analysis import disturbance, stats, window_events
from locklab.analysis.metrics import METRICS, Metric
from locklab.model.spec import Point
from locklab.store import Run


def legend_lines(settings: Settings) -> list[str]:
    """What the table's markers mean, and which test decided them."""
    effect = f"{settings.min_effect:g}%"
    return [
        f"rel % [95% interval, Fieller's]; no mark: significant "
        f"({stats.TEST_NAMES[settings.test]}"
        + (", Holm-adjusted per lock" if settings.correction == "holm" else "")
        + f", p < {settings.alpha:g}) and at least {effect} (green or red in a terminal)",
        f"< significant, below {effect}",
        f"= equal within \u00b1{effect} (the whole interval inside)",
        "~ inconclusive: neither (more runs would settle it)"
        + (
            "; each interval is one cell's own 95%, the test Holm-adjusted over the lock's "
            "cells, so an interval clear of 0 can still be ~"
            if settings.correction == "holm"
            else ""
        ),
        "? too few runs to test",
        f"! noisy: CV > {settings.noise_cv:.0%}",
        "^ a run still drifting after warm-up",
        "x failed runs",
        f"{disturbance.MARKER} runs disturbed by the machine (listed under the verdicts)",
        window_events.rule_text(settings.min_effect),
    ]


# The table's mark for what a comparison says (legend_lines explains them).
JUDGEMENT_MARKS = {
    stats.UNTESTED: "?", stats.INCONCLUSIVE: "~", stats.EQUAL: "=", stats.BELOW_MIN: "<",
    stats.HIGHER: "", stats.LOWER: "",
}  # fmt: skip


@dataclass(frozen=True)
class Settings:
    test: str = "welch"
    alpha: float = stats.DEFAULT_ALPHA
    noise_cv: float = stats.DEFAULT_NOISE_CV
    drift: float = stats.DEFAULT_DRIFT
    show_ci: bool = False  # a "ci95" column (half-width of the mean's 95% interval) in the table
    metric: str = "throughput"  # see metrics.METRICS
    # Multiple comparisons: "holm" adjusts the p-values of one lock's cells in a section (the
    # family its verdict speaks for); "none" judges each cell alone.
    correction: str = "holm"
    # The smallest rel % a verdict calls faster or slower, and the margin of "equal within".
    min_effect: float = stats.DEFAULT_MIN_EFFECT_PCT

    @property
    def measure(self) -> Metric:
        return METRICS[self.metric]


@dataclass
class Cell:
    values: list[float]  # the metric, for each successful run that reported it
    summary: stats.Summary
    comparison: stats.Comparison | None
    noisy: bool
    drifting_runs: int
    failed_runs: int
    runs: list[Run]  # the successful runs, for figures of other per-run measures
    disturbed: list[disturbance.RunDisturbance] = field(default_factory=list)
    # Runs that met a long hold too long for their window (window_events), and the longest.
    short_window_runs: int = 0
    short_window_hold_ns: int = 0
    # The lock's rare events its runs drew too few of (window_events.too_few): counts per run.
    rare_events: dict[str, range] = field(default_factory=dict)

    def flags(self, min_effect: float = stats.DEFAULT_MIN_EFFECT_PCT) -> str:
        marks = ""
        if self.comparison is not None:
            marks += JUDGEMENT_MARKS[self.comparison.judgement(min_effect)]
        if self.noisy:
            marks += "!"
        if self.drifting_runs:
            marks += "^"
        if self.failed_runs:
            marks += "x"
        if self.disturbed:
            marks += disturbance.MARKER
        if self.short_window_runs or self.rare_events:
            marks += window_events.TOO_SHORT_MARK
        return marks


@dataclass
class Column:
    header: str
    compared_to: int | None  # index of the column this one is compared with; None: a baseline
    runs: dict[Point, list[Run]]  # by axis point
    unit: str = ""  # its own unit, where the table's columns measure different things


@dataclass
class Section:
    fixed: tuple[tuple[str, int], ...]  # the other axes' values, when they vary too
    rows: list[int]
    label: str = ""  # what to print above the section: its workload and fixed axes
    cells: dict[tuple[int, int], Cell | None] = field(default_factory=dict)  # (column, row)
    verdicts: dict[int, str] = field(default_factory=dict)  # column -> verdict line
    disturbed: dict[int, str] = field(default_factory=dict)  # column -> its disturbed runs
    # Rows with more threads than the runs' CPUs, and what that did (verdicts.oversubscribed_note)
    oversubscribed: set[int] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)


@dataclass
class Analysis:
    title: list[str]
    row_axis: str
    columns: list[Column]
    sections: list[Section]
    settings: Settings
    baseline_name: str
    unit: str  # the measure's unit, scaled to this table's numbers (ops/s, kops/s, Mops/s)
    unit_divisor: float = 1.0  # the measure's own unit per `unit`
    footer: list[str] = field(default_factory=list)  # lines under the verdicts
    caption: str = ""  # what each figure of it says it shows (titles.figure_caption)

    @property
    def has_reads(self) -> bool:
        """Readers ran: throughput then counts reads and writes together."""
        return any(
            (run.result or {}).get("read_acquisitions")
            for column in self.columns
            for runs in column.runs.values()
            for run in runs
        )

    def legend(self) -> list[str]:
        return legend_lines(self.settings)
