"""What a table can show: throughput by default, or another per-run figure from the engine's
JSON (seed 001 and 003 look at context switches and latency, seed 002 at hand-overs)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from locklab.store import Run

# Where the per-run figures are in the engine's JSON; the table's metrics and the report's
# figures read them here, so each has one path and one unit.
LATENCY_P50_NS = ("latency_ns", "write", "p50")
LATENCY_P99_NS = ("latency_ns", "write", "p99")
VOLUNTARY_SWITCHES = ("context_switches", "voluntary_per_1000_acquisitions")
SAME_NODE_FRACTION = ("handoffs", "same_node_fraction")
JAIN_INDEX = ("fairness", "write", "jain_index")
CPU_MS = ("cpu", "ms_per_1000_acquisitions")
# A program in a booted kernel: the guest's context switches (/proc/stat ctxt) per operation.
GUEST_SWITCHES_PER_OP = ("guest", "context_switches_per_op")
# cyclictest's histogram in a guest program's output (seed 003's latency).
CYCLICTEST_MAX_US = ("guest", "cyclictest", "max_us")
CYCLICTEST_P99_US = ("guest", "cyclictest", "p99_us")


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    higher: str  # the verdict's word for a significantly higher value
    lower: str
    higher_is_better: bool
    value: Callable[[Run], float | None]
    # Larger units, as (name, how many of `unit` make one), and the one a table normally uses
    # (seed 000's kops/s). A table leaves it only when its numbers would lose their digits:
    # for a smaller unit when even its largest mean is below 1 (15 ops/s is not 0.01 kops/s),
    # for a larger one when even its smallest mean is 10 of it or more (140 Mops/s is
    # 140.00, not 140000.00).
    larger_units: tuple[tuple[str, float], ...] = ()
    usual_unit: str = ""

    def unit_for(self, means: list[float]) -> tuple[str, float]:
        """The unit to show these means in, and the divisor that converts them to it."""
        ladder = [(self.unit, 1.0), *self.larger_units]
        names = [name for name, _ in ladder]
        index = names.index(self.usual_unit) if self.usual_unit in names else 0
        sizes = [abs(m) for m in means if m]
        if not sizes:
            return ladder[index]
        while index > 0 and max(sizes) < ladder[index][1]:
            index -= 1
        while index + 1 < len(ladder) and min(sizes) >= 10 * ladder[index + 1][1]:
            index += 1
        return ladder[index]


def from_result(*path: str, scale: float = 1.0) -> Callable[[Run], float | None]:
    """A per-run figure at `path` in the engine's JSON, times `scale` (None if absent)."""

    def value(run: Run) -> float | None:
        node: object = run.result
        for key in path:
            if not isinstance(node, dict):
                return None
            node = node.get(key)
        return float(node) * scale if isinstance(node, int | float) else None

    return value


TIMER_COST_NS = ("calibration", "sample_ns")


def above_timer(value: Callable[[Run], float | None]) -> Callable[[Run], float | None]:
    """A measured wait, or None where the run's p99 wait was within the timer's own cost (two
    clock reads, calibrated): there a wait is below what the timer resolves (10 and 20 ns at
    one writer on a 2-vCPU VM, for every lock). A simulated run's clock costs nothing and
    resolves a cycle, so its waits all count."""
    p99, cost = from_result(*LATENCY_P99_NS), from_result(*TIMER_COST_NS)

    def resolved(run: Run) -> float | None:
        worst, floor = p99(run), cost(run)
        if worst is not None and floor and worst <= floor:
            return None
        return value(run)

    return resolved


def _throughput(run: Run) -> float | None:
    return run.throughput_ops_per_s


METRICS: dict[str, Metric] = {
    metric.name: metric
    for metric in (
        Metric(
            "throughput", "ops/s", "faster", "slower", True, _throughput,
            (("kops/s", 1e3), ("Mops/s", 1e6)), "kops/s",
        ),
        Metric(
            "ctxsw", "voluntary switches/1k ops", "more switches", "fewer switches", False,
            from_result(*VOLUNTARY_SWITCHES),
        ),
        Metric(
            "ctxsw-op", "guest context switches/1k ops", "more switches", "fewer switches",
            False, from_result(*GUEST_SWITCHES_PER_OP, scale=1000.0),
        ),
        Metric(
            "rt-max", "cyclictest max latency us", "longer max latency", "shorter max latency",
            False, from_result(*CYCLICTEST_MAX_US),
        ),
        Metric(
            "rt-p99", "cyclictest p99 latency us", "longer p99 latency", "shorter p99 latency",
            False, from_result(*CYCLICTEST_P99_US),
        ),
        Metric(
            "p50", "write wait p50 us", "longer p50 wait", "shorter p50 wait", False,
            from_result(*LATENCY_P50_NS, scale=1e-3),
        ),
        Metric(
            "p99", "write wait p99 us", "longer p99 wait", "shorter p99 wait", False,
            from_result(*LATENCY_P99_NS, scale=1e-3),
        ),
        Metric(
            "same-node", "same-node hand-overs %", "more same-node", "less same-node", True,
            from_result(*SAME_NODE_FRACTION, scale=100.0),
        ),
    )
}  # fmt: skip
