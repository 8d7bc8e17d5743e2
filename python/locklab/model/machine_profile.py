"""Machine profiles for the simulator: the seeds' machines as data (machines/*.toml).

A profile describes a machine's shape (sockets, NUMA nodes, cores, SMT, which cores share the
last-level cache, how many interconnect hops lie between sockets) and what the coherence model
charges for each kind of access, in core cycles, each cost with its public source or the word
"estimate:" and how it was derived. This module reads and checks a profile and writes the flat
file the simulation runtime reads (native/sim/machine.c); docs/simulator.md describes the model.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, replace
from itertools import pairwise
from pathlib import Path

from locklab.errors import LocklabError

PROFILES_DIR = Path(__file__).resolve().parents[3] / "machines"
FLAT_VERSION = 1
# native/sim/runtime.h: SIM_MAX_CPUS, SIM_MAX_SOCKETS, SIM_MAX_HOPS, SIM_MAX_FILL_BUFFERS
MAX_CPUS = 512
MAX_SOCKETS = 16
MAX_HOPS = 4
MAX_NODES = 64  # SIM_MAX_NODES
MAX_IDLE_STATES = 8  # SIM_MAX_IDLE_STATES
# Whose rules place unpinned threads (native/sim/placement.c, docs/scheduler.md): a profile's
# `kernel` (its seed's), else the newest; --sched overrides either.
SCHED_RULES = ("linux-4.20", "linux-6.1")
DEFAULT_SCHED = "linux-6.1"
MAX_FILL_BUFFERS = 64
SCALAR_COSTS = (
    "hit", "atomic", "smt_sibling", "same_llc", "same_socket", "memory_local",
    "memory_same_socket", "cpu_relax", "futex_wait", "futex_wake", "context_switch",
)  # fmt: skip
PER_HOP_COSTS = ("other_socket", "memory_remote")
TOPOLOGY_KEYS = ("sockets", "nodes_per_socket", "cores_per_socket", "threads_per_core",
                 "cores_per_llc")  # fmt: skip


@dataclass(frozen=True)
class SimCpu:
    cpu: int
    package: int
    core: int  # within the package
    node: int
    smt_rank: int
    llc: int  # unique over the machine


@dataclass(frozen=True)
class MachineProfile:
    name: str
    summary: str
    arch: str
    ghz: float
    seeds: tuple[str, ...]
    topology: dict[str, int]
    socket_hops: tuple[tuple[int, ...], ...]
    costs: dict[str, int | tuple[int, ...]]
    sources: dict[str, str]
    path: Path
    line_bytes: int = 64
    # Store misses one core keeps in flight (its L1D fill buffers); 0: the profile gives none,
    # and each store miss waits for the one before (docs/simulator.md, "Overlapped stores").
    fill_buffers: int = 0
    # The ACPI SLIT, nodes x nodes (10 a node's own); None: the kernel's default, 20 apart.
    node_distance: tuple[tuple[int, ...], ...] | None = None
    # What 6.1 sets node_reclaim_distance to on this CPU (AMD Zen: 32); 0: the default, 30.
    node_reclaim_distance: int = 0
    sched: str = DEFAULT_SCHED
    # The wake-up to running on an idle CPU, and its idle states (exit latency, target
    # residency), in cycles; 0 and (): context_switch for every wake-up.
    wake_to_run: int = 0
    idle_states: tuple[tuple[int, int], ...] = ()

    @property
    def cpus(self) -> int:
        t = self.topology
        return t["sockets"] * t["cores_per_socket"] * t["threads_per_core"]

    def shape(self) -> str:
        t = self.topology
        smt = f" x {t['threads_per_core']} threads" if t["threads_per_core"] > 1 else ""
        nodes = t["sockets"] * t["nodes_per_socket"]
        return (
            f"{t['sockets']} socket{'s' if t['sockets'] > 1 else ''} x "
            f"{t['cores_per_socket']} cores{smt}, {nodes} NUMA node{'s' if nodes > 1 else ''}"
        )

    def estimates(self) -> list[str]:
        """The costs whose source says they are estimates."""
        return [k for k, v in self.sources.items() if v.lower().startswith("estimate")]

    def cpu_table(self) -> list[SimCpu]:
        """Linux's usual numbering: the first thread of every core, socket by socket, then the
        second threads in the same order (SMT siblings are N/2 apart)."""
        t = self.topology
        cores = t["cores_per_socket"]
        cores_per_node = cores // t["nodes_per_socket"]
        llcs_per_socket = cores // t["cores_per_llc"]
        table = []
        for rank in range(t["threads_per_core"]):
            for socket in range(t["sockets"]):
                for core in range(cores):
                    table.append(
                        SimCpu(
                            cpu=len(table),
                            package=socket,
                            core=core,
                            node=socket * t["nodes_per_socket"] + core // cores_per_node,
                            smt_rank=rank,
                            llc=socket * llcs_per_socket + core // t["cores_per_llc"],
                        )
                    )
        return table

    def flat_text(self) -> str:
        """The file native/sim/machine.c reads: one fact a line."""
        lines = [
            f"locklab-sim-machine {FLAT_VERSION}",
            f"name {self.name}",
            f"summary {self.summary}",
            f"arch {self.arch}",
            f"ghz {self.ghz}",
            f"line_bytes {self.line_bytes}",
            f"fill_buffers {self.fill_buffers}",
        ]
        lines += [f"cost {key} {self.costs[key]}" for key in SCALAR_COSTS]
        for key in PER_HOP_COSTS:
            values = self.costs[key]
            assert isinstance(values, tuple)
            lines.append(f"{key} {' '.join(str(v) for v in values)}")
        lines.append(f"sched {self.sched}")
        if self.wake_to_run:
            lines.append(f"wake_to_run {self.wake_to_run}")
        lines += [f"idle_state {exit} {residency}" for exit, residency in self.idle_states]
        if self.node_distance:
            lines += [f"node_distance {i} {' '.join(str(d) for d in row)}"
                      for i, row in enumerate(self.node_distance)]  # fmt: skip
        if self.node_reclaim_distance:
            lines.append(f"node_reclaim_distance {self.node_reclaim_distance}")
        lines.append(f"sockets {self.topology['sockets']}")
        lines += [f"hops {i} {' '.join(str(h) for h in row)}" for i, row in
                  enumerate(self.socket_hops)]  # fmt: skip
        cores = self.topology["cores_per_socket"]
        lines.append(f"cpus {self.cpus}")
        lines += [
            f"cpu {c.cpu} {c.package} {c.core} {c.package * cores + c.core} {c.node} "
            f"{c.smt_rank} {c.llc}"
            for c in self.cpu_table()
        ]
        return "\n".join(lines) + "\n"


def profile_names() -> list[str]:
    return sorted(p.stem for p in PROFILES_DIR.glob("*.toml"))


def with_sched(profile: MachineProfile, sched: str | None, what: str = "--sched") -> MachineProfile:
    """The profile with another kernel's placement rules, when `sched` names one."""
    if sched is None:
        return profile
    if sched not in SCHED_RULES:
        raise LocklabError(f"{what}: unknown rules '{sched}' (known: {', '.join(SCHED_RULES)})")
    return replace(profile, sched=sched)


