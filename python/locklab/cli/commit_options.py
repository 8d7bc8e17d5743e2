"""What `locklab bisect` and `locklab history` share: the options that say which kernel: lock
of which git tree is run, how, and where the runs are kept, and the settings they make."""

from __future__ import annotations

import argparse
from pathlib import Path

from locklab.analysis.stats import DEFAULT_MIN_EFFECT_PCT
from locklab.cli.common import (
    chosen_engine,
    engine_option,
    number,
    sim_option,
    simulated_machine,
    store_option,
)
from locklab.errors import LocklabError
from locklab.kernel import qemu
from locklab.kernel.arch import resolve
from locklab.kernel.from_source import SIM_BUILD, TORTURE_TYPE, check_name
from locklab.kernel.params import READ_SIDE
from locklab.kernel.sweep import LocktortureSweep
from locklab.model.machine_profile import flat_cpus
from locklab.model.values import validate_axis
from locklab.run.commit_runs import BootSettings, RunSettings
from locklab.run.engine import Engine

DURATION_S, SIM_DURATION_S = 0.5, 0.002
# --kernel: whole kernels booted with locktorture, as `locklab kernel` runs them.
BOOTED = BootSettings(cpus=LocktortureSweep.cpus, accel=LocktortureSweep.accel)
BOOTED_DURATION_S = LocktortureSweep.duration_s
BOOTED_BUILD = "booted"  # what the journal records in place of an engine build


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
                        f"{DURATION_S:g}; with --sim, virtual, {SIM_DURATION_S:g}; with "
                        f"--kernel, locktorture's, {BOOTED_DURATION_S:g})")  # fmt: skip
    parser.add_argument("--warmup", type=number, help="seconds run and dropped first (default: "
                        "a fifth of --duration)")  # fmt: skip
    sim_option(parser)
    parser.add_argument(
        "--kernel", action="store_true",
        help="boot each commit's whole kernel in QEMU and run locktorture there (built "
        "incrementally, minutes per commit), instead of compiling the lock into the engine",
    )  # fmt: skip
    parser.add_argument("--cpus", type=count, default=BOOTED.cpus,
                        help=f"--kernel: the guest's CPUs (default {BOOTED.cpus})")  # fmt: skip
    parser.add_argument("--accel", choices=("auto", "kvm", "tcg"), default=BOOTED.accel,
                        help=f"--kernel: QEMU's accelerator (default {BOOTED.accel})")  # fmt: skip
    store_option(parser)
    engine_option(parser)


def commit_run_settings(args: argparse.Namespace) -> tuple[RunSettings, Engine, Path]:
    """The runs' settings, the engine, and the store folder (made), from the options above;
    what cannot run is one line."""
    check_name(args.lock)
    validate_axis("nreaders", [args.nreaders])
    machine = simulated_machine(args)
    threads = args.nwriters + args.nreaders
    if machine is not None and threads > flat_cpus(machine.flat_text()):
        raise LocklabError(f"--sim {args.sim}: {threads} threads need more than its "
                           f"{flat_cpus(machine.flat_text())} CPUs")  # fmt: skip
    if machine is not None and args.build:
        raise LocklabError("--build is for measured runs: the simulator has its own build")
    boot = _boot_settings(args, machine is not None)
    default = BOOTED_DURATION_S if boot else SIM_DURATION_S if machine else DURATION_S
    duration = args.duration or default
    if duration <= 0:
        raise LocklabError("--duration must be above 0")
    if boot and duration < (boot.warmup_reports + 2) * boot.stat_interval_s:
        raise LocklabError(f"--kernel: --duration {duration:g} s leaves fewer than two of "
                           f"locktorture's reports after the first")  # fmt: skip
    warmup = args.warmup if args.warmup is not None else duration / 5
    engine = Engine(chosen_engine(args))
    build = BOOTED_BUILD if boot else SIM_BUILD if machine else engine.build()
    settings = RunSettings(args.lock, args.nwriters, duration, 0.0 if boot else warmup, build,
                           machine.flat_text() if machine else "", args.nreaders,
                           boot)  # fmt: skip
    store = Path(args.store)
    store.mkdir(parents=True, exist_ok=True)
    return settings, engine, store


def _boot_settings(args: argparse.Namespace, simulated: bool) -> BootSettings | None:
    """--kernel's settings, or None; what does not go with it is one line."""
    if not args.kernel:
        for option, given in (("--cpus", args.cpus != BOOTED.cpus),
                              ("--accel", args.accel != BOOTED.accel)):  # fmt: skip
            if given:
                raise LocklabError(f"{option}: only with --kernel (booted kernels)")
        return None
    for option, given in (("--sim", simulated), ("--build", args.build),
                          ("--warmup", args.warmup is not None)):  # fmt: skip
        if given:
            why = "the first locktorture report is dropped" if option == "--warmup" else (
                "a booted kernel is neither simulated nor an engine build")  # fmt: skip
            raise LocklabError(f"--kernel: not with {option} ({why})")
    if args.cpus > qemu.MAX_GUEST_CPUS:
        raise LocklabError(f"--cpus must be from 1 to {qemu.MAX_GUEST_CPUS} (got {args.cpus})")
    torture_type = TORTURE_TYPE[check_name(args.lock)]
    if args.nreaders and torture_type not in READ_SIDE:
        raise LocklabError(f"--nreaders: locktorture's {torture_type} has no readers")
    target = resolve(None)
    target.require_qemu()
    unusable = qemu.kvm_unusable(target) if args.accel == "kvm" else None
    if unusable:  # before minutes of building
        raise LocklabError(f"--accel kvm: {unusable}")
    return BootSettings(args.cpus, args.accel)


def runs_place(settings: RunSettings, sim: str | None) -> str:
    """Where the runs' figures come from, as a title says it."""
    if settings.sim_machine:
        return f"simulated on {sim}"
    if settings.boot is not None:
        what = "acquisitions" if settings.nreaders else "writes"
        return f"booted: each commit's whole kernel in QEMU, locktorture's {what} per second"
    return "measured here"
