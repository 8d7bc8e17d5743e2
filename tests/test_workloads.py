"""The seeds' workloads in the engine (issue 15): locktorture's own delays (--torture-delays),
an emulated remote-node cost (--numa-remote-ns), and delays in pauses reported in ns.

Bounded by acquisitions (--ops) with a watchdog; nothing asserts on a time or a throughput.
Shares of drawn delays are checked with 6-sigma binomial bounds, which a correct draw misses
about once in 10^9 runs.
"""

import math
import subprocess

import pytest
from conftest import CORES, run_engine, run_unit, run_unit_against_mutant

SIGMAS = 6


def within(count: int, draws: int, p: float) -> bool:
    return abs(count - draws * p) <= SIGMAS * math.sqrt(draws * p * (1 - p)) + 1


# ---- --torture-delays -----------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["opt", "asan"])
def test_torture_delays_unit(variant):
    """tests/unit/torture_delays_test.c: torture_random() is kernel/torture.c's LCG, and every
    type's long/short/preempt draws have locktorture's probabilities over millions of draws.
    (Not under TSAN: the drawing is single-threaded, and TSAN makes 10^8 draws take minutes.)"""
    proc = run_unit(variant, "torture_delays_test")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def unit_against_mutant(tmp_path, old: str, new: str) -> subprocess.CompletedProcess:
    """The unit test compiled against torture_delays.c with `old` replaced by `new`."""
    return run_unit_against_mutant(
        tmp_path, "torture_delays_test", "engine/torture_delays.c", old, new
    )


@pytest.mark.parametrize(
    ("old", "new", "mistake"),
    [
        ("2 * US, 4, (preempt)", "2 * US, 2, (preempt)", "udelay(2) one in n*2, not n*4"),
        ("{ 500 * MS, 200000, 20 * MS, 0, 20000 }", "{ 500 * MS, 100000, 20 * MS, 0, 20000 }",
         "mutex_lock's long delay twice as often"),
        ("(low << 16) | (low >> 16)", "low", "no swahw32(): the LCG's weak low bits"),
        ("\t\tw->torture_long++;\n\t\tw->torture_long_before_window++;", "",
         "a long hold begun in the warm-up and held into the window left uncounted"),
        ("(after & CONTROL_MEASURE)", "true", "a long hold over the warm-up only counted"),
    ],
)  # fmt: skip
def test_torture_delays_unit_catches(tmp_path, old, new, mistake):
    """The unit test fails on each of these mistakes (so it would have failed before)."""
    proc = unit_against_mutant(tmp_path, old, new)
    assert proc.returncode != 0, f"the unit test missed: {mistake}\n{proc.stdout}"


