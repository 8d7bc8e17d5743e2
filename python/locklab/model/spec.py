"""An experiment: variants (a lock with its params) crossed with sweep axes, repeated.

The spec is what ``locklab run`` options and campaign files both become. It is validated against
the engine's catalogue before anything runs, so a typo costs one error line, not a sweep.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from locklab.errors import LocklabError
from locklab.model.catalogue import LockInfo
from locklab.model.cells import (
    Configuration,
    Point,
    Variant,
    Workload,
    threads_at,
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
from locklab.model.spec_checks import check_spec
from locklab.model.values import (
    AXES,
    AXIS_DEFAULTS,
    is_cpu_list,
    parse_int_list,
)


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
    churn: int = 0  # --churn: each writer's turn is a new thread taking the lock this often
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
    # --engine-seed: the engine seed of every run, in place of one per repeat (run_seed): what
    # replays a failed simulated run alone (run/replay.py).
    engine_seed: int | None = None

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
        args = self.lock_options(config)
        args += ["--duration", _num(self.duration_s), "--warmup", _num(self.warmup_s)]
        args += ["--pin", self.pin, "--interval", _num(self.series_interval_s())]
        if self.long_hold_ms:
            args += ["--long-hold", str(self.long_hold_ms)]
        if self.stutter_s:
            args += ["--stutter", _num(self.stutter_s)]
        args += self.workload_options()
        args += ["--seed", str(self.run_seed(repeat))]
        args += ["--watchdog", _num(self.watchdog_s())]
        return args

    def lock_options(self, config: Configuration) -> list[str]:
        """The configuration's lock and point, as the engine and `locklab run` both take them."""
        variant = config.variant
        args: list[str] = []
        if variant.plugin:
            args += ["--plugin", variant.plugin]
        args += ["--lock", variant.lock]
        for name, value in variant.params:
            args += ["--param", f"{name}={value}"]
        for axis, value in config.axes:
            args += [f"--{axis.replace('_', '-')}", str(value)]
        return args

    def workload_options(self) -> list[str]:
        """The options of every run that the engine and `locklab run` both take, where set."""
        args: list[str] = []
        if self.numa_nodes:
            args += ["--numa-nodes", str(self.numa_nodes)]
        if self.torture_delays:
            args += ["--torture-delays", self.torture_delays]
        if self.numa_remote_ns:
            args += ["--numa-remote-ns", str(self.numa_remote_ns)]
        if self.churn:
            args += ["--churn", str(self.churn)]
        if not self.checks:
            args += ["--no-checks"]
        return args

    def run_seed(self, repeat: int) -> int:
        """The engine's seed for a configuration's `repeat`: one per repeat, since random choices
        (backoff, long holds) must not be the same sequence in every repeat, or the repeats are
        not independent; the simulator's interleaving follows it too. --engine-seed sets it."""
        if self.engine_seed is not None:
            return self.engine_seed
        return self.seed * 1000 + repeat + 1

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
        check_spec(self, catalogue)


def _num(value: float) -> str:
    return f"{value:g}"
