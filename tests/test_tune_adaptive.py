"""The tuner and adaptive repetition (issue 7), and the seed campaigns at a tiny scale.
The tuner's search runs on synthetic objectives with known optima; adaptive repetition runs
against a fake engine whose locks have known spreads, so neither depends on this machine."""

import math
import re
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from conftest import ROOT
from locklab import cli
from locklab.run import tune
from locklab.run.adaptive import settled

FAKE_ENGINE = ROOT / "tests" / "fakes" / "fake_engine.py"
# The engine's seed campaigns; the kernel one (kind = "kernel") builds and boots kernels, and
# its pipeline is tested end to end in test_kernel_build.py; the simulated ones (sim = ...),
# whose 0.02 s here would be virtual seconds at up to 142 CPUs, in test_sim.py.
CAMPAIGNS = sorted(
    path
    for path in (ROOT / "campaigns").glob("seed-*.toml")
    if not re.search(r'^(kind = "(kernel|places)"|sim = )', path.read_text(), re.MULTILINE)
)


def peaked(peak: float, width: float = 1.0):
    """Throughput peaking at `peak`, falling off in log space."""
    return lambda value: math.exp(-((math.log2(max(value, 1)) - math.log2(peak)) ** 2) / width)


def synthetic(curves: dict):
    def evaluate(values):
        return {(v, ((("point", p),))): curve(v) for v in values for p, curve in curves.items()}

    return evaluate


def test_grid_is_log_spaced_with_both_ends():
    values = tune.grid(1, 4096, None, 7)
    assert values[0] == 1 and values[-1] == 4096
    assert values == [1, 4, 16, 64, 256, 1024, 4096]
    assert tune.grid(0, 100, 25, 10) == [0, 25, 50, 75, 100]


def test_tuner_finds_the_maximin_of_two_peaks():
    """Two thread counts whose best values are 16 and 256, with equal log-space widths: the
    value with the best worst case sits between them, at 64."""
    evaluate = synthetic({1: peaked(16), 2: peaked(256)})
    result = tune.search(evaluate, 1, 4096, grid_points=5, rounds=6)
    assert result.value == 64
    assert result.best_at[(("point", 1),)] == 16 and result.best_at[(("point", 2),)] == 256
    assert result.worst_relative == pytest.approx(peaked(16)(64) / peaked(16)(16))


def test_tuner_avoids_a_cliff():
    """One point prefers large values but another collapses above 100: the chosen value must
    stay below the cliff even though it is not the best anywhere."""
    cliff = lambda v: 1.0 if v <= 100 else 0.05  # noqa: E731
    evaluate = synthetic({1: peaked(400, width=8), 2: cliff})
    result = tune.search(evaluate, 1, 1000, step=1, grid_points=11, rounds=4)
    assert result.value <= 100
    assert result.worst_relative > 0.5


def test_settled_rule():
    quiet, other = [1000.0, 1000.5, 999.5], [2000.0, 2001.0, 1999.0]
    assert settled(quiet, other, 0.02)  # clearly different
    assert settled(quiet, [1000.2, 999.9, 1000.1], 0.02)  # both precise: no difference to find
    assert not settled([700.0, 1300.0, 1000.0], quiet, 0.02)  # too noisy to tell
    assert not settled([1000.0], quiet, 0.02)  # one run has no interval


def runs_per_config(store: Path) -> Counter:
    with sqlite3.connect(store / "locklab.db") as db:
        return Counter(key for (key,) in db.execute("SELECT config_key FROM runs"))


def test_adaptive_stops_early_when_quiet_and_runs_to_the_max_when_noisy(tmp_path, capsys):
    store = tmp_path / "store"
    args = [
        "run", "--engine", str(FAKE_ENGINE), "--store", str(store), "--lock",
        "quiet,quiet2,noisy", "--nwriters", "1,2", "--repeat", "auto", "--min-repeat", "3",
        "--max-repeat", "8", "--duration", "0.01", "--warmup", "0", "--plain",
    ]  # fmt: skip
    assert cli.main(args) == 0
    counts = runs_per_config(store)
    for nwriters in (1, 2):
        axes = f"nwriters={nwriters},nreaders=0,hold_ns=0,gap_ns=0,cs_lines=0"
        assert counts[f"quiet2|{axes}"] == 3  # clearly faster than the baseline: settled at min
        assert counts[f"noisy|{axes}"] == 8  # never settles: to the max
        assert counts[f"quiet|{axes}"] == 8  # the baseline stays open while noisy is
    err = capsys.readouterr().err
    assert "adaptive repetition: 38 runs of at most 48" in err
    listing = cli.main(["results", "--store", str(store)])
    assert listing == 0 and "settled after 38 of at most 48 runs" in capsys.readouterr().out


@pytest.mark.parametrize("path", CAMPAIGNS, ids=lambda p: p.stem)
def test_seed_campaign_runs_at_tiny_scale(path, tmp_path, capsys):
    store = tmp_path / "store"
    engine = ROOT / "build" / "opt" / "locklab-bench"
    args = ["campaign", str(path), "--store", str(store), "--engine", str(engine),
            "--repeat", "1", "--duration", "0.02", "--warmup", "0", "--plain"]  # fmt: skip
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    # the seed's table, in whichever unit its throughput scales to on this machine
    assert re.search(r"^Statistic \((k|M|G)?ops/s\):", out, re.MULTILINE)
    assert "report: " in out  # and its charts
    assert (store / f"{path.stem}.html").exists()


def test_tune_command_end_to_end(tmp_path, capsys):
    engine = ROOT / "build" / "opt" / "locklab-bench"
    args = ["tune", "ticket_fixed_delay", "--param", "spinlock_delay", "--range", "1:200",
            "--nwriters", "1,2", "--workload", "noload:0:0", "--workload", "load:2000:2000",
            "--repeat", "1", "--duration", "0.02", "--warmup", "0", "--grid", "3",
            "--rounds", "1", "--store", str(tmp_path / "store"), "--engine", str(engine),
            "-o", str(tmp_path / "tune.png")]  # fmt: skip
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert "ticket_fixed_delay: chosen spinlock_delay = " in out
    assert "noload nwriters=1" in out and "load nwriters=2" in out
    assert (tmp_path / "tune.png").stat().st_size > 5000


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["nosuch", "--param", "x", "--range", "1:2"], "unknown lock 'nosuch'"),
        (["ticket_fixed_delay", "--param", "x", "--range", "1:2"], "has no param 'x'"),
        (["ticket_fixed_delay", "--param", "spinlock_delay", "--range", "5:1"], "LO < HI"),
        (["ticket_fixed_delay", "--param", "spinlock_delay", "--range", "0:999999"], "stay in"),
    ],
)
def test_tune_bad_input(args, expected, tmp_path, capsys):
    engine = ROOT / "build" / "opt" / "locklab-bench"
    code = cli.main(["tune", *args, "--store", str(tmp_path), "--engine", str(engine)])
    err = capsys.readouterr().err
    assert code == 2 and expected in err and err.count("\n") == 1
