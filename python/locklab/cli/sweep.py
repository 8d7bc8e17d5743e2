"""`locklab run` (a sweep from options) and `locklab campaign` (from a TOML file): both measure
an experiment into the store, print its table, and a campaign writes its report."""

from __future__ import annotations

import argparse
import shlex
import sys
from functools import partial
from pathlib import Path

from locklab import provenance
from locklab.analysis.cells import Settings, analyse_experiment
from locklab.analysis.model import Analysis
from locklab.cli import figures
from locklab.cli.common import (
    Commands,
    chosen_engine,
    engine_option,
    fit_to_machine,
    fit_to_simulated,
    host,
    number,
    oversubscribe_option,
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
from locklab.cli.measure import KernelPlan, compile_variants, execute, plan_line
from locklab.errors import LocklabError
from locklab.kernel import campaign as kernel_campaign
from locklab.kernel.campaign import KernelCampaign
from locklab.kernel.from_source import SIM_BUILD
from locklab.model.campaign import campaign_hosts, campaign_kind, load_campaign, locate_error
from locklab.model.spec import (
    SIM_DURATION_S,
    SIM_PIN,
    SIM_WARMUP_S,
    AutoRepeat,
    ExperimentSpec,
    default,
)
from locklab.model.targeting import spec_for_locks
from locklab.model.values import AXES, PIN_MODES, validate_pin
from locklab.output import listing
from locklab.printable import file_stem, printable
from locklab.run import adaptive
from locklab.run.engine import Engine
from locklab.run.source_plugin import built_plugins
from locklab.run.ssh import check_aliases
from locklab.store import Experiment, Run, Store, mirror


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
        help=f"seed of the run order (default {_spec('seed')})",
    )
    how.add_argument(
        "--resume", metavar="EXP",
        help="finish an interrupted experiment: run only what is missing (a host's experiment: "
        "on that host)",
    )  # fmt: skip
    hosts_options(run)
    run.set_defaults(handler=cmd_run)  # fmt: skip
    _register_campaign(commands)


def _register_campaign(commands: Commands) -> None:
    campaign = commands.add_parser("campaign", help="run the experiment a TOML file describes")
    campaign.add_argument("file", type=Path)
    statistics_options(campaign)
    engine_option(campaign)
    campaign.add_argument(
        "--dry-run", action="store_true", help="check the file and print the plan, run nothing"
    )
    campaign.add_argument(
        "--full", action="store_true", help="the seed's own scale, from the file's [full] table"
    )
    campaign.add_argument(
        "--report", type=Path, help="HTML report to write (default: STORE/NAME.html)"
    )
    oversubscribe_option(campaign)
    campaign.add_argument(
        "--fresh",
        action="store_true",
        help="start a new experiment even if an unfinished one of this "
        "campaign is in the store (default: resume it)",
    )
    campaign.add_argument(
        "--sim", metavar="MACHINE",
        help="run it in the simulator on this machine, as if the file said sim = MACHINE "
        "(docs/simulator.md)",
    )  # fmt: skip
    scale = campaign.add_argument_group("override the file (a quick check, a placement)")
    scale.add_argument("--repeat", type=int, help="runs per cell")
    scale.add_argument("--duration", type=number, help="measured seconds per run")
    scale.add_argument("--warmup", type=number, help="seconds discarded before measuring")
    scale.add_argument(
        "--pin", help=f"where the threads run: {' | '.join(PIN_MODES)} | CPU list (docs/engine.md)"
    )
    hosts_options(campaign)
    campaign.set_defaults(handler=cmd_campaign)  # fmt: skip


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
    spec = spec_for_locks(
        partial(engine.catalogue, sim_machine=flat), args.lock, args.param, plugins,
        {axis: getattr(args, axis) for axis in AXES}, source_plugins(args, engine, machine),
        name=args.name, baseline=args.baseline,
        repeat=args.max_repeat if args.repeat == "auto" else args.repeat,
        repeat_auto=args.repeat == "auto", min_repeat=args.min_repeat,
        precision=args.precision, seed=args.seed, numa_nodes=args.numa_nodes,
        torture_delays=args.torture_delays, numa_remote_ns=args.numa_remote_ns,
        checks=not args.no_checks, **run_settings(args, machine),
    )  # fmt: skip
    if machine:
        fit_to_simulated(spec)
    engine.check(spec)
    store = Store(Path(args.store))
    experiment = store.create_experiment(spec, host(), provenance.version(), provenance.commit())
    return execute(args, chosen, engine, store, experiment)[0]


def _resume(args: argparse.Namespace, chosen: Settings) -> int:
    """--resume: the stored plan, finished here, or on the host it was measured on."""
    given = [f"--{axis}" for axis in AXES if getattr(args, axis) is not None]
    given += ["--lock"] if args.lock else []
    given += [f"--{name}" for name in ("sim", "duration", "warmup", "pin") if getattr(args, name)]
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


