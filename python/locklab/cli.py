"""The ``locklab`` command.

Every problem the user can fix ends as one line, ``locklab: error: ...``, and exit status 2;
a sweep in which some lock failed its runs (violation, deadlock) exits 1 after printing the
table of what did finish; an interrupted sweep exits 130 and keeps every finished run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import socket
import sqlite3
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from rich.console import Console
from rich.table import Table

from locklab import __version__, adaptive, export, provenance, table
from locklab.analysis import (
    Analysis,
    Settings,
    analyse_comparison,
    analyse_experiment,
)
from locklab.campaign import load_campaign, locate_error
from locklab.engine import Engine, find_engine
from locklab.errors import LocklabError
from locklab.experiment import (
    AXES,
    ExperimentSpec,
    Variant,
    Workload,
    parse_int_list,
    parse_param,
    validate_axis,
    validate_seconds,
)
from locklab.metrics import METRICS
from locklab.printable import file_stem, printable
from locklab.runner import run_sweep
from locklab.stats import DEFAULT_ALPHA, DEFAULT_DRIFT, DEFAULT_NOISE_CV, TESTS
from locklab.store import Experiment, Store
from locklab.tune_runs import StoredTuning

DEFAULT_STORE = "locklab-results"
EXIT_RUN_FAILED = 1
EXIT_INTERRUPTED = 130


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
        super().__init__(*args, **kwargs)
        self.register("action", None, _StoreOnce)
        self.register("action", "store", _StoreOnce)

    def error(self, message: str) -> None:  # type: ignore[override]
        raise LocklabError(f"{self.prog.removeprefix('locklab ')}: {message}")


def _repeat(text: str) -> int | str:
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of runs or 'auto'") from None


def _number(text: str) -> float:
    """A finite number: nan and inf are never a duration, a level or a threshold."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"'{text}' is not a finite number")
    return value


def _common(parser: argparse.ArgumentParser, statistics: bool = False) -> None:
    parser.add_argument(
        "--store",
        default=os.environ.get("LOCKLAB_STORE", DEFAULT_STORE),
        help="results store directory (default ./locklab-results, or $LOCKLAB_STORE)",
    )
    if statistics:
        group = parser.add_argument_group("statistics")
        group.add_argument(
            "--test",
            choices=TESTS,
            default="welch",
            help="significance test per cell (default welch: Welch's t-test)",
        )
        group.add_argument(
            "--alpha",
            type=_number,
            default=DEFAULT_ALPHA,
            help=f"significance level (default {DEFAULT_ALPHA})",
        )
        group.add_argument(
            "--noise-cv",
            type=_number,
            default=DEFAULT_NOISE_CV,
            help=f"flag cells whose CV exceeds this (default {DEFAULT_NOISE_CV})",
        )
        group.add_argument(
            "--drift",
            type=_number,
            default=DEFAULT_DRIFT,
            help="flag runs whose throughput moves by more than this fraction over the "
            f"measured window (default {DEFAULT_DRIFT})",
        )
        group.add_argument(
            "--correction",
            choices=("holm", "none"),
            default="holm",
            help="multiple comparisons across one lock's cells (default holm)",
        )
        group.add_argument(
            "--metric",
            choices=sorted(METRICS),
            default="throughput",
            help="what the table shows (default throughput, kops/s)",
        )
        group.add_argument("--plain", action="store_true", help="print the table without color")
        group.add_argument(
            "--ci", action="store_true", help="add each mean's 95%% confidence interval (ci95)"
        )


def _engine_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--engine", help="path of locklab-bench (default: $LOCKLAB_ENGINE, the virtualenv, PATH)"
    )


