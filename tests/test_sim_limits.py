"""Which limit ends a simulated run (docs/simulator.md, "Failures"): the virtual watchdog, or the
simulator's limit on host time without an acquisition, for a deadlock whose virtual time crawls
(tests/plugins/bouncing_ticket.c: waiters that keep the ticket line bouncing). Each run is
bounded by a small limit and a subprocess timeout."""

import os
import re
import sqlite3
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, plugin_path
from locklab.model.machine_profile import load_profile
from test_sim import SIM, TINY_PROFILE, simulate

LOCKLAB = ROOT / ".venv" / "bin" / "locklab"
BOUNCING = ["--lock", "bouncing_ticket", "--nwriters", "4", "--pin", "scatter"]


@pytest.fixture
def profile(tmp_path) -> Path:
    path = tmp_path / "tiny-2s.toml"
    path.write_text(TINY_PROFILE)
    return path


@pytest.fixture
def machine(profile) -> Path:
    flat = profile.with_suffix(".machine")
    flat.write_text(load_profile(profile).flat_text())
    return flat


def test_a_crawling_deadlock_ends_on_the_progress_limit(tmp_path, profile, machine):
    """Four writers of a lock that never serves a waiter, whose waiters bounce its line: a
    virtual watchdog of 10 virtual s is about a minute of host time away. With the limit off
    the run still goes on after 3 host s (the lock crawls, as this test needs). Run by locklab,
    whose simulated watchdog is 0.25 virtual s (1.3 host s on a 2-vCPU VM with the runtime's
    contexts, minutes before them), a 0.4 s progress limit ends it first, and it is stored as
    a watchdog failure with the simulator's line as its reason. Before the limit the run
    crawled until the subprocess timeout."""
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run(
            [str(SIM), "--plugin", str(plugin_path("sim", "bouncing_ticket")), *BOUNCING,
             "--duration", "0.002", "--warmup", "0.0005", "--watchdog", "10"],
            capture_output=True, timeout=3, check=False,
            env={**os.environ, "LOCKLAB_SIM_MACHINE": str(machine), "LOCKLAB_SIM_PROGRESS_S": "0"},
        )  # fmt: skip
    store = tmp_path / "store"
    proc = subprocess.run(
        [str(LOCKLAB), "run", "--sim", str(profile), "--plugin",
         str(plugin_path("sim", "bouncing_ticket")), *BOUNCING, "--repeat", "1",
         "--store", str(store)],
        capture_output=True, text=True, timeout=45, check=False,
        env={**os.environ, "LOCKLAB_SIM_PROGRESS_S": "0.4"},
    )  # fmt: skip
    assert proc.returncode != 0, proc.stdout
    with sqlite3.connect(store / "locklab.db") as db:
        rows = db.execute("SELECT status, error FROM runs").fetchall()
    assert len(rows) == 1 and rows[0][0] == "watchdog", rows
    # The idle time is measured where a hand-over looks at it: the limit, or a little past it.
    assert re.search(r"no progress for 0\.4\d* host s at virtual time", rows[0][1]), rows
    assert "LOCKLAB_SIM_PROGRESS_S" in rows[0][1]
    assert re.search(r"no progress for 0\.4\d* host s", proc.stdout + proc.stderr)


def test_the_virtual_watchdog_says_its_time_is_virtual(machine):
    args = ["--plugin", str(plugin_path("sim", "never_unlock")), "--lock", "never_unlock"]
    proc, result = simulate(machine, [*args, "--nwriters", "1", "--watchdog", "0.1"])
    assert proc.returncode == 3, proc.stderr
    assert "no acquisition in 0.1000 virtual s" in result["error"]


@pytest.mark.parametrize("value", ["x", "-1", "nan", "1e99"])
def test_a_bad_progress_limit_is_one_line(machine, value):
    proc, _ = simulate(machine, ["--lock", "ticket", "--nwriters", "1", "--ops", "10"],
                       {"LOCKLAB_SIM_PROGRESS_S": value})  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "locklab-sim: error: LOCKLAB_SIM_PROGRESS_S is host seconds without an acquisition "
        f"(0: no limit), not '{value}'"
    ]
