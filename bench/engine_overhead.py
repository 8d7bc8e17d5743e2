"""Benchmarks P1 and P2 of the engine (not tests: they print figures, they assert nothing).

P1: lock+unlock throughput through the engine, divided by that of bare loops, at 1 and 2
    threads, each thread pinned to its own CPU (0, 1) on both sides:
    - same source: the lock's own source inlined into a loop of nothing else
      (bench/inline_loop.c); goal >= 0.95;
    - checked: the same loop with the engine's per-acquisition checks added (owner word, last
      holder: inline_loop.c -DBARE_CHECKS), so what is left is the engine's own cost, and the
      same-source ratio's shortfall beyond it is what the checks cost by themselves;
    - one read: the same loop with one plain read of the section's line and nothing else
      (-DBARE_ONE_READ), the least a check that reads the line back can cost; the second table
      gives it and the checked loop over the same-source loop;
    - independent: Concurrency Kit's and glibc's locks in the same bare loop (bench/ck_loop.c),
      for the locks that have a counterpart there.
    The engine's critical section keeps its correctness checks; the bare loops' is one shared
    counter increment. Also: the cost of the indirect call plugins keep (the same lock run in
    the engine's generic loop, LOCKLAB_INDIRECT_LOOP=1, against its specialised loop).
P2: our ticket, MCS and CLH divided by Concurrency Kit's, both through the engine, at 1 and 2
    threads. Goal >= 1.00.

Every ratio is the median of interleaved repeats (engine, bare, independent, engine, ...), so
drift on a shared machine hits both sides alike; sd is the spread of the per-repeat ratios, and
the interval beside it is the distribution-free one for the median (order statistics, at least
90% coverage, MEDIAN_COVERAGE). A goal is met when the whole interval clears it, MISSED when the
whole interval falls short, and "noise" when the interval straddles it: the repeats cannot tell.
Run with `make bench`.
"""

import argparse
import json
import math
import os
import statistics
import subprocess
from pathlib import Path
from typing import NamedTuple

from locklab.run.machine_measure import cpu_vendor

ROOT = Path(__file__).resolve().parent.parent
OPT = ROOT / "build" / "opt"
BENCH = OPT / "locklab-bench"
CK_LOOP = OPT / "ck_loop"
# engine lock -> its counterpart in bench/ck_loop.c (None: there is none)
P1_LOCKS = {
    "tas": "ck_fas",
    "ttas": None,
    "ticket": "ck_ticket",
    "mcs": "ck_mcs",
    "clh": "ck_clh",
    "qspinlock": None,
    "cna": None,
    "pthread_mutex": "pthread_mutex",
    "futex_mutex": None,
}
P2_PAIRS = (("ticket", "ck_ticket"), ("mcs", "ck_mcs"), ("clh", "ck_clh"))
P1_GOAL = 0.95
P2_GOAL = 1.00
# The least coverage asked of the median's interval; 5 repeats give 94%, 7 give 98%.
MEDIAN_COVERAGE = 0.90


