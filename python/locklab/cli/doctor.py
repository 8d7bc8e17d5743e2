"""`locklab doctor`: is this machine fit to measure? Each check, what it means for results and
how to fix it. A report, not a gate: it exits 0 whatever it finds."""

from __future__ import annotations

import argparse
import json
import sys

from locklab.cli.common import Commands, chosen_engine, engine_option
from locklab.errors import LocklabError
from locklab.printable import printable
from locklab.run.engine import Engine
from locklab.run.machine_check import SAMPLE_S, WARN, Check, run_checks


def register(commands: Commands) -> None:
    doctor = commands.add_parser(
        "doctor", help="is this machine fit to measure? (frequency, SMT, VM, counters, noise)"
    )
    engine_option(doctor)
    doctor.add_argument("--json", action="store_true", help="the checks as JSON")
    doctor.add_argument(
        "--sample", type=float, default=SAMPLE_S, metavar="S",
        help=f"seconds to sample steal and other processes (default {SAMPLE_S:g})",
    )  # fmt: skip
    doctor.set_defaults(handler=cmd_doctor)


def _perf_reason(args: argparse.Namespace) -> str | None:
    try:
        return Engine(chosen_engine(args)).cache_miss_counter()
    except LocklabError as error:  # no engine: the check says so instead of failing
        return f"not checked: {error}"


def summary(checks: list[Check]) -> str:
    problems = [c.name for c in checks if c.status == WARN]
    unknown = [c.name for c in checks if c.status not in (WARN, "ok")]
    text = f"noisy machine: {', '.join(problems)}" if problems else "quiet machine"
    return text + (f" (unknown: {', '.join(unknown)})" if unknown else "")


def cmd_doctor(args: argparse.Namespace) -> int:
    if not 0 < args.sample <= 10:
        raise LocklabError(f"doctor: --sample {args.sample:g}: give 0 < S <= 10 seconds")
    checks = run_checks(lambda: _perf_reason(args), sample_s=args.sample)
    if args.json:
        document = {"checks": [c.to_dict() for c in checks], "summary": summary(checks)}
        print(json.dumps(document, indent=2))
        return 0
    out = sys.stdout
    width = max(len(c.name) for c in checks)
    for check in checks:
        out.write(f"{check.status:<7} {check.name:<{width}}  {printable(check.seen)}\n")
        out.write(f"{'':<{width + 9}}means: {check.means}\n")
        if check.fix:
            out.write(f"{'':<{width + 9}}fix:   {check.fix}\n")
    out.write(f"\n{summary(checks)}\n")
    return 0
