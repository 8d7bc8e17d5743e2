"""What `locklab bisect` and `locklab history` share: the options that say which kernel: lock
of which git tree is run, how, and where the runs are kept, and the settings they make."""

from __future__ import annotations

import argparse
from pathlib import Path

from locklab.analysis.stats import DEFAULT_MIN_EFFECT_PCT
from locklab.cli.common import chosen_engine, engine_option, number, sim_option, store_option
from locklab.errors import LocklabError
from locklab.kernel.from_source import SIM_BUILD, check_name
from locklab.model.machine_profile import find_profile, flat_cpus
from locklab.model.values import validate_axis
from locklab.run.commit_runs import RunSettings
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


def commit_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--source", type=Path, required=True, help="the kernel git tree")
    parser.add_argument("--lock", required=True, help="the kernel: lock (kernel:rtmutex, ...)")
    parser.add_argument("--nwriters", type=count, default=2, help="writers (default 2)")
    parser.add_argument("--nreaders", type=int, default=0,
                        help="readers, for kernel:rwsem (default 0)")  # fmt: skip
    parser.add_argument(
        "--min-effect", type=number, default=DEFAULT_MIN_EFFECT_PCT, metavar="PCT",
        help=f"the smallest change that counts, in percent (default {DEFAULT_MIN_EFFECT_PCT:g})",
    )  # fmt: skip
    parser.add_argument("--duration", type=number, help=f"seconds a run measures (default "
                        f"{DURATION_S:g}; with --sim, virtual, {SIM_DURATION_S:g})")  # fmt: skip
    parser.add_argument("--warmup", type=number, help="seconds run and dropped first (default: "
                        "a fifth of --duration)")  # fmt: skip
    sim_option(parser)
    store_option(parser)
    engine_option(parser)


def commit_run_settings(args: argparse.Namespace) -> tuple[RunSettings, Engine, Path]:
    """The runs' settings, the engine, and the store folder (made), from the options above;
    what cannot run is one line."""
    check_name(args.lock)
    validate_axis("nreaders", [args.nreaders])
    machine = find_profile(args.sim) if args.sim else None
    threads = args.nwriters + args.nreaders
    if machine is not None and threads > flat_cpus(machine.flat_text()):
        raise LocklabError(f"--sim {args.sim}: {threads} threads need more than its "
                           f"{flat_cpus(machine.flat_text())} CPUs")  # fmt: skip
    if machine is not None and args.build:
        raise LocklabError("--build is for measured runs: the simulator has its own build")
    duration = args.duration or (SIM_DURATION_S if machine else DURATION_S)
    if duration <= 0:
        raise LocklabError("--duration must be above 0")
    warmup = args.warmup if args.warmup is not None else duration / 5
    engine = Engine(chosen_engine(args))
    settings = RunSettings(args.lock, args.nwriters, duration, warmup,
                           SIM_BUILD if machine else engine.build(),
                           machine.flat_text() if machine else "", args.nreaders)  # fmt: skip
    store = Path(args.store)
    store.mkdir(parents=True, exist_ok=True)
    return settings, engine, store
