"""What a kernel build is made of, checked before anything builds: the configuration
(locklab's guest options, a user's fragment, the final .config) and the patches (each dry-run
first; one that does not apply is one line naming the file and the hunk)."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from locklab.errors import LocklabError
from locklab.kernel.series import describe, split_series

# What a guest needs to run the host's programs from its root filesystem, shared read-only
# over virtio-9p (kernel/guest.py), and what ordinary programs expect of a kernel: x86_64
# guests' (arch.py), the only ones that run programs.
PROGRAM_OPTIONS: dict[str, str] = {
    "PCI": "y",  # virtio-9p-pci
    "VIRTIO_MENU": "y",
    "VIRTIO_PCI": "y",
    "NET": "y",  # 9P's transport layer lives under net/9p
    "INET": "y",  # 9P_FS depends on it
    "NET_9P": "y",
    "NET_9P_VIRTIO": "y",
    "9P_FS": "y",
    "UNIX": "y",  # socketpair(): hackbench, glibc
    "MULTIUSER": "y",  # setuid() and friends
    "FUTEX": "y",  # every pthread program; FUTEX_PI (rt_mutex) follows from RT_MUTEXES
    "POSIX_TIMERS": "y",  # clock_nanosleep(): cyclictest
    "HIGH_RES_TIMERS": "y",
    "EPOLL": "y",
    "SIGNALFD": "y",
    "TIMERFD": "y",
    "EVENTFD": "y",
    "SHMEM": "y",
    "TMPFS": "y",  # the guest's writable /tmp and /run
    "DEVTMPFS": "y",
    "SYSFS": "y",
    "PROC_SYSCTL": "y",  # /proc/sys/vm/compact_memory (the seed-001 load)
    "ADVISE_SYSCALLS": "y",  # madvise()
    "MEMBARRIER": "y",
    "RSEQ": "y",  # glibc registers one per thread
    "FILE_LOCKING": "y",
    "SYSVIPC": "y",
    "COMPACTION": "y",  # page migration walks anon_vma under its read lock (seed 001)
    "MIGRATION": "y",
    "MAGIC_SYSRQ": "y",  # /proc/sysrq-trigger: task dumps of a hung guest, and the crash test
}
# The kernel's own checkers, `--debug NAME[,NAME]`: each combination is a build of its own.
DEBUG_OPTIONS: dict[str, dict[str, str]] = {
    # KCSAN's defaults (report a race only when the value changed; plain aligned writes of a
    # word taken as atomic) are what the kernel's own CI runs with.
    "kcsan": {"KCSAN": "y", "KCSAN_REPORT_ONCE_IN_MS": "3000"},
    "lockdep": {"PROVE_LOCKING": "y", "DEBUG_LOCKDEP": "n"},
    # KASAN needs SLUB (tinyconfig picks SLOB).
    "kasan": {"SLOB": "n", "SLUB": "y", "KASAN": "y", "KASAN_GENERIC": "y", "KASAN_INLINE": "y"},
}
# Combinations the kernel's Kconfig refuses (KCSAN depends on !KASAN).
DEBUG_EXCLUSIVE = (frozenset({"kcsan", "kasan"}),)


def debug_options(names: list[str]) -> dict[str, str]:
    """The config options of `--debug kcsan,lockdep`: unknown names and combinations the kernel
    cannot build are one line."""
    for name in names:
        if name not in DEBUG_OPTIONS:
            raise LocklabError(
                f"--debug: unknown checker {name!r} (known: {', '.join(DEBUG_OPTIONS)})"
            )
    for exclusive in DEBUG_EXCLUSIVE:
        if exclusive <= set(names):
            raise LocklabError(
                f"--debug: {' and '.join(sorted(exclusive))} cannot be built together "
                "(the kernel's Kconfig: KCSAN depends on !KASAN)"
            )
    options: dict[str, str] = {}
    for name in names:
        options.update(DEBUG_OPTIONS[name])
    return options


# Options of every architecture's guest, in the order they are applied after `make tinyconfig`,
# and why each is there; each architecture adds its own (arch.py: console, firmware, ...).
BASE_OPTIONS: dict[str, str] = {
    "SMP": "y",  # LOCK01..07
    "NR_CPUS": "256",  # room for the seed's 95 writers on as many vCPUs
    "HOTPLUG_CPU": "y",  # LOCK01..07 (and onoff_interval needs it)
    "PREEMPT": "y",  # LOCK01..07: PREEMPT=y, PREEMPT_NONE/VOLUNTARY=n
    "DEBUG_KERNEL": "y",  # LOCK_TORTURE_TEST depends on it
    "LOCK_TORTURE_TEST": "y",  # CFcommon: locktorture built in, run at boot
    "PRINTK": "y",  # the console is the only output
    "PRINTK_TIME": "y",  # CFcommon
    "BUG": "y",  # BUG()/WARN() report instead of silently looping
    # In 6.1 RT_MUTEXES has no prompt: only I2C and PSTORE_ZONE select it (FUTEX_PI merely
    # depends on it). I2C's core is the smaller of the two.
    "I2C": "y",
    "RT_MUTEXES": "y",
    "TTY": "y",  # serial console
    "BLK_DEV_INITRD": "y",  # the tiny init comes as an initramfs ...
    "RD_GZIP": "y",  # ... compressed with gzip
    "BINFMT_ELF": "y",  # busybox, or a static init
    "PROC_FS": "y",
    # The seed measured distribution kernels, built for speed; tinyconfig builds for size.
    "CC_OPTIMIZE_FOR_PERFORMANCE": "y",
    # Reports name functions, not addresses (KCSAN's "data-race in A / B", lockdep, oopses).
    "KALLSYMS": "y",
}
# What a locklab guest of any architecture cannot do without (and each its own, arch.py): a
# fragment may change anything else.
NEEDED = ("SMP", "LOCK_TORTURE_TEST", "RT_MUTEXES", "TTY", "PRINTK", "BLK_DEV_INITRD",
          "RD_GZIP", "BINFMT_ELF")  # fmt: skip
_FRAGMENT_LINE = re.compile(r"^(?:CONFIG_(\w+)=(\S.*)|# CONFIG_(\w+) is not set)$")


def parse_fragment(text: str, name: str = "config fragment") -> dict[str, str]:
    """CONFIG_X=value and `# CONFIG_X is not set` lines (blank lines and other comments are
    skipped); anything else is one error naming the line."""
    options: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or (line.startswith("#") and " is not set" not in line):
            continue
        match = _FRAGMENT_LINE.match(line)
        if not match:
            raise LocklabError(f"{name}:{number}: not a config line: {line[:80]!r}")
        if match.group(3):
            options[match.group(3)] = "n"
        else:
            options[match.group(1)] = match.group(2)
    return options


def read_config(path: Path) -> dict[str, str]:
    return parse_fragment(path.read_text(), str(path))


def check_config(
    final: dict[str, str], wanted: dict[str, str], also_needed: tuple[str, ...] = ()
) -> None:
    """Every option asked for has the value asked for (n = absent or not set), and locklab's
    own needs (NEEDED, and the architecture's `also_needed`) are met; the first one missing is
    named."""
    for option in (*NEEDED, *also_needed):
        if final.get(option, "n") == "n":
            raise LocklabError(
                f"kernel config: CONFIG_{option} is not set in the final .config, and a "
                "locklab guest needs it (did the fragment turn it off, or a dependency?)"
            )
    for option, value in wanted.items():
        have = final.get(option, "n")
        if have.strip('"') != value.strip('"'):
            raise LocklabError(
                f"kernel config: CONFIG_{option}={value} was asked for but the final .config "
                f"has {'it unset' if have == 'n' else f'CONFIG_{option}={have}'} "
                "(unknown option, or a dependency is not met)"
            )


def patched_files(patch: Path) -> list[str]:
    """The files a unified diff touches, as paths relative to the tree (after -p1)."""
    names = []
    for line in patch.read_text(errors="replace").splitlines():
        if line.startswith("+++ "):
            name = line[4:].split("\t")[0].strip()
            if name != "/dev/null":
                names.append(name.split("/", 1)[1] if "/" in name else name)
    return names


def apply_patch(tree: Path, patch: Path) -> subprocess.CompletedProcess[str]:
    command = ["patch", "-p1", "--batch", "--forward", "--no-backup-if-mismatch", "-i",
               str(patch.resolve())]  # fmt: skip
    return subprocess.run(command, cwd=tree, capture_output=True, text=True, check=False)


def patch_failure(patch: Path, output: str) -> str:
    """patch's own words for the first hunk that failed, as one line (a series' patch named
    by its place and subject)."""
    name = describe(patch)
    hunk = re.search(r"Hunk #(\d+) FAILED at (\d+)", output)
    target = re.findall(r"^(?:checking|patching) file (\S+)", output, re.M)
    where = target[-1] if target else "?"
    if hunk:
        return (f"{name} does not apply: hunk #{hunk.group(1)} of {where} failed "
                f"at line {hunk.group(2)}")  # fmt: skip
    for marker in ("Reversed (or previously applied) patch detected", "can't find file to patch",
                   "Only garbage was found", "malformed patch"):  # fmt: skip
        if marker.lower() in output.lower():
            return f"{name} does not apply to {where}: {marker.lower()}"
    last = (output.strip().splitlines() or ["patch failed"])[-1]
    return f"{name} does not apply: {last}"


def check_patches(tree: Path, patches: list[Path]) -> None:
    """The patches apply to the pristine tree in order, each on the ones before (a mailed
    series' second patch may change what its first added): applied for real to copies of the
    files they touch, in a scratch folder, never to the tree."""
    for patch in patches:
        if not patch.is_file():
            raise LocklabError(f"patch {patch}: no such file")
    with tempfile.TemporaryDirectory(prefix="locklab-patch-check-") as scratch:
        copy = Path(scratch)
        for name in {name for patch in patches for name in patched_files(patch)}:
            if (tree / name).is_file():
                (copy / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(tree / name, copy / name)
        for patch in patches:
            proc = apply_patch(copy, patch)
            if proc.returncode != 0:
                raise LocklabError(patch_failure(patch, proc.stdout + proc.stderr))


def parse_patch_options(texts: list[str]) -> dict[str, list[Path]]:
    """Repeated --patch options: each label's patch files, in order, a mailed series (an mbox
    of several patches) as its patches (series.py); a label given twice is one line."""
    patches: dict[str, list[Path]] = {}
    for text in texts:
        label, files = parse_patch_option(text)
        if label in patches:
            raise LocklabError(f"--patch: label {label!r} given twice")
        patches[label] = [patch for file in files for patch in split_series(file)]
    return patches


def parse_patch_option(text: str) -> tuple[str, list[Path]]:
    """`LABEL=FILE[,FILE...]` or `LABEL` (the stock kernel)."""
    label, equals, files = text.partition("=")
    if not label:
        raise LocklabError(f"--patch {text!r}: give LABEL=FILE[,FILE...] or LABEL")
    return label, [Path(name) for name in files.split(",") if name] if equals else []
