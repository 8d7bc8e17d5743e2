"""`locklab exec`: a real program under each lock, its own throughput stored and tabulated
like any sweep (the runs go through the same store, claims, resume, table and verdicts)."""

from __future__ import annotations

import argparse
from pathlib import Path

from locklab import provenance
from locklab.cli.common import (
    Commands,
    chosen_engine,
    engine_option,
    host,
    program_figure_options,
    repeat_count,
    settings,
    source_options,
    source_plugins,
    statistics_options,
)
from locklab.cli.host_plans import remote_command
from locklab.cli.hosts import hosts_options, measure_on_hosts
from locklab.cli.measure import execute
from locklab.errors import LocklabError
from locklab.model.spec import ExperimentSpec, default
from locklab.model.targeting import spec_for_locks
from locklab.run.engine import Engine
from locklab.run.program import check_program
from locklab.run.source_plugin import built_plugins
from locklab.run.ssh import check_aliases
from locklab.store import Store


def _spec(name: str) -> object:
    return default(ExperimentSpec, name)


def register(commands: Commands) -> None:
    run = commands.add_parser(
        "exec",
        help="run a program under each lock (LD_PRELOAD) and tabulate its own throughput",
        description="locklab exec --lock mcs,pthread_mutex [--threads 1,2,4] "
        "[--metric-regex RE | --work N] -- PROGRAM ARGS ({threads} in ARGS is the thread count)",
    )
    statistics_options(run)
    engine_option(run)
    run.add_argument("--lock", help="locks to compare, comma-separated (baseline: the first)")
    run.add_argument("--plugin", action="append", default=[], help="a lock plugin (.so or .c)")
    source_options(run)
    run.add_argument("--param", action="append", default=[], help="NAME=VALUE or LOCK.NAME=VALUE")
    run.add_argument("--baseline", help="the lock the others are compared with (default first)")
    run.add_argument("--name", help="experiment name (default: the program and the locks)")
    run.add_argument("--threads", help="values of {threads} in the program's arguments: 1,2,4")
    run.add_argument("--repeat", type=repeat_count, default=_spec("repeat"), help="runs per cell")
    run.add_argument("--seed", type=int, default=_spec("seed"), help="seed of the run order")
    program_figure_options(run)
    hosts_options(run)
    run.add_argument("program", nargs=argparse.REMAINDER, help="-- PROGRAM ARGS...")
    run.set_defaults(handler=cmd_exec)


def cmd_exec(args: argparse.Namespace) -> int:
    chosen = settings(args)
    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    if args.repeat == "auto":
        raise LocklabError("exec: --repeat auto is for engine runs; give a number")
    if args.hosts:  # the program is each host's own, found on its PATH
        return measure_on_hosts(args, chosen, check_aliases(args.hosts), *remote_command(args))
    engine = Engine(chosen_engine(args))
    name = args.name or f"{Path(program[0]).name if program else 'program'}-{args.lock}"
    plugins = built_plugins(args.plugin, args.build or engine.build(), engine.path)
    spec = spec_for_locks(
        engine.catalogue, args.lock, args.param, plugins,
        {"nwriters": args.threads or "1"}, source_plugins(args, engine),
        name=name, baseline=args.baseline, repeat=args.repeat, seed=args.seed,
        source="program", program=program,
        program_metric=args.metric_regex or "time", program_work=args.work,
        program_timeout_s=args.timeout, duration_s=1.0, warmup_s=0.0,
    )  # fmt: skip
    check_program(spec)
    engine.check(spec)
    store = Store(Path(args.store))
    experiment = store.create_experiment(spec, host(), provenance.version(), provenance.commit())
    hint = f"locklab run --store {args.store} --resume {experiment.id}"
    status, _ = execute(args, chosen, engine, store, experiment, hint)
    return status
