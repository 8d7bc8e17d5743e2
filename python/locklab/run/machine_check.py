"""Is this machine fit to measure? What ``locklab doctor`` reports, and the facts a sweep stores
with each run for the table's one-line summary (analysis/disturbance.py).

Seed 000 fixed the frequency, stopped irqbalance and automatic NUMA balancing and isolated its
CPUs before measuring; each check here looks for one of those, or for what replaces a quiet
machine's assumptions (a hypervisor, other busy processes, no performance counters). Only sysfs
and procfs are read, under ``root`` (``$LOCKLAB_SYSROOT`` or ``/``), so tests can point the
checks at a made-up tree. A file that is missing makes its check "unknown", never an error.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

OK, WARN, UNKNOWN = "ok", "warn", "unknown"
SAMPLE_S = 0.5  # how long steal and other processes' CPU use are sampled
BUSY_SHARE = 0.05  # another process using this much of one CPU or more is named


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # OK, WARN or UNKNOWN
    seen: str  # what was found
    means: str  # what it means for results
    fix: str  # how to fix it, one line ("" when nothing to do)

    def to_dict(self) -> dict:
        return asdict(self)


def sysroot() -> Path:
    return Path(os.environ.get("LOCKLAB_SYSROOT") or "/")


def _read(root: Path, path: str) -> str | None:
    try:
        return (root / path.lstrip("/")).read_text(errors="replace").strip()
    except OSError:
        return None


def _cpu_dirs(root: Path) -> list[str]:
    """/sys/devices/system/cpu/cpuN for each CPU, as paths under the root."""
    base = "/sys/devices/system/cpu"
    try:
        names = [p.name for p in (root / base.lstrip("/")).iterdir()]
    except OSError:
        return []
    return sorted(f"{base}/{name}" for name in names if re.fullmatch(r"cpu\d+", name))


def _cmdline_value(root: Path, key: str) -> str | None:
    for word in (_read(root, "/proc/cmdline") or "").split():
        if word.startswith(key + "="):
            return word.partition("=")[2]
    return None


def check_governor(root: Path) -> Check:
    governors = {
        g for cpu in _cpu_dirs(root) if (g := _read(root, f"{cpu}/cpufreq/scaling_governor"))
    }
    means = "the clock may change under a run, so throughput moves with it"
    fix = "cpupower frequency-set -g performance"
    if not governors:
        return Check(
            "governor", UNKNOWN, "no cpufreq (a VM, or the firmware sets the frequency)",
            means, "none from here: ask the host or firmware for a fixed frequency",
        )  # fmt: skip
    seen = ", ".join(sorted(governors))
    if governors == {"performance"}:
        return Check("governor", OK, seen, "the frequency governor does not scale down", "")
    return Check("governor", WARN, seen, means, fix)


def check_boost(root: Path) -> Check:
    no_turbo = _read(root, "/sys/devices/system/cpu/intel_pstate/no_turbo")
    boost = _read(root, "/sys/devices/system/cpu/cpufreq/boost")
    means = "turbo clocks depend on temperature and on how many cores are busy"
    if no_turbo is not None:
        on = no_turbo == "0"
        fix = "echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo" if on else ""
        return Check("turbo", WARN if on else OK, f"intel_pstate no_turbo={no_turbo}", means, fix)
    if boost is not None:
        on = boost != "0"
        fix = "echo 0 > /sys/devices/system/cpu/cpufreq/boost" if on else ""
        return Check("turbo", WARN if on else OK, f"cpufreq boost={boost}", means, fix)
    return Check(
        "turbo", UNKNOWN, "no intel_pstate/no_turbo or cpufreq/boost", means,
        "none from here: turn turbo off in the firmware if it has it",
    )  # fmt: skip


def check_smt(root: Path) -> Check:
    active = _read(root, "/sys/devices/system/cpu/smt/active")
    means = "SMT siblings share a core: two threads on one core run slower than on two"
    if active is None:
        siblings = {
            s
            for cpu in _cpu_dirs(root)
            if (s := _read(root, f"{cpu}/topology/thread_siblings_list"))
        }
        if not siblings:
            return Check("smt", UNKNOWN, "no smt/active or thread_siblings_list", means, "")
        active = "1" if any("," in s or "-" in s for s in siblings) else "0"
    if active == "0":
        return Check("smt", OK, "off (one thread per core)", "each thread has a core", "")
    return Check(
        "smt", WARN, "on", means,
        "echo off > /sys/devices/system/cpu/smt/control, or pin one thread per core",
    )  # fmt: skip


def _process_names(root: Path) -> dict[int, str]:
    names = {}
    try:
        entries = list((root / "proc").iterdir())
    except OSError:
        return {}
    for entry in entries:
        if entry.name.isdigit() and (name := _read(root, f"/proc/{entry.name}/comm")):
            names[int(entry.name)] = name
    return names


def check_irqbalance(root: Path) -> Check:
    names = _process_names(root)
    means = "irqbalance moves interrupts onto the measuring CPUs during a run"
    if not names:
        return Check("irqbalance", UNKNOWN, "no processes readable under /proc", means, "")
    if "irqbalance" in names.values():
        return Check("irqbalance", WARN, "running", means, "systemctl stop irqbalance")
    return Check("irqbalance", OK, "not running", "interrupts stay where they are", "")


def check_numa_balancing(root: Path) -> Check:
    value = _read(root, "/proc/sys/kernel/numa_balancing")
    means = "automatic NUMA balancing migrates pages and tasks during a run"
    if value is None:
        if (root / "proc/sys/kernel").is_dir():
            return Check("numa balancing", OK, "not in this kernel", "nothing migrates pages", "")
        return Check("numa balancing", UNKNOWN, "no /proc/sys/kernel", means, "")
    if value == "0":
        return Check("numa balancing", OK, "off", "nothing migrates pages", "")
    return Check("numa balancing", WARN, f"on ({value})", means, "sysctl kernel.numa_balancing=0")


def isolated_cpus(root: Path) -> str | None:
    """The isolated CPUs ('' for none), None when the kernel does not say."""
    isolated = _read(root, "/sys/devices/system/cpu/isolated")
    if isolated is None:
        isolated = _cmdline_value(root, "isolcpus")
    return isolated


def _isolation_fix(root: Path) -> str:
    """Isolate every CPU but the first, which keeps the housekeeping: on this machine's CPUs,
    not an example's (isolcpus=2-7 on a 2-CPU machine)."""
    online = _read(root, "/sys/devices/system/cpu/online") or ""
    last = re.split(r"[-,]", online.strip())[-1]
    if not last.isdigit() or int(last) < 1:
        return "boot with isolcpus and nohz_full on the CPUs to measure, and pin the runs there"
    cpus = "1" if last == "1" else f"1-{last}"
    return (f"boot with isolcpus={cpus} nohz_full={cpus} (CPU 0 keeps the housekeeping) and "
            f"pin the runs there (--pin {cpus})")  # fmt: skip


