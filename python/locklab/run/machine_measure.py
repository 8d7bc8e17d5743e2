"""A profile of this machine from measurements (`locklab machines --measure`), so the simulator
can be checked against the machine it runs on.

Measured: the shape, from Linux's /sys (the CPUs this process may use); a cache line's transfer
between CPU 0 and every other CPU, by line-latency's ping-pong (native/tools/line_latency.c),
each pair's median kept and the pairs' median taken per distance (SMT sibling, same LLC, same
socket, other socket); an atomic on an owned line (line-latency too); cpu_relax() from the
engine's own calibration; a futex's wake, the woken thread's start on its idle CPU, and a
wait's system call (line-latency --futex, from the first CPU to one of another core); the clock from
/proc/cpuinfo. Estimated, and said so in the profile: a hit, memory.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import re
import statistics
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

from locklab.errors import LocklabError
from locklab.run.engine import Engine

ROOT = Path(__file__).resolve().parents[3]
SYS_CPU = Path("/sys/devices/system/cpu")
# What a profile cannot measure here, in cycles, as the x86 profiles in machines/ estimate it.
ESTIMATED_CYCLES = {"hit": 4}
# line-latency --futex's figures, by the profile's name for each, and what each is.
FUTEX_COSTS = {
    "futex_wake": "the waker's FUTEX_WAKE system call that wakes a sleeper",
    "context_switch": "from that call's return until the sleeper runs on its idle CPU",
    "futex_wait": "a FUTEX_WAIT system call that finds the word changed",
}
MEMORY_NS = 100.0  # a DRAM access on a current server, give or take a third


@dataclass(frozen=True)
class CpuPlace:
    cpu: int
    package: int
    core: int  # unique machine-wide: its first CPU, or from package and core id (core_key)
    siblings: frozenset[int]
    llc: frozenset[int]


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def _cpu_list(text: str) -> frozenset[int]:
    """A sysfs CPU list ("0-3,8"); empty when missing or malformed."""
    cpus: set[int] = set()
    try:
        for part in filter(None, text.split(",")):
            low, _, high = part.partition("-")
            cpus.update(range(int(low), int(high or low) + 1))
    except ValueError:
        return frozenset()
    return frozenset(cpus)


def core_key(package: int, core_id: int) -> int:
    """A core's key where sysfs lists no hardware threads, as the engine's topology.c."""
    return package * 65536 + core_id


def places() -> list[CpuPlace]:
    """Where each CPU this process may use sits, as /sys says. A core is named by its first
    CPU where every CPU's list of its core's threads holds it, since a core id can repeat
    within a package (one per die); else by package and core id, for the whole machine."""
    found = []
    for cpu in sorted(os.sched_getaffinity(0)):
        topology = SYS_CPU / f"cpu{cpu}" / "topology"
        package = int(_read(topology / "physical_package_id") or 0)
        core_id = int(_read(topology / "core_id") or cpu)
        listed = _cpu_list(_read(topology / "thread_siblings_list"))
        siblings = listed if cpu in listed else frozenset({cpu})
        llc = _cpu_list(_read(SYS_CPU / f"cpu{cpu}" / "cache" / "index3" / "shared_cpu_list"))
        found.append((CpuPlace(cpu, package, core_key(package, core_id), siblings,
                               llc or siblings), cpu in listed))  # fmt: skip
    if not all(holds_cpu for _, holds_cpu in found):
        return [place for place, _ in found]
    return [replace(place, core=min(place.siblings)) for place, _ in found]


def line_latency_tool() -> Path:
    tool = ROOT / "build" / "opt" / "line-latency"
    if not (tool.is_file() and os.access(tool, os.X_OK)):
        raise LocklabError(f"--measure: no {tool} (make build)")
    return tool


def line_latency_lines(tool: Path, what: str, *args: str) -> list[str]:
    """line-latency's output lines, or its last error line as a LocklabError naming `what`."""
    proc = subprocess.run([str(tool), *args], capture_output=True, text=True, timeout=120,
                          check=False)  # fmt: skip
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        raise LocklabError(f"--measure: {what} failed: {last}")
    return proc.stdout.splitlines()


