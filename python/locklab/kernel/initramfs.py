"""The guests' initial RAM disks: busybox and an /init (or, for a guest that cannot run the
host's busybox, a static /init of locklab's own), as a gzipped newc cpio archive (the format
the kernel unpacks), written by locklab itself so no cpio tool is needed."""

from __future__ import annotations

import gzip
import subprocess
from pathlib import Path

from locklab.errors import LocklabError
from locklab.kernel.arch import Arch

ROOT = Path(__file__).resolve().parents[3]
BUSYBOX = Path("/bin/busybox")
# The init's report of the CPUs the guest brought up (qemu.run_builtin checks it); the static
# init (native/guest/torture_init.c) prints the same.
CPUS_MARKER = "LOCKLAB-CPUS"


def _cpio_newc(entries: list[tuple[str, int, bytes]]) -> bytes:
    """A newc cpio archive from (name, mode, data) entries (directories have no data)."""
    out = bytearray()
    for inode, (name, mode, data) in enumerate([*entries, ("TRAILER!!!", 0, b"")], 1):
        encoded = name.encode() + b"\0"
        fields = [inode, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(encoded), 0]
        header = b"070701" + b"".join(f"{value:08X}".encode() for value in fields)
        out += header + encoded
        out += b"\0" * (-len(out) % 4)
        out += data
        out += b"\0" * (-len(out) % 4)
    return bytes(out)


def initramfs(modules: Path, params: dict[str, str], seconds: float, path: Path) -> Path:
    """busybox, the two modules, and an /init that runs one locktorture test and powers off."""
    if not BUSYBOX.exists():
        raise LocklabError(f"{BUSYBOX} is missing: install busybox-static")
    args = " ".join(f"{key}={value}" for key, value in params.items())
    init = (
        "#!/bin/busybox sh\n"
        "/bin/busybox mount -t proc proc /proc\n"
        "/bin/busybox insmod /torture.ko\n"
        f"/bin/busybox insmod /locktorture.ko {args}\n"
        f"/bin/busybox sleep {seconds:g}\n"
        "/bin/busybox rmmod locktorture\n"
        "echo LOCKLAB-DONE\n"
        "/bin/busybox poweroff -f\n"
    )
    modules_in = [
        ("torture.ko", 0o100644, (modules / "torture.ko").read_bytes()),
        ("locktorture.ko", 0o100644, (modules / "locktorture.ko").read_bytes()),
    ]
    return busybox_initramfs(init, modules_in, path, compresslevel=1)


def busybox_initramfs(
    init: str, files: list[tuple[str, int, bytes]], path: Path, compresslevel: int
) -> Path:
    """busybox, /proc and /dev, `files`, and `init`, as a gzipped newc archive at `path`."""
    entries = [
        ("bin", 0o40755, b""),
        ("proc", 0o40755, b""),
        ("dev", 0o40755, b""),
        ("bin/busybox", 0o100755, BUSYBOX.read_bytes()),
        *files,
        ("init", 0o100755, init.encode()),
    ]
    return _write(entries, path, compresslevel)


def _write(entries: list[tuple[str, int, bytes]], path: Path, compresslevel: int) -> Path:
    """The archive, written beside `path`, then renamed: a reader never sees half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(gzip.compress(_cpio_newc(entries), compresslevel=compresslevel))
    partial.rename(path)
    return path


def static_initramfs(path: Path, arch: Arch) -> Path:
    """For a kernel with locktorture built in: an /init that reports the CPUs and only waits.
    The test runs from the kernel's own initcall, and locktorture.shutdown_secs ends it: its
    shutdown kthread (kernel/torture.c, torture_shutdown) prints the final statistics and "End
    of test", then powers the machine off. The init is busybox's, or the architecture's own
    static one (arch.torture_init) where the host's busybox cannot run in the guest."""
    if arch.torture_init is not None:
        init = torture_init(arch)
        entries = [("proc", 0o40755, b""), ("dev", 0o40755, b""),
                   ("init", 0o100755, init.read_bytes())]  # fmt: skip
        return _write(entries, path, compresslevel=6)
    if not BUSYBOX.exists():
        raise LocklabError(f"{BUSYBOX} is missing: install busybox-static")
    init = (
        "#!/bin/busybox sh\n"
        "/bin/busybox mount -t proc proc /proc\n"
        f'echo "{CPUS_MARKER} $(/bin/busybox nproc)"\n'
        "while :; do /bin/busybox sleep 3600; done\n"
    )
    return busybox_initramfs(init, [], path, compresslevel=6)


def torture_init(arch: Arch) -> Path:
    """The architecture's static /init, made by its Makefile rule (up to date: nothing runs)
    with the compiler for that architecture (cross or native: ARM64_CC for arm64)."""
    assert arch.torture_init is not None
    compiler = arch.require_compiler()
    proc = subprocess.run(
        ["make", "--no-print-directory", "-s", "-C", str(ROOT),
         f"{arch.name.upper()}_CC={compiler}", arch.torture_init],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    binary = ROOT / arch.torture_init
    if proc.returncode != 0 or not binary.is_file():
        last = (proc.stderr.strip().splitlines() or [f"make exited {proc.returncode}"])[-1]
        raise LocklabError(f"building the {arch.name} guest's init {arch.torture_init} "
                           f"failed: {last[:200]}")  # fmt: skip
    return binary
