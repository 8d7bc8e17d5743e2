"""A hand port and the tree's code of the same kernel lock, run side by side in the simulator:
throughput and coherence transfers per acquisition of each, one deterministic run per writer
count and gap between acquisitions, and port / tree as the geometric mean over the gaps
(model/ports.py names the pairs, the gaps and the differences known)."""

from __future__ import annotations

import os
import statistics
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from locklab.errors import LocklabError
from locklab.kernel.from_source import SIM_BUILD, build_source_lock
from locklab.model.machine_profile import find_profile
from locklab.run.engine import Engine


@dataclass(frozen=True)
class SimulatedFigures:
    throughput: float  # acquisitions per virtual second
    transfers: float  # coherence transfers per acquisition
    jain: float  # Jain's fairness index over the writers


@dataclass(frozen=True)
class AtGap:
    gap_ns: int
    of_port: SimulatedFigures
    of_tree: SimulatedFigures

    @property
    def ratio(self) -> float:
        return self.of_port.throughput / self.of_tree.throughput


@dataclass(frozen=True)
class PortAgainstTree:
    port: str
    tree: str
    nwriters: int
    at_gaps: tuple[AtGap, ...]

    @property
    def ratio(self) -> float:
        """Port / tree throughput, the geometric mean over the gaps."""
        return statistics.geometric_mean(at.ratio for at in self.at_gaps)

    @property
    def spread(self) -> tuple[float, float]:
        ratios = [at.ratio for at in self.at_gaps]
        return min(ratios), max(ratios)


def compare_simulated(
    engine_path: Path, tree_lock: str, port: str, writers: tuple[int, ...],
    gaps_ns: tuple[int, ...], profile: str, seconds: float,
) -> list[PortAgainstTree]:  # fmt: skip
    """Every run, as many at a time as the host has CPUs: each is deterministic, whatever else
    runs. In processes of their own, not threads: the engine is started with a preexec_fn
    (lifetime.py), which is safe only in a process with no other busy thread."""
    flat = find_profile(profile).flat_text()
    plugin = str(
        build_source_lock(tree_lock, "stock", [], SIM_BUILD, engine_path, sim_machine=flat).plugin
    )
    cells = [(n, gap, lock, path) for n in writers for gap in gaps_ns
             for lock, path in ((port, None), (tree_lock, plugin))]  # fmt: skip
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        futures = [pool.submit(_simulated, engine_path, *cell, seconds, flat) for cell in cells]
        try:
            figures = [future.result() for future in futures]
        except BaseException:
            pool.shutdown(cancel_futures=True)
            raise
    runs = dict(zip([cell[:3] for cell in cells], figures, strict=True))
    return [
        PortAgainstTree(port, tree_lock, n, tuple(
            AtGap(gap, runs[n, gap, port], runs[n, gap, tree_lock]) for gap in gaps_ns))
        for n in writers
    ]  # fmt: skip


def _simulated(
    engine_path: Path, nwriters: int, gap_ns: int, lock: str, plugin: str | None,
    seconds: float, flat: str,
) -> SimulatedFigures:  # fmt: skip
    args = ["--lock", lock, "--nwriters", str(nwriters), "--gap-ns", str(gap_ns),
            "--duration", str(seconds), "--warmup", str(seconds / 4),
            *(["--plugin", plugin] if plugin else [])]  # fmt: skip
    outcome = Engine(engine_path).run(args, timeout_s=600, sim_machine=flat)
    where = f"{lock} at {nwriters} simulated writers, gap {gap_ns} ns"
    if outcome.exit_code != 0 or outcome.result is None:
        last = (outcome.stderr.strip().splitlines() or ["no output"])[-1]
        raise LocklabError(f"{where}, failed: {last}")
    result = outcome.result
    if not float(result["throughput_ops_per_s"]) > 0:
        raise LocklabError(f"{where}: no acquisition in the window, so no ratio")
    return SimulatedFigures(
        float(result["throughput_ops_per_s"]),
        float(result["simulation"]["transfers_per_acquisition"]["total"]),
        float(result["fairness"]["write"]["jain_index"]),
    )
