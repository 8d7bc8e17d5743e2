"""Running the simulator, ``locklab-sim``: the engine compiled for virtual machines.

The simulator takes the engine's command line; what differs is the binary (build/sim/, copied
beside locklab-bench by ``make venv``) and the machine it simulates, a flat file named by
$LOCKLAB_SIM_MACHINE that model/machine_profile.py writes from a profile. docs/simulator.md
describes the model.
"""

from __future__ import annotations

import hashlib
import math
import os
import resource
import tempfile
from pathlib import Path

from locklab.errors import LocklabError

SIM_ENGINE_NAME = "locklab-sim"
ROOT = Path(__file__).resolve().parents[3]


def find_sim_engine(engine: Path) -> Path:
    """The simulator beside the engine in use (the virtualenv's bin/ or build/BUILD/), else
    the repository's build/sim/."""
    for candidate in (engine.parent / SIM_ENGINE_NAME, ROOT / "build" / "sim" / SIM_ENGINE_NAME):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise LocklabError(f"--sim: no {SIM_ENGINE_NAME} beside {engine} or in build/sim (make build)")


def simulated_runs_at_once() -> int:
    """How many simulated runs a sweep keeps going at once: one per CPU this process may use
    (`taskset` narrows it, and so does a container's CPU quota), within what its open files
    allow (three a run). A simulated run's figures are virtual, so runs beside each other
    cannot disturb them; a measured run always runs alone."""
    cpus = len(os.sched_getaffinity(0))
    quota = cgroup_cpu_quota()
    if quota is not None:
        cpus = min(cpus, math.ceil(quota))
    files, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if files != resource.RLIM_INFINITY:
        cpus = min(cpus, (files - 64) // 3)
    return max(1, cpus)


def cgroup_cpu_quota() -> float | None:
    """The CPUs' worth of time this process's cgroup may take (v2's cpu.max, v1's CFS quota),
    None where it is unlimited or cannot be read."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split(":", 2)
        if len(fields) != 3:
            continue
        _, controllers, path = fields
        if controllers == "":  # v2
            files = [Path("/sys/fs/cgroup", path.lstrip("/"), "cpu.max")]
        elif "cpu" in controllers.split(","):  # v1
            folder = Path("/sys/fs/cgroup", controllers, path.lstrip("/"))
            files = [folder / "cpu.cfs_quota_us", folder / "cpu.cfs_period_us"]
        else:
            continue
        try:
            quota = cpus_of_quota(" ".join(file.read_text() for file in files))
        except (OSError, ValueError):
            continue
        if quota is not None:
            return quota
    return None


def cpus_of_quota(text: str) -> float | None:
    """A quota and its period ("200000 100000": 2 CPUs), as cpu.max or v1's two files say
    them; None for no quota ("max" in v2, -1 in v1)."""
    quota, period = text.split()[:2]
    if quota in ("max", "-1"):
        return None
    return int(quota) / int(period)


def machine_file(flat_text: str) -> Path:
    """The machine's flat file, written once per content where every run can read it."""
    digest = hashlib.sha256(flat_text.encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"locklab-sim-{os.getuid()}-{digest}.machine"
    if not path.is_file() or path.read_text() != flat_text:
        partial = path.with_suffix(f".{os.getpid()}.partial")
        partial.write_text(flat_text)
        partial.replace(path)
    return path


def sim_environment(base: dict[str, str], flat_text: str) -> dict[str, str]:
    return {**base, "LOCKLAB_SIM_MACHINE": str(machine_file(flat_text))}


def engine_invocation(
    engine: Path, sim_machine: str, base: dict[str, str]
) -> tuple[Path, dict[str, str] | None]:
    """The binary and environment that run an engine command line: the engine itself (None:
    the caller's environment), or with `sim_machine` (a flat machine file's text) the simulator
    beside it, on that machine."""
    if not sim_machine:
        return engine, None
    return find_sim_engine(engine), sim_environment(base, sim_machine)
