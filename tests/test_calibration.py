"""A/A calibration (`locklab calibrate`): pairs of one lock, each b judged against its a as a
table judges; the share of cells called significant. Counts only, never a rate asserted on a
real machine: the suite's runs are too few to estimate one."""

import subprocess
import sys

import pytest
from conftest import ROOT, bench_path
from locklab.analysis import stats
from locklab.analysis.calibration import analyse_pairs, calibrate, pair_variants
from locklab.analysis.cells import Settings
from locklab.model.spec import ExperimentSpec
from test_table import fill


def test_pairs_are_judged_each_against_its_own_first(store):
    spec = ExperimentSpec(name="aa", variants=pair_variants("tas", 2), sweep={"nwriters": [1, 2]},
                          repeat=5)  # fmt: skip
    same = [100.0, 101.0, 99.0, 100.5, 99.5]
    kops = {(label, n): same for label in ("a1", "b1", "a2") for n in (1, 2)}
    kops["b2", 1] = same
    kops["b2", 2] = [150.0, 151.0, 149.0, 150.5, 149.5]  # one real difference
    experiment = fill(store, spec, kops)
    analysis = analyse_pairs(experiment, store.runs(experiment), Settings())
    assert [c.compared_to for c in analysis.columns] == [None, 0, None, 2]
    found = calibrate(analysis)
    assert found.cells == 4 and found.significant == 1 and found.uncorrected == 1
    assert found.judged[stats.HIGHER] == 1 and found.judged[stats.EQUAL] == 3
    assert found.significant_by_row[2] == 1 and found.share == 0.25


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "locklab.cli", "calibrate", "--engine", str(bench_path("opt")),
         *args], capture_output=True, text=True, timeout=300, check=False, cwd=ROOT,
    )  # fmt: skip


def test_calibrate_at_a_tiny_scale(tmp_path):
    proc = cli("--lock", "tas", "--cells", "4", "--nwriters", "1,2", "--repeat", "2",
               "--duration", "0.05", "--warmup", "0", "--store", str(tmp_path / "s"))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("A/A calibration: tas against itself, 4 cells (2 pairs x 2")
    assert lines[1].startswith("called significant: ") and " of 4 cells (" in lines[1]
    assert "are few to estimate a rate" in proc.stdout and lines[-1].startswith("verdict: ")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--cells", "0"], "--cells must be from 1"),
        (["--repeat", "1"], "--repeat must be at least 2"),
        (["--lock", "nosuch"], "unknown lock 'nosuch'"),
        (["--nwriters", "0"], "nwriters"),
        (["--min-effect", "-1"], "--min-effect must be from 0 to 100"),
    ],
)
def test_bad_calibrate_input_is_one_line(tmp_path, args, says):
    proc = cli(*args, "--store", str(tmp_path / "s"))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert says in proc.stderr and "Traceback" not in proc.stderr
