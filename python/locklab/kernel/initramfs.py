"""The guests' initial RAM disks: busybox and an /init, as a gzipped newc cpio archive (the
format the kernel unpacks), written by locklab itself so no cpio tool is needed."""

from __future__ import annotations

import gzip
from pathlib import Path

from locklab.errors import LocklabError

BUSYBOX = Path("/bin/busybox")
# The init's report of the CPUs the guest brought up (qemu.run_builtin checks it).
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
    """busybox, /proc and /dev, `files`, and `init`, as a gzipped newc archive at `path`
    (written beside it, then renamed: a reader never sees half of one)."""
    entries = [
        ("bin", 0o40755, b""),
        ("proc", 0o40755, b""),
        ("dev", 0o40755, b""),
        ("bin/busybox", 0o100755, BUSYBOX.read_bytes()),
        *files,
        ("init", 0o100755, init.encode()),
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(gzip.compress(_cpio_newc(entries), compresslevel=compresslevel))
    partial.rename(path)
    return path


def static_initramfs(path: Path) -> Path:
    """For a kernel with locktorture built in: busybox and an /init that only waits. The test
    runs from the kernel's own initcall, and locktorture.shutdown_secs ends it: its shutdown
    kthread (kernel/torture.c, torture_shutdown) prints the final statistics and "End of
    test", then powers the machine off."""
    if not BUSYBOX.exists():
        raise LocklabError(f"{BUSYBOX} is missing: install busybox-static")
    init = (
        "#!/bin/busybox sh\n"
        "/bin/busybox mount -t proc proc /proc\n"
        f'echo "{CPUS_MARKER} $(/bin/busybox nproc)"\n'
        "while :; do /bin/busybox sleep 3600; done\n"
    )
    return busybox_initramfs(init, [], path, compresslevel=6)
