"""The torture engine must catch a broken lock and must not hang on a deadlocked one."""

import time

import pytest
from conftest import CORES, plugin_path, run_engine


@pytest.mark.parametrize("variant", ["opt", "asan"])
def test_broken_lock_is_flagged(variant, tmp_path):
    run = run_engine(
        [
            "--plugin",
            str(plugin_path(variant, "broken_tts")),
            "--nwriters",
            "4",
            "--duration",
            "2",
            "--watchdog",
            "10",
        ],
        variant,
        tmp_path,
    )
    assert run.returncode == 1, run.stderr
    assert run.result["status"] == "violation"
    violations = run.result["violations"]
    assert violations["total"] > 0
    assert violations["overlapping_writers"] + violations["write_counter_mismatch"] > 0
    assert "correctness violation with lock 'broken_tts'" in run.stderr


def test_owner_word_catches_overlaps_one_by_one(tmp_path):
    """One writer per CPU: the owner word must catch overlaps one by one, not leave them all to
    the counter. How many it catches depends on the CPU, because without a full barrier the
    read-back may be served from the writer's own store buffer: of the counter's losses, 1 in
    4 to 8 on an AMD EPYC VM, 1 in 286 on a CI machine, 1 in 3,200 to 4,500 on fresh clones of
    that AMD VM at the start of the suite, and 1 in 6,000 to 30,000 on an Intel Xeon VM (20
    runs; one more, preempted inside an overlap, 1 in 19). A writer preempted inside an
    overlap loses thousands of counts at once, so the best of five runs counts. The bar, 1 in
    100,000, holds on each of those CPUs, and fails a check that catches none. (It no longer
    tells this loop from an owner word stored after the increment and read back at once, which
    caught 1 in 7,000 to 23,000 on the AMD VM: the Intel VM's figures overlap that range.)"""
    args = ["--plugin", str(plugin_path("opt", "broken_tts")), "--nwriters", str(CORES)]
    shares = []
    for _ in range(5):
        run = run_engine([*args, "--pin", "compact", "--duration", "0.5"], "opt", tmp_path)
        assert run.returncode == 1, run.stderr
        violations = run.result["violations"]
        assert violations["write_counter_mismatch"] > 0
        shares.append(violations["overlapping_writers"] / violations["write_counter_mismatch"])
        if shares[-1] > 1 / 100_000:
            return
    pytest.fail(f"the owner word caught too few of the counter's overlaps: {shares}")


def test_broken_lock_is_a_data_race_for_tsan(tmp_path):
    """TSAN sees the critical section's plain counter race when the lock does not order it."""
    run = run_engine(
        ["--plugin", str(plugin_path("tsan", "broken_tts")), "--nwriters", "4", "--duration", "2"],
        "tsan",
        tmp_path,
    )
    assert run.returncode in (1, 66), run.stderr
    assert run.returncode == 1 or "ThreadSanitizer: data race" in run.stderr


def test_watchdog_stops_a_deadlock(tmp_path):
    started = time.monotonic()
    run = run_engine(
        [
            "--plugin",
            str(plugin_path("opt", "never_unlock")),
            "--nwriters",
            "2",
            "--duration",
            "30",
            "--watchdog",
            "1",
        ],
        "opt",
        tmp_path,
    )
    assert run.returncode == 3, run.stderr
    assert run.result["status"] == "watchdog"
    assert "deadlock or livelock" in run.result["error"]
    # Not a timing assertion on the lock: the run must end long before its 30 s duration.
    assert time.monotonic() - started < 25


def test_watchdog_on_a_single_thread(tmp_path):
    run = run_engine(
        [
            "--plugin",
            str(plugin_path("opt", "never_unlock")),
            "--nwriters",
            "1",
            "--ops",
            "1000",
            "--watchdog",
            "0.5",
        ],
        "opt",
        tmp_path,
    )
    assert run.returncode == 3
