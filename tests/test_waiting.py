"""Waiting policies (wait.h): spin, yield and spin-then-park, for every lock that has one.

Real programs run more threads than CPUs. Here the interposition torture program runs at 2 and
at 4 threads per CPU under every lock with a policy, under each policy, in the opt and TSAN
builds, each run behind a timeout. Under spin-then-park a run must stay within a loose bound of
glibc's time for the same program (bench/waiting.py prints the ratios); under spin the runs
are kept tiny, because a FIFO spinlock whose next owner is preempted stalls every waiter behind
it for a time slice, which is what the policies are for. In the engine: FIFO order is kept
while waiters park (the sampled overtakes of a FIFO lock never exceed the other threads), the
parks and wake-ups are counted, and bad policies are one line and exit 2.
"""

import json
import time

import pytest
from conftest import (
    BUILD,
    CORES,
    list_locks,
    run_engine,
    run_preloaded,
    run_unit,
    run_unit_against_mutant,
)

POLICIES = ("spin", "yield", "spin-then-park")
THREADS_PER_CPU = (2, 4)
# The torture program's --iterations: small under TSAN (each atomic is a call there) and under
# spin (each preempted next owner costs a time slice), and never fewer than the program needs.
ITERATIONS = {("opt", "spin"): 20, ("tsan", "spin"): 20, ("opt", None): 2000, ("tsan", None): 50}
# Loose: the benchmark, not this test, holds the 5x goal (a shared CI machine is noisy).
PARK_BOUND_TIMES_GLIBC, PARK_BOUND_SLACK_S = 10, 10.0
FIFO_LOCKS = ("ticket", "mcs", "clh", "anderson")
FIFO_BEYOND_SHARE = 0.005


def waiting_locks(variant: str) -> list[dict]:
    locks = [lock for lock in list_locks() if any(t["name"] == "wait" for t in lock["tunables"])]
    if variant == "tsan":
        locks = [lock for lock in locks if "tsan_opaque" not in lock["flags"]]
    return locks


def torture_args(variant: str, policy: str, per_cpu: int) -> list[str]:
    iterations = ITERATIONS.get((variant, policy), ITERATIONS[(variant, None)])
    threads = min(64, per_cpu * CORES)
    return [str(BUILD / variant / "interpose-torture"), "--threads", str(threads),
            "--iterations", str(iterations)]  # fmt: skip


def timed_torture(variant: str, policy: str, per_cpu: int, env: dict) -> tuple[float, str, str]:
    started = time.monotonic()
    verdict, code, out = run_preloaded(torture_args(variant, policy, per_cpu), variant, env)
    return time.monotonic() - started, verdict, f"exit {code}\n{out}"


_glibc_seconds: dict[int, float] = {}


def glibc_seconds(per_cpu: int) -> float:
    """The same program under the C library's mutex (opt build), once per load."""
    if per_cpu not in _glibc_seconds:
        elapsed, verdict, out = timed_torture("opt", "spin-then-park", per_cpu, {})
        assert verdict == "ok", out
        _glibc_seconds[per_cpu] = elapsed
    return _glibc_seconds[per_cpu]


def oversubscribed_cases() -> list:
    return [
        pytest.param(
            variant,
            lock["name"],
            policy,
            per_cpu,
            id=f"{variant}-{lock['name']}-{policy}-{per_cpu}x",
        )  # fmt: skip
        for variant in ("opt", "tsan")
        for lock in waiting_locks(variant)
        for policy in POLICIES
        for per_cpu in THREADS_PER_CPU
    ]


@pytest.mark.parametrize(("variant", "lock", "policy", "per_cpu"), oversubscribed_cases())
def test_torture_oversubscribed_under_each_policy(variant, lock, policy, per_cpu):
    env = {"LOCKLAB_LOCK": lock, "LOCKLAB_WAIT": policy}
    elapsed, verdict, out = timed_torture(variant, policy, per_cpu, env)
    assert verdict == "ok", f"{lock} wait={policy} ({variant}, {per_cpu}x CPUs): {out}"
    assert "torture: ok" in out
    if variant == "opt" and policy == "spin-then-park":
        bound = PARK_BOUND_TIMES_GLIBC * glibc_seconds(per_cpu) + PARK_BOUND_SLACK_S
        assert elapsed < bound, f"{lock}: {elapsed:.1f} s, glibc {glibc_seconds(per_cpu):.2f} s"


