"""rtmutex (seed 000's k0-k5, seed 003's adaptive lock and its 2.6.24-rt baseline) and the
sleeping peers: variant selection, the instructions each seed 000 variant compiles to on x86,
the data race seed 000's patches remove, whether a waiter spins, and context switches reported
for sleeping locks. Counts and reports only; nothing here asserts on time or throughput."""

import json
import os
import platform
import re
import shutil
import subprocess

import pytest
from conftest import BUILD, VARIANTS, bench_path, list_locks, run_engine, run_unit_against_mutant

SLEEPING = [lock["name"] for lock in list_locks() if "sleeps" in lock["flags"]]


def test_variants_are_listed_by_name():
    names = {lock["name"] for lock in list_locks()}
    assert {f"rtmutex_k{k}" for k in range(6)} <= names
    assert {"rtmutex", "rtmutex_adaptive", "pi_futex", "pthread_mutex_pi"} <= names
    assert "rtmutex_rt_2_6_24" in names


def test_seed_003_baseline_is_listed_as_never_spinning():
    locks = {lock["name"]: lock for lock in list_locks()}
    baseline = locks["rtmutex_rt_2_6_24"]
    assert "spins" not in baseline["flags"] and "sleeps" in baseline["flags"]
    assert "2.6.24-rt1" in baseline["source"]
    assert "spins" in locks["rtmutex_adaptive"]["flags"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_rtmutex_unit_tests(variant):
    """With a running owner that never lets go while the waiter could spin, the 2.6.24-rt
    baseline and rtmutex_adaptive with spin_budget_ns=0 read the owner word zero times before
    sleeping (the budget-0 lock used to poll it 64 times); the stock and budgeted locks spin."""
    binary = BUILD / variant / "unit" / "rtmutex_test"
    assert binary.exists(), f"{binary} is missing: run 'make build-all'"
    proc = subprocess.run([str(binary)], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "all checks passed" in proc.stdout


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # An insertion that forgets to recolour the grandparent: two reds in a row.
        (
            "\t\t\trb_set_color(grandparent, RB_RED);\n\t\t\tnode = grandparent;",
            "\t\t\tnode = grandparent;",
        ),
        # A removal that never restores the black height.
        ("\tif (removed_color == RB_BLACK)\n\t\trb_erase_fixup(root, child, parent);\n", ""),
        # An insertion to the right still taken for the new leftmost: the top waiter is wrong.
        ("\t\t\tleftmost = false;\n", ""),
    ],
    ids=["insert-colour", "erase-fixup", "leftmost"],
)
def test_a_broken_waiter_tree_is_caught(tmp_path, old, new):
    """The rtmutex port keeps its waiters in a red-black tree as the kernel does (rbtree.h);
    the unit test's random insertions and removals find each of these mistakes."""
    proc = run_unit_against_mutant(tmp_path, "rtmutex_test", "rbtree.h", old, new)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "the waiter tree broke" in proc.stdout


# What each seed 000 variant's try_to_take must compile to on x86-64, as the kernel's x86
# macros give it: try_cmpxchg_relaxed / cmpxchg_relaxed -> lock cmpxchg (in a retry loop),
# atomic_long_or -> lock or, smp_mb__after_atomic -> nothing, xchg_acquire -> xchg, a plain
# store (WRITE_ONCE) -> mov.
X86_TRY_TO_TAKE = {
    "k0": ("lock cmpxchg", "xchg"),
    "k1": ("lock cmpxchg", "mov"),
    "k2": ("lock cmpxchg", "xchg"),
    "k3": ("lock or", "xchg"),
    "k4": ("lock cmpxchg", "mov"),
    "k5": ("lock or", "mov"),
}
FENCE = re.compile(r"^(mfence|lfence|sfence)\b|^lock \w+\s+\$0x0,.*\(%[re]sp\)")


def disassembly(function: str) -> list[tuple[int, str]]:
    """(address, instruction) of one function of the optimised engine."""
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("the expected instructions are x86-64's; this machine is not x86-64")
    if shutil.which("objdump") is None:
        pytest.fail("objdump (binutils) is needed to read the engine's instructions")
    proc = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", f"--disassemble={function}",
         str(bench_path("opt"))],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )  # fmt: skip
    code = []
    for line in proc.stdout.splitlines():
        match = re.match(r"^\s*([0-9a-f]+):\s+(.*\S)\s*$", line)
        if match:
            code.append((int(match.group(1), 16), re.sub(r"\s+", " ", match.group(2))))
    if not code:
        pytest.fail(f"{function} is not in build/opt/locklab-bench (each variant must have "
                    "its own out-of-line, named try_to_take)")  # fmt: skip
    return code


