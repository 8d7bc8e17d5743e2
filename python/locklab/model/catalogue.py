"""The locks an engine offers, as its ``--list --json`` reports them: name, family, summary,
source, flags and tunables, and the old names each lock is still known by.

Lock names follow one rule: lower-case words joined by '_' (``rtmutex_k0``, ``cna_v1``). A lock
renamed to follow it keeps its old name as an alias (``rtmutex-k0``), so that stored results and
campaign files that use it still run: looking a lock up by an alias finds the lock.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from locklab.errors import LocklabError


@dataclass(frozen=True)
class Tunable:
    name: str
    default: int
    minimum: int
    maximum: int
    meaning: str
    choices: tuple[str, ...] = ()  # names of minimum..maximum: wait=spin-then-park

    def show(self, value: int | str) -> str:
        """A value as a user writes it: the name of a choice, or the number."""
        if self.choices and isinstance(value, int) and self.minimum <= value <= self.maximum:
            return self.choices[value - self.minimum]
        return str(value)

    def check(self, lock: str, value: int | str) -> None:
        """Raise LocklabError unless `value` is a value of this tunable."""
        if isinstance(value, str):
            if value not in self.choices:
                known = ", ".join(self.choices) if self.choices else "integers"
                raise LocklabError(f"param {lock}.{self.name}: '{value}' is not one of {known}")
            return
        if not self.minimum <= value <= self.maximum:
            raise LocklabError(
                f"param {lock}.{self.name}={value} is out of range "
                f"[{self.minimum}, {self.maximum}] ({self.meaning})"
            )


@dataclass(frozen=True)
class LockInfo:
    name: str
    family: str
    summary: str
    source: str
    flags: tuple[str, ...]
    tunables: tuple[Tunable, ...]
    aliases: tuple[str, ...] = ()

    @property
    def reader_writer(self) -> bool:
        return "reader_writer" in self.flags

    def tunable(self, name: str) -> Tunable | None:
        return next((t for t in self.tunables if t.name == name), None)


class Catalogue(Mapping[str, LockInfo]):
    """Locks by name, in the engine's order; an old name (alias) finds its lock too, while
    iterating gives each lock once, by its name."""

    def __init__(self, locks: list[LockInfo]) -> None:
        self._locks = {lock.name: lock for lock in locks}
        self._aliases = {alias: lock.name for lock in locks for alias in lock.aliases}

    def __getitem__(self, name: str) -> LockInfo:
        return self._locks[self._aliases.get(name, name)]

    def __iter__(self) -> Iterator[str]:
        return iter(self._locks)

    def __len__(self) -> int:
        return len(self._locks)

    def __contains__(self, name: object) -> bool:
        return name in self._locks or name in self._aliases


def lock_info(lock: dict) -> LockInfo:
    """One entry of the engine's JSON catalogue."""
    tunables = tuple(
        Tunable(
            t["name"], t["default"], t["min"], t["max"], t["meaning"], tuple(t.get("choices", ()))
        )
        for t in lock["tunables"]
    )
    return LockInfo(
        lock["name"],
        lock["family"],
        lock["summary"],
        lock["source"],
        tuple(lock["flags"]),
        tunables,
        tuple(lock.get("aliases", ())),
    )
