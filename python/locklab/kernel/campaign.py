"""Kernel campaigns (`kind = "kernel"`, like campaigns/seed-000-kernel.toml): build one kernel
per [[kernel]] with its patches, run locktorture built into each, sweeping nwriters_stress
with repeats, keep every console, and store and tabulate the runs as one experiment.

Everything is checked before anything is built or booted: the file's keys, every locktorture
parameter (kernel_params), the patches (kernel_build dry-runs them). A run whose kernel oopses,
panics, hangs or reports a locktorture failure is a failed run: its console is kept and it is
listed with its outcome.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from locklab.errors import LocklabError
from locklab.kernel import params as kernel_params
from locklab.kernel import qemu as kernel
from locklab.kernel.arch import resolve
from locklab.kernel.build_inputs import debug_options
from locklab.kernel.sweep import LocktortureSweep
from locklab.model.spec import ExperimentSpec, default

TOP_KEYS = {"name", "kind", "baseline", "source", "config", "torture_type", "repeat", "duration",
            "stat_interval", "warmup_reports", "cpus", "accel", "params", "sweep", "kernel",
            "full", "pin_cpus", "debug", "locktorture", "program", "arch"}  # fmt: skip
FULL_KEYS = {"repeat", "duration", "stat_interval", "warmup_reports", "cpus", "accel", "params",
             "sweep", "pin_cpus", "program"}  # fmt: skip
PROGRAM_KEYS = {"command", "threads", "metric_regex", "work", "timeout", "repeat"}
# A [program]'s defaults are `locklab exec`'s.
PROGRAM_WORK: str = default(ExperimentSpec, "program_work")
PROGRAM_TIMEOUT_S: float = default(ExperimentSpec, "program_timeout_s")


@dataclass
class GuestProgram:
    """A [program] table: a program run inside each kernel (`locklab kernel --exec`)."""

    command: str  # a shell command line; {threads} takes each value of `threads`
    threads: list[int] = field(default_factory=lambda: [1])
    metric_regex: str | None = None  # else throughput = work / wall time
    work: str = PROGRAM_WORK
    timeout: float = PROGRAM_TIMEOUT_S
    repeat: int | None = None  # default: the campaign's


@dataclass
class KernelCampaign:
    name: str
    path: Path
    kernels: dict[str, list[Path]]  # label -> patches
    nwriters: list[int]
    torture_type: str = "rtmutex_lock"
    baseline: str | None = None
    source: Path | None = None
    config: Path | None = None
    repeat: int = 1
    duration: float = 10.0
    stat_interval: int = 1
    warmup_reports: int = 1
    cpus: int = 2
    accel: str = "auto"
    pin_cpus: str = ""  # host CPUs, one per vCPU, like "0-95" (default: no pinning)
    arch: str = ""  # x86_64 or arm64 (default: this machine's)
    params: dict[str, str] = field(default_factory=dict)
    debug: list[str] = field(default_factory=list)  # the kernel's checkers (--debug)
    locktorture: bool = True  # false: the [program] alone
    program: GuestProgram | None = None


def load(path: Path, full: bool = False) -> KernelCampaign:
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise LocklabError(f"{path}: {error}") from None
    return from_data(path, data, full)


def from_data(path: Path, data: dict, full: bool = False) -> KernelCampaign:
    """A kernel campaign from a file's parsed tables (patch and source paths are relative to
    `path`'s folder); every key and run parameter checked."""
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        known = ", ".join(sorted(TOP_KEYS))
        raise LocklabError(f"{path}: unknown key '{unknown[0]}' (known: {known})")
    if data.get("kind") != "kernel":
        raise LocklabError(f'{path}: not a kernel campaign (kind = "kernel")')
    if full:
        overrides = data.get("full")
        if not isinstance(overrides, dict):
            raise LocklabError(f"{path}: --full: this campaign has no [full] table")
        bad = sorted(set(overrides) - FULL_KEYS)
        if bad:
            raise LocklabError(f"{path}: full: unknown key '{bad[0]}'")
        for key, value in overrides.items():
            data[key] = {**data.get(key, {}), **value} if isinstance(value, dict) else value
        data["name"] = f"{data.get('name', path.stem)}-full"
    here = path.parent
    for key in ("source", "config"):
        if not isinstance(data.get(key, ""), str):
            raise LocklabError(f"{path}: '{key}' must be a path, in quotes")
    kernels: dict[str, list[Path]] = {}
    for entry in data.get("kernel", []):
        label = entry.get("label")
        if not isinstance(label, str) or label in kernels:
            raise LocklabError(f"{path}: each [[kernel]] needs a label of its own")
        kernels[label] = [here / name for name in entry.get("patches", [])]
    if not kernels:
        raise LocklabError(f"{path}: no [[kernel]]")
    sweep = data.get("sweep", {})
    nwriters = sweep.get("nwriters_stress", [2])
    if not nwriters or not all(isinstance(n, int) and n >= 1 for n in nwriters):
        raise LocklabError(f"{path}: sweep.nwriters_stress must be a list of positive integers")
    campaign = KernelCampaign(
        name=str(data.get("name", path.stem)), path=path, kernels=kernels, nwriters=nwriters,
        torture_type=str(data.get("torture_type", "rtmutex_lock")),
        baseline=data.get("baseline"),
        source=here / data["source"] if "source" in data else None,
        config=here / data["config"] if "config" in data else None,
        repeat=int(data.get("repeat", 1)), duration=float(data.get("duration", 10)),
        stat_interval=int(data.get("stat_interval", 1)),
        warmup_reports=int(data.get("warmup_reports", 1)), cpus=int(data.get("cpus", 2)),
        accel=str(data.get("accel", "auto")), pin_cpus=data.get("pin_cpus", ""),
        params={key: str(value) for key, value in data.get("params", {}).items()},
    )  # fmt: skip
    campaign.debug = _debug(path, data.get("debug", []))
    campaign.arch = _arch(path, data.get("arch", ""), "program" in data)
    campaign.locktorture = data.get("locktorture", True) is not False
    if "program" in data:
        campaign.program = _program(path, data["program"])
    elif not campaign.locktorture:
        raise LocklabError(f"{path}: locktorture = false needs a [program] to run instead")
    if campaign.baseline is not None and campaign.baseline not in kernels:
        raise LocklabError(f"{path}: baseline '{campaign.baseline}' is not a [[kernel]] label")
    if not 1 <= campaign.repeat <= 1000:
        raise LocklabError(f"{path}: repeat must be from 1 to 1000")
    if not 1 <= campaign.cpus <= kernel.MAX_GUEST_CPUS:
        raise LocklabError(f"{path}: cpus must be from 1 to {kernel.MAX_GUEST_CPUS}")
    if not isinstance(campaign.pin_cpus, str):
        raise LocklabError(f'{path}: pin_cpus must be a CPU list in quotes, like "0-95"')
    if campaign.accel not in ("auto", "kvm", "tcg"):
        raise LocklabError(f"{path}: accel must be auto, kvm or tcg")
    if campaign.duration < (campaign.warmup_reports + 2) * campaign.stat_interval:
        raise LocklabError(f"{path}: duration leaves fewer than two reports after the warm-up")
    for writers in nwriters:  # every run's parameters, checked before anything is built
        run_params(campaign, writers)
    return campaign


