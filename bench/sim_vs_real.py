"""The simulator against a real machine (not a test: it prints figures, it asserts nothing).

Reads the folder bench/many_cores.sh wrote on a lent many-core machine (one JSON per run,
LOCK-WORKLOAD-NWRITERS-REPEAT.json), simulates the same runs on that machine's profile, and
prints, per lock and writer count, the real median (and the repeats' spread), the simulated
figure, and simulated/real. The bare workload only (no hold, no gap): locktorture's delays
draw 100 ms holds so rarely that a half-second run's figure is mostly their luck.

    .venv/bin/python bench/sim_vs_real.py FOLDER PROFILE
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile
from collections import defaultdict
from pathlib import Path

from locklab.errors import LocklabError
from locklab.model.machine_profile import find_profile

ROOT = Path(__file__).resolve().parent.parent
SIM = ROOT / "build" / "sim" / "locklab-sim"


def real_runs(folder: Path) -> dict[tuple[str, int], list[float]]:
    runs: dict[tuple[str, int], list[float]] = defaultdict(list)
    for path in folder.glob("*-bare-*-*.json"):
        lock, _, writers, _ = path.stem.rsplit("-", 3)
        result = json.loads(path.read_text())
        if result["status"] == "ok":
            runs[(lock, int(writers))].append(result["throughput_ops_per_s"])
    return runs


def simulated(machine: Path, lock: str, writers: int) -> float:
    proc = subprocess.run(
        [str(SIM), "--lock", lock, "--nwriters", str(writers), "--duration", "0.002",
         "--warmup", "0.0005", "--pin", "compact", "--json", "-"],
        capture_output=True, text=True, check=True, timeout=600,
        env={**os.environ, "LOCKLAB_SIM_MACHINE": str(machine)},
    )  # fmt: skip
    return float(json.loads(proc.stdout)["throughput_ops_per_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="what bench/many_cores.sh wrote")
    parser.add_argument("profile", help="the machine's profile: a name or a file")
    args = parser.parse_args()
    runs = real_runs(args.folder)
    if not runs:
        parser.error(f"{args.folder}: no run of bench/many_cores.sh ended ok there")
    try:
        profile = find_profile(args.profile, "profile")
    except LocklabError as error:
        parser.error(str(error))
    with tempfile.TemporaryDirectory() as scratch:
        machine = Path(scratch) / f"{profile.name}.machine"
        machine.write_text(profile.flat_text())
        print(f"{'lock':<12} {'writers':>7} {'real kops/s':>12} {'spread':>7} "
              f"{'simulated':>10} {'sim/real':>8}")  # fmt: skip
        for lock, writers in sorted(runs):
            real = statistics.median(runs[(lock, writers)])
            spread = (max(runs[(lock, writers)]) - min(runs[(lock, writers)])) / real
            sim = simulated(machine, lock, writers)
            print(f"{lock:<12} {writers:>7} {real / 1e3:>12,.0f} {spread:>7.0%} "
                  f"{sim / 1e3:>10,.0f} {sim / real:>8.2f}")  # fmt: skip


if __name__ == "__main__":
    from child_failure import run_main  # bench/ is on sys.path only when run as a script

    run_main(main)
