"""Benchmark (not a test: it prints figures, asserts nothing): qspinlock and CNA against MCS at
1 and 2 threads, the low contention seed 002's reviewers cared about most.

Each figure is the median of interleaved repeats, and each ratio is taken between runs made
side by side in the same round, so drift of a shared machine hits both sides alike.
Run with `make bench`.
"""

import argparse
import json
import statistics
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "build" / "opt" / "locklab-bench"
LOCKS = ("mcs", "qspinlock", "cna")


def ops_per_s(lock: str, nwriters: int, seconds: float) -> float:
    command = [str(BENCH), "--lock", lock, "--nwriters", str(nwriters), "--pin", "compact"]
    command += ["--duration", str(seconds), "--warmup", "0.2", "--json", "-"]
    proc = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)["throughput_ops_per_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=1.0)
    args = parser.parse_args()
    print(f"qspinlock and CNA vs MCS, {args.repeats} interleaved repeats of {args.seconds:g} s")
    print(f"{'lock':<10} {'threads':>7} {'ops/s':>14} {'vs mcs':>8} {'sd':>6}")
    for nwriters in (1, 2):
        rates: dict[str, list[float]] = {lock: [] for lock in LOCKS}
        for _ in range(args.repeats):
            for lock in LOCKS:
                rates[lock].append(ops_per_s(lock, nwriters, args.seconds))
        for lock in LOCKS:
            ratios = [a / b for a, b in zip(rates[lock], rates["mcs"], strict=True)]
            sd = statistics.stdev(ratios) if len(ratios) > 1 else 0.0
            print(
                f"{lock:<10} {nwriters:>7} {statistics.median(rates[lock]):>14,.0f} "
                f"{statistics.median(ratios):>8.3f} {sd:>6.3f}"
            )


if __name__ == "__main__":
    from child_failure import run_main  # bench/ is on sys.path only when run as a script

    run_main(main)
