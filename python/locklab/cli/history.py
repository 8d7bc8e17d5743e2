"""`locklab history`: a kernel: lock's throughput over a range of commits of the user's git
tree, one row per commit, each judged against the one before (run/history.py)."""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from locklab.analysis.stats import HIGHER, LOWER
from locklab.cli.commit_options import (
    commit_run_options,
    commit_run_settings,
    count,
    runs_place,
)
from locklab.cli.common import Commands
from locklab.errors import LocklabError
from locklab.run.history import HistoryRow, history


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "history", help="a kernel: lock over a range of commits of a kernel git tree, one row "
        "per commit, each judged against the one before",
    )  # fmt: skip
    parser.add_argument("--range", required=True, metavar="A..B",
                        help="the commits after A up to B (and A itself)")  # fmt: skip
    parser.add_argument(
        "--paths", nargs="+", metavar="PATH",
        help="only commits touching these (default: what the lock compiles)",
    )  # fmt: skip
    parser.add_argument("--repeat", type=count, default=3, help="runs per commit (default 3)")
    parser.add_argument("-o", "--output", type=Path, help="a chart of the throughput over the "
                        "commits (PNG or SVG, by the name's suffix)")  # fmt: skip
    parser.add_argument("--report", type=Path, metavar="FILE.html",
                        help="a page with the table and the chart, self-contained")  # fmt: skip
    commit_run_options(parser)
    parser.set_defaults(handler=cmd_history)


def cmd_history(args: argparse.Namespace) -> int:
    if args.output is not None and args.output.suffix not in (".png", ".svg"):
        raise LocklabError(f"-o {args.output}: name a .png or .svg file")
    if args.report is not None and args.report.suffix != ".html":
        raise LocklabError(f"--report {args.report}: name a .html file")
    settings, engine, store = commit_run_settings(args)
    rows = history(args.source, args.range, tuple(args.paths or ()), settings, args.repeat,
                   args.min_effect, engine, store,
                   lambda text: print(text, file=sys.stderr))  # fmt: skip
    where = runs_place(settings, args.sim)
    title = f"{args.lock} at {settings.threads} over {args.range}, {where}"
    table_text = "\n".join(table_lines(rows))
    print(title)
    print(table_text)
    if args.output is not None:
        from locklab.output.plot import write_history_figure  # matplotlib: only when drawn

        args.output.parent.mkdir(parents=True, exist_ok=True)
        write_history_figure(rows, title, args.output)
        print(f"chart: {args.output}")
    if args.report is not None:
        _write_report(rows, title, table_text, args.report)
        print(f"report: {args.report}")
    return 0


def _write_report(rows: list[HistoryRow], title: str, table_text: str, path: Path) -> None:
    import io

    from locklab.output.plot import write_history_figure
    from locklab.output.report import history_page

    chart = io.StringIO()
    write_history_figure(rows, title, chart, "svg")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(history_page(title, table_text, chart.getvalue()))


def table_lines(rows: list[HistoryRow]) -> list[str]:
    lines = [f"  {'commit':<13}{'subject':<52}{'kops/s':>10}{'sd':>8}{'runs':>5}"
             f"{'change':>9}  against the commit before"]  # fmt: skip
    for row in rows:
        figures = row.side.figures
        mean = f"{statistics.fmean(figures) / 1e3:,.0f}" if figures else "-"
        sd = f"{statistics.stdev(figures) / 1e3:,.0f}" if len(figures) > 1 else "-"
        change = f"{row.change_pct:+.1f}%" if row.change_pct is not None else ""
        verdict = {LOWER: "LOWER", HIGHER: "HIGHER"}.get(row.judgement, row.judgement)
        if row.side.failure:
            verdict = f"failed: {row.side.failure[:60]}"
        lines.append(f"  {row.commit[:12]:<13}{row.subject[:50]:<52}{mean:>10}{sd:>8}"
                     f"{len(figures):>5}{change:>9}  {verdict}")  # fmt: skip
    return lines