def run_params(campaign: KernelCampaign, writers: int) -> dict[str, str]:
    """One run's locktorture parameters, checked (shutdown_secs comes from the duration)."""
    params = {"torture_type": campaign.torture_type, "nwriters_stress": str(writers),
              "stat_interval": str(campaign.stat_interval), **campaign.params}  # fmt: skip
    if "shutdown_secs" in params:
        raise LocklabError("params: shutdown_secs comes from duration; leave it out")
    return kernel_params.check(params)


def sweep_of(campaign: KernelCampaign) -> tuple[LocktortureSweep, list[str], list[str]]:
    """The campaign as `locklab kernel --patch` would run it: the sweep, its --patch and its
    --param options."""
    sweep = LocktortureSweep(
        campaign.torture_type, ",".join(map(str, campaign.nwriters)), campaign.repeat,
        campaign.duration, campaign.stat_interval, campaign.warmup_reports, campaign.cpus,
        campaign.accel, campaign.pin_cpus, campaign.arch,
    )  # fmt: skip
    patches = [
        label + ("=" + ",".join(map(str, files)) if files else "")
        for label, files in campaign.kernels.items()
    ]
    params = [f"{name}={value}" for name, value in campaign.params.items()]
    return sweep, patches, params


def _arch(path: Path, name: object, program: bool) -> str:
    """`arch = "arm64"`: checked now (a [program] runs in x86_64 guests only)."""
    if not isinstance(name, str):
        raise LocklabError(f'{path}: arch must be a name in quotes, like "arm64"')
    try:
        arch = resolve(name) if name else None
    except LocklabError as error:
        raise LocklabError(f"{path}: {error}") from None
    if arch is not None and program and not arch.runs_programs:
        raise LocklabError(f"{path}: a [program] runs in x86_64 guests only, not arch = "
                           f'"{arch.name}"')  # fmt: skip
    return name


def _debug(path: Path, names: object) -> list[str]:
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise LocklabError(f'{path}: debug must be a list of checkers, like ["kcsan"]')
    try:
        debug_options(names)
    except LocklabError as error:
        raise LocklabError(f"{path}: {error}") from None
    return names


def _program(path: Path, table: object) -> GuestProgram:
    if not isinstance(table, dict):
        raise LocklabError(f"{path}: [program] must be a table")
    bad = sorted(set(table) - PROGRAM_KEYS)
    if bad:
        raise LocklabError(f"{path}: program: unknown key '{bad[0]}' "
                           f"(known: {', '.join(sorted(PROGRAM_KEYS))})")  # fmt: skip
    command = table.get("command")
    if not isinstance(command, str) or not command.strip():
        raise LocklabError(f"{path}: program: command must be a command line in quotes")
    threads = table.get("threads", [1])
    if not threads or not all(isinstance(n, int) and n >= 1 for n in threads):
        raise LocklabError(f"{path}: program: threads must be a list of positive integers")
    repeat = table.get("repeat")
    if repeat is not None and not (isinstance(repeat, int) and 1 <= repeat <= 1000):
        raise LocklabError(f"{path}: program: repeat must be from 1 to 1000")
    try:
        timeout = float(table.get("timeout", PROGRAM_TIMEOUT_S))
    except (TypeError, ValueError):
        raise LocklabError(f"{path}: program: timeout must be a number of seconds") from None
    metric = table.get("metric_regex")
    return GuestProgram(command, list(threads), str(metric) if metric else None,
                        str(table.get("work", PROGRAM_WORK)), timeout, repeat)  # fmt: skip