def build_parser() -> Parser:
    parser = Parser(prog="locklab", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--version", action="version", version=f"locklab {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    listing = commands.add_parser("list", help="every lock, with family, summary and tunables")
    _engine_option(listing)
    listing.add_argument("--plugin", action="append", default=[], help="also list this plugin")
    listing.add_argument("--json", action="store_true", help="the engine's JSON catalogue")

    run = commands.add_parser("run", help="run a sweep and print its table")
    _common(run, statistics=True)
    _engine_option(run)
    what = run.add_argument_group("what to run")
    what.add_argument("--lock", help="locks to compare, comma-separated: tas,ticket,mcs")
    what.add_argument("--plugin", action="append", default=[], help="load a lock plugin (.so)")
    what.add_argument(
        "--param",
        action="append",
        default=[],
        help="NAME=VALUE for every lock with that tunable, or LOCK.NAME=VALUE (repeatable)",
    )
    what.add_argument("--baseline", help="the lock the others are compared with (default first)")
    what.add_argument("--name", help="experiment name (default: the locks)")
    sweep = run.add_argument_group("sweep axes: comma lists and ranges, like 1,2,4 or 1-4,8")
    for axis in AXES:
        sweep.add_argument(f"--{axis.replace('_', '-')}", dest=axis, help=f"{axis} values")
    how = run.add_argument_group("how")
    how.add_argument(
        "--repeat",
        type=_repeat,
        default=5,
        help="runs per cell (default 5), or auto: from --min-repeat to --max-repeat, stopping "
        "once the cell's verdict is settled",
    )
    how.add_argument("--min-repeat", type=int, default=2, help="with --repeat auto (default 2)")
    how.add_argument("--max-repeat", type=int, default=10, help="with --repeat auto (default 10)")
    how.add_argument(
        "--precision",
        type=_number,
        default=0.02,
        help="with --repeat auto: a cell is also settled when its 95%% CI is within this "
        "fraction of its mean, and so is its baseline's (default 0.02)",
    )
    how.add_argument(
        "--duration", type=_number, default=10.0, help="measured seconds per run (default 10)"
    )
    how.add_argument(
        "--warmup",
        type=_number,
        default=2.0,
        help="seconds run and discarded before measuring (default 2)",
    )
    how.add_argument("--pin", default="none", help="none | compact | scatter | CPU list")
    how.add_argument(
        "--numa-nodes", type=int, default=0, help="split the CPUs into N virtual NUMA nodes"
    )
    how.add_argument(
        "--interval",
        type=_number,
        default=0.1,
        help="throughput series period, for the steady-state check (default 0.1)",
    )
    how.add_argument("--seed", type=int, default=1, help="seed of the run order (default 1)")
    how.add_argument(
        "--resume", metavar="EXP", help="finish an interrupted experiment: run only what is missing"
    )

    campaign = commands.add_parser("campaign", help="run the experiment a TOML file describes")
    campaign.add_argument("file", type=Path)
    _common(campaign, statistics=True)
    _engine_option(campaign)
    campaign.add_argument(
        "--dry-run", action="store_true", help="check the file and print the plan, run nothing"
    )
    campaign.add_argument(
        "--full", action="store_true", help="the seed's own scale, from the file's [full] table"
    )
    campaign.add_argument(
        "--report", type=Path, help="HTML report to write (default: STORE/NAME.html)"
    )
    campaign.add_argument(
        "--fresh",
        action="store_true",
        help="start a new experiment even if an unfinished one of this campaign is in the store "
        "(default: resume it)",
    )
    scale = campaign.add_argument_group("override the file (a quick check, a tiny scale)")
    scale.add_argument("--repeat", type=int, help="runs per cell")
    scale.add_argument("--duration", type=_number, help="measured seconds per run")
    scale.add_argument("--warmup", type=_number, help="seconds discarded before measuring")

    topology = commands.add_parser("topology", help="CPUs, cores, SMT and NUMA nodes, as detected")
    _engine_option(topology)
    topology.add_argument("--numa-nodes", type=int, help="show a split into N virtual nodes")

    results = commands.add_parser("results", help="list the stored experiments")
    _common(results)

    show = commands.add_parser("table", help="print an experiment's table again")
    show.add_argument("experiment", metavar="EXP", help="experiment id or name")
    _common(show, statistics=True)

    compare = commands.add_parser("compare", help="compare two experiments, B against A")
    compare.add_argument("a", metavar="EXP_A")
    compare.add_argument("b", metavar="EXP_B")
    _common(compare, statistics=True)

    export_ = commands.add_parser("export", help="export an experiment")
    export_.add_argument("experiment", metavar="EXP")
    export_.add_argument("--format", choices=export.FORMATS, default="csv")
    export_.add_argument("--output", "-o", type=Path, help="file to write (default stdout)")
    _common(export_, statistics=True)

    report = commands.add_parser("report", help="one self-contained interactive HTML page")
    report.add_argument("experiments", metavar="EXP", nargs="*", help="experiments, side by side")
    report.add_argument("--latest", action="store_true", help="the newest experiment")
    report.add_argument("--output", "-o", type=Path, default=Path("report.html"))
    _common(report, statistics=True)

    plot = commands.add_parser("plot", help="the main figures as PNG and SVG")
    plot.add_argument("experiment", metavar="EXP")
    plot.add_argument("--output", "-o", type=Path, default=Path("figures"), help="directory")
    _common(plot, statistics=True)

    tune_ = commands.add_parser(
        "tune", help="find the value of a tunable with the best worst case across the axes"
    )
    tune_.add_argument("lock")
    tune_.add_argument("--param", required=True, help="the tunable to search")
    tune_.add_argument("--range", required=True, help="LO:HI or LO:HI:STEP")
    for axis in AXES:
        tune_.add_argument(f"--{axis.replace('_', '-')}", dest=axis, help=f"{axis} values")
    tune_.add_argument(
        "--workload",
        action="append",
        default=[],
        metavar="NAME:HOLD_NS:GAP_NS",
        help="a named (hold, gap) pair, like load:2000:2000 (repeatable)",
    )
    tune_.add_argument("--repeat", type=int, default=3)
    tune_.add_argument("--duration", type=_number, default=1.0)
    tune_.add_argument("--warmup", type=_number, default=0.2)
    tune_.add_argument("--pin", default="compact")
    tune_.add_argument("--grid", type=int, default=8, help="coarse grid points (default 8)")
    tune_.add_argument("--rounds", type=int, default=2, help="refinement rounds (default 2)")
    tune_.add_argument("--output", "-o", type=Path, default=Path("tune.png"), help="the chart")
    _common(tune_)
    _engine_option(tune_)

    imports = commands.add_parser(
        "import-locktorture", help="store the runs of kernel locktorture logs (dmesg, console)"
    )
    imports.add_argument(
        "logs",
        nargs="+",
        metavar="[LABEL=]LOG",
        help="a log, or LABEL=LOG to name its variant (say k0-stock=k0.log); default: the "
        "torture type",
    )
    imports.add_argument("--name", help="experiment name (default: the first log's name)")
    imports.add_argument("--host", default="kernel", help="the machine the logs come from")
    imports.add_argument(
        "--warmup-reports",
        type=int,
        default=1,
        help="statistics reports dropped at the start of each run (default 1)",
    )
    _common(imports, statistics=True)

    kernel = commands.add_parser("kernel", help="run the kernel's locktorture in QEMU")
    kernel.add_argument("--kernel", help="kernel images, comma-separated (or --host)")
    kernel.add_argument(
        "--host",
        action="store_true",
        help="bare metal: modprobe the running kernel's locktorture and pin its kthreads",
    )
    kernel.add_argument("--pin-cpus", help="--host: CPUs to pin the kthreads to, like 0-7")
    kernel.add_argument("--label", help="a label per kernel, comma-separated (default: version)")
    kernel.add_argument("--type", default="spin_lock", help="torture_type (default spin_lock)")
    kernel.add_argument("--nwriters", default="2", help="nwriters_stress values, like 1,2,4")
    kernel.add_argument("--repeat", type=int, default=1)
    kernel.add_argument("--duration", type=_number, default=10.0, help="seconds per run")
    kernel.add_argument("--stat-interval", type=int, default=1, help="seconds between reports")
    kernel.add_argument("--warmup-reports", type=int, default=1)
    kernel.add_argument("--cpus", type=int, default=2, help="virtual CPUs")
    kernel.add_argument("--accel", choices=("auto", "kvm", "tcg"), default="auto")
    kernel.add_argument("--name", help="experiment name")
    _common(kernel, statistics=True)

    merge = commands.add_parser("merge", help="import the experiments of another store")
    merge.add_argument(
        "other",
        type=Path,
        metavar="OTHER_STORE",
        help="a store directory or its locklab.db, copied from another machine",
    )
    _common(merge)
    return parser


# -- commands --------------------------------------------------------------------------------


def cmd_list(args: argparse.Namespace) -> int:
    engine = Engine(find_engine(args.engine))
    catalogue = engine.catalogue(tuple(args.plugin))
    if args.json:
        locks = [
            {
                "name": lock.name,
                "family": lock.family,
                "summary": lock.summary,
                "source": lock.source,
                "flags": list(lock.flags),
                "tunables": [t.__dict__ for t in lock.tunables],
            }
            for lock in catalogue.values()
        ]
        print(json.dumps({"locks": locks}, indent=2))
        return 0
    listing = _listing("lock", "family", "summary", "tunables: default [min..max]")
    for lock in catalogue.values():
        tunables = ", ".join(
            f"{t.name}={t.default} [{t.minimum}..{t.maximum}]" for t in lock.tunables
        )
        listing.add_row(lock.name, lock.family, lock.summary, tunables or "-")
    _stdout_console().print(listing)
    return 0


class _Listing(Table):
    """A plain rich table whose cells are escaped for the terminal (names are user input)."""

    def add_row(self, *cells: Any, **options: Any) -> None:  # type: ignore[override]
        super().add_row(*(printable(str(cell)) for cell in cells), **options)


def _listing(*titles: str) -> Table:
    listing = _Listing(box=None, pad_edge=False, header_style="bold")
    for title in titles:
        listing.add_column(title, overflow="fold")
    return listing


def _stdout_console() -> Console:
    """Color and the terminal's width on a terminal; into a file or pipe, no color and lines
    long enough that nothing wraps."""
    console = Console(highlight=False, markup=False)
    if not console.is_terminal:
        console = Console(highlight=False, markup=False, width=240, no_color=True)
    return console


def _spec_from_options(args: argparse.Namespace, engine: Engine) -> ExperimentSpec:
    if not args.lock:
        raise LocklabError("run: give --lock A,B,... (or --resume EXP)")
    locks = [name.strip() for name in args.lock.split(",")]
    if not all(locks):
        raise LocklabError(f"--lock: empty lock name in '{args.lock}'")
    plugins = tuple(str(Path(p).resolve()) for p in args.plugin)
    catalogue = engine.catalogue(plugins)
    unknown = next((name for name in locks if name not in catalogue), None)
    if unknown:
        raise LocklabError(f"unknown lock '{unknown}' (see 'locklab list')")
    params: dict[str, list[tuple[str, int]]] = {name: [] for name in locks}
    for text in args.param:
        scope, name, value = parse_param(text)
        targets = [scope] if scope else [lock for lock in locks if catalogue[lock].tunable(name)]
        if scope and scope not in params:
            raise LocklabError(f"--param {text}: '{scope}' is not one of the locks run")
        if not targets:
            raise LocklabError(f"--param {text}: none of the locks has a param '{name}'")
        for lock in targets:
            params[lock].append((name, value))
    plugin_of = _plugin_of(engine, plugins)
    variants = [Variant(lock, lock, tuple(params[lock]), plugin_of.get(lock)) for lock in locks]
    sweep = {
        axis: parse_int_list(axis, getattr(args, axis))
        for axis in AXES
        if getattr(args, axis) is not None
    }
    return ExperimentSpec(
        name=args.name or "-".join(locks),
        variants=variants,
        sweep=sweep,
        repeat=args.max_repeat if args.repeat == "auto" else args.repeat,
        repeat_auto=args.repeat == "auto",
        min_repeat=args.min_repeat,
        precision=args.precision,
        duration_s=args.duration,
        warmup_s=args.warmup,
        baseline=args.baseline or locks[0],
        pin=args.pin,
        seed=args.seed,
        interval_s=args.interval,
        numa_nodes=args.numa_nodes,
    )


def _plugin_of(engine: Engine, plugins: tuple[str, ...]) -> dict[str, str]:
    """Which plugin each plugin lock comes from, so each run loads only what it needs."""
    built_in = set(engine.catalogue())
    found: dict[str, str] = {}
    for plugin in plugins:
        for name in engine.catalogue((plugin,)):
            if name not in built_in:
                found[name] = plugin
    return found


def _settings(args: argparse.Namespace) -> Settings:
    if not 0 < args.alpha < 1:
        raise LocklabError(f"--alpha must be between 0 and 1 (got {args.alpha})")
    if args.noise_cv <= 0 or args.drift <= 0:
        raise LocklabError("--noise-cv and --drift must be above 0")
    return Settings(
        args.test, args.alpha, args.noise_cv, args.drift, args.ci, args.metric, args.correction
    )


def _print_analysis(analysis: Analysis, plain: bool) -> None:
    console = Console(highlight=False, markup=False, soft_wrap=True)
    if plain or not console.is_terminal:
        sys.stdout.write(table.plain(analysis))
    else:
        console.print(table.colored(analysis), end="")


def _execute(
    args: argparse.Namespace,
    engine: Engine,
    store: Store,
    experiment: Experiment,
    resume_hint: str | None = None,
) -> int:
    settings = _settings(args)
    spec = experiment.spec
    errors = Console(stderr=True, highlight=False, markup=False, soft_wrap=True)
    runs_planned = len(spec.schedule())
    minutes = runs_planned * spec.expected_run_s() / 60
    name = printable(experiment.name)
    errors.print(
        f'experiment #{experiment.id} "{name}" in {store.path}: {runs_planned} runs, '
        f"about {minutes:.1f} min in all"
    )
    try:
        outcome = run_sweep(engine, store, experiment, errors)
    except KeyboardInterrupt:
        kept = len(store.finished(experiment))
        print(
            f"locklab: interrupted: {kept} of {runs_planned} runs of #{experiment.id} are kept; "
            "finish with: "
            + (resume_hint or f"locklab run --store {args.store} --resume {experiment.id}"),
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    if outcome.taken:
        errors.print(
            f"{outcome.taken} runs were left to another locklab working on #{experiment.id} at "
            "the same time"
        )
    runs = store.runs(experiment)
    _print_analysis(analyse_experiment(experiment, runs, settings), args.plain)
    if spec.repeat_auto:
        errors.print(_adaptive_summary(spec, runs, outcome.settled))
    for line in outcome.failures:
        print(f"locklab: error: {printable(line)}", file=sys.stderr)
    return EXIT_RUN_FAILED if outcome.failures else 0


def _adaptive_summary(spec: ExperimentSpec, runs: list, settled: int) -> str:
    per_cell: dict[str, int] = {}
    for run in runs:
        if run.status == "ok":
            per_cell[run.config_key] = per_cell.get(run.config_key, 0) + 1
    counts = sorted(per_cell.values()) or [0]
    planned = len(spec.configurations()) * spec.repeat
    return (
        f"adaptive repetition: {sum(counts)} runs of at most {planned} "
        f"({100 * sum(counts) / planned:.0f}%); per cell {counts[0]} to {counts[-1]} "
        f"(min {spec.min_repeat}, max {spec.repeat}, precision {spec.precision:g}); "
        f"{settled} runs saved this time"
    )


def cmd_run(args: argparse.Namespace) -> int:
    _settings(args)  # refuse bad statistics options before running anything
    engine = Engine(find_engine(args.engine))
    if args.resume:
        given = [f"--{axis}" for axis in AXES if getattr(args, axis) is not None]
        given += ["--lock"] if args.lock else []
        if given:
            raise LocklabError(f"--resume runs the stored plan: drop {', '.join(given)}")
        store = Store(Path(args.store), create=False)
        experiment = store.experiment(args.resume)
        engine.check(experiment.spec)
        return _execute(args, engine, store, experiment)
    spec = _spec_from_options(args, engine)
    engine.check(spec)
    store = Store(Path(args.store))
    experiment = store.create_experiment(spec, _host(), provenance.version(), provenance.commit())
    return _execute(args, engine, store, experiment)


def cmd_campaign(args: argparse.Namespace) -> int:
    _settings(args)
    spec = load_campaign(args.file, args.full)
    if args.repeat is not None:
        spec.repeat, spec.repeat_auto = args.repeat, False
    if args.duration is not None:
        spec.duration_s = args.duration
    if args.warmup is not None:
        spec.warmup_s = args.warmup
    engine = Engine(find_engine(args.engine))
    try:
        engine.check(spec)
    except LocklabError as error:
        raise locate_error(args.file, error) from None
    if args.dry_run:
        configs = spec.configurations()
        print(
            f'{args.file}: "{printable(spec.name)}": {len(spec.variants)} variants x '
            f"{len(configs) // len(spec.variants)} points x {spec.repeat} repeats = "
            f"{len(configs) * spec.repeat} runs, about "
            f"{len(configs) * spec.repeat * spec.expected_run_s() / 60:.1f} min"
        )
        for config, repeat in spec.schedule()[: len(configs)]:
            print(f"  {repeat + 1}: {' '.join(spec.engine_args(config, repeat))}")
        return 0
    store = Store(Path(args.store))
    experiment = None if args.fresh else _unfinished(store, spec)
    if experiment is not None:
        done = adaptive.completion(spec, store.runs(experiment, with_results=False))
        print(
            f'locklab: resuming the unfinished experiment #{experiment.id} "{printable(spec.name)}"'
            f" ({done.finished} of {done.planned} runs done; --fresh starts a new one)",
            file=sys.stderr,
        )
    else:
        experiment = store.create_experiment(
            spec, _host(), provenance.version(), provenance.commit()
        )
    hint = f"locklab campaign {args.file} --store {args.store}"
    status = _execute(args, engine, store, experiment, hint)
    if status in (0, EXIT_RUN_FAILED):  # the table is out; the charts go with it
        page = args.report or store.path.parent / f"{file_stem(experiment.name)}.html"
        _write_report(store, [experiment], _settings(args), page)
    return status


def _unfinished(store: Store, spec: ExperimentSpec) -> Experiment | None:
    """The newest experiment of this very campaign (the same plan) that is not complete."""
    for experiment in reversed(store.experiments()):
        if experiment.name == spec.name and experiment.spec.to_dict() == spec.to_dict():
            runs = store.runs(experiment, with_results=False)
            return None if adaptive.completion(spec, runs).complete else experiment
    return None


def cmd_topology(args: argparse.Namespace) -> int:
    engine = Engine(find_engine(args.engine))
    sys.stdout.write(engine.topology(args.numa_nodes))
    return 0


def cmd_results(args: argparse.Namespace) -> int:
    store = Store(Path(args.store), create=False, read_only=True)
    listing = _listing("id", "name", "created", "host", "locks", "sweep", "runs", "state", "origin")
    for experiment in store.experiments():
        spec = experiment.spec
        progress = adaptive.completion(spec, store.runs(experiment, with_results=False))
        sweep = " ".join(
            f"{axis}={','.join(map(str, values))}"
            for axis, values in spec.sweep.items()
            if len(values) > 1 or axis == "nwriters"
        )
        listing.add_row(
            str(experiment.id),
            experiment.name,
            experiment.created.replace("T", " "),
            experiment.host or "-",
            ",".join(v.label for v in spec.variants),
            sweep,
            f"{progress.finished}/{progress.planned}",
            progress.state,
            experiment.origin,
        )
    _stdout_console().print(listing)
    return 0


def cmd_table(args: argparse.Namespace) -> int:
    store = Store(Path(args.store), create=False, read_only=True)
    experiment = store.experiment(args.experiment)
    _print_analysis(
        analyse_experiment(experiment, store.runs(experiment), _settings(args)), args.plain
    )
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    store = Store(Path(args.store), create=False, read_only=True)
    a, b = store.experiment(args.a), store.experiment(args.b)
    analysis = analyse_comparison(a, store.runs(a), b, store.runs(b), _settings(args))
    _print_analysis(analysis, args.plain)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    store = Store(Path(args.store), create=False, read_only=True)
    experiment = store.experiment(args.experiment)
    runs = store.runs(experiment)
    analysis = analyse_experiment(experiment, runs, _settings(args))
    if args.format == "csv":
        text = export.to_csv(analysis)
    elif args.format == "json":
        text = export.to_json(analysis, experiment, runs)
    else:
        text = export.to_markdown(analysis)
    if args.output:
        try:
            args.output.write_text(text)
        except OSError as error:
            raise LocklabError(f"{args.output}: cannot write: {error.strerror}") from None
    else:
        sys.stdout.write(text)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    settings = _settings(args)
    store = Store(Path(args.store), create=False, read_only=True)
    refs = list(args.experiments)
    if args.latest:
        newest = store.experiments()
        if not newest:
            raise LocklabError(f"no experiment in {store.path}")
        refs.append(str(newest[-1].id))
    if not refs:
        raise LocklabError("report: name one or more experiments, or give --latest")
    _write_report(store, [store.experiment(ref) for ref in refs], settings, args.output)
    return 0


def _write_report(
    store: Store, experiments: list[Experiment], settings: Settings, path: Path
) -> None:
    from locklab import report  # plotly is slow to import: only here

    page = report.render([(e, store.runs(e)) for e in experiments], settings)
    try:
        path.write_text(page)
    except OSError as error:
        raise LocklabError(f"{path}: cannot write: {error.strerror}") from None
    print(f"report: {printable(str(path.resolve()))}")


def cmd_plot(args: argparse.Namespace) -> int:
    from locklab import plot  # matplotlib is slow to import: only here

    settings = _settings(args)
    store = Store(Path(args.store), create=False, read_only=True)
    experiment = store.experiment(args.experiment)
    analysis = analyse_experiment(experiment, store.runs(experiment), settings)
    try:
        written = plot.write_figures(analysis, experiment.name, args.output)
    except OSError as error:
        raise LocklabError(f"{args.output}: cannot write: {error.strerror}") from None
    for path in written:
        print(path)
    return 0


def _parse_range(text: str) -> tuple[int, int, int | None]:
    parts = text.split(":")
    try:
        numbers = [int(part) for part in parts]
    except ValueError:
        raise LocklabError(f"--range: expected LO:HI or LO:HI:STEP, got '{text}'") from None
    if (
        len(numbers) not in (2, 3)
        or numbers[0] >= numbers[1]
        or (len(numbers) == 3 and numbers[2] <= 0)
    ):
        raise LocklabError(f"--range: expected LO:HI or LO:HI:STEP with LO < HI, got '{text}'")
    return numbers[0], numbers[1], numbers[2] if len(numbers) == 3 else None


def _parse_workload(text: str) -> Workload:
    name, _, rest = text.partition(":")
    hold, _, gap = rest.partition(":")
    try:
        return Workload(name, (("hold_ns", int(hold)), ("gap_ns", int(gap))))
    except ValueError:
        raise LocklabError(f"--workload: expected NAME:HOLD_NS:GAP_NS, got '{text}'") from None


def cmd_tune(args: argparse.Namespace) -> int:
    from locklab import plot, tune

    engine = Engine(find_engine(args.engine))
    catalogue = engine.catalogue()
    info = catalogue.get(args.lock)
    if info is None:
        raise LocklabError(f"unknown lock '{args.lock}' (see 'locklab list')")
    tunable = info.tunable(args.param)
    if tunable is None:
        known = ", ".join(t.name for t in info.tunables) or "none"
        raise LocklabError(f"lock '{args.lock}' has no param '{args.param}' (its params: {known})")
    lo, hi, step = _parse_range(args.range)
    if lo < tunable.minimum or hi > tunable.maximum:
        raise LocklabError(
            f"--range {args.range}: {args.param} must stay in [{tunable.minimum}, "
            f"{tunable.maximum}]"
        )
    if args.grid < 2 or args.rounds < 0:
        raise LocklabError("--grid must be at least 2 and --rounds at least 0")
    sweep = {a: parse_int_list(a, getattr(args, a)) for a in AXES if getattr(args, a) is not None}
    workloads = [_parse_workload(text) for text in args.workload]
    output = _chart_path(args.output, f"tune-{file_stem(args.lock)}-{file_stem(args.param)}")
    tuning = StoredTuning(
        engine, Store(Path(args.store)), _host(),
        Console(stderr=True, highlight=False, markup=False, soft_wrap=True),
        args.lock, args.param, sweep, workloads, args.repeat, args.duration, args.warmup,
        args.pin,
    )  # fmt: skip
    tuning.engine.check(tuning.spec([lo], "check"))
    try:
        result = tune.search(tuning.evaluate, lo, hi, step, args.grid, args.rounds)
    except KeyboardInterrupt:
        print(
            "locklab: interrupted: every finished run is kept; run the same command again to "
            "resume (it reuses what was measured)",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    spec = tuning.spec([result.value], "result")
    print(
        f"{args.lock}: chosen {args.param} = {result.value}, worst case "
        f"{result.worst_relative:.1%} of the best value at each point "
        f"({len(result.evaluated)} values, {tuning.rounds_run} rounds measured now)"
    )
    print(f"{'point':<40} {'best value':>10} {'chosen/best':>12} {'loss':>7}")
    for point, best in sorted(result.best_at.items()):
        workload = spec.workload_of(dict(point))
        shown = f"{workload.name} " if workload else ""
        shown += " ".join(f"{a}={v}" for a, v in point if len(spec.sweep[a]) > 1 or a == "nwriters")
        relative = result.relative[result.value, point]
        print(f"{shown:<40} {best:>10} {relative:>12.1%} {1 - relative:>7.1%}")
    plot.write_tune_figure(result, args.param, f"{args.lock} {args.param}", output)
    print(f"chart: {printable(str(output.resolve()))}")
    return 0


def _chart_path(path: Path, stem: str) -> Path:
    """Where a chart goes, checked before anything is measured: into a directory as STEM.png,
    else the file itself, whose suffix must name a format matplotlib writes."""
    from locklab import plot

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


def cmd_import_locktorture(args: argparse.Namespace) -> int:
    from locklab import locktorture

    settings = _settings(args)
    if args.warmup_reports < 0:
        raise LocklabError("--warmup-reports must not be negative")
    labelled = []
    for text in args.logs:
        label, equals, path = text.rpartition("=")
        labelled.append((label if equals and label else None, Path(path if equals else text)))
    name = args.name or labelled[0][1].stem
    imported = locktorture.convert(labelled, name, args.host, args.warmup_reports)
    store = Store(Path(args.store))
    experiment, problems = locktorture.store_imported(store, imported, args.host)
    for line in problems:
        print(f"locklab: warning: {printable(line)}", file=sys.stderr)
    runs = store.runs(experiment)
    _print_analysis(analyse_experiment(experiment, runs, settings), args.plain)
    print(f'imported {len(runs)} runs as #{experiment.id} "{printable(experiment.name)}"')
    return 0


def cmd_kernel(args: argparse.Namespace) -> int:
    from locklab import kernel

    settings = _settings(args)
    _check_locktorture_options(args, kernel)
    if args.host:
        cpus = parse_int_list("pin-cpus", args.pin_cpus) if args.pin_cpus else []
        label = args.label or os.uname().release
        host_run = [(label, lambda params: kernel.run_on_host(params, args.duration, cpus))]
        return _locktorture_sweep(args, settings, f"host-{args.type}", host_run, _host)
    if not args.kernel:
        raise LocklabError("kernel: give --kernel IMAGE[,IMAGE...] or --host")
    images = [Path(p) for p in args.kernel.split(",") if p]
    for image in images:
        if not image.is_file():
            raise LocklabError(f"--kernel: {image} is not a file")
    versions = [kernel.kernel_version(image) for image in images]
    labels = args.label.split(",") if args.label else versions
    if len(labels) != len(images):
        raise LocklabError("--label: give one label per kernel")
    modules = {version: kernel.build_modules(version) for version in set(versions)}
    initrd = kernel.BUILD / "initramfs.gz"  # rewritten for each run
    accels: set[str] = set()
    fallbacks: set[str] = set()

    def boot(image: Path, version: str) -> Callable[[dict[str, str]], str]:
        def run(params: dict[str, str]) -> str:
            initrd.parent.mkdir(parents=True, exist_ok=True)
            kernel.initramfs(modules[version], params, args.duration, initrd)
            booted = kernel.boot(image, initrd, args.cpus, args.duration, args.accel)
            accels.add(booted.accel)
            if booted.fallback:
                fallbacks.add(booted.fallback)
            return booted.console

        return run

    targets = [(label, boot(image, version)) for image, version, label in zip(
        images, versions, labels, strict=True)]  # fmt: skip

    def machine() -> str:
        if accels == {"kvm"}:
            return "qemu-kvm"
        line = "qemu-tcg (emulated: timing not representative"
        if fallbacks:
            line += "; KVM fell back: " + "; ".join(sorted(fallbacks))
        return line + ")"

    return _locktorture_sweep(args, settings, f"kernel-{args.type}", targets, machine)


def _check_locktorture_options(args: argparse.Namespace, kernel: Any) -> None:
    """Every locktorture option, checked before any module is built or kernel booted."""
    if args.type not in kernel.TORTURE_TYPES:
        raise LocklabError(
            f"--type: unknown torture_type '{args.type}' (known: {', '.join(kernel.TORTURE_TYPES)})"
        )
    validate_axis("nwriters", parse_int_list("nwriters", args.nwriters))
    if not 1 <= args.stat_interval <= 3600:
        raise LocklabError(f"--stat-interval must be from 1 to 3600 s (got {args.stat_interval})")
    validate_seconds("duration", args.duration, minimum=2 * args.stat_interval)
    if not 1 <= args.repeat <= 1000:
        raise LocklabError(f"--repeat must be from 1 to 1000 (got {args.repeat})")
    if not 1 <= args.cpus <= kernel.MAX_GUEST_CPUS:
        raise LocklabError(f"--cpus must be from 1 to {kernel.MAX_GUEST_CPUS} (got {args.cpus})")
    if args.warmup_reports < 0:
        raise LocklabError(f"--warmup-reports must not be negative (got {args.warmup_reports})")
    if args.duration < (args.warmup_reports + 2) * args.stat_interval:
        raise LocklabError(
            f"--duration {args.duration:g} s leaves fewer than two reports after "
            f"{args.warmup_reports} warm-up reports of {args.stat_interval} s"
        )


def _locktorture_sweep(
    args: argparse.Namespace,
    settings: Settings,
    default_name: str,
    targets: list[tuple[str, Callable[[dict[str, str]], str]]],
    machine: Callable[[], str],
) -> int:
    """Run locktorture for each repeat, target (a labelled kernel) and writer count, keep each
    console log, and import them all as one experiment."""
    from locklab import locktorture

    nwriters = parse_int_list("nwriters", args.nwriters)
    store = Store(Path(args.store))
    name = args.name or default_name
    logs = store.path.parent / "kernel-logs" / name
    logs.mkdir(parents=True, exist_ok=True)
    console = Console(stderr=True, highlight=False, markup=False, soft_wrap=True)
    labelled = []
    for repeat in range(args.repeat):
        for label, run in targets:
            for writers in nwriters:
                params = {"torture_type": args.type, "nwriters_stress": str(writers),
                          "stat_interval": str(args.stat_interval)}  # fmt: skip
                console.print(f"{printable(label)}: {args.type} nwriters={writers} #{repeat + 1}")
                log = logs / f"{label}-{args.type}-n{writers}-r{repeat + 1}.log"
                log.write_text(run(params))
                labelled.append((label, log))
    experiment, problems = locktorture.to_store(
        store, labelled, name, machine(), args.warmup_reports
    )
    for line in problems:
        print(f"locklab: warning: {printable(line)}", file=sys.stderr)
    _print_analysis(analyse_experiment(experiment, store.runs(experiment), settings), args.plain)
    print(f"console logs: {logs}")
    return 0


def cmd_merge(args: argparse.Namespace) -> int:
    other = Store(args.other, create=False, read_only=True)
    store = Store(Path(args.store))
    if other.path.resolve() == store.path.resolve():
        raise LocklabError(f"merge: {args.other} is this store")
    imported, present = store.merge(other)
    for experiment in imported:
        print(
            f"imported #{experiment.id} \"{printable(experiment.name)}\" from "
            f"{printable(experiment.host or '?')} "
            f"({len(store.runs(experiment, with_results=False))} runs)"
        )
    if present:
        print(f"{len(present)} experiment(s) already here, left as they are")
    return 0


COMMANDS = {
    "list": cmd_list,
    "run": cmd_run,
    "campaign": cmd_campaign,
    "topology": cmd_topology,
    "results": cmd_results,
    "table": cmd_table,
    "compare": cmd_compare,
    "export": cmd_export,
    "report": cmd_report,
    "plot": cmd_plot,
    "tune": cmd_tune,
    "import-locktorture": cmd_import_locktorture,
    "kernel": cmd_kernel,
    "merge": cmd_merge,
}


def _host() -> str:
    return socket.gethostname()


def _terminate(signum: int, frame: FrameType | None) -> None:
    """SIGTERM (kill) ends a sweep the way Ctrl-C does: finished runs are already stored."""
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _terminate)
    try:
        args = build_parser().parse_args(argv)
        return COMMANDS[args.command](args)
    except LocklabError as error:
        print(f"locklab: error: {printable(str(error))}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print("locklab: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `locklab table 3 | head`
        sys.stderr.close()
        return 0
    except OSError as error:  # a file or folder the checks could not foresee
        where = f"{error.filename}: " if error.filename else ""
        print(f"locklab: error: {printable(where)}{error.strerror or error}", file=sys.stderr)
        return 2
    except sqlite3.Error as error:
        print(f"locklab: error: results store: {error}", file=sys.stderr)
        return 2
    except Exception as error:  # a bug: one line, and the traceback only when asked for
        if os.environ.get("LOCKLAB_DEBUG"):
            raise
        print(
            f"locklab: internal error: {type(error).__name__}: {printable(str(error))} "
            "(LOCKLAB_DEBUG=1 shows where; please report it)",
            file=sys.stderr,
        )
        return 70


if __name__ == "__main__":
    sys.exit(main())
