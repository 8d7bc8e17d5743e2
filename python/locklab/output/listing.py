"""What the command line prints besides tables: listings (locks, experiments), the table of an
analysis on stdout, and the tuner's choice. Every name in them is escaped for the terminal."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from locklab.analysis.cells import Analysis
from locklab.model.catalogue import Catalogue, LockInfo
from locklab.model.spec import ExperimentSpec
from locklab.output import table
from locklab.printable import printable
from locklab.run.adaptive import Completion
from locklab.run.tune import TuneResult
from locklab.store import Experiment


class _Listing(Table):
    """A plain rich table whose cells are escaped for the terminal (names are user input)."""

    def add_row(self, *cells: Any, **options: Any) -> None:  # type: ignore[override]
        super().add_row(*(printable(str(cell)) for cell in cells), **options)


def listing(*titles: str) -> Table:
    found = _Listing(box=None, pad_edge=False, header_style="bold")
    for title in titles:
        found.add_column(title, overflow="fold")
    return found


def stdout_console(width: int = 240) -> Console:
    """Color and the terminal's width on a terminal (at most `width`); into a file or pipe, no
    color and lines of `width` (long enough by default that nothing wraps)."""
    console = Console(highlight=False, markup=False)
    if not console.is_terminal:
        return Console(highlight=False, markup=False, width=width, no_color=True)
    if console.width > width:
        console = Console(highlight=False, markup=False, width=width)
    return console


def stderr_console() -> Console:
    return Console(stderr=True, highlight=False, markup=False, soft_wrap=True)


def print_analysis(analysis: Analysis, plain: bool, wide: bool = False) -> None:
    console = Console(highlight=False, markup=False, soft_wrap=True)
    width = None if wide else table_width(console)
    if plain or not console.is_terminal:
        sys.stdout.write(table.plain(analysis, width))
    else:
        console.print(table.colored(analysis, width), end="")


def table_width(console: Console) -> int | None:
    """The terminal's width; outside a terminal $COLUMNS where it is set, else None: a pipe
    to grep or a script gets each row on one line (export --format text is the mail's)."""
    if console.is_terminal:
        return console.width
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else None


LIST_WIDTH = 100  # `locklab list` fits a 100-column terminal or mail


def locks(catalogue: Catalogue) -> Table:
    """One line (folded within LIST_WIDTH) per lock; `locklab list LOCK` has the details."""
    found = listing("lock", "family", "summary", "tunables")
    # Names whole; the summary gets the room, so that a long token of it is not cut mid-word.
    for column in found.columns[:2]:
        column.no_wrap = True
    found.columns[2].ratio, found.columns[3].ratio = 3, 2
    found.expand = True
    for lock in catalogue.values():
        tunables = ", ".join(t.name for t in lock.tunables)
        found.add_row(lock.name, lock.family, lock.summary, tunables or "-")
    return found


def lock_lines(lock: LockInfo) -> list[str]:
    """Everything the catalogue says of one lock: what it is, where it comes from (paper, mail
    or the kernel revision it follows), its flags, old names and tunables."""
    lines = [
        f"{lock.name}: {lock.summary}",
        f"  family:   {lock.family}",
        f"  source:   {lock.source}",
        f"  flags:    {', '.join(lock.flags) or '-'}",
    ]
    if lock.aliases:
        lines.append(f"  also:     {', '.join(lock.aliases)} (old names)")
    if not lock.tunables:
        lines.append("  tunables: none")
    for tunable in lock.tunables:
        if tunable.choices:
            values = "one of " + ", ".join(tunable.choices)
        else:
            values = f"from {tunable.minimum} to {tunable.maximum}"
        lines.append(f"  --param {tunable.name}={tunable.show(tunable.default)} ({values}): "
                     f"{tunable.meaning}")  # fmt: skip
    return [printable(line) for line in lines]


def locks_json(catalogue: Catalogue) -> dict:
    return {
        "locks": [
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
    }


def experiments(found: list[tuple[Experiment, Completion]]) -> Table:
    """One line per stored experiment, with how far it is."""
    rows = listing("id", "name", "created", "machine", "locks", "sweep", "runs", "state",
                   "origin")  # fmt: skip
    for experiment, progress in found:
        spec = experiment.spec
        sweep = " ".join(
            f"{axis}={','.join(map(str, values))}"
            for axis, values in spec.sweep.items()
            if len(values) > 1 or axis == "nwriters"
        )
        rows.add_row(
            str(experiment.id),
            experiment.name,
            experiment.created.replace("T", " "),
            # A simulated experiment ran on its profile, not on the host that computed it.
            f"{Path(spec.sim).stem} (simulated)" if spec.sim else experiment.host or "-",
            ",".join(v.label for v in spec.variants),
            sweep,
            f"{progress.finished}/{progress.planned}",
            progress.state,
            experiment.origin,
        )
    return rows


def tune_lines(
    result: TuneResult,
    spec: ExperimentSpec,
    lock: str,
    param: str,
    rounds_run: int,
    in_time: str | None = None,
) -> list[str]:
    """The chosen value (also in ns when it counts pauses), and the loss at each point
    against the best value there."""
    lines = [
        f"{lock}: chosen {param} = {result.value}"
        + (f" ({in_time})" if in_time else "")
        + ", worst case "
        f"{result.worst_relative:.1%} of the best value at each point "
        f"({len(result.evaluated)} values, {rounds_run} rounds measured now)",
        f"{'point':<40} {'best value':>10} {'chosen/best':>12} {'loss':>7}",
    ]
    for point, best in sorted(result.best_at.items()):
        workload = spec.workload_of(dict(point))
        shown = f"{workload.name} " if workload else ""
        shown += " ".join(f"{a}={v}" for a, v in point if len(spec.sweep[a]) > 1 or a == "nwriters")
        relative = result.relative[result.value, point]
        lines.append(f"{shown:<40} {best:>10} {relative:>12.1%} {1 - relative:>7.1%}")
    return lines
