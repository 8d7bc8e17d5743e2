"""Benchmark P5 (prints figures, asserts nothing): adaptive repetition against 5 fixed repeats.
Same locks, axes and run length, run one after the other through locklab; compares the wall
time and the verdict lines. Goal: the same verdicts in at most 50% of the time.
Run with `make bench`.
"""

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCKLAB = ROOT / ".venv" / "bin" / "locklab"
COMMON = ["--lock", "ticket,tas,mcs,pthread_mutex", "--nwriters", "1,2", "--pin", "compact"]


def experiment(
    store: str, name: str, repeat: list[str], duration: str
) -> tuple[float, dict, list[str]]:
    """Wall time, each cell's verdict (faster, slower or ~) and locklab's adaptive summary."""
    start = time.monotonic()
    proc = subprocess.run(
        [str(LOCKLAB), "run", *COMMON, *repeat, "--duration", duration, "--warmup", "0.2",
         "--store", store, "--name", name, "--plain"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    wall = time.monotonic() - start
    exported = subprocess.run(
        [str(LOCKLAB), "export", name, "--format", "json", "--store", store],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    cells = {}
    for cell in json.loads(exported.stdout)["cells"]:
        if cell["rel_pct"] is None:
            continue
        verdict = "~" if not cell["significant"] else "faster" if cell["rel_pct"] > 0 else "slower"
        cells[cell["variant"], cell["nwriters"]] = (verdict, cell["n"])
    summary = [line for line in proc.stderr.splitlines() if line.startswith("adaptive")]
    return wall, cells, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", default="0.5")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as store:
        fixed_s, fixed, _ = experiment(store, "fixed", ["--repeat", "5"], args.duration)
        auto_s, auto, summary = experiment(
            store,
            "auto",
            ["--repeat", "auto", "--min-repeat", "2", "--max-repeat", "5"],
            args.duration,
        )
    print(f"P5: adaptive repetition vs 5 fixed repeats ({' '.join(COMMON)})")
    print(f"{'fixed 5':<12} {fixed_s:7.1f} s")
    print(f"{'auto 2-5':<12} {auto_s:7.1f} s   {auto_s / fixed_s:.0%} of the time, goal <= 50%")
    for line in summary:
        print(f"{'':<12} {line}")
    same = sum(fixed[key][0] == auto[key][0] for key in fixed)
    print(f"same verdict in {same} of {len(fixed)} cells (faster / slower / ~):")
    for key in sorted(fixed):
        mark = " " if fixed[key][0] == auto[key][0] else "*"
        (before, n_before), (after, n_after) = fixed[key], auto[key]
        print(f" {mark} {key[0]:<14} nwriters={key[1]}  fixed {before:<6} (n={n_before})"
              f"  auto {after:<6} (n={n_after})")  # fmt: skip


if __name__ == "__main__":
    from child_failure import run_main  # bench/ is on sys.path only when run as a script

    run_main(main)
