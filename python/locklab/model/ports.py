"""The hand ports of Linux 6.1's locks beside the tree's own code: which port follows which
kernel lock, how close the two must be, and each difference that measurements show beyond
that, with what is known of its cause (docs/locks.md, "Ports and the tree").

The differences are those of the simulator, where each figure is exact and the same on every
machine (tests/test_ports.py checks this list against it); measured ones are `make bench`'s.
"""

from __future__ import annotations

from dataclasses import dataclass

# kernel:NAME (the tree's code) -> the hand port that follows it.
PORT_OF_TREE_LOCK: dict[str, str] = {
    "kernel:rtmutex": "rtmutex_k0",
    "kernel:mutex": "mutex",
    "kernel:rwsem": "rwsem",
    "kernel:qspinlock": "qspinlock",
}
UNCONTENDED_TOLERANCE = 0.05  # measured, port / tree at one writer, both ways
SIMULATED_TOLERANCE = 0.10  # simulated, port / tree at every writer count
# Where the differential check runs: the lent 16-core machine's profile, at these writers,
# for this many virtual seconds after a quarter as much warm-up, once at each of these gaps
# between a writer's acquisitions. Port / tree is the geometric mean over the gaps: at one
# gap, a few CPUs in a deterministic model can lock into one phase of each other's loops.
# Before the simulator varied its transfer latencies, the ratio at 2 writers moved from 0.85
# to 1.19 (rwsem) and from 0.95 to 1.49 (qspinlock) as the gap moved by a few ns, both ways
# (docs/simulator.md, "Phase"); with them, 0.93 to 1.23 and 1.00 to 1.02.
CHECK_PROFILE = "lent-xeon-16"
CHECK_WRITERS = (1, 2, 8)
CHECK_GAPS_NS = (0, 10, 20, 40, 80, 160)
CHECK_SECONDS = 0.002


@dataclass(frozen=True)
class PortDifference:
    port: str
    nwriters: int
    ratio: float  # port / tree throughput, simulated on CHECK_PROFILE (geometric mean)
    why: str


# None since the rtmutex port does 6.1's bookkeeping (docs/locks.md, "rtmutex"): it was 1.81
# times the tree's code at 2 writers and 1.18 at 8.
KNOWN_DIFFERENCES: tuple[PortDifference, ...] = ()


def known_difference(port: str, nwriters: int) -> PortDifference | None:
    return next((d for d in KNOWN_DIFFERENCES if d.port == port and d.nwriters == nwriters), None)


def differences_note(locks: list[str]) -> str | None:
    """The note under a table that shows a port beside its tree's code: where they differ in
    the simulator, and why, as far as known."""
    shown = set(locks)
    pairs = [(tree, port) for tree, port in PORT_OF_TREE_LOCK.items() if {tree, port} <= shown]
    if not pairs:
        return None
    listed = [
        f"{d.port} {d.ratio:.2f}x at {d.nwriters} writer{'s' if d.nwriters > 1 else ''}"
        for _, port in pairs
        for d in KNOWN_DIFFERENCES
        if d.port == port
    ]
    names = ", ".join(f"{port} and {tree}" for tree, port in pairs)
    if not listed:
        return f"{names}: within {SIMULATED_TOLERANCE:.0%} of each other when simulated"
    return (
        f"{names} differ beyond {SIMULATED_TOLERANCE:.0%} when simulated on {CHECK_PROFILE} "
        f"(port / tree): {'; '.join(listed)} (why, as far as known: locklab/model/ports.py)"
    )
