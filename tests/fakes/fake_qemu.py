#!/usr/bin/env python3
"""A stand-in for qemu-system-x86_64, for tests of the KVM fallback and of vCPU pinning on any
machine. It takes QEMU's arguments and ignores those it does not need.

With -qmp unix:PATH,server=on,... it starts one thread per vCPU (-smp N), serves QMP on PATH
(the greeting, qmp_capabilities, query-cpus-fast with each vCPU thread's id, cont), and once
continued has each vCPU thread write the CPUs it may run on, as the kernel has them
(sched_getaffinity), to $FAKE_QEMU_AFFINITY (JSON: thread id -> CPUs) when that is set.

Then, under -accel kvm it misbehaves as $FAKE_QEMU_KVM says (abort: dies of SIGABRT after an
error line, as nested KVM does; hang: never boots; exit: exits 1; works: boots); otherwise it
prints $FAKE_QEMU_CONSOLE, as a guest that powers off does.
"""

import json
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable


def option(name: str, default: str = "") -> str:
    args = sys.argv[1:]
    return args[args.index(name) + 1] if name in args[:-1] else default


def vcpu_threads(count: int, running: threading.Event) -> tuple[list[int], Callable[[], None]]:
    """`count` threads that wait for `running`, then note their affinity; their ids, and a
    call that waits for every thread and writes what they noted."""
    ids: list[int] = []
    affinity: dict[str, list[int]] = {}
    started = threading.Barrier(count + 1)

    def vcpu() -> None:
        ids.append(threading.get_native_id())
        started.wait()
        running.wait()
        affinity[str(threading.get_native_id())] = sorted(os.sched_getaffinity(0))

    threads = [threading.Thread(target=vcpu, daemon=True) for _ in range(count)]
    for thread in threads:
        thread.start()
    started.wait()

    def report() -> None:
        # Joined, not slept on: a stalled thread must not leave its CPUs out of the file.
        for thread in threads:
            thread.join()
        out = os.environ.get("FAKE_QEMU_AFFINITY")
        if out:
            # Whole or not at all: locklab may kill this process at any moment, and a later
            # boot replaces the file the test reads.
            partial = f"{out}.{os.getpid()}.tmp"
            with open(partial, "w") as file:
                json.dump(affinity, file)
            os.replace(partial, out)

    return ids, report


def serve_qmp(path: str, vcpus: int) -> None:
    """QMP until `cont` (QEMU's own replies, reduced to what locklab asks)."""
    running = threading.Event()
    ids, report = vcpu_threads(vcpus, running)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    connection, _ = server.accept()
    stream = connection.makefile("rwb")

    def send(message: dict) -> None:
        stream.write(json.dumps(message).encode() + b"\r\n")
        stream.flush()

    send({"QMP": {"version": {}, "capabilities": []}})
    for line in stream:
        command = json.loads(line)["execute"]
        if command == "query-cpus-fast":
            send({"event": "FAKE", "data": {}})  # events come between replies; skip them
            send({"return": [{"cpu-index": i, "thread-id": tid} for i, tid in enumerate(ids)]})
        elif command in ("qmp_capabilities", "cont"):
            send({"return": {}})
            if command == "cont":
                running.set()
                report()  # before any console output, which may end this process
                return
        else:
            send({"error": {"class": "CommandNotFound", "desc": f"{command} not found"}})


def main() -> None:
    qmp = option("-qmp")
    if qmp:
        serve_qmp(qmp.removeprefix("unix:").split(",")[0], int(option("-smp", "1")))
    if option("-accel") == "kvm":
        behaviour = os.environ.get("FAKE_QEMU_KVM")
        if behaviour == "abort":
            print("qemu-system-x86_64: error: failed to set MSR 0x10a to 0x69", flush=True)
            os.kill(os.getpid(), signal.SIGABRT)
        elif behaviour == "hang":
            print("Booting from ROM..", flush=True)
            time.sleep(60)
            return
        elif behaviour == "exit":
            sys.exit(1)
    with open(os.environ["FAKE_QEMU_CONSOLE"], "rb") as console:
        sys.stdout.buffer.write(console.read())


if __name__ == "__main__":
    main()
