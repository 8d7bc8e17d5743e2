"""Running the kernel's own locktorture: each kernel booted in QEMU with a minimal initramfs
that loads torture.ko and locktorture.ko, the console captured and imported like any log.

Modules are built out of tree from the kernel's own sources (Debian's linux-source-6.1)
against that kernel's headers (linux-headers-VERSION), and cached in build/kernel/VERSION.
QEMU uses KVM when it boots, software emulation otherwise; emulation is recorded as the
runs' machine, and its timing is not representative of real hardware. Kernels built here are
x86_64's or arm64's (arch.py: QEMU's binary, machine and console for each); a guest of another
architecture than the host's always runs under emulation.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from locklab.errors import LocklabError
from locklab.kernel.arch import Arch, resolve
from locklab.kernel.findings import is_finding_line
from locklab.kernel.initramfs import CPUS_MARKER, static_initramfs
from locklab.kernel.params import TORTURE_TYPES_6_1
from locklab.kernel.vcpu_pin import PinnedVcpu, QemuGone, Qmp, pin_vcpus
from locklab.run.lifetime import die_with_locklab, raise_if_stopped

ROOT = Path(__file__).resolve().parents[3]
BUILD = ROOT / "build" / "kernel"
SOURCE_TARBALL = Path("/usr/src/linux-source-6.1.tar.xz")
SOURCES = ("kernel/torture.c", "kernel/locking/locktorture.c")
# A kernel that shows no sign of life under KVM in this long is tried again under emulation
# (nested virtualisation can hang early in boot).
KVM_SIGN_OF_LIFE_S = 15.0
KERNEL_STARTED = b"Linux version"  # the kernel's first console line
# The torture types of Linux 6.1's kernel/locking/locktorture.c (its lock_torture_ops names).
TORTURE_TYPES = TORTURE_TYPES_6_1
# QEMU's x86 "pc" machine takes at most 255 vCPUs without an interrupt-remapping IOMMU (arm64's
# `virt` with GICv3 takes 512; the kernels are built for 256 at most).
MAX_GUEST_CPUS = 255


@dataclass(frozen=True)
class GuestShare:
    """A guest that runs the host's programs (guest.py): the host folder shared read-only as
    its root over virtio-9p, and a second serial port written to `output`."""

    root: str
    output: Path
    memory_mb: int = 1024
    tools: Path | None = None  # shared too, as `locklabtools` (the guest's /run is its own)

    def qemu_args(self) -> list[str]:
        shares = [("hostroot", self.root)]
        if self.tools is not None and self.tools.is_dir():
            shares.append(("locklabtools", str(self.tools)))
        args = [
            arg for tag, path in shares for arg in (
                "-virtfs", f"local,path={path},mount_tag={tag},security_model=none,"
                "readonly=on,multidevs=remap")
        ]  # fmt: skip
        return [*args, "-serial", "mon:stdio", "-serial", f"file:{self.output}"]


@dataclass
class Boot:
    console: str
    accel: str  # "kvm" or "tcg"
    fallback: str | None = None  # why KVM was not used, when it was tried and failed
    # For a kernel with locktorture built in: "end-of-test" when the console said so, else
    # why the run failed ("oops: ...", "panic: ...", "hang: ...", "time limit: ...").
    outcome: str = "poweroff"
    pinned: list[PinnedVcpu] = field(default_factory=list)  # each vCPU's pin, checked

    @property
    def failed(self) -> bool:
        return self.outcome not in ("poweroff", "end-of-test")


# A kernel in trouble says so on its console; the first of these seen ends the run as failed.
CONSOLE_FAILURES = (
    ("watchdog: BUG: soft lockup", "soft lockup"),
    ("Kernel panic", "panic"),
    ("Oops", "oops"),
    ("BUG:", "bug"),
    ("End of test: FAILURE", "locktorture failure"),
    ("End of test: LOCK_HOTPLUG", "locktorture hotplug failure"),
    ("rcu_sched detected stalls", "rcu stall"),
    ("rcu: INFO: rcu_preempt detected stalls", "rcu stall"),
    ("INFO: task ", "hung task"),
)
END_OF_TEST = "End of test: SUCCESS"
POWER_DOWN = "reboot: Power down"  # kernel_power_off(); a guest without ACPI then halts


def console_verdict(console: str) -> str | None:
    """What a built-in locktorture's console says so far: None while it runs, "end-of-test"
    once it ended well, else the failure (with the line that shows it). A checker's report
    (KCSAN, KASAN: findings.py) is a finding of the run, not a failure."""
    for marker, what in CONSOLE_FAILURES:
        at = console.find(marker)
        while at >= 0:
            start = console.rfind("\n", 0, at) + 1
            end = console.find("\n", at)
            line = console[start : end if end >= 0 else None].strip()
            if not is_finding_line(line):
                return f"{what}: {line[:160]}"
            at = console.find(marker, at + len(marker))
    if END_OF_TEST in console:
        return "end-of-test"
    return None


def kernel_version(image: Path) -> str:
    """The version a kernel image was built as, from its name (vmlinuz-VERSION)."""
    match = re.match(r"vmlinuz-(.+)$", image.name)
    if not match:
        raise LocklabError(f"{image}: cannot tell its version (expected a name vmlinuz-VERSION)")
    return match.group(1)


def headers_for(version: str) -> Path:
    for candidate in (
        Path(f"/usr/src/linux-headers-{version}"),
        Path(f"/lib/modules/{version}/build"),
    ):
        if (candidate / "Makefile").exists():
            return candidate
    raise LocklabError(f"no headers for kernel {version}: install linux-headers-{version}")


def build_modules(version: str) -> Path:
    """torture.ko and locktorture.ko for `version`, built once and cached."""
    out = BUILD / version / "modules"
    if (out / "torture.ko").exists() and (out / "locktorture.ko").exists():
        return out
    if not SOURCE_TARBALL.exists():
        raise LocklabError(f"{SOURCE_TARBALL} is missing: install linux-source-6.1")
    source = BUILD / "source"
    if not (source / SOURCES[1]).exists():
        source.mkdir(parents=True, exist_ok=True)
        with tarfile.open(SOURCE_TARBALL) as tar:
            prefix = tar.next().name.split("/")[0]  # linux-source-6.1
            wanted = [
                member for member in tar.getmembers()
                if member.name.startswith(f"{prefix}/kernel/rcu/")
                or member.name in {f"{prefix}/{name}" for name in SOURCES}
            ]  # fmt: skip
            for member in wanted:
                member.name = member.name.removeprefix(f"{prefix}/")
                tar.extract(member, source, filter="data")
    out.mkdir(parents=True, exist_ok=True)
    for name in SOURCES:
        shutil.copy(source / name, out / Path(name).name)
    (out / "Kbuild").write_text(
        "obj-m := torture.o locktorture.o\n"
        "ccflags-y := -DCONFIG_TORTURE_TEST_MODULE=1 -DCONFIG_LOCK_TORTURE_TEST_MODULE=1 "
        f"-I{source / 'kernel'} -I{source / 'kernel' / 'rcu'}\n"
    )
    proc = subprocess.run(
        ["make", "-C", str(headers_for(version)), f"M={out}", "modules"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if proc.returncode != 0 or not (out / "locktorture.ko").exists():
        last = (proc.stderr.strip().splitlines() or ["make failed"])[-1]
        raise LocklabError(f"building locktorture for {version} failed: {last}")
    return out


def _qemu(
    image: Path, initrd: Path, accel: str, cpus: int, timeout_s: float, arch: Arch,
    append: str = "", watch: bool = False, stall_s: float = 0.0, pin: list[int] | None = None,
    guest: GuestShare | None = None,
) -> Boot:  # fmt: skip
    """Boot and return the console. Under KVM a boot that shows no sign of the kernel starting,
    or a QEMU that exits without it (nested KVM aborts on some hosts and hangs on others),
    comes back with `fallback` saying why, for the caller to try emulation instead.

    With `watch` (a kernel with locktorture built in) the console decides: the run ends at
    "End of test" (a moment later, for the last lines) or at the first sign of trouble
    (console_verdict), a console silent for `stall_s` is a hang, and `timeout_s` is a hard
    limit; each of these is a Boot with its outcome, never an exception, and QEMU is killed.

    With `pin`, QEMU starts paused with a QMP socket, vCPU i is pinned to host CPU pin[i]
    (vcpu_pin), and the guest is continued only once every pin is checked.

    With `guest`, the host's root is shared and the run ends when the guest's init powers
    off (or at a failure, or at `timeout_s`), as a Boot with outcome "poweroff"."""
    memory = str(guest.memory_mb) if guest else "512"
    # Emulation runs one host thread per vCPU (multi-threaded TCG), so the guest's CPUs run
    # at the same time, as they do under KVM: round-robin TCG would never let two vCPUs race
    # (KCSAN's watchpoints, which wait for a racing access, would see none).
    command = [
        arch.qemu, "-accel", "tcg,thread=multi" if accel == "tcg" else accel,
        *(arch.kvm_args if accel == "kvm" else arch.tcg_args),
        "-smp", str(cpus), "-m", memory,
        "-kernel", str(image), "-initrd", str(initrd), "-nographic", "-no-reboot",
        "-append", f"{arch.console} panic=-1 loglevel=6 {append}".strip(),
    ]  # fmt: skip
    if guest is not None:
        command += guest.qemu_args()
    qmp_dir = Path(tempfile.mkdtemp(prefix="locklab-qmp-")) if pin else None
    if qmp_dir is not None:
        command += ["-S", "-qmp", f"unix:{qmp_dir / 'qmp.sock'},server=on,wait=off"]
    try:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                preexec_fn=die_with_locklab())  # fmt: skip
    except OSError as error:
        if qmp_dir is not None:
            shutil.rmtree(qmp_dir, ignore_errors=True)
        raise LocklabError(f"cannot start {arch.qemu}: {error.strerror}") from None
    try:
        raise_if_stopped()
        pinned = _pin_paused(proc, qmp_dir / "qmp.sock", pin) if qmp_dir and pin else []
        booted = _follow(proc, image, accel, timeout_s, watch, stall_s, guest is not None)
        booted.pinned = pinned
        missing = missing_cpus(booted.console, cpus)
        if missing and not booted.failed:
            booted.outcome = missing
        return booted
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if qmp_dir is not None:
            shutil.rmtree(qmp_dir, ignore_errors=True)


def _pin_paused(proc: subprocess.Popen, socket_path: Path, cpus: list[int]) -> list[PinnedVcpu]:
    """Pin the paused guest's vCPUs and continue it. A QEMU that exits first is left to
    _follow, which reports that exit as any other (under KVM, a reason to fall back)."""
    try:
        qmp = Qmp(socket_path, lambda: proc.poll() is None)
        try:
            pinned = pin_vcpus(qmp, proc.pid, cpus)
            qmp.execute("cont")
        finally:
            qmp.close()
    except QemuGone:
        return []
    return pinned


def _follow(
    proc: subprocess.Popen, image: Path, accel: str, timeout_s: float, watch: bool,
    stall_s: float, until_power_down: bool = False,
) -> Boot:  # fmt: skip
    """Read a running QEMU's console until it ends (see _qemu)."""
    os.set_blocking(proc.stdout.fileno(), False)  # type: ignore[union-attr]
    console = bytearray()
    start = last_output = time.monotonic()
    verdict: str | None = None
    verdict_at = 0.0
    while proc.poll() is None:
        chunk = proc.stdout.read()  # type: ignore[union-attr]
        now = time.monotonic()
        if chunk:
            console += chunk
            last_output = now
        elapsed = now - start
        if accel == "kvm" and elapsed > KVM_SIGN_OF_LIFE_S and KERNEL_STARTED not in console:
            reason = f"no kernel output in {KVM_SIGN_OF_LIFE_S:.0f} s under KVM"
            return Boot(console.decode(errors="replace"), accel, reason)
        if watch:
            text = console.decode(errors="replace")
            if verdict is None:
                verdict = console_verdict(text)
                verdict_at = now
            # A moment for the lines after the verdict (the oops' trace, the last stats).
            if verdict is not None and (now - verdict_at > 3.0 or POWER_DOWN in text):
                return Boot(text, accel, outcome=verdict)
            if until_power_down and POWER_DOWN in text:
                return Boot(text, accel, outcome="poweroff")
            if stall_s and now - last_output > stall_s:
                outcome = f"hang: no console output for {stall_s:.0f} s"
                return Boot(text, accel, outcome=outcome)
            if elapsed > timeout_s:
                outcome = f"time limit: no end of test in {timeout_s:.0f} s"
                return Boot(text, accel, outcome=outcome)
        elif elapsed > timeout_s:
            raise LocklabError(f"{image}: no power-off after {timeout_s:.0f} s in QEMU")
        time.sleep(0.2)
    console += proc.stdout.read() or b""  # type: ignore[union-attr]
    text = console.decode(errors="replace")
    if accel == "kvm" and KERNEL_STARTED not in console:
        last = (text.strip().splitlines() or ["no output"])[-1].strip()
        return Boot(text, accel, f"QEMU exited with status {proc.returncode} under KVM ({last})")
    if watch:
        verdict = console_verdict(text)
        if until_power_down and verdict is None and POWER_DOWN in text:
            return Boot(text, accel, outcome="poweroff")
        exited = f"QEMU exited ({proc.returncode}) before the end of test"
        return Boot(text, accel, outcome=verdict or exited)
    return Boot(text, accel)


