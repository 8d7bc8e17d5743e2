"""`locklab bisect`: the first commit of the user's kernel git tree at which a kernel: lock got
slower, faster, or starts failing its torture (run/bisect.py)."""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from locklab.cli.commit_options import (
    commit_run_options,
    commit_run_settings,
    count,
    runs_place,
)
from locklab.cli.common import Commands
from locklab.errors import LocklabError
from locklab.run.bisect import Bisector, BisectPlan, BisectResult, Step


def register(commands: Commands) -> None:
    bisect = commands.add_parser(
        "bisect", help="the first commit of a kernel git tree that made a kernel: lock slower, "
        "faster, or fail its torture",
    )  # fmt: skip
    bisect.add_argument("--good", required=True, metavar="REV", help="a revision that is fine")
    bisect.add_argument("--bad", required=True, metavar="REV",
                        help="a later revision that is slower, faster or fails")  # fmt: skip
    bisect.add_argument("--repeat", type=count, default=3,
                        help="pairs of runs a step starts with (default 3)")  # fmt: skip
    bisect.add_argument(
        "--max-repeat", type=count, default=12,
        help="pairs after which an unsettled step is skipped (default 12)",
    )  # fmt: skip
    commit_run_options(bisect)
    bisect.set_defaults(handler=cmd_bisect)


def cmd_bisect(args: argparse.Namespace) -> int:
    if args.max_repeat < args.repeat:
        raise LocklabError("--max-repeat must be at least --repeat")
    settings, engine, store = commit_run_settings(args)
    plan = BisectPlan(args.source, args.good, args.bad, settings, args.min_effect, args.repeat,
                      args.max_repeat)  # fmt: skip
    bisector = Bisector(plan, engine, store, lambda text: print(text, file=sys.stderr))
    result = bisector.run()
    where = runs_place(settings, args.sim)
    print("\n".join(result_lines(result, plan, bisector.journal.path, where)))
    return 0


def result_lines(result: BisectResult, plan: BisectPlan, journal: Path,
                 where: str) -> list[str]:  # fmt: skip
    what = {"failing": "fails its runs", "slower": "got slower", "faster": "got faster"}
    settings = plan.settings
    lines = [f"{settings.lock} at {settings.threads} {what[result.hunted]} between "
             f"{plan.good} and {plan.bad}" + ("" if result.hunted == "failing" else
                                              f" (at least {plan.min_effect_pct:g}%)")]  # fmt: skip
    if result.first_bad:
        commit, subject = result.first_bad
        lines.append(f"first bad commit: {commit} {subject}")
    else:
        lines.append("skipped steps leave several: the first bad commit is one of")
        lines += [f"  {commit} {subject}" for commit, subject in result.candidates]
    skipped = [step for step in result.steps if step.judgement == "skip"]
    if skipped:
        lines.append("skipped (inconclusive within --max-repeat, failed, or not built): "
                     + ", ".join(step.commit[:12] for step in skipped))  # fmt: skip
    last = [step for step in result.steps if step.commit == result.last_good[0]]
    first = [step for step in result.steps if result.first_bad
             and step.commit == result.first_bad[0]]  # fmt: skip
    shown = (last[-1:] + first[-1:]) or result.steps[-2:]
    lines.append(f"\nthe last two steps ({where}):")
    lines.append(f"  {'commit':<13}{'subject':<52}{'good kops/s':>12}{'this kops/s':>12}"
                 f"{'change':>9}  judged")  # fmt: skip
    lines += [_step_line(step) for step in shown]
    lines.append(f"{len(result.steps)} steps; every run is in {journal}")
    return lines


def _step_line(step: Step) -> str:
    def kops(values: list[float]) -> str:
        return f"{statistics.fmean(values) / 1e3:,.0f}" if values else "-"

    change = f"{(step.ratio - 1) * 100:+.1f}%" if step.ratio is not None else "failed"
    good, this = kops(step.good_side.figures), kops(step.side.figures)
    return (f"  {step.commit[:12]:<13}{step.subject[:50]:<52}{good:>12}{this:>12}{change:>9}"
            f"  {step.judgement}: {step.why[:80]}")  # fmt: skip
