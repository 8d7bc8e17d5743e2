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

from locklab import provenance
from locklab.analysis import metrics, series
from locklab.analysis.cells import Analysis, Section, Settings
from locklab.analysis.metrics import from_result
from locklab.analysis.model import legend_lines
from locklab.analysis.over_commits import CommitStep, commit_series
from locklab.analysis.stats import HIGHER, LOWER
from locklab.output import table
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


def throughput_figure(analysis: Analysis, section: Section) -> go.Figure:
    """Every run as a dot, the mean with its 95% CI as a line."""
    figure = go.Figure()
    unit = analysis.unit
    for index, column in enumerate(analysis.columns):
        color = PALETTE[index % len(PALETTE)]
        name = _label(column.header)
        cells = series.cell_series(section, index)
        figure.add_trace(
            go.Scatter(
                x=cells.run_rows, y=cells.run_values, mode="markers", name=f"{name} runs",
                legendgroup=name,
                marker={"color": color, "opacity": 0.45, "size": 7}, showlegend=False,
            )
        )  # fmt: skip
        figure.add_trace(
            go.Scatter(
                x=cells.rows, y=cells.means, mode="lines+markers", name=name, legendgroup=name,
                line={"color": color},
                error_y={"type": "data", "array": cells.errors, "visible": True},
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
        points = series.relative_points(section, index)
        symbols = ["circle" if p.significant else "circle-open" for p in points]
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
                marker={"symbol": symbols, "size": 10,
                        "color": PALETTE[index % len(PALETTE)]},
                line={"color": PALETTE[index % len(PALETTE)]},
            )
        )  # fmt: skip
    figure.add_hline(y=0, line={"color": "#888", "dash": "dot"})
    _layout(figure, f"rel % against {analysis.baseline_name}, 95% interval (open marker: not "
            "significant)",
            analysis.row_axis, "rel %")  # fmt: skip
    return figure


