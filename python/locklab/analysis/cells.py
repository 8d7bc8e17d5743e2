"""From stored runs to what a table shows: per-cell statistics, flags and verdicts.

The table's data (model.py) serves both ``locklab table`` (columns are an experiment's
variants, compared with its baseline) and ``locklab compare`` (columns are each variant in
experiment A then in B, B compared with A).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace

from locklab.analysis import disturbance, stats, window_events
from locklab.analysis.model import Analysis, Cell, Column, Section, Settings
from locklab.analysis.titles import (
    experiment_line,
    figure_caption,
    finding_lines,
    machine_lines,
    variant_lines,
)
from locklab.analysis.verdicts import disturbed_line, oversubscribed_note, verdict
from locklab.errors import LocklabError
from locklab.model.spec import ExperimentSpec, Point, threads_at
from locklab.model.values import AXES, AXIS_DEFAULTS
from locklab.store import Experiment, Run


def runs_by_variant(runs: list[Run]) -> dict[str, dict[Point, list[Run]]]:
    grouped: dict[str, dict[Point, list[Run]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        grouped[run.config_key.label][run.config_key.point].append(run)
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
    title = [
        experiment_line(experiment, runs),
        *machine_lines(runs),
        disturbance.summary_line(runs),
        *variant_lines(spec),
    ]
    analysis = _analyse(title, spec, columns, settings, spec.baseline)
    analysis.footer = finding_lines(spec, runs)
    analysis.caption = figure_caption(experiment, runs)
    return analysis


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
    kinds = [_kind_of(runs) for runs in (runs_a, runs_b)]
    title = [
        f"#{b.id} compared with #{a.id}"
        + (
            f": {kinds[1]} against {kinds[0]}, so each difference is the machines' as much as the "
            "locks'"
            if len(set(kinds)) > 1
            else ""
        ),  # fmt: skip
        f"A: {experiment_line(a, runs_a)}",
        *(f"   {line}" for line in machine_lines(runs_a)),
        f"   {disturbance.summary_line(runs_a)}",
        f"B: {experiment_line(b, runs_b)}",
        *(f"   {line}" for line in machine_lines(runs_b)),
        f"   {disturbance.summary_line(runs_b)}",
    ]
    analysis = _analyse(title, a.spec, columns, settings, f"#{a.id}")
    analysis.caption = f"{figure_caption(b, runs_b)} against {figure_caption(a, runs_a)}"
    return analysis


def analyse_columns(
    title: list[str], spec: ExperimentSpec, columns: list[Column], settings: Settings
) -> Analysis:
    """An analysis of columns laid out by the caller (say, A/A pairs: analysis/calibration.py),
    each compared with the column it names."""
    return _analyse(title, spec, columns, settings, "each pair's first")


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
    cpus, other_machines = _oversubscription_cpus(spec, columns)
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
        points = {row: tuple((axis, row if axis == row_axis else dict(fixed)[axis])
                             for axis in AXES) for row in rows}  # fmt: skip
        for row, point in points.items():
            if cpus is not None and threads_at(point) > cpus:
                section.oversubscribed.add(row)
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
            if text := disturbed_line(section, index, row_axis):
                section.disturbed[index] = text
        judged = [cell.comparison.judgement(settings.min_effect)
                  for cell in section.cells.values() if cell and cell.comparison]  # fmt: skip
        if judged and all(j in (stats.INCONCLUSIVE, stats.UNTESTED) for j in judged):
            section.notes.append(
                "This table cannot answer yet: no comparison in it is settled, so it ranks "
                "nothing (the verdicts say how many runs per cell would settle each)"
            )
        if cpus is not None and section.oversubscribed:
            section.notes.append(oversubscribed_note(section, columns, row_axis, cpus, settings))
        for fewer, headers in sorted(other_machines.items()):
            crowded = [row for row, point in points.items() if threads_at(point) > fewer]
            if crowded:
                section.notes.append(
                    f"{', '.join(headers)}: more threads than their {fewer} CPUs from "
                    f"{row_axis}={crowded[0]} on (the other machine's CPUs are more)"
                )
        sections.append(section)
    analysis = Analysis(title, row_axis, columns, sections, settings, baseline_name, unit, divisor)
    if settings.metric == "throughput" and analysis.has_reads:
        analysis.title.append(
            "throughput: writes + reads per second (each apart in 'locklab export')"
        )
    return analysis


def _kind_of(runs: list[Run]) -> str:
    """'simulated' or 'measured': which an experiment's finished runs are."""
    simulated = any((run.machine or {}).get("simulated") for run in runs)
    return "simulated" if simulated else "measured"


