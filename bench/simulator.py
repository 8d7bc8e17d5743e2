"""How fast the simulator runs (not a test: it prints figures, it asserts nothing).

Simulated acquisitions per host second for five locks (mcs, ticket, qspinlock, cna and the
kernel's own rtmutex compiled from Debian's 6.1 tree) at 2, 16 and 96 virtual CPUs of
gigabyte-96c (seed 000's 2-socket EPYC) and 142 of x5-4 (seed 002's 4-socket Haswell-EX),
threads spread over the nodes as `locklab run --sim` places them, with the two runtimes of
one binary side by side:

- threads: each program thread a host thread of its own, the baton handed between them with a
  futex, the next thread found by a scan of them all (the runtime up to this change);
- contexts: every thread's code on one host thread as a context of its own, swapped in user
  space, the next thread taken from a heap (docs/simulator.md, "Speed").

With BENCH_SIM_BEFORE=PATH, a third column: an earlier checkout of locklab at PATH, built
with `make build`: its locklab-sim (its one runtime), and the kernel's lock built by its own
code for its own engine layout. Every column then reads the profiles without `fill_buffers`,
which the earlier simulator predates: misses are charged in turn, its model, in all three.

Each pair must give the same figures (every field of the JSON but the host_* ones): the line
says so. The rate is all acquisitions (warm-up included) over the simulator's own host time
(simulation.host_s) of one run of a 4 ms window after 0.5 ms of warm-up; the speed-up is the
same run's host time, before over after. A run's start (calibration, which takes up to 24
virtual ms, and the threads) is in it: a few hundredths of a host second with contexts, the
most of a run of the kernel's rtmutex, whose waiters sleep. Also: parked against exact
spinning (LOCKLAB_SIM_SPIN=exact) at 16 CPUs.

Run with `make bench` (about 15 minutes on a 2-vCPU VM, most of it the threads runtime at 96
and 142 CPUs; twice that with BENCH_SIM_BEFORE); BENCH_SIM_QUICK=1 leaves out 142 CPUs and
the kernel's lock.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from locklab.analysis.seed_spread import virtual_figures
from locklab.kernel.from_source import build_source_lock
from locklab.model.machine_profile import find_profile
from locklab.run.machine_measure import cpu_vendor

ROOT = Path(__file__).resolve().parent.parent
SIM = ROOT / "build" / "sim" / "locklab-sim"
ENGINE = ROOT / "build" / "opt" / "locklab-bench"  # build_source_lock finds SIM beside it
LOCKS = ("mcs", "ticket", "qspinlock", "cna", "kernel:rtmutex")
POINTS = (("gigabyte-96c", 2), ("gigabyte-96c", 16), ("gigabyte-96c", 96), ("x5-4", 142))
RUNTIMES = ("threads", "contexts")
WINDOW_S, WARMUP_S = 0.004, 0.0005


def simulate(binary: Path, machine: Path, lock: str, writers: int, plugin: str | None,
             runtime: str, spin: str = "park") -> dict[str, Any]:  # fmt: skip
    command = [str(binary), "--lock", lock, "--nwriters", str(writers), "--pin", "scatter",
               "--duration", str(WINDOW_S), "--warmup", str(WARMUP_S), "--json", "-"]  # fmt: skip
    if plugin:
        command += ["--plugin", plugin]
    environment = {**os.environ, "LOCKLAB_SIM_MACHINE": str(machine), "LOCKLAB_SIM_SPIN": spin,
                   "LOCKLAB_SIM_SWITCH": runtime}  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True, check=True, timeout=3600,
                          env=environment)  # fmt: skip
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def earlier_kernel_lock(checkout: Path, lock: str, machine: Path) -> str:
    """The kernel's lock built by the earlier checkout's own code, for its engine layout."""
    code = ("import sys; from pathlib import Path; "
            "from locklab.kernel.from_source import build_source_lock; "
            "print(build_source_lock(sys.argv[1], 'stock', [], 'sim', "
            "Path('build/opt/locklab-bench'), "
            "sim_machine=Path(sys.argv[2]).read_text()).plugin)")  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", code, lock, str(machine)], cwd=checkout,
                          capture_output=True, text=True, check=True, timeout=3600,
                          env={**os.environ, "PYTHONPATH": str(checkout / "python")})  # fmt: skip
    return proc.stdout.strip().splitlines()[-1]


def flat_profile(name: str, in_turn: bool) -> str:
    text = find_profile(name).flat_text()
    if not in_turn:
        return text
    return "".join(line for line in text.splitlines(keepends=True)
                   if not line.startswith("fill_buffers "))  # fmt: skip


def rate(run: dict[str, Any]) -> float:
    return float(run["acquisitions_since_start"]) / float(run["simulation"]["host_s"])


def main() -> None:
    quick = os.environ.get("BENCH_SIM_QUICK") == "1"
    before_checkout = os.environ.get("BENCH_SIM_BEFORE")
    checkout = Path(before_checkout).resolve() if before_checkout else None
    before = checkout / "build" / "sim" / "locklab-sim" if checkout else None
    locks = LOCKS[:-1] if quick else LOCKS
    points = POINTS[:-1] if quick else POINTS
    print(
        f"Simulator speed on this host ({cpu_vendor()}): simulated acquisitions per host "
        f"second, {WINDOW_S * 1e3:g} ms windows after {WARMUP_S * 1e3:g} ms of warm-up"
    )
    header = f"  {'lock':<15} {'machine':<13} {'CPUs':>4}"
    header += f" {'before':>10}" if before else ""
    header += f" {'threads':>10} {'contexts':>10} {'speed-up':>8}  figures  contexts (host s)"
    print(header)
    with tempfile.TemporaryDirectory() as folder:
        for profile in sorted({p for p, _ in points}):
            text = flat_profile(profile, in_turn=before is not None)
            (Path(folder) / f"{profile}.machine").write_text(text)
        for lock in locks:
            for profile, writers in points:
                machine = Path(folder) / f"{profile}.machine"
                plugin = None
                if lock.startswith("kernel:"):
                    plugin = str(build_source_lock(lock.removeprefix("kernel:"), "stock", [],
                                                   "sim", ENGINE, sim_machine=machine.read_text())
                                 .plugin)  # fmt: skip
                runs = {r: simulate(SIM, machine, lock, writers, plugin, r) for r in RUNTIMES}
                same = virtual_figures(runs["threads"]) == virtual_figures(runs["contexts"])
                old, new = rate(runs["threads"]), rate(runs["contexts"])
                line = f"  {lock:<15} {profile:<13} {writers:>4}"
                first = old
                if before and checkout:
                    earlier_plugin = (earlier_kernel_lock(checkout, lock.removeprefix("kernel:"),
                                                          machine)
                                      if plugin else None)  # fmt: skip
                    earlier = simulate(before, machine, lock, writers, earlier_plugin, "threads")
                    first = rate(earlier)
                    line += f" {first:>10,.0f}"
                line += (f" {old:>10,.0f} {new:>10,.0f} {new / first:>7.1f}x  "
                         f"{'identical' if same else 'DIFFERENT'} "
                         f"{runs['contexts']['simulation']['host_s']:>8.3f}")  # fmt: skip
                print(line, flush=True)
        machine = Path(folder) / "gigabyte-96c.machine"
        parked = simulate(SIM, machine, "ticket", 16, None, "contexts")
        exact = simulate(SIM, machine, "ticket", 16, None, "contexts", "exact")
        print(
            f"  ticket at 16 CPUs (contexts): parked {parked['simulation']['host_s']:.3f} host s, "
            f"exact {exact['simulation']['host_s']:.3f} host s; throughput parked/exact "
            f"{parked['throughput_ops_per_s'] / exact['throughput_ops_per_s']:.3f}"
        )
    print("speed-up: contexts over " + ("before" if before else "threads"))


if __name__ == "__main__":
    from child_failure import run_main  # bench/ is on sys.path only when run as a script

    run_main(main)
