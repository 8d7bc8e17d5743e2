"""One naming rule for locks (lower-case words joined by '_'), and the old names kept as
aliases: stored results and campaign files that use them still run."""

import re

from conftest import bench_path, list_locks, run_engine
from locklab.cli.main import main
from locklab.model.catalogue import Catalogue, LockInfo
from locklab.model.targeting import SourceVariant, spec_for_locks

OLD_NAMES = {f"rtmutex-k{k}": f"rtmutex_k{k}" for k in range(6)} | {
    "qspinlock-nr16k": "qspinlock_nr16k",
    "cna-v1": "cna_v1",
}


def test_every_lock_follows_the_rule_and_lists_its_old_names():
    locks = list_locks()
    assert all(re.fullmatch(r"[a-z0-9]+(_[a-z0-9]+)*", lock["name"]) for lock in locks)
    aliases = {alias: lock["name"] for lock in locks for alias in lock.get("aliases", [])}
    assert aliases == OLD_NAMES


def test_the_engine_takes_an_old_name(tmp_path):
    run = run_engine(["--lock", "rtmutex-k0", "--ops", "1000", "--duration", "2"], "opt", tmp_path)
    assert run.returncode == 0 and run.result["config"]["lock"] == "rtmutex_k0"


def test_a_campaign_with_old_names_still_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LOCKLAB_ENGINE", str(bench_path("opt")))
    campaign = tmp_path / "old.toml"
    campaign.write_text(
        "repeat = 1\nduration = 0.05\nwarmup = 0\n"
        '[[variant]]\nlock = "cna-v1"\n[[variant]]\nlock = "rtmutex-k3"\n'
    )
    assert main(["campaign", str(campaign), "--store", str(tmp_path / "s"), "--plain"]) == 0
    assert "cna-v1" in capsys.readouterr().out  # the label the file gave


def test_a_kernel_column_beside_other_locks_names_its_lock():
    """`--lock mutex,kernel:mutex --patch stock`: the tree's column reads kernel:mutex/stock, not
    a bare `stock` that hides which code it is; alone, its columns are the patch labels."""
    mutex = LockInfo("mutex", "sleeping", "", "", (), ())
    catalogue = Catalogue([mutex])
    compiled = {"kernel:mutex": [SourceVariant("stock", "stock.so")]}

    def labels(locks: str) -> list[str]:
        spec = spec_for_locks(lambda _: catalogue, locks, [], [], {}, compiled)
        return [variant.label for variant in spec.variants]

    assert labels("mutex,kernel:mutex") == ["mutex", "kernel:mutex/stock"]
    assert labels("kernel:mutex") == ["stock"]
