"""The cells of a sweep: a variant (a lock with its params) at a point of the axes, and the key
its runs are stored under."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from locklab.errors import LocklabError
from locklab.model.catalogue import LockInfo
from locklab.model.values import ParamValue

Point = tuple[tuple[str, int], ...]  # a value of every axis, in AXES order


def threads_at(point: Point) -> int:
    """The threads a point runs: its writers and readers."""
    axes = dict(point)
    return axes.get("nwriters", 0) + axes.get("nreaders", 0)


@dataclass(frozen=True)
class Variant:
    """One column group of the table: a lock, maybe from a plugin, with tunables set."""

    label: str
    lock: str
    params: tuple[tuple[str, ParamValue], ...] = ()
    plugin: str | None = None
    # A kernel: lock's patch files, applied to the tree it is compiled from (plugin: the build).
    patches: tuple[str, ...] = ()
    # A kernel: lock's tree revision (--rev, a campaign's `rev`), as resolved when it was built:
    # "COMMIT SUBJECT"; "" for a tree that is not a git revision.
    revision: str = ""

    def describe(self) -> str:
        params = ",".join(f"{name}={value}" for name, value in self.params)
        return f"{self.lock}[{params}]" if params else self.lock


def validate_variant(variant: Variant, catalogue: Mapping[str, LockInfo]) -> None:
    """The variant's lock exists and its params are its tunables, within their ranges."""
    info = catalogue.get(variant.lock)
    if info is None:
        raise LocklabError(f"unknown lock '{variant.lock}' (see 'locklab list')")
    for name, value in variant.params:
        tunable = info.tunable(name)
        if tunable is None:
            known = ", ".join(t.name for t in info.tunables) or "none"
            raise LocklabError(
                f"param '{name}' is not a tunable of lock '{variant.lock}' (its params: {known})"
            )
        tunable.check(variant.lock, value)


@dataclass(frozen=True, order=True)
class ConfigKey:
    """What identifies a configuration's runs: the variant's label and the point of the axes.
    Stored as text, ``label|axis=value,...`` (str()), and read back by ``parse`` in the store
    only; everything else works on this object."""

    label: str
    point: Point

    def __str__(self) -> str:
        return self.label + "|" + ",".join(f"{a}={v}" for a, v in self.point)

    @classmethod
    def parse(cls, text: str) -> ConfigKey:
        label, _, axes = text.partition("|")
        pairs = (pair.split("=") for pair in axes.split(","))
        return cls(label, tuple((name, int(value)) for name, value in pairs))


@dataclass(frozen=True)
class Configuration:
    """One cell of the sweep: a variant at one point of every axis."""

    variant: Variant
    axes: Point

    @property
    def key(self) -> ConfigKey:
        return ConfigKey(self.variant.label, self.axes)

    def axis(self, name: str) -> int:
        return dict(self.axes)[name]


@dataclass(frozen=True)
class Workload:
    """A named point of some axes, like seed 004's "load" (hold 2 us, gap 2 us): the sweep runs
    at each workload instead of crossing those axes' values with each other."""

    name: str
    axes: tuple[tuple[str, int], ...]

    def describe(self) -> str:
        return ", ".join(f"{axis}={value}" for axis, value in self.axes)
