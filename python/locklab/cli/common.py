"""What every command shares: the parser (one line per usage error, an option given twice
refused), the store, engine and statistics options, and their checks."""

from __future__ import annotations

import argparse
import math
import os
import socket
import sys
from pathlib import Path
from typing import Any

from locklab.analysis.cells import Settings
from locklab.analysis.metrics import METRICS
from locklab.analysis.stats import TESTS
from locklab.errors import LocklabError
from locklab.kernel.build import ROOT
from locklab.kernel.from_source import (
    BUILDS,
    SIM_BUILD,
    TREE_PARTS,
    build_source_locks,
    is_source_lock,
)
from locklab.kernel.revisions import git_tree, range_revisions
from locklab.model.machine_profile import (
    DEFAULT_SCHED,
    SCHED_RULES,
    MachineProfile,
    find_profile,
    flat_cpus,
    with_sched,
)
from locklab.model.spec import ExperimentSpec, default, run_times
from locklab.model.targeting import SourceVariant
from locklab.model.values import is_cpu_list, parse_int_list
from locklab.run.engine import Engine, find_engine

DEFAULT_STORE = "locklab-results"
EXIT_RUN_FAILED = 1
EXIT_INTERRUPTED = 130
EXIT_INTERNAL = 70  # a bug: said in one line, with how to see where
Commands = Any  # argparse's subparsers action, whose type argparse keeps private


class _StoreOnce(argparse.Action):
    """A single-valued option given twice is an error, not "the last one wins": `--lock tas
    --lock mcs` would otherwise silently run mcs alone."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        seen: set[str] = namespace.__dict__.setdefault("_given_once", set())
        if self.dest in seen:
            parser.error(f"{option_string} is given twice (give it once; lists take commas)")
        seen.add(self.dest)
        setattr(namespace, self.dest, values)


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (LocklabError), not usage text and a message,
    and an option that takes one value refuses a second."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # No abbreviations: `--host` must not pass for `--hosts`, nor `--sto` for `--store`
        # (--hosts sends a command line on to each host without this machine's options).
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self.register("action", None, _StoreOnce)
        self.register("action", "store", _StoreOnce)

    def error(self, message: str) -> None:  # type: ignore[override]
        command = self.prog.removeprefix("locklab").strip()  # "" for the top-level parser
        raise LocklabError(f"{command}: {message}" if command else message)


def repeat_count(text: str) -> int | str:
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of runs or 'auto'") from None


def number(text: str) -> float:
    """A finite number: nan and inf are never a duration, a level or a threshold."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"'{text}' is not a finite number")
    return value


def store_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store",
        default=os.environ.get("LOCKLAB_STORE", DEFAULT_STORE),
        help="results store directory (default ./locklab-results, or $LOCKLAB_STORE)",
    )


def statistics_options(parser: argparse.ArgumentParser) -> None:
    """The store, and how the table judges: test, levels, metric (defaults: Settings')."""
    store_option(parser)
    group = parser.add_argument_group("statistics")
    group.add_argument(
        "--test",
        choices=TESTS,
        default=Settings.test,
        help="significance test per cell (default welch: Welch's t-test)",
    )
    group.add_argument(
        "--alpha",
        type=number,
        default=Settings.alpha,
        help=f"significance level (default {Settings.alpha})",
    )
    group.add_argument(
        "--noise-cv",
        type=number,
        default=Settings.noise_cv,
        help=f"flag cells whose CV exceeds this (default {Settings.noise_cv})",
    )
    group.add_argument(
        "--drift",
        type=number,
        default=Settings.drift,
        help="flag runs whose throughput moves by more than this fraction over "
        f"the measured window (default {Settings.drift})",
    )
    group.add_argument(
        "--min-effect",
        type=number,
        default=Settings.min_effect,
        metavar="PCT",
        help="the smallest rel %% called faster or slower, and the margin of 'equal within "
        f"+-PCT%%' (default {Settings.min_effect:g}, LKP's change-detection rule)",
    )
    group.add_argument(
        "--correction",
        choices=("holm", "none"),
        default=Settings.correction,
        help="multiple comparisons across one lock's cells (default holm)",
    )
    group.add_argument(
        "--metric",
        choices=sorted(METRICS),
        default=Settings.metric,
        help="what the table shows (default throughput, kops/s)",
    )
    group.add_argument("--plain", action="store_true", help="print the table without color")
    group.add_argument(
        "--wide",
        action="store_true",
        help="each row of the table on one line, however wide (default: blocks of locks "
        "within the terminal's width, or $COLUMNS)",
    )
    group.add_argument("--ci", action="store_true",
                       help="add each mean's 95%% confidence interval (ci95)")  # fmt: skip


