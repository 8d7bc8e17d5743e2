"""How long an experiment will take, said before it starts. A measured run lasts its warm-up
and window. A simulated run lasts what its writers and its lock cost the host, whatever its
virtual window (a 4 ms window at 142 writers of CNA took minutes where ticket's took seconds):
its estimate comes from the host times this store holds of runs of the same lock at the same
writers on the same profile, and says so, or says that it has none to go by. Runs of another
virtual length (warm-up and window) are scaled to this one's, host seconds per virtual second,
and the estimate says it is rough: a run's start (calibration, threads) does not scale.
"""

from __future__ import annotations

import statistics

from locklab.model.spec import ExperimentSpec
from locklab.store import Store

SimPoint = tuple[str, int]  # (lock, writers)


def _simulated_host_s(
    store: Store, profile: str, virtual_s: float
) -> dict[SimPoint, tuple[float, bool]]:
    """By point, the median host time of the store's finished simulated runs on `profile`,
    scaled to runs of `virtual_s` (warm-up and window), and whether any needed scaling."""
    seen: dict[SimPoint, list[tuple[float, bool]]] = {}
    for experiment in store.experiments():
        if experiment.spec.sim != profile:
            continue
        stored_s = experiment.spec.warmup_s + experiment.spec.duration_s
        scale, scaled = (virtual_s / stored_s, True) if stored_s != virtual_s else (1.0, False)
        locks = {variant.label: variant.lock for variant in experiment.spec.variants}
        for run in store.runs(experiment, with_results=False):
            lock = locks.get(run.config_key.label)
            if run.status == "ok" and lock is not None and run.wall_s > 0 and stored_s > 0:
                writers = dict(run.config_key.point).get("nwriters", 0)
                seen.setdefault((lock, writers), []).append((run.wall_s * scale, scaled))
    return {point: (statistics.median(t for t, _ in times), any(s for _, s in times))
            for point, times in seen.items()}  # fmt: skip


def duration_text(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


def estimate_text(spec: ExperimentSpec, store: Store, runs_at_once: int) -> str:
    """'about 3.2 min in all', and for a simulated experiment where that figure comes from."""
    schedule = spec.schedule()
    if not spec.sim:
        return f"about {duration_text(len(schedule) * spec.expected_run_s() / runs_at_once)} in all"
    known = _simulated_host_s(store, spec.sim, spec.warmup_s + spec.duration_s)
    times = [known.get((config.variant.lock, config.axis("nwriters"))) for config, _ in schedule]
    found = [t for t, _ in filter(None, times)]
    if not found:
        return (f"host time unknown: a simulated run takes what its writers and lock cost the "
                f"host, and this store has no earlier run of them on {spec.sim}")  # fmt: skip
    took = duration_text(sum(found) / runs_at_once)
    rough = (" (scaled from runs of other virtual lengths: rough)"
             if any(scaled for _, scaled in filter(None, times)) else "")  # fmt: skip
    if len(found) == len(times):
        return f"about {took} in all, from this store's earlier runs on {spec.sim}{rough}"
    return (f"more than {took}: this store has run {len(found)} of the {len(times)} runs' "
            f"points on {spec.sim} before, the rest are unknown{rough}")  # fmt: skip
