"""Kernel campaigns (`kind = "kernel"`, like campaigns/seed-000-kernel.toml): build one kernel
per [[kernel]] with its patches, run locktorture built into each, sweeping nwriters_stress
with repeats, keep every console, and store and tabulate the runs as one experiment.

Everything is checked before anything is built or booted: the file's keys, every locktorture
parameter (kernel_params), the patches (kernel_build dry-runs them). A run whose kernel oopses,
panics, hangs or reports a locktorture failure is a failed run: its console is kept and it is
listed with its outcome.
"""

from __future__ import annotations

import json
import sys
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from locklab.errors import LocklabError
from locklab.kernel import build as kernel_build
from locklab.kernel import params as kernel_params
from locklab.kernel import qemu as kernel

TOP_KEYS = {"name", "kind", "baseline", "source", "config", "torture_type", "repeat", "duration",
            "stat_interval", "warmup_reports", "cpus", "accel", "params", "sweep", "kernel",
            "full"}  # fmt: skip
FULL_KEYS = {"repeat", "duration", "stat_interval", "warmup_reports", "cpus", "accel", "params",
             "sweep"}  # fmt: skip


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
    params: dict[str, str] = field(default_factory=dict)


def load(path: Path, full: bool = False) -> KernelCampaign:
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise LocklabError(f"{path}: {error}") from None
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
        accel=str(data.get("accel", "auto")),
        params={key: str(value) for key, value in data.get("params", {}).items()},
    )  # fmt: skip
    if campaign.baseline is not None and campaign.baseline not in kernels:
        raise LocklabError(f"{path}: baseline '{campaign.baseline}' is not a [[kernel]] label")
    if not 1 <= campaign.repeat <= 1000:
        raise LocklabError(f"{path}: repeat must be from 1 to 1000")
    if not 1 <= campaign.cpus <= kernel.MAX_GUEST_CPUS:
        raise LocklabError(f"{path}: cpus must be from 1 to {kernel.MAX_GUEST_CPUS}")
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


@dataclass
class RunRecord:
    label: str
    nwriters: int
    repeat: int
    outcome: str
    log: Path
    seconds: float
    accel: str


def run(
    campaign: KernelCampaign, logs: Path,
    progress: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
) -> tuple[dict[str, kernel_build.Built], list[RunRecord]]:  # fmt: skip
    """Build every kernel (cached), then every repeat x kernel x writer count, each run's
    console in `logs` with the kernel's provenance next to it."""
    built = kernel_build.build(campaign.kernels, campaign.source, campaign.config)
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "kernels.json").write_text(
        json.dumps({label: b.provenance() for label, b in built.items()}, indent=2) + "\n"
    )
    records = []
    for repeat in range(1, campaign.repeat + 1):
        for label, image in built.items():
            for writers in campaign.nwriters:
                params = run_params(campaign, writers)
                start = time.monotonic()
                booted = kernel.run_builtin(image.image, params, campaign.duration,
                                            campaign.cpus, campaign.accel)  # fmt: skip
                seconds = time.monotonic() - start
                log = logs / f"{label}-{campaign.torture_type}-n{writers}-r{repeat}.log"
                log.write_text(booted.console)
                records.append(RunRecord(label, writers, repeat, booted.outcome, log,
                                         round(seconds, 1), booted.accel))  # fmt: skip
                progress(f"{label}: nwriters_stress={writers} #{repeat}: {booted.outcome} "
                         f"({seconds:.0f} s, {booted.accel})")  # fmt: skip
    return built, records


def machine_line(records: list[RunRecord]) -> str:
    accels = {record.accel for record in records}
    if accels == {"kvm"}:
        return "qemu-kvm"
    return "qemu-tcg (emulated: timing not representative)"