def engine_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--engine", help="path of locklab-bench (default: $LOCKLAB_ENGINE, the virtualenv, PATH)"
    )
    parser.add_argument(
        "--build", choices=BUILDS, default=None,
        help="the engine's build: opt (measured), tsan (ThreadSanitizer) or asan "
        "(AddressSanitizer+UBSan); kernel: locks are compiled in the same build",
    )  # fmt: skip


def chosen_engine(args: argparse.Namespace) -> Path:
    """--engine, else the engine of --build (build/BUILD/locklab-bench), else the default."""
    if args.engine or not args.build:
        return find_engine(args.engine)
    path = ROOT / "build" / args.build / "locklab-bench"
    if not path.is_file():
        raise LocklabError(f"--build {args.build}: {path} is missing (run 'make build-all')")
    return path


def settings(args: argparse.Namespace) -> Settings:
    if not 0 < args.alpha < 1:
        raise LocklabError(f"--alpha must be between 0 and 1 (got {args.alpha})")
    if args.noise_cv <= 0 or args.drift <= 0:
        raise LocklabError("--noise-cv and --drift must be above 0")
    if not 0 <= args.min_effect < 100:
        raise LocklabError(f"--min-effect must be from 0 to 100 (got {args.min_effect:g})")
    return Settings(
        args.test, args.alpha, args.noise_cv, args.drift, args.ci, args.metric, args.correction,
        args.min_effect,
    )  # fmt: skip


def oversubscribe_option(parser: argparse._ActionsContainer) -> None:
    parser.add_argument(
        "--oversubscribe", action="store_true",
        help="also run the points with more threads than this machine's CPUs (a campaign "
        "skips them unless asked; the table labels them oversubscribed)",
    )  # fmt: skip


def fit_to_machine(spec: ExperimentSpec, oversubscribe: bool) -> None:
    """A campaign's engine sweep without its oversubscribed points, unless asked for them:
    more threads than CPUs measure the scheduler (a preempted holder or next waiter), and a
    first look at a lock should not read that as the lock's collapse. Says what it skipped."""
    if spec.sim:
        fit_to_simulated(spec)
    if oversubscribe or spec.source != "locklab-bench":
        return
    if spec.sim:
        cpus, where = flat_cpus(spec.sim_machine), f"on the simulated {spec.sim}"
    else:
        cpus, where = spec.usable_cpus(len(os.sched_getaffinity(0))), "here"
    dropped = spec.fit_to_cpus(cpus)
    if dropped:
        print(f"locklab: skipped nwriters={','.join(map(str, dropped))}: more threads than the "
              f"{cpus} CPUs {where} (--oversubscribe runs them, labelled oversubscribed)",
              file=sys.stderr)  # fmt: skip


def sim_option(parser: argparse._ActionsContainer) -> None:
    parser.add_argument(
        "--sim", metavar="MACHINE",
        help="run in the simulator on this machine profile ('locklab machines' lists them; or "
        "a profile file): the same compiled locks on N virtual CPUs, in virtual time",
    )  # fmt: skip
    sched_option(parser)


def sched_option(parser: argparse._ActionsContainer) -> None:
    parser.add_argument(
        "--sched", choices=SCHED_RULES,
        help="with --sim: whose kernel's rules place unpinned threads (default: the profile's "
        f"kernel, else {DEFAULT_SCHED}; docs/scheduler.md)",
    )  # fmt: skip


def simulated_machine(args: argparse.Namespace) -> MachineProfile | None:
    """--sim's profile. Plugins given as C source and kernel: locks are compiled for the
    simulator; a .so built outside its instrumentation is refused by the simulator itself when
    the spec is checked (locklab-sim's plugin loader)."""
    if not args.sim:
        if getattr(args, "sched", None):
            raise LocklabError("--sched: the simulator's rules; give --sim MACHINE too")
        return None
    return with_sched(find_profile(args.sim), getattr(args, "sched", None))


def run_settings(args: argparse.Namespace, machine: MachineProfile | None) -> dict[str, Any]:
    """`run`'s duration, warm-up, series interval and pinning (virtual with --sim), and the
    simulated machine's fields of the spec."""
    duration, warmup, pin = run_times(machine is not None, ExperimentSpec, args.duration,
                                      args.warmup, args.pin)  # fmt: skip
    chosen = {"duration_s": duration, "warmup_s": warmup, "pin": pin, "interval_s": args.interval}
    if machine is None:
        return chosen
    return {**chosen, "sim": args.sim, "sim_machine": machine.flat_text()}


