"""The table, verdicts and exports, on a store filled with known numbers (no engine runs)."""

import csv
import io
import json
from dataclasses import replace

import pytest
from locklab.analysis import window_events
from locklab.analysis.cells import Settings, analyse_comparison, analyse_experiment
from locklab.model.spec import ExperimentSpec, Variant
from locklab.output import export, table
from locklab.store import Run, Store

MACHINE = {
    "hostname": "testbox",
    "arch": "x86_64",
    "cpu_model": "Test CPU",
    "cpus_online": 2,
    "numa_nodes": 1,
    "governor": "performance",
    "kernel": "6.1.0 #1 SMP",
}


def flat_intervals(ops: float, slope: float = 0.0) -> list[dict]:
    return [
        {"t_s": 0.1 * i, "ops_per_s": ops + slope * 0.1 * i, "span_s": 0.1} for i in range(1, 21)
    ]


def fill(
    store: Store, spec: ExperimentSpec, kops: dict, drifting: frozenset = frozenset(), extra=None
):
    """kops: {(label, nwriters): [kops/s per repeat]}; a None value is a failed run. extra(label,
    nwriters, repeat): more keys for that run's result (the machine's under "machine")."""
    experiment = store.create_experiment(spec, "testbox", "0.1.0", "abc1234")
    for (label, nwriters), values in kops.items():
        config = next(
            c
            for c in spec.configurations()
            if c.variant.label == label and c.axis("nwriters") == nwriters
        )
        for repeat, value in enumerate(values):
            ok = value is not None
            ops = value * 1000 if ok else None
            slope = ops * 0.5 if ok and (label, nwriters) in drifting else 0.0
            result = {
                "machine": MACHINE,
                "intervals": flat_intervals(ops or 0, slope),
                # a second metric: one context switch per 1000 acquisitions per 100 kops/s
                "context_switches": {"voluntary_per_1000_acquisitions": (value or 0) / 100},
            }
            if extra is not None:
                result |= extra(label, nwriters, repeat)
            run = Run(
                config.key,
                repeat,
                "ok" if ok else "violation",
                0 if ok else 1,
                ops,
                None if ok else "2 overlapping writers",
                result,
                result["machine"],
                1.0,
            )
            store.add_run(experiment, run, ["locklab-bench"], "0.1.0", "abc1234")
    return experiment


def spec_two_locks(name="seedlike") -> ExperimentSpec:
    return ExperimentSpec(
        name=name,
        variants=[Variant("k0-stock", "tas"), Variant("k1-rmacq", "ticket")],
        sweep={"nwriters": [1, 2, 4]},
        repeat=5,
        duration_s=60,
        warmup_s=10,
        pin="compact",
    )


KOPS = {
    ("k0-stock", 1): [899.0, 901.0, 900.0, 899.5, 900.5],
    ("k0-stock", 2): [359.0, 361.0, 360.0, 359.5, 360.5],
    ("k0-stock", 4): [328.0, 330.0, 329.0, 328.5, 329.5],
    ("k1-rmacq", 1): [900.0, 902.0, 898.0, 899.0, 901.0],  # same as stock: ~
    ("k1-rmacq", 2): [416.0, 418.0, 417.0, 416.5, 417.5],  # +15.8 %
    ("k1-rmacq", 4): [300.0, 360.0, 250.0, 330.0, 340.0],  # noisy
}


def test_plain_table_has_seed_000_layout(store):
    experiment = fill(store, spec_two_locks(), KOPS)
    text = table.plain(analyse_experiment(experiment, store.runs(experiment), Settings()))
    lines = text.splitlines()
    assert lines[0].startswith('experiment #1 "seedlike": 5 runs per cell, 60 s measured after')
    assert lines[1].startswith("machine: testbox, x86_64, Test CPU, 2 CPUs, 1 NUMA node")
    header = next(i for i, line in enumerate(lines) if line.startswith("Lock:"))
    assert lines[header].split() == ["Lock:", "k0-stock", "k1-rmacq"]
    assert lines[header + 1].split() == [
        "Statistic",
        "(kops/s):",
        "mean",
        "std",
        "n",
        "mean",
        "std",
        "n",
        "rel",
    ]
    assert lines[header + 2] == "nwriters:"
    rows = [line.split() for line in lines[header + 3 : header + 6]]
    # n, the runs behind each mean; rel % with its 95% interval; "=": equal within 5%
    assert rows[0] == ["1", "900.00", "0.79", "5", "900.00", "1.58", "5", "+0.0%", "[-0.2,",
                       "+0.2]", "="]  # fmt: skip
    assert rows[1] == ["2", "360.00", "0.79", "5", "417.00", "0.79", "5", "+15.8%", "[+15.5,",
                       "+16.2]"]  # fmt: skip
    assert rows[2][:1] == ["4"] and rows[2][-1] == "~!"
    # Fixed width: every number column ends at the same place on every row.
    mean_end = lines[header + 1].index("mean") + len("mean")
    for line in lines[header + 3 : header + 6]:
        assert line[mean_end - 1] != " " and line[mean_end] == " "
    assert all(line == line.rstrip() for line in lines)


