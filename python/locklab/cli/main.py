"""The ``locklab`` command.

Every problem the user can fix ends as one line, ``locklab: error: ...``, and exit status 2;
a sweep in which some lock failed its runs (violation, deadlock) exits 1 after printing the
table of what did finish; an interrupted sweep exits 130 and keeps every finished run.

Each module of this package that defines ``register(commands)`` adds its commands: a new
command is one module here (its options, and a handler that parses, calls one function of the
layer below and prints) plus that function.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import signal
import sqlite3
import sys
from collections.abc import Sequence
from types import FrameType

from locklab import __version__, cli
from locklab.cli.common import EXIT_INTERRUPTED, Parser
from locklab.errors import LocklabError
from locklab.printable import printable


def build_parser() -> Parser:
    parser = Parser(prog="locklab", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--version", action="version", version=f"locklab {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for module in sorted(m.name for m in pkgutil.iter_modules(cli.__path__)):
        if module.startswith("_") or module in ("main", "common"):
            continue
        register = getattr(importlib.import_module(f"locklab.cli.{module}"), "register", None)
        if register is not None:
            register(commands)
    return parser


def _terminate(signum: int, frame: FrameType | None) -> None:
    """SIGTERM (kill) ends a sweep the way Ctrl-C does: finished runs are already stored."""
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _terminate)
    try:
        argv = list(sys.argv[1:] if argv is None else argv)
        if argv[:2] == ["kernel", "build"]:  # `locklab kernel build` is `kernel-build`
            argv = ["kernel-build", *argv[2:]]
        args = build_parser().parse_args(argv)
        return args.handler(args)
    except LocklabError as error:
        print(f"locklab: error: {printable(str(error))}", file=sys.stderr)
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
        return 70
