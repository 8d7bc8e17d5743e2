"""`locklab bisect`: the first commit between a good and a bad revision of the user's kernel git
tree at which a kernel: lock got slower (or faster), or starts failing its torture.

- The commits are those on the ancestry path from good to bad (`git rev-list --ancestry-path`),
  each compiled from its own revision (kernel/revisions.py: builds are shared between commits
  whose locking files are the same, so a commit that touches nothing the lock compiles costs a
  run, not a build).
- What is hunted is decided by the bad end: a bad revision whose runs fail (a violation, a
  deadlock, a sanitizer report) makes it a failure hunt; otherwise its throughput against the
  good one's must differ by at least --min-effect, and that direction is hunted.
- A step measures the commit against the good revision. Measured, in interleaved pairs of
  runs, judged by the verdict the tables use (Welch's test and Fieller's interval,
  analysis/stats.py): lower or higher by at least the minimum effect in the hunted direction is
  bad; equal within it, or significantly the other way, is good; still inconclusive after
  --max-repeat pairs, the step is skipped, as `git bisect skip` would, and said so. Simulated
  (--sim), a run is deterministic: one run a side, and its ratio decides.
- Booted (--kernel), each step builds the commit's whole kernel (incrementally: the commits of
  one tree share a work tree, kernel/build.py) and runs locktorture in it under QEMU, measured
  as above; a commit whose tree is the good or bad end's, file for file, is not run.
- Every run is kept in a journal in the store (bisect-KEY.json, run/commit_runs.py), so a
  bisect that is interrupted resumes where it was, and one run again prints its answer from
  the journal.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from locklab.analysis.stats import BELOW_MIN, EQUAL, HIGHER, LOWER
from locklab.errors import LocklabError
from locklab.kernel.from_source import TREE_PARTS
from locklab.kernel.revisions import (
    commit_of,
    commits,
    content_key,
    git_tree,
    is_ancestor,
    subject_of,
    whole_key,
)
from locklab.run.commit_runs import Journal, RunSettings, Side, commit_runner, compare_sides
from locklab.run.engine import Engine

GOOD, BAD, SKIP = "good", "bad", "skip"


@dataclass(frozen=True)
class BisectPlan:
    source: Path
    good: str
    bad: str
    settings: RunSettings  # the lock, its writers, the run's length, the build or machine
    min_effect_pct: float
    repeat: int  # pairs of runs a step starts with (measured)
    max_repeat: int  # pairs after which an inconclusive step is skipped


@dataclass
class Step:
    commit: str
    subject: str
    good_side: Side
    side: Side
    judgement: str  # GOOD, BAD or SKIP
    why: str

    @property
    def ratio(self) -> float | None:
        if not self.side.figures or not self.good_side.figures:
            return None
        return statistics.fmean(self.side.figures) / statistics.fmean(self.good_side.figures)


@dataclass
class BisectResult:
    hunted: str  # "slower", "faster" or "failing"
    first_bad: tuple[str, str] | None  # commit, subject
    candidates: list[tuple[str, str]]  # when skipped steps leave several
    steps: list[Step]
    last_good: tuple[str, str]


def check_ends(top: Path, good: str, bad: str) -> None:
    if good == bad:
        raise LocklabError("bisect: --good and --bad are the same commit")
    if not is_ancestor(top, good, bad):
        raise LocklabError("bisect: --good is not an ancestor of --bad (the wrong way round, "
                           "or on another branch)")  # fmt: skip


Progress = Callable[[str], None]


class Bisector:
    def __init__(self, plan: BisectPlan, engine: Engine, store: Path,
                 progress: Progress) -> None:  # fmt: skip
        self.plan = plan
        self.progress = progress
        self.top = git_tree(plan.source)
        settings = plan.settings
        self.journal = Journal(store, "bisect", [self.top, plan.good, plan.bad], settings)
        self.runner = commit_runner(self.top, settings, engine)

    def measure(self, step: int, commit: str, pairs: int) -> tuple[Side, Side]:
        """This step's runs of good and of `commit`, interleaved, up to `pairs` pairs."""
        good_key, key = f"{step}:good", f"{step}:{commit}"
        good, side = self.journal.side(good_key), self.journal.side(key)
        while len(side.figures) < pairs and side.failure is None and good.failure is None:
            self.runner.run_once(self.good, good)
            self.runner.run_once(commit, side)
            self.journal.keep(good_key, good)
            self.journal.keep(key, side)
        return good, side

    def judge(self, good: Side, side: Side, hunted: str) -> tuple[str, str]:
        if good.failure:
            raise LocklabError(f"bisect: the good revision failed its run: {good.failure}")
        if side.untestable:
            return SKIP, side.failure or "it cannot be tried"
        if hunted == "failing":
            return (BAD, side.failure) if side.failure else (GOOD, "its runs pass")
        if side.failure:
            return SKIP, f"its run failed ({side.failure})"
        exact = bool(self.plan.settings.sim_machine)
        change, judgement = compare_sides(good, side, self.plan.min_effect_pct, exact)
        text = f"{change:+.1f}% " + ("(simulated, exact)" if exact else
                                     f"over {len(side.figures)} pairs")  # fmt: skip
        if judgement == (LOWER if hunted == "slower" else HIGHER):
            return BAD, text
        if judgement in (EQUAL, BELOW_MIN, HIGHER if hunted == "slower" else LOWER):
            return GOOD, text
        return "", text  # not settled yet

    def settle(self, step: int, commit: str, hunted: str) -> tuple[Side, Side, str, str]:
        pairs = 1 if self.plan.settings.sim_machine else self.plan.repeat
        while True:
            good, side = self.measure(step, commit, pairs)
            judgement, why = self.judge(good, side, hunted)
            if judgement or pairs >= self.plan.max_repeat or self.plan.settings.sim_machine:
                return good, side, judgement or SKIP, why + ("" if judgement else ", inconclusive")
            pairs = min(self.plan.max_repeat, pairs + self.plan.repeat)

    def run(self) -> BisectResult:
        plan, top = self.plan, self.top
        self.good = commit_of(top, plan.good, f"--good {plan.good}")
        bad = commit_of(top, plan.bad, f"--bad {plan.bad}")
        check_ends(top, self.good, bad)
        path = commits(top, "--ancestry-path", f"{self.good}..{bad}")
        if not path or path[-1][0] != bad:
            raise LocklabError("bisect: no commits between --good and --bad")
        self.progress(f"bisect: {len(path)} commits from {plan.good} to {plan.bad}, "
                      f"{plan.settings.lock} at {plan.settings.threads}")  # fmt: skip
        steps: list[Step] = []
        good_side, bad_side, hunted, why = self._hunted(bad)
        steps.append(Step(bad, subject_of(top, bad), good_side, bad_side, BAD, why))
        self.end_keys = {GOOD: self._key(self.good), BAD: self._key(bad)}
        low, high = -1, len(path) - 1  # path[low] good (-1: the good end), path[high] bad
        skipped: set[int] = set()
        while high - low > 1:
            middle = self._middle(low, high, skipped)
            if middle is None:
                break
            commit, subject = path[middle]
            same = self._same_code(commit)
            if same:  # nothing compiled differs: the same code, so the same answer, unmeasured
                good, side, judgement, why = Side(), Side(), *same
            else:
                good, side, judgement, why = self.settle(len(steps), commit, hunted)
            steps.append(Step(commit, subject, good, side, judgement, why))
            self.progress(f"bisect: step {len(steps)}: {commit[:12]} {subject[:60]}: "
                          f"{judgement} ({why})")  # fmt: skip
            if judgement == BAD:
                high = middle
            elif judgement == GOOD:
                low = middle
            else:
                skipped.add(middle)
        last_good = path[low] if low >= 0 else (self.good, subject_of(top, self.good))
        if high - low == 1:
            return BisectResult(hunted, path[high], [], steps, last_good)
        return BisectResult(hunted, None, path[low + 1 : high + 1], steps, last_good)

    def _hunted(self, bad: str) -> tuple[Side, Side, str, str]:
        """What the bad end shows against the good one: failing, slower or faster."""
        good, side = self.measure(0, bad, 1 if self.plan.settings.sim_machine else self.plan.repeat)
        if good.failure:
            raise LocklabError(f"bisect: the good revision {self.plan.good} fails its runs: "
                               f"{good.failure}")  # fmt: skip
        if side.untestable:
            raise LocklabError(f"bisect: the bad revision {self.plan.bad}: {side.failure}")
        if side.failure:
            return good, side, "failing", side.failure
        for hunted in ("slower", "faster"):
            good, side, judgement, why = self.settle(0, bad, hunted)
            if judgement == BAD:
                return good, side, hunted, why
        raise LocklabError(f"bisect: {self.plan.bad} is neither slower nor faster than "
                           f"{self.plan.good} by {self.plan.min_effect_pct:g}% ({why}), and "
                           "its runs pass: nothing to bisect")  # fmt: skip

    def _key(self, commit: str) -> str:
        """What decides a run: the files the lock compiles, or for a booted kernel its tree."""
        if self.plan.settings.boot is not None:
            return whole_key(self.top, commit)
        return content_key(self.top, commit, TREE_PARTS)

    def _same_code(self, commit: str) -> tuple[str, str] | None:
        """GOOD or BAD, with why, for a commit whose compiled files are the good or the bad
        end's, byte for byte (their git object ids): the same plugin would run."""
        key = self._key(commit)
        for judgement, end in ((GOOD, self.plan.good), (BAD, self.plan.bad)):
            if key == self.end_keys[judgement]:
                what = "tree" if self.plan.settings.boot else "compiled files"
                return judgement, f"the same {what} as {end}"
        return None

    @staticmethod
    def _middle(low: int, high: int, skipped: set[int]) -> int | None:
        """The untried commit nearest the middle of (low, high), or None when all are skipped."""
        middle = (low + high) // 2
        for offset in range(high - low):
            for candidate in (middle - offset, middle + offset):
                if low < candidate < high and candidate not in skipped:
                    return candidate
        return None
