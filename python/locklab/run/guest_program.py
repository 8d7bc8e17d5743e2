"""A program as the measurement inside a built kernel (`locklab kernel --patch ... --exec`):
each run boots the variant's kernel with the host's root filesystem (kernel/guest.py), runs the
program once, and reads its throughput as `locklab exec` does (run/program.py), plus the
guest's context switches across the program and the kernel's checkers' findings. A program
that fails, or a guest that oopses or hangs, is a failed run with one line and its console
kept; the sweep goes on."""

from __future__ import annotations

import os
import shlex
import socket
from pathlib import Path
from typing import TYPE_CHECKING

from locklab.kernel import cyclictest, findings
from locklab.kernel.guest import run_program
from locklab.kernel.qemu import accelerator_line
from locklab.kernel.vcpu_pin import parse_pin_cpus
from locklab.run.outcome import EXIT_OK, EngineOutcome
from locklab.run.program import TAIL_CHARS, program_throughput, work_done

if TYPE_CHECKING:
    from locklab.model.spec import Configuration, ExperimentSpec

# A guest kernel's variants name this instead of a lock; their plugin is the kernel image.
GUEST_LOCK = "kernel"


def run_in_guest(spec: ExperimentSpec, config: Configuration, repeat: int) -> EngineOutcome:
    threads = config.axis("nwriters")
    # One shell command line, as given: pipes, & and ; are the guest shell's to run.
    command = spec.program[0].replace("{threads}", str(threads))
    variant = config.variant
    image = Path(variant.plugin or "")
    pin = parse_pin_cpus(spec.guest_pin, spec.guest_cpus) if spec.guest_pin else None
    logs = Path(spec.guest_logs)
    logs.mkdir(parents=True, exist_ok=True)
    ran = run_program(image, command, spec.guest_cpus, spec.program_timeout_s,
                      spec.guest_accel, pin=pin, scratch=logs)  # fmt: skip
    console = logs / f"{variant.label}-n{threads}-r{repeat + 1}.log"
    console.write_text(ran.console)
    wall_s = ran.wall_s or 0.0
    throughput = None if ran.failed else program_throughput(spec, ran.output, wall_s, threads)
    name = Path((shlex.split(command) or ["program"])[0]).name
    if ran.failed:
        last = (ran.output.strip().splitlines() or [""])[-1][:160]
        status = "error"
        error = f"{name} in kernel {variant.label}: {ran.outcome}" + (f": {last}" if last else "")
    elif throughput is None:
        status, error = "error", f"{name}: no throughput in its output ({spec.program_metric})"
    else:
        status, error = "ok", None
    switches = ran.context_switches
    operations = work_done(spec, throughput, wall_s, threads)
    machine = {"hostname": socket.gethostname(), "arch": os.uname().machine,
               "cpus_online": spec.guest_cpus,
               "source": accelerator_line({ran.accel},
                                          {ran.fallback} if ran.fallback else set())}  # fmt: skip
    result = {
        "status": status,
        "error": error,
        "source": "guest",
        "program": [command],
        "lock": variant.label,
        "throughput_ops_per_s": throughput if status == "ok" else None,
        "window_s": wall_s,
        "exit_code": ran.exit_status,
        "output_tail": ran.output[-TAIL_CHARS:],
        "guest": {
            "accel": ran.accel,
            "fallback": ran.fallback,
            "outcome": ran.outcome,
            "console": str(console),
            "context_switches": switches,
            "context_switches_per_op": (
                switches / operations if switches is not None and operations else None
            ),
            "cyclictest": cyclictest.latency(ran.output),
        },  # fmt: skip
        "kernel_findings": findings.as_records(ran.found),
        "machine": machine,
    }
    exit_code = EXIT_OK if status == "ok" else 1
    return EngineOutcome([f"kernel {variant.label}", command], exit_code, result, "", wall_s)
