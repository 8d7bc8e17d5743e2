"""`locklab report` (one self-contained HTML page) and `locklab plot` (PNG and SVG figures)."""

from __future__ import annotations

import argparse
from pathlib import Path

from locklab.analysis.cells import Analysis, Settings, analyse_experiment
from locklab.cli.common import Commands, settings, statistics_options
from locklab.errors import LocklabError
from locklab.printable import printable
from locklab.store import Experiment, Run, Store


def register(commands: Commands) -> None:
    report = commands.add_parser("report", help="one self-contained interactive HTML page")
    report.add_argument("experiments", metavar="EXP", nargs="*", help="experiments, side by side")
    report.add_argument("--latest", action="store_true", help="the newest experiment")
    report.add_argument("--output", "-o", type=Path, default=Path("report.html"))
    report.add_argument("--small", action="store_true",
                        help="a small page that loads plotly's library from a file beside it "
                             "(written there once) instead of one self-contained page of about "
                             "5 MB, the one to attach")  # fmt: skip
    statistics_options(report)
    report.set_defaults(handler=cmd_report)

    plot = commands.add_parser("plot", help="the main figures as PNG and SVG")
    plot.add_argument("experiment", metavar="EXP")
    plot.add_argument("--output", "-o", type=Path, default=Path("figures"), help="directory")
    statistics_options(plot)
    plot.set_defaults(handler=cmd_plot)


def cmd_report(args: argparse.Namespace) -> int:
    chosen = settings(args)
    store = Store(Path(args.store), create=False, read_only=True)
    refs = list(args.experiments)
    if args.latest:
        newest = store.experiments()
        if not newest:
            raise LocklabError(f"no experiment in {store.path}")
        refs.append(str(newest[-1].id))
    if not refs:
        raise LocklabError("report: name one or more experiments, or give --latest")
    analysed = []
    for experiment in [store.experiment(ref) for ref in refs]:
        runs = store.runs(experiment)
        analysed.append((experiment, runs, analyse_experiment(experiment, runs, chosen)))
    write_report(analysed, chosen, args.output, small=args.small)
    return 0


def write_report(
    analysed: list[tuple[Experiment, list[Run], Analysis]],
    chosen: Settings,
    path: Path,
    combined: Analysis | None = None,
    small: bool = False,
) -> None:
    """The page of these experiments, from their one analysis each (and `combined`, the one
    table of several places, first); `small`: with plotly's library in a file beside it."""
    from locklab.output import report  # plotly is slow to import: only here

    page = report.render(analysed, chosen, combined, small)
    try:
        path.write_text(page)
        library = path.parent / report.PLOTLY_JS
        if small and not library.exists():
            from plotly.offline import get_plotlyjs

            library.write_text(get_plotlyjs())
    except OSError as error:
        raise LocklabError(f"{path}: cannot write: {error.strerror}") from None
    print(f"report: {printable(str(path.resolve()))}")


def cmd_plot(args: argparse.Namespace) -> int:
    from locklab.output import plot  # matplotlib is slow to import: only here

    chosen = settings(args)
    store = Store(Path(args.store), create=False, read_only=True)
    experiment = store.experiment(args.experiment)
    analysis = analyse_experiment(experiment, store.runs(experiment), chosen)
    try:
        written = plot.write_figures(analysis, experiment.name, args.output)
    except OSError as error:
        raise LocklabError(f"{args.output}: cannot write: {error.strerror}") from None
    for path in written:
        print(path)
    return 0
