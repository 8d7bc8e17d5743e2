"""`locklab calibrate`: the verdict's false-positive rate on this machine, measured (A/A)."""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path

from locklab import provenance
from locklab.analysis.calibration import analyse_pairs, calibrate, pair_variants, report_lines
from locklab.cli.common import (
    Commands,
    chosen_engine,
    engine_option,
    host,
    number,
    settings,
    statistics_options,
)
from locklab.cli.measure import execute
from locklab.errors import LocklabError
from locklab.model.spec import ExperimentSpec
from locklab.model.values import parse_int_list, validate_axis
from locklab.run.engine import Engine
from locklab.store import Store

# The defaults: 200 cells at least (fewer cannot tell 5% from 7%), short runs.
CELLS = 200
REPEAT = 5
DURATION_S = 0.1
WARMUP_S = 0.05


def register(commands: Commands) -> None:
    calibration = commands.add_parser(
        "calibrate",
        help="how often the verdict calls noise significant here: one lock against itself",
        description="Runs one lock as many pairs of identical variants, interleaved, judges each "
        "pair as a table judges a lock against its baseline, and reports the share of cells "
        "called significant, against alpha. Example: locklab calibrate --lock ticket",
    )
    statistics_options(calibration)
    engine_option(calibration)
    calibration.add_argument("--lock", default="ticket", help="the lock (default ticket)")
    calibration.add_argument(
        "--cells", type=int, default=CELLS, help=f"cells to judge (default {CELLS})"
    )
    calibration.add_argument(
        "--nwriters",
        help="points: writer counts, like 1,2 (default 1 up to the CPUs, at most 4 points)",
    )
    calibration.add_argument(
        "--repeat", type=int, default=REPEAT, help=f"runs per cell (default {REPEAT})"
    )
    calibration.add_argument(
        "--duration", type=number, default=DURATION_S, help=f"s per run (default {DURATION_S})"
    )
    calibration.add_argument(
        "--warmup", type=number, default=WARMUP_S, help=f"s of warm-up (default {WARMUP_S})"
    )
    calibration.set_defaults(handler=cmd_calibrate)


def _writers(text: str | None) -> list[int]:
    if text:
        values = parse_int_list("nwriters", text)
        validate_axis("nwriters", values)
        return values
    cpus = len(os.sched_getaffinity(0))
    return sorted({max(1, round(cpus * k / 4)) for k in range(1, 5)})


def cmd_calibrate(args: argparse.Namespace) -> int:
    chosen = settings(args)
    if not 1 <= args.cells <= 100_000:
        raise LocklabError(f"--cells must be from 1 to 100000 (got {args.cells})")
    if args.repeat < 2:
        raise LocklabError("--repeat must be at least 2: a cell needs two runs a side")
    writers = _writers(args.nwriters)
    pairs = math.ceil(args.cells / len(writers))
    engine = Engine(chosen_engine(args))
    spec = ExperimentSpec(
        name=f"calibrate-{args.lock}", variants=pair_variants(args.lock, pairs),
        sweep={"nwriters": writers}, repeat=args.repeat, duration_s=args.duration,
        warmup_s=args.warmup,
    )  # fmt: skip
    engine.check(spec)
    store = Store(Path(args.store))
    experiment = store.create_experiment(spec, host(), provenance.version(), provenance.commit())
    hint = f"locklab run --store {args.store} --resume {experiment.id}"
    status, _ = execute(args, chosen, engine, store, experiment, hint, print_table=False)
    runs = store.runs(experiment)
    found = calibrate(analyse_pairs(experiment, runs, chosen))
    print("\n".join(report_lines(spec, found, chosen)))
    return status
