"""An experiment: variants (a lock with its params) crossed with sweep axes, repeated.

The spec is what ``locklab run`` options and campaign files both become. It is validated against
the engine's catalogue before anything runs, so a typo costs one error line, not a sweep.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from locklab.errors import LocklabError
from locklab.kernel.params import TORTURE_TYPES_6_1
from locklab.model.catalogue import LockInfo
from locklab.model.cells import (
    Configuration,
    Point,
    Variant,
    Workload,
    threads_at,
    validate_variant,
)
from locklab.model.limits import (
    RUN_WATCHDOG_S,
    SIM_DURATION_S,
    SIM_PIN,
    SIM_RUN_TIMEOUT_S,
    SIM_WARMUP_S,
    SIM_WATCHDOG_S,
    engine_time_limit_s,
)
from locklab.model.values import (
    AXES,
    AXIS_DEFAULTS,
    MAX_SEED,
    is_cpu_list,
    parse_int_list,
    validate_axis,
    validate_label,
    validate_pin,
    validate_seconds,
)

# The torture types whose delays the engine draws (--torture-delays), Linux 6.1's.
TORTURE_DELAY_TYPES = TORTURE_TYPES_6_1


def run_times(
    simulated: bool,
    measured: type,
    duration: float | None = None,
    warmup: float | None = None,
    pin: str | None = None,
) -> tuple[float, float, str]:
    """Duration, warm-up and pinning: those given, else the defaults of a simulated run or of a
    measured one, as the dataclass `measured` declares them (a sweep's spec, a tuning's)."""
    base = (
        (SIM_DURATION_S, SIM_WARMUP_S, SIM_PIN) if simulated
        else tuple(default(measured, key) for key in ("duration_s", "warmup_s", "pin"))
    )  # fmt: skip
    return (
        base[0] if duration is None else duration,
        base[1] if warmup is None else warmup,
        pin or base[2],
    )


# One run in a booted kernel (source "guest"), for estimates: a small kernel's boot and
# power-off under emulation take 2 to 5 s on 2 cores, with checkers built in 10 to 20 s.
GUEST_RUN_ESTIMATE_S = 10.0


@dataclass(frozen=True)
class AutoRepeat:
    """The defaults of ``--repeat auto``: from min_repeat runs per cell to max_repeat, stopping
    once a cell is settled (see run/adaptive.py) or within `precision` of its mean."""

    min_repeat: int = 2
    max_repeat: int = 10
    precision: float = 0.02


def default(kind: type, name: str) -> Any:
    """The default of one field of a dataclass: the one place each default is written."""
    return next(f.default for f in fields(kind) if f.name == name)


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
    # --torture-delays: hold times drawn as Linux 6.1's locktorture does for this torture type
    torture_delays: str = ""
    numa_remote_ns: int = 0  # --numa-remote-ns: emulated cost of a cross-node hand-over
    workloads: list[Workload] = field(default_factory=list)
    # --repeat auto: `repeat` is then the most runs per cell; see adaptive.py.
    repeat_auto: bool = False
    min_repeat: int = AutoRepeat.min_repeat
    precision: float = AutoRepeat.precision
    # Where the runs come from: "locklab-bench", or "locktorture" for imported kernel logs.
    source: str = "locklab-bench"
    # A real program instead of the engine (`locklab exec`, source "program"): its argv, with
    # {threads} standing for the nwriters axis; its throughput is the number the last match
    # of `program_metric` captures, or with `program_metric` = "time", `program_work` (a
    # product like "{threads}*400000") divided by its wall time.
    program: list[str] = field(default_factory=list)
    program_metric: str = "time"
    program_work: str = "1"
    program_timeout_s: float = 600.0
    # source "guest": the program runs inside each variant's kernel (its plugin: the image),
    # booted in QEMU with this many vCPUs, this accelerator, vCPUs pinned to these host CPUs
    # ("": not pinned); each run's console is kept in guest_logs.
    guest_cpus: int = 2
    guest_accel: str = "auto"
    guest_pin: str = ""
    guest_logs: str = ""
    # The tree kernel: locks are compiled from (a campaign's `source`; "": Debian's 6.1).
    kernel_tree: str = ""
    # False: --no-checks, the bare loop's section alone (no owner word, no hand-over test).
    checks: bool = True
    # --sim: the simulated machine's name (or profile path) and its flat description, kept
    # whole so that a stored experiment replays on the machine it ran on.
    sim: str = ""
    sim_machine: str = ""

    def __post_init__(self) -> None:
        for axis in AXES:
            self.sweep.setdefault(axis, [AXIS_DEFAULTS[axis]])
        if not self.baseline and self.variants:
            self.baseline = self.variants[0].label

    # -- derived -------------------------------------------------------------------------------
    def points(self) -> list[Point]:
        """Every point of the axes: the sweep's product, at each workload if there are any."""
        sweeps = [self.sweep]
        if self.workloads:
            sweeps = [
                {**self.sweep, **{axis: [value] for axis, value in w.axes}} for w in self.workloads
            ]
        points: dict[Point, None] = {}
        for sweep in sweeps:
            partial: list[Point] = [()]
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

    def usable_cpus(self, machine_cpus: int) -> int:
        """The CPUs this experiment's threads may run on: the machine's, or fewer when pinned
        to a CPU list."""
        if is_cpu_list(self.pin):
            return min(machine_cpus, len(set(parse_int_list("pin", self.pin))))
        return machine_cpus

    def fit_to_cpus(self, cpus: int) -> list[int]:
        """Drop the writer counts whose points run more threads (writers and readers) than
        `cpus`: the sweep a campaign runs unless oversubscription is asked for. Returns the
        dropped counts; one error line when none would be left."""
        crowded = {dict(point)["nwriters"] for point in self.points() if threads_at(point) > cpus}
        dropped = [n for n in self.sweep["nwriters"] if n in crowded]
        if dropped and len(dropped) == len(self.sweep["nwriters"]):
            raise LocklabError(
                f"every nwriters point runs more threads than the {cpus} CPUs here: "
                "--oversubscribe runs them (labelled oversubscribed)"
            )
        self.sweep["nwriters"] = [n for n in self.sweep["nwriters"] if n not in dropped]
        return dropped

    def row_axis(self) -> str:
        return next((axis for axis in AXES if len(self.sweep[axis]) > 1), "nwriters")

    def variant(self, label: str) -> Variant:
        return next(v for v in self.variants if v.label == label)

    def plugins(self) -> tuple[str, ...]:
        return tuple(sorted({v.plugin for v in self.variants if v.plugin}))

    def expected_run_s(self) -> float:
        """Rough wall time of one run, for the progress bar's ETA."""
        if self.source == "guest":  # a guest's boot and power-off under emulation, mostly
            return GUEST_RUN_ESTIMATE_S
        if self.sim:
            return 1.0
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
        args += ["--pin", self.pin, "--interval", _num(self.series_interval_s())]
        if self.long_hold_ms:
            args += ["--long-hold", str(self.long_hold_ms)]
        if self.stutter_s:
            args += ["--stutter", _num(self.stutter_s)]
        if self.numa_nodes:
            args += ["--numa-nodes", str(self.numa_nodes)]
        if self.torture_delays:
            args += ["--torture-delays", self.torture_delays]
        if self.numa_remote_ns:
            args += ["--numa-remote-ns", str(self.numa_remote_ns)]
        if not self.checks:
            args += ["--no-checks"]
        # A different engine seed per repeat: random choices (backoff, long holds) must not be
        # the same sequence in every repeat, or the repeats are not independent.
        args += ["--seed", str(self.seed * 1000 + repeat + 1)]
        args += ["--watchdog", _num(self.watchdog_s())]
        return args

    def watchdog_s(self) -> float:
        """The engine's --watchdog for this spec's runs: virtual seconds when simulated."""
        return SIM_WATCHDOG_S if self.sim else RUN_WATCHDOG_S

    def series_interval_s(self) -> float:
        """The throughput series' period: a simulated run lasts milliseconds, so at most half
        of it, that the series has points to judge the steady state by."""
        if not self.sim:
            return self.interval_s
        return min(self.interval_s, max(self.duration_s / 2, 0.001))

    def run_timeout_s(self) -> float:
        if self.program:
            return self.program_timeout_s
        if self.sim:
            return SIM_RUN_TIMEOUT_S
        return engine_time_limit_s(self.warmup_s, self.duration_s, self.watchdog_s())

    # -- storage -------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        data = asdict(self)
        data["variants"] = [
            {
                "label": v.label,
                "lock": v.lock,
                "params": dict(v.params),
                "plugin": v.plugin,
                "patches": list(v.patches),
                "revision": v.revision,
            }
            for v in self.variants
        ]
        data["workloads"] = [{"name": w.name, **dict(w.axes)} for w in self.workloads]
        return data

    @classmethod
    def from_dict(cls, data: dict) -> ExperimentSpec:
        known = {f.name for f in fields(cls)}
        data = {key: value for key, value in data.items() if key in known}
        data["variants"] = [
            Variant(
                v["label"],
                v["lock"],
                tuple(v["params"].items()),
                v.get("plugin"),
                tuple(v.get("patches", ())),
                v.get("revision", ""),
            )
            for v in data["variants"]
        ]
        data["workloads"] = [
            Workload(w["name"], tuple((a, v) for a, v in w.items() if a != "name"))
            for w in data.get("workloads", [])
        ]
        return cls(**data)

    # -- validation ----------------------------------------------------------------------------
    def validate(self, catalogue: Mapping[str, LockInfo]) -> None:
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
            if self.source == "guest":
                if not variant.plugin or not Path(variant.plugin).is_file():
                    raise LocklabError(f"kernel {variant.label}: no image at {variant.plugin}")
            else:
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
        validate_pin(self.pin)
        if isinstance(self.seed, bool) or not 0 <= self.seed <= MAX_SEED:
            raise LocklabError(f"seed must be an integer from 0 to {MAX_SEED} (got {self.seed})")
        if isinstance(self.numa_nodes, bool) or not 0 <= self.numa_nodes <= 1024:
            raise LocklabError(f"numa_nodes must be from 0 to 1024 (got {self.numa_nodes})")
        self._validate_workload_emulation()
        if not self.checks and not self.program:
            busy = [axis for point in self.points() for axis, value in point
                    if axis != "nwriters" and value]  # fmt: skip
            if busy or self.torture_delays or self.long_hold_ms or self.numa_remote_ns:
                raise LocklabError(
                    "--no-checks measures the bare loop: writers only, without "
                    f"{(busy or ['--torture-delays, --long-hold or --numa-remote-ns'])[0]}"
                )
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

    def _validate_workload_emulation(self) -> None:
        """locktorture's delays replace the fixed hold; the remote cost needs pinned threads,
        or a thread's node is unknown. The engine refuses both too, but mid-sweep."""
        if self.torture_delays:
            if self.torture_delays not in TORTURE_DELAY_TYPES:
                raise LocklabError(
                    f"torture_delays: unknown type '{self.torture_delays}' "
                    f"(known: {', '.join(TORTURE_DELAY_TYPES)})"
                )
            if any(self.sweep["hold_ns"]) or self.long_hold_ms:
                raise LocklabError(
                    "torture_delays draws every hold time: drop hold_ns and long_hold_ms"
                )
        if isinstance(self.numa_remote_ns, bool) or not 0 <= self.numa_remote_ns <= 10**6:
            raise LocklabError(
                f"numa_remote_ns must be from 0 to 1000000 (got {self.numa_remote_ns})"
            )
        if self.numa_remote_ns and self.pin == "none":
            raise LocklabError("numa_remote_ns needs pinned threads (pin = compact, cores, ...)")


def _num(value: float) -> str:
    return f"{value:g}"
