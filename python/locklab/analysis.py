"""From stored runs to what a table shows: per-cell statistics, flags and verdicts.

One model serves both ``locklab table`` (columns are an experiment's variants, compared with its
baseline) and ``locklab compare`` (columns are each variant in experiment A then in B, B
compared with A).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from locklab import stats
from locklab.errors import LocklabError
from locklab.experiment import AXES, AXIS_DEFAULTS, ExperimentSpec
from locklab.metrics import METRICS, Metric
from locklab.store import Experiment, Run

# How each axis reads in a verdict: (unit after a value, name of the whole axis).
AXIS_WORDS: dict[str, tuple[str, str]] = {
    "nwriters": ("writers", "thread count"),
    "nreaders": ("readers", "reader count"),
    "hold_ns": ("ns held", "hold time"),
    "gap_ns": ("ns between", "gap"),
    "cs_lines": ("lines", "cs_lines"),
}


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

    def flags(self) -> str:
        marks = ""
        if self.comparison is not None:
            if self.comparison.p_value is None:
                marks += "?"
            elif not self.comparison.significant:
                marks += "~"
        if self.noisy:
            marks += "!"
        if self.drifting_runs:
            marks += "^"
        if self.failed_runs:
            marks += "x"
        return marks


@dataclass
class Column:
    header: str
    compared_to: int | None  # index of the column this one is compared with; None: a baseline
    runs: dict[tuple[tuple[str, int], ...], list[Run]]  # by axis point


@dataclass
class Section:
    fixed: tuple[tuple[str, int], ...]  # the other axes' values, when they vary too
    rows: list[int]
    label: str = ""  # what to print above the section: its workload and fixed axes
    cells: dict[tuple[int, int], Cell | None] = field(default_factory=dict)  # (column, row)
    verdicts: dict[int, str] = field(default_factory=dict)  # column -> verdict line


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


def legend_lines(settings: Settings) -> list[str]:
    """What the table's markers mean, and which test decided them."""
    return [
        f"~ no significant difference ({stats.TEST_NAMES[settings.test]}"
        + (", Holm-adjusted per lock" if settings.correction == "holm" else "")
        + f", p >= {settings.alpha:g})",
        "? too few runs to test",
        f"! noisy: CV > {settings.noise_cv:.0%}",
        "^ a run still drifting after warm-up",
        "x failed runs",
    ]


def parse_key(config_key: str) -> tuple[str, tuple[tuple[str, int], ...]]:
    label, _, axes = config_key.partition("|")
    point = tuple((name, int(value)) for name, value in (kv.split("=") for kv in axes.split(",")))
    return label, point


