"""A campaign adds the few runs its verdicts ask for (run/settle.py), within its time, and says
which; the table and `results` tell them from the planned ones. Simulated, so that which cell
asks is the same on every host: clh against mcs at 8 writers on mach1 asks for 5 runs after 3."""

import sqlite3

import pytest
from locklab import cli
from locklab.run import settle

CAMPAIGN = """
name = "settle-check"
sim = "mach1"
repeat = 3
duration = 0.001
warmup = 0
[sweep]
nwriters = [4, 8]
[[variant]]
lock = "mcs"
[[variant]]
lock = "clh"
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
    assert cli.main(["campaign", str(campaign), "--store", str(store), "--plain"]) == 0
    said = capsys.readouterr()
    assert "settling 1 inconclusive cell that asked for a few more runs (at most 6 per cell)" in (
        said.err
    )
    assert "clh nwriters=8: 3 to 5 runs" in said.err
    runs = stored(store)
    extra = sorted((key, repeat) for key, repeat in runs if repeat >= 3)
    assert len(runs) == 12 + 4 and sorted(repeat for _, repeat in extra) == [3, 3, 4, 4]
    assert {key.split("|")[0] for key, _ in extra} == {"mcs", "clh"}  # the cell and its baseline
    out = said.out
    assert '"settle-check": 3 runs per cell, up to 5 where a verdict asked for more,' in out
    row = next(line for line in out.splitlines() if line.startswith("8 "))
    assert row.split()[3] == "5" and row.split()[6] == "5"  # n of both cells
    assert "inconclusive" not in out.split("Verdict against mcs:")[1].splitlines()[1]
    assert cli.main(["results", "--store", str(store)]) == 0
    assert "complete, and 4 runs past it to settle verdicts" in capsys.readouterr().out


def test_no_settle_and_no_time_leave_the_cell_as_planned(campaign, tmp_path, capsys, monkeypatch):
    store = tmp_path / "s"
    args = ["campaign", str(campaign), "--store", str(store), "--plain", "--fresh"]
    assert cli.main([*args, "--no-settle"]) == 0
    assert "settling" not in capsys.readouterr().err and len(stored(store)) == 12
    monkeypatch.setattr(settle, "TIME_SHARE", 0.0)
    assert cli.main(args) == 0
    said = capsys.readouterr()
    assert "not settled: clh nwriters=8: 3 to 5 runs would take more than 0% of the time" in (
        said.err
    )
    assert "about 5 runs per cell would settle it" in said.out
    assert len(stored(store)) == 24