def check_isolation(root: Path) -> Check:
    isolated = isolated_cpus(root)
    nohz = _read(root, "/sys/devices/system/cpu/nohz_full") or _cmdline_value(root, "nohz_full")
    means = "the scheduler may put any task on the measuring CPUs, and the tick interrupts them"
    fix = _isolation_fix(root)
    if isolated is None:
        return Check("isolation", UNKNOWN, "no /sys/devices/system/cpu/isolated", means, fix)
    seen = f"isolcpus {isolated or 'none'}, nohz_full {nohz or 'none'}"
    if isolated:
        return Check("isolation", OK, seen, "pinned to those CPUs, runs are left alone", "")
    return Check("isolation", WARN, seen, means, fix)


def is_vm(root: Path) -> bool | None:
    cpuinfo = _read(root, "/proc/cpuinfo")
    if cpuinfo is None:
        return None
    flags = next((line for line in cpuinfo.splitlines() if line.startswith("flags")), None)
    if flags is None:  # arm64 lists "Features": no hypervisor flag to read
        return None
    return "hypervisor" in flags.split()


def _steal_ticks(root: Path) -> tuple[int, int] | None:
    """(steal ticks summed over the CPUs, number of CPUs) from /proc/stat."""
    ticks = cpus = 0
    for line in (_read(root, "/proc/stat") or "").splitlines():
        fields = line.split()
        if re.fullmatch(r"cpu\d+", fields[0] if fields else "") and len(fields) > 8:
            ticks += int(fields[8])
            cpus += 1
    return (ticks, cpus) if cpus else None


@dataclass(frozen=True)
class Sample:
    """What /proc/stat and /proc/PID/stat say at one moment: steal, and each process's CPU
    time. Two of them, ``sample_s`` apart, serve both the steal and the busy-process check."""

    steal: tuple[int, int] | None  # (steal ticks over the CPUs, CPUs)
    processes: dict[int, tuple[str, int]]  # pid: (name, user + system ticks)


def take_sample(root: Path) -> Sample:
    return Sample(_steal_ticks(root), _cpu_ticks(root))


def check_vm(root: Path, first: Sample, last: Sample, sample_s: float) -> Check:
    vm = is_vm(root)
    before, after = first.steal, last.steal
    steal = ""
    if before and after and after[1] == before[1] and sample_s > 0:
        hz = os.sysconf("SC_CLK_TCK")
        share = (after[0] - before[0]) / hz / (sample_s * before[1])
        steal = f", {100 * share:.1f}% steal over {sample_s:g} s"
    means = (
        "the hypervisor can run other guests on these vCPUs (steal): runs lose time at random; "
        "the engine records each run's steal"
    )
    fix = "measure on bare metal, or on dedicated vCPUs pinned to host cores"
    if vm is None:
        return Check(
            "vm", UNKNOWN, f"no hypervisor flag to read in /proc/cpuinfo{steal}", means, fix
        )
    if vm:
        cpus = f"{before[1]} vCPUs" if before else "vCPUs"
        return Check("vm", WARN, f"VM (hypervisor flag), {cpus}{steal}", means, fix)
    return Check("vm", OK, f"bare metal (no hypervisor flag){steal}", "no steal time", "")


