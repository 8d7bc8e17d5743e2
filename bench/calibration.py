"""Benchmark (prints figures, asserts nothing): the A/A calibration of the verdict. One lock
against itself in 200 cells or more (`locklab calibrate`), on this machine as it is: the share
of cells the verdict calls significant, against the nominal alpha. Goal: at most alpha.
Run with `make bench` (about 6 minutes on 2 CPUs).
"""

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCKLAB = ROOT / ".venv" / "bin" / "locklab"


def main() -> int:
    with tempfile.TemporaryDirectory() as store:
        for lock in ("ticket", "pthread_mutex"):
            proc = subprocess.run(
                [str(LOCKLAB), "calibrate", "--lock", lock, "--cells", "200", "--store", store],
                capture_output=True, text=True, check=False, timeout=3600,
            )  # fmt: skip
            print(proc.stdout, end="")
            if proc.returncode != 0:
                print(proc.stderr[-2000:], file=sys.stderr)
                return proc.returncode
            print()
    return 0


if __name__ == "__main__":
    from child_failure import run_main  # bench/ is on sys.path only when run as a script

    run_main(main)
