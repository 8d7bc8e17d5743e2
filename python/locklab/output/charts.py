"""The report's interactive charts (plotly), built from an analysis's series: throughput, rel %,
per-run figures, throughput over the window, a lock over commits. Each lock is drawn as in
every figure (output/styles.py), the swept counts on their own axis, and each chart carries
the analysis's caption (its experiment and machine, "simulated" where it is) inside it, so that
plotly's own PNG export keeps it.

Everything that comes from users is escaped: plotly reads labels as its own small HTML subset.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from dataclasses import dataclass

import plotly.graph_objects as go

from locklab.analysis import metrics, series
from locklab.analysis.cells import Analysis, Section
from locklab.analysis.metrics import from_result
from locklab.analysis.over_commits import CommitStep
from locklab.analysis.stats import HIGHER, LOWER
from locklab.output.styles import OKABE_ITO, TRACE_DASHES, count_axis, figure_styles
from locklab.store import Run


@dataclass
class Figure:
    title: str
    figure: go.Figure | None
    left_out: str = ""  # where figure is None: why, in one line for the page


def _label(text: str) -> str:
    """A user string as a chart label: plotly renders <b>, <a href> and friends, so escape.
    Not the quotes: with < and > escaped no tag can form, and plotly shows &quot; as it is."""
    return html.escape(text, quote=False)


def _layout(figure: go.Figure, analysis: Analysis, title: str, x_title: str, y_title: str,
            log_y: bool = False, rows: list[int] | None = None) -> None:  # fmt: skip
    """Title, axes, legend and caption; `rows`: the swept counts, for their axis."""
    figure.update_layout(
        title=_label(title),
        xaxis_title=_label(x_title),
        yaxis_title=_label(y_title),
        template="plotly_white",
        height=400,
        margin={"l": 60, "r": 20, "t": 50, "b": 70},
        legend={"orientation": "h", "y": -0.25},
    )
    if analysis.caption:
        figure.add_annotation(text=_label(analysis.caption), xref="paper", yref="paper", x=0,
                              y=1.0, yanchor="bottom", showarrow=False,
                              font={"size": 10, "color": "#555"})  # fmt: skip
    if log_y:
        figure.update_yaxes(type="log")
    if rows:
        axis = count_axis(rows)
        figure.update_xaxes(type="log" if axis.log2 else "linear", tickmode="array",
                            tickvals=axis.ticks, ticktext=[str(t) for t in axis.ticks])  # fmt: skip


def _styles(analysis: Analysis) -> dict:
    return figure_styles(column.header for column in analysis.columns)


def throughput_figure(analysis: Analysis, section: Section) -> go.Figure:
    """Every run as a dot, the mean with its 95% CI as a line."""
    figure = go.Figure()
    styles = _styles(analysis)
    for index, column in enumerate(analysis.columns):
        style = styles[column.header]
        name = _label(column.header)
        cells = series.cell_series(section, index)
        figure.add_trace(
            go.Scatter(
                x=cells.run_rows, y=cells.run_values, mode="markers", name=f"{name} runs",
                legendgroup=name, showlegend=False,
                marker={"color": style.color, "opacity": 0.45, "size": 7,
                        "symbol": style.plotly_marker},
            )
        )  # fmt: skip
        figure.add_trace(
            go.Scatter(
                x=cells.rows, y=cells.means, mode="lines+markers", name=name, legendgroup=name,
                line={"color": style.color, "dash": style.plotly_dash},
                marker={"symbol": style.plotly_marker, "size": 8},
                error_y={"type": "data", "array": cells.errors, "visible": True},
            )
        )  # fmt: skip
    _layout(figure, analysis, f"{analysis.settings.measure.name} (dots: runs; line: mean, 95% CI)",
            analysis.row_axis, analysis.unit, rows=section.rows)  # fmt: skip
    return figure


def relative_figure(analysis: Analysis, section: Section) -> go.Figure:
    """rel % against the baseline; filled markers significant, open ones not (~)."""
    figure = go.Figure()
    styles = _styles(analysis)
    for index, column in enumerate(analysis.columns):
        if column.compared_to is None:
            continue
        style = styles[column.header]
        points = series.relative_points(section, index)
        symbols = [style.plotly_marker + ("" if p.significant else "-open") for p in points]
        texts = [
            f"p={'n/a' if p.p_value is None else f'{p.p_value:.3g}'}"
            + ("" if p.significant else " ~")
            for p in points
        ]
        figure.add_trace(
            go.Scatter(
                x=[p.row for p in points], y=[p.rel_pct for p in points],
                mode="lines+markers", name=_label(column.header), text=texts,
                error_y={"type": "data", "symmetric": False, "visible": True,
                         "array": [p.ci_pct[1] - p.rel_pct if p.ci_pct else 0 for p in points],
                         "arrayminus": [p.rel_pct - p.ci_pct[0] if p.ci_pct else 0
                                        for p in points]},
                marker={"symbol": symbols, "size": 10, "color": style.color},
                line={"color": style.color, "dash": style.plotly_dash},
            )
        )  # fmt: skip
    figure.add_hline(y=0, line={"color": "#888", "dash": "dot"})
    _layout(figure, analysis, f"rel % against {analysis.baseline_name}, 95% interval (open "
            "marker: not significant)", analysis.row_axis, "rel %", rows=section.rows)  # fmt: skip
    return figure


def per_run_figure(
    analysis: Analysis,
    section: Section,
    title: str,
    y_title: str,
    figures: list[tuple[str, Callable[[Run], float | None], str]],
    log_y: bool = False,
    y_range: tuple[float, float] | None = None,
) -> go.Figure | None:
    """Per lock, the mean over runs of per-run figures (name suffix, value, line dash) against
    the swept axis; `y_range` where the figure has a scale of its own. None when no run
    reported any of them."""
    figure = go.Figure()
    styles = _styles(analysis)
    found = False
    for index, column in enumerate(analysis.columns):
        style = styles[column.header]
        for suffix, value, dash in figures:
            rows, means = series.mean_series(section, index, value)
            found |= bool(rows)
            figure.add_trace(
                go.Scatter(
                    x=rows, y=means, mode="lines+markers",
                    name=f"{_label(column.header)}{suffix}",
                    line={"color": style.color, "dash": dash},
                    marker={"symbol": style.plotly_marker},
                )
            )  # fmt: skip
    if not found:
        return None
    _layout(figure, analysis, title, analysis.row_axis, y_title, log_y, rows=section.rows)
    if y_range:
        figure.update_yaxes(range=list(y_range))
    return figure


def intervals_figure(analysis: Analysis, section: Section) -> go.Figure | None:
    """Throughput over each run's measured window, for the first repeat of every cell: a lock's
    colour, a line style per thread count."""
    figure = go.Figure()
    styles = _styles(analysis)
    found = False
    for index, column in enumerate(analysis.columns):
        style = styles[column.header]
        for number, (row, seconds, ops) in enumerate(series.window_series(section, index)):
            found = True
            figure.add_trace(
                go.Scatter(
                    x=seconds,
                    y=[value / 1000 for value in ops],
                    # A window of one interval is a point: a line alone would not show it.
                    mode="lines" if len(seconds) > 1 else "markers",
                    line={"color": style.color, "width": 1,
                          "dash": TRACE_DASHES[number % len(TRACE_DASHES)]},
                    marker={"color": style.color, "symbol": style.plotly_marker},
                    name=f"{_label(column.header)} {analysis.row_axis}={row}",
                    legendgroup=_label(column.header),
                )
            )  # fmt: skip
    if not found:
        return None
    _layout(figure, analysis, "throughput over time (first repeat of each cell)",
            "seconds into the window", "kops/s", log_y=True)  # fmt: skip
    return figure


def mark_oversubscribed(figure: go.Figure, section: Section) -> go.Figure:
    """Shade the rows with more threads than CPUs, as the table labels them: what they show
    is the scheduler as much as the lock."""
    if section.oversubscribed:
        rows = sorted(section.rows)
        first = min(section.oversubscribed)
        before = [row for row in rows if row < first]
        if count_axis(rows).log2:  # a shape on a log axis is placed by the log of its bounds
            start = math.log10(math.sqrt(before[-1] * first) if before else first / 1.4)
            end = math.log10(max(rows) * 1.4)
        else:
            start = (before[-1] + first) / 2 if before else first - 0.5
            end = max(rows) + 0.5
        figure.add_vrect(
            x0=start, x1=end, fillcolor="#f2c037", opacity=0.15, line_width=0,
            annotation_text="oversubscribed", annotation_position="top left",
        )  # fmt: skip
    return figure


def over_commits_figure(analysis: Analysis, steps: list[CommitStep]) -> go.Figure:
    """The metric over the commits, a line per row (writers); a commit judged higher or lower
    than the one before it is ringed."""
    figure = go.Figure()
    x = [_label(step.column) for step in steps]
    hover = [_label(f"{step.commit[:12]} {step.subject}") for step in steps]
    for number, row in enumerate(sorted(steps[0].means)):  # every step has every row
        color = OKABE_ITO[number % len(OKABE_ITO)]
        y = [step.means[row] for step in steps]
        figure.add_trace(
            go.Scatter(
                x=x, y=y, mode="lines+markers", name=_label(f"{analysis.row_axis}={row}"),
                line={"color": color}, text=hover, hovertemplate="%{text}<br>%{y}<extra></extra>",
            )
        )  # fmt: skip
        changed = [i for i, step in enumerate(steps) if row in step.changes
                   and step.changes[row][1] in (HIGHER, LOWER)]  # fmt: skip
        figure.add_trace(
            go.Scatter(
                x=[x[i] for i in changed], y=[y[i] for i in changed], mode="markers",
                marker={"size": 18, "symbol": "circle-open", "color": color, "line": {"width": 2}},
                showlegend=False, hoverinfo="skip",
            )
        )  # fmt: skip
    _layout(figure, analysis, f"{analysis.settings.measure.name} over the commits (ringed: a "
            "change from the commit before)", "commit", analysis.unit)  # fmt: skip
    return figure


def _waits_measured(section: Section) -> bool:
    """Whether any run of the section timed its writers' waits."""
    p50 = from_result(*metrics.LATENCY_P50_NS)
    return any(p50(run) is not None for cell in section.cells.values() if cell for run in cell.runs)