@pytest.mark.parametrize("variant", sorted(X86_TRY_TO_TAKE))
def test_try_to_take_compiles_as_the_kernel_on_x86(variant):
    """mark_waiters and set_owner of each variant, as instructions: k0/k1/k2/k4 a lock cmpxchg
    retry loop, k3/k5 one lock or; no stand-alone fence in any (smp_mb__after_atomic is only
    a compiler barrier on x86), so k0 and k3 differ only by the loop against the or; set_owner
    is an xchg in k0/k2/k3 (xchg_acquire) and a plain mov in k1/k4/k5."""
    mark, set_owner = X86_TRY_TO_TAKE[variant]
    code = disassembly(f"try_to_take_{variant}")
    instructions = [text for _, text in code]
    fences = [text for text in instructions if FENCE.search(text)]
    assert fences == [], f"a stand-alone fence the x86 kernel does not have: {fences}"
    locked = sorted({re.sub(r"^lock (\w+?)[bwlq]?\s.*", r"lock \1", text)
                     for text in instructions if text.startswith("lock ")})  # fmt: skip
    # cmpxchg has no size suffix to strip; "or" may come as orq.
    locked = ["lock cmpxchg" if name.startswith("lock cmpxchg") else name for name in locked]
    assert locked == [mark], f"locked instructions {locked}, expected only {mark}"
    if mark == "lock or":
        ors = [text for text in instructions if text.startswith("lock or")]
        assert len(ors) == 1 and ors[0].startswith("lock orq $0x1,"), ors
    else:
        # The retry loop: a conditional jump after the cmpxchg back to before it.
        at = next(addr for addr, text in code if text.startswith("lock cmpxchg"))
        back = [
            text for addr, text in code
            if addr > at and text.startswith("jne ")
            and int(text.split()[1], 16) < at
        ]  # fmt: skip
        assert back, "no retry loop around the lock cmpxchg"
    # xchg with a memory operand (xchg %ax,%ax is a two-byte nop used for padding).
    xchgs = [text for text in instructions if text.startswith("xchg") and "(" in text]
    if set_owner == "xchg":
        assert xchgs, "set_owner should be xchg_acquire: an xchg"
    else:
        assert xchgs == [], f"set_owner should be a plain store, found {xchgs}"


