"""Which locklab produced a result: its version and, in a git checkout, its commit."""

from __future__ import annotations

import functools
import os
import shlex
import subprocess
from pathlib import Path

from locklab import __version__

# A copy shipped to a host (--hosts) has no git history: the shipping locklab names its commit.
COMMIT_ENV = "LOCKLAB_COMMIT"

# The command line this process was started with (cli/main.py sets it), kept with what it stores.
_command: list[str] = []


def set_command(argv: list[str]) -> None:
    _command[:] = argv


def command() -> str:
    """`locklab ARGS...` as it was typed, quoted for a shell; "" outside the command line."""
    return shlex.join(["locklab", *_command]) if _command else ""


@functools.cache
def commit() -> str | None:
    """``git describe --always --dirty`` of the checkout this package runs from, if any."""
    if os.environ.get(COMMIT_ENV):
        return os.environ[COMMIT_ENV]
    try:
        proc = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def version() -> str:
    return __version__
