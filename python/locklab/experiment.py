"""An experiment: variants (a lock with its params) crossed with sweep axes, repeated.

The spec is what ``locklab run`` options and campaign files both become. It is validated against
the engine's catalogue before anything runs, so a typo costs one error line, not a sweep.
"""

from __future__ import annotations

import math
import random
from dataclasses import asdict, dataclass, field, fields

from locklab.engine import LockInfo
from locklab.errors import LocklabError

# The axes a sweep may vary, in the order they key a configuration. The first one given more
# than one value becomes the rows of the table (seed 000: nwriters).
AXES: tuple[str, ...] = ("nwriters", "nreaders", "hold_ns", "gap_ns", "cs_lines")
AXIS_DEFAULTS: dict[str, int] = {
    "nwriters": 1,
    "nreaders": 0,
    "hold_ns": 0,
    "gap_ns": 0,
    "cs_lines": 0,
}
AXIS_LIMITS: dict[str, int] = {
    "nwriters": 4096,
    "nreaders": 4096,
    "hold_ns": 10**9,
    "gap_ns": 10**9,
    "cs_lines": 4096,
}
PIN_MODES = ("none", "compact", "scatter")
MAX_DURATION_S = 86400.0
# Each run's engine seed is seed * 1000 + repeat + 1 (engine_args), an unsigned 64-bit number.
MAX_SEED = (2**64 - 1 - 1000) // 1000
# The engine's deadlock watchdog for every run: no acquisition for this long ends the run.
RUN_WATCHDOG_S = 10.0


@dataclass(frozen=True)
class Variant:
    """One column group of the table: a lock, maybe from a plugin, with tunables set."""

    label: str
    lock: str
    params: tuple[tuple[str, int], ...] = ()
    plugin: str | None = None

    def describe(self) -> str:
        params = ",".join(f"{name}={value}" for name, value in self.params)
        return f"{self.lock}[{params}]" if params else self.lock


@dataclass(frozen=True)
class Configuration:
    """One cell of the sweep: a variant at one point of every axis."""

    variant: Variant
    axes: tuple[tuple[str, int], ...]

    @property
    def key(self) -> str:
        """Stable text key, the same in every store: label|axis=value,..."""
        return self.variant.label + "|" + ",".join(f"{a}={v}" for a, v in self.axes)

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