def test_verdict_lines(store):
    experiment = fill(store, spec_two_locks(), KOPS)
    text = table.plain(analyse_experiment(experiment, store.runs(experiment), Settings()))
    verdict = next(line for line in text.splitlines() if line.startswith("  k1-rmacq:"))
    assert verdict == (
        "  k1-rmacq: faster at 2 writers (+15.8% [+15.5, +16.2], p < 0.001); equal within ±5% "
        "at 1 writer; inconclusive at 4 writers (more than 1000 runs per cell, or longer runs, "
        "would settle it); noisy (CV > 5%) at 4 writers"
    )


def test_verdict_no_difference_and_slower(store):
    kops = dict(KOPS)
    kops["k1-rmacq", 2] = [359.0, 361.5, 360.5, 359.0, 360.0]
    kops["k1-rmacq", 4] = [318.0, 319.0, 318.5, 317.5, 319.5]  # -3.2 %
    experiment = fill(store, spec_two_locks(), kops)
    analysis = analyse_experiment(experiment, store.runs(experiment), Settings())
    assert analysis.sections[0].verdicts[1] == (
        "significant but below 5% at 4 writers (-3.2% [-3.5, -2.8], p < 0.001); "
        "equal within ±5% at <= 2 writers"
    )
    analysis = analyse_experiment(experiment, store.runs(experiment), Settings(min_effect=3))
    assert (
        analysis.sections[0]
        .verdicts[1]
        .startswith(
            "slower at 4 writers (-3.2% [-3.5, -2.8], p < 0.001); equal within ±3% at <= 2 writers"
        )
    )
    kops["k1-rmacq", 4] = [328.5, 329.0, 328.0, 330.0, 329.5]
    experiment = fill(store, spec_two_locks("same"), kops)
    analysis = analyse_experiment(experiment, store.runs(experiment), Settings())
    assert analysis.sections[0].verdicts[1] == "equal within ±5% at every thread count"


def test_drift_and_failures_are_flagged(store):
    kops = dict(KOPS)
    kops["k1-rmacq", 1] = [900.0, 902.0, None, 899.0, 901.0]
    experiment = fill(store, spec_two_locks(), kops, drifting=frozenset({("k0-stock", 2)}))
    analysis = analyse_experiment(experiment, store.runs(experiment), Settings())
    cells = analysis.sections[0].cells
    assert "x" in cells[1, 1].flags() and cells[1, 1].summary.n == 4
    assert cells[0, 2].drifting_runs == 5 and "^" in cells[0, 2].flags()


def test_mann_whitney_setting_is_used(store):
    experiment = fill(store, spec_two_locks(), KOPS)
    analysis = analyse_experiment(experiment, store.runs(experiment), Settings(test="mann-whitney"))
    assert analysis.sections[0].cells[1, 2].comparison.p_value == pytest.approx(2 / 252)
    assert "Mann-Whitney U" in analysis.legend()[0]


def test_exports(store):
    experiment = fill(store, spec_two_locks(), KOPS)
    runs = store.runs(experiment)
    analysis = analyse_experiment(experiment, runs, Settings())
    rows = list(csv.DictReader(io.StringIO(export.to_csv(analysis))))
    assert len(rows) == 6
    row = next(r for r in rows if r["variant"] == "k1-rmacq" and r["nwriters"] == "2")
    assert float(row["mean"]) == pytest.approx(417.0)
    assert float(row["rel_pct"]) == pytest.approx(15.83, abs=0.01)
    assert row["significant"] == "True"
    document = json.loads(export.to_json(analysis, experiment, runs))
    assert document["experiment"]["spec"]["variants"][1]["label"] == "k1-rmacq"
    assert len(document["runs"]) == 30 and document["runs"][0]["result"]["machine"] == MACHINE
    assert document["verdicts"][0]["verdict"].startswith("faster at 2 writers")
    markdown = export.to_markdown(analysis)
    assert "| nwriters | k0-stock mean | k0-stock std | k1-rmacq mean |" in markdown
    assert "| 2 | 360.00 | 0.79 | 417.00 | 0.79 | +15.8% [+15.5, +16.2] |" in markdown


