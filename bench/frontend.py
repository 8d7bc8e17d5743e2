"""Benchmarks P6 and P3 of the front end (not tests: they print figures, they assert nothing).

P6: wall time of `locklab run` for one 1-second run, minus the wall time of the same engine
    command run directly: what the front end adds (Python start, imports, catalogue check,
    store, statistics, table). Interleaved repeats, median. Goal <= 0.3 s. Also shown: the
    start-up alone (`locklab --version`: Python, the imports and the parser).
P3: coefficient of variation of 5 repeats of a cell, through locklab, uncontended (1 writer)
    and at 2 writers. Goal <= 2% and <= 5%.

Run with `make bench`.
"""

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCKLAB = ROOT / ".venv" / "bin" / "locklab"
ENGINE = ROOT / ".venv" / "bin" / "locklab-bench"
P3_LOCKS = "tas,ticket,mcs,pthread_mutex"
P6_GOAL_S = 0.3


def wall(command: list[str]) -> float:
    start = time.monotonic()
    subprocess.run(command, capture_output=True, check=True)
    return time.monotonic() - start


def p6(repeats: int) -> None:
    print(f"P6: front-end overhead on a 1-second run, {repeats} interleaved repeats")
    with tempfile.TemporaryDirectory() as store:
        run_args = ["--lock", "tas", "--nwriters", "1", "--duration", "1", "--warmup", "0"]
        locklab = [str(LOCKLAB), "run", *run_args, "--repeat", "1", "--store", store]
        # What locklab itself runs: the same options it passes (see ExperimentSpec.engine_args).
        engine = [str(ENGINE), *run_args, "--pin", "none", "--interval", "0.1", "--json", "-"]
        totals, engines, startups = [], [], []
        for _ in range(repeats):
            totals.append(wall(locklab))
            engines.append(wall(engine))
            startups.append(wall([str(LOCKLAB), "--version"]))
    overhead = [t - e for t, e in zip(totals, engines, strict=True)]
    median = statistics.median(overhead)
    print(f"{'locklab run':<22} {statistics.median(totals):8.3f} s  (median wall)")
    print(f"{'engine alone':<22} {statistics.median(engines):8.3f} s")
    print(f"{'start-up (--version)':<22} {statistics.median(startups):8.3f} s")
    print(
        f"{'front-end overhead':<22} {median:8.3f} s  (min {min(overhead):.3f}, "
        f"max {max(overhead):.3f})  goal <= {P6_GOAL_S} s "
        f"{'met' if median <= P6_GOAL_S else 'MISSED'}"
    )


def direct_cvs(duration: float, pin: str) -> dict[tuple[str, int], float]:
    """The same cells run with the engine alone, 5 rounds: the machine's own noise."""
    rates: dict[tuple[str, int], list[float]] = {}
    for _ in range(5):
        for lock in P3_LOCKS.split(","):
            for nwriters in (1, 2):
                proc = subprocess.run(
                    [
                        str(ENGINE), "--lock", lock, "--nwriters", str(nwriters),
                        "--duration", str(duration), "--warmup", "0.5", "--pin", pin,
                        "--json", "-",
                    ],
                    capture_output=True,
                    text=True,
                    check=True,
                )  # fmt: skip
                rate = json.loads(proc.stdout)["throughput_ops_per_s"]
                rates.setdefault((lock, nwriters), []).append(rate)
    return {key: statistics.stdev(v) / statistics.mean(v) for key, v in rates.items()}


def p3(duration: float, pin: str) -> None:
    print(f"\nP3: CV of 5 repeats through locklab ({duration:g} s runs, pin {pin})")
    with tempfile.TemporaryDirectory() as store:
        subprocess.run(
            [
                str(LOCKLAB), "run", "--lock", P3_LOCKS, "--nwriters", "1,2", "--repeat", "5",
                "--duration", str(duration), "--warmup", "0.5", "--pin", pin, "--store", store,
            ],
            capture_output=True,
            check=True,
        )  # fmt: skip
        exported = subprocess.run(
            [str(LOCKLAB), "export", "1", "--format", "json", "--store", store],
            capture_output=True,
            text=True,
            check=True,
        )
    cells = json.loads(exported.stdout)["cells"]
    direct = direct_cvs(duration, pin)
    print(f"{'lock':<16} {'nwriters':>8} {'mean kops/s':>14} {'CV':>7} {'engine alone':>13}  goal")
    for cell in sorted(cells, key=lambda c: (c["nwriters"], c["variant"])):
        goal = 0.02 if cell["nwriters"] == 1 else 0.05
        verdict = "met" if cell["cv"] <= goal else "MISSED"
        alone = direct[cell["variant"], cell["nwriters"]]
        print(
            f"{cell['variant']:<16} {cell['nwriters']:>8} {cell['mean']:>14,.1f} "
            f"{cell['cv']:>6.2%} {alone:>12.2%}  <= {goal:.0%} {verdict}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="P6 repeats")
    parser.add_argument("--duration", type=float, default=1.0, help="P3 run length")
    parser.add_argument("--pin", default="compact", help="P3 pinning")
    parser.add_argument("--only", choices=("p6", "p3"), help="print one of the two")
    args = parser.parse_args()
    if args.only != "p3":
        p6(args.repeats)
    if args.only != "p6":
        p3(args.duration, args.pin)


if __name__ == "__main__":
    from child_failure import run_main  # bench/ is on sys.path only when run as a script

    run_main(main)
