"""One self-contained HTML page per set of experiments: interactive charts (output/charts.py;
plotly, its JavaScript embedded, so the page opens with no network), the seed-000 table, the
verdicts, the machine facts and the full configuration. Several experiments (say, two
machines) are laid out side by side, one column each.

Everything that comes from users (lock names, labels, campaign names, machine facts) is
escaped: in the page with html.escape, in the charts by plotly's JSON encoding plus escaping of
the labels themselves, which plotly would otherwise read as its own small HTML subset.
"""

from __future__ import annotations

import html
import json

import plotly.graph_objects as go
import plotly.io as pio

from locklab import provenance
from locklab.analysis import disturbance
from locklab.analysis.cells import Analysis, Settings
from locklab.analysis.over_commits import CommitStep, commit_series
from locklab.output import table
from locklab.output.charts import (
    mark_oversubscribed,
    over_commits_figure,
    relative_figure,
    section_figures,
)
from locklab.store import Experiment, Run


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


STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
.experiments { display: grid; gap: 1.5em; grid-template-columns: repeat(var(--columns), 1fr); }
.experiment { min-width: 0; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; font-size: 12px; }
h1 { font-size: 1.4em; } h2 { font-size: 1.2em; } h3 { font-size: 1.05em; margin-top: 1.5em; }
table.facts td { padding: 0.1em 0.8em 0.1em 0; font-size: 13px; vertical-align: top; }
.figure { border: 1px solid #eee; margin: 0.6em 0; }
"""


def _plural(count: object, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def machine_facts(machine: dict) -> list[tuple[str, str]]:
    """The machine as a person writes it down: labelled facts in words and units, not the
    stored record; a simulated machine is its profile alone, since the host's facts say
    nothing of it."""
    if machine.get("simulated"):
        name = str(machine.get("hostname"))
        return [
            ("simulated", f"{name} (a model, not hardware: docs/simulator.md)"),
            ("profile", str(machine.get("cpu_model"))),
            ("CPUs", f"{machine.get('cpus_online')} virtual, "
                     f"{_plural(machine.get('packages'), 'socket')}, "
                     f"{_plural(machine.get('numa_nodes'), 'NUMA node')}, "
                     f"{_plural(machine.get('threads_per_core'), 'thread')} per core"),
            ("costs", f"each with its source: locklab machines {name}"),
        ]  # fmt: skip
    facts = [
        ("host", f"{machine.get('hostname')} ({machine.get('arch')})"),
        ("CPU", str(machine.get("cpu_model"))),
        ("CPUs", f"{machine.get('cpus_online')} online, {machine.get('cpus_allowed')} allowed; "
                 f"{_plural(machine.get('cores'), 'core')}, "
                 f"{_plural(machine.get('packages'), 'package')}, "
                 f"{_plural(machine.get('numa_nodes'), 'NUMA node')}, "
                 f"SMT {'on' if machine.get('smt') else 'off'}"),
        ("kernel", str(machine.get("kernel", "?")).split()[0]),
        ("governor", str(machine.get("governor"))),
    ]  # fmt: skip
    if isinstance(machine.get("cpu_relax_ns"), int | float):
        facts.append(("pause", f"{machine['cpu_relax_ns']:.1f} ns per cpu_relax()"))
    return facts


def _facts(runs: list[Run]) -> str:
    machine = next((run.machine for run in runs if run.machine), None) or {}
    facts = machine_facts(machine)
    if not machine.get("simulated"):  # how fit it was to measure, as the table's header says
        facts.append(("condition", disturbance.summary_line(runs)))
    rows = "".join(f"<tr><td>{html.escape(label)}</td><td>{html.escape(value)}</td></tr>"
                   for label, value in facts)  # fmt: skip
    return f"<table class='facts'>{rows}</table>" if machine else "<p>no finished run</p>"


def experiment_html(
    experiment: Experiment,
    runs: list[Run],
    analysis: Analysis,
    first_plot: list[bool | str],
    width: int = table.MAIL_WIDTH,
) -> str:
    parts = [
        f"<h2>#{experiment.id} {html.escape(experiment.name)}</h2>",
        # The table first, its title lines and legend with it, once.
        f"<pre>{html.escape(table.plain(analysis, width))}</pre>",
    ]
    for section in analysis.sections:
        if section.label:
            parts.append(f"<h3>{html.escape(section.label)}</h3>")
        for figure in section_figures(analysis, section):
            parts.append(_figure_html(figure.figure, first_plot) if figure.figure is not None
                         else f"<p>{html.escape(figure.left_out)}</p>")  # fmt: skip
        for name, steps in commit_series(experiment.spec, analysis, section):
            chart = _figure_html(over_commits_figure(analysis, steps), first_plot)
            parts.append(f"<h3>{html.escape(name)} over the commits, each against the one "
                         f"before</h3>{over_commits_table(analysis, steps)}{chart}")  # fmt: skip
    parts += ["<h3>Machine</h3>", _facts(runs), "<h3>Configuration</h3>"]
    if experiment.command:  # what made it, to run again; the plan in full below
        parts.append(f"<p>Made by:</p><pre class='command'>{html.escape(experiment.command)}</pre>")
    parts += [
        "<details><summary>The stored plan</summary>",
        f"<pre>{html.escape(json.dumps(experiment.spec.to_dict(), indent=2))}</pre></details>",
        f"<p>{len(runs)} runs stored; locklab {html.escape(experiment.locklab_version)} "
        f"{html.escape(experiment.locklab_commit or '')}</p>",
    ]
    return "<div class='experiment'>" + "\n".join(parts) + "</div>"


# A table's width in a page of several experiments side by side, half of one about 1400 px.
SIDE_BY_SIDE_WIDTH = 80
# The library a small page loads from its own folder (plotly's name for it).
PLOTLY_JS = "plotly.min.js"


def _figure_html(figure: go.Figure, first_plot: list[bool | str]) -> str:
    """A chart's HTML; the page's first carries plotly's JavaScript, or with "directory" a
    <script> that loads PLOTLY_JS from beside the page."""
    include = first_plot[0]
    first_plot[0] = False
    chart = pio.to_html(figure, include_plotlyjs=include, full_html=False,
                        config={"displaylogo": False, "responsive": True})  # fmt: skip
    return f"<div class='figure'>{chart}</div>"


def combined_html(analysis: Analysis, first_plot: list[bool | str]) -> str:
    """The table of several places (analysis/places.py) and its rel % chart: each place's
    columns against that place's baseline (the places' units differ, so no throughput chart)."""
    section = analysis.sections[0]
    chart = _figure_html(mark_oversubscribed(relative_figure(analysis, section), section),
                         first_plot)  # fmt: skip
    return (
        "<h2>All places, one table</h2>"
        f"<p>{'<br>'.join(html.escape(line) for line in analysis.title)}</p>"
        f"<pre>{html.escape(table.plain(analysis, table.MAIL_WIDTH))}</pre>"
        f"{chart}"
        "<h2>Each place</h2>"
    )


def render(
    experiments: list[tuple[Experiment, list[Run], Analysis]],
    settings: Settings,
    combined: Analysis | None = None,
    small: bool = False,
) -> str:
    """The page, from each experiment's runs and the one analysis of them that the table came
    from: nothing is analysed again here. `combined`: one table of all of them, first.
    `small`: plotly's library is not embedded but loaded from PLOTLY_JS beside the page."""
    first_plot: list[bool | str] = ["directory" if small else True]
    preface = combined_html(combined, first_plot) if combined is not None else ""
    columns = "\n".join(
        # Side by side, each column holds less of a line: its table is folded narrower.
        experiment_html(
            experiment,
            runs,
            analysis,
            first_plot,
            table.MAIL_WIDTH if len(experiments) == 1 else SIDE_BY_SIDE_WIDTH,
        )
        for experiment, runs, analysis in experiments
    )
    names = ", ".join(f"#{e.id} {e.name}" for e, _, _ in experiments)
    return _page(
        f"locklab report: {names}",
        f"""<p>Generated by locklab {_version()}.</p>
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
