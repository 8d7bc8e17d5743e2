"""Whether a change to the simulator moves its answers, or only which interleaving each seed
reaches: the same cell simulated over many seeds before and after, compared as two samples.

A deterministic model settles each run into one order of arrivals, and a change of no
consequence (a structure that moves the program's heap, a spin parked a few iterations
sooner) can send a seed into another order, as another seed would (docs/simulator.md, "The
order of arrivals"). One seed before and after then differs by as much as two regimes do, 19%
for MCS at four writers on two sockets. So a change is judged over seeds: per cell, the
throughputs of SEEDS seeds before and after by a two-sided Mann-Whitney U test, and the
shares of hand-overs within a node (what tells the regimes apart: 0%, 43% or 50% for that MCS
cell) by a two-sample Kolmogorov-Smirnov test, each at ALPHA with Bonferroni's correction over
the cells and the two tests. A change that moved seeds into another regime, or shifted the
figures within one, fails; one that reshuffles seeds among the same regimes passes. With 20
seeds a side, a shift of about one spread between seeds is caught: MCS's two regimes at four
writers, 19% apart, within a few percent each. The medians' ratio is printed, not judged: a
cell whose seeds spread by 20% (CNA at 16 writers in 2 ms windows) has a median that moves
by 3 to 5% between two samples of the same distribution.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from scipy import stats

SEEDS = 20
ALPHA = 0.01


@dataclass(frozen=True)
class SeedRun:
    throughput: float
    same_node_share: float


@dataclass(frozen=True)
class CellComparison:
    cell: str
    before_median: float
    after_median: float
    throughput_p: float
    share_p: float
    threshold: float  # ALPHA over the tests made, Bonferroni's

    @property
    def median_ratio(self) -> float:
        return self.after_median / self.before_median if self.before_median else float("nan")

    @property
    def same(self) -> bool:
        return self.throughput_p >= self.threshold and self.share_p >= self.threshold

    def line(self) -> str:
        verdict = "same" if self.same else "MOVED"
        return (
            f"{self.cell:<34} median {self.before_median / 1e3:>9,.0f} -> "
            f"{self.after_median / 1e3:>9,.0f} kops/s ({self.median_ratio - 1:+.1%})  "
            f"U p={self.throughput_p:.3f}  KS(same-node) p={self.share_p:.3f}  {verdict}"
        )


def virtual_figures(value: object) -> object:
    """A simulated run's JSON without the host's own figures (host_s, host_switches): what
    the same binary, command and seed repeat exactly, whichever runtime ran it."""
    if isinstance(value, dict):
        return {k: virtual_figures(v) for k, v in value.items() if not k.startswith("host_")}
    if isinstance(value, list):
        return [virtual_figures(v) for v in value]
    return value


def seed_run(result: dict) -> SeedRun:
    """The two figures compared, from one run's JSON."""
    handoffs = result.get("handoffs") or {}
    return SeedRun(float(result["throughput_ops_per_s"]),
                   float(handoffs.get("same_node_fraction") or 0.0))  # fmt: skip


def compare_cell(
    cell: str, before: list[SeedRun], after: list[SeedRun], cells: int
) -> CellComparison:
    """One cell's samples before and after, judged with the threshold for `cells` cells."""
    threshold = ALPHA / (2 * cells)
    a = [r.throughput for r in before]
    b = [r.throughput for r in after]
    throughput_p = (
        1.0 if a == b else float(stats.mannwhitneyu(a, b, alternative="two-sided").pvalue)
    )
    shares_a = [r.same_node_share for r in before]
    shares_b = [r.same_node_share for r in after]
    share_p = 1.0 if sorted(shares_a) == sorted(shares_b) else float(
        stats.ks_2samp(shares_a, shares_b).pvalue)  # fmt: skip
    return CellComparison(cell, statistics.median(a), statistics.median(b), throughput_p, share_p,
                          threshold)  # fmt: skip