@dataclass
class ExperimentSpec:
    name: str
    variants: list[Variant]
    sweep: dict[str, list[int]]
    repeat: int = 5
    duration_s: float = 10.0
    warmup_s: float = 2.0
    baseline: str = ""
    pin: str = "none"
    seed: int = 1
    interval_s: float = 0.1
    # Fixed engine workload options, the same for every run (locktorture's names).
    long_hold_ms: int = 0
    stutter_s: float = 0.0
    numa_nodes: int = 0  # --numa-nodes: virtual NUMA nodes (0: the machine's own)
    workloads: list[Workload] = field(default_factory=list)
    # --repeat auto: `repeat` is then the most runs per cell; see adaptive.py.
    repeat_auto: bool = False
    min_repeat: int = 2
    precision: float = 0.02
    # Where the runs come from: "locklab-bench", or "locktorture" for imported kernel logs.
    source: str = "locklab-bench"

    def __post_init__(self) -> None:
        for axis in AXES:
            self.sweep.setdefault(axis, [AXIS_DEFAULTS[axis]])
        if not self.baseline and self.variants:
            self.baseline = self.variants[0].label

    # -- derived -------------------------------------------------------------------------------
    def points(self) -> list[tuple[tuple[str, int], ...]]:
        """Every point of the axes: the sweep's product, at each workload if there are any."""
        sweeps = [self.sweep]
        if self.workloads:
            sweeps = [
                {**self.sweep, **{axis: [value] for axis, value in w.axes}} for w in self.workloads
            ]
        points: dict[tuple[tuple[str, int], ...], None] = {}
        for sweep in sweeps:
            partial: list[tuple[tuple[str, int], ...]] = [()]
            for axis in AXES:
                partial = [(*point, (axis, value)) for point in partial for value in sweep[axis]]
            points.update(dict.fromkeys(partial))
        return list(points)

    def configurations(self) -> list[Configuration]:
        points = self.points()
        return [Configuration(variant, point) for variant in self.variants for point in points]

    def workload_of(self, fixed: dict[str, int]) -> Workload | None:
        return next((w for w in self.workloads if all(fixed.get(a) == v for a, v in w.axes)), None)

    def schedule(self) -> list[tuple[Configuration, int]]:
        """Every (configuration, repeat) in the order to run them: repeat rounds, each a fresh
        seeded shuffle of all configurations, so slow drift of the machine spreads evenly over
        locks and thread counts instead of biasing whichever ran last."""
        rng = random.Random(self.seed)
        order: list[tuple[Configuration, int]] = []
        for repeat in range(self.repeat):
            round_ = self.configurations()
            rng.shuffle(round_)
            order += [(config, repeat) for config in round_]
        return order

    def row_axis(self) -> str:
        return next((axis for axis in AXES if len(self.sweep[axis]) > 1), "nwriters")

    def variant(self, label: str) -> Variant:
        return next(v for v in self.variants if v.label == label)

    def plugins(self) -> tuple[str, ...]:
        return tuple(sorted({v.plugin for v in self.variants if v.plugin}))

    def expected_run_s(self) -> float:
        """Rough wall time of one run, for the progress bar's ETA."""
        return self.warmup_s + self.duration_s + 0.1

    def engine_args(self, config: Configuration, repeat: int) -> list[str]:
        variant = config.variant
        args: list[str] = []
        if variant.plugin:
            args += ["--plugin", variant.plugin]
        args += ["--lock", variant.lock]
        for name, value in variant.params:
            args += ["--param", f"{name}={value}"]
        for axis, value in config.axes:
            args += [f"--{axis.replace('_', '-')}", str(value)]
        args += ["--duration", _num(self.duration_s), "--warmup", _num(self.warmup_s)]
        args += ["--pin", self.pin, "--interval", _num(self.interval_s)]
        if self.long_hold_ms:
            args += ["--long-hold", str(self.long_hold_ms)]
        if self.stutter_s:
            args += ["--stutter", _num(self.stutter_s)]
        if self.numa_nodes:
            args += ["--numa-nodes", str(self.numa_nodes)]
        # A different engine seed per repeat: random choices (backoff, long holds) must not be
        # the same sequence in every repeat, or the repeats are not independent.
        args += ["--seed", str(self.seed * 1000 + repeat + 1)]
        args += ["--watchdog", _num(RUN_WATCHDOG_S)]
        return args

    def run_timeout_s(self) -> float:
        from locklab.engine import RUN_TIMEOUT_MARGIN_S

        return self.warmup_s + self.duration_s + RUN_WATCHDOG_S + RUN_TIMEOUT_MARGIN_S

    # -- storage -------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        data = asdict(self)
        data["variants"] = [
            {"label": v.label, "lock": v.lock, "params": dict(v.params), "plugin": v.plugin}
            for v in self.variants
        ]
        data["workloads"] = [{"name": w.name, **dict(w.axes)} for w in self.workloads]
        return data

    @classmethod
    def from_dict(cls, data: dict) -> ExperimentSpec:
        known = {f.name for f in fields(cls)}
        data = {key: value for key, value in data.items() if key in known}
        data["variants"] = [
            Variant(v["label"], v["lock"], tuple(v["params"].items()), v.get("plugin"))
            for v in data["variants"]
        ]
        data["workloads"] = [
            Workload(w["name"], tuple((a, v) for a, v in w.items() if a != "name"))
            for w in data.get("workloads", [])
        ]
        return cls(**data)

    # -- validation ----------------------------------------------------------------------------
    def validate(self, catalogue: dict[str, LockInfo]) -> None:
        """Raise LocklabError with one line for the first thing wrong with this spec."""
        if not self.name.strip():
            raise LocklabError("the experiment needs a name")
        if not self.variants:
            raise LocklabError("no locks to run: give --lock or at least one [[variant]]")
        labels = [v.label for v in self.variants]
        duplicates = sorted({label for label in labels if labels.count(label) > 1})
        if duplicates:
            raise LocklabError(f"variant label '{duplicates[0]}' is used twice")
        for variant in self.variants:
            validate_label(variant.label)
            validate_variant(variant, catalogue)
        if self.baseline not in labels:
            raise LocklabError(
                f"baseline '{self.baseline}' is not one of the locks: {', '.join(labels)}"
            )
        for axis in AXES:
            validate_axis(axis, self.sweep[axis])
        if not isinstance(self.repeat, int) or not 1 <= self.repeat <= 1000:
            raise LocklabError(f"repeat must be an integer from 1 to 1000 (got {self.repeat})")
        if self.repeat_auto and not 2 <= self.min_repeat <= self.repeat:
            raise LocklabError(
                f"--repeat auto: need 2 <= min-repeat ({self.min_repeat}) <= max-repeat "
                f"({self.repeat})"
            )
        if not 0 < self.precision < 1:
            raise LocklabError(f"precision must be between 0 and 1 (got {self.precision})")
        validate_seconds("duration", self.duration_s, minimum=0.001)
        validate_seconds("warmup", self.warmup_s, minimum=0.0)
        validate_seconds("interval", self.interval_s, minimum=0.001)
        validate_seconds("stutter", self.stutter_s, minimum=0.0)
        if self.pin not in PIN_MODES and not _is_cpu_list(self.pin):
            raise LocklabError(
                f"pin must be none, compact, scatter or a CPU list like 0,2,4-7 (got '{self.pin}')"
            )
        if isinstance(self.seed, bool) or not 0 <= self.seed <= MAX_SEED:
            raise LocklabError(f"seed must be an integer from 0 to {MAX_SEED} (got {self.seed})")
        if isinstance(self.numa_nodes, bool) or not 0 <= self.numa_nodes <= 1024:
            raise LocklabError(f"numa_nodes must be from 0 to 1024 (got {self.numa_nodes})")
        names = [w.name for w in self.workloads]
        for workload in self.workloads:
            if not workload.name or names.count(workload.name) > 1:
                raise LocklabError(f"workload names must be unique and not empty: {names}")
            if not workload.axes:
                raise LocklabError(f"workload '{workload.name}' sets no axis")
            for axis, value in workload.axes:
                validate_axis(axis, [value])
        readers = [n for n in self.sweep["nreaders"] if n > 0]
        for variant in self.variants:
            if readers and not catalogue[variant.lock].reader_writer:
                raise LocklabError(f"nreaders: lock '{variant.lock}' is not a reader-writer lock")
        if min(self.sweep["nwriters"]) + min(self.sweep["nreaders"]) == 0:
            raise LocklabError("a run with no threads: nwriters + nreaders must be at least 1")


