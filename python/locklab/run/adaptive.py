"""Adaptive repetition (`--repeat auto`): after the minimum number of rounds, only the
configurations whose verdict is still open are run again, up to the maximum.

A cell is settled when its 95% confidence interval is narrow enough for the difference it is
judged on: either the intervals of the cell and of its baseline cell no longer overlap (the
difference is clear), or both are within `precision` of their means (any difference left is
smaller than what the experiment resolves). A baseline cell is settled when every cell compared
with it is. Throughput is what is judged.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from locklab.analysis import disturbance, stats
from locklab.model.cells import ConfigKey
from locklab.model.spec import ExperimentSpec, Point
from locklab.store import Experiment, Run, Store


def settled(cell: list[float], base: list[float], precision: float) -> bool:
    """Is the comparison of `cell` with `base` decided? Both need 2 runs for an interval."""
    if len(cell) < 2 or len(base) < 2:
        return False
    a, b = stats.summarize(cell), stats.summarize(base)
    assert a.ci95 is not None and b.ci95 is not None
    if a.ci95 + b.ci95 < abs(a.mean - b.mean):
        return True
    return a.ci95 <= precision * abs(a.mean) and b.ci95 <= precision * abs(b.mean)


def open_configurations(spec: ExperimentSpec, runs: list[Run], precision: float) -> set[ConfigKey]:
    """Keys of the configurations that need another run."""
    values: dict[ConfigKey, list[float]] = defaultdict(list)
    failed: set[str] = set()
    for run in runs:
        if disturbance.is_sample(run) and run.throughput_ops_per_s is not None:
            values[run.config_key].append(run.throughput_ops_per_s)
        elif run.status != "ok":
            failed.add(run.config_key.label)
    open_keys: set[ConfigKey] = set()
    baseline_keys: dict[Point, ConfigKey] = {}
    for config in spec.configurations():
        if config.variant.label == spec.baseline:
            baseline_keys[config.axes] = config.key
    for config in spec.configurations():
        label = config.variant.label
        if label in failed or label == spec.baseline:
            continue
        base_key = baseline_keys[config.axes]
        if not settled(values[config.key], values[base_key], precision):
            open_keys |= {config.key, base_key}
    if len(spec.variants) == 1:  # nothing to compare: settle on precision alone
        for config in spec.configurations():
            cell = values[config.key]
            summary = stats.summarize(cell)
            if len(cell) < 2 or (summary.ci95 or 0) > precision * abs(summary.mean):
                open_keys.add(config.key)
    return open_keys


@dataclass(frozen=True)
class Completion:
    """How far an experiment is: the one rule for "complete", used by `results` and by a
    campaign rerun that looks for its unfinished experiment."""

    finished: int  # distinct (configuration, repeat) with a successful run
    planned: int  # the most runs the plan can need
    failed: int  # failed runs
    complete: bool
    state: str


def completion(spec: ExperimentSpec, runs: list[Run]) -> Completion:
    planned = len(spec.configurations()) * spec.repeat
    stored = {(run.config_key, run.repeat) for run in runs if run.status == "ok"}
    finished = {(key, repeat) for key, repeat in stored if repeat < spec.repeat}
    settling = len(stored) - len(finished)  # past the plan: run/settle.py's
    ok = len(finished)
    failed = sum(run.status != "ok" for run in runs)
    complete = ok >= planned
    state = "complete" if complete else f"incomplete: {planned - ok} missing"
    if settling:
        state += f", and {settling} run{'s' if settling != 1 else ''} past it to settle verdicts"
    if spec.repeat_auto and not complete:
        # Adaptive: complete once every configuration is settled (or at the maximum).
        rounds = {repeat for _, repeat in finished}
        per_config = Counter(key for key, _ in finished)
        still_open = open_configurations(spec, runs, spec.precision)
        if all(per_config[key] >= spec.repeat for key in still_open) and (
            len(rounds) >= spec.min_repeat
        ):
            complete = True
            state = f"settled after {ok} of at most {planned} runs"
        else:  # its plan is the most it may need, not what it lacks
            cells = {key for key in still_open if per_config[key] < spec.repeat}
            state = (f"incomplete: {ok} of at most {planned} runs, "
                     f"{len(cells)} cell{'s' if len(cells) != 1 else ''} still open")  # fmt: skip
    if failed:
        state += f", {failed} failed"
    return Completion(ok, planned, failed, complete, state)


def summary(spec: ExperimentSpec, runs: list[Run], saved: int) -> str:
    """One line on what --repeat auto did: runs used of the most planned, per cell."""
    per_cell: dict[ConfigKey, int] = {}
    for run in runs:
        if run.status == "ok":
            per_cell[run.config_key] = per_cell.get(run.config_key, 0) + 1
    counts = sorted(per_cell.values()) or [0]
    planned = len(spec.configurations()) * spec.repeat
    return (
        f"adaptive repetition: {sum(counts)} runs of at most {planned} "
        f"({100 * sum(counts) / planned:.0f}%); per cell {counts[0]} to {counts[-1]} "
        f"(min {spec.min_repeat}, max {spec.repeat}, precision {spec.precision:g}); "
        f"{saved} runs saved this time"
    )


def unfinished(store: Store, spec: ExperimentSpec) -> Experiment | None:
    """The newest experiment of this very campaign (the same plan) that is not complete: what
    a rerun of the campaign resumes."""
    for experiment in reversed(store.experiments()):
        if experiment.name == spec.name and experiment.spec.to_dict() == spec.to_dict():
            runs = store.runs(experiment, with_results=False)
            return None if completion(spec, runs).complete else experiment
    return None
