"""How long a run may take: the engine's watchdog, the simulator's times, and when the front end
kills an engine run (docs/engine.md, "The watchdog"; docs/simulator.md, "Failures")."""

from __future__ import annotations

# The engine's deadlock watchdog for every run: no acquisition for this long ends the run.
RUN_WATCHDOG_S = 10.0
# Beyond warm-up + duration + watchdog: thread start, calibration and the JSON, with room to spare
# on a loaded machine. Past it the run is killed and recorded as a timeout. The engine's watchdog
# fires within a second and a twentieth of the watchdog past its time whenever any of its
# threads gets a CPU (docs/engine.md, "The watchdog"), so this kill never comes before it.
RUN_TIMEOUT_MARGIN_S = 60.0
# A simulated run (--sim, docs/simulator.md) counts virtual seconds, and its window is long
# enough for the kernel's own time scales: a quarter of a second holds two or three of
# locktorture's 100 ms holds at one writer (one in 200,000 x nwriters acquisitions), 62 of
# rwsem's one-jiffy hand-offs at the shim's HZ=250, and 25 of CNA-10ms's flush thresholds. The
# warm-up is a tenth of it, 25 ms: two and a half times the longest time constant a modelled
# lock has (CNA-10ms's 10 ms; rwsem's hand-off 4 ms; the spins of rtmutex and mutex end within
# microseconds), and the engine's drift check on the window's intervals marks a run that was
# still settling ('^', docs/statistics.md). Its watchdog is virtual too (a deadlock costs
# the host little). Where virtual time crawls (waiters that keep a line bouncing), the simulator
# ends the run on its own limit on host time without an acquisition (native/sim/progress.c,
# LOCKLAB_SIM_PROGRESS_S); SIM_RUN_TIMEOUT_S is only the overall backstop.
SIM_DURATION_S = 0.25
SIM_WARMUP_S = 0.025
SIM_WATCHDOG_S = 0.25  # above locktorture's longest hold (100 ms), well below a second
SIM_RUN_TIMEOUT_S = 600.0
# Where a simulated run's threads go unless --pin says otherwise: spread over the NUMA nodes, as
# Linux's load balancer spreads busy threads over an idle machine in time (where a program's
# first threads start can differ: --pin cores, docs/simulator.md).
SIM_PIN = "scatter"


def engine_time_limit_s(warmup_s: float, duration_s: float, watchdog_s: float) -> float:
    """When the front end kills a measured engine run: after everything the run may take, its
    watchdog included, and RUN_TIMEOUT_MARGIN_S more."""
    return warmup_s + duration_s + watchdog_s + RUN_TIMEOUT_MARGIN_S
