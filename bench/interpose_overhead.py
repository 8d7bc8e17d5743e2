"""Interposition: what LD_PRELOAD of liblocklab-interpose.so costs, and Kyoto Cabinet per lock.

1. Passthrough cost, two ways. Whole program: kccachetest wicked with no preload vs
   LOCKLAB_LOCK=pthread_mutex (every call forwarded to the C library), interleaved, >= 5
   repeats: median ratio and spread; on a shared machine the spread is far wider than 3%. Per
   call: bench/mutex_calls.c's uncontended lock/unlock pairs with and without the preload give
   what one call costs more, in ns, which times the calls kccachetest makes (its LOCKLAB_STATS
   counts) over the CPU time it spends is the share of its time that interposition takes.
2. The Kyoto Cabinet table: kccachetest wicked at 1, 2 and 4 threads under pthread_mutex, mcs,
   ticket, qspinlock and futex_mutex, median over repeats.

Throughput is kccachetest's own: threads x records x iterations / the sum of its "time:" lines
(the time it measures around each iteration's work, not the process's start and exit).
Run from the repository root after `make build`: .venv/bin/python bench/interpose_overhead.py
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ROOT / "build" / "opt" / "liblocklab-interpose.so"
MUTEX_CALLS = ROOT / "build" / "opt" / "mutex_calls"
PAIR_LINE = re.compile(r"^(mutex|rwlock)_ns_per_pair: ([0-9.]+)$", re.MULTILINE)
TIME_LINE = re.compile(r"^time: ([0-9.]+)$", re.MULTILINE)
LOCKS = ("pthread_mutex", "mcs", "ticket", "qspinlock", "futex_mutex")


def preload_env(lock: str | None, stats: Path | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if lock is not None:
        env["LD_PRELOAD"] = str(LIBRARY)
        env["LOCKLAB_LOCK"] = lock
    if stats is not None:
        env["LOCKLAB_STATS"] = str(stats)
    return env


def kc_run(threads: int, records: int, iterations: int, env: dict[str, str]) -> float:
    """kccachetest's own measured seconds (the sum of its "time:" lines)."""
    cmd = ["kccachetest", "wicked", "-th", str(threads), "-it", str(iterations), str(records)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, check=False)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines or lines[-1] != "ok":
        sys.exit(f"kccachetest failed: {proc.stdout[-500:]}")
    return sum(float(t) for t in TIME_LINE.findall(proc.stdout))


def kc_throughput(threads: int, records: int, iterations: int, lock: str | None) -> float:
    seconds = kc_run(threads, records, iterations, preload_env(lock))
    return threads * records * iterations / seconds


def pair_costs(lock: str | None) -> dict[str, float]:
    proc = subprocess.run(
        [str(MUTEX_CALLS)], capture_output=True, text=True, env=preload_env(lock), check=True
    )
    return {kind: float(ns) for kind, ns in PAIR_LINE.findall(proc.stdout)}


def per_call_cost(repeats: int, records: int, iterations: int) -> None:
    print("# passthrough cost per call: mutex_calls, uncontended lock/unlock pairs, ns")
    added: dict[str, list[float]] = {"mutex": [], "rwlock": []}
    for _ in range(repeats):
        bare, preloaded = pair_costs(None), pair_costs("pthread_mutex")
        for kind in added:
            added[kind].append(preloaded[kind] - bare[kind])
    for kind, values in added.items():
        print(f"{kind:<7} +{statistics.median(values):.2f} ns a pair (median; {spread(values)})")
    with tempfile.TemporaryDirectory() as folder:
        stats_file = Path(folder) / "stats.json"
        seconds = kc_run(2, records, iterations, preload_env("pthread_mutex", stats_file))
        stats = json.loads(stats_file.read_text())
    mutex_calls = stats["passthrough"]["acquisitions"]
    rw = stats["rwlocks"]["passthrough"]
    rwlock_calls = rw["read_acquisitions"] + rw["write_acquisitions"]
    extra_s = (
        statistics.median(added["mutex"]) * mutex_calls
        + statistics.median(added["rwlock"]) * rwlock_calls
    ) / 1e9
    print(
        f"kccachetest wicked -th 2: {mutex_calls:,} mutex and {rwlock_calls:,} rwlock "
        f"acquisitions in {seconds:.3f} s on 2 threads: interposition takes "
        f"{extra_s * 1e3:.2f} ms of {2 * seconds * 1e3:.0f} ms CPU, "
        f"{extra_s / (2 * seconds) * 100:.2f}% (goal <= 3%)"
    )


