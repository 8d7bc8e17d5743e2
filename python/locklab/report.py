"""One self-contained HTML page per set of experiments: interactive charts (plotly, its
JavaScript embedded, so the page opens with no network), the seed-000 table, the verdicts, the
machine facts and the full configuration. Several experiments (say, two machines) are laid out
side by side, one column each.

Everything that comes from users (lock names, labels, campaign names, machine facts) is
escaped: in the page with html.escape, in the charts by plotly's JSON encoding plus escaping of
the labels themselves, which plotly would otherwise read as its own small HTML subset.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from dataclasses import dataclass

import plotly.graph_objects as go
import plotly.io as pio

from locklab import provenance, table
from locklab.analysis import Analysis, Section, Settings, analyse_experiment, legend_lines
from locklab.metrics import from_result
from locklab.store import Experiment, Run

PALETTE = (
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
    "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22",
)  # fmt: skip


@dataclass
class Figure:
    title: str
    figure: go.Figure


def _label(text: str) -> str:
    """A user string as a chart label: plotly renders <b>, <a href> and friends, so escape."""
    return html.escape(text, quote=True)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _layout(figure: go.Figure, title: str, x_title: str, y_title: str, log_y: bool = False) -> None:
    figure.update_layout(
        title=_label(title),
        xaxis_title=_label(x_title),
        yaxis_title=_label(y_title),
        template="plotly_white",
        height=380,
        margin={"l": 60, "r": 20, "t": 50, "b": 50},
        legend={"orientation": "h", "y": -0.2},
    )
    if log_y:
        figure.update_yaxes(type="log")


def _rows_and_runs(analysis: Analysis, section: Section, index: int) -> list[tuple[int, list[Run]]]:
    """The successful runs of one column at each row of a section."""
    return [
        (row, cell.runs if (cell := section.cells.get((index, row))) else [])
        for row in section.rows
    ]


def throughput_figure(analysis: Analysis, section: Section) -> go.Figure:
    """Every run as a dot, the mean with its 95% CI as a line."""
    figure = go.Figure()
    unit = analysis.unit
    for index, column in enumerate(analysis.columns):
        color = PALETTE[index % len(PALETTE)]
        name = _label(column.header)
        xs, ys, means, errors, mean_rows = [], [], [], [], []
        for row in section.rows:
            cell = section.cells.get((index, row))
            if cell is None or cell.summary.n == 0:
                continue
            xs += [row] * len(cell.values)
            ys += cell.values
            mean_rows.append(row)
            means.append(cell.summary.mean)
            errors.append(cell.summary.ci95 or 0.0)
        figure.add_trace(
            go.Scatter(
                x=xs, y=ys, mode="markers", name=f"{name} runs", legendgroup=name,
                marker={"color": color, "opacity": 0.45, "size": 7}, showlegend=False,
            )
        )  # fmt: skip
        figure.add_trace(
            go.Scatter(
                x=mean_rows, y=means, mode="lines+markers", name=name, legendgroup=name,
                line={"color": color}, error_y={"type": "data", "array": errors, "visible": True},
            )
        )  # fmt: skip
    _layout(figure, f"{analysis.settings.measure.name} (dots: runs; line: mean, 95% CI)",
            analysis.row_axis, unit)  # fmt: skip
    return figure


def relative_figure(analysis: Analysis, section: Section) -> go.Figure:
    """rel % against the baseline; filled markers significant, open ones not (~)."""
    figure = go.Figure()
    for index, column in enumerate(analysis.columns):
        if column.compared_to is None:
            continue
        rows, rels, symbols, texts = [], [], [], []
        for row in section.rows:
            cell = section.cells.get((index, row))
            if cell is None or cell.comparison is None or cell.summary.n == 0:
                continue
            comparison = cell.comparison
            rows.append(row)
            rels.append(comparison.rel_pct)
            symbols.append("circle" if comparison.significant else "circle-open")
            p = "n/a" if comparison.p_value is None else f"{comparison.p_value:.3g}"
            texts.append(f"p={p}" + ("" if comparison.significant else " ~"))
        figure.add_trace(
            go.Scatter(
                x=rows, y=rels, mode="lines+markers", name=_label(column.header), text=texts,
                marker={"symbol": symbols, "size": 10,
                        "color": PALETTE[index % len(PALETTE)]},
                line={"color": PALETTE[index % len(PALETTE)]},
            )
        )  # fmt: skip
    figure.add_hline(y=0, line={"color": "#888", "dash": "dot"})
    _layout(figure, f"rel % against {analysis.baseline_name} (open marker: not significant)",
            analysis.row_axis, "rel %")  # fmt: skip
    return figure


def _mean_series(
    analysis: Analysis, section: Section, index: int, value: Callable[[Run], float | None]
) -> tuple[list[int], list[float]]:
    """(rows, mean over the cell's runs) of one per-run figure, where runs reported it."""
    rows, means = [], []
    for row, runs in _rows_and_runs(analysis, section, index):
        mean = _mean([v for v in map(value, runs) if v is not None])
        if mean is not None:
            rows.append(row)
            means.append(mean)
    return rows, means


def per_run_figure(
    analysis: Analysis,
    section: Section,
    title: str,
    y_title: str,
    series: list[tuple[str, Callable[[Run], float | None], str]],
    log_y: bool = False,
) -> go.Figure | None:
    """Per lock, the mean over runs of per-run figures (name suffix, value, line dash) against
    the swept axis. None when no run reported any of them."""
    figure = go.Figure()
    found = False
    for index, column in enumerate(analysis.columns):
        for suffix, value, dash in series:
            rows, means = _mean_series(analysis, section, index, value)
            found |= bool(rows)
            figure.add_trace(
                go.Scatter(
                    x=rows, y=means, mode="lines+markers",
                    name=f"{_label(column.header)}{suffix}",
                    line={"color": PALETTE[index % len(PALETTE)], "dash": dash},
                )
            )  # fmt: skip
    if not found:
        return None
    _layout(figure, title, analysis.row_axis, y_title, log_y)
    return figure


def intervals_figure(analysis: Analysis, section: Section) -> go.Figure | None:
    """Throughput over each run's measured window, for the first repeat of every cell."""
    figure = go.Figure()
    found = False
    for index, column in enumerate(analysis.columns):
        color = PALETTE[index % len(PALETTE)]
        for row, runs in _rows_and_runs(analysis, section, index):
            run = min(runs, key=lambda r: r.repeat, default=None)
            intervals = ((run.result or {}).get("intervals") or []) if run else []
            if not intervals:
                continue
            found = True
            figure.add_trace(
                go.Scatter(
                    x=[i["t_s"] for i in intervals],
                    y=[i["ops_per_s"] / 1000 for i in intervals],
                    mode="lines", line={"color": color, "width": 1},
                    name=f"{_label(column.header)} {analysis.row_axis}={row}",
                    legendgroup=_label(column.header),
                )
            )  # fmt: skip
    if not found:
        return None
    _layout(figure, "throughput over time (first repeat of each cell)", "seconds into the window",
            "kops/s", log_y=True)  # fmt: skip
    return figure


def section_figures(analysis: Analysis, section: Section) -> list[Figure]:
    figures = [
        Figure("throughput", throughput_figure(analysis, section)),
        Figure("relative", relative_figure(analysis, section)),
    ]

    def one(value: Callable[[Run], float | None]) -> list:
        return [("", value, "solid")]

    optional = [
        ("over time", intervals_figure(analysis, section)),
        ("latency", per_run_figure(
            analysis, section, "write wait: p50 (solid) and p99 (dotted), mean over runs", "ns",
            [(" p50", from_result("latency_ns", "write", "p50"), "solid"),
             (" p99", from_result("latency_ns", "write", "p99"), "dot")], log_y=True)),
        ("fairness", per_run_figure(
            analysis, section, "fairness: Jain's index of writers' acquisitions (1 = fair)",
            "Jain index", one(from_result("fairness", "write", "jain_index")))),
        ("context switches", per_run_figure(
            analysis, section, "voluntary context switches per 1000 acquisitions", "switches",
            one(from_result("context_switches", "voluntary_per_1000_acquisitions")))),
        ("cpu", per_run_figure(
            analysis, section, "CPU time per 1000 acquisitions", "ms",
            one(from_result("cpu", "ms_per_1000_acquisitions")))),
        ("numa", per_run_figure(
            analysis, section, "NUMA hand-over locality: same-node hand-overs", "%",
            one(from_result("handoffs", "same_node_fraction", scale=100.0)))),
    ]  # fmt: skip
    figures += [Figure(title, figure) for title, figure in optional if figure is not None]
    return figures


STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
.experiments { display: grid; gap: 1.5em; grid-template-columns: repeat(var(--columns), 1fr); }
.experiment { min-width: 0; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; font-size: 12px; }
h1 { font-size: 1.4em; } h2 { font-size: 1.2em; } h3 { font-size: 1.05em; margin-top: 1.5em; }
table.facts td { padding: 0.1em 0.8em 0.1em 0; font-size: 13px; vertical-align: top; }
.figure { border: 1px solid #eee; margin: 0.6em 0; }
"""


def _facts(runs: list[Run]) -> str:
    machine = next((run.machine for run in runs if run.machine), None) or {}
    rows = "".join(
        f"<tr><td>{html.escape(str(key))}</td><td>{html.escape(str(value))}</td></tr>"
        for key, value in machine.items()
    )
    return f"<table class='facts'>{rows}</table>" if rows else "<p>no finished run</p>"


def experiment_html(experiment: Experiment, runs: list[Run], settings: Settings,
                    first_plot: list[bool]) -> str:  # fmt: skip
    analysis = analyse_experiment(experiment, runs, settings)
    parts = [
        f"<h2>#{experiment.id} {html.escape(experiment.name)}</h2>",
        f"<p>{'<br>'.join(html.escape(line) for line in analysis.title)}</p>",
        "<h3>Table</h3>",
        f"<pre>{html.escape(table.plain(analysis))}</pre>",
    ]
    for section in analysis.sections:
        if section.label:
            parts.append(f"<h3>{html.escape(section.label)}</h3>")
        for figure in section_figures(analysis, section):
            include = first_plot[0]
            first_plot[0] = False
            parts.append(
                "<div class='figure'>"
                + pio.to_html(
                    figure.figure, include_plotlyjs=include, full_html=False,
                    config={"displaylogo": False, "responsive": True},
                )
                + "</div>"
            )  # fmt: skip
    parts += [
        "<h3>Machine</h3>",
        _facts(runs),
        "<h3>Configuration</h3>",
        f"<pre>{html.escape(json.dumps(experiment.spec.to_dict(), indent=2))}</pre>",
        f"<p>{len(runs)} runs stored; locklab {html.escape(experiment.locklab_version)} "
        f"{html.escape(experiment.locklab_commit or '')}</p>",
    ]
    return "<div class='experiment'>" + "\n".join(parts) + "</div>"


def render(experiments: list[tuple[Experiment, list[Run]]], settings: Settings) -> str:
    first_plot = [True]
    columns = "\n".join(
        experiment_html(experiment, runs, settings, first_plot) for experiment, runs in experiments
    )
    names = ", ".join(f"#{e.id} {e.name}" for e, _ in experiments)
    version = html.escape(f"{provenance.version()} {provenance.commit() or ''}")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>locklab report: {html.escape(names)}</title>
<style>{STYLE}</style>
</head>
<body>
<h1>locklab report: {html.escape(names)}</h1>
<p>Generated by locklab {version}.
{html.escape("; ".join(legend_lines(settings)))}</p>
<div class="experiments" style="--columns: {len(experiments)}">
{columns}
</div>
</body>
</html>
"""
