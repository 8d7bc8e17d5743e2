"""Any installed program, run inside a kernel `locklab kernel --patch` built: the guest boots
with the host's root filesystem shared read-only over virtio-9p, runs the program once in it,
and powers off.

Why QEMU's own 9p, not virtme-ng or virtiofs: 9p is built into QEMU (no daemon, unlike
virtiofs's virtiofsd, and no Rust init binary to pin, unlike virtme-ng), works under emulation,
and the guest side is four kernel options (build_inputs.PROGRAM_OPTIONS) and one mount, done
here by a busybox /init: it mounts the host's / read-only (cache=loose: nothing changes under a
read-only share for the guest's lifetime), gives it a fresh /proc, /sys, /dev and writable
tmpfs /tmp and /run, and runs the program chrooted there, in /tmp. The host folders under /tmp
and /run that the command line names (a scratch program in /tmp/x, its input files) are bound
back in, read-only, at the same paths: the fresh /tmp would hide them.

What the run records, between two marker lines on the console: the guest's context switches
(`ctxt` in /proc/stat) and its uptime before and after the program, and the program's exit
status. The program's own output goes to a second serial port, a file of its own, so kernel
messages never interleave with what --metric-regex reads.
"""

from __future__ import annotations

import math
import re
import shlex
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from locklab.errors import LocklabError
from locklab.kernel import qemu
from locklab.kernel.findings import Finding, findings
from locklab.kernel.initramfs import BUSYBOX, CPUS_MARKER, busybox_initramfs

BEGIN = "LOCKLAB-EXEC-BEGIN"
END = "LOCKLAB-EXEC-END"
MOUNT_FAILED = "LOCKLAB-EXEC-NO-ROOT"
_MARKER = re.compile(rf"({BEGIN}|{END}) (.*)")
# Booting and powering off a guest under emulation, on top of the program's own time limit
# (which the guest enforces itself: busybox timeout kills the program, status 137).
BOOT_ALLOWANCE_S = 90.0
KILLED = 128 + 9
GUEST_MEMORY_MB = 1024
# locklab's kernels have locktorture built in, started at boot: with no writer it stops at
# once ("must run at least one locking thread") and leaves the CPUs to the program.
QUIET_LOCKTORTURE = "locktorture.nwriters_stress=0"
# locklab's own load generators (build/opt), shared apart and mounted at /run/locklab: the
# repository may sit under /tmp or /run, which the guest mounts afresh.
TOOLS = Path(__file__).resolve().parents[3] / "build" / "opt"
SEARCH_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/run/locklab"

_INIT = """#!/bin/busybox sh
B=/bin/busybox
$B mount -t proc proc /proc
$B mount -t devtmpfs dev /dev
if ! $B mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=512000 \\
        hostroot /root; then
    echo "{mount_failed}"
    $B poweroff -f
fi
$B mount -t proc proc /root/proc
$B mount -t sysfs sys /root/sys
$B mount -t devtmpfs dev /root/dev
$B mkdir /host-tmp /host-run
$B mount -o bind /root/tmp /host-tmp
$B mount -o bind /root/run /host-run
$B mount -t tmpfs tmp /root/tmp
$B mount -t tmpfs run /root/run
$B mkdir /root/run/locklab
$B mount -t 9p -o trans=virtio,version=9p2000.L,ro locklabtools /root/run/locklab 2>/dev/null
{carry}$B cp /command /root/tmp/.locklab-command
ctxt() {{ while read key value rest; do [ "$key" = ctxt ] && echo "$value"; done < /proc/stat; }}
c0=$(ctxt)
read u0 idle < /proc/uptime
echo "{cpus_marker} $($B nproc)"
echo "{begin} ctxt=$c0 uptime=$u0"
PATH={path} HOME=/tmp LC_ALL=C.UTF-8 $B timeout -s KILL {limit} $B chroot /root /bin/sh -c \\
    'cd /tmp && . ./.locklab-command' > /dev/ttyS1 2>&1 < /dev/null
status=$?
read u1 idle < /proc/uptime
c1=$(ctxt)
echo "{end} status=$status ctxt=$c1 uptime=$u1"
$B poweroff -f
"""


@dataclass
class GuestRun:
    """One program run in a guest."""

    console: str
    output: str  # the program's stdout and stderr
    accel: str
    fallback: str | None = None
    outcome: str = "ok"  # else why the run failed: "exit status 3", "panic: ...", "hang: ..."
    exit_status: int | None = None
    wall_s: float | None = None  # the guest's uptime across the program
    ctxt_before: int | None = None
    ctxt_after: int | None = None
    found: list[Finding] = field(default_factory=list)
    limit_s: int = 0  # the program's time limit in the guest

    @property
    def failed(self) -> bool:
        return self.outcome != "ok"

    @property
    def context_switches(self) -> int | None:
        if self.ctxt_before is None or self.ctxt_after is None:
            return None
        return self.ctxt_after - self.ctxt_before