def runs_by_variant(runs: list[Run]) -> dict[str, dict[tuple[tuple[str, int], ...], list[Run]]]:
    grouped: dict[str, dict[tuple[tuple[str, int], ...], list[Run]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for run in runs:
        label, point = parse_key(run.config_key)
        grouped[label][point].append(run)
    return grouped


def analyse_experiment(experiment: Experiment, runs: list[Run], settings: Settings) -> Analysis:
    spec = experiment.spec
    grouped = runs_by_variant(runs)
    labels = [v.label for v in spec.variants]
    baseline = labels.index(spec.baseline)
    columns = [
        Column(
            label,
            None if index == baseline else baseline,
            grouped.get(label, {}),
        )
        for index, label in enumerate(labels)
    ]
    # The baseline first, as seed 000 put the stock kernel first.
    order = [baseline] + [i for i in range(len(columns)) if i != baseline]
    columns = [columns[i] for i in order]
    for column in columns:
        if column.compared_to is not None:
            column.compared_to = 0
    title = [experiment_line(experiment), *machine_lines(runs), *variant_lines(spec)]
    return _analyse(title, spec, columns, settings, spec.baseline)


def analyse_comparison(
    a: Experiment, runs_a: list[Run], b: Experiment, runs_b: list[Run], settings: Settings
) -> Analysis:
    grouped_a, grouped_b = runs_by_variant(runs_a), runs_by_variant(runs_b)
    labels_b = {v.label for v in b.spec.variants}
    common = [v.label for v in a.spec.variants if v.label in labels_b]
    if not common:
        raise LocklabError(
            f"experiments #{a.id} and #{b.id} have no lock variant in common to compare"
        )
    columns: list[Column] = []
    for label in common:
        columns.append(Column(f"{label} #{a.id}", None, grouped_a.get(label, {})))
        columns.append(Column(f"{label} #{b.id}", len(columns) - 1, grouped_b.get(label, {})))
    title = [
        f"#{b.id} compared with #{a.id}",
        f"A: {experiment_line(a)}",
        *(f"   {line}" for line in machine_lines(runs_a)),
        f"B: {experiment_line(b)}",
        *(f"   {line}" for line in machine_lines(runs_b)),
    ]
    return _analyse(title, a.spec, columns, settings, f"#{a.id}")


def _analyse(
    title: list[str],
    spec: ExperimentSpec,
    columns: list[Column],
    settings: Settings,
    baseline_name: str,
) -> Analysis:
    row_axis = spec.row_axis()
    points = sorted({point for column in columns for point in column.runs})
    rows = sorted({dict(point)[row_axis] for point in points} | set(spec.sweep[row_axis]))
    fixed_axes = [axis for axis in AXES if axis != row_axis]
    fixed_values = sorted(
        {tuple((axis, dict(point)[axis]) for axis in fixed_axes) for point in points}
    ) or [tuple((axis, spec.sweep[axis][0]) for axis in fixed_axes)]
    measure = settings.measure
    unit, divisor = measure.unit_for(
        [
            stats.summarize(values).mean
            for column in columns
            for runs in column.runs.values()
            if (
                values := [
                    v for r in runs if r.status == "ok" and (v := measure.value(r)) is not None
                ]
            )
        ]
    )

    def value(run: Run) -> float | None:
        raw = measure.value(run)
        return None if raw is None else raw / divisor

    sections = []
    for fixed in fixed_values:
        shown = _shown_fixed(fixed, spec)
        workload = spec.workload_of(dict(fixed))
        label = ", ".join(f"{a}={v}" for a, v in shown)
        if workload:
            label = f"{workload.name} ({label})" if label else workload.name
        section = Section(shown, rows, label)
        for row in rows:
            point = tuple((axis, row if axis == row_axis else dict(fixed)[axis]) for axis in AXES)
            for index, column in enumerate(columns):
                base = None
                if column.compared_to is not None:
                    base = columns[column.compared_to].runs.get(point, [])
                section.cells[index, row] = _cell(column.runs.get(point, []), base, value, settings)
        for index, column in enumerate(columns):
            if column.compared_to is not None:
                if settings.correction == "holm":
                    _adjust(section, index, settings.alpha)
                section.verdicts[index] = verdict(section, index, row_axis, settings)
        sections.append(section)
    analysis = Analysis(title, row_axis, columns, sections, settings, baseline_name, unit, divisor)
    if settings.metric == "throughput" and analysis.has_reads:
        analysis.title.append(
            "throughput: writes + reads per second (each apart in 'locklab export')"
        )
    return analysis


def _cell(
    runs: list[Run],
    base: list[Run] | None,
    value: Callable[[Run], float | None],
    settings: Settings,
) -> Cell | None:
    if not runs:
        return None
    good = [run for run in runs if run.status == "ok"]
    values = [v for v in map(value, good) if v is not None]
    summary = stats.summarize(values)
    comparison = None
    if base is not None:
        base_values = [
            v for v in (value(run) for run in base if run.status == "ok") if v is not None
        ]
        comparison = stats.compare(base_values, values, settings.test, settings.alpha)
    cv = summary.cv
    drifting = 0
    for run in good:
        intervals = (run.result or {}).get("intervals") or []
        drift = stats.steady_state(
            [i["t_s"] for i in intervals], [i["ops_per_s"] for i in intervals], settings.drift
        )
        drifting += bool(drift and drift.drifting)
    return Cell(
        values,
        summary,
        comparison,
        cv is not None and cv > settings.noise_cv,
        drifting,
        len(runs) - len(good),
        good,
    )


def _adjust(section: Section, column: int, alpha: float) -> None:
    """Holm-adjust the tested cells of one column; significance follows the adjusted p."""
    tested = [
        (row, cell)
        for row in section.rows
        if (cell := section.cells.get((column, row))) is not None
        and cell.comparison is not None
        and cell.comparison.p_value is not None
    ]
    adjusted = stats.holm([cell.comparison.p_value for _, cell in tested])  # type: ignore[union-attr,misc]
    for (_, cell), p in zip(tested, adjusted, strict=True):
        comparison = cell.comparison
        assert comparison is not None
        cell.comparison = stats.Comparison(comparison.rel_pct, comparison.p_value, p < alpha, p)


def verdict(section: Section, column: int, axis: str, settings: Settings) -> str:
    """One line: where this column is significantly higher or lower than its baseline (for
    throughput: faster or slower)."""
    axis_name = AXIS_WORDS[axis][1]
    faster, slower, noisy, tested = [], [], [], []
    for row in section.rows:
        cell = section.cells.get((column, row))
        if cell is None or cell.comparison is None:
            continue
        if cell.noisy:
            noisy.append(row)
        if cell.comparison.p_value is None:
            continue
        tested.append(row)
        if cell.comparison.significant:
            (faster if cell.comparison.rel_pct > 0 else slower).append((row, cell.comparison))
    if not tested:
        return "not tested: fewer than 2 successful runs per cell"
    parts = []
    measure = settings.measure
    for word, found in ((measure.higher, faster), (measure.lower, slower)):
        if found:
            where = _where([row for row, _ in found], tested)
            parts.append(
                f"{word} at {where} {_unit(axis, where)} {_figures([c for _, c in found])}"
            )
    line = ", ".join(parts) if parts else f"no significant difference at any {axis_name}"
    if noisy:
        where = _where(noisy, section.rows)
        line += f"; noisy (CV > {settings.noise_cv:.0%}) at {where} {_unit(axis, where)}"
    return line


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


def _figures(comparisons: list[stats.Comparison]) -> str:
    rels = sorted((c.rel_pct for c in comparisons), key=abs)
    p_max = max(
        (c.p_adjusted if c.p_adjusted is not None else c.p_value) or 0.0 for c in comparisons
    )
    if len(comparisons) == 1 or f"{rels[0]:+.1f}" == f"{rels[-1]:+.1f}":
        return f"({rels[0]:+.1f}%, {_p('=' if len(comparisons) == 1 else ' <= ', p_max)})"
    return f"({rels[0]:+.1f}% to {rels[-1]:+.1f}%, {_p(' <= ', p_max)})"


def _p(relation: str, p_value: float) -> str:
    return "p < 0.001" if p_value < 0.001 else f"p{relation}{p_value:.3f}"


def _unit(axis: str, where: str) -> str:
    """'1 writer' but '2 writers', '>= 2 writers'."""
    unit = AXIS_WORDS[axis][0]
    return (
        unit.removesuffix("s") if where == "1" and unit.endswith("s") and " " not in unit else unit
    )


def _shown_fixed(
    fixed: tuple[tuple[str, int], ...], spec: ExperimentSpec
) -> tuple[tuple[str, int], ...]:
    """The fixed axes worth printing above a section: those swept or not at their default."""
    return tuple(
        (axis, value)
        for axis, value in fixed
        if len(spec.sweep[axis]) > 1 or value != AXIS_DEFAULTS[axis]
    )


def variant_lines(spec: ExperimentSpec) -> list[str]:
    """What each column label runs, where the label alone does not say it."""
    described = [
        f"{v.label} = {v.describe()}" + (f" from {v.plugin}" if v.plugin else "")
        for v in spec.variants
        if v.label != v.describe() or v.plugin
    ]
    return [f"variants: {'; '.join(described)}"] if described else []


def _repeats(spec: ExperimentSpec) -> str:
    return f"auto {spec.min_repeat}-{spec.repeat}" if spec.repeat_auto else str(spec.repeat)


def experiment_line(experiment: Experiment) -> str:
    spec = experiment.spec
    if spec.source == "locktorture":
        return (
            f'experiment #{experiment.id} "{experiment.name}": kernel locktorture logs, '
            f"up to {spec.repeat} runs per cell, throughput after the dropped warm-up reports"
        )
    return (
        f'experiment #{experiment.id} "{experiment.name}": {_repeats(spec)} runs per cell, '
        f"{spec.duration_s:g} s measured after {spec.warmup_s:g} s warm-up, pin {spec.pin}, "
        f"locklab {experiment.locklab_commit or experiment.locklab_version}"
    )


def _first_word(text: object) -> str:
    words = str(text or "?").split()
    return words[0] if words else "?"


def machine_lines(runs: list[Run]) -> list[str]:
    """The machines the runs report (one line each; more than one only after a mistake)."""
    seen: dict[str, None] = {}
    for run in runs:
        m = run.machine
        if not m:
            continue
        nodes = m.get("numa_nodes")
        facts = [
            m.get("hostname"),
            m.get("arch"),
            m.get("cpu_model"),
            m.get("cpus_online") and f"{m.get('cpus_online')} CPUs",
            nodes and f"{nodes} NUMA node{'s' if nodes != 1 else ''}",
            m.get("governor") and f"governor {m.get('governor')}",
            m.get("kernel") and f"kernel {_first_word(m.get('kernel'))}",
            m.get("source") and f"from {m.get('source')}",
        ]
        line = "machine: " + ", ".join(str(fact) for fact in facts if fact)
        seen.setdefault(line)
    return list(seen) or ["machine: unknown (no finished run)"]
