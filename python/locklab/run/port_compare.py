"""A hand port and the tree's code of the same kernel lock, run side by side in the simulator:
throughput and coherence transfers per acquisition of each, one deterministic run per writer
count (model/ports.py names the pairs and the differences known)."""

from __future__ import annotations

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
class PortAgainstTree:
    port: str
    tree: str
    nwriters: int
    of_port: SimulatedFigures
    of_tree: SimulatedFigures

    @property
    def ratio(self) -> float:
        return self.of_port.throughput / self.of_tree.throughput


def compare_simulated(
    engine_path: Path, tree_lock: str, port: str, writers: tuple[int, ...], profile: str,
    seconds: float,
) -> list[PortAgainstTree]:  # fmt: skip
    flat = find_profile(profile).flat_text()
    plugin = build_source_lock(tree_lock, "stock", [], SIM_BUILD, engine_path, sim_machine=flat)
    engine = Engine(engine_path)
    rows = []
    for nwriters in writers:
        figures = [
            _simulated(engine, lock, nwriters, seconds, flat, plugin_path)
            for lock, plugin_path in ((port, None), (tree_lock, str(plugin.plugin)))
        ]
        rows.append(PortAgainstTree(port, tree_lock, nwriters, *figures))
    return rows


def _simulated(
    engine: Engine, lock: str, nwriters: int, seconds: float, flat: str, plugin: str | None
) -> SimulatedFigures:
    args = ["--lock", lock, "--nwriters", str(nwriters), "--duration", str(seconds),
            "--warmup", str(seconds / 4), *(["--plugin", plugin] if plugin else [])]  # fmt: skip
    outcome = engine.run(args, timeout_s=600, sim_machine=flat)
    if outcome.exit_code != 0 or outcome.result is None:
        last = (outcome.stderr.strip().splitlines() or ["no output"])[-1]
        raise LocklabError(f"{lock} at {nwriters} simulated writers failed: {last}")
    result = outcome.result
    return SimulatedFigures(
        float(result["throughput_ops_per_s"]),
        float(result["simulation"]["transfers_per_acquisition"]["total"]),
        float(result["fairness"]["write"]["jain_index"]),
    )
