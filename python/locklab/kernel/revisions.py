"""Revisions of the user's own kernel git tree as the trees kernel: locks are compiled from:
`--source DIR --rev LABEL=REV`, or `rev = "..."` in a campaign's variant.

A revision is read with git itself, never through the user's checkout: `git archive` of the
files the build compiles (from_source.TREE_PARTS) into build/revisions/KEY/, so the checkout,
its index, its branches and its stash are never written. KEY is the git object ids of those
parts at that revision, so two revisions whose locking files are identical share one tree,
and so one build.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

from locklab.errors import LocklabError

ROOT = Path(__file__).resolve().parents[3]
REVISIONS = ROOT / "build" / "revisions"
INDEX = "revision.json"


@dataclass(frozen=True)
class Revision:
    tree: Path  # the parts the build compiles, as they are at the revision
    commit: str
    subject: str
    asked: str  # the revision as given (a tag, a branch, a commit)
    repository: Path

    def describe(self) -> str:
        return f"{self.repository} {self.asked} ({self.commit[:12]} {self.subject!r})"


def _git(repository: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(repository), *args], capture_output=True,
                          text=True, check=False)  # fmt: skip


def git_tree(repository: Path | None) -> Path:
    """The top of the git working tree (or bare repository) `repository` names, or one line."""
    if repository is None:
        raise LocklabError("--rev needs --source DIR, a kernel git tree")
    if not repository.is_dir():
        raise LocklabError(f"--source {repository}: no such folder")
    inside = _git(repository, "rev-parse", "--is-inside-work-tree", "--is-bare-repository")
    if inside.returncode != 0:
        raise LocklabError(f"--source {repository}: not a git tree (--rev reads revisions "
                           "with git)")  # fmt: skip
    top = _git(repository, "rev-parse", "--show-toplevel")
    return Path(top.stdout.strip()) if top.returncode == 0 and top.stdout.strip() else repository


def commit_of(repository: Path, revision: str, given_as: str = "") -> str:
    """The commit a revision names, or one line saying it names none. `given_as` is the option
    as the user typed it (`--bad nosuch~3`, `--range a..nosuch`), so the line names it; by
    default `--rev REVISION`."""
    given_as = given_as or f"--rev {revision}"
    if not revision or revision.startswith("-"):
        raise LocklabError(f"{given_as}: {revision!r} is not a revision")
    found = _git(repository, "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}")
    if found.returncode != 0 or not found.stdout.strip():
        named = "" if given_as.endswith(f" {revision}") else f" {revision}"
        raise LocklabError(f"{given_as}: no such revision{named} in {repository}")
    return found.stdout.strip()


def subject_of(repository: Path, commit: str) -> str:
    return _git(repository, "log", "-1", "--format=%s", commit).stdout.strip()


def commits(repository: Path, *rev_list: str) -> list[tuple[str, str]]:
    """(commit, subject), oldest first, of `git rev-list ARGS`, or one line."""
    proc = _git(repository, "rev-list", "--reverse", "--format=%H %s", "--no-commit-header",
                *rev_list)  # fmt: skip
    if proc.returncode != 0:
        raise LocklabError(f"git rev-list {' '.join(rev_list)} failed: {proc.stderr.strip()[:200]}")
    return [(line[:40], line[41:]) for line in proc.stdout.splitlines() if line]


def commits_in(top: Path, range_text: str, paths: tuple[str, ...],
               what: str = "--range") -> list[tuple[str, str]]:  # fmt: skip
    """(commit, subject): the range's start, then each commit of A..B that touches `paths`."""
    start, dots, end = range_text.partition("..")
    if not dots or not start or not end:
        raise LocklabError(f"{what} {range_text!r}: give A..B (two revisions)")
    given_as = f"{what} {range_text}"
    first, last = commit_of(top, start, given_as), commit_of(top, end, given_as)
    later = commits(top, f"{first}..{last}", "--", *paths)
    if not later:
        raise LocklabError(f"{what} {range_text}: no commit in it touches "
                           f"{', '.join(paths)}")  # fmt: skip
    return [(first, subject_of(top, first)), *later]


def range_revisions(top: Path, range_text: str, parts: tuple[str, ...]) -> list[tuple[str, str]]:
    """--revs A..B as (label, commit): the range's start labelled as given, then each commit of
    the range that touches `parts`, labelled by its short hash."""
    found = commits_in(top, range_text, parts, "--revs")
    start = range_text.partition("..")[0]
    labels = [start, *(_git(top, "rev-parse", "--short", commit).stdout.strip()
                       for commit, _ in found[1:])]  # fmt: skip
    return [(label, commit) for label, (commit, _) in zip(labels, found, strict=True)]


