"""Kernel spinlock family (seeds 002, 004): qspinlock/CNA internals, the instructions the x86
build emits for qspinlock, virtual NUMA nodes and the hand-over counters. Counters and
instructions only; nothing here asserts on time or throughput.

Seed 004: the RFC "auto" backoff's rule in a C unit test, and the revision each ticket
backoff variant names. The oversubscribed torture of qspinlock, qspinlock_nr16k, cna, cna_v1,
the ticket backoff variants and ck_ticket_pb is in test_torture.py, which covers every lock the
engine lists.
"""

import platform
import re
import shutil
import subprocess

import pytest
from conftest import (
    BUILD,
    CORES,
    VARIANTS,
    bench_path,
    list_locks,
    run_engine,
    run_unit,
    run_unit_against_mutant,
)


@pytest.mark.parametrize("variant", VARIANTS)
def test_qspinlock_unit_tests(variant):
    """Both word layouts (x86: locked byte, pending byte, tail at bit 16) and their transitions,
    tail encoding, and CNA's hand-over policy (v1 and v15) driven on a synthetic saturated queue:
    same-node fraction vs FIFO, the thresholds' bounds, and v15's clock reads (none while the
    secondary queue is empty, none in the owner's hand-over, the start at its creation)."""
    binary = BUILD / variant / "unit" / "qspinlock_test"
    assert binary.exists(), f"{binary} is missing: run 'make build-all'"
    proc = subprocess.run([str(binary)], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "all checks passed" in proc.stdout


def test_unit_tests_can_fail(tmp_path):
    """The unit test must catch a CNA that hands over FIFO: compile it against a copy of the
    lock whose scans (v1's and v15's) never find a local waiter."""
    proc = run_unit_against_mutant(
        tmp_path,
        "qspinlock_test",
        "qspinlock.c",
        "->numa_node == node->numa_node",
        "->numa_node == -12345",
    )
    assert proc.returncode == 1
    assert "CNA keeps the lock on one node" in proc.stdout


@pytest.mark.skipif(CORES < 2, reason="needs two CPUs for two virtual nodes")
def test_topology_with_virtual_nodes():
    proc = subprocess.run(
        [str(bench_path("opt")), "--topology", "--numa-nodes", str(CORES)],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert f"{CORES} NUMA nodes (virtual)" in proc.stdout
    rows = [line.split() for line in proc.stdout.splitlines() if line.split()[:1] != ["cpu"]]
    nodes = [int(row[3]) for row in rows if len(row) == 5 and row[0].isdigit()]
    assert nodes == list(range(CORES))  # one CPU per node, in CPU order


@pytest.mark.parametrize("nodes", ["0", str(CORES + 1), "x"])
def test_bad_numa_nodes(nodes):
    proc = subprocess.run(
        [str(bench_path("opt")), "--lock", "mcs", "--numa-nodes", nodes, "--duration", "0.1"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "--numa-nodes" in proc.stderr


@pytest.mark.parametrize("lock", ["mcs", "qspinlock", "qspinlock_nr16k", "cna", "cna_v1", "ticket"])
def test_handoffs_between_nodes_are_counted(lock, tmp_path):
    """One writer per CPU and one CPU per virtual node: every hand-over between two writers
    crosses nodes, so the same-node count must be exactly 0. With one node it is every one."""
    common = ["--lock", lock, "--nwriters", str(CORES), "--pin", "compact", "--ops", "20000"]
    common += ["--duration", "2", "--latency-every", "1"]
    split = run_engine([*common, "--numa-nodes", str(CORES)], "opt", tmp_path).result
    assert split["machine"]["numa_nodes"] == CORES
    assert [t["node"] for t in split["threads"]] == list(range(CORES))
    assert split["handoffs"]["nodes_known"] is True
    assert split["handoffs"]["same_node"] == 0
    assert (
        split["handoffs"]["total"] + split["handoffs"]["reacquisitions"] + CORES
        >= (split["write_acquisitions"])
    )
    one = run_engine([*common, "--numa-nodes", "1"], "opt", tmp_path).result
    assert one["handoffs"]["same_node"] == one["handoffs"]["total"]
    if one["handoffs"]["total"]:
        assert one["handoffs"]["same_node_fraction"] == 1.0
    assert one["overtaken"]["samples"] > 0


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize(
    "lock", [["cna", "shuffle_reduction=0", "threshold_ns=2000"], ["cna_v1", "fairness_bits=3"]]
)
def test_cna_torture_with_secondary_queues(variant, lock, tmp_path):
    """test_torture.py runs unpinned threads, all on one node, so CNA never builds a secondary
    queue there. Here: pinned threads on virtual nodes, sorting every time and frequent flushes,
    oversubscribed, in every build: no violation (and no sanitizer report)."""
    name, *params = lock
    args = ["--lock", name, "--nwriters", str(3 * CORES), "--pin", "compact"]
    args += ["--numa-nodes", str(min(2, CORES)), "--ops", "20000", "--duration", "2"]
    args += ["--cs-lines", "2", "--watchdog", "20"]
    for param in params:
        args += ["--param", param]
    run = run_engine(args, variant, tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.result["status"] == "ok"
    assert run.result["violations"]["checked"] is True
    assert run.result["violations"]["total"] == 0


def test_unpinned_threads_have_no_node(tmp_path):
    result = run_engine(
        ["--lock", "mcs", "--nwriters", "2", "--ops", "5000", "--duration", "2"], "opt", tmp_path
    ).result
    assert result["handoffs"]["nodes_known"] is False
    assert result["handoffs"]["same_node_fraction"] is None


def test_cna_params(tmp_path):
    run = run_engine(
        [
            "--lock", "cna", "--param", "threshold_handoffs=65536", "--param",
            "shuffle_reduction=0", "--nwriters", str(2 * CORES), "--pin", "compact",
            "--numa-nodes", str(CORES), "--ops", "20000", "--duration", "2",
        ],
        "opt",
        tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    params = run.result["config"]["params"]
    assert params == {
        "wait": "spin",
        "spin_ns": 2000,
        "threshold_ns": 1000000,
        "threshold_handoffs": 65536,
        "shuffle_reduction": 0,
    }


def test_cna_v1_params(tmp_path):
    run = run_engine(
        [
            "--lock", "cna_v1", "--nwriters", str(2 * CORES), "--pin", "compact",
            "--numa-nodes", str(CORES), "--ops", "20000", "--duration", "2",
        ],
        "opt",
        tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.result["config"]["params"] == {"wait": "spin", "spin_ns": 2000, "fairness_bits": 16}


def test_list_names_each_revision():
    """Each variant says which kernel or series revision it follows, in --list's summary."""
    summaries = {lock["name"]: lock["summary"] for lock in list_locks()}
    assert "6.1" in summaries["qspinlock"] and "x86" in summaries["qspinlock"]
    assert "16K" in summaries["qspinlock_nr16k"]
    assert "v15" in summaries["cna"]
    assert "v1 " in summaries["cna_v1"] and "Jan 2019" in summaries["cna_v1"]


# --- the instructions of the optimised x86 build -------------------------------------------------

X86 = platform.machine() in ("x86_64", "AMD64")
# A 16-bit xchg with a memory operand (xchg %reg, %reg16 alone is GCC's 2-byte nop).
REG16 = r"%(?:[abcd]x|[sd]i|bp|r\d+w)"
XCHG16 = re.compile(rf"^xchgw?\s+(?:{REG16},\s*\S*\(|\S*\(\S*\),\s*{REG16}$)")


def function_instructions(name: str) -> list[str]:
    """The instructions of `name` in build/opt/locklab-bench, with GCC's split-off parts
    (name.cold, name.part.N): the slow path is inlined into each lock function."""
    dump = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", str(bench_path("opt"))],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    header = re.compile(rf"^[0-9a-f]+ <{re.escape(name)}(?:\.[\w.]+)?>:$")
    instructions, inside = [], False
    for line in dump.splitlines():
        if header.match(line):
            inside = True
        elif inside and not line.strip():
            inside = False
        elif inside and "\t" in line:
            instructions.append(" ".join(line.split("\t", 1)[1].split()))
    assert instructions, f"{name} not found in the disassembly"
    return instructions


x86_only = pytest.mark.skipif(
    not X86 or shutil.which("objdump") is None, reason="x86-64 instruction checks need objdump"
)


@x86_only
def test_qspinlock_unlock_is_a_plain_byte_store():
    """asm-generic/qspinlock.h: smp_store_release(&lock->locked, 0), which x86 (and its
    paravirt patch site) emits as `movb $0,(%rdi)`: no locked RMW. Then one compare of the
    waiting policy (wait.h) and, under wait=spin, the return: the barrier and the wake-up
    check come after the return, for spin-then-park only."""
    code = [
        i
        for i in function_instructions("qspinlock_unlock")
        if not i.startswith(("nop", "data16", "cs nop", "xchg %ax,%ax"))
    ]
    assert code[0] == "movb $0x0,(%rdi)", code
    assert code[1].startswith("cmpl $0x2,") and code[2].startswith("je "), code
    assert code[3] == "ret", code
    assert not any(i.startswith("lock") for i in code[:4]), code


@x86_only
def test_qspinlock_x86_word_operations():
    """The x86 layout's slow path as the kernel's x86 build: xchg_tail is a 16-bit xchg on the
    tail half, the pending set is `lock btsl $8` (arch/x86 queued_fetch_set_pending_acquire),
    clear_pending_set_locked a 16-bit store, set_locked and clear_pending byte stores, and no
    32-bit locked RMW other than the CAS of the fast path and of the queue's end. (The parking
    path of wait=spin-then-park adds its own: a parked count's increment and decrement, and
    smp_mb's `lock addl $0,-4(%rsp)`; none is on the lock word.)"""
    code = function_instructions("qspinlock_lock")
    assert any(XCHG16.match(i) for i in code), "xchg_tail is not a 16-bit xchg"
    assert any(i.startswith("lock btsl $0x8,") for i in code), "pending set is not lock bts"
    assert any(re.match(r"movw \$0x1,\S*\(", i) for i in code), "no 16-bit pending->locked"
    assert any(re.match(r"movb \$0x1,\S*\(", i) for i in code), "set_locked is not movb"
    assert any(re.match(r"movb \$0x0,0x1\(", i) for i in code), "clear_pending is not movb"
    parking = ("lock addl $0x1,", "lock subl $0x1,", "lock addl $0x0,-0x4(%rsp)")
    locked = [i for i in code if i.startswith("lock") and not i.startswith(parking)]
    assert all(i.startswith(("lock cmpxchg ", "lock btsl $0x8,")) for i in locked), locked


@x86_only
def test_qspinlock_nr16k_word_operations():
    """The NR_CPUS >= 16K layout differs exactly where the kernel's does: no 16-bit tail (a
    cmpxchg loop), clear_pending and pending->locked as 32-bit locked RMWs."""
    code = function_instructions("qspinlock_nr16k_lock")
    assert not any(XCHG16.match(i) for i in code)
    assert any(i.startswith("lock andl $0xfffffeff,") for i in code), "clear_pending"
    assert any(re.match(r"lock (?:addl \$0xffffff01|subl \$0xff),", i) for i in code)
    assert any(i.startswith("lock btsl $0x8,") for i in code), "x86 pending set in both layouts"


@pytest.mark.parametrize(
    ("lock", "param"),
    [("ticket_fixed_delay", "spinlock_delay=375"), ("ticket_auto_backoff", "delay_max=16")],
)
def test_backoff_tunables(lock, param, tmp_path):
    run = run_engine(
        ["--lock", lock, "--param", param, "--nwriters", "4", "--ops", "20000", "--duration", "2"],
        "opt",
        tmp_path,
    )
    assert run.returncode == 0, run.stderr
    name, value = param.split("=")
    assert run.result["config"]["params"][name] == int(value)


# ---- seed 004: which revision each ticket backoff variant follows -----------------------------


@pytest.mark.parametrize("variant", VARIANTS)
def test_ticket_rfc_unit_tests(variant):
    """van Riel's RFC driven on a scripted head: waits delay x (ticket - head), integer
    steps (+1 on 3 busy looks in 8, -1 when the lock is ours), MIN 1, MAX 1000, one delay per
    thread for every lock."""
    proc = run_unit(variant, "ticket_backoff_test")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "all checks passed" in proc.stdout


def test_ticket_rfc_unit_test_can_fail(tmp_path):
    """The later revision's (ticket - head - 1) in the RFC variant must be caught."""
    proc = run_unit_against_mutant(
        tmp_path,
        "ticket_backoff_test",
        "ticket.c",
        "TICKET_RFC_WAIT(lock, (u64)delay * (ticket - head));",
        "TICKET_RFC_WAIT(lock, (u64)delay * (ticket - head - 1));",
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "first wait: delay 1 x (ticket - head) 3 = 3, not 2" in proc.stdout


def test_backoff_variants_name_their_revision():
    locks = {lock["name"]: lock for lock in list_locks()}
    rfc = locks["ticket_auto_backoff_rfc"]
    assert "21 Dec 2012" in rfc["source"] and "RFC" in rfc["source"]
    assert rfc["tunables"] == []
    assert "revision after Lespinasse's review" in locks["ticket_auto_backoff"]["source"]
    assert "1 Jan 2013" in locks["ticket_fixed_delay"]["source"]
    assert "Lespinasse" in locks["ticket_fixed_delay"]["source"]


def test_ck_ticket_pb_describes_what_ck_does():
    """ck_backoff_eb doubles a local copy that the next poll recomputes: no doubling persists."""
    tunables = {lock["name"]: lock for lock in list_locks()}["ck_ticket_pb"]["tunables"]
    (shift,) = (t for t in tunables if t["name"] == "shift")
    assert "doubled by ck_backoff_eb while waiting" not in shift["meaning"]
    assert "not exponential" in shift["meaning"]