def test_interposition_parks_by_default_and_counts(tmp_path):
    """No LOCKLAB_WAIT: spin-then-park, and the statistics say how often it slept and woke."""
    stats = tmp_path / "stats.json"
    env = {"LOCKLAB_LOCK": "mcs", "LOCKLAB_STATS": str(stats)}
    verdict, code, out = run_preloaded(torture_args("opt", "spin-then-park", 4), "opt", env)
    assert verdict == "ok", out
    waiting = json.loads(stats.read_text())["waiting"]
    assert waiting["policy"] == "spin-then-park"
    assert waiting["parks"] > 0 and waiting["wakes"] > 0
    assert waiting["wakes"] <= waiting["parks"]  # a wake-up is counted for a thread it woke


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"LOCKLAB_LOCK": "mcs", "LOCKLAB_WAIT": "nap"}, "'nap' is not spin, yield or"),
        ({"LOCKLAB_LOCK": "futex_mutex", "LOCKLAB_WAIT": "yield"}, "has no waiting policy"),
        ({"LOCKLAB_LOCK": "mcs", "LOCKLAB_PARAMS": "wait=nap"}, "bad or out-of-range value"),
    ],
)
def test_bad_interposition_policy_is_one_line(env, expected):
    verdict, code, out = run_preloaded(torture_args("opt", "spin", 2), "opt", env, 30)
    assert code == 2, out
    lines = out.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], out


@pytest.mark.parametrize("policy", ["yield", "spin-then-park"])
@pytest.mark.parametrize("lock", FIFO_LOCKS)
def test_fifo_order_is_kept_while_waiters_park(lock, policy, tmp_path):
    """Every acquisition sampled, 2 threads per CPU: under a FIFO lock a waiter is overtaken
    by at most the other writers, queued ahead of it. Only a preemption between reading the
    count and queueing, or a re-queue in that window, adds more: measured here at most 0.025%
    of the samples for ticket, mcs, clh and anderson, against 0.2% to 15% for ttas and 1% to
    13% for tas, which promise no order. The bar is 0.5%."""
    threads = 2 * CORES
    args = ["--lock", lock, "--param", f"wait={policy}", "--nwriters", str(threads)]
    args += ["--ops", "20000", "--duration", "2", "--latency-every", "1", "--watchdog", "20"]
    run = run_engine(args, "opt", tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.result["violations"]["total"] == 0
    overtaken = run.result["overtaken"]
    share = overtaken["beyond_other_writers"] / overtaken["samples"]
    assert share <= FIFO_BEYOND_SHARE, f"{lock} wait={policy}: {overtaken}"


@pytest.mark.parametrize("variant", ["opt", "tsan"])
@pytest.mark.parametrize("policy", ["yield", "spin-then-park"])
def test_engine_torture_under_policies(variant, policy, tmp_path):
    """Every lock with a policy, oversubscribed 3x: no violation, and spin-then-park parks."""
    for lock in waiting_locks(variant):
        args = ["--lock", lock["name"], "--param", f"wait={policy}", "--param", "spin_ns=500"]
        args += ["--nwriters", str(3 * CORES), "--ops", "5000", "--duration", "1"]
        args += ["--cs-lines", "2", "--watchdog", "20"]
        run = run_engine(args, variant, tmp_path)
        assert run.returncode == 0, f"{lock['name']}: {run.stderr}"
        assert run.result["violations"]["total"] == 0, lock["name"]
        assert run.result["config"]["params"]["wait"] == policy
        switches = run.result["context_switches"]
        if policy == "yield":
            assert switches["parks"] == 0 and switches["wakes"] == 0, lock["name"]


def test_engine_policy_names_and_errors(tmp_path):
    ok = run_engine(["--lock", "mcs", "--param", "wait=2", "--ops", "100"], "opt", tmp_path)
    assert ok.returncode == 0 and ok.result["config"]["params"]["wait"] == "spin-then-park"
    for param, expected in [("wait=nap", "is not one of its values"), ("spin_ns=-1", "range")]:
        bad = run_engine(["--lock", "mcs", "--param", param], "opt", tmp_path, json_out=False)
        assert bad.returncode == 2
        assert len(bad.stderr.strip().splitlines()) == 1 and expected in bad.stderr


def test_interposition_policy_is_the_mutexes_when_rwlocks_sleep():
    """LOCKLAB_WAIT names the mutexes' policy; the rwlocks' lock (rwsem) has none and sleeps."""
    env = {"LOCKLAB_LOCK": "mcs", "LOCKLAB_WAIT": "yield", "LOCKLAB_RWLOCK": "rwsem"}
    verdict, code, out = run_preloaded(torture_args("opt", "yield", 2), "opt", env)
    assert verdict == "ok", out


def test_a_waker_never_writes_the_node_of_the_waiter_it_woke():
    """MCS under spin-then-park, the waker stalled just after its wake while the woken waiter
    ends and its node is zeroed for a new thread (tests/unit/mcs_wait_test.c): the node's next
    waiter is still woken. Once a 100 s hang of the interposition torture."""
    proc = run_unit("opt", "mcs_wait_test")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_node_test_catches_a_waker_that_counts_for_the_node(tmp_path):
    proc = run_unit_against_mutant(
        tmp_path, "mcs_wait_test", "mcs.c",
        "lock_unpark_node(&lock->wait, self, &next->locked, &next->parked);",
        "lock_unpark(&lock->wait, self, &next->locked, &next->parked, 1);",
    )  # fmt: skip
    assert proc.returncode != 0 and "never woken" in proc.stdout, proc.stdout