def per_run_figure(
    analysis: Analysis,
    section: Section,
    title: str,
    y_title: str,
    figures: list[tuple[str, Callable[[Run], float | None], str]],
    log_y: bool = False,
) -> go.Figure | None:
    """Per lock, the mean over runs of per-run figures (name suffix, value, line dash) against
    the swept axis. None when no run reported any of them."""
    figure = go.Figure()
    found = False
    for index, column in enumerate(analysis.columns):
        for suffix, value, dash in figures:
            rows, means = series.mean_series(section, index, value)
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
        for row, seconds, ops in series.window_series(section, index):
            found = True
            figure.add_trace(
                go.Scatter(
                    x=seconds,
                    y=[value / 1000 for value in ops],
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


def mark_oversubscribed(figure: go.Figure, section: Section) -> go.Figure:
    """Shade the rows with more threads than CPUs, as the table labels them: what they show
    is the scheduler as much as the lock."""
    if section.oversubscribed:
        rows = sorted(section.rows)
        first = min(section.oversubscribed)
        before = [row for row in rows if row < first]
        start = (before[-1] + first) / 2 if before else first - 0.5
        figure.add_vrect(
            x0=start, x1=max(rows) + 0.5, fillcolor="#f2c037", opacity=0.15, line_width=0,
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
        color = PALETTE[number % len(PALETTE)]
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
    _layout(figure, f"{analysis.settings.measure.name} over the commits (ringed: a change "
            "from the commit before)", "commit", analysis.unit)  # fmt: skip
    return figure


def over_commits_table(analysis: Analysis, steps: list[CommitStep]) -> str:
    """Each commit, its subject, and per row its mean and its change from the commit before."""
    rows = sorted(steps[0].means)  # every step has every row
    head = "".join(f"<td>{html.escape(analysis.row_axis)}={row}</td>" for row in rows)

    def cell(step: CommitStep, row: int) -> str:
        mean = step.means.get(row)
        text = "-" if mean is None else f"{mean:,.1f}"
        change, judgement = step.changes.get(row, (None, ""))
        if change is not None:
            text += f" ({change:+.1f}% {judgement})"
        elif judgement:
            text += f" ({judgement})"
        return f"<td>{html.escape(text)}</td>"

    body = "".join(
        f"<tr><td>{html.escape(step.column)}</td><td>{html.escape(step.commit[:12])} "
        f"{html.escape(step.subject)}</td>" + "".join(cell(step, row) for row in rows) + "</tr>"
        for step in steps
    )  # fmt: skip
    return (f"<table class='facts'><tr><td>column</td><td>commit</td>{head}</tr>{body}"
            "</table>")  # fmt: skip


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
            analysis, section, "write wait: p50 (solid) and p99 (dotted), mean over runs", "ns",
            [(" p50", from_result(*metrics.LATENCY_P50_NS), "solid"),
             (" p99", from_result(*metrics.LATENCY_P99_NS), "dot")], log_y=True)),
        ("fairness", per_run_figure(
            analysis, section, "fairness: Jain's index of writers' acquisitions (1 = fair)",
            "Jain index", one(from_result(*metrics.JAIN_INDEX)))),
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


def experiment_html(experiment: Experiment, runs: list[Run], analysis: Analysis,
                    first_plot: list[bool]) -> str:  # fmt: skip
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
            parts.append(_figure_html(figure.figure, first_plot))
        for name, steps in commit_series(experiment.spec, analysis, section):
            chart = _figure_html(over_commits_figure(analysis, steps), first_plot)
            parts.append(f"<h3>{html.escape(name)} over the commits, each against the one "
                         f"before</h3>{over_commits_table(analysis, steps)}{chart}")  # fmt: skip
    parts += [
        "<h3>Machine</h3>",
        _facts(runs),
        "<h3>Configuration</h3>",
        f"<pre>{html.escape(json.dumps(experiment.spec.to_dict(), indent=2))}</pre>",
        f"<p>{len(runs)} runs stored; locklab {html.escape(experiment.locklab_version)} "
        f"{html.escape(experiment.locklab_commit or '')}</p>",
    ]
    return "<div class='experiment'>" + "\n".join(parts) + "</div>"


def _figure_html(figure: go.Figure, first_plot: list[bool]) -> str:
    """A chart's HTML; the page's first carries plotly's JavaScript."""
    include = first_plot[0]
    first_plot[0] = False
    chart = pio.to_html(figure, include_plotlyjs=include, full_html=False,
                        config={"displaylogo": False, "responsive": True})  # fmt: skip
    return f"<div class='figure'>{chart}</div>"


def combined_html(analysis: Analysis, first_plot: list[bool]) -> str:
    """The table of several places (analysis/places.py) and its rel % chart: each place's
    columns against that place's baseline (the places' units differ, so no throughput chart)."""
    section = analysis.sections[0]
    chart = _figure_html(mark_oversubscribed(relative_figure(analysis, section), section),
                         first_plot)  # fmt: skip
    return (
        "<h2>All places, one table</h2>"
        f"<p>{'<br>'.join(html.escape(line) for line in analysis.title)}</p>"
        f"<pre>{html.escape(table.plain(analysis))}</pre>"
        f"{chart}"
        "<h2>Each place</h2>"
    )


def render(
    experiments: list[tuple[Experiment, list[Run], Analysis]],
    settings: Settings,
    combined: Analysis | None = None,
) -> str:
    """The page, from each experiment's runs and the one analysis of them that the table came
    from: nothing is analysed again here. `combined`: one table of all of them, first."""
    first_plot = [True]
    preface = combined_html(combined, first_plot) if combined is not None else ""
    columns = "\n".join(
        experiment_html(experiment, runs, analysis, first_plot)
        for experiment, runs, analysis in experiments
    )
    names = ", ".join(f"#{e.id} {e.name}" for e, _, _ in experiments)
    return _page(
        f"locklab report: {names}",
        f"""<p>Generated by locklab {_version()}.
{html.escape("; ".join(legend_lines(settings)))}</p>
{preface}
<div class="experiments" style="--columns: {len(experiments)}">
{columns}
</div>""",
    )


def _version() -> str:
    return html.escape(f"{provenance.version()} {provenance.commit() or ''}")


def _page(title: str, body: str) -> str:
    """A whole page: `title` (escaped here) as its title and heading, then `body` (HTML)."""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{html.escape(title)}</title>
<style>{STYLE}</style>
</head>
<body>
<h1>{html.escape(title)}</h1>
{body}
</body>
</html>
"""


def history_page(title: str, table_text: str, chart_svg: str) -> str:
    """`locklab history --report`: one self-contained page, the table and its chart (the same
    figure -o draws, inline as SVG), to post or keep beside the experiments' reports."""
    chart = chart_svg[chart_svg.index("<svg") :]  # without the XML prologue
    return _page(
        "locklab history",
        f"""<p>{html.escape(title)}<br>Generated by locklab {_version()}.</p>
<div class="figure">{chart}</div>
<pre>{html.escape(table_text)}</pre>""",
    )
