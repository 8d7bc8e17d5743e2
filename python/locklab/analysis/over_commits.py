"""A table whose columns are commits of one lock (`--revs A..B`, a campaign's `revs`, or three
or more `--rev`s), read as a history: each commit judged against the one before it (not only
against the baseline, as the table judges it), by the rule `locklab history` uses
(stats.judge_change), so that change points stand out in the report."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from locklab.analysis.model import Analysis, Section
from locklab.analysis.stats import judge_change
from locklab.model.spec import ExperimentSpec, Variant

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


def commit_series(spec: ExperimentSpec, analysis: Analysis,
                  section: Section) -> list[tuple[str, list[CommitStep]]]:  # fmt: skip
    """The section's histories: per group of commit columns (a campaign variant's `LABEL@...`
    columns, or the `--rev`/`--revs` columns, of one lock), its name and its steps, in the
    order the experiment lists them (the range's order; the table may put its baseline
    first). A group needs MIN_COMMITS distinct commits."""
    index_of = {column.header: index for index, column in enumerate(analysis.columns)}
    groups: dict[tuple[str, str], list[tuple[int, Variant]]] = {}
    for variant in spec.variants:
        if variant.revision and variant.label in index_of:
            name = variant.label.split("@")[0] if "@" in variant.label else ""
            groups.setdefault((variant.lock, name), []).append((index_of[variant.label], variant))
    return [(name or lock, _steps(spec, analysis, section, members))
            for (lock, name), members in groups.items()
            if len({variant.revision.split(" ")[0]
                    for _, variant in members}) >= MIN_COMMITS]  # fmt: skip


def _steps(spec: ExperimentSpec, analysis: Analysis, section: Section,
           members: list[tuple[int, Variant]]) -> list[CommitStep]:  # fmt: skip
    exact = bool(spec.sim)  # one deterministic run a side: the change itself decides
    before: dict[int, list[float]] = {}  # by row: the last commit's values that did not fail
    steps: list[CommitStep] = []
    for index, variant in members:
        commit, _, subject = variant.revision.partition(" ")
        means: dict[int, float | None] = {}
        changes: dict[int, tuple[float | None, str]] = {}
        for row in section.rows:
            cell = section.cells.get((index, row))
            values = cell.values if cell is not None else []
            means[row] = statistics.fmean(values) if values else None
            if steps and not values:
                changes[row] = (None, "not run" if cell is None else "failed")
            elif steps and row in before:
                change, judgement = judge_change(before[row], values,
                                                 analysis.settings.min_effect, exact)  # fmt: skip
                changes[row] = (None if math.isnan(change) else change, judgement)
            if values:
                before[row] = values
        steps.append(CommitStep(variant.label, commit, subject, means, changes))
    return steps