def check_perf(perf_reason: str | None) -> Check:
    """``perf_reason``: what the engine said when it opened a cache-miss counter (None: it
    could)."""
    means = "without counters, cache misses per acquisition are null in every run"
    if perf_reason is None:
        return Check(
            "perf counters", OK, "available", "cache misses per acquisition are counted", ""
        )
    fix = (
        "sysctl kernel.perf_event_paranoid=2 (or lower), or run with CAP_PERFMON"
        if "ermission" in perf_reason or "not permitted" in perf_reason
        else "in a VM, expose the host's PMU to the guest (KVM: -cpu host,pmu=on)"
    )
    return Check("perf counters", WARN, f"none ({perf_reason})", means, fix)


def _cpu_ticks(root: Path) -> dict[int, tuple[str, int]]:
    """Every process's (name, user + system ticks) from /proc/PID/stat."""
    out = {}
    for pid, name in _process_names(root).items():
        stat = _read(root, f"/proc/{pid}/stat")
        if not stat or ")" not in stat:
            continue
        fields = stat.rpartition(")")[2].split()  # after "(comm)", which may hold spaces
        if len(fields) > 12:
            out[pid] = (name, int(fields[11]) + int(fields[12]))
    return out


def busy_processes(
    before: dict[int, tuple[str, int]], after: dict[int, tuple[str, int]], seconds: float,
    hz: int, exclude: set[int],
) -> list[tuple[str, int, float]]:  # fmt: skip
    """(name, pid, share of one CPU) of the processes that used at least BUSY_SHARE of a CPU
    between two samples, busiest first."""
    found = []
    for pid, (name, ticks) in after.items():
        if pid in exclude or pid not in before:
            continue
        share = (ticks - before[pid][1]) / hz / seconds
        if share >= BUSY_SHARE:
            found.append((name, pid, share))
    return sorted(found, key=lambda item: -item[2])


def check_other_processes(first: Sample, last: Sample, sample_s: float) -> Check:
    means = "other processes take CPU time from the threads under test"
    before, after = first.processes, last.processes
    if not after:
        return Check("other processes", UNKNOWN, "no processes readable under /proc", means, "")
    busy = busy_processes(
        before, after, sample_s, os.sysconf("SC_CLK_TCK"), {os.getpid(), os.getppid()}
    )
    if not busy:
        return Check(
            "other processes", OK, f"none above {BUSY_SHARE:.0%} of a CPU over {sample_s:g} s",
            "the CPUs are free for the run", "",
        )  # fmt: skip
    named = ", ".join(f"{name} ({pid}) {100 * share:.0f}%" for name, pid, share in busy[:4])
    more = f" and {len(busy) - 4} more" if len(busy) > 4 else ""
    return Check(
        "other processes", WARN, f"busy: {named}{more} of a CPU", means,
        "stop them, or isolate CPUs for the runs (isolcpus) and pin there",
    )  # fmt: skip


def run_checks(
    perf_reason: Callable[[], str | None], root: Path | None = None, sample_s: float = SAMPLE_S
) -> list[Check]:
    """Every check, in the order ``locklab doctor`` prints them. ``perf_reason`` asks the
    engine whether it can count cache misses (None: yes; else why not)."""
    root = root or sysroot()
    first = take_sample(root)
    time.sleep(sample_s)
    last = take_sample(root)
    return [
        check_governor(root),
        check_boost(root),
        check_smt(root),
        check_irqbalance(root),
        check_numa_balancing(root),
        check_isolation(root),
        check_vm(root, first, last, sample_s),
        check_perf(perf_reason()),
        check_other_processes(first, last, sample_s),
    ]


def stored_facts(root: Path | None = None) -> dict:
    """What a sweep keeps with each run (as ``machine.check``) for the table's summary line:
    the checks that need no sampling, as True (fine), False (a problem) or None (unknown)."""
    root = root or sysroot()
    checks = {
        "frequency_fixed": check_governor(root),
        "boost_off": check_boost(root),
        "smt_off": check_smt(root),
        "irqbalance_off": check_irqbalance(root),
        "numa_balancing_off": check_numa_balancing(root),
    }
    facts: dict = {key: {OK: True, WARN: False}.get(c.status) for key, c in checks.items()}
    facts["vm"] = is_vm(root)
    facts["isolated_cpus"] = isolated_cpus(root)
    return facts
