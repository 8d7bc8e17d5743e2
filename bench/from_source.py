"""Benchmark: each lock compiled from the kernel tree (kernel:NAME, Debian's linux-source-6.1,
stock) against the hand port of the same variant, both in the engine's specialised loop
(the from-source lock through its plugin's own loop), at 1 and 2 writers pinned to CPUs 0
and 1. Prints the median ratio (from source / hand port) of interleaved repeats, its sd and
the median's distribution-free interval; the uncontended goal is >= 0.95 (issue 25), judged
met, MISSED or noise as bench/engine_overhead.py judges P1. Not a test: it asserts nothing.
Run with `make bench`.
"""

from __future__ import annotations

import argparse
import statistics

from engine_overhead import BENCH, engine_ops_per_s, ratio_of
from locklab.kernel.from_source import build_source_lock

PAIRS = (("rtmutex", "rtmutex_k0"), ("mutex", "mutex"), ("rwsem", "rwsem"),
         ("qspinlock", "qspinlock"))  # fmt: skip
GOAL = 0.95


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--seconds", type=float, default=0.3)
    options = parser.parse_args()
    print(f"From source vs hand port, each writer pinned, {options.repeats} interleaved repeats")
    print(f"{'kernel lock':<18}{'hand port':<12}{'thr':>4}{'source ops/s':>15}{'hand ops/s':>15}"
          f"{'ratio':>7}{'sd':>6}  interval   goal")  # fmt: skip
    for family, hand in PAIRS:
        plugin = build_source_lock(f"kernel:{family}", "stock", [], "opt", BENCH).plugin
        for nwriters in (1, 2):
            source, ported = [], []
            for _ in range(options.repeats):
                source.append(engine_ops_per_s(f"kernel:{family}", nwriters, options.seconds,
                                               plugin=str(plugin)))  # fmt: skip
                ported.append(engine_ops_per_s(hand, nwriters, options.seconds))
            ratio = ratio_of(source, ported)
            goal = f">={GOAL} {ratio.verdict(GOAL)}" if nwriters == 1 else "-"
            mid_source, mid_hand = statistics.median(source), statistics.median(ported)
            print(f"kernel:{family:<11}{hand:<12}{nwriters:>4}{mid_source:>15,.0f}"
                  f"{mid_hand:>15,.0f}{ratio.median:>7.3f}{ratio.sd:>6.3f}"
                  f"  {ratio.interval()}  {goal}")  # fmt: skip


if __name__ == "__main__":
    main()