@pytest.mark.parametrize("variant", range(6))
def test_variant_by_param(variant, tmp_path):
    run = run_engine(
        ["--lock", "rtmutex", "--param", f"variant={variant}", "--nwriters", "3",
         "--ops", "5000", "--duration", "2"],
        "opt",
        tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.result["config"]["params"] == {"variant": variant}


def test_bad_variant(tmp_path):
    run = run_engine(["--lock", "rtmutex", "--param", "variant=6"], "opt", tmp_path)
    assert run.returncode == 2
    assert "out of range [0, 5]" in run.stderr


def test_adaptive_tunables(tmp_path):
    run = run_engine(
        ["--lock", "rtmutex_adaptive", "--param", "spin_budget_ns=5000", "--param",
         "lateral_steal=0", "--nwriters", "4", "--ops", "5000", "--duration", "2"],
        "opt",
        tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.result["config"]["params"] == {"spin_budget_ns": 5000, "lateral_steal": 0}


def tsan_reports(lock: str, tmp_path) -> str:
    run = run_engine(
        [
            "--lock",
            lock,
            "--nwriters",
            "6",
            "--hold-ns",
            "300",
            "--ops",
            "100000",
            "--duration",
            "2",
        ],
        "tsan",
        tmp_path,
        json_out=False,
    )
    return run.stderr if "WARNING: ThreadSanitizer: data race" in run.stderr else ""


@pytest.mark.parametrize("lock", ["rtmutex_k0", "rtmutex_k1"])
def test_tsan_finds_the_mark_waiters_race(lock, tmp_path):
    """k0 (stock) and k1 start mark_waiters from a plain load of the owner word, racing with
    the fast paths' CAS: the report that started seed 000's thread. A race needs the
    interleaving, so up to six runs; alone, every run shows it (measured 18 of 18), but once in
    a full suite three were not enough."""
    reports = []
    for _ in range(6):
        report = tsan_reports(lock, tmp_path)
        race = report.split("WARNING: ThreadSanitizer: data race", 1)[-1].split("\n\n", 1)[0]
        if report and "mark_waiters" in race:
            return
        reports.append(race)
    pytest.fail(f"ThreadSanitizer never reported the plain load in mark_waiters: {reports}")


@pytest.mark.parametrize("lock", SLEEPING)
def test_context_switches_reported_for_sleeping_locks(lock, tmp_path):
    run = run_engine(
        ["--lock", lock, "--nwriters", "4", "--hold-ns", "20000", "--ops", "2000",
         "--duration", "2"] + (["--nreaders", "2", "--gap-ns", "2000"] if "rw" in lock else []),
        "opt",
        tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    switches = run.result["context_switches"]
    assert switches["voluntary"] >= 0 and switches["involuntary"] >= 0
    assert switches["voluntary_per_1000_acquisitions"] is not None
    assert switches["voluntary_per_1000_acquisitions"] >= 0


def pi_scenario(lock: str, *extra: str, cpus: str | None = None) -> tuple[int, dict | None, str]:
    """The scenario's run, under ``taskset -c cpus`` when given."""
    pinned = ["taskset", "-c", cpus] if cpus is not None else []
    proc = subprocess.run(
        [*pinned, str(bench_path("opt")), "--lock", lock, "--scenario", "pi-inversion",
         "--ops", "10", "--json", "-", *extra],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )  # fmt: skip
    if proc.returncode == 2 and "needs SCHED_FIFO" in proc.stderr:
        pytest.skip("SCHED_FIFO is not permitted on this machine")
    result = json.loads(proc.stdout) if proc.stdout.strip() else None
    return proc.returncode, result, proc.stderr


@pytest.mark.parametrize(
    ("lock", "inherits"),
    [
        ("rtmutex", True),
        ("rtmutex_k5", True),
        ("rtmutex_adaptive", True),
        ("rtmutex_rt_2_6_24", True),
        ("pi_futex", True),
        ("pthread_mutex_pi", True),
        ("futex_mutex", False),
        ("pthread_mutex", False),
    ],
)
def test_priority_inversion_is_bounded_only_with_inheritance(lock, inherits):
    """Low holds the lock, medium hogs the CPU, high waits, all on one CPU under SCHED_FIFO:
    the scheduler's order is deterministic, so this counts orderings, not times. With
    inheritance, high gets the lock before medium's burst ends, every time; without, never."""
    code, result, stderr = pi_scenario(lock)
    assert code == 0, stderr
    assert result["scenario"] == "pi-inversion" and result["status"] == "ok"
    assert result["lock_has_priority_inheritance"] is inherits
    assert result["iterations"] == 10
    assert result["high_before_medium"] == (10 if inherits else 0)
    assert result["high_wait_ns"]["samples"] == 10


@pytest.mark.parametrize(("lock", "inherits"), [("rtmutex", True), ("futex_mutex", False)])
def test_priority_inversion_orders_without_a_spare_cpu(lock, inherits):
    """Each step of an iteration waits for the one before, never for a clock: with the controller
    on the scenario's own CPU (so late by whole bursts), the ordering is still exact."""
    one_cpu = str(min(os.sched_getaffinity(0)))
    code, result, stderr = pi_scenario(lock, cpus=one_cpu)
    assert code == 0, stderr
    assert result["high_before_medium"] == (10 if inherits else 0)


def test_priority_inversion_with_a_spinlock_is_caught_by_the_watchdog():
    """A spinning high-priority waiter on the owner's CPU never lets the owner run: the
    controller's watchdog ends it with exit 3 instead of hanging."""
    code, result, stderr = pi_scenario("ticket", "--watchdog", "1")
    assert code == 3
    assert "watchdog" in stderr
    assert result["status"] == "watchdog"


def test_priority_inversion_without_sched_fifo_is_one_line():
    if os.geteuid() != 0:
        pytest.skip("needs root to drop to an unprivileged user")
    proc = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
         str(bench_path("opt")), "--lock", "rtmutex", "--scenario", "pi-inversion"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )  # fmt: skip
    if proc.returncode != 2 and "denied" in proc.stderr:
        pytest.skip("the unprivileged user cannot reach the build tree here")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert "needs SCHED_FIFO" in proc.stderr and "every other run works" in proc.stderr
