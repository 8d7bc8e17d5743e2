"""Benchmark (prints figures, asserts nothing): the waiting policies under programs that run
more threads than CPUs.

1. The interposition torture program (tests/interpose/torture.c) at 2 and 4 threads per CPU
   under every lock with a waiting policy, parked and yielding, against glibc's mutex: the
   median time of 3 runs each and its ratio to glibc's. Goal: spin-then-park within 5x.
2. LiTL's main table (Guiroux et al., USENIX ATC 2016): the memcached and Kyoto Cabinet
   campaigns (campaigns/memcached.toml, campaigns/kyoto-cabinet.toml) with their threads at 1,
   2 and 4 times the CPU count, each spinning lock under spin and spin-then-park, against
   glibc's mutex (the campaigns' baseline). A spinning run that crawls past the campaign's
   program timeout is a failed run (the campaign then skips that variant's remaining runs and
   exits 1 after its table): that is what the policies are for.
3. The torture program at 10 times the work (20000 iterations), 4 threads per CPU, for the
   FIFO locks, where every hand-over to a sleeping waiter costs a wake-up: their worst case.
Run with `make bench` (about 15 minutes on 2 CPUs); `--part torture|programs|heavy` runs one.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCKLAB = ROOT / ".venv" / "bin" / "locklab"
ENGINE = ROOT / "build" / "opt" / "locklab-bench"
LIBRARY = ROOT / "build" / "opt" / "liblocklab-interpose.so"
TORTURE = ROOT / "build" / "opt" / "interpose-torture"
CPUS = len(os.sched_getaffinity(0))
REPEATS = 3
TORTURE_ITERATIONS = 2000
TORTURE_TIMEOUT_S = 300
PROGRAM_LOCKS = ("mcs", "ticket", "qspinlock")
PROGRAM_TIMEOUT_S = 30


def waiting_locks() -> list[str]:
    proc = subprocess.run([str(ENGINE), "--list", "--json", "-"], capture_output=True, text=True,
                          check=True)  # fmt: skip
    return [
        lock["name"] for lock in json.loads(proc.stdout)["locks"]
        if any(t["name"] == "wait" for t in lock["tunables"])
    ]  # fmt: skip


def torture_seconds(
    lock: str | None, policy: str, threads: int, iterations: int = TORTURE_ITERATIONS
) -> float:
    env = dict(os.environ)
    if lock is not None:
        env.update(LD_PRELOAD=str(LIBRARY), LOCKLAB_LOCK=lock, LOCKLAB_WAIT=policy)
    cmd = [str(TORTURE), "--threads", str(threads), "--iterations", str(iterations)]
    started = time.monotonic()
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                              timeout=TORTURE_TIMEOUT_S, check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        return float("inf")
    if proc.returncode != 0:
        sys.exit(f"torture failed under {lock} wait={policy}: {proc.stdout[-300:]}")
    return time.monotonic() - started


def torture_table() -> None:
    loads = (2, 4)
    print(f"interposition torture, {TORTURE_ITERATIONS} iterations, median of {REPEATS} runs, "
          f"{CPUS} CPUs; seconds (x glibc)")  # fmt: skip
    glibc = {
        per_cpu: statistics.median(torture_seconds(None, "", per_cpu * CPUS)
                                   for _ in range(REPEATS))
        for per_cpu in loads
    }  # fmt: skip
    header = "".join(f"{f'{p}/CPU park':>18}{f'{p}/CPU yield':>18}" for p in loads)
    print(f"{'lock':<16}{header}")
    print(f"{'glibc':<16}" + "".join(f"{glibc[p]:>10.2f}{'':>8}{'':>18}" for p in loads))
    worst = 0.0
    for lock in waiting_locks():
        cells = []
        for per_cpu in loads:
            for policy in ("spin-then-park", "yield"):
                seconds = statistics.median(
                    torture_seconds(lock, policy, per_cpu * CPUS) for _ in range(REPEATS)
                )
                ratio = seconds / glibc[per_cpu]
                if policy == "spin-then-park":
                    worst = max(worst, ratio)
                cells.append(f"{seconds:>9.2f} ({ratio:>4.1f}x)")
        print(f"{lock:<16}" + "".join(f"{cell:>18}" for cell in cells))
    print(f"worst spin-then-park ratio to glibc: {worst:.1f}x (goal: at most 5x)\n")


def program_campaign(source: Path, out: Path) -> Path:
    """The campaign with its threads at 1, 2 and 4 x CPUs and each lock under both policies."""
    data = tomllib.loads(source.read_text())
    program = ", ".join(f'"{word}"' for word in data["program"])
    lines = [
        f'name = "{data["name"]}-waiting"',
        'baseline = "pthread_mutex"',
        "repeat = 3",
        f"program = [{program}]",
        f"program_timeout = {PROGRAM_TIMEOUT_S}",
        f"duration = {data.get('duration', 2)}",
        "warmup = 0",
    ]
    for key in ("work", "metric_regex"):
        if key in data:
            lines.append(f"{key} = {data[key]!r}")  # a TOML literal string
    lines += ["", "[sweep]", f"nwriters = [{CPUS}, {2 * CPUS}, {4 * CPUS}]", ""]
    lines += ["[[variant]]", 'lock = "pthread_mutex"', ""]
    for lock in PROGRAM_LOCKS:
        for policy in ("spin", "spin-then-park"):
            short = "park" if policy == "spin-then-park" else policy
            lines += ["[[variant]]", f'label = "{lock}-{short}"', f'lock = "{lock}"',
                      f'params = {{ wait = "{policy}" }}', ""]  # fmt: skip
    path = out / source.name
    path.write_text("\n".join(lines))
    return path


def program_tables() -> int:
    """Each campaign's table, and the one line of each variant that hung."""
    with tempfile.TemporaryDirectory() as scratch:
        for name in ("memcached.toml", "kyoto-cabinet.toml"):
            campaign = program_campaign(ROOT / "campaigns" / name, Path(scratch))
            cmd = [str(LOCKLAB), "campaign", str(campaign), "--oversubscribe", "--plain",
                   "--store", str(Path(scratch) / "store")]  # fmt: skip
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=7200)
            print(proc.stdout, end="")
            failed = [line for line in proc.stderr.splitlines() if line.startswith("locklab:")]
            print("\n".join(failed) + "\n")  # a spinning variant that hung: expected
    return 0


def heavy_torture() -> None:
    iterations, threads = 10 * TORTURE_ITERATIONS, 4 * CPUS
    glibc = statistics.median(torture_seconds(None, "", threads, iterations) for _ in range(3))
    print(f"torture at {iterations} iterations, {threads} threads on {CPUS} CPUs, median of 3: "
          f"glibc {glibc:.2f} s")  # fmt: skip
    for lock in ("ticket", "mcs", "clh", "qspinlock", "tas"):
        seconds = statistics.median(
            torture_seconds(lock, "spin-then-park", threads, iterations) for _ in range(3)
        )
        print(f"  {lock:<10} spin-then-park {seconds:6.2f} s ({seconds / glibc:.1f}x)")
    print()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("all", "torture", "programs", "heavy"), default="all")
    part = parser.parse_args().part
    if part in ("all", "torture"):
        torture_table()
    if part in ("all", "heavy"):
        heavy_torture()
    if part in ("all", "programs"):
        return program_tables()
    return 0


if __name__ == "__main__":
    from child_failure import run_main  # bench/ is on sys.path only when run as a script

    run_main(main)
