"""What a figure says it shows, wherever it is pasted: its experiment and machine, "simulated"
on a simulated one; each lock drawn the same way in every figure of every report; the swept
counts as integers, on a log2 axis once there are more than three."""

from pathlib import Path

import pytest
from locklab import cli
from locklab.analysis.cells import analyse_experiment
from locklab.analysis.model import Settings
from locklab.output import charts
from locklab.output.styles import (
    FIXED,
    OKABE_ITO,
    STYLES,
    count_axis,
    figure_styles,
    style_number,
)
from locklab.store import Store

SIM_RUN = ["--nwriters", "1,2,4,8", "--repeat", "2", "--duration", "0.001", "--warmup", "0",
           "--plain"]  # fmt: skip


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """Two simulated experiments that share mcs, in another order and company."""
    store = tmp_path_factory.mktemp("figures") / "store"
    for name, locks in (("first", "ticket,mcs"), ("second", "qspinlock,cna,mcs")):
        args = ["run", "--sim", "mach1", "--lock", locks, "--name", name, "--store", str(store)]
        assert cli.main([*args, *SIM_RUN]) == 0
    return store


def trace_colors(store: Path, name: str) -> dict[str, str]:
    """Each lock's line colour in the report's throughput chart of experiment `name`."""
    opened = Store(store, create=False, read_only=True)
    experiment = opened.experiment(name)
    analysis = analyse_experiment(experiment, opened.runs(experiment), Settings())
    figure = charts.throughput_figure(analysis, analysis.sections[0])
    return {trace.name: trace.line.color for trace in figure.data if trace.mode != "markers"}


def test_a_lock_keeps_its_colour_across_reports(store):
    first, second = trace_colors(store, "first"), trace_colors(store, "second")
    assert first["mcs"] == second["mcs"]
    assert len(set(second.values())) == 3  # three locks, three colours


def test_styles_are_fixed_for_built_in_locks_and_hashed_for_the_rest():
    alone = figure_styles(["mcs"])["mcs"]
    assert figure_styles(["ticket", "cna", "mcs"])["mcs"] == alone
    assert {figure_styles([name])[name].color for name in FIXED[:8]} == set(OKABE_ITO)
    assert style_number("my_plugin_lock") == style_number("my_plugin_lock")
    # Two names whose own styles are one: the second of a figure takes the next free one.
    owner: dict[int, str] = {}
    for number, name in ((style_number(f"plugin{i}"), f"plugin{i}") for i in range(STYLES + 1)):
        if number in owner:
            pair = [owner[number], name]
            break
        owner[number] = name
    styles = figure_styles(pair)
    assert styles[pair[0]] != styles[pair[1]]
    assert styles[pair[0]] == figure_styles([pair[0]])[pair[0]]


def test_counts_are_integer_ticks_on_log2_past_three():
    assert count_axis([1, 2, 4]) == charts.count_axis([4, 2, 1])
    assert not count_axis([1, 2, 4]).log2 and count_axis([1, 2, 4]).ticks == [1, 2, 4]
    assert count_axis([1, 4, 16, 48, 96]).log2


def test_a_simulated_figure_says_so_on_itself(store, tmp_path):
    out = tmp_path / "figures"
    assert cli.main(["plot", "first", "--store", str(store), "-o", str(out)]) == 0
    for svg in out.glob("*.svg"):
        text = svg.read_text()
        assert '"first", simulated: mach1 (model, not hardware), 16 virtual CPUs' in text.replace(
            "&quot;", '"'
        ), svg
    page = tmp_path / "report.html"
    assert cli.main(["report", "first", "--store", str(store), "-o", str(page)]) == 0
    html = page.read_text()
    assert "simulated: mach1 (model, not hardware)" in html
    assert '"tickvals":[1,2,4,8],"ticktext":["1","2","4","8"]' in html and '"type":"log"' in html


def test_a_small_page_loads_plotly_from_beside_it_and_leads_with_the_table(store, tmp_path):
    page = tmp_path / "page" / "report.html"
    page.parent.mkdir()
    assert cli.main(["report", "first", "--store", str(store), "-o", str(page), "--small"]) == 0
    text = page.read_text()
    assert (page.parent / "plotly.min.js").stat().st_size > 1_000_000
    assert page.stat().st_size < 500_000 and text.count('src="plotly.min.js"') == 1
    assert text.index("<pre>") < text.index("<div class='figure'>")  # the table first
    assert text.count("? too few runs to test") == 1  # the legend once
    # The machine as a person writes it: for a simulated one, its profile, not the host's
    # record ('smt_off': True, cpu_relax_ns 26.666660000000014).
    machine = text[text.index("<h3>Machine</h3>") :]
    assert "locklab machines mach1" in machine and "a model, not hardware" in machine
    assert "cpu_relax_ns" not in machine and "True" not in machine


def test_write_waits_the_timer_cannot_resolve_are_left_out(store):
    """A measured run's waits at one writer are the timer's own floor (p50 10 ns, p99 20 ns for
    every lock on a 2-vCPU VM, where two clock reads cost 30 ns): such runs are left out of the
    write-wait chart, and a chart left with nothing says why. Simulated waits all count."""
    opened = Store(store, create=False, read_only=True)
    experiment = opened.experiment("first")
    analysis = analyse_experiment(experiment, opened.runs(experiment), Settings())
    section = analysis.sections[0]
    titles = [figure.title for figure in charts.section_figures(analysis, section)
              if figure.figure is not None]  # fmt: skip
    assert "latency" in titles  # the simulator's clock resolves a cycle
    runs = [run for cell in section.cells.values() if cell for run in cell.runs]
    for run in runs:  # as if every wait were within two clock reads of this host
        run.result["calibration"]["sample_ns"] = 2 * run.result["latency_ns"]["write"]["p99"]
    left_out = {f.title: f.left_out for f in charts.section_figures(analysis, section)}
    assert left_out["latency"] == (
        "write wait: within the timer's own cost (two clock reads) in every run, so no chart"
    )


def test_the_report_gives_the_command_that_made_the_experiment(store, tmp_path):
    """Before the stored plan (folded): the command line, as typed, to run it again."""
    page = tmp_path / "made.html"
    assert cli.main(["report", "first", "--store", str(store), "-o", str(page)]) == 0
    html = page.read_text()
    made = html.index("Made by:")
    assert "locklab run --sim mach1 --lock ticket,mcs --name first --store" in html[made:]
    assert made < html.index("<summary>The stored plan</summary>")
    opened = Store(store, create=False, read_only=True)
    assert opened.experiment("first").command.startswith("locklab run --sim mach1 ")
