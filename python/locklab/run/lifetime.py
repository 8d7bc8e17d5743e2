"""Children that die with locklab: the engine, a program under a lock, a booted kernel.

Killed, even by SIGKILL, locklab must not leave any of them spinning on the CPUs it measured.
Stopped (Ctrl-C, SIGTERM), it stops at once, or, should Python lose the interrupt, when the
engine run, program run or kernel boot under way ends, and leaves no child of its own in its
process group (Linux: read from /proc).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
EXIT_PARENT_GONE = 128 + signal.SIGKILL  # as if the death signal had come
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
TERM_GRACE_S = 1.0  # for a child to end on SIGTERM (make ends its jobs) before SIGKILL
REAP_WAIT_S = 5.0  # for a killed child to be reaped; one stuck in the kernel is left to init

_stop_asked = False  # set only by the handler, which runs in the main thread
_holding_stops = False  # inside holding_stops()


@contextlib.contextmanager
def stopped_by_signals() -> Iterator[None]:
    """While inside, Ctrl-C and SIGTERM raise KeyboardInterrupt and are remembered.

    Python raises the interrupt at the next instruction it runs, and where that is in a hook
    that cannot raise (the logging module's after-fork hook, run each time a child starts), it
    prints "Exception ignored" and goes on: a tune so interrupted once ran to its end. The
    places that run the engine, a program or a kernel ask raise_if_stopped() once the child is
    started or done, so such a lost interrupt costs one run at most."""
    global _stop_asked
    _stop_asked = False
    before = {number: signal.signal(number, _stop) for number in STOP_SIGNALS}
    try:
        yield
    finally:
        for number, handler in reversed(before.items()):
            if handler is not None:  # None: installed outside Python, which cannot restore it
                signal.signal(number, handler)
        _stop_asked = False


def _in_finalizer(frame: FrameType | None) -> bool:
    """Whether the signal came inside a __del__ (a Popen's, collected): an exception raised
    there is printed by Python as "Exception ignored", with a traceback, and dropped."""
    while frame is not None:
        if frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


def _stop(signum: int, frame: FrameType | None) -> None:
    global _stop_asked
    _stop_asked = True  # a plain flag: a lock taken here could be the one the handler interrupted
    if not _holding_stops and not _in_finalizer(frame):
        raise KeyboardInterrupt  # else remembered: raise_if_stopped() raises it


@contextlib.contextmanager
def holding_stops() -> Iterator[None]:
    """While inside, a stop signal is remembered, not raised: a child started inside is in the
    caller's hands, to be killed, before raise_if_stopped() raises it. (Raised inside Popen,
    after the fork, the interrupt left the child to the death signal, still running when
    locklab's exit status was already out.)"""
    global _holding_stops
    before, _holding_stops = _holding_stops, True
    try:
        yield
    finally:
        _holding_stops = before


def raise_if_stopped() -> None:
    """KeyboardInterrupt if a stop signal came, even one whose interrupt Python lost."""
    if _stop_asked:
        raise KeyboardInterrupt


def end_children_if_stopped() -> None:
    """Where locklab ends (cli.main): stopped, it leaves no child behind in its process group.
    Only there: inside a test's process, this would end the test's own children."""
    if _stop_asked:
        with holding_stops():  # a second Ctrl-C meanwhile is no traceback
            end_children()


def end_children() -> None:
    """Each child of locklab's still in its process group, ended and reaped. Stopped inside
    Popen, after the fork and before the exec, Python drops the child's handle: the child runs
    on, or, killed by its death signal, stays a zombie in the group after locklab's exit.
    SIGTERM first, so that a make ends its own jobs; SIGKILL for what is left. Children in
    sessions of their own (a program under a lock, a host's run and steps) have owners that
    end them."""
    group = os.getpgrp()
    left = _signalled(_children_in(group), signal.SIGTERM)
    left = _reaped(left, TERM_GRACE_S)
    _reaped(_signalled(left, signal.SIGKILL), REAP_WAIT_S)


def _signalled(pids: list[int], number: int) -> list[int]:
    """Those of `pids` that could be sent the signal (a zombie can, and ignores it)."""
    sent = []
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, number)
            sent.append(pid)
    return sent


def _reaped(pids: list[int], within_s: float) -> list[int]:
    """Those of `pids` still not ended after `within_s`; the others reaped."""
    left = list(pids)
    deadline = time.monotonic() + within_s
    while left:
        for pid in list(left):
            try:
                ended, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:  # reaped meanwhile, by its Popen in another thread
                ended = pid
            if ended:
                left.remove(pid)
        if not left or time.monotonic() >= deadline:
            break
        time.sleep(0.01)
    return left


def _children_in(group: int) -> list[int]:
    """This process's children in process group `group`, from /proc (none where there is none)."""
    me = os.getpid()
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:  # after the command's ")": state, parent, process group
            _, parent, pgrp = stat.read_text().rsplit(")", 1)[1].split()[:3]
        except (OSError, ValueError):  # ended meanwhile
            continue
        if int(parent) == me and int(pgrp) == group:
            found.append(int(stat.parent.name))
    return found


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