def section_figures(analysis: Analysis, section: Section) -> list[Figure]:
    figures = [
        Figure("throughput", mark_oversubscribed(throughput_figure(analysis, section), section)),
        Figure("relative", mark_oversubscribed(relative_figure(analysis, section), section)),
    ]

    def one(value: Callable[[Run], float | None]) -> list:
        return [("", value, "solid")]

    optional = [
        ("over time", intervals_figure(analysis, section)),
        ("latency", per_run_figure(
            analysis, section, "write wait: p50 (solid) and p99 (dotted), mean over runs "
            "(runs whose waits the timer cannot resolve left out)", "ns",
            [(" p50", metrics.above_timer(from_result(*metrics.LATENCY_P50_NS)), "solid"),
             (" p99", metrics.above_timer(from_result(*metrics.LATENCY_P99_NS)), "dot")],
            log_y=True)),
        ("fairness", per_run_figure(
            analysis, section, "fairness: Jain's index of writers' acquisitions (1 = fair)",
            "Jain index", one(from_result(*metrics.JAIN_INDEX)),
            # Its whole scale, 0 to 1: zoomed to 0.99-1, a 1% unfairness looks like a collapse.
            y_range=(0.0, 1.05))),
        ("context switches", per_run_figure(
            analysis, section, "voluntary context switches per 1000 acquisitions", "switches",
            one(from_result(*metrics.VOLUNTARY_SWITCHES)))),
        ("cpu", per_run_figure(
            analysis, section, "CPU time per 1000 acquisitions", "ms",
            one(from_result(*metrics.CPU_MS)))),
        ("numa", per_run_figure(
            analysis, section, "NUMA hand-over locality: same-node hand-overs", "%",
            one(from_result(*metrics.SAME_NODE_FRACTION, scale=100.0)))),
    ]  # fmt: skip
    for title, figure in optional:
        if figure is None and title == "latency" and _waits_measured(section):
            figures.append(Figure(title, None, "write wait: within the timer's own cost (two "
                                  "clock reads) in every run, so no chart"))  # fmt: skip
        if figure is None:
            continue
        if all(value == 0 for trace in figure.data for value in trace.y):
            figures.append(Figure(title, None, f"{title}: 0 in every run, so no chart"))
        else:
            figures.append(Figure(title, figure))
    return figures
