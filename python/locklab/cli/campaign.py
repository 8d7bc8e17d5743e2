"""`locklab campaign`: the experiment a TOML file describes (engine, kernel or places),
measured into the store, its table printed and its report written."""

from __future__ import annotations

import argparse
import shlex
import sys
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
    sched_option,
    settings,
    statistics_options,
)
from locklab.cli.host_plans import remote_command
from locklab.cli.hosts import hosts_options, measure_on_hosts
from locklab.cli.measure import KernelPlan, compile_variants, execute, plan_line
from locklab.errors import LocklabError
from locklab.kernel import campaign as kernel_campaign
from locklab.kernel.campaign import KernelCampaign
from locklab.model.campaign import campaign_hosts, campaign_kind, load_campaign, locate_error
from locklab.model.spec import (
    ExperimentSpec,
    default,
)
from locklab.model.values import PIN_MODES, validate_pin
from locklab.output import listing
from locklab.printable import file_stem, printable
from locklab.run import adaptive, settle
from locklab.run.engine import Engine
from locklab.run.ssh import check_aliases
from locklab.store import Experiment, Run, Store, mirror


def register(commands: Commands) -> None:
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
        "--no-settle",
        action="store_true",
        help="run the planned repeats only; by default, an inconclusive cell whose verdict asks "
        f"for at most {settle.FEW_RUNS_FACTOR}x the planned runs gets them, with its baseline's, "
        f"within {settle.TIME_SHARE * 100:.0f}%% of the planned runs' time again",
    )
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
    sched_option(campaign)
    scale = campaign.add_argument_group("override the file (a quick check, a placement)")
    scale.add_argument("--repeat", type=int, help="runs per cell")
    scale.add_argument("--duration", type=number, help="measured seconds per run")
    scale.add_argument("--warmup", type=number, help="seconds discarded before measuring")
    scale.add_argument(
        "--pin", help=f"where the threads run: {' | '.join(PIN_MODES)} | CPU list (docs/engine.md)"
    )
    hosts_options(campaign)
    campaign.set_defaults(handler=cmd_campaign)  # fmt: skip


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
    spec = load_campaign(args.file, args.full, args.sim, args.sched)
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
    if spec.sim:  # a simulated profile's CPUs first, pinned ones too: the engine's check
        fit_to_simulated(spec)  # below runs the first point, and would describe this host
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
    status, measured = execute(args, chosen, engine, store, experiment, campaign_rerun(args),
                               settle_cells=not args.no_settle)  # fmt: skip
    if measured is not None:  # the table is out; the charts go with it, from the same analysis
        page = args.report or store.path.parent / f"{file_stem(experiment.name)}.html"
        figures.write_report([(experiment, *measured)], chosen, page)
    return status


def campaign_rerun(args: argparse.Namespace) -> str:
    """The command that resumes this campaign's experiment: the file and every option that
    changes its plan, since a rerun resumes only an experiment of the very same plan."""
    plan = [f"--{name}={value}" for name in ("sim", "sched", "repeat", "duration", "warmup", "pin")
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
            args.repeat or program.repeat or campaign.repeat, default(ExperimentSpec, "seed"),
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
        listing.print_analysis(analysis, args.plain, args.wide)
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
