"""A mailed patch series as patch files: an mbox of several messages (`git format-patch
--stdout`, `b4 am`'s .mbx, lore's t.mbox.gz) is split into its patches, in the series' order,
each a file of its own, so that everything that takes patch files (--patch, a campaign's
`patches`) takes a series too and applies it patch by patch, as `git am` would.

- Messages are split at mbox "From " lines; a message without a diff (the cover letter, a
  reply that quotes one) is left out, and so is any "Re:" reply.
- The order is the subjects' [PATCH n/m] numbers where every patch has one, else the mbox's.
- The patches are written once per mbox content, to build/series/KEY/NNNN-subject.patch,
  with series.json beside them naming the mbox and each patch's subject, which error lines
  and the provenance of what is built from them use.
"""

from __future__ import annotations

import email.errors
import email.header
import gzip
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from locklab.errors import LocklabError

ROOT = Path(__file__).resolve().parents[3]
SERIES = ROOT / "build" / "series"
INDEX = "series.json"
# An mbox separator: "From <sender or sha> <asctime date>".
_FROM_LINE = re.compile(r"^From \S+ +\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4}\s*$", re.M)
_DIFF = re.compile(r"^(?:diff --git |--- \S)", re.M)
_NUMBER = re.compile(r"\[[^\]]*?\b(\d+)/(\d+)\s*\]")


@dataclass(frozen=True)
class SeriesPatch:
    subject: str
    text: str
    number: int | None  # n of [PATCH n/m], when the subject has it


def read_text(path: Path) -> str:
    data = path.read_bytes()
    if path.suffix == ".gz":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as error:
            raise LocklabError(f"patch {path}: not a gzip file ({error})") from None
    return data.decode(errors="replace")


def _subject(message: str) -> str:
    """The Subject header, unfolded and decoded (RFC 2047), of a message's header block."""
    header = message.split("\n\n", 1)[0]
    found = re.search(r"^Subject:(.*(?:\n[ \t].*)*)", header, re.M | re.I)
    if not found:
        return ""
    raw = " ".join(part.strip() for part in found.group(1).splitlines())
    try:
        return str(email.header.make_header(email.header.decode_header(raw))).strip()
    except (UnicodeError, LookupError, email.errors.HeaderParseError):
        return raw.strip()


def messages(text: str) -> list[str]:
    starts = [match.start() for match in _FROM_LINE.finditer(text)]
    return [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]


def parse_series(text: str) -> list[SeriesPatch]:
    """The patches of an mbox, in the series' order; [] when it holds fewer than two."""
    found = []
    for message in messages(text):
        subject = _subject(message)
        if re.match(r"^\s*re:", subject, re.I) or not _DIFF.search(message):
            continue
        number = _NUMBER.search(subject)
        found.append(SeriesPatch(subject, message, int(number.group(1)) if number else None))
    if len(found) < 2:
        return []
    if all(patch.number is not None for patch in found):
        found.sort(key=lambda patch: patch.number or 0)
    return found


def _slug(subject: str) -> str:
    words = re.sub(r"^\s*\[[^\]]*\]\s*", "", subject)
    return re.sub(r"[^A-Za-z0-9]+", "-", words).strip("-")[:52] or "patch"


def split_series(path: Path) -> list[Path]:
    """`path` itself for a plain patch file, or a missing one (the caller says so); the
    patches of a series, written once per content, for an mbox of several."""
    if not path.is_file():
        return [path]
    text = read_text(path)
    if len(_FROM_LINE.findall(text)) < 2:
        return [path]
    patches = parse_series(text)
    if not patches:
        return [path]
    key = hashlib.sha256(text.encode()).hexdigest()[:16]
    folder = SERIES / key
    index = folder / INDEX
    if not index.is_file():
        partial = folder.with_name(key + ".partial")
        partial.mkdir(parents=True, exist_ok=True)
        entries = []
        for number, patch in enumerate(patches, 1):
            name = f"{number:04d}-{_slug(patch.subject)}.patch"
            (partial / name).write_text(patch.text)
            entries.append({"file": name, "subject": patch.subject})
        (partial / INDEX).write_text(
            json.dumps({"mbox": str(path.resolve()), "patches": entries}, indent=2) + "\n"
        )
        if folder.exists():  # another run wrote it meanwhile
            for leftover in partial.iterdir():
                leftover.unlink()
            partial.rmdir()
        else:
            partial.rename(folder)
    listed = json.loads(index.read_text())["patches"]
    return [folder / entry["file"] for entry in listed]


@dataclass(frozen=True)
class Place:
    """Where a patch file written by split_series() stands in its series."""

    number: int  # 1-based
    total: int
    mbox: str
    subject: str


def place_of(patch: Path) -> Place | None:
    """The series place of a patch split_series() wrote; None for any other patch file."""
    index = patch.parent / INDEX
    if patch.parent.parent != SERIES or not index.is_file():
        return None
    try:
        data = json.loads(index.read_text())
        names = [entry["file"] for entry in data["patches"]]
        number = names.index(patch.name)
        return Place(number + 1, len(names), str(data["mbox"]),
                     str(data["patches"][number]["subject"]))  # fmt: skip
    except (OSError, ValueError, KeyError, TypeError):
        return None


def display_name(patch: Path) -> str:
    """How a table and a provenance name a patch: a series' patch by its subject."""
    place = place_of(patch)
    return place.subject if place else patch.name


def describe(patch: Path) -> str:
    """How an error line names a patch: a series' patch by its mbox, place and subject."""
    place = place_of(patch)
    if place is None:
        return f"patch {patch}"
    return f"patch {place.number}/{place.total} of {place.mbox} ({place.subject!r})"
