"""The front end's side of locktorture's delays, the emulated remote-node cost and delays in
time: campaign keys and run options reach the engine, are checked first, and show up in the
machine line and in the tuner's answer. Counts and presence only, no timing."""

import json
import sqlite3

import pytest
from conftest import ROOT, bench_path
from locklab.cli.main import main
from test_cli import one_error_line


@pytest.fixture(autouse=True)
def engine_env(monkeypatch):
    monkeypatch.setenv("LOCKLAB_ENGINE", str(bench_path("opt")))


def stored_results(store) -> list[dict]:
    with sqlite3.connect(store / "locklab.db") as db:
        return [json.loads(text) for (text,) in db.execute("SELECT result_json FROM runs")]


def test_campaign_keys_reach_the_engine(tmp_path, capsys):
    campaign = tmp_path / "c.toml"
    campaign.write_text(
        'repeat = 1\nduration = 0.1\nwarmup = 0\npin = "compact"\nnuma_nodes = 2\n'
        'torture_delays = "spin_lock"\nnuma_remote_ns = 100\n[sweep]\nnwriters = [2]\n'
        '[[variant]]\nlock = "qspinlock"\n'
    )
    store = tmp_path / "store"
    assert main(["campaign", str(campaign), "--store", str(store), "--plain"]) == 0
    out = capsys.readouterr().out
    assert "emulated remote-node cost 100 ns" in out and "cpu_relax " in out
    (result,) = stored_results(store)
    assert result["torture_delays"]["type"] == "spin_lock"
    assert result["torture_delays"]["writer"]["acquisitions"] == result["write_acquisitions"]
    assert result["handoffs"]["remote_cost_paid"] >= 0


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--torture-delays", "bogus"], "torture_delays: unknown type 'bogus'"),
        (["--torture-delays", "spin_lock", "--hold-ns", "100"], "drop hold_ns and long_hold_ms"),
        (["--numa-remote-ns", "100"], "numa_remote_ns needs pinned threads"),
        (["--numa-remote-ns", "-1", "--pin", "compact"], "numa_remote_ns must be from 0"),
    ],
)
def test_workload_options_checked_before_running(tmp_path, capsys, args, expected):
    code = main(["run", "--lock", "tas", "--store", str(tmp_path / "s"), *args])
    one_error_line(capsys, code, expected)
    assert not (tmp_path / "s").exists()


def test_tuner_gives_a_delay_in_pauses_and_in_ns(tmp_path, capsys):
    args = ["tune", "ticket_fixed_delay", "--param", "spinlock_delay", "--range", "1:100",
            "--nwriters", "1", "--repeat", "1", "--duration", "0.02", "--warmup", "0",
            "--grid", "2", "--rounds", "0", "--store", str(tmp_path / "s"),
            "-o", str(tmp_path / "t.png")]  # fmt: skip
    assert main(args) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert " ns at " in first and "ns a pause here" in first


def test_seed_campaigns_use_the_seeds_workloads():
    text = (ROOT / "campaigns" / "seed-000-rtmutex.toml").read_text()
    assert 'torture_delays = "rtmutex_lock"' in text and "hold_ns" not in text.split("[sweep]")[1]
    assert "numa_remote_ns = 200" in (ROOT / "campaigns" / "seed-002-cna.toml").read_text()
