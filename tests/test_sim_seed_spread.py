"""A change to the simulator judged over seeds (analysis/seed_spread.py), at the smallest scale:
the rule that parks a spin 128 iterations after a clock read, not 1,024, reaches the same
regimes of arrival order over 20 seeds at 4 writers on two sockets; and the comparison
catches a change that moves them."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import test_sim
from locklab.analysis.seed_spread import SEEDS, SeedRun, compare_cell, seed_run
from locklab.model.machine_profile import find_profile

CELLS = (("gigabyte-96c", "mcs", 4), ("gigabyte-96c", "ticket", 4), ("x5-4", "qspinlock", 8))


def simulate(machine: Path, lock: str, writers: int, seed: int, env: dict[str, str]) -> SeedRun:
    args = ["--lock", lock, "--nwriters", str(writers), "--duration", "0.001", "--warmup",
            "0.0003", "--pin", "scatter", "--seed", str(seed)]  # fmt: skip
    proc, result = test_sim.simulate(machine, args, env)
    assert proc.returncode == 0 and result is not None, proc.stderr[-1500:]
    return seed_run(result)


@pytest.mark.parametrize("profile, lock, writers", CELLS)
def test_the_shorter_clock_quiet_span_keeps_each_cells_regimes(tmp_path, profile, lock, writers):
    machine = tmp_path / profile
    machine.write_text(find_profile(profile).flat_text())
    sides = ({"LOCKLAB_SIM_CLOCK_QUIET": "1024"}, {})
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = [list(pool.map(lambda seed, e=env: simulate(machine, lock, writers, seed, e),
                              range(1, SEEDS + 1))) for env in sides]  # fmt: skip
    comparison = compare_cell(f"{profile} {lock} x{writers}", runs[0], runs[1], len(CELLS))
    assert comparison.same, comparison.line()


def test_a_change_of_regime_is_caught():
    """Seeds all in the alternating order before (no same-node hand-over) and all paired
    after (half of them), at a throughput 19% apart, as MCS's two orders are."""
    before = [SeedRun(2.0e6 + 1e3 * i, 0.0) for i in range(SEEDS)]
    after = [SeedRun(2.38e6 + 1e3 * i, 0.5) for i in range(SEEDS)]
    moved = compare_cell("two regimes", before, after, 1)
    assert not moved.same and "MOVED" in moved.line()
    mixed = before[::2] + after[1::2]  # the same regimes, seeds reshuffled between them
    assert compare_cell("reshuffled", before[1::2] + after[::2], mixed, 1).same