def transfers(tool: Path, source: int, targets: list[int]) -> tuple[dict[int, float], float]:
    """Nanoseconds per line transfer from `source` to each target, and per owned atomic."""
    lines = line_latency_lines(tool, "line-latency", "--from", str(source), "--trials", "5",
                               *map(str, targets))  # fmt: skip
    per_cpu, atomic = {}, 0.0
    for line in lines:
        fields = line.split()
        if fields[0] == "transfer":
            per_cpu[int(fields[2])] = float(fields[3])
        elif fields[0] == "atomic":
            atomic = float(fields[1])
    return per_cpu, atomic


def futex_ns(tool: Path, source: int, target: int) -> dict[str, float]:
    """Nanoseconds of a futex wake, of the woken thread's start, and of a wait's system call."""
    lines = line_latency_lines(tool, "line-latency --futex", "--futex", "--from", str(source),
                               str(target))  # fmt: skip
    found = {f[0]: float(f[1]) for f in map(str.split, lines) if len(f) == 2}
    if not all(found.get(key, -1) > 0 for key in FUTEX_COSTS):
        raise LocklabError(f"--measure: line-latency --futex gave no time for each of "
                           f"{', '.join(FUTEX_COSTS)}")  # fmt: skip
    return {key: found[key] for key in FUTEX_COSTS}


def clock_ghz() -> float | None:
    found = re.search(r"^cpu MHz\s*:\s*([\d.]+)", _read(Path("/proc/cpuinfo")), re.M)
    return round(float(found.group(1)) / 1000, 2) if found else None


def cpu_model() -> str:
    found = re.search(r"^(?:model name|Model)\s*:\s*(.+)$", _read(Path("/proc/cpuinfo")), re.M)
    return found.group(1).strip() if found else platform.processor() or "unknown CPU"


def cpu_vendor() -> str:
    """The CPU's vendor, family and model as /proc/cpuinfo gives them (a VM's model name is
    often only "AMD EPYC"): what a figure measured on one vendor is labelled with."""
    cpuinfo = _read(Path("/proc/cpuinfo"))
    fields = {key: re.search(rf"^{key}\s*:\s*(.+)$", cpuinfo, re.M)
              for key in ("vendor_id", "cpu family", "model")}  # fmt: skip
    if fields["vendor_id"] is None:
        return cpu_model()
    family, model = (fields[key].group(1).strip() if fields[key] else "?"
                     for key in ("cpu family", "model"))  # fmt: skip
    return f"{fields['vendor_id'].group(1).strip()} family {family} model {model} ({cpu_model()})"


