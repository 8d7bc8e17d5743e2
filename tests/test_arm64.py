"""arm64 (seed 000 ran on a Kunpeng 920): the engine cross-built for aarch64 (build/arm64/,
`make arm64`, part of `make build-all`) runs one lock of every family under qemu-user, and its
instructions are the kernel's: rtmutex k0's set_owner an acquire RMW, k1's a plain store, and
arch.h's barriers dmb ish / ishld / ishst and yield.

What this proves: the arm64 code builds, runs, and uses the instructions the kernel uses. What
it does not: that weak orderings are exercised. qemu-user runs aarch64 code on the x86 host's
stronger memory model, so a missing barrier cannot show up here as a failure.

A machine without the packages skips, naming the missing Debian package.
"""

import json
import re
import shutil
import subprocess

import pytest
from conftest import BUILD, CORES, ROOT

COMPILER = "aarch64-linux-gnu-gcc"
QEMU = "qemu-aarch64-static"
OBJDUMP = "aarch64-linux-gnu-objdump"
SYSROOT = "/usr/aarch64-linux-gnu"  # libc6-arm64-cross: the dynamic loader and libc for qemu
PACKAGES = {
    COMPILER: "gcc-aarch64-linux-gnu",
    QEMU: "qemu-user-static",
    OBJDUMP: "binutils-aarch64-linux-gnu",
}
ARM64_BENCH = BUILD / "arm64" / "locklab-bench"


def need(*tools: str) -> None:
    for tool in tools:
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not found: install the Debian package {PACKAGES[tool]}")


def arm64_bench():
    need(COMPILER)
    if not ARM64_BENCH.exists():
        pytest.fail(f"{ARM64_BENCH} is missing: run 'make build-all' (or 'make arm64')")
    return ARM64_BENCH


