"""`locklab bisect`: the first commit of the user's kernel git tree at which a kernel: lock got
slower, faster, or starts failing its torture (run/bisect.py)."""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from locklab.analysis.stats import DEFAULT_MIN_EFFECT_PCT
from locklab.cli.common import (
    Commands,
    chosen_engine,
    engine_option,
    number,
    sim_option,
    store_option,
)
from locklab.errors import LocklabError
from locklab.kernel.from_source import SIM_BUILD, check_name
from locklab.model.machine_profile import find_profile, flat_cpus
from locklab.run.bisect import Bisector, BisectPlan, BisectResult, Journal, Step
from locklab.run.engine import Engine

DURATION_S, SIM_DURATION_S = 0.5, 0.002


def count(text: str) -> int:
    """A whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"'{text}' is below 1")
    return value


def register(commands: Commands) -> None:
    bisect = commands.add_parser(
        "bisect", help="the first commit of a kernel git tree that made a kernel: lock slower, "
        "faster, or fail its torture",
    )  # fmt: skip
    bisect.add_argument("--source", type=Path, required=True, help="the kernel git tree")
    bisect.add_argument("--good", required=True, metavar="REV", help="a revision that is fine")
    bisect.add_argument("--bad", required=True, metavar="REV",
                        help="a later revision that is slower, faster or fails")  # fmt: skip
    bisect.add_argument("--lock", required=True, help="the kernel: lock (kernel:rtmutex, ...)")
    bisect.add_argument("--nwriters", type=count, default=2, help="writers (default 2)")
    bisect.add_argument(
        "--min-effect", type=number, default=DEFAULT_MIN_EFFECT_PCT, metavar="PCT",
        help=f"the smallest change that counts, in percent (default {DEFAULT_MIN_EFFECT_PCT:g})",
    )  # fmt: skip
    bisect.add_argument("--duration", type=number, help=f"seconds a run measures (default "
                        f"{DURATION_S:g}; with --sim, virtual, {SIM_DURATION_S:g})")  # fmt: skip
    bisect.add_argument("--warmup", type=number, help="seconds run and dropped first (default: "
                        "a fifth of --duration)")  # fmt: skip
    bisect.add_argument("--repeat", type=count, default=3,
                        help="pairs of runs a step starts with (default 3)")  # fmt: skip
    bisect.add_argument(
        "--max-repeat", type=count, default=12,
        help="pairs after which an unsettled step is skipped (default 12)",
    )  # fmt: skip
    sim_option(bisect)
    store_option(bisect)
    engine_option(bisect)
    bisect.set_defaults(handler=cmd_bisect)


def cmd_bisect(args: argparse.Namespace) -> int:
    check_name(args.lock)
    machine = find_profile(args.sim) if args.sim else None
    if machine is not None and args.nwriters > flat_cpus(machine.flat_text()):
        raise LocklabError(f"--sim {args.sim}: {args.nwriters} writers need more than its "
                           f"{flat_cpus(machine.flat_text())} CPUs")  # fmt: skip
    if machine is not None and args.build:
        raise LocklabError("--build is for measured runs: the simulator has its own build")
    duration = args.duration or (SIM_DURATION_S if machine else DURATION_S)
    if duration <= 0:
        raise LocklabError("--duration must be above 0")
    warmup = args.warmup if args.warmup is not None else duration / 5
    if args.max_repeat < args.repeat:
        raise LocklabError("--max-repeat must be at least --repeat")
    engine = Engine(chosen_engine(args))
    plan = BisectPlan(
        args.source, args.good, args.bad, args.lock, args.nwriters, args.min_effect, duration,
        warmup, args.repeat, args.max_repeat, SIM_BUILD if machine else engine.build(),
        machine.flat_text() if machine else "",
    )  # fmt: skip
    store = Path(args.store)
    store.mkdir(parents=True, exist_ok=True)
    journal = Journal(store, plan)
    result = Bisector(plan, engine, journal, lambda text: print(text, file=sys.stderr)).run()
    print("\n".join(result_lines(result, plan, journal.path)))
    return 0


def result_lines(result: BisectResult, plan: BisectPlan, journal: Path) -> list[str]:
    what = {"failing": "fails its runs", "slower": "got slower", "faster": "got faster"}
    where = f" on {plan.sim_machine.splitlines()[0] if plan.sim_machine else 'this machine'}"
    lines = [f"{plan.lock} at {plan.nwriters} writers {what[result.hunted]} between "
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
        lines.append("skipped (inconclusive within --max-repeat, or failed): "
                     + ", ".join(step.commit[:12] for step in skipped))  # fmt: skip
    last = [step for step in result.steps if step.commit == result.last_good[0]]
    first = [step for step in result.steps if result.first_bad
             and step.commit == result.first_bad[0]]  # fmt: skip
    shown = (last[-1:] + first[-1:]) or result.steps[-2:]
    lines.append(f"\nthe last two steps{'' if not plan.sim_machine else ' (simulated)'}"
                 f"{where if not plan.sim_machine else ''}:")  # fmt: skip
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