def accelerator_line(accels: set[str], fallbacks: set[str]) -> str:
    """What ran the guests, as machine lines say it: emulation is said so, with why KVM was
    left when it was tried."""
    if accels == {"kvm"}:
        return "qemu-kvm"
    why = f"; KVM fell back: {'; '.join(sorted(fallbacks))}" if fallbacks else ""
    return f"qemu-tcg (emulated: timing not representative{why})"


def kvm_device_usable() -> bool:
    return os.access("/dev/kvm", os.R_OK | os.W_OK)


def kvm_unusable(arch: Arch) -> str | None:
    """Why KVM cannot run a guest of `arch` here, or None."""
    if not arch.is_host():
        return f"an {arch.name} guest on this {platform.machine()} host (emulation only)"
    if not kvm_device_usable():
        return "no usable /dev/kvm"
    return None


def boot(
    image: Path, initrd: Path, cpus: int, seconds: float, accel: str = "auto",
    append: str = "", watch: bool = False, limit_s: float | None = None, stall_s: float = 0.0,
    pin: list[int] | None = None, guest: GuestShare | None = None, arch: str | None = None,
) -> Boot:  # fmt: skip
    """Boot under KVM when asked and it works, else under emulation; the Boot says which, and
    why KVM was left when it was tried. `append`, `watch`, `limit_s` and `stall_s` are for a
    kernel with locktorture built in; `pin` pins vCPU i to host CPU pin[i] (see _qemu);
    `guest` shares the host's root for a program (guest.py); `arch` is the kernel's
    architecture (default: this machine's)."""
    target = resolve(arch)
    target.require_qemu()
    if guest is not None and not target.runs_programs:
        raise LocklabError(f"--arch {target.name}: programs run in x86_64 guests only")
    # Emulation is slow: booting alone takes tens of seconds.
    timeout = limit_s if limit_s is not None else seconds * 20 + 300
    extra = {"append": append, "watch": watch, "stall_s": stall_s, "pin": pin, "guest": guest}
    fallback = None
    if accel in ("auto", "kvm"):
        fallback = kvm_unusable(target)
        if fallback is None:
            booted = _qemu(image, initrd, "kvm", cpus, timeout, target, **extra)
            if booted.fallback is None:
                return booted
            fallback = booted.fallback
        if accel == "kvm":
            raise LocklabError(f"{image}: --accel kvm: {fallback}")
    booted = _qemu(image, initrd, "tcg", cpus, timeout, target, **extra)
    booted.fallback = fallback
    return booted