def find_profile(name_or_path: str, what: str = "--sim") -> MachineProfile:
    """A profile by name (machines/NAME.toml) or by the path of a user's own file; `what` is
    where the name was given, for the error line."""
    if name_or_path.endswith(".toml") or "/" in name_or_path:
        path = Path(name_or_path)
        if not path.is_file():
            raise LocklabError(f"{what}: no profile file {name_or_path}")
    else:
        path = PROFILES_DIR / f"{name_or_path}.toml"
        if not path.is_file():
            raise LocklabError(
                f"{what}: unknown machine '{name_or_path}' (known: {', '.join(profile_names())}; "
                "or the path of a profile file)"
            )
    return load_profile(path)


def flat_cpus(flat_text: str) -> int:
    """The CPU count of a machine's flat file (what a stored spec keeps)."""
    line = next(line for line in flat_text.splitlines() if line.startswith("cpus "))
    return int(line.split()[1])


def load_profile(path: Path) -> MachineProfile:
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as error:
        raise LocklabError(f"profile {path}: cannot read it: {error}") from None
    except tomllib.TOMLDecodeError as error:
        raise LocklabError(f"profile {path}: not valid TOML: {error}") from None
    return _checked(data, path)


def _checked(data: dict, path: Path) -> MachineProfile:
    where = f"profile {path.name}"

    def need(table: dict, key: str, kind: type | tuple[type, ...], what: str) -> object:
        if key not in table:
            raise LocklabError(f"{where}: {what}{key} is missing")
        value = table[key]
        if not isinstance(value, kind) or isinstance(value, bool):
            raise LocklabError(f"{where}: {what}{key} has the wrong type ({value!r})")
        return value

    topology_table = need(data, "topology", dict, "")
    costs_table = need(data, "costs", dict, "")
    sources = need(data, "sources", dict, "")
    assert isinstance(topology_table, dict) and isinstance(costs_table, dict)
    assert isinstance(sources, dict)

    def counts(table: dict, keys: tuple[str, ...], what: str, least: int) -> dict[str, int]:
        found: dict[str, int] = {}
        for key in keys:
            value = need(table, key, int, what)
            assert isinstance(value, int)
            if value < least:
                raise LocklabError(f"{where}: {what}{key} must be at least {least}")
            found[key] = value
        return found

    topology = counts(topology_table, TOPOLOGY_KEYS, "topology.", 1)
    cores = topology["cores_per_socket"]
    for key in ("nodes_per_socket", "cores_per_llc"):
        if cores % topology[key]:
            raise LocklabError(f"{where}: topology.{key} must divide cores_per_socket ({cores})")
    sockets = topology["sockets"]
    hops_value = topology_table.get(
        "socket_hops", [[0 if a == b else 1 for b in range(sockets)] for a in range(sockets)]
    )
    if not (
        isinstance(hops_value, list)
        and len(hops_value) == sockets
        and all(isinstance(row, list) and len(row) == sockets for row in hops_value)
        and all(isinstance(h, int) and h >= 0 for row in hops_value for h in row)
    ):
        raise LocklabError(f"{where}: topology.socket_hops must be {sockets} rows of {sockets}")
    hops = tuple(tuple(row) for row in hops_value)
    max_hops = max((h for row in hops for h in row), default=0)
    if sockets > MAX_SOCKETS or max_hops > MAX_HOPS:
        raise LocklabError(
            f"{where}: the simulator takes at most {MAX_SOCKETS} sockets, {MAX_HOPS} hops apart"
        )
    if any((h == 0) != (a == b) for a, row in enumerate(hops) for b, h in enumerate(row)):
        raise LocklabError(f"{where}: topology.socket_hops is 0 from a socket to itself only")

    costs: dict[str, int | tuple[int, ...]] = {**counts(costs_table, SCALAR_COSTS, "costs.", 0)}
    for key in PER_HOP_COSTS:
        value = need(costs_table, key, list, "costs.")
        assert isinstance(value, list)
        if not all(isinstance(v, int) and v >= 0 for v in value) or len(value) < max(max_hops, 1):
            raise LocklabError(
                f"{where}: costs.{key} needs one cycle count per hop, 1 to {max(max_hops, 1)}"
            )
        costs[key] = tuple(value)
    if costs["hit"] == 0:
        raise LocklabError(f"{where}: costs.hit must be at least 1 cycle")
    _need_sources((*SCALAR_COSTS, *PER_HOP_COSTS), sources, where)
    ghz = need(data, "ghz", (int, float), "")
    assert isinstance(ghz, int | float)
    if not 0.1 <= float(ghz) <= 10:
        raise LocklabError(f"{where}: ghz must be between 0.1 and 10")
    name = data.get("name", path.stem)
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9._-]+", name):
        raise LocklabError(f"{where}: name must be letters, digits, '.', '_' or '-'")
    seeds = data.get("seeds", [])
    if not isinstance(seeds, list) or not all(isinstance(seed, str) for seed in seeds):
        raise LocklabError(f'{where}: seeds must be a list of strings, like ["002"]')
    arch = str(data.get("arch", "x86_64"))
    if arch not in ("x86_64", "arm64"):
        raise LocklabError(f"{where}: arch must be x86_64 or arm64, not {arch}")
    fill_buffers = data.get("fill_buffers", 0)
    if (
        not isinstance(fill_buffers, int)
        or isinstance(fill_buffers, bool)
        or not (0 <= fill_buffers <= MAX_FILL_BUFFERS)
    ):
        raise LocklabError(f"{where}: fill_buffers must be a whole number from 0 to "
                           f"{MAX_FILL_BUFFERS}")  # fmt: skip
    if fill_buffers:
        _need_sources(("fill_buffers",), sources, where)
    nodes = sockets * topology["nodes_per_socket"]
    distance = _node_distances(topology_table.get("node_distance"), nodes, sources, where)
    reclaim = data.get("node_reclaim_distance", 0)
    if (
        not isinstance(reclaim, int)
        or isinstance(reclaim, bool)
        or not (reclaim == 0 or 10 <= reclaim <= 254)
    ):
        raise LocklabError(f"{where}: node_reclaim_distance must be 10 to 254")
    if reclaim:
        _need_sources(("node_reclaim_distance",), sources, where)
    wake_to_run, idle_states = _wake_costs(costs_table, sources, where)
    kernel = data.get("kernel", DEFAULT_SCHED)
    if kernel not in SCHED_RULES:
        raise LocklabError(f"{where}: kernel must be one of {', '.join(SCHED_RULES)} (whose "
                           f"scheduler places its threads), not {kernel!r}")  # fmt: skip
    profile = MachineProfile(
        name=name,
        summary=" ".join(str(data.get("summary", path.stem)).split()),
        arch=arch,
        ghz=float(ghz),
        seeds=tuple(seeds),
        topology=topology,
        socket_hops=hops,
        costs=costs,
        sources={str(k): " ".join(str(v).split()) for k, v in sources.items()},
        path=path,
        fill_buffers=fill_buffers,
        node_distance=distance,
        node_reclaim_distance=reclaim,
        sched=kernel,
        wake_to_run=wake_to_run,
        idle_states=idle_states,
    )
    if profile.cpus > MAX_CPUS:
        raise LocklabError(f"{where}: {profile.cpus} CPUs, the simulator runs at most {MAX_CPUS}")
    return profile