def spread(values: list[float]) -> str:
    return f"min {min(values):.3f} max {max(values):.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--records", type=int, default=200000)
    parser.add_argument("--iterations", type=int, default=2)
    parser.add_argument("--threads", default="1,2,4")
    parser.add_argument("--only", choices=("passthrough",), help="skip the Kyoto Cabinet table")
    args = parser.parse_args()
    if shutil.which("kccachetest") is None:
        sys.exit("kccachetest missing: scripts/install-deps.sh installs kyotocabinet-utils")
    if not LIBRARY.exists() or not MUTEX_CALLS.exists():
        sys.exit(f"{LIBRARY} or {MUTEX_CALLS} missing: make build bench-loops")

    print(f"# passthrough cost: kccachetest wicked -th 2 -it {args.iterations} {args.records}")
    print(f"# interleaved, {args.repeats} repeats; ratio = preloaded / not preloaded throughput")
    ratios, bare_all, pass_all = [], [], []
    for _ in range(args.repeats):
        bare = kc_throughput(2, args.records, args.iterations, None)
        passthrough = kc_throughput(2, args.records, args.iterations, "pthread_mutex")
        bare_all.append(bare)
        pass_all.append(passthrough)
        ratios.append(passthrough / bare)
    print(f"no preload      median {statistics.median(bare_all):12.0f} records/s")
    print(f"pthread_mutex   median {statistics.median(pass_all):12.0f} records/s")
    median_ratio = statistics.median(ratios)
    print(
        f"ratio           median {median_ratio:.3f} ({(1 - median_ratio) * 100:+.1f}% cost), "
        f"{spread(ratios)}"
    )
    of_medians = statistics.median(pass_all) / statistics.median(bare_all)
    print(f"ratio of medians       {of_medians:.3f} ({(1 - of_medians) * 100:+.1f}% cost)")
    print()
    per_call_cost(args.repeats, args.records, args.iterations)

    if args.only == "passthrough":
        return
    threads = [int(t) for t in args.threads.split(",")]
    repeats = max(3, args.repeats // 2)
    print(f"\n# Kyoto Cabinet: kccachetest wicked -it {args.iterations} {args.records}, records/s")
    print(f"# median of {repeats} interleaved repeats (ratio to pthread_mutex in brackets)")
    results: dict[tuple[str, int], list[float]] = {}
    for _ in range(repeats):
        for n in threads:
            for lock in LOCKS:
                value = kc_throughput(n, args.records, args.iterations, lock)
                results.setdefault((lock, n), []).append(value)
    print(f"{'lock':<15}" + "".join(f"{f'{n} thr':>22}" for n in threads))
    for lock in LOCKS:
        cells = []
        for n in threads:
            median = statistics.median(results[(lock, n)])
            base = statistics.median(results[("pthread_mutex", n)])
            cells.append(f"{median:>13.0f} ({median / base:4.2f})")
        print(f"{lock:<15}" + "".join(f"{c:>22}" for c in cells))
    print(f"\n# machine: {os.cpu_count()} CPUs; shared, noisy: compare within a run only")


if __name__ == "__main__":
    from child_failure import run_main  # bench/ is on sys.path only when run as a script

    run_main(main)