def run_builtin(
    image: Path, params: dict[str, str], seconds: float, cpus: int = 2, accel: str = "auto",
    limit_s: float | None = None, pin: list[int] | None = None, arch: str | None = None,
) -> Boot:  # fmt: skip
    """One locktorture run in a kernel of `arch` (default: this machine's) that has it built
    in: `params` (already checked, see kernel_params.check) go on the kernel command line with
    shutdown_secs = `seconds`. The Boot's outcome says how it ended; a hard limit (by default
    the run's length plus a margin for an emulated boot) and a stall watchdog turn a hung
    kernel into a failed run."""
    from locklab.kernel.params import command_line

    params = {**params, "shutdown_secs": str(max(1, round(seconds)))}
    stat = int(params.get("stat_interval", "60") or 60)
    limit = limit_s if limit_s is not None else seconds * 3 + 120
    stall = max(30.0, 4.0 * stat) if stat > 0 else 0.0
    target = resolve(arch)
    initrd = static_initramfs(BUILD / f"static-init{target.distinct}.cpio.gz", target)
    return boot(image, initrd, cpus, seconds, accel, append=command_line(params), watch=True,
                limit_s=limit, stall_s=stall, pin=pin, arch=target.name)  # fmt: skip


def missing_cpus(console: str, cpus: int) -> str | None:
    """Why a guest that brought up fewer CPUs than asked is a failed run (its init says how
    many it has; every boot is checked, in _qemu), or None."""
    found = re.search(rf"{CPUS_MARKER} (\d+)", console)
    if found and int(found.group(1)) != cpus:
        return f"the guest brought up {found.group(1)} of {cpus} CPUs"
    return None


