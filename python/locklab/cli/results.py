"""Reading the store: `results`, `table`, `compare`, `export`, and `merge` from another one."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from locklab.analysis.cells import analyse_comparison, analyse_experiment
from locklab.cli.common import Commands, settings, statistics_options, store_option
from locklab.errors import LocklabError
from locklab.output import export, listing
from locklab.printable import printable
from locklab.run import adaptive
from locklab.store import Store


def register(commands: Commands) -> None:
    results = commands.add_parser("results", help="list the stored experiments")
    store_option(results)
    results.set_defaults(handler=cmd_results)

    show = commands.add_parser("table", help="print an experiment's table again")
    show.add_argument("experiment", metavar="EXP", help="experiment id or name")
    statistics_options(show)
    show.set_defaults(handler=cmd_table)

    compare = commands.add_parser("compare", help="compare two experiments, B against A")
    compare.add_argument("a", metavar="EXP_A")
    compare.add_argument("b", metavar="EXP_B")
    compare.add_argument("more", nargs="*", metavar="EXP", help="more, with --side-by-side")
    compare.add_argument(
        "--side-by-side", action="store_true",
        help="each experiment against its own baseline, laid side by side (as --hosts shows "
        "its hosts: the same variants on several machines), instead of B against A",
    )  # fmt: skip
    statistics_options(compare)
    compare.set_defaults(handler=cmd_compare)

    exports = commands.add_parser("export", help="export an experiment")
    exports.add_argument("experiment", metavar="EXP")
    exports.add_argument("--format", choices=export.FORMATS, default="csv")
    exports.add_argument("--output", "-o", type=Path, help="file to write (default stdout)")
    statistics_options(exports)
    exports.set_defaults(handler=cmd_export)

    merge = commands.add_parser("merge", help="import the experiments of another store")
    merge.add_argument(
        "other",
        type=Path,
        metavar="OTHER_STORE",
        help="a store directory or its locklab.db, copied from another machine",
    )
    store_option(merge)
    merge.set_defaults(handler=cmd_merge)  # fmt: skip


def _reader(args: argparse.Namespace) -> Store:
    return Store(Path(args.store), create=False, read_only=True)


def cmd_results(args: argparse.Namespace) -> int:
    store = _reader(args)
    found = [
        (e, adaptive.completion(e.spec, store.runs(e, with_results=False)))
        for e in store.experiments()
    ]
    listing.stdout_console().print(listing.experiments(found))
    return 0


def cmd_table(args: argparse.Namespace) -> int:
    store = _reader(args)
    experiment = store.experiment(args.experiment)
    analysis = analyse_experiment(experiment, store.runs(experiment), settings(args))
    listing.print_analysis(analysis, args.plain, args.wide)
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    store = _reader(args)
    if args.side_by_side:
        return _side_by_side(args, store)
    if args.more:
        raise LocklabError("compare: more than two experiments only with --side-by-side")
    a, b = store.experiment(args.a), store.experiment(args.b)
    analysis = analyse_comparison(a, store.runs(a), b, store.runs(b), settings(args))
    listing.print_analysis(analysis, args.plain, args.wide)
    return 0


def _side_by_side(args: argparse.Namespace, store: Store) -> int:
    """Each experiment's own table, then all of them as one: named by the host each was
    measured on (--hosts), else by the experiment's name."""
    from locklab.cli.hosts import side_by_side

    chosen = settings(args)
    analysed, hosts = [], True
    for ref in (args.a, args.b, *args.more):
        experiment = store.experiment(ref)
        facts = store.host_facts(experiment)
        name = facts[0] if facts else experiment.name
        hosts = hosts and facts is not None
        analysis = analyse_experiment(experiment, store.runs(experiment), chosen)
        listing.print_analysis(analysis, args.plain, args.wide)
        analysed.append((name.replace(" ", "_"), analysis))
    combined = side_by_side(analysed, "hosts" if hosts else "experiments")
    if combined is None:
        raise LocklabError("compare --side-by-side: give experiments from distinct hosts or "
                           "of distinct names, each sweeping one axis")  # fmt: skip
    print("\nside by side:")
    listing.print_analysis(combined, args.plain, args.wide)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    store = _reader(args)
    experiment = store.experiment(args.experiment)
    runs = store.runs(experiment)
    text = export.render(args.format, analyse_experiment(experiment, runs, settings(args)),
                         experiment, runs)  # fmt: skip
    if args.output:
        try:
            args.output.write_text(text)
        except OSError as error:
            raise LocklabError(f"{args.output}: cannot write: {error.strerror}") from None
    else:
        sys.stdout.write(text)
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