def profile_text(name: str, engine: Engine) -> str:
    """The TOML of this machine's profile, measured now."""
    cpus = places()
    if len(cpus) < 2:
        raise LocklabError("--measure: a line transfer needs two CPUs, and this process has one")
    first = cpus[0]
    tool = line_latency_tool()
    per_cpu, atomic_ns = transfers(tool, first.cpu, [c.cpu for c in cpus[1:]])
    # The sleeper on another core, in the first CPU's LLC where there is one: not a sibling.
    others = [c for c in cpus[1:] if c.core != first.core] or cpus[1:]
    sleeper = next((c for c in others if c.cpu in first.llc), others[0])
    futexes = futex_ns(tool, first.cpu, sleeper.cpu)
    by_distance: dict[str, list[float]] = {}
    for other in cpus[1:]:
        if other.core == first.core:
            distance = "smt_sibling"
        elif other.cpu in first.llc:
            distance = "same_llc"
        elif other.package == first.package:
            distance = "same_socket"
        else:
            distance = "other_socket"
        by_distance.setdefault(distance, []).append(per_cpu[other.cpu])
    outcome = engine.run(["--lock", "tas", "--nwriters", "1", "--ops", "1000"], timeout_s=60.0)
    relax_ns = ((outcome.result or {}).get("machine") or {}).get("cpu_relax_ns")
    if not isinstance(relax_ns, int | float):
        raise LocklabError(f"--measure: the engine's calibration failed: {outcome.error_line()}")
    ghz = clock_ghz()
    measured_ghz = ghz is not None
    ghz = ghz or 2.0

    def cycles(ns: float) -> int:
        return max(1, round(ns * ghz))

    packages = sorted({c.package for c in cpus})
    per_package = [[c for c in cpus if c.package == p] for p in packages]
    cores = len({c.core for c in per_package[0]})
    threads = max(1, len(per_package[0]) // cores)
    llc_cores = len({c.core for c in per_package[0] if c.cpu in first.llc}) or cores
    uniform = all(len(group) == len(per_package[0]) for group in per_package) and (
        cores % llc_cores == 0 and len(per_package[0]) == cores * threads
    )
    if not uniform:  # a shape the profile format cannot say: one socket of single cores
        cores, threads, llc_cores, packages = len(cpus), 1, len(cpus), [0]
    nodes = len(list(Path("/sys/devices/system/node").glob("node[0-9]*"))) or 1
    nodes_per_socket = max(1, nodes // len(packages))
    if cores % nodes_per_socket:
        nodes_per_socket = 1

    when = datetime.date.today().isoformat()
    how = f"measured on {platform.node()} on {when} by locklab machines --measure"
    costs: dict[str, str] = {}
    sources: dict[str, str] = {}
    order = ("same_llc", "same_socket", "other_socket", "smt_sibling")
    nearest = next(statistics.median(by_distance[d]) for d in order if d in by_distance)
    for distance in order:
        values = by_distance.get(distance)
        if values:
            ns = statistics.median(values)
            sources[distance] = (f"{how}: line-latency's ping-pong, median of {len(values)} "
                                 f"pairs from CPU {first.cpu}, {ns:.1f} ns")  # fmt: skip
        else:
            ns = nearest
            sources[distance] = f"no such pair here: the nearest measured, {ns:.1f} ns"
        costs[distance] = f"[{cycles(ns)}]" if distance == "other_socket" else str(cycles(ns))
    costs["atomic"] = str(cycles(atomic_ns))
    sources["atomic"] = f"{how}: line-latency, a chain of fetch-adds on an owned line, " + (
        f"{atomic_ns:.2f} ns"
    )
    costs["cpu_relax"] = str(cycles(float(relax_ns)))
    sources["cpu_relax"] = f"{how}: the engine's calibration, {float(relax_ns):.1f} ns"
    for key, ns in futexes.items():
        costs[key] = str(cycles(ns))
        sources[key] = (f"{how}: line-latency --futex between CPUs {first.cpu} and "
                        f"{sleeper.cpu}, {FUTEX_COSTS[key]}, median {ns:.0f} ns")  # fmt: skip
    for key, value in ESTIMATED_CYCLES.items():
        costs[key] = str(value)
        sources[key] = "estimate, as for the x86 profiles in machines/"
    memory = str(cycles(MEMORY_NS))
    costs.update(memory_local=memory, memory_same_socket=memory, memory_remote=f"[{memory}]")
    for key in ("memory_local", "memory_same_socket", "memory_remote"):
        sources[key] = f"estimate: {MEMORY_NS:.0f} ns, a DRAM access on a current server"
    sources["ghz"] = (f"{how}: /proc/cpuinfo's cpu MHz" if measured_ghz else
                      "estimate: /proc/cpuinfo gives no clock")  # fmt: skip
    sources["topology"] = f"{how}: /sys/devices/system/cpu" + (
        "" if uniform else " (a shape no profile can say, taken as one socket of single cores)"
    )
    arch = {"aarch64": "arm64"}.get(platform.machine(), platform.machine())
    lines = [
        f"# {name}: this machine, measured ({how}).",
        f"# {cpu_model()}, {len(cpus)} CPUs. Check the simulator against it with the same",
        "# command run with and without --sim (docs/simulator.md).",
        "",
        f'name = "{name}"',
        f"summary = {json.dumps(f'{cpu_model()}, {len(cpus)} CPUs, measured here on {when}')}",
        "seeds = []",
        f'arch = "{arch}"',
        f"ghz = {ghz}",
        "",
        "[topology]",
        f"sockets = {len(packages)}",
        f"nodes_per_socket = {nodes_per_socket}",
        f"cores_per_socket = {cores}",
        f"threads_per_core = {threads}",
        f"cores_per_llc = {llc_cores}",
        "",
        "[costs]",
        *(f"{key} = {value}" for key, value in costs.items()),
        "",
        "[sources]",
        *(f"{key} = {json.dumps(text)}" for key, text in sources.items()),
    ]
    return "\n".join(lines) + "\n"