def is_ancestor(repository: Path, older: str, newer: str) -> bool:
    return _git(repository, "merge-base", "--is-ancestor", older, newer).returncode == 0


def content_key(repository: Path, commit: str, parts: tuple[str, ...]) -> str:
    """The object ids of `parts` at `commit`: equal for revisions that do not change them."""
    ids = []
    for part in parts:
        found = _git(repository, "rev-parse", "--verify", "--quiet", f"{commit}:{part}")
        if found.returncode != 0:
            raise LocklabError(f"--rev {commit[:12]}: no {part} in {repository} at that "
                               "revision (not a kernel tree)")  # fmt: skip
        ids.append(f"{part}={found.stdout.strip()}")
    return hashlib.sha256("\n".join(ids).encode()).hexdigest()[:24]


def read_revision(repository: Path | None, revision: str, parts: tuple[str, ...]) -> Revision:
    """`parts` of `repository` at `revision`, exported once per content (cached); no parts:
    the whole tree, to build a kernel from (`locklab kernel --rev`)."""
    top = git_tree(repository)
    commit = commit_of(top, revision)
    key = content_key(top, commit, parts) if parts else whole_key(top, commit)
    tree = REVISIONS / key
    subject = subject_of(top, commit)
    if not (tree / INDEX).is_file():
        partial = tree.with_name(key + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        if parts:
            _extract_in_memory(top, commit, parts, partial, revision)
        else:
            _extract_streamed(top, commit, partial, revision)
        (partial / INDEX).write_text(json.dumps({"commit": commit, "subject": subject,
                                                 "key": key}, indent=2) + "\n")  # fmt: skip
        shutil.rmtree(tree, ignore_errors=True)
        partial.rename(tree)
    return Revision(tree, commit, subject, revision, top)


def changed_paths(repository: Path, older: str, newer: str) -> list[str] | None:
    """The files that differ between two commits (added, changed or removed), or None when git
    cannot tell (a commit no longer in the repository)."""
    proc = _git(repository, "diff", "--name-only", "--no-renames", "-z", older, newer)
    if proc.returncode != 0:
        return None
    return [name for name in proc.stdout.split("\0") if name]


def whole_key(top: Path, commit: str) -> str:
    """The whole tree's git object id: equal for commits with the same files."""
    found = _git(top, "rev-parse", "--verify", "--quiet", f"{commit}^{{tree}}")
    return "whole-" + found.stdout.strip()[:24]


def _archive_failed(revision: str, stderr: str) -> LocklabError:
    detail = stderr.strip().splitlines() or ["?"]
    return LocklabError(f"--rev {revision}: git archive failed: {detail[-1]}")


def _extract_in_memory(top: Path, commit: str, parts: tuple[str, ...], into: Path,
                       revision: str) -> None:  # fmt: skip
    archive = subprocess.run(["git", "-C", str(top), "archive", "--format=tar", commit, *parts],
                             capture_output=True, check=False)  # fmt: skip
    if archive.returncode != 0:
        raise _archive_failed(revision, archive.stderr.decode(errors="replace"))
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as bundle:
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        bundle.extractall(into, **safe)  # the filter where this Python has it


def _extract_streamed(top: Path, commit: str, into: Path, revision: str) -> None:
    """A whole kernel tree (over a gigabyte): piped from git archive into tar, never in memory."""
    archive = subprocess.Popen(["git", "-C", str(top), "archive", "--format=tar", commit],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    assert archive.stdout is not None and archive.stderr is not None
    untar = subprocess.run(["tar", "-x", "-C", str(into)], stdin=archive.stdout,
                           capture_output=True, text=True, check=False)  # fmt: skip
    archive.stdout.close()
    error = archive.stderr.read().decode(errors="replace")
    if untar.returncode != 0:  # first: a tar that stopped (no room) leaves git a broken pipe
        raise LocklabError(f"--rev {revision}: unpacking its tree failed: "
                           f"{(untar.stderr.strip().splitlines() or ['?'])[-1]}")  # fmt: skip
    if archive.wait() != 0:
        raise _archive_failed(revision, error)


def parse_rev_options(texts: list[str]) -> dict[str, str]:
    """Repeated --rev LABEL=REV: each label's revision; a label given twice is one line."""
    revisions: dict[str, str] = {}
    for text in texts:
        label, equals, revision = text.partition("=")
        if not label or not equals or not revision:
            raise LocklabError(f"--rev {text!r}: give LABEL=REV (a tag, branch or commit)")
        if label in revisions:
            raise LocklabError(f"--rev: label {label!r} given twice")
        revisions[label] = revision
    return revisions
