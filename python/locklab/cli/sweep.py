"""`locklab run`: a sweep from options, measured into the store, its table printed (`locklab
campaign`, the same from a TOML file, is cli/campaign.py)."""

from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path

from locklab import provenance
from locklab.analysis.cells import Settings
from locklab.cli.common import (
    Commands,
    chosen_engine,
    engine_option,
    fit_to_simulated,
    host,
    number,
    repeat_count,
    run_settings,
    settings,
    sim_option,
    simulated_machine,
    source_options,
    source_plugins,
    statistics_options,
)
from locklab.cli.host_plans import remote_command
from locklab.cli.hosts import hosts_options, measure_on_hosts, resume_host
from locklab.cli.measure import execute
from locklab.errors import LocklabError
from locklab.kernel.from_source import SIM_BUILD
from locklab.model.spec import (
    SIM_DURATION_S,
    SIM_PIN,
    SIM_WARMUP_S,
    AutoRepeat,
    ExperimentSpec,
    default,
)
from locklab.model.targeting import spec_for_locks
from locklab.model.values import AXES, PIN_MODES
from locklab.run.engine import Engine
from locklab.run.replay import say_if_another_build
from locklab.run.simulator import engine_invocation
from locklab.run.source_plugin import built_plugins
from locklab.run.ssh import check_aliases
from locklab.store import Store


def _spec(name: str) -> object:
    return default(ExperimentSpec, name)


def register(commands: Commands) -> None:
    run = commands.add_parser("run", help="run a sweep and print its table")
    statistics_options(run)
    engine_option(run)
    what = run.add_argument_group("what to run")
    what.add_argument("--lock", help="locks to compare, comma-separated: tas,ticket,mcs")
    what.add_argument("--plugin", action="append", default=[],
                      help="load a lock plugin: a .so, or its C source (compiled with a writer "
                      "loop of its own, cached)")  # fmt: skip
    source_options(what)
    what.add_argument(
        "--param",
        action="append",
        default=[],
        help="NAME=VALUE for every lock with that tunable, or LOCK.NAME=VALUE; comma lists "
        "and repeats add up: --param wait=spin-then-park,spin_ns=2000",
    )
    what.add_argument("--baseline", help="the lock the others are compared with (default first)")
    what.add_argument("--name", help="experiment name (default: the locks)")
    sweep = run.add_argument_group("sweep axes: comma lists and ranges, like 1,2,4 or 1-4,8")
    for axis in AXES:
        sweep.add_argument(f"--{axis.replace('_', '-')}", dest=axis, help=f"{axis} values")
    how = run.add_argument_group("how")
    how.add_argument(
        "--repeat",
        type=repeat_count,
        default=_spec("repeat"),
        help=f"runs per cell (default {_spec('repeat')}), or auto: from --min-repeat "
        "to --max-repeat, stopping once the cell's verdict is settled",
    )
    how.add_argument(
        "--min-repeat",
        type=int,
        default=AutoRepeat.min_repeat,
        help=f"with --repeat auto (default {AutoRepeat.min_repeat})",
    )
    how.add_argument(
        "--max-repeat",
        type=int,
        default=AutoRepeat.max_repeat,
        help=f"with --repeat auto (default {AutoRepeat.max_repeat})",
    )
    how.add_argument(
        "--precision",
        type=number,
        default=AutoRepeat.precision,
        help="with --repeat auto: a cell is also settled when its 95%% CI is within "
        "this fraction of its mean, and so is its baseline's "
        f"(default {AutoRepeat.precision})",
    )
    how.add_argument(
        "--duration",
        type=number,
        help=f"measured seconds per run (default {_spec('duration_s'):g}; with --sim "
        f"{SIM_DURATION_S:g} virtual seconds)",
    )
    how.add_argument(
        "--warmup",
        type=number,
        help=f"seconds run and discarded before measuring (default {_spec('warmup_s'):g}; "
        f"with --sim {SIM_WARMUP_S:g} virtual seconds)",
    )
    how.add_argument(
        "--pin", default=None,
        help=f"{' | '.join(PIN_MODES)} | CPU list (default {_spec('pin')}; {SIM_PIN} with --sim)",
    )  # fmt: skip
    sim_option(how)
    how.add_argument(
        "--numa-nodes",
        type=int,
        default=_spec("numa_nodes"),
        help="split the CPUs into N virtual NUMA nodes",
    )
    how.add_argument(
        "--torture-delays",
        metavar="TYPE",
        default=_spec("torture_delays"),
        help="hold times drawn as the kernel's locktorture does for TYPE (rtmutex_lock, "
        "spin_lock, mutex_lock, rwsem_lock, ...), instead of --hold-ns",
    )
    how.add_argument(
        "--churn",
        metavar="N",
        type=int,
        default=_spec("churn"),
        help="a fork-like load: each writer makes a thread per turn that takes the lock N "
        "times (--gap-ns apart) and ends (seed 001's fork and exit: 2)",
    )
    how.add_argument(
        "--numa-remote-ns",
        type=int,
        default=_spec("numa_remote_ns"),
        help="emulated cost, in ns, of a hand-over between virtual NUMA nodes (needs --pin)",
    )
    how.add_argument(
        "--no-checks", action="store_true",
        help="measure the bare loop's section only (one counter, checked at the end): no "
        "per-acquisition owner word or hand-over test, for figures comparable to lockhammer's",
    )  # fmt: skip
    how.add_argument(
        "--interval",
        type=number,
        default=_spec("interval_s"),
        help="throughput series period, for the steady-state check "
        f"(default {_spec('interval_s')})",
    )
    how.add_argument(
        "--seed",
        type=int,
        default=_spec("seed"),
        help=f"seed of the run order and of each run's engine seed, SEED*1000+repeat+1 "
        f"(default {_spec('seed')})",
    )
    how.add_argument(
        "--engine-seed", type=int, metavar="N",
        help="every run's engine seed (with --repeat 1): a failed simulated run's own, which "
        "replays its interleaving exactly, as the command it prints does",
    )  # fmt: skip
    how.add_argument(
        "--same-build", metavar="ENGINE[,PLUGIN]",
        help="sha256 prefixes of the build a replayed run ran with: a replay on another "
        "engine or plugin says so",
    )  # fmt: skip
    how.add_argument(
        "--resume", metavar="EXP",
        help="finish an interrupted experiment: run only what is missing (a host's experiment: "
        "on that host)",
    )  # fmt: skip
    hosts_options(run)
    run.set_defaults(handler=cmd_run)  # fmt: skip


