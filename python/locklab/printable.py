"""Text that came from the user (labels, names, paths) made safe to print on a terminal.

A label such as ``x\\x1b]0;pwned\\x07`` would retitle the terminal, clear it, or hide lines if it
were printed as it is. Control characters are shown escaped instead, the way Python writes them
in a string literal; everything else, accents and other scripts included, is left alone.
"""

from __future__ import annotations

import re
import unicodedata


def printable(text: str) -> str:
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() or char == " " else _escaped(char) for char in text)


def _escaped(char: str) -> str:
    if unicodedata.category(char) == "Zs":  # a non-breaking or other space: harmless
        return char
    return repr(char)[1:-1] if char not in "'\"" else char


def file_stem(name: str) -> str:
    """A file name made from a user's name for something: letters, digits, '.', '_' and '-'
    kept, every other run of characters (slashes, spaces, control characters) one '-'."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "experiment"
