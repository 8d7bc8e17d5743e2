"""`locklab campaign` of a places file (kind = "places", model/places.py): one set of patches
measured in the engine, in the simulator, in booted kernels and under a real program, and shown
in one table.

Everything is checked first (the file, the locks compiled from the tree, the program, the
kernels' parameters); then the kernels are built (cached), so no build runs beside a
measurement; then the engine, the simulator, the program and the kernels are measured, each
into an experiment of its own in the store ("NAME-engine", "NAME-sim", "NAME-program",
"NAME-kernel"). An interrupted engine, simulator or program part is resumed by running the
campaign again, as for any campaign.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from locklab import provenance
from locklab.analysis.cells import Analysis, Settings, analyse_experiment
from locklab.analysis.places import combine
from locklab.cli import figures
from locklab.cli.common import chosen_engine, fit_to_machine, fit_to_simulated, host
from locklab.cli.measure import KernelPlan, compile_variants, execute, plan_line
from locklab.errors import LocklabError
from locklab.model import places
from locklab.model.campaign import locate_error
from locklab.output import listing
from locklab.printable import file_stem, printable
from locklab.run import adaptive
from locklab.run.engine import Engine
from locklab.run.program import check_program
from locklab.store import Experiment, Run, Store

Measured = tuple[Experiment, list[Run], Analysis]


def _override(args: argparse.Namespace, campaign: places.PlacesCampaign) -> None:
    """--repeat for every place; --duration for the engine's runs and the kernels' torture
    (a program runs as long as it takes; the simulator's seconds are virtual, its own);
    --warmup for the engine."""
    for spec in (campaign.engine, campaign.sim, campaign.program):
        if spec is not None and args.repeat is not None:
            spec.repeat, spec.repeat_auto = args.repeat, False
    if campaign.engine is not None:
        if args.duration is not None:
            campaign.engine.duration_s = args.duration
        if args.warmup is not None:
            campaign.engine.warmup_s = args.warmup
    if campaign.kernel is not None:
        if args.repeat is not None:
            campaign.kernel.repeat = args.repeat
        if args.duration is not None:
            campaign.kernel.duration = args.duration


def run_places(args: argparse.Namespace, chosen: Settings) -> int:
    campaign = places.load(args.file, args.full)
    _override(args, campaign)
    engine = Engine(chosen_engine(args))
    specs = [(p, s) for p, s in (("engine", campaign.engine), ("sim", campaign.sim),
                                 ("program", campaign.program)) if s]  # fmt: skip
    try:
        for _, spec in specs:
            compile_variants(spec, engine)
            engine.check(spec)
        if campaign.program is not None:
            check_program(campaign.program)
    except LocklabError as error:
        raise locate_error(args.file, error) from None
    if campaign.engine is not None:
        fit_to_machine(campaign.engine, args.oversubscribe)
    if campaign.sim is not None:
        try:
            fit_to_simulated(campaign.sim)
        except LocklabError as error:
            raise locate_error(args.file, error) from None
    kernels = KernelPlan(campaign.kernel) if campaign.kernel is not None else None
    if args.dry_run:
        print(f'{args.file}: "{printable(campaign.name)}": {campaign.lock} with '
              f"{', '.join(campaign.labels)}, in {', '.join(campaign.places)}")  # fmt: skip
        for place, spec in specs:
            print(f"  {place}: {plan_line(spec)}")
        if kernels is not None:
            print(f"  kernel: {kernels.line()}")
        return 0
    if kernels is not None:
        kernels.build()
    store = Store(Path(args.store))
    status, measured = 0, {}
    for place, spec in specs:
        experiment = None if args.fresh else adaptive.unfinished(store, spec)
        if experiment is None:
            experiment = store.create_experiment(
                spec, host(), provenance.version(), provenance.commit()
            )
        hint = f"locklab campaign {args.file} --store {args.store}"
        code, result = execute(args, chosen, engine, store, experiment, hint, print_table=False)
        if result is None:
            return code  # interrupted: what is kept, and how to go on, is said
        status = max(status, code)
        measured[place] = (experiment, *result)
    if kernels is not None:
        experiment, logs = kernels.run(store)
        runs = store.runs(experiment)
        measured["kernel"] = (experiment, runs, analyse_experiment(experiment, runs, chosen))
        print(f"console logs: {logs}", file=sys.stderr)
        status = max(status, kernels.failures())
    shown = [(place, measured[place]) for place in places.PLACES if place in measured]
    emulated = frozenset({"kernel"} if kernels and kernels.emulated() else set())
    combined = combine([(place, analysis) for place, (_, _, analysis) in shown], emulated)
    listing.print_analysis(combined, args.plain, args.wide)
    page = args.report or store.path.parent / f"{file_stem(campaign.name)}.html"
    figures.write_report([m for _, m in shown], chosen, page, combined)
    return status