def cmd_run(args: argparse.Namespace) -> int:
    chosen = settings(args)  # refuse bad statistics options before running anything
    if args.resume:
        return _resume(args, chosen)
    if args.hosts:
        aliases = check_aliases(args.hosts)
        return measure_on_hosts(args, chosen, aliases, *remote_command(args))
    engine = Engine(chosen_engine(args))
    machine = simulated_machine(args)
    build = SIM_BUILD if machine else args.build or engine.build()
    plugins = built_plugins(args.plugin, build, engine.path)
    flat = machine.flat_text() if machine else ""
    sources = source_plugins(args, engine, machine, tuple(plugins))
    spec = spec_for_locks(
        partial(engine.catalogue, sim_machine=flat), args.lock, args.param, plugins,
        {axis: getattr(args, axis) for axis in AXES}, sources,
        name=args.name, baseline=args.baseline,
        repeat=args.max_repeat if args.repeat == "auto" else args.repeat,
        repeat_auto=args.repeat == "auto", min_repeat=args.min_repeat,
        precision=args.precision, seed=args.seed, numa_nodes=args.numa_nodes,
        torture_delays=args.torture_delays, numa_remote_ns=args.numa_remote_ns, churn=args.churn,
        checks=not args.no_checks, engine_seed=args.engine_seed, **run_settings(args, machine),
    )  # fmt: skip
    if machine:
        fit_to_simulated(spec)
    engine.check(spec)
    if args.same_build is not None:
        binary, _ = engine_invocation(engine.path, spec.sim_machine, {})
        say_if_another_build(args.same_build, binary, spec)
    store = Store(Path(args.store))
    experiment = store.create_experiment(spec, host(), provenance.version(), provenance.commit())
    return execute(args, chosen, engine, store, experiment)[0]


def _resume(args: argparse.Namespace, chosen: Settings) -> int:
    """--resume: the stored plan, finished here, or on the host it was measured on."""
    given = [f"--{axis}" for axis in AXES if getattr(args, axis) is not None]
    given += ["--lock"] if args.lock else []
    given += [f"--{name}" for name in ("sim", "duration", "warmup", "pin") if getattr(args, name)]
    given += [f"--{name.replace('_', '-')}" for name in ("engine_seed", "same_build")
              if getattr(args, name) is not None]  # fmt: skip
    if given:
        raise LocklabError(f"--resume runs the stored plan: drop {', '.join(given)}")
    store = Store(Path(args.store), create=False)
    experiment = store.experiment(args.resume)
    alias = resume_host(store, experiment, args)
    if alias is not None:
        if args.hosts and args.hosts != alias:
            raise LocklabError(
                f"--resume {args.resume}: it was measured on {alias}, not on {args.hosts}"
            )
        store.close()
        return measure_on_hosts(args, chosen, [alias], ["run", "--resume", experiment.uuid], {})
    if args.hosts:
        raise LocklabError(f"--resume {args.resume}: it was measured here, not on a host")
    engine = Engine(chosen_engine(args))
    engine.check(experiment.spec)
    return execute(args, chosen, engine, store, experiment)[0]
