"""Benchmarks P1 and P2 of the engine (not tests: they print figures, they assert nothing).

P1: single-thread, uncontended lock+unlock throughput through the engine, divided by that of a
    minimal inline loop over the same lock code (bench/inline_loop.c). Goal >= 0.95.
P2: our ticket, MCS and CLH divided by Concurrency Kit's, at 1 and 2 threads. Goal >= 1.00.

Each figure is the median of interleaved repeats, so drift on a shared machine hits both sides
of a ratio alike. Run with `make bench`.
"""

import argparse
import json
import statistics
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "build" / "opt" / "locklab-bench"
INLINE = {lock: ROOT / "build" / "opt" / f"inline_{lock}" for lock in ("tas", "ticket")}
P2_PAIRS = (("ticket", "ck_ticket"), ("mcs", "ck_mcs"), ("clh", "ck_clh"))


def engine_ops_per_s(lock: str, nwriters: int, seconds: float) -> float:
    proc = subprocess.run(
        [
            str(BENCH),
            "--lock",
            lock,
            "--nwriters",
            str(nwriters),
            "--duration",
            str(seconds),
            "--warmup",
            "0.2",
            "--json",
            "-",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return float(json.loads(proc.stdout)["throughput_ops_per_s"])


def inline_ops_per_s(lock: str, ops: int) -> float:
    proc = subprocess.run(
        [str(INLINE[lock]), str(ops)], capture_output=True, text=True, check=True, timeout=120
    )
    return float(proc.stdout)


def median_ratio(numerators: list[float], denominators: list[float]) -> tuple[float, float]:
    ratios = [a / b for a, b in zip(numerators, denominators, strict=True)]
    spread = statistics.stdev(ratios) if len(ratios) > 1 else 0.0
    return statistics.median(ratios), spread


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=1.0, help="per engine run")
    args = parser.parse_args()

    print(f"P1: engine vs minimal inline loop, 1 thread, {args.repeats} interleaved repeats")
    print(f"{'lock':<8} {'engine ops/s':>14} {'inline ops/s':>14} {'ratio':>7} {'sd':>6}  goal")
    for lock in INLINE:
        engine, inline = [], []
        for _ in range(args.repeats):
            engine.append(engine_ops_per_s(lock, 1, args.seconds))
            inline.append(inline_ops_per_s(lock, int(engine[-1] * args.seconds)))
        ratio, spread = median_ratio(engine, inline)
        print(
            f"{lock:<8} {statistics.median(engine):>14,.0f} {statistics.median(inline):>14,.0f}"
            f" {ratio:>7.3f} {spread:>6.3f}  >= 0.95 {'met' if ratio >= 0.95 else 'MISSED'}"
        )

    print()
    print(f"P2: ours vs Concurrency Kit through the engine, {args.repeats} interleaved repeats")
    print(
        f"{'pair':<20} {'threads':>7} {'ours ops/s':>14} {'ck ops/s':>14} {'ratio':>7} {'sd':>6}"
        "  goal"
    )
    for ours, peer in P2_PAIRS:
        for nwriters in (1, 2):
            ours_runs, peer_runs = [], []
            for _ in range(args.repeats):
                ours_runs.append(engine_ops_per_s(ours, nwriters, args.seconds))
                peer_runs.append(engine_ops_per_s(peer, nwriters, args.seconds))
            ratio, spread = median_ratio(ours_runs, peer_runs)
            print(
                f"{ours + ' / ' + peer:<20} {nwriters:>7} {statistics.median(ours_runs):>14,.0f}"
                f" {statistics.median(peer_runs):>14,.0f} {ratio:>7.3f} {spread:>6.3f}"
                f"  >= 1.00 {'met' if ratio >= 1.0 else 'MISSED'}"
            )


if __name__ == "__main__":
    main()