def test_compare_two_experiments(store):
    a = fill(store, spec_two_locks("machine-a"), KOPS)
    faster = {key: [v * 1.2 for v in values] for key, values in KOPS.items()}
    b = fill(store, spec_two_locks("machine-b"), faster)
    analysis = analyse_comparison(a, store.runs(a), b, store.runs(b), Settings())
    assert [c.header for c in analysis.columns] == [
        "k0-stock #1",
        "k0-stock #2",
        "k1-rmacq #1",
        "k1-rmacq #2",
    ]
    verdicts = analysis.sections[0].verdicts
    assert verdicts[1] == "faster at every thread count (+20.0%, p < 0.001)"
    text = table.plain(analysis)
    assert text.startswith("#2 compared with #1\nA: experiment #1")


def test_merge_keeps_machine_facts_and_is_idempotent(tmp_path, store):
    other = Store(tmp_path / "other")
    remote = fill(other, spec_two_locks("remote"), KOPS)
    imported, present = store.merge(other)
    assert [e.name for e in imported] == ["remote"] and not present
    mine = imported[0]
    assert mine.uuid == remote.uuid and mine.origin.startswith("merged from")
    assert store.runs(mine)[0].machine == MACHINE
    assert len(store.runs(mine)) == 30
    imported, present = store.merge(other)
    assert not imported and [e.uuid for e in present] == [remote.uuid]
    other.close()


def test_confidence_interval_column(store):
    experiment = fill(store, spec_two_locks(), KOPS)
    settings = Settings(show_ci=True)
    lines = table.plain(analyse_experiment(experiment, store.runs(experiment), settings))
    lines = lines.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("Statistic"))
    assert lines[header].split()[2:] == [
        "mean", "std", "ci95", "n", "mean", "std", "ci95", "n", "rel"
    ]  # fmt: skip
    # std 0.7906 of 5 runs: t(0.975, 4) * 0.7906 / sqrt(5) = 0.98; n, the runs behind the mean
    assert lines[header + 2].split()[:5] == ["1", "900.00", "0.79", "0.98", "5"]


def test_other_metrics(store):
    experiment = fill(store, spec_two_locks(), KOPS)
    analysis = analyse_experiment(experiment, store.runs(experiment), Settings(metric="ctxsw"))
    text = table.plain(analysis)
    assert "Statistic (voluntary switches/1k ops):" in text
    assert analysis.sections[0].cells[1, 2].summary.mean == pytest.approx(4.17)
    assert analysis.sections[0].verdicts[1].startswith("more switches at 2 writers (+15.8%")
    # A metric the runs did not report: empty cells, no verdict figures, no crash.
    empty = analyse_experiment(experiment, store.runs(experiment), Settings(metric="same-node"))
    assert empty.sections[0].cells[0, 1].summary.n == 0
    assert empty.sections[0].verdicts[1].startswith("not tested")


def test_holm_correction_per_lock(store):
    kops = dict(KOPS)
    kops["k1-rmacq", 1] = [903.0, 905.0, 901.0, 904.0, 902.5]  # +0.3%: p ~ 0.01 alone
    experiment = fill(store, spec_two_locks(), kops)
    runs = store.runs(experiment)
    raw = analyse_experiment(experiment, runs, Settings(correction="none"))
    holm = analyse_experiment(experiment, runs, Settings())
    raw_cell, holm_cell = raw.sections[0].cells[1, 1], holm.sections[0].cells[1, 1]
    assert raw_cell.comparison.p_value == holm_cell.comparison.p_value
    assert holm_cell.comparison.p_adjusted >= holm_cell.comparison.p_value
    # Three tested cells; this p is the 2nd smallest (2 writers' is far smaller): times 2.
    assert holm_cell.comparison.p_adjusted == pytest.approx(2 * holm_cell.comparison.p_value)
    assert "Holm-adjusted per lock" in holm.legend()[0]
    assert "Holm" not in raw.legend()[0]