def _fields(text: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in text.split() if "=" in part)


def read_markers(run: GuestRun) -> None:
    """The figures between the markers, and how the run ended (already failed stays so)."""
    begin: dict[str, str] | None = None
    end: dict[str, str] | None = None
    for match in _MARKER.finditer(run.console):
        if match.group(1) == BEGIN:
            begin = _fields(match.group(2))
        else:
            end = _fields(match.group(2))
    try:
        if begin is not None:
            run.ctxt_before = int(begin["ctxt"])
        if end is not None:
            run.exit_status = int(end["status"])
            run.ctxt_after = int(end["ctxt"])
        if begin is not None and end is not None:
            run.wall_s = float(end["uptime"]) - float(begin["uptime"])
    except (KeyError, ValueError):
        pass
    if run.failed:
        return
    if MOUNT_FAILED in run.console:
        run.outcome = "the guest could not mount the host's root (9p)"
    elif begin is None:
        run.outcome = "the guest did not start the program"
    elif end is None:
        run.outcome = "the guest stopped before the program ended"
    elif run.exit_status == KILLED and run.wall_s is not None and run.wall_s >= run.limit_s:
        run.outcome = f"hung: killed after {run.limit_s:g} s in the guest (--timeout)"
    elif run.exit_status == 127:
        run.outcome = "exit status 127 (command not found in the guest)"
    elif run.exit_status:
        how = (f"killed by signal {run.exit_status - 128}" if run.exit_status > 128
               else f"exit status {run.exit_status}")  # fmt: skip
        run.outcome = how


# Host folders the guest mounts afresh (writable tmpfs): what the command names under them is
# carried in, read-only, at the same path.
FRESH_IN_GUEST = (Path("/tmp"), Path("/run"))
_CARRY = """$B mkdir -p {inside}
$B mount -o bind {host} {inside}
"""


def carried_folders(command: str) -> list[Path]:
    """The host folders, each a child of /tmp or /run, that hold a path the command line names
    (the program, its arguments' files, an option's =value), so that the guest's fresh /tmp
    and /run do not hide them. Paths that do not exist on the host are the command's business."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    folders: list[Path] = []
    for word in words:
        for text in (word, word.partition("=")[2]):
            if not text.startswith("/"):
                continue
            path = Path(text)
            for fresh in FRESH_IN_GUEST:
                if path.is_relative_to(fresh) and path != fresh:
                    top = fresh / path.relative_to(fresh).parts[0]
                    if top.exists() and top not in folders and top != fresh / "locklab":
                        folders.append(top)
    return folders


def _carry_lines(folders: list[Path]) -> str:
    lines = []
    for folder in folders:  # /tmp/x: the host's is /host-tmp/x in the guest's initramfs
        host = Path(f"/host-{folder.parts[1]}", *folder.parts[2:])
        inside = Path("/root", *folder.parts[1:])
        lines.append(_CARRY.format(host=shlex.quote(str(host)), inside=shlex.quote(str(inside))))
    return "".join(lines)


def run_program(
    image: Path, command: str, cpus: int, timeout_s: float, accel: str = "auto",
    pin: list[int] | None = None, scratch: Path | None = None,
) -> GuestRun:  # fmt: skip
    """Boot `image` with the host's root, run `command` (a shell command line) in it once.
    Never raises for what the guest does: a program that fails, a kernel that oopses or hangs,
    a guest past `timeout_s` plus the boot's allowance, is a GuestRun whose outcome says how."""
    if not BUSYBOX.exists():
        raise LocklabError(f"{BUSYBOX} is missing: install busybox-static")
    limit = max(1, math.ceil(timeout_s))
    init = _INIT.format(begin=BEGIN, end=END, mount_failed=MOUNT_FAILED, path=SEARCH_PATH,
                        limit=limit, cpus_marker=CPUS_MARKER,
                        carry=_carry_lines(carried_folders(command)))  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="locklab-guest-", dir=scratch) as folder:
        where = Path(folder)
        initrd = busybox_initramfs(
            init, [("command", 0o100644, (command + "\n").encode())], where / "initrd.gz", 1
        )
        output = where / "program-output"
        booted = qemu.boot(
            image, initrd, cpus, timeout_s, accel, append=QUIET_LOCKTORTURE, watch=True,
            limit_s=timeout_s + BOOT_ALLOWANCE_S, pin=pin,
            guest=qemu.GuestShare("/", output, GUEST_MEMORY_MB, TOOLS),
        )  # fmt: skip
        text = output.read_bytes().decode(errors="replace") if output.exists() else ""
    run = GuestRun(booted.console, text.replace("\r\n", "\n"), booted.accel, booted.fallback,
                   limit_s=limit)  # fmt: skip
    if booted.failed:  # qemu.boot also fails a guest short of CPUs
        run.outcome = booted.outcome
    read_markers(run)
    run.found = findings(run.console)
    return run