def validate_label(label: str) -> None:
    """A variant's label keys its runs in the store (label|axis=value,...)."""
    if not label or "|" in label:
        raise LocklabError(f"variant label '{label}' must be non-empty, without '|'")


def validate_variant(variant: Variant, catalogue: dict[str, LockInfo]) -> None:
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
        if not tunable.minimum <= value <= tunable.maximum:
            raise LocklabError(
                f"param {variant.lock}.{name}={value} is out of range "
                f"[{tunable.minimum}, {tunable.maximum}] ({tunable.meaning})"
            )


def validate_axis(axis: str, values: list[int]) -> None:
    if not values:
        raise LocklabError(f"{axis}: empty sweep, give at least one value")
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int):
            raise LocklabError(f"{axis}: '{value}' is not an integer")
        if not 0 <= value <= AXIS_LIMITS[axis]:
            raise LocklabError(f"{axis}: {value} is out of range [0, {AXIS_LIMITS[axis]}]")
    if len(set(values)) != len(values):
        raise LocklabError(f"{axis}: a value is given twice in {values}")


def validate_seconds(what: str, value: float, minimum: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise LocklabError(f"{what}: '{value}' is not a number of seconds")
    if value < 0:
        raise LocklabError(f"{what}: must not be negative (got {value:g})")
    if value < minimum:
        raise LocklabError(f"{what}: must be at least {minimum:g} s (got {value:g})")
    if value > MAX_DURATION_S:
        raise LocklabError(f"{what}: {value:g} s is more than a day")


# The most values one list may expand to: a sweep of more points than this is a typo, and a
# range is checked against it before it is built (1-1000000000 is not 4 GB of integers).
MAX_LIST_VALUES = 4096


def parse_int_list(axis: str, text: str) -> list[int]:
    """'1,2,4' or '1-4,8' (ranges inclusive) into a list of integers."""
    values: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            raise LocklabError(f"{axis}: empty value in '{text}'")
        low, dash, high = part.partition("-")
        try:
            if dash and low:
                first, last = int(low), int(high)
                if last < first:
                    raise LocklabError(f"{axis}: range '{part}' runs backwards")
                if len(values) + last - first + 1 > MAX_LIST_VALUES:
                    raise LocklabError(f"{axis}: '{text}' has more than {MAX_LIST_VALUES} values")
                values += range(first, last + 1)
            else:
                values.append(int(part))
        except ValueError:
            raise LocklabError(f"{axis}: '{part}' is not an integer or a range like 1-4") from None
    if len(values) > MAX_LIST_VALUES:
        raise LocklabError(f"{axis}: '{text}' has more than {MAX_LIST_VALUES} values")
    return values


def parse_param(text: str) -> tuple[str | None, str, int]:
    """'name=value' or 'lock.name=value' into (lock or None, name, value)."""
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise LocklabError(f"--param: expected NAME=VALUE or LOCK.NAME=VALUE, got '{text}'")
    lock, dot, bare = name.rpartition(".")
    try:
        number = int(value, 0)
    except ValueError:
        raise LocklabError(f"--param {name}: '{value}' is not an integer") from None
    return (lock if dot else None), bare, number


def _num(value: float) -> str:
    return f"{value:g}"


def _is_cpu_list(text: str) -> bool:
    try:
        parse_int_list("pin", text)
    except LocklabError:
        return False
    return True
