"""`locklab history`: a kernel: lock's figure over a range of commits of the user's git tree,
one row per commit that touched the files the lock compiles (or the paths given), each judged
against the one before it by the tables' verdict, so change points stand out.

- The commits: the range's start, then `git rev-list --reverse A..B -- PATHS`, as the
  rcutorture scripts' kvm-series.sh takes a list of commits; builds are shared between
  commits whose locking files are the same.
- Measured, `--repeat` runs per commit, taken round-robin over the commits so that a drift of
  the machine is spread over all of them; simulated (`--sim`), one deterministic run each;
  booted (`--kernel`), each commit's whole kernel runs locktorture (run/commit_boots.py).
- Runs are kept per commit in a journal in the store (history-KEY.json): a range measured
  again, or widened, reuses what is there and runs only what is missing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from locklab.kernel.from_source import TREE_PARTS
from locklab.kernel.revisions import commits_in, git_tree
from locklab.run.commit_runs import Journal, RunSettings, Side, commit_runner, compare_sides
from locklab.run.engine import Engine


@dataclass(frozen=True)
class HistoryRow:
    commit: str
    subject: str
    side: Side
    change_pct: float | None  # against the row before
    judgement: str  # the verdict against the row before ("" for the first)


def history(
    source: Path, range_text: str, paths: tuple[str, ...], settings: RunSettings, repeat: int,
    min_effect_pct: float, engine: Engine, store: Path, progress: Callable[[str], None],
) -> list[HistoryRow]:  # fmt: skip
    top = git_tree(source)
    commits = commits_in(top, range_text, paths or TREE_PARTS)
    journal = Journal(store, "history", [top], settings)
    runner = commit_runner(top, settings, engine)
    wanted = 1 if settings.sim_machine else repeat
    sides = {commit: journal.side(commit) for commit, _ in commits}
    missing = sum(max(0, wanted - len(side.figures)) for side in sides.values()
                  if side.failure is None)  # fmt: skip
    kept = sum(len(side.figures) + (side.failure is not None) for side in sides.values())
    progress(f"history: {len(commits)} commits, {missing} runs to take ({kept} kept)")
    for round_number in range(wanted):  # round-robin: a drift is spread over every commit
        for commit, _ in commits:
            side = sides[commit]
            if side.failure is None and len(side.figures) <= round_number:
                runner.run_once(commit, side)
                journal.keep(commit, side)
    rows: list[HistoryRow] = []
    previous: Side | None = None
    for commit, subject in commits:
        side = sides[commit]
        change, judgement = _against(previous, side, min_effect_pct, bool(settings.sim_machine))
        rows.append(HistoryRow(commit, subject, side, change, judgement))
        previous = side if not side.failure else previous
    return rows


def _against(before: Side | None, side: Side, min_effect_pct: float,
             exact: bool) -> tuple[float | None, str]:  # fmt: skip
    if before is None:
        return None, ""
    if side.failure:
        return None, "failed"
    return compare_sides(before, side, min_effect_pct, exact)
