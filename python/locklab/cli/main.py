"""The ``locklab`` command.

Every problem the user can fix ends as one line, ``locklab: error: ...``, and exit status 2;
a sweep in which some lock failed its runs (violation, deadlock) exits 1 after printing the
table of what did finish; an interrupted sweep exits 130 and keeps every finished run.

Each module of this package that defines ``register(commands)`` adds its commands: a new
command is one module here (its options, and a handler that parses, calls one function of the
layer below and prints) plus that function.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sqlite3
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

from locklab import __version__, provenance
from locklab.cli.common import EXIT_INTERNAL, EXIT_INTERRUPTED, Parser
from locklab.errors import LocklabError
from locklab.printable import printable
from locklab.run.lifetime import end_children_if_stopped, end_with_input, stopped_by_signals
from locklab.store import mirror

WHAT = (
    "locklab, a laboratory for lock algorithms: run a lock (yours, a patched kernel's, a "
    "library's) against baselines across contention levels, torture it, and get the table, "
    "the charts and a verdict on whether each difference is real or noise."
)
# Every command, in the group `locklab --help` lists it under, with one example of its use.
GROUPS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("measure", (
        ("run", "locklab run --lock pthread_mutex,ticket,mcs --nwriters 1,2"),
        ("campaign", "locklab campaign campaigns/seed-002-cna.toml"),
        ("tune", "locklab tune ticket_fixed_delay --param spinlock_delay --range 1:200"),
        ("calibrate", "locklab calibrate --lock ticket"),
    )),
    ("kernels", (
        ("kernel", "locklab kernel --patch k0 --patch k3=PATCH --type rtmutex_lock"),
        ("kernel-build", "locklab kernel build --patch k3=PATCH"),
        ("import-locktorture", "locklab import-locktorture k0=console-k0.log k3=console-k3.log"),
        ("bisect", "locklab bisect --source ~/linux --good v6.1 --bad HEAD --lock kernel:rtmutex "
                   "--sim x5-4"),
        ("history", "locklab history --source ~/linux --range v6.1..HEAD --lock kernel:mutex "
                    "-o history.png"),
    )),
    ("programs", (
        ("exec", "locklab exec --lock pthread_mutex,mcs --threads 1,2 -- "
                 "kccachetest wicked -th {threads} 10000"),
    )),
    ("results", (
        ("results", "locklab results"),
        ("table", "locklab table demo"),
        ("compare", "locklab compare 3 7"),
        ("export", "locklab export demo --format markdown"),
        ("report", "locklab report demo --output demo.html"),
        ("plot", "locklab plot demo --output figures/"),
        ("merge", "locklab merge other-machine/locklab-results"),
    )),
    ("machine", (
        ("doctor", "locklab doctor"),
        ("list", "locklab list"),
        ("topology", "locklab topology --numa-nodes 2"),
        ("machines", "locklab machines x5-4"),
    )),
)  # fmt: skip


def _overview(helps: dict[str, str]) -> str:
    """The commands in their groups, each with its one-line help and an example."""
    lines = ["commands:"]
    for group, commands in GROUPS:
        lines.append(f"  {group}:")
        for name, example in commands:
            lines.append(f"    {name:<19} {helps.get(name, '')}")
            lines.append(f"    {'':<19} e.g. {example}")
    lines.append("\n'locklab COMMAND --help' shows a command's options.")
    return "\n".join(lines)


def build_parser() -> Parser:
    parser = Parser(
        prog="locklab", description=textwrap.fill(WHAT, 88),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    parser.add_argument("--version", action="version", version=f"locklab {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser,
                                     metavar="COMMAND", help=argparse.SUPPRESS)  # fmt: skip
    for module in sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)])):
        if module.startswith("_") or module in ("main", "common"):
            continue
        register = getattr(importlib.import_module(f"locklab.cli.{module}"), "register", None)
        if register is not None:
            register(commands)
    helps = {action.dest: action.help or "" for action in commands._choices_actions}
    for _, group in GROUPS:
        for name, example in group:
            command = commands.choices[name]
            command.epilog = f"example: {example}"
    parser.epilog = _overview(helps)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """SIGTERM (kill) ends a sweep the way Ctrl-C does: finished runs are already stored."""
    with stopped_by_signals():
        try:
            return _main(argv)
        finally:
            end_children_if_stopped()


def _main(argv: Sequence[str] | None) -> int:
    if mirror.active():  # started by another locklab, on a host of its --hosts
        end_with_input()
    try:
        argv = list(sys.argv[1:] if argv is None else argv)
        if argv[:2] == ["kernel", "build"]:  # `locklab kernel build` is `kernel-build`
            argv = ["kernel-build", *argv[2:]]
        parser = build_parser()
        if not argv:  # bare `locklab`: what it can do, not an error about a missing argument
            parser.print_help()
            return 2
        args = parser.parse_args(argv)
        args.argv = argv  # what --hosts runs again on each host
        provenance.set_command(argv)
        return args.handler(args)
    except LocklabError as error:
        print(f"locklab: error: {printable(str(error))}", file=sys.stderr)
        for detail in error.details:
            print(f"  {printable(detail)}", file=sys.stderr)
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
        return EXIT_INTERNAL
