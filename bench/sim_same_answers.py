"""Whether a change to the simulator moves its answers (not a test: it prints, it asserts
nothing): each cell over SEEDS seeds, before and after, judged as analysis/seed_spread.py says
(Mann-Whitney on throughput, Kolmogorov-Smirnov on the share of same-node hand-overs, each
at 1% with Bonferroni's correction over the cells and the two tests).

    bench/sim_same_answers.py --before OLD_BINARY [--before-env K=V] \\
                              --after NEW_BINARY [--after-env K=V] [--seeds 20]

A binary of an earlier revision: `git worktree add /tmp/old REV && make -C /tmp/old
build/sim/locklab-sim`. The same binary with two environments compares two settings of one
runtime (LOCKLAB_SIM_SWITCH, LOCKLAB_SIM_SPIN). Each run is deterministic, so runs go two at
a time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from locklab.analysis.seed_spread import SEEDS, compare_cell, seed_run
from locklab.model.machine_profile import find_profile

CELLS = (
    ("gigabyte-96c", "mcs", 4), ("gigabyte-96c", "ticket", 4), ("x5-4", "ticket", 8),
    ("x5-4", "qspinlock", 8), ("gigabyte-96c", "qspinlock", 16), ("gigabyte-96c", "cna", 16),
    ("gigabyte-96c", "mcs", 32), ("gigabyte-96c", "mcs", 96), ("gigabyte-96c", "cna", 96),
    ("x5-4", "qspinlock", 142),
)  # fmt: skip
WINDOW = ["--duration", "0.002", "--warmup", "0.0005", "--pin", "scatter"]


def run_one(binary: str, env: dict[str, str], machine: str, lock: str, writers: int,
            seed: int) -> dict:  # fmt: skip
    proc = subprocess.run(
        [binary, "--lock", lock, "--nwriters", str(writers), *WINDOW, "--seed", str(seed),
         "--json", "-"],
        capture_output=True, text=True, check=True, timeout=3600,
        env={**os.environ, **env, "LOCKLAB_SIM_MACHINE": machine},
    )  # fmt: skip
    result: dict = json.loads(proc.stdout)
    return result


def environment(pairs: list[str]) -> dict[str, str]:
    return dict(pair.split("=", 1) for pair in pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True)
    parser.add_argument("--after", required=True)
    parser.add_argument("--before-env", action="append", default=[])
    parser.add_argument("--after-env", action="append", default=[])
    parser.add_argument("--seeds", type=int, default=SEEDS)
    args = parser.parse_args()
    sides = ((args.before, environment(args.before_env)), (args.after, environment(args.after_env)))
    print(f"{len(CELLS)} cells x {args.seeds} seeds, before: {args.before} {args.before_env}, "
          f"after: {args.after} {args.after_env}")  # fmt: skip
    with tempfile.TemporaryDirectory() as folder, ProcessPoolExecutor(max_workers=2) as pool:
        for profile in {c[0] for c in CELLS}:
            (Path(folder) / profile).write_text(find_profile(profile).flat_text())
        moved = 0
        for profile, lock, writers in CELLS:
            machine = str(Path(folder) / profile)
            futures = [[pool.submit(run_one, binary, env, machine, lock, writers, seed)
                        for seed in range(1, args.seeds + 1)] for binary, env in sides]  # fmt: skip
            before, after = ([seed_run(f.result()) for f in side] for side in futures)
            comparison = compare_cell(f"{profile} {lock} x{writers}", before, after, len(CELLS))
            moved += not comparison.same
            print(comparison.line(), flush=True)
    print(f"{moved} of {len(CELLS)} cells moved (threshold per test: p < "
          f"{comparison.threshold:.4f})")  # fmt: skip


if __name__ == "__main__":
    from child_failure import run_main  # bench/ is on sys.path only when run as a script

    run_main(main)
