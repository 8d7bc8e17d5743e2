"""What GCC said about a file that did not compile, as a person would quote it: the first
errors (file:line: message), and where the first is in a header of locklab's, the line of the
user's own file that led there: the #include that reached the header, or the line a note of the
same error points at (a macro the user's file defined first, say).

GCC's diagnostics (run with LC_ALL=C, so quoted in ASCII) look like:

    In file included from native/engine/worker_hot.h:10,
                     from native/engine/source_plugin/loop.c:15:
    native/include/locklab/kernel.h:146: error: "atomic_fetch_add" redefined [-Werror]
    In file included from /home/me/mylock.c:1,
                     from native/engine/source_plugin/loop.c:13:
    .../stdatomic.h:192: note: this is the location of the previous definition
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

_DIAGNOSTIC = re.compile(
    r"^(?P<file>[^\s:][^:]*):(?P<line>\d+)(?::\d+)?: (?P<kind>fatal error|error|warning|note): "
    r"(?P<message>.*)$"
)
_INCLUDED_FROM = re.compile(
    r"^(?:In file included from|\s+from) (?P<file>[^:]+):(?P<line>\d+)[:,]$"
)
# How many of a build's errors the message quotes; the build log keeps them all.
QUOTED_ERRORS = 3


@dataclass
class Diagnostic:
    text: str  # file:line[:column]: kind: message, as GCC printed it
    file: str
    line: int
    kind: str
    included_from: list[tuple[str, int]] = field(default_factory=list)
    notes: list[Diagnostic] = field(default_factory=list)


def diagnostics(output: str) -> list[Diagnostic]:
    """Errors and warnings in GCC's order, each with its include chain and its notes."""
    found: list[Diagnostic] = []
    chain: list[tuple[str, int]] = []
    for line in output.splitlines():
        included = _INCLUDED_FROM.match(line)
        if included:
            chain.append((included["file"], int(included["line"])))
            continue
        match = _DIAGNOSTIC.match(line)
        if match is None:
            continue
        diagnostic = Diagnostic(line, match["file"], int(match["line"]), match["kind"], chain)
        chain = []
        if diagnostic.kind == "note":
            if found:
                found[-1].notes.append(diagnostic)
        else:
            found.append(diagnostic)
    return found


def _same_file(name: str, user_file: Path) -> bool:
    return Path(name).resolve() == user_file.resolve()


def line_that_led_there(error: Diagnostic, user_file: Path) -> int | None:
    """The line of `user_file` whose #include reached the error's file, or that one of the
    error's notes points at; None when the error is in the user's file or nothing leads there."""
    if _same_file(error.file, user_file):
        return None
    for diagnostic in (error, *error.notes):
        if diagnostic is not error and _same_file(diagnostic.file, user_file):
            return diagnostic.line
        for name, line in diagnostic.included_from:
            if _same_file(name, user_file):
                return line
    return None


def first_errors(output: str, user_file: Path | None = None, shown_as: str = "") -> list[str]:
    """The first errors of a failed compile, each one line, the user's file named `shown_as`
    (as the user typed it); the first says which line of `user_file` led into a header. Empty
    when GCC reported no error (a link or make failure)."""
    errors = [d for d in diagnostics(output) if "error" in d.kind]
    quoted = []
    for error in errors[:QUOTED_ERRORS]:
        shown = os.path.normpath(error.file)  # not native/engine/source_plugin/../worker_hot.h
        if user_file is not None and shown_as and _same_file(error.file, user_file):
            shown = shown_as
        quoted.append(shown + error.text[len(error.file) :])
    if quoted and user_file is not None:
        led_there = line_that_led_there(errors[0], user_file)
        if led_there is not None:
            quoted[0] += f" (reached from {shown_as or user_file}:{led_there})"
    return quoted
