"""A campaign's few more runs: once its planned repeats are in, each comparison the verdict
calls inconclusive, and says a few more runs per cell would settle, gets them (and so does its
baseline), as far as the campaign's time allows. `--repeat auto` settles cells as it goes;
this is the same idea for a campaign of a fixed number of repeats, judged by the very rule the
table's verdict prints ("about 5 runs per cell would settle it": stats.runs_to_settle).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from locklab.analysis import stats
from locklab.analysis.model import Analysis, Cell
from locklab.model.cells import ConfigKey
from locklab.model.spec import Configuration, ExperimentSpec
from locklab.store import Run

# "A few": a cell asking for at most this many times the planned runs per cell. Beyond it the
# campaign's plan was too small for the difference, and more of the same is the user's call.
FEW_RUNS_FACTOR = 2
# The extra runs may take at most this share of the host time the planned runs took.
TIME_SHARE = 0.5


@dataclass
class SettlePlan:
    wanted: dict[ConfigKey, int] = field(default_factory=dict)  # samples each should reach
    have: dict[ConfigKey, int] = field(default_factory=dict)  # samples each has
    settling: list[str] = field(default_factory=list)  # "k1 at nwriters=4: 3 to 5 runs"
    no_time: list[str] = field(default_factory=list)  # asked for a few, beyond the time left
    extra_runs: int = 0
    extra_s: float = 0.0  # their estimated host time
    budget_s: float = 0.0

    def todo(self, spec: ExperimentSpec) -> list[tuple[Configuration, int]]:
        """The extra (configuration, repeat) to run, in rounds, each a seeded shuffle as the
        planned ones: repeats past the plan's (the sweep skips any already stored)."""
        configs = {config.key: config for config in spec.configurations()}
        rng = random.Random(f"{spec.seed}-settle")
        order: list[tuple[Configuration, int]] = []
        for round_ in range(max((n - self.have[k] for k, n in self.wanted.items()), default=0)):
            due = [key for key, n in self.wanted.items() if n - self.have[key] > round_]
            rng.shuffle(due)
            order += [(configs[key], spec.repeat + round_) for key in due]
        return order


def plan(
    analysis: Analysis,
    spec: ExperimentSpec,
    runs: list[Run],
    at_once: int,
    describe: Callable[[ConfigKey], str],
) -> SettlePlan:
    """The cells to settle, cheapest first, while their host time stays within TIME_SHARE of
    what the planned runs took (`at_once` of them side by side, as the sweep runs them)."""
    min_effect = analysis.settings.min_effect
    most = FEW_RUNS_FACTOR * spec.repeat
    spent = sum(run.wall_s for run in runs)
    result = SettlePlan(budget_s=TIME_SHARE * spent / at_once)
    per_run_s: dict[ConfigKey, float] = {}
    asks: list[tuple[float, ConfigKey, ConfigKey, int]] = []
    for section in analysis.sections:
        for index, column in enumerate(analysis.columns):
            if column.compared_to is None:
                continue
            for row in section.rows:
                cell = section.cells.get((index, row))
                base = section.cells.get((column.compared_to, row))
                needed = _asks_for(cell, base, min_effect)
                if cell is None or base is None or needed is None or needed > most:
                    continue
                for one in (cell, base):
                    key = one.runs[0].config_key
                    result.have[key] = len(one.values)
                    per_run_s[key] = sum(run.wall_s for run in one.runs) / len(one.runs)
                key, base_key = cell.runs[0].config_key, base.runs[0].config_key
                cost = sum(max(0, needed - result.have[k]) * per_run_s[k] for k in (key, base_key))
                asks.append((cost, key, base_key, needed))
    for _, key, base_key, needed in sorted(asks, key=lambda ask: (ask[0], str(ask[1]))):
        trial = dict(result.wanted)
        for k in (key, base_key):
            trial[k] = max(trial.get(k, result.have[k]), needed)
        cost = sum((n - result.have[k]) * per_run_s[k] for k, n in trial.items()) / at_once
        line = f"{describe(key)}: {result.have[key]} to {needed} runs"
        if cost > result.budget_s:
            result.no_time.append(line)
            continue
        result.wanted, result.extra_s = trial, cost
        result.settling.append(line)
    result.extra_runs = sum(n - result.have[k] for k, n in result.wanted.items())
    return result


def _asks_for(cell: Cell | None, base: Cell | None, min_effect: float) -> int | None:
    """The runs per cell an inconclusive comparison asks for, or None: settled, failed, or a
    window too short for its long holds or rare events (longer runs settle that, not more)."""
    if cell is None or base is None or cell.comparison is None or not cell.runs or not base.runs:
        return None
    if cell.failed_runs or base.failed_runs:
        return None
    if cell.short_window_runs or base.short_window_runs or cell.rare_events or base.rare_events:
        return None
    if cell.comparison.judgement(min_effect) != stats.INCONCLUSIVE:
        return None
    return cell.comparison.runs_to_settle(min_effect)
