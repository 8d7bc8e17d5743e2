"""A store's writes mirrored, as they are committed, to the locklab that started this one on a
remote host over ssh (`--hosts`): one JSON object per line on the file descriptor named by
LOCKLAB_MIRROR_FD, which the remote command line points at ssh's standard output.

So the runs reach the local store as each one finishes, not at the end: a host that drops
mid-sweep has given everything it finished. The remote store keeps its own copy, from which a
resume replays what the local store may have missed (`announce`: the experiment and every run
it has); the local side takes a run once (`run_identity`).

Events: {"event": "experiment", ...the experiment's columns, "planned": runs or null} and
{"event": "run", "experiment": UUID, ...the run's columns}.
"""

from __future__ import annotations

import json
import os
from typing import Any, TextIO

MIRROR_FD_ENV = "LOCKLAB_MIRROR_FD"

_sink: TextIO | None = None


def _stream() -> TextIO | None:
    """The mirror's file, opened once, or None when this locklab was not started to mirror."""
    global _sink
    if _sink is None:
        fd = os.environ.get(MIRROR_FD_ENV)
        if not fd or not fd.isdigit():
            return None
        _sink = os.fdopen(int(fd), "w", buffering=1, closefd=False)
    return _sink


def active() -> bool:
    return _stream() is not None


def emit(event: dict[str, Any]) -> None:
    """One event, flushed at once. A mirror whose reader is gone (the connection dropped) ends
    this locklab the way Ctrl-C does: every run is already in this host's own store."""
    stream = _stream()
    if stream is None:
        return
    try:
        stream.write(json.dumps(event, separators=(",", ":")) + "\n")
    except BrokenPipeError:
        raise KeyboardInterrupt from None


def parse(line: str) -> dict[str, Any] | None:
    """An event read back, or None for a line that is not one (the reader skips it)."""
    try:
        event = json.loads(line)
    except ValueError:
        return None
    if not isinstance(event, dict) or event.get("event") not in ("experiment", "run"):
        return None
    return event


def run_identity(event: dict[str, Any]) -> tuple[str, int, str, str]:
    """What tells one stored run from another: the same run replayed is taken once."""
    return (event["config_key"], event["repeat"], event["status"], event["finished"])