def test_one_machine_line_whatever_each_run_measured_its_pause(store):
    """Each run times cpu_relax itself; one machine still gives one line, with the median and
    the range, not a line per value."""
    pauses = iter([24.3, 24.5, 27.3, 24.4] * 10)
    experiment = fill(
        store, spec_two_locks(), KOPS,
        extra=lambda *_: {"machine": MACHINE | {"cpu_relax_ns": next(pauses)}},
    )  # fmt: skip
    text = table.plain(analyse_experiment(experiment, store.runs(experiment), Settings()))
    machines = [line for line in text.splitlines() if line.startswith("machine:")]
    assert len(machines) == 1
    assert machines[0].endswith("cpu_relax 24.4 ns (24.3-27.3 over 30 runs)")


def test_a_window_inside_a_long_hold_stays_in_the_mean_and_is_flagged(store):
    """Seed 000 simulated: a 4 ms window fell inside one of locktorture's 100 ms holds
    (0.0 kops/s, the hold counted). That is the workload: the run stays in the mean, and the
    cell is flagged too short for that hold, in its flags, its verdict and the legend. A
    100 ms hold counted in a 60 s window is not flagged (0.2% of it)."""
    kops = {**KOPS, ("k1-rmacq", 1): [0.0, 1419.0, 420.0, 1400.0, 1410.0]}

    def extra(label, nwriters, repeat):
        held = {"long": int(repeat == 0 and label == "k1-rmacq"), "long_ns": 100_000_000}
        window = 0.004 if nwriters == 1 else 60.0
        if nwriters == 2:  # a hold in every run of every cell at 2 writers, but a long window
            held["long"] = 1
        return {"window_s": window, "torture_delays": {"writer": held, "reader": None}}

    experiment = fill(store, spec_two_locks(), kops, extra=extra)
    analysis = analyse_experiment(experiment, store.runs(experiment), Settings())
    cell = analysis.sections[0].cells[1, 1]
    assert cell is not None and cell.summary.n == 5
    assert cell.summary.mean == pytest.approx(sum(kops["k1-rmacq", 1]) / 5)
    assert cell.short_window_runs == 1 and cell.flags().endswith(window_events.TOO_SHORT_MARK)
    others = [c for (_, row), c in analysis.sections[0].cells.items() if c is not cell]
    assert not any(c and c.short_window_runs for c in others)
    text = table.plain(analysis)
    row1 = next(line for line in text.splitlines() if line.startswith("1 "))
    assert row1.rstrip().endswith(window_events.TOO_SHORT_MARK), row1
    verdict = next(line for line in text.splitlines() if line.startswith("  k1-rmacq: "))
    assert verdict.endswith(
        "; window too short for its 100 ms long holds at 1 writer (1 of 5 runs met one; "
        "longer runs settle it, not more)"
    ), verdict
    assert "# window too short for a long hold a run met (one hold > 5% of the window)" in text


def test_a_cell_that_drew_too_few_of_a_rare_event_is_flagged(store):
    """k1 at 4 writers spreads by a third and its runs drew 0 to 3 rwsem hand-offs each: which
    runs drew one may be its spread, so the cell is flagged too short, in its flags and its
    verdict. k1 at 2 writers drew as unevenly, but its figures agree (within 5%), and the same
    spread with 30 or more a run is not flagged either."""

    def extra(label, nwriters, repeat):
        handoffs = [0, 3, 1, 0, 2][repeat] if nwriters in (2, 4) else 0
        plugin = {"rwsem_wlock_handoff": handoffs, "rwsem_wlock": 1000}
        return {"lock_events": {"spin_expired": 0, "queue_flush": 0, "plugin": plugin}}

    experiment = fill(store, spec_two_locks(), KOPS, extra=extra)
    analysis = analyse_experiment(experiment, store.runs(experiment), Settings())
    cells = analysis.sections[0].cells
    assert cells[1, 4].rare_events == {"rwsem_wlock_handoff": range(0, 4)}
    assert cells[1, 4].flags().endswith(window_events.TOO_SHORT_MARK)
    assert not cells[1, 2].rare_events and not cells[0, 4].rare_events
    many = [replace(run, result={**run.result, "lock_events": {"plugin": {
        "rwsem_wlock_handoff": 30 + run.repeat}}}) for run in cells[1, 4].runs]  # fmt: skip
    assert window_events.too_few(many, cells[1, 4].values, 5.0) == {}  # as spread, but many
    text = table.plain(analysis)
    verdict = next(line for line in text.splitlines() if line.startswith("  k1-rmacq: "))
    assert verdict.endswith(
        "; too few rwsem writer hand-offs at 4 writers (0 to 3 per run; longer runs settle "
        "it, not more)"
    ), verdict