def _oversubscription_cpus(
    spec: ExperimentSpec, columns: list[Column]
) -> tuple[int | None, dict[int, list[str]]]:
    """The CPUs past which a row is labelled oversubscribed, and, where the columns ran on
    machines of different sizes (a comparison of two machines, a simulated one among them),
    the columns of each smaller machine by its CPUs: a row is then labelled only where every
    machine is crowded, and each smaller one is named in a note of its own, so that no side is
    labelled by the other's machine."""
    sizes: dict[int, list[str]] = {}
    for column in columns:
        cpus = runs_cpus([column])
        if cpus is not None:
            sizes.setdefault(spec.usable_cpus(cpus), []).append(column.header)
    if not sizes:
        return None, {}
    largest = max(sizes)  # the only one, where every column ran on one machine
    return largest, {cpus: headers for cpus, headers in sizes.items() if cpus < largest}


def runs_cpus(columns: list[Column]) -> int | None:
    """The fewest CPUs the engine's runs could use (their cpus_allowed); None where the runs
    do not say (kernel logs, programs)."""
    found = [
        cpus
        for column in columns
        for runs in column.runs.values()
        for run in runs
        if isinstance(cpus := (run.machine or {}).get("cpus_allowed"), int) and cpus > 0
    ]
    return min(found) if found else None


def _cell(
    runs: list[Run],
    base: list[Run] | None,
    value: Callable[[Run], float | None],
    settings: Settings,
) -> Cell | None:
    if not runs:
        return None
    good = [run for run in runs if run.status == "ok"]
    values = _samples(good, value)
    summary = stats.summarize(values)
    comparison = None
    if base is not None:
        comparison = stats.compare(_samples(base, value), values, settings.test, settings.alpha)
    cv = summary.cv
    drifting = 0
    for run in good:
        intervals = (run.result or {}).get("intervals") or []
        drift = stats.steady_state(
            [i["t_s"] for i in intervals], [i["ops_per_s"] for i in intervals], settings.drift
        )
        drifting += bool(drift and drift.drifting)
    holds = [ns for run in good if (ns := window_events.long_hold_ns(run, settings.min_effect))]
    return Cell(
        values,
        summary,
        comparison,
        cv is not None and cv > settings.noise_cv,
        drifting,
        len(runs) - len(good),
        good,
        [d for _, d in disturbance.disturbed_runs(good)],
        len(holds),
        max(holds, default=0),
        window_events.too_few(good, values, settings.min_effect),
    )


def _samples(runs: list[Run], value: Callable[[Run], float | None]) -> list[float]:
    """The figures a cell's mean and test take: of its successful runs, less those whose
    window the host took (disturbance.is_sample)."""
    return [v for run in runs if disturbance.is_sample(run) and (v := value(run)) is not None]


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
        cell.comparison = replace(comparison, significant=p < alpha, p_adjusted=p)


def _shown_fixed(
    fixed: tuple[tuple[str, int], ...], spec: ExperimentSpec
) -> tuple[tuple[str, int], ...]:
    """The fixed axes worth printing above a section: those swept or not at their default."""
    return tuple(
        (axis, value)
        for axis, value in fixed
        if len(spec.sweep[axis]) > 1 or value != AXIS_DEFAULTS[axis]
    )