def test_torture_delays_spin_lock_counts(tmp_path):
    """An engine run with --torture-delays spin_lock reports its drawn delays: one draw per
    write acquisition of the window, the short delay (udelay(2)) one in 4n, long and preempt
    counted, and the expected shares stated beside them."""
    nwriters = 2
    ops = 200000
    run = run_engine(
        ["--lock", "ticket", "--nwriters", str(nwriters), "--ops", str(ops), "--duration", "30",
         "--torture-delays", "spin_lock", "--watchdog", "20"],
        "opt",
        tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    delays = run.result["torture_delays"]
    assert delays["type"] == "spin_lock"
    assert run.result["config"]["torture_delays"] == "spin_lock"
    writer = delays["writer"]
    assert writer["threads"] == nwriters
    assert writer["acquisitions"] == run.result["write_acquisitions"] == ops
    assert writer["expected_short_share"] == 1 / (nwriters * 4)
    assert writer["expected_long_share"] == 1 / (nwriters * 200000)
    assert writer["expected_preempt_share"] == 1 / (nwriters * 20000)
    assert within(writer["short"], ops, writer["expected_short_share"]), writer
    assert within(writer["long"], ops, writer["expected_long_share"]), writer
    assert within(writer["preempt"], ops, writer["expected_preempt_share"]), writer
    assert writer["short_share"] == writer["short"] / ops
    assert (writer["long_ns"], writer["short_ns"]) == (100_000_000, 2000)
    assert delays["reader"] is None and delays["rt_boost"] is None
    assert "torture      spin_lock delays:" in run.stdout


def test_torture_delays_rwsem_readers_and_else_branch(tmp_path):
    """rwsem_lock: every writer acquisition holds mdelay(10) or the rare mdelay(1000) (the
    else branch: long + short = acquisitions), readers draw their own delays. (The reader
    leaves a gap: readers holding 50 ms back to back can starve the writers, as they can in
    locktorture.)"""
    run = run_engine(
        ["--lock", "rwsem", "--nwriters", "2", "--nreaders", "1", "--gap-ns", "200000",
         "--ops", "20", "--duration", "30", "--torture-delays", "rwsem_lock", "--watchdog", "20"],
        "opt",
        tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    delays = run.result["torture_delays"]
    writer, reader = delays["writer"], delays["reader"]
    assert writer["long"] + writer["short"] == writer["acquisitions"] == 20
    assert (writer["long_ns"], writer["short_ns"]) == (1_000_000_000, 10_000_000)
    assert reader["threads"] == 1
    assert reader["long"] + reader["short"] == reader["acquisitions"]
    assert reader["acquisitions"] == run.result["read_acquisitions"]
    assert (reader["long_ns"], reader["short_ns"]) == (200_000_000, 50_000_000)


def test_torture_delays_rtmutex_boost_is_reported(tmp_path):
    """rtmutex_lock: the delays are spin_lock's, and the boost is counted (granted or not)."""
    run = run_engine(
        ["--lock", "rtmutex", "--nwriters", "2", "--ops", "20000", "--duration", "30",
         "--torture-delays", "rtmutex_lock", "--watchdog", "20"],
        "opt",
        tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    boost = run.result["torture_delays"]["rt_boost"]
    assert boost is not None
    assert boost["expected_boost_share"] == 1 / (2 * 50000)
    if boost["denied"]:
        assert run.stderr.count("SCHED_FIFO not permitted") == 1


@pytest.mark.parametrize("variant", ["tsan", "asan"])
def test_torture_delays_clean_under_sanitizers(variant, tmp_path):
    """The drawn delays (and the boost) under the sanitizers: no report, no violation."""
    run = run_engine(
        ["--lock", "rtmutex_k2", "--nwriters", str(2 * CORES), "--ops", "5000",
         "--duration", "30", "--torture-delays", "rtmutex_lock", "--watchdog", "20"],
        variant,
        tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.result["violations"]["total"] == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--torture-delays", "spinlock"], "unknown torture type 'spinlock'"),
        (["--torture-delays", "spin_lock", "--hold-ns", "100"], "drop --hold-ns"),
        (["--torture-delays", "mutex_lock", "--nreaders", "1"], "no readers for this type"),
        (["--numa-remote-ns", "100"], "needs pinned threads"),
    ],
)
def test_workload_usage_errors(args, message):
    lock = "rwsem" if "--nreaders" in args else "ticket"
    run = run_engine(["--lock", lock, "--ops", "10", *args], "opt")
    assert run.returncode == 2
    assert message in run.stderr


# ---- --numa-remote-ns -----------------------------------------------------------------------


def remote_run(tmp_path, remote_ns: int):
    """Every CPU its own virtual node, threads pinned: every hand-over between two threads on
    different CPUs is a cross-node one. The window is a time, not a count of acquisitions: a
    shared host can hold one vCPU off for the few milliseconds 20,000 acquisitions take, and
    then no hand-over crosses; it cannot for half a second of scheduler slices."""
    run = run_engine(
        ["--lock", "ticket", "--nwriters", str(2 * CORES), "--pin", "compact",
         "--numa-nodes", str(CORES), "--numa-remote-ns", str(remote_ns), "--duration", "0.5",
         "--watchdog", "20"],
        "opt",
        tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    return run


@pytest.mark.skipif(CORES < 2, reason="needs two CPUs for two virtual nodes")
def test_remote_cost_paid_by_every_cross_node_handover(tmp_path):
    """With --numa-remote-ns N every hand-over from another node pays, and only those: the
    count equals handoffs - same_node exactly; the machine facts say it is an emulation."""
    run = remote_run(tmp_path, 300)
    handoffs = run.result["handoffs"]
    cross = handoffs["total"] - handoffs["same_node"]
    assert handoffs["nodes_known"]
    assert cross > 0
    assert handoffs["remote_cost_paid"] == cross
    machine = run.result["machine"]
    assert machine["remote_node_cost"] == "emulated remote-node cost 300 ns"
    assert machine["emulated_remote_node_cost_ns"] == 300
    assert run.result["config"]["numa_remote_ns"] == 300
    assert "emulated remote-node cost 300 ns" in run.stdout


@pytest.mark.skipif(CORES < 2, reason="needs two CPUs for two virtual nodes")
def test_remote_cost_off_pays_nothing(tmp_path):
    run = remote_run(tmp_path, 0)
    handoffs = run.result["handoffs"]
    assert handoffs["total"] - handoffs["same_node"] > 0
    assert handoffs["remote_cost_paid"] == 0
    assert run.result["machine"]["remote_node_cost"] is None


# ---- delays in time -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lock", "tunables"),
    [
        ("ticket_fixed_delay", ["spinlock_delay"]),
        ("ticket_auto_backoff", ["delay_max"]),
        ("ttas_backoff", ["backoff_min", "backoff_max"]),
        ("ticket", []),
        ("ck_ticket_pb", []),  # its shift counts empty loop iterations, not pauses
    ],
)
def test_pause_tunables_in_ns(lock, tunables, tmp_path):
    """cpu_relax() is timed once per run and reported with the machine facts; each tunable
    counted in pauses is reported as set and in ns."""
    run = run_engine(
        ["--lock", lock, "--nwriters", "2", "--ops", "2000", "--duration", "10"], "opt", tmp_path
    )
    assert run.returncode == 0, run.stderr
    relax = run.result["machine"]["cpu_relax_ns"]
    assert math.isfinite(relax) and relax > 0
    assert run.result["calibration"]["cpu_relax_ns"] == relax
    listed = run.result["calibration"]["pause_tunables"]
    assert [t["name"] for t in listed] == tunables
    for t in listed:
        assert t["unit"] == "pauses"
        assert t["value"] == run.result["config"]["params"][t["name"]]
        assert math.isfinite(t["ns"]) and t["ns"] >= 0
        assert t["ns"] == pytest.approx(t["value"] * relax)
        if t["value"] > 0:
            assert t["ns"] > 0


def test_new_fields_validate(tmp_path, result_schema):
    jsonschema = pytest.importorskip("jsonschema")
    run = run_engine(
        ["--lock", "rwsem", "--nwriters", "2", "--nreaders", "1", "--ops", "10",
         "--duration", "10", "--torture-delays", "rwsem_lock"],
        "opt",
        tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    jsonschema.validate(run.result, result_schema)
    if CORES >= 2:
        jsonschema.validate(remote_run(tmp_path, 100).result, result_schema)
