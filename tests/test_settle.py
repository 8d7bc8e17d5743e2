"""A campaign adds the few runs its verdicts ask for (run/settle.py), within its time, and says
which; the table and `results` tell them from the planned ones. On the fake engine, whose
figures are fixed by the seed: `near` is 10% above `quiet`, and three runs leave it open, at 1
writer asking for 6 runs per cell and at 2 writers for 5."""

import sqlite3

import pytest
from conftest import ROOT
from locklab import cli
from locklab.run import settle

FAKE = ROOT / "tests" / "fakes" / "fake_engine.py"
CAMPAIGN = """
name = "settle-check"
repeat = 3
duration = 0.01
warmup = 0
[sweep]
nwriters = [1, 2]
[[variant]]
lock = "quiet"
[[variant]]
lock = "near"
"""


@pytest.fixture
def campaign(tmp_path):
    path = tmp_path / "settle.toml"
    path.write_text(CAMPAIGN)
    return path


def stored(store) -> list[tuple[str, int]]:
    with sqlite3.connect(store / "locklab.db") as db:
        return db.execute("SELECT config_key, repeat FROM runs WHERE status = 'ok'").fetchall()


def test_a_campaign_settles_the_cell_that_asks_for_a_few_more_runs(
    campaign, tmp_path, capsys, monkeypatch
):
    monkeypatch.setattr(settle, "TIME_SHARE", 10.0)  # the host's speed is not what is tested
    store = tmp_path / "s"
    assert cli.main(["campaign", str(campaign), "--store", str(store), "--plain",
                     "--engine", str(FAKE)]) == 0  # fmt: skip
    said = capsys.readouterr()
    assert "settling 2 inconclusive cells that asked for a few more runs (at most 6 per cell)" in (
        said.err
    )
    assert "near nwriters=2: 3 to 5 runs" in said.err and "near nwriters=1: 3 to 6 runs" in said.err
    runs = stored(store)
    extra = [(key.split("|")[0], repeat) for key, repeat in runs if repeat >= 3]
    assert len(runs) == 12 + 10  # each cell's and its baseline's
    assert sorted(extra) == sorted(
        [(lock, r) for lock in ("quiet", "near") for r in (3, 4, 5)]
        + [(lock, r) for lock in ("quiet", "near") for r in (3, 4)]
    )
    out = said.out
    assert '"settle-check": 3 runs per cell, up to 6 where a verdict asked for more,' in out
    row = next(line for line in out.splitlines() if line.startswith("2 "))
    assert row.split()[3] == "5" and row.split()[6] == "5"  # n of both cells
    assert "near: faster at every thread count (+10.5% to +13.2%" in out  # both settled
    assert cli.main(["results", "--store", str(store)]) == 0
    assert "complete, and 10 runs past it to settle verdicts" in capsys.readouterr().out


def test_no_settle_and_no_time_leave_the_cell_as_planned(campaign, tmp_path, capsys, monkeypatch):
    store = tmp_path / "s"
    args = ["campaign", str(campaign), "--store", str(store), "--plain", "--fresh",
            "--engine", str(FAKE)]  # fmt: skip
    assert cli.main([*args, "--no-settle"]) == 0
    assert "settling" not in capsys.readouterr().err and len(stored(store)) == 12
    monkeypatch.setattr(settle, "TIME_SHARE", 0.0)
    assert cli.main(args) == 0
    said = capsys.readouterr()
    assert "not settled: near nwriters=2: 3 to 5 runs would take more than 0% of the time" in (
        said.err
    )
    assert "about 6 runs per cell would settle it" in said.out
    assert len(stored(store)) == 24
