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


KNOWN_DIFFERENCES: tuple[PortDifference, ...] = (
    PortDifference(
        port="rtmutex_k0",
        nwriters=2,
        ratio=1.82,
        why="1.64 to 2.23 over the gaps, the port faster at each. At no gap, a hand-over of "
        "the tree's code moves 36 lines against the port's 20 (LOCKLAB_SIM_TRACE, counted by "
        "code), and the port hands over 1.9 times as often in the same time: 6.1's "
        "priority-inheritance and wake-up bookkeeping, which the port keeps lighter. Per "
        "hand-over the tree's code moves the waiter in and out of the owner's pi_waiters tree "
        "(rt_mutex_enqueue_pi/dequeue_pi: 1.7), the owner's task in rt_mutex_setprio() at each "
        "boost and de-boost (1.7: pi_top_task changes even between equal priorities), the woken "
        "task's wake_q node and state (wake_q_add(), try_to_wake_up(): 3.6), the lock's tree "
        "of waiters (3.0) and, its sections under wait_lock being longer, 6.0 in waiting for "
        "wait_lock against the port's 2.5. The port keeps a list of the locks a task owns and "
        "wakes by the task's state alone",
    ),
    PortDifference(
        port="rtmutex_k0",
        nwriters=8,
        ratio=1.18,
        why="1.16 to 1.19 over the gaps. Both convoy (0.77 futex sleeps per acquisition each, "
        "at no gap); the tree's code moves 31 lines per acquisition against the port's 15 "
        "(means over the gaps), the same bookkeeping as at 2 writers",
    ),
)


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
