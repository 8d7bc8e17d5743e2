"""Importing kernel locktorture logs: the parser on the formats real logs come in, and the
import into the store, where table, compare and report work unchanged."""

from pathlib import Path

import pytest
from locklab import cli
from locklab.kernel import locktorture

DATA = Path(__file__).parent / "data" / "locktorture"


def test_dmesg_timestamps_unrelated_lines_and_the_doubled_final_line():
    runs, problems = locktorture.parse((DATA / "spin_lock_dmesg.log").read_text())
    assert not problems
    (run,) = runs
    assert run.torture_type == "spin_lock" and run.nwriters == 2 and run.end == "SUCCESS"
    assert run.params["stat_interval"] == "10"
    assert [r.total for r in run.writes] == [50000, 250000, 450000, 650000]  # one of the twins
    measured = locktorture.measure(run, warmup_reports=1)
    # From the 2nd report (25.0004 s) to the last (45.0006 s): 400000 writes in 20.0002 s.
    assert measured.throughput_ops_per_s == pytest.approx(400000 / 20.0002)
    assert measured.window_s == pytest.approx(20.0002)
    assert [round(i["ops_per_s"]) for i in measured.intervals] == [20000, 20000]


def test_console_log_without_timestamps_with_reads_and_starvation_marker():
    (run,), problems = locktorture.parse((DATA / "rw_lock_console.log").read_text())
    assert not problems and run.nreaders == 2
    assert run.writes[0].starved and not run.writes[1].starved  # ???
    assert [r.total for r in run.reads] == [4000, 24000, 44000]
    measured = locktorture.measure(run, warmup_reports=1)
    # No timestamps: reports are stat_interval = 5 s apart; from the 2nd report to the 3rd.
    assert measured.window_s == 5
    assert measured.write_ops == 5000 and measured.read_ops == 20000
    assert measured.throughput_ops_per_s == pytest.approx(5000)


def test_lock_busted_ends_in_failure():
    (run,), _ = locktorture.parse((DATA / "lock_busted.log").read_text())
    assert run.end == "FAILURE" and run.failed
    assert [r.fail for r in run.writes] == [12, 30, 51]


def test_two_runs_and_a_truncated_one():
    runs, problems = locktorture.parse(
        (DATA / "rtmutex_two_runs_truncated.log").read_text(), "t.log"
    )
    assert [(r.nwriters, r.end) for r in runs] == [(1, "SUCCESS"), (2, None)]
    assert len(runs[1].writes) == 3  # kept what it printed
    assert problems == [
        "t.log: the rtmutex_lock run (nwriters_stress=2) has no 'End of test' line: the log is "
        "truncated; kept its 3 reports"
    ]


def test_too_few_reports_to_measure():
    (run,), _ = locktorture.parse((DATA / "lock_busted.log").read_text())
    assert locktorture.measure(run, warmup_reports=2) is None


def test_import_into_the_store(tmp_path, capsys):
    store = tmp_path / "store"
    args = [
        "import-locktorture", f"k0={DATA / 'rtmutex_two_runs_truncated.log'}",
        f"k1={DATA / 'rtmutex_two_runs_truncated.log'}", "--name", "kernels", "--host",
        "taishan", "--store", str(store), "--plain",
    ]  # fmt: skip
    assert cli.main(args) == 0
    captured = capsys.readouterr()
    assert "truncated" in captured.err
    out = captured.out
    assert out.splitlines()[-1] == 'imported 4 runs as #1 "kernels"'
    assert "Lock:" in out and "k0" in out and "k1" in out
    # rtmutex, 1 writer: 4000 writes in 4 s after the first report: 1.00 kops/s.
    row = next(line for line in out.splitlines() if line.startswith("1 "))
    assert row.split()[:2] == ["1", "1.00"]
    assert cli.main(["table", "kernels", "--store", str(store), "--plain"]) == 0
    assert (
        cli.main(["report", "kernels", "--store", str(store), "-o", str(tmp_path / "r.html")]) == 0
    )


def test_import_keeps_failures_as_violations(tmp_path, capsys):
    store = tmp_path / "store"
    assert cli.main(["import-locktorture", str(DATA / "lock_busted.log"), "--store", str(store),
                     "--plain"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "x" in out.split("nwriters:")[1]  # the failed run is flagged in the table


def test_import_of_a_log_without_locktorture(tmp_path, capsys):
    log = tmp_path / "empty.log"
    log.write_text("[    0.000000] Linux version 6.1.0\n")
    code = cli.main(["import-locktorture", str(log), "--store", str(tmp_path / "s")])
    err = capsys.readouterr().err
    assert code == 2 and "no locktorture run" in err.splitlines()[-1]


def test_a_real_kernel_console_log():
    """Captured from Debian's 6.1.0-56-amd64 booted in QEMU (software emulation) with
    locktorture built from linux-source-6.1: BIOS noise, escape codes, module taint lines,
    the doubled final statistics line, and a trailing space after 'Fail: 0'."""
    (run,), problems = locktorture.parse((DATA / "qemu_debian_6.1_spin_lock.log").read_text())
    assert not problems
    assert run.torture_type == "spin_lock" and run.end == "SUCCESS"
    assert run.params["nwriters_stress"] == "2" and run.params["stat_interval"] == "2"
    assert [r.total for r in run.writes] == [1572804, 3082607, 4535587, 5133789]
    measured = locktorture.measure(run, warmup_reports=1)
    expected = (5133789 - 3082607) / (8.731357 - 5.671645)
    assert measured.throughput_ops_per_s == pytest.approx(expected)
