"""How fast the simulator runs (not a test: it prints figures, it asserts nothing).

Simulated acquisitions per host second at 2, 16 and 96 virtual CPUs of gigabyte-96c (seed
000's 2-socket EPYC), for a queue lock (mcs) and one whose waiters share a line (ticket),
threads spread over the nodes as `locklab run --sim` places them. The host time is the
simulator's own (the JSON's simulation.host_s), warm-up and calibration included; the
acquisitions are all of them, warm-up included. Also: parked against exact spinning
(LOCKLAB_SIM_SPIN=exact) at 16 CPUs, the host time parking saves.

Run with `make bench`.
"""

import json
import os
import subprocess
import tempfile
from pathlib import Path

from locklab.model.machine_profile import find_profile

ROOT = Path(__file__).resolve().parent.parent
SIM = ROOT / ".venv" / "bin" / "locklab-sim"
MACHINE = "gigabyte-96c"
CPUS = (2, 16, 96)


def simulate(machine: Path, lock: str, writers: int, spin: str = "park") -> dict:
    proc = subprocess.run(
        [str(SIM), "--lock", lock, "--nwriters", str(writers), "--duration", "0.002",
         "--warmup", "0.0005", "--pin", "scatter", "--json", "-"],
        capture_output=True, text=True, check=True, timeout=600,
        env={**os.environ, "LOCKLAB_SIM_MACHINE": str(machine), "LOCKLAB_SIM_SPIN": spin},
    )  # fmt: skip
    return json.loads(proc.stdout)


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        machine = Path(folder) / f"{MACHINE}.machine"
        machine.write_text(find_profile(MACHINE).flat_text())
        print(f"Simulator speed on {MACHINE}: simulated acquisitions per host second")
        for lock in ("mcs", "ticket"):
            cells = []
            for writers in CPUS:
                r = simulate(machine, lock, writers)
                rate = r["acquisitions_since_start"] / r["simulation"]["host_s"]
                cells.append(f"{writers} CPUs {rate:>9,.0f}/s")
            print(f"  {lock:<7} " + "   ".join(cells))
        parked = simulate(machine, "ticket", 16)
        exact = simulate(machine, "ticket", 16, "exact")
        print(
            f"  ticket at 16 CPUs: parked {parked['simulation']['host_s']:.2f} host s, "
            f"exact {exact['simulation']['host_s']:.2f} host s; throughput parked/exact "
            f"{parked['throughput_ops_per_s'] / exact['throughput_ops_per_s']:.3f}"
        )


if __name__ == "__main__":
    from child_failure import run_main  # bench/ is on sys.path only when run as a script

    run_main(main)
