"""Children that die with locklab: the engine, a program under a lock, a booted kernel.

Killed, even by SIGKILL, locklab must not leave any of them spinning on the CPUs it measured.
"""

from __future__ import annotations

import ctypes
import functools
import os
import signal
import sys
import threading
from collections.abc import Callable

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
EXIT_PARENT_GONE = 128 + signal.SIGKILL  # as if the death signal had come


def die_with_locklab() -> Callable[[], None] | None:
    """A ``preexec_fn`` that has the child killed when this process dies (Linux; None elsewhere)."""
    if sys.platform != "linux":
        return None
    return functools.partial(_die_with, os.getpid())


def _die_with(parent_pid: int) -> None:
    """In the child, before exec. The death signal only covers a parent that dies after the prctl:
    had locklab died since the fork, the child has another parent already, so it leaves now.
    (Safe in a preexec_fn: while locklab starts a child, its one other thread, if any, is
    end_with_input's, asleep in read() and holding no lock. The hosts of --hosts, which run
    threads, start their commands without it, in sessions of their own.)"""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:
        os._exit(EXIT_PARENT_GONE)


def end_with_input() -> None:
    """A locklab started by another over ssh (--hosts) ends when its standard input does: when
    that locklab is interrupted, or the connection drops. It then stops as on Ctrl-C, keeping
    every finished run, instead of measuring for nobody. The reader thread sleeps in read(), on
    the descriptor itself: sys.stdin's buffer would hold a lock the interpreter's exit waits on."""

    def watch() -> None:
        while os.read(0, 4096):
            pass
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="end-with-input", daemon=True).start()