def run_arm64(args: list[str], timeout: int = 120) -> subprocess.CompletedProcess:
    need(QEMU)
    return subprocess.run(
        [QEMU, "-L", SYSROOT, str(arm64_bench()), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def family_representatives() -> list[str]:
    """The first lock of each family, as the arm64 build lists them, plus the locks whose
    arm64 code is the seeds' subject (rtmutex k0, CNA) and a reader-writer lock."""
    if shutil.which(QEMU) is None or not ARM64_BENCH.exists():
        return ["tas", "ticket", "mcs", "qspinlock", "cna", "futex_mutex", "mutex", "rwsem",
                "rtmutex", "rtmutex_k0", "pthread_mutex", "pi_futex", "ck_ticket"]  # fmt: skip
    proc = run_arm64(["--list", "--json", "-"], timeout=60)
    locks = json.loads(proc.stdout)["locks"]
    chosen, families = [], set()
    for lock in locks:
        if lock["family"] not in families:
            families.add(lock["family"])
            chosen.append(lock["name"])
    return chosen + [name for name in ("rtmutex_k0", "cna", "rwsem") if name not in chosen]


# A FIFO spinlock (ticket, mcs, qspinlock, ck_ticket) whose next waiter is preempted hands over
# about once per scheduler slice once all CORES + 1 threads overlap: 3000 ops took 7.5-15 s here.
# 1000 ops take a third of that, and the 30 s --duration bounds a slow host's run.
ARM64_OPS = 1000
ARM64_DURATION_S = 30


@pytest.mark.parametrize("lock", family_representatives())
def test_arm64_torture_under_qemu(lock, tmp_path):
    """One lock per family, one thread more than cores, bounded by --ops: status ok, zero
    violations, and the engine knows it runs on arm64. (Heavier oversubscription is the x86
    torture's job: under emulation a FIFO spinlock with preempted waiters crawls.)

    The exact count is asserted when --ops ended the run (window shorter than --duration); a
    host slow enough that --duration ended it first still has every other check, the write
    counter's (no lost update) among the violations."""
    result_file = tmp_path / "result.json"
    args = ["--lock", lock, "--nwriters", str(CORES + 1), "--ops", str(ARM64_OPS),
            "--duration", str(ARM64_DURATION_S), "--cs-lines", "2", "--watchdog", "30",
            "--json", str(result_file)]  # fmt: skip
    if lock in ("rwsem", "rwsem_xadd_3_10", "pthread_rwlock"):
        args += ["--nreaders", "2", "--gap-ns", "2000"]
    if lock.startswith("cna"):
        args += ["--numa-nodes", "2", "--pin", "compact"]
    proc = run_arm64(args)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(result_file.read_text())
    assert result["machine"]["arch"] == "arm64"
    assert result["status"] == "ok"
    assert result["violations"]["checked"] and result["violations"]["total"] == 0
    writes = result["write_acquisitions"]
    if result["window_s"] < ARM64_DURATION_S:
        assert writes == ARM64_OPS  # --ops stopped it: exactly that many, none lost or extra
    else:
        assert 0 < writes <= ARM64_OPS  # --duration stopped it first


def test_arm64_torture_delays_under_qemu(tmp_path):
    """--torture-delays and the cycle counter (CNTVCT_EL0) behind its busy-waits on arm64."""
    result_file = tmp_path / "result.json"
    proc = run_arm64(["--lock", "rtmutex", "--nwriters", "3", "--ops", "3000", "--duration", "30",
                      "--torture-delays", "rtmutex_lock", "--json", str(result_file)])  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = json.loads(result_file.read_text())
    assert result["torture_delays"]["writer"]["acquisitions"] == 3000
    assert result["machine"]["cpu_relax_ns"] > 0


def disassembly(binary, function: str) -> list[str]:
    need(OBJDUMP)
    proc = subprocess.run(
        [OBJDUMP, "-d", "--no-show-raw-insn", f"--disassemble={function}", str(binary)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    code = []
    for line in proc.stdout.splitlines():
        match = re.match(r"^\s*[0-9a-f]+:\s+(.*?)\s*(//.*)?$", line)
        if match:
            code.append(re.sub(r"\s+", " ", match.group(1)))
    if not code:
        pytest.fail(f"{function} is not in {binary}")
    return code


# An acquire RMW: LSE swpa/swpal/casa/casal/ldadda... or an ldaxr (load-acquire exclusive).
ACQUIRE_RMW = re.compile(r"^(swpa|swpal|casa|casal|ld(add|clr|eor|set)al?|ldaxr)[bh]?\s")
EXCLUSIVE_OR_ATOMIC = re.compile(r"^(cas|casa|casl|casal|swp|swpa|swpl|swpal|ldxr|ldaxr)\s")


def owner_register(code: list[str]) -> str:
    """The register holding the lock (&lock->owner, offset 0): the base of mark_waiters'
    first atomic or exclusive access."""
    for text in code:
        if EXCLUSIVE_OR_ATOMIC.match(text):
            return re.search(r"\[(x\d+)\]", text).group(1)
    pytest.fail("no atomic access to the owner word: " + "; ".join(code))


@pytest.mark.parametrize("variant", ["k0", "k1"])
def test_arm64_set_owner_instructions(variant):
    """Seed 000's question at the instruction level: in k0 set_owner is xchg_acquire, an
    acquire RMW on the owner word (swpa with LSE, an ldaxr/stxr loop without); in k1 it is a
    plain str to the owner word, and k1 has no acquire RMW at all. mark_waiters is the relaxed
    cmpxchg loop (cas / ldxr-stxr, no acquire) followed by dmb ish in both."""
    code = disassembly(arm64_bench(), f"try_to_take_{variant}")
    owner = owner_register(code)
    acquire = [text for text in code if ACQUIRE_RMW.match(text)]
    plain_store = [text for text in code if re.match(rf"^str x\d+, \[{owner}\]$", text)]
    assert "dmb ish" in code, "mark_waiters' smp_mb__after_atomic() should be a dmb ish"
    if variant == "k0":
        assert acquire, f"k0's set_owner should be an acquire RMW: {code}"
        assert any(f"[{owner}]" in text for text in acquire), acquire
        assert plain_store == [], f"k0 stores the owner word plainly: {plain_store}"
    else:
        assert acquire == [], f"k1's set_owner should be a plain store, found {acquire}"
        assert plain_store, f"no plain str to the owner word [{owner}] in k1: {code}"


BARRIER_PROBE = """
#include <locklab/arch.h>
void probe_mb(void);
void probe_rmb(void);
void probe_wmb(void);
void probe_relax(void);
void probe_prefetchw(const int *p);
void probe_mb(void) { arch_smp_mb(); }
void probe_rmb(void) { arch_smp_rmb(); }
void probe_wmb(void) { arch_smp_wmb(); }
void probe_relax(void) { cpu_relax(); }
void probe_prefetchw(const int *p) { arch_prefetchw(p); }
"""


def test_arm64_barrier_mapping(tmp_path):
    """arch.h on arm64 maps as arch/arm64/include/asm/barrier.h and processor.h of Linux 6.1:
    smp_mb dmb ish, smp_rmb dmb ishld, smp_wmb dmb ishst, cpu_relax yield, prefetchw prfm
    pstl1keep."""
    need(COMPILER, OBJDUMP)
    source = tmp_path / "probe.c"
    source.write_text(BARRIER_PROBE)
    objfile = tmp_path / "probe.o"
    subprocess.run(
        [COMPILER, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-Wmissing-prototypes",
         f"-I{ROOT / 'native' / 'include'}", "-c", "-o", str(objfile), str(source)],
        check=True,
        timeout=60,
    )  # fmt: skip
    expected = {"probe_mb": "dmb ish", "probe_rmb": "dmb ishld", "probe_wmb": "dmb ishst",
                "probe_relax": "yield", "probe_prefetchw": "prfm pstl1keep, [x0]"}  # fmt: skip
    for function, instruction in expected.items():
        code = disassembly(objfile, function)
        assert code[0] == instruction, f"{function}: {code}"
