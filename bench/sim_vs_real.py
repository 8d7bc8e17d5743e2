"""The simulator against a real machine (not a test: it prints figures, it asserts nothing).

Reads the folder bench/many_cores.sh wrote on a lent many-core machine (one JSON per run,
LOCK-WORKLOAD-NWRITERS-REPEAT.json), simulates the same runs on that machine's profile, and
prints, per lock and writer count, the real median (and the repeats' spread), the simulated
figure, and simulated/real. The bare workload by default (no hold, no gap); `--workload
torture` compares the runs under locktorture's delays, whose 100 ms holds come so rarely
that a half-second run's figure is much their luck, real or simulated: the line says how
many each drew. The simulated window and warm-up are the real runs' own.

    .venv/bin/python bench/sim_vs_real.py FOLDER PROFILE [--workload bare|torture]
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


def real_runs(folder: Path, workload: str) -> dict[tuple[str, int], list[dict]]:
    runs: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for path in folder.glob(f"*-{workload}-*-*.json"):
        lock, _, writers, _ = path.stem.rsplit("-", 3)
        result = json.loads(path.read_text())
        if result["status"] == "ok":
            runs[(lock, int(writers))].append(result)
    return runs


def long_holds(result: dict) -> int:
    delays = result.get("torture_delays") or {}
    return int((delays.get("writer") or {}).get("long", 0))


def simulated(machine: Path, lock: str, writers: int, like: dict) -> dict:
    config = like["config"]
    command = [str(SIM), "--lock", lock, "--nwriters", str(writers), "--pin", "compact",
               "--duration", str(config["duration_s"]), "--warmup", str(config["warmup_s"]),
               "--json", "-"]  # fmt: skip
    if config.get("torture_delays"):
        command += ["--torture-delays", config["torture_delays"]]
    proc = subprocess.run(command, capture_output=True, text=True, check=True, timeout=3600,
                          env={**os.environ, "LOCKLAB_SIM_MACHINE": str(machine)})  # fmt: skip
    result: dict = json.loads(proc.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="what bench/many_cores.sh wrote")
    parser.add_argument("profile", help="the machine's profile: a name or a file")
    parser.add_argument("--workload", choices=("bare", "torture"), default="bare")
    args = parser.parse_args()
    runs = real_runs(args.folder, args.workload)
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
              f"{'simulated':>10} {'sim/real':>8}  100 ms holds real, simulated")  # fmt: skip
        for lock, writers in sorted(runs):
            figures = [r["throughput_ops_per_s"] for r in runs[(lock, writers)]]
            real = statistics.median(figures)
            spread = (max(figures) - min(figures)) / real
            result = simulated(machine, lock, writers, runs[(lock, writers)][0])
            sim = float(result["throughput_ops_per_s"])
            holds = ",".join(str(long_holds(r)) for r in runs[(lock, writers)])
            print(f"{lock:<12} {writers:>7} {real / 1e3:>12,.0f} {spread:>7.0%} "
                  f"{sim / 1e3:>10,.0f} {sim / real:>8.2f}  {holds}; {long_holds(result)}",
                  flush=True)  # fmt: skip


if __name__ == "__main__":
    from child_failure import run_main  # bench/ is on sys.path only when run as a script

    run_main(main)