def _node_distances(
    value: object, nodes: int, sources: dict, where: str
) -> tuple[tuple[int, ...], ...] | None:
    """topology.node_distance: the SLIT, as `numactl -H` prints it, with its source."""
    if value is None:
        return None
    if not (
        isinstance(value, list)
        and len(value) == nodes
        and all(isinstance(row, list) and len(row) == nodes for row in value)
        and all(isinstance(d, int) and not isinstance(d, bool) for row in value for d in row)
    ):
        raise LocklabError(f"{where}: topology.node_distance must be {nodes} rows of {nodes}")
    if nodes > MAX_NODES or any(
        (d == 10) != (a == b) or not 10 <= d <= 254
        for a, row in enumerate(value) for b, d in enumerate(row)
    ):  # fmt: skip
        raise LocklabError(f"{where}: topology.node_distance is 10 from a node to itself only, "
                           "and 11 to 254 to another")  # fmt: skip
    _need_sources(("node_distance",), sources, where)
    return tuple(tuple(row) for row in value)


def _wake_costs(costs: dict, sources: dict, where: str) -> tuple[int, tuple[tuple[int, int], ...]]:
    """costs.wake_to_run and costs.idle_states ([[exit, residency], ...], shallowest first),
    each with its source; idle states need wake_to_run, which is measured from the first."""
    wake = costs.get("wake_to_run", 0)
    if not isinstance(wake, int) or isinstance(wake, bool) or wake < 0:
        raise LocklabError(f"{where}: costs.wake_to_run must be a whole number of cycles")
    states = costs.get("idle_states", [])
    if not (
        isinstance(states, list)
        and len(states) <= MAX_IDLE_STATES
        and all(isinstance(s, list) and len(s) == 2 for s in states)
        and all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for s in states for v in s
        )
    ):
        raise LocklabError(f"{where}: costs.idle_states must be at most {MAX_IDLE_STATES} "
                           "[exit, residency] pairs of cycles")  # fmt: skip
    if states and not wake:
        raise LocklabError(f"{where}: costs.idle_states needs costs.wake_to_run")
    if any(later[0] < earlier[0] for earlier, later in pairwise(states)):
        raise LocklabError(f"{where}: costs.idle_states go from the shallowest to the deepest")
    _need_sources([key for key, value in (("wake_to_run", wake), ("idle_states", states))
                   if value], sources, where)  # fmt: skip
    return wake, tuple((exit, residency) for exit, residency in states)


def _need_sources(keys: tuple[str, ...] | list[str], sources: dict, where: str) -> None:
    """Every figure a profile gives cites its source, or says how it was estimated."""
    unsourced = [key for key in keys if not sources.get(key)]
    if unsourced:
        raise LocklabError(
            f"{where}: no source for {', '.join(unsourced)} (cite one, or write 'estimate: ...' "
            "with how it was derived)"
        )
