"""Pinning a QEMU guest's vCPUs, one per host CPU, as seed 000 pinned its torture kthreads.

QEMU starts paused (-S) with a QMP socket (-qmp unix:PATH,server=on,wait=off). Over QMP
(docs/interop/qmp-spec in QEMU's tree) `qmp_capabilities` leaves negotiation mode and
`query-cpus-fast` lists each vCPU's host thread (`thread-id`); each thread is bound to its CPU
with sched_setaffinity(2), the binding read back from /proc/PID/task/TID/status
(Cpus_allowed_list, proc(5)), and only then does `cont` start the guest. Under emulation each
vCPU has a thread of its own only with multi-threaded TCG (-accel tcg,thread=multi); KVM
always gives each vCPU its own thread.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from locklab.errors import LocklabError
from locklab.model.values import parse_int_list

QMP_CONNECT_S = 10.0  # QEMU opens its QMP socket before it loads the guest; this is plenty
QMP_REPLY_S = 10.0


def parse_pin_cpus(text: str, guest_cpus: int | None) -> list[int]:
    """`--pin-cpus` ("0,1", "0-15"): distinct CPUs this process may run on; for a guest
    (`guest_cpus` vCPUs) at least one per vCPU. Checked before anything is built or booted."""
    cpus = parse_int_list("--pin-cpus", text)
    repeated = sorted({cpu for cpu in cpus if cpus.count(cpu) > 1})
    if repeated:
        raise LocklabError(f"--pin-cpus: CPU {repeated[0]} is given twice (one vCPU per CPU)")
    allowed = os.sched_getaffinity(0)
    outside = [cpu for cpu in cpus if cpu not in allowed]
    if outside:
        raise LocklabError(
            f"--pin-cpus: CPU {outside[0]} is not one this process may use "
            f"(allowed: {cpu_list(sorted(allowed))})"
        )
    if guest_cpus is not None and len(cpus) < guest_cpus:
        raise LocklabError(
            f"--pin-cpus: {text} names {len(cpus)} CPU(s) for {guest_cpus} vCPUs (--cpus); "
            "give one per vCPU"
        )
    return cpus


def cpu_list(cpus: list[int]) -> str:
    """Sorted CPUs as the kernel writes them: 0-3,8."""
    runs: list[list[int]] = []  # [first, last] of each run of consecutive CPUs
    for cpu in cpus:
        if runs and runs[-1][1] == cpu - 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


@dataclass(frozen=True)
class PinnedVcpu:
    vcpu: int  # QEMU's cpu-index
    thread_id: int  # the vCPU's host thread
    cpu: int  # the host CPU it was pinned to
    cpus_allowed_list: str  # read back from /proc while QEMU ran: the pin, as the kernel has it

    def as_dict(self) -> dict[str, int | str]:
        return {"vcpu": self.vcpu, "thread_id": self.thread_id, "cpu": self.cpu,
                "cpus_allowed_list": self.cpus_allowed_list}  # fmt: skip


class QemuGone(Exception):
    """QEMU exited (or closed its socket) before the vCPUs were pinned: the caller sees the
    exit as any QEMU exit (under KVM, a reason to fall back)."""


class Qmp:
    """A minimal QMP client: one command at a time, asynchronous events skipped."""

    def __init__(self, path: Path, alive: Callable[[], bool]) -> None:
        deadline = time.monotonic() + QMP_CONNECT_S
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        while True:
            try:
                self.sock.connect(str(path))
                break
            except (FileNotFoundError, ConnectionRefusedError):
                if not alive():
                    self.sock.close()
                    raise QemuGone from None
                if time.monotonic() > deadline:
                    self.sock.close()
                    raise LocklabError(
                        f"--pin-cpus: QEMU opened no QMP socket in {QMP_CONNECT_S:.0f} s"
                    ) from None
                time.sleep(0.02)
        self.sock.settimeout(QMP_REPLY_S)
        self.reader = self.sock.makefile("rb")
        self._line()  # the greeting
        self.execute("qmp_capabilities")

    def _line(self) -> dict:
        try:
            line = self.reader.readline()
        except TimeoutError:
            raise LocklabError(
                f"--pin-cpus: QEMU did not answer QMP in {QMP_REPLY_S:.0f} s"
            ) from None
        except OSError:
            raise QemuGone from None
        if not line:
            raise QemuGone
        try:
            return json.loads(line)
        except ValueError:
            raise LocklabError(f"--pin-cpus: an unreadable QMP reply: {line[:80]!r}") from None

    def execute(self, command: str) -> object:
        try:
            self.sock.sendall(json.dumps({"execute": command}).encode() + b"\n")
        except OSError:
            raise QemuGone from None
        while True:
            reply = self._line()
            if "return" in reply:
                return reply["return"]
            if "error" in reply:
                raise LocklabError(f"QMP {command}: {reply['error'].get('desc', reply['error'])}")

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


def allowed_list(pid: int, thread_id: int) -> str:
    """A thread's Cpus_allowed_list, from /proc (its affinity as the kernel records it)."""
    status = Path(f"/proc/{pid}/task/{thread_id}/status").read_text()
    for line in status.splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return line.split(":", 1)[1].strip()
    raise LocklabError(f"--pin-cpus: no Cpus_allowed_list in /proc/{pid}/task/{thread_id}/status")


def pin_vcpus(qmp: Qmp, pid: int, cpus: list[int]) -> list[PinnedVcpu]:
    """Pin vCPU i to cpus[i] and check, from /proc, that each thread is bound to exactly its
    CPU. Any failure is one line (LocklabError); the guest is still paused."""
    vcpus = sorted(qmp.execute("query-cpus-fast"), key=lambda v: v["cpu-index"])  # type: ignore[arg-type]
    if len(vcpus) > len(cpus):
        raise LocklabError(f"--pin-cpus: {len(cpus)} CPUs for {len(vcpus)} vCPUs")
    threads = [int(v["thread-id"]) for v in vcpus]
    if len(set(threads)) != len(threads):
        raise LocklabError("--pin-cpus: the vCPUs share a host thread (single-threaded TCG)")
    pinned = []
    for vcpu, thread_id, cpu in zip(vcpus, threads, cpus, strict=False):
        try:
            os.sched_setaffinity(thread_id, {cpu})
            allowed = allowed_list(pid, thread_id)
        except OSError as error:
            raise LocklabError(
                f"--pin-cpus: cannot pin vCPU {vcpu['cpu-index']} (thread {thread_id}) to CPU "
                f"{cpu}: {error.strerror}"
            ) from None
        if allowed != str(cpu):
            raise LocklabError(
                f"--pin-cpus: vCPU {vcpu['cpu-index']} (thread {thread_id}) runs on CPUs "
                f"{allowed} after pinning to CPU {cpu}"
            )
        pinned.append(PinnedVcpu(int(vcpu["cpu-index"]), thread_id, cpu, allowed))
    return pinned


def pinning_line(pins: list[list[PinnedVcpu]]) -> str:
    """What the machine line says of pinning, over every boot of a sweep."""
    if not any(pins):
        return "vCPUs not pinned"
    layouts = {",".join(str(p.cpu) for p in boot) or "none" for boot in pins}
    return "vCPUs pinned " + " / ".join(sorted(layouts)) + " (checked in /proc)"