def run_on_host(params: dict[str, str], seconds: float, cpus: list[int]) -> str:
    """Bare metal, as seed 000 did: modprobe the running kernel's locktorture, pin each torture
    kthread to its own CPU (taskset on their pids), wait, unload, and return the kernel log
    lines written meanwhile. Needs root and a kernel that ships locktorture.ko."""
    if os.geteuid() != 0:
        raise LocklabError("--host-kernel needs root (modprobe, taskset on kernel threads, dmesg)")
    missing = [tool for tool in ("modprobe", "rmmod", "pgrep", "taskset", "dmesg")
               if shutil.which(tool) is None]  # fmt: skip
    if missing:
        raise LocklabError(f"--host-kernel needs {', '.join(missing)} (kmod, procps, util-linux)")
    marker = f"locklab-host-run-{time.monotonic_ns()}"
    try:
        Path("/dev/kmsg").write_text(f"{marker}\n")  # where this run's log starts
    except OSError as error:
        raise LocklabError(f"--host-kernel: cannot write /dev/kmsg ({error.strerror})") from None
    args = [f"{key}={value}" for key, value in params.items()]
    proc = subprocess.run(["modprobe", "locktorture", *args], capture_output=True, text=True,
                          check=False)  # fmt: skip
    if proc.returncode != 0:
        raise LocklabError(f"modprobe locktorture failed: {proc.stderr.strip() or proc.returncode}")
    try:
        time.sleep(1)  # let the kthreads start
        pids = subprocess.run(["pgrep", "lock_torture_"], capture_output=True, text=True,
                              check=False).stdout.split()  # fmt: skip
        for index, pid in enumerate(sorted(pids, key=int)):
            if cpus:
                subprocess.run(["taskset", "-pc", str(cpus[index % len(cpus)]), pid],
                               capture_output=True, check=False)  # fmt: skip
        time.sleep(max(seconds - 1, 0))
    finally:
        subprocess.run(["rmmod", "locktorture"], capture_output=True, check=False)
    log = subprocess.run(["dmesg"], capture_output=True, text=True, check=True).stdout
    return log[log.rfind(marker) :] if marker in log else log