def fit_to_simulated(spec: ExperimentSpec) -> None:
    """A pinned CPU the profile does not have is one line (checked here, before anything is
    stored, not by the simulator, whose line would describe this host). More threads than
    CPUs share them, as the kernel's scheduler shares them (docs/scheduler.md)."""
    cpus = flat_cpus(spec.sim_machine)
    if is_cpu_list(spec.pin):
        missing = [cpu for cpu in parse_int_list("pin", spec.pin) if cpu >= cpus]
        if missing:
            raise LocklabError(
                f"pin {spec.pin}: CPU {missing[0]} is not on the simulated {spec.sim}, whose "
                f"CPUs are 0-{cpus - 1}"
            )


def host() -> str:
    return socket.gethostname()


def patch_option(parser: argparse._ActionsContainer, help_text: str) -> None:
    """--patch LABEL=FILE[,FILE...], repeatable: one kernel (or kernel: lock) per label."""
    parser.add_argument(
        "--patch", action="append", default=[], metavar="LABEL=FILE[,FILE...]", help=help_text
    )


def rev_option(parser: argparse._ActionsContainer, help_text: str) -> None:
    """--rev LABEL=REV, repeatable: one variant (or kernel) per label, from a git revision."""
    parser.add_argument("--rev", action="append", default=[], metavar="LABEL=REV", help=help_text)


def program_figure_options(
    parser: argparse._ActionsContainer, prefix: str = "", timeout_note: str = ""
) -> None:
    """How a program's run is read and bounded (locklab exec, locklab kernel --exec):
    --metric-regex or --work, and --timeout. `prefix` starts each help text (the option it
    goes with); `timeout_note` ends --timeout's."""
    how = parser.add_mutually_exclusive_group()
    how.add_argument(
        "--metric-regex",
        metavar="RE",
        help=f"{prefix}throughput = the number the last match's first group captures (a rate)",
    )
    how.add_argument(
        "--work",
        default=default(ExperimentSpec, "program_work"),
        help=f"{prefix}throughput = this much work (a product like '{{threads}}*400000') over "
        "the program's wall time (the default: runs per second)",
    )
    timeout = default(ExperimentSpec, "program_timeout_s")
    parser.add_argument(
        "--timeout",
        type=number,
        default=timeout,
        help=f"{prefix}seconds a run may take before it is killed (default {timeout})"
        + timeout_note,
    )


def source_options(parser: argparse._ActionsContainer) -> None:
    patch_option(
        parser,
        "kernel: locks: compile them from the tree with these patches, one variant per "
        "label (a label alone: the stock tree), as 'locklab kernel --patch' takes them",
    )
    parser.add_argument(
        "--source", type=Path, help="kernel: locks: the kernel tree (default 6.1's)"
    )
    rev_option(
        parser,
        "kernel: locks: one variant compiled from this revision (tag, branch, commit) of "
        "the git tree --source, read with git, the checkout untouched; with --patch LABEL=... "
        "of the same label, the patches go on top",
    )
    parser.add_argument(
        "--revs", metavar="A..B",
        help="kernel: locks: one variant per commit of this range of --source that touches the "
        "locking files, after A itself (labelled A, the others by short commit), as the "
        "columns of the table",
    )  # fmt: skip


def source_plugins(
    args: argparse.Namespace,
    engine: Engine,
    machine: MachineProfile | None = None,
    plugins: tuple[str, ...] = (),
) -> dict[str, list[SourceVariant]]:
    """The kernel: locks of --lock, compiled from the tree (cached) in the engine's build, or
    the simulator's with --sim; not one that a --plugin among `plugins` (built .so files)
    brings already built, as a replay command gives it."""
    flat = machine.flat_text() if machine else ""
    built = {name for plugin in plugins for name in engine.catalogue((plugin,), flat)}
    names = [name.strip() for name in (args.lock or "").split(",")
             if is_source_lock(name.strip()) and name.strip() not in built]  # fmt: skip
    revisions = list(getattr(args, "rev", []))
    revision_range = getattr(args, "revs", None)
    if not names:
        if args.patch or args.source or revisions or revision_range:
            raise LocklabError(
                "--patch, --rev, --revs and --source are for kernel: locks (kernel:rtmutex, ...)"
            )
        return {}
    if revision_range:
        commits = range_revisions(git_tree(args.source), revision_range, TREE_PARTS)
        revisions += [f"{label}={commit}" for label, commit in commits]
    build = SIM_BUILD if machine else args.build or engine.build()
    compiled = build_source_locks(names, args.patch, build, engine.path, args.source, flat,
                                  tuple(revisions))  # fmt: skip
    return {
        name: [SourceVariant(lock.label, str(lock.plugin), lock.patches, lock.revision)
               for lock in locks]
        for name, locks in compiled.items()
    }  # fmt: skip