def cmd_campaign(args: argparse.Namespace) -> int:
    chosen = settings(args)
    kind = campaign_kind(args.file)
    if args.hosts and kind != "engine":
        raise LocklabError(f"--hosts: a {kind} campaign runs here; for kernels on other "
                           "machines: locklab kernel --patch ... --hosts A,B")  # fmt: skip
    if args.sim and kind != "engine":
        raise LocklabError(f"--sim: a {kind} campaign runs real kernels or programs, not in the "
                           "simulator")  # fmt: skip
    if args.pin is not None:
        validate_pin(args.pin, "--pin")
        if kind != "engine":
            raise LocklabError(f"--pin: a {kind} campaign's threads run where its file says; "
                               "--pin places an engine campaign's")  # fmt: skip
    if kind == "kernel":
        return _kernel_campaign(args, chosen, kernel_campaign.load(args.file, args.full))
    if kind == "places":
        from locklab.cli.places import run_places

        return run_places(args, chosen)
    if kind != "engine":
        raise LocklabError(f"{args.file}: kind must be engine, kernel or places (got {kind!r})")
    spec = load_campaign(args.file, args.full, args.sim)
    if args.pin is not None:
        if spec.program:
            raise LocklabError("--pin: a campaign's program places its own threads")
        spec.pin = args.pin
    # A locklab a --hosts run started measures here, whatever hosts the file names.
    aliases = [] if mirror.active() else campaign_hosts(args.file)
    if args.hosts or aliases:
        aliases = check_aliases(args.hosts or ",".join(aliases))
        if args.dry_run:
            print(f"{args.file}: {plan_line(spec)}, on each of {', '.join(aliases)}")
            return 0
        page = args.report or Path(args.store) / f"{file_stem(spec.name)}.html"
        return measure_on_hosts(args, chosen, aliases, *remote_command(args), page)
    if args.repeat is not None:
        spec.repeat, spec.repeat_auto = args.repeat, False
    if args.duration is not None:
        spec.duration_s = args.duration
    if args.warmup is not None:
        spec.warmup_s = args.warmup
    engine = Engine(chosen_engine(args))
    try:
        compile_variants(spec, engine)
        engine.check(spec)
        if spec.program:
            from locklab.run.program import check_program

            check_program(spec)
    except LocklabError as error:
        raise locate_error(args.file, error) from None
    fit_to_machine(spec, args.oversubscribe)
    if args.dry_run:
        _print_plan(args.file, spec)
        return 0
    store = Store(Path(args.store))
    experiment = None if args.fresh else adaptive.unfinished(store, spec)
    if experiment is not None:
        done = adaptive.completion(spec, store.runs(experiment, with_results=False))
        print(
            f'locklab: resuming the unfinished experiment #{experiment.id} "{printable(spec.name)}"'
            f" ({done.finished} of {done.planned} runs done; --fresh starts a new one)",
            file=sys.stderr,
        )
    else:
        experiment = store.create_experiment(
            spec, host(), provenance.version(), provenance.commit()
        )
    status, measured = execute(args, chosen, engine, store, experiment, campaign_rerun(args))
    if measured is not None:  # the table is out; the charts go with it, from the same analysis
        page = args.report or store.path.parent / f"{file_stem(experiment.name)}.html"
        figures.write_report([(experiment, *measured)], chosen, page)
    return status


def campaign_rerun(args: argparse.Namespace) -> str:
    """The command that resumes this campaign's experiment: the file and every option that
    changes its plan, since a rerun resumes only an experiment of the very same plan."""
    plan = [f"--{name}={value}" for name in ("sim", "repeat", "duration", "warmup", "pin")
            if (value := getattr(args, name)) is not None]  # fmt: skip
    plan += [flag for flag in ("--full", "--oversubscribe") if getattr(args, flag[2:])]
    return shlex.join(["locklab", "campaign", str(args.file), "--store", str(args.store), *plan])


def _print_plan(path: Path, spec: ExperimentSpec) -> None:
    print(f"{path}: {plan_line(spec)}")
    for config, repeat in spec.schedule()[: len(spec.configurations())]:
        if spec.program:
            threads = config.axis("nwriters")
            argv = [arg.replace("{threads}", str(threads)) for arg in spec.program]
            print(f"  {repeat + 1}: LOCKLAB_LOCK={config.variant.lock} {' '.join(argv)}")
        else:
            print(f"  {repeat + 1}: {' '.join(spec.engine_args(config, repeat))}")


def _kernel_campaign(args: argparse.Namespace, chosen: Settings, campaign: KernelCampaign) -> int:
    """A kind = "kernel" campaign: `locklab kernel --patch ...` over the file's kernels, with
    --repeat and --duration overriding the file as for any campaign; then its [program], if it
    has one, inside the same kernels (`locklab kernel --exec`), as an experiment of its own."""
    from locklab.cli.guest import GuestPlan

    if args.repeat is not None:
        campaign.repeat = args.repeat
    if args.duration is not None:
        campaign.duration = args.duration
    plan = KernelPlan(campaign)
    guest = None
    if campaign.program is not None:
        program = campaign.program
        guest = GuestPlan(
            program, campaign.kernels, campaign.source, campaign.config, campaign.debug,
            args.repeat or program.repeat or campaign.repeat, _spec("seed"),
            campaign.cpus, campaign.accel, campaign.pin_cpus,
        )  # fmt: skip
    if args.dry_run:
        if campaign.locktorture:
            print(f"{args.file}: {plan.line()}")
        if guest is not None:
            print(f"{args.file}: {plan_line(guest.spec(campaign.name, ''))}")
        return 0
    store = Store(Path(args.store))
    shown: list[tuple[Experiment, list[Run], Analysis]] = []
    combined: Analysis | None = None
    status = 0
    if campaign.locktorture:
        plan.build()
        experiment, logs = plan.run(store)
        runs = store.runs(experiment)
        analysis = analyse_experiment(experiment, runs, chosen)
        listing.print_analysis(analysis, args.plain)
        print(f"console logs: {logs}")
        shown.append((experiment, runs, analysis))
        status = plan.failures()
    if guest is not None:
        name = f"{campaign.name}-program" if campaign.locktorture else campaign.name
        program_status, tables = guest.measure(args, chosen, store, name, campaign.baseline)
        status = max(status, program_status)
        if tables is not None:
            shown += [(tables.experiment, tables.runs, a) for a in tables.analyses]
            combined = tables.combined
    page = args.report or store.path.parent / f"{file_stem(campaign.name)}.html"
    figures.write_report(shown, chosen, page, combined)
    return status
