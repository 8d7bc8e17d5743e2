"""A simulated experiment is never mistaken for a measured one: compared with one, the table
says so first, and each side's crowded rows are named by its own machine's CPUs."""

import os

from conftest import ROOT
from locklab import cli

COMMON = ["--lock", "tas,ticket", "--nwriters", f"1,{2 * len(os.sched_getaffinity(0))}",
          "--repeat", "2", "--warmup", "0", "--plain"]  # fmt: skip


def test_measured_against_simulated_says_so_and_labels_each_side(tmp_path, capsys):
    store = str(tmp_path / "store")
    engine = str(ROOT / "build" / "opt" / "locklab-bench")
    measured = ["run", *COMMON, "--duration", "0.05", "--name", "here", "--engine", engine]
    assert cli.main([*measured, "--store", store]) == 0
    simulated = ["run", *COMMON, "--duration", "0.001", "--sim", "mach1", "--name", "model"]
    assert cli.main([*simulated, "--store", store]) == 0
    capsys.readouterr()
    assert cli.main(["compare", "here", "model", "--store", store, "--plain"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("#2 compared with #1: simulated against measured")
    assert "(oversubscribed)" not in out  # 16 simulated CPUs are not crowded by the host's
    assert "tas #1, ticket #1: more threads than their" in out
    assert "spread across seeds of the model" in out


def test_a_campaign_on_another_profile_is_another_experiment():
    """seed-000-sim on its own machine and with --sim gigabyte-96c: two names, two pages."""
    from locklab.model.campaign import load_campaign

    campaign = ROOT / "campaigns" / "seed-000-sim.toml"
    own = load_campaign(campaign)
    other = load_campaign(campaign, sim="gigabyte-96c")
    assert other.name == f"{own.name}-on-gigabyte-96c" and other.sim == "gigabyte-96c"
    assert load_campaign(campaign, sim=own.sim).name == own.name


def test_a_simulated_estimate_comes_from_the_stores_earlier_runs(tmp_path, capsys):
    """Not from its virtual window: a simulated run lasts what its writers and lock cost."""
    store = str(tmp_path / "store")
    args = ["run", "--sim", "mach1", "--lock", "ticket", "--nwriters", "1,2", "--repeat", "1",
            "--duration", "0.001", "--warmup", "0", "--store", store, "--plain"]  # fmt: skip
    assert cli.main(args) == 0
    assert "host time unknown" in capsys.readouterr().err
    assert cli.main(args) == 0
    assert "in all, from this store's earlier runs on mach1" in capsys.readouterr().err


def test_a_simulated_estimate_scales_runs_of_another_window(tmp_path, capsys):
    """Runs of 1 ms stand for runs of 10 ms at ten times their host time, said to be rough."""
    store = str(tmp_path / "store")
    args = ["run", "--sim", "mach1", "--lock", "ticket", "--nwriters", "2", "--repeat", "1",
            "--warmup", "0", "--store", store, "--plain"]  # fmt: skip
    assert cli.main([*args, "--duration", "0.001"]) == 0
    capsys.readouterr()
    assert cli.main([*args, "--duration", "0.01"]) == 0
    said = capsys.readouterr().err
    assert "in all, from this store's earlier runs on mach1 (scaled from runs of other " in said
