"""A table whose columns are commits of one lock (`--revs A..B`, a campaign's `revs`, or three
or more `--rev`s), read as a history: each commit judged against the one before it (not only
against the baseline, as the table judges it), by the rule `locklab history` uses
(stats.judge_change), so that change points stand out in the report."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from locklab.analysis.model import Analysis, Section
from locklab.analysis.stats import judge_change
from locklab.model.spec import ExperimentSpec

MIN_COMMITS = 3  # fewer are a comparison, which the table already is


@dataclass(frozen=True)
class CommitStep:
    column: str  # the table's column
    commit: str
    subject: str
    means: dict[int, float | None]  # by row (writers): the metric's mean, None if all failed
    # Against the commit before, by row: the change in percent and its judgement ("failed"
    # when this commit's runs all failed; no entry for the first commit).
    changes: dict[int, tuple[float | None, str]]


def commit_steps(spec: ExperimentSpec, analysis: Analysis,
                 section: Section) -> list[CommitStep] | None:  # fmt: skip
    """The section's commit columns in the table's order, or None when it has too few, or
    columns of several locks."""
    variants = {variant.label: variant for variant in spec.variants}
    picked = [(index, column.header, variants[column.header])
              for index, column in enumerate(analysis.columns)
              if column.header in variants and variants[column.header].revision]  # fmt: skip
    if len(picked) < MIN_COMMITS or len({variant.lock for _, _, variant in picked}) > 1:
        return None
    exact = bool(spec.sim)  # one deterministic run a side: the change itself decides
    before: dict[int, list[float]] = {}  # by row: the last commit's values that did not fail
    steps: list[CommitStep] = []
    for index, header, variant in picked:
        commit, _, subject = variant.revision.partition(" ")
        means: dict[int, float | None] = {}
        changes: dict[int, tuple[float | None, str]] = {}
        for row in section.rows:
            cell = section.cells.get((index, row))
            values = cell.values if cell is not None else []
            means[row] = statistics.fmean(values) if values else None
            if steps and not values:
                changes[row] = (None, "failed")
            elif steps and row in before:
                changes[row] = judge_change(before[row], values, analysis.settings.min_effect,
                                            exact)  # fmt: skip
            if values:
                before[row] = values
        steps.append(CommitStep(header, commit, subject, means, changes))
    return steps