def engine_run(
    lock: str, nwriters: int, seconds: float, indirect: bool = False, plugin: str | None = None,
    checks: bool = True,
) -> dict:  # fmt: skip
    env = dict(os.environ)
    if indirect:
        env["LOCKLAB_INDIRECT_LOOP"] = "1"
    proc = subprocess.run(
        [
            str(BENCH),
            *(["--plugin", plugin] if plugin else []),
            "--lock",
            lock,
            "--nwriters",
            str(nwriters),
            "--pin",
            ",".join(str(cpu) for cpu in range(nwriters)),
            "--duration",
            str(seconds),
            "--warmup",
            "0.1",
            *([] if checks else ["--no-checks"]),
            "--json",
            "-",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env=env,
    )
    return json.loads(proc.stdout)


def engine_ops_per_s(
    lock: str, nwriters: int, seconds: float, indirect: bool = False, plugin: str | None = None,
    checks: bool = True,
) -> float:  # fmt: skip
    result = engine_run(lock, nwriters, seconds, indirect, plugin, checks)
    return float(result["throughput_ops_per_s"])


def bare_ops_per_s(program: Path, lock: str, nthreads: int, seconds: float) -> float:
    proc = subprocess.run(
        [str(program), lock, str(seconds), str(nthreads)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return float(proc.stdout)


def median_interval(values: list[float]) -> tuple[float, float]:
    """The narrowest [k-th smallest, k-th largest] that covers the median with MEDIAN_COVERAGE.

    The median lies below the k-th smallest of n values with probability P(Binomial(n, 1/2) < k),
    whatever their distribution, and above the k-th largest as often. With too few values for
    the coverage, the interval is all of them.
    """
    ordered = sorted(values)
    n = len(ordered)
    k = 1
    while k < (n + 1) // 2:
        tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
        if 1 - 2 * tail < MEDIAN_COVERAGE:
            break
        k += 1
    return ordered[k - 1], ordered[n - k]


class Ratio(NamedTuple):
    """Per-repeat ratios, summarised: their median, sd, and the median's interval."""

    median: float
    sd: float
    low: float
    high: float

    def interval(self) -> str:
        return f"{self.low:.2f}-{self.high:.2f}"

    def verdict(self, goal: float) -> str:
        """met, MISSED, or noise: where the median's interval lies against the goal."""
        if self.low >= goal:
            return "met"
        if self.high < goal:
            return "MISSED"
        return "noise"


def ratio_of(numerators: list[float], denominators: list[float]) -> Ratio:
    values = [a / b for a, b in zip(numerators, denominators, strict=True)]
    spread = statistics.stdev(values) if len(values) > 1 else 0.0
    return Ratio(statistics.median(values), spread, *median_interval(values))


def p1(repeats: int, seconds: float, threads: tuple[int, ...], locks: list[str]) -> None:
    print(f"P1: engine vs bare loops, each thread pinned, {repeats} interleaved repeats")
    print("(the engine at its defaults: 'timed' is --latency-every auto's one in N)")
    print(
        f"{'lock':<14} {'thr':>3} {'engine ops/s':>13} {'same-src ops/s':>14} {'ratio':>6}"
        f" {'sd':>5} {'interval':>9}  {'goal':<12} {'checked':>7} {'sd':>5}  {'independent':<14}"
        f" {'ratio':>6} {'sd':>5} {'timed':>6}"
    )
    checks_cost = []
    for nthreads in threads:
        for lock in locks:
            peer = P1_LOCKS[lock]
            engine, same, checked, one_read, indep, timed = [], [], [], [], [], set()
            for _ in range(repeats):
                result = engine_run(lock, nthreads, seconds)
                engine.append(float(result["throughput_ops_per_s"]))
                timed.add(result["latency_ns"]["write"]["sampled_every"])
                same.append(bare_ops_per_s(OPT / f"inline_{lock}", lock, nthreads, seconds))
                checked.append(bare_ops_per_s(OPT / f"checked_{lock}", lock, nthreads, seconds))
                one_read.append(bare_ops_per_s(OPT / f"oneread_{lock}", lock, nthreads, seconds))
                if peer:
                    indep.append(bare_ops_per_s(CK_LOOP, peer, nthreads, seconds))
            checks_cost.append((lock, nthreads, ratio_of(checked, same), ratio_of(one_read, same)))
            ratio = ratio_of(engine, same)
            goal = f">={P1_GOAL:.2f} {ratio.verdict(P1_GOAL)}"
            line = (
                f"{lock:<14} {nthreads:>3} {statistics.median(engine):>13,.0f}"
                f" {statistics.median(same):>14,.0f} {ratio.median:>6.3f} {ratio.sd:>5.3f}"
                f" {ratio.interval():>9}  {goal:<12}"
            )
            over_checked = ratio_of(engine, checked)
            line += f" {over_checked.median:>7.3f} {over_checked.sd:>5.3f} "
            if peer:
                over_peer = ratio_of(engine, indep)
                line += f" {peer:<14} {over_peer.median:>6.3f} {over_peer.sd:>5.3f}"
            else:
                line += f" {'-':<14} {'':>6} {'':>5}"
            line += f" {'/'.join(str(n) for n in sorted(timed)):>6}"
            print(line, flush=True)
    print()
    print("What the checks cost by themselves: bare loops over the same-source loop, no engine")
    print(f"{'lock':<14} {'thr':>3} {'checked':>7} {'interval':>9} {'one read':>8} {'interval':>9}")
    for lock, nthreads, checked_share, read_share in checks_cost:
        print(
            f"{lock:<14} {nthreads:>3} {checked_share.median:>7.3f} {checked_share.interval():>9}"
            f" {read_share.median:>8.3f} {read_share.interval():>9}"
        )


def p1_unchecked(repeats: int, seconds: float, threads: tuple[int, ...], locks: list[str]) -> None:
    """--no-checks against the unchecked bare loop of the same source (inline_LOCK)."""
    print()
    print(f"P1 unchecked: the engine with --no-checks vs the same-source bare loop, {repeats} "
          "interleaved repeats")  # fmt: skip
    print(f"{'lock':<14} {'thr':>3} {'engine ops/s':>13} {'bare ops/s':>13} {'ratio':>6} "
          f"{'sd':>5} {'interval':>9}  goal")  # fmt: skip
    for nthreads in threads:
        for lock in locks:
            engine, bare = [], []
            for _ in range(repeats):
                engine.append(engine_ops_per_s(lock, nthreads, seconds, checks=False))
                bare.append(bare_ops_per_s(OPT / f"inline_{lock}", lock, nthreads, seconds))
            ratio = ratio_of(engine, bare)
            print(f"{lock:<14} {nthreads:>3} {statistics.median(engine):>13,.0f} "
                  f"{statistics.median(bare):>13,.0f} {ratio.median:>6.3f} {ratio.sd:>5.3f} "
                  f"{ratio.interval():>9}  >={P1_GOAL:.2f} {ratio.verdict(P1_GOAL)}",
                  flush=True)  # fmt: skip


# The engine's own Concurrency Kit and glibc locks, against the same lock in bench/ck_loop.c.
PEER_LOCKS = ("ck_fas", "ck_ticket", "ck_mcs", "ck_clh", "pthread_mutex")


def p1_peers(repeats: int, seconds: float, threads: tuple[int, ...]) -> None:
    """Every lock a user can name at the engine's speed: ck's and glibc's, in the engine (their
    own loops), against an independent bare loop of the same lock; unchecked and checked."""
    print()
    print(f"P1 for Concurrency Kit's and glibc's locks: the engine vs the same lock in "
          f"bench/ck_loop.c, {repeats} interleaved repeats, on {cpu_vendor()}")  # fmt: skip
    print(f"{'lock':<14} {'thr':>3} {'bare ops/s':>13} {'unchecked':>9} {'sd':>5} "
          f"{'interval':>9}  {'goal':<12} {'checked':>7} {'sd':>5}")  # fmt: skip
    for nthreads in threads:
        for lock in PEER_LOCKS:
            unchecked, checked, bare = [], [], []
            for _ in range(repeats):
                unchecked.append(engine_ops_per_s(lock, nthreads, seconds, checks=False))
                checked.append(engine_ops_per_s(lock, nthreads, seconds))
                bare.append(bare_ops_per_s(CK_LOOP, lock, nthreads, seconds))
            plain, full = ratio_of(unchecked, bare), ratio_of(checked, bare)
            goal = f">={P1_GOAL:.2f} {plain.verdict(P1_GOAL)}"
            print(f"{lock:<14} {nthreads:>3} {statistics.median(bare):>13,.0f} "
                  f"{plain.median:>9.3f} {plain.sd:>5.3f} {plain.interval():>9}  {goal:<12} "
                  f"{full.median:>7.3f} {full.sd:>5.3f}", flush=True)  # fmt: skip


def plugin_cost(repeats: int, seconds: float) -> None:
    print()
    print("Plugin path: the same lock in the engine's indirect-call loop vs its own loop, 1 thread")
    print(f"{'lock':<14} {'own loop':>13} {'indirect':>13} {'ratio':>6} {'sd':>5} {'ns/acq':>7}")
    for lock in ("tas", "ticket", "mcs"):
        own, indirect = [], []
        for _ in range(repeats):
            own.append(engine_ops_per_s(lock, 1, seconds))
            indirect.append(engine_ops_per_s(lock, 1, seconds, indirect=True))
        ratio = ratio_of(indirect, own)
        extra_ns = 1e9 / statistics.median(indirect) - 1e9 / statistics.median(own)
        print(
            f"{lock:<14} {statistics.median(own):>13,.0f} {statistics.median(indirect):>13,.0f}"
            f" {ratio.median:>6.3f} {ratio.sd:>5.3f} {extra_ns:>7.2f}",
            flush=True,
        )


def source_plugin_cost(repeats: int, seconds: float) -> None:
    """A user's plugin: examples/plugin/example_ticket.c compiled with its own loop (--plugin
    FILE.c) against the same file built as a .so (the indirect call), and the engine's ticket."""
    import sys

    sys.path.insert(0, str(ROOT / "python"))
    from locklab.run.source_plugin import compiled

    own = str(compiled(ROOT / "examples" / "plugin" / "example_ticket.c", "opt", BENCH))
    shared = str(OPT / "plugins" / "example_ticket.so")
    print()
    print("A user's plugin, 1 thread: example_ticket.c in its own loop vs as a .so, and vs ticket")
    print(f"{'from':<10} {'ops/s':>13} {'over .so':>8} {'sd':>5} {'over ticket':>11} {'sd':>5}")
    own_runs, so_runs, ticket_runs = [], [], []
    for _ in range(repeats):
        own_runs.append(engine_ops_per_s("example_ticket", 1, seconds, plugin=own))
        so_runs.append(engine_ops_per_s("example_ticket", 1, seconds, plugin=shared))
        ticket_runs.append(engine_ops_per_s("ticket", 1, seconds))
    over_so, over_ticket = ratio_of(own_runs, so_runs), ratio_of(own_runs, ticket_runs)
    print(f"{'.c':<10} {statistics.median(own_runs):>13,.0f} {over_so.median:>8.3f} "
          f"{over_so.sd:>5.3f} {over_ticket.median:>11.3f} {over_ticket.sd:>5.3f}")  # fmt: skip
    print(f"{'.so':<10} {statistics.median(so_runs):>13,.0f}")


def p2(repeats: int, seconds: float) -> None:
    print()
    print(f"P2: ours vs Concurrency Kit through the engine, {repeats} interleaved repeats")
    print(
        f"{'pair':<20} {'threads':>7} {'ours ops/s':>14} {'ck ops/s':>14} {'ratio':>7} {'sd':>6}"
        f" {'interval':>9}  goal"
    )
    for ours, peer in P2_PAIRS:
        for nwriters in (1, 2):
            ours_runs, peer_runs = [], []
            for _ in range(repeats):
                ours_runs.append(engine_ops_per_s(ours, nwriters, seconds))
                peer_runs.append(engine_ops_per_s(peer, nwriters, seconds))
            ratio = ratio_of(ours_runs, peer_runs)
            print(
                f"{ours + ' / ' + peer:<20} {nwriters:>7} {statistics.median(ours_runs):>14,.0f}"
                f" {statistics.median(peer_runs):>14,.0f} {ratio.median:>7.3f} {ratio.sd:>6.3f}"
                f" {ratio.interval():>9}  >= {P2_GOAL:.2f} {ratio.verdict(P2_GOAL)}",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=0.5, help="per run")
    parser.add_argument("--only", choices=("p1", "unchecked", "peers", "plugin", "p2"),
                        help="one part only")  # fmt: skip
    parser.add_argument("--threads", type=int, choices=(1, 2), help="P1 at this count only")
    parser.add_argument("--locks", help="P1 and P1 unchecked for these locks only, comma-separated")
    args = parser.parse_args()
    locks = args.locks.split(",") if args.locks else list(P1_LOCKS)
    unknown = [lock for lock in locks if lock not in P1_LOCKS]
    if unknown:
        parser.error(f"--locks: not in P1: {', '.join(unknown)}")
    threads = (args.threads,) if args.threads else (1, 2)
    if args.only in (None, "p1"):
        p1(args.repeats, args.seconds, threads, locks)
    if args.only in (None, "unchecked"):
        p1_unchecked(args.repeats, args.seconds, threads, locks)
    if args.only in (None, "peers"):
        p1_peers(args.repeats, args.seconds, threads)
    if args.only in (None, "plugin"):
        plugin_cost(args.repeats, args.seconds)
        source_plugin_cost(args.repeats, args.seconds)
    if args.only in (None, "p2"):
        p2(args.repeats, args.seconds)


if __name__ == "__main__":
    from child_failure import run_main  # bench/ is on sys.path only when run as a script

    run_main(main)
