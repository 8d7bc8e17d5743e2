"""`locklab tune`: the value of a lock's tunable with the best worst case across the axes."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from locklab.cli.common import (
    EXIT_INTERRUPTED,
    Commands,
    chosen_engine,
    engine_option,
    fit_to_simulated,
    host,
    number,
    sim_option,
    simulated_machine,
    store_option,
)
from locklab.errors import LocklabError
from locklab.model.spec import SIM_DURATION_S, SIM_PIN, SIM_WARMUP_S, default, run_times
from locklab.model.values import AXES, parse_int_list
from locklab.output import listing
from locklab.printable import file_stem, printable
from locklab.run.engine import Engine
from locklab.run.tune_runs import SearchRange, StoredTuning, tune, workload
from locklab.store import Store


def register(commands: Commands) -> None:
    tuning = commands.add_parser(
        "tune", help="find the value of a tunable with the best worst case across the axes"
    )
    tuning.add_argument("lock")
    tuning.add_argument("--param", required=True, help="the tunable to search")
    tuning.add_argument("--range", required=True, help="LO:HI or LO:HI:STEP")
    for axis in AXES:
        tuning.add_argument(f"--{axis.replace('_', '-')}", dest=axis, help=f"{axis} values")
    tuning.add_argument(
        "--workload",
        action="append",
        default=[],
        metavar="NAME:HOLD_NS:GAP_NS",
        help="a named (hold, gap) pair, like load:2000:2000 (repeatable)",
    )
    tuning.add_argument("--repeat", type=int, default=default(StoredTuning, "repeat"))
    tuning.add_argument(
        "--duration", type=number,
        help=f"measured seconds per run (default {default(StoredTuning, 'duration_s'):g}; "
        f"with --sim {SIM_DURATION_S:g} virtual seconds)",
    )  # fmt: skip
    tuning.add_argument(
        "--warmup", type=number,
        help=f"seconds discarded before measuring (default {default(StoredTuning, 'warmup_s'):g};"
        f" with --sim {SIM_WARMUP_S:g} virtual seconds)",
    )  # fmt: skip
    tuning.add_argument(
        "--pin", help=f"default {default(StoredTuning, 'pin')}; {SIM_PIN} with --sim"
    )
    sim_option(tuning)
    tuning.add_argument(
        "--grid",
        type=int,
        default=default(SearchRange, "grid"),
        help=f"coarse grid points (default {default(SearchRange, 'grid')})",
    )
    tuning.add_argument(
        "--rounds",
        type=int,
        default=default(SearchRange, "rounds"),
        help=f"refinement rounds (default {default(SearchRange, 'rounds')})",
    )
    tuning.add_argument("--output", "-o", type=Path, default=Path("tune.png"), help="the chart")
    store_option(tuning)
    engine_option(tuning)
    tuning.set_defaults(handler=cmd_tune)  # fmt: skip


def cmd_tune(args: argparse.Namespace) -> int:
    from locklab.output import plot

    engine = Engine(chosen_engine(args))
    search = SearchRange.plan(
        engine.catalogue(), args.lock, args.param, args.range, args.grid, args.rounds
    )
    sweep = {a: parse_int_list(a, getattr(args, a)) for a in AXES if getattr(args, a) is not None}
    workloads = [workload(text) for text in args.workload]
    output = _chart_path(args.output, f"tune-{file_stem(args.lock)}-{file_stem(args.param)}")
    machine = simulated_machine(args)
    duration, warmup, pin = run_times(machine is not None, StoredTuning, args.duration,
                                      args.warmup, args.pin)  # fmt: skip
    tuning = StoredTuning(
        engine, Store(Path(args.store)), host(), listing.stderr_console(), args.lock, args.param,
        sweep, workloads, args.repeat, duration, warmup, pin,
        sim=args.sim or "", sim_machine=machine.flat_text() if machine else "",
    )  # fmt: skip
    if machine:
        fit_to_simulated(tuning.spec([], "check"))
    try:
        result = tune(tuning, search)
    except KeyboardInterrupt:
        print(
            "locklab: interrupted: every finished run is kept; run the same command again to "
            "resume (it reuses what was measured)",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    spec = tuning.spec([result.value], "result")
    lines = listing.tune_lines(
        result, spec, args.lock, args.param, tuning.rounds_run, tuning.in_time(result.value)
    )
    print("\n".join(lines))
    plot.write_tune_figure(result, args.param, f"{args.lock} {args.param}", output)
    print(f"chart: {printable(str(output.resolve()))}")
    return 0


def _chart_path(path: Path, stem: str) -> Path:
    """Where a chart goes, checked before anything is measured: into a directory as STEM.png,
    else the file itself, whose suffix must name a format matplotlib writes."""
    from locklab.output import plot

    if path.is_dir():
        path = path / f"{stem}.png"
    kind = path.suffix.lstrip(".").lower()
    if kind not in plot.FORMATS:
        raise LocklabError(
            f"--output {path}: '{kind or 'no suffix'}' is not a chart format "
            f"({', '.join(sorted(plot.FORMATS))})"
        )
    if not path.parent.is_dir():
        raise LocklabError(f"--output {path}: {path.parent} is not a directory")
    if not os.access(path.parent, os.W_OK):
        raise LocklabError(f"--output {path}: cannot write in {path.parent}")
    return path
