"""A run counts the lock's rare events in its window (engine: run.c, lock.h's lock_event()):
here CNA's flushes of its secondary queue, in the simulator, where the count is exact."""

from test_sim import machine, simulate  # noqa: F401 (the fixture)

CNA = ["--lock", "cna", "--param", "shuffle_reduction=0", "--nwriters", "4", "--pin", "scatter",
       "--duration", "0.002", "--warmup", "0.0005"]  # fmt: skip


def test_cna_counts_the_flushes_its_threshold_makes(machine):  # noqa: F811
    """Writers on both sockets make a secondary queue; a 2 us threshold flushes it often, a
    1 s one never within 2 ms."""
    proc, often = simulate(machine, [*CNA, "--param", "threshold_ns=2000"])
    assert proc.returncode == 0, proc.stderr
    proc, never = simulate(machine, [*CNA, "--param", "threshold_ns=1000000000"])
    assert proc.returncode == 0, proc.stderr
    assert often["lock_events"]["queue_flush"] > 10
    assert never["lock_events"]["queue_flush"] == 0
    assert often["lock_events"]["plugin"] is None  # a built-in lock has no counters of its own
