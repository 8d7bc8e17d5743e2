"""A benchmark whose child fails says so in one line, not a traceback: the command, its exit
status and the last line it printed, so that `make bench` stops with what to look at."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from locklab.cli.common import EXIT_INTERRUPTED, EXIT_RUN_FAILED
from locklab.errors import LocklabError

BUILD = Path(__file__).resolve().parent.parent / "build"


def run_main(main: Callable[[], int | None]) -> None:
    """Runs a benchmark's main() and exits with its status; a child that failed, ran past its
    time limit or could not start, or Ctrl-C, is one line on stderr and a non-zero status."""
    name = Path(sys.argv[0]).name
    try:
        status = main() or 0
    except subprocess.CalledProcessError as error:
        status = EXIT_RUN_FAILED
        said = _last_line(error.stderr) or _last_line(error.stdout)
        print(f"{name}: {_command(error.cmd)} exited {error.returncode}"
              + (f": {said}" if said else ""), file=sys.stderr)  # fmt: skip
    except subprocess.TimeoutExpired as error:
        status = EXIT_RUN_FAILED
        print(f"{name}: {_command(error.cmd)} ran past {error.timeout:.3g} s", file=sys.stderr)
    except LocklabError as error:  # locklab's own code, called by from_source.py
        status = EXIT_RUN_FAILED
        print(f"{name}: {error}", file=sys.stderr)
    except BrokenPipeError:  # `| head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = 0
    except OSError as error:
        status = EXIT_RUN_FAILED
        where = f"{error.filename}: " if error.filename else ""
        built = isinstance(error, FileNotFoundError) and str(error.filename).startswith(str(BUILD))
        hint = " (make bench builds it)" if built else ""
        print(f"{name}: {where}{error.strerror or error}{hint}", file=sys.stderr)
    except KeyboardInterrupt:
        status = EXIT_INTERRUPTED
        print(f"{name}: interrupted", file=sys.stderr)
    sys.exit(status)


def _command(command: object) -> str:
    if isinstance(command, list | tuple):
        return shlex.join(str(part) for part in command)
    return str(command)


def _last_line(output: str | bytes | None) -> str:
    if isinstance(output, bytes):
        output = output.decode(errors="replace")
    lines = (output or "").strip().splitlines()
    return lines[-1].strip() if lines else ""
