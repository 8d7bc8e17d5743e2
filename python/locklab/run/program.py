"""A real program as the measurement (`locklab exec`): the program runs once per run with the
lock under test behind its pthread mutexes and condition variables (LD_PRELOAD of
liblocklab-interpose.so, native/interpose/), and its throughput is read from what it prints, or
from its wall time. A program that crashes, fails or hangs is a failed run, with one line
saying how; the sweep goes on with the other locks, as it does for the engine."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from locklab.errors import LocklabError
from locklab.run.lifetime import die_with_locklab, raise_if_stopped
from locklab.run.outcome import EXIT_OK, EngineOutcome

if TYPE_CHECKING:
    from locklab.model.spec import Configuration, ExperimentSpec

LIBRARY = "liblocklab-interpose.so"
ROOT = Path(__file__).resolve().parents[3]
BUILD_OPT = ROOT / "build" / "opt"  # the interposition library and locklab's load generators
TAIL_CHARS = 2000  # of the program's output, kept with a failed run


def find_interpose() -> Path:
    """$LOCKLAB_INTERPOSE, else the build tree's optimised library."""
    explicit = os.environ.get("LOCKLAB_INTERPOSE")
    path = Path(explicit) if explicit else BUILD_OPT / LIBRARY
    if not path.is_file():
        raise LocklabError(f"{path}: no interposition library (build it with 'make build')")
    return path


def argv_for(spec: ExperimentSpec, threads: int) -> list[str]:
    """The program's arguments for a thread count. A bare name not on PATH is looked up in the
    build tree, where locklab's own load generators are (build/opt/memcached-load), so a
    campaign can name them wherever it is run from."""
    argv = [arg.replace("{threads}", str(threads)) for arg in spec.program]
    built = BUILD_OPT / argv[0]
    if "/" not in argv[0] and shutil.which(argv[0]) is None and built.is_file():
        argv[0] = str(built)
    return argv


def work_of(expression: str, threads: int) -> int:
    """A product of whole numbers and {threads}: "{threads}*400000"."""
    value = 1
    for factor in expression.replace(" ", "").split("*"):
        if factor == "{threads}":
            value *= threads
        elif factor.isdigit():
            value *= int(factor)
        else:
            raise LocklabError(
                f"work: '{expression}' is not a product of whole numbers and {{threads}}"
            )
    return value


def check_program(spec: ExperimentSpec, interposed: bool = True) -> None:
    """Everything about the program that can be checked before it runs (`interposed`: under
    LD_PRELOAD, which needs the interposition library)."""
    if not spec.program:
        raise LocklabError("exec: give the program after --, like: -- kccachetest wicked 1000")
    if spec.program_metric != "time":
        try:
            pattern = re.compile(spec.program_metric, re.MULTILINE)
        except re.error as error:
            raise LocklabError(f"--metric-regex: {error}") from None
        if pattern.groups < 1:
            raise LocklabError(
                "--metric-regex needs a group around the number, like 'rate: (\\S+)'"
            )
    work_of(spec.program_work, 1)
    uses_threads = any("{threads}" in arg for arg in spec.program)
    if len(spec.sweep["nwriters"]) > 1 and not uses_threads:
        raise LocklabError("--threads: the program's arguments have no {threads} to vary")
    if not (spec.program_timeout_s > 0):
        raise LocklabError(f"--timeout must be above 0 (got {spec.program_timeout_s})")
    if interposed:
        find_interpose()


def program_throughput(
    spec: ExperimentSpec, output: str, wall_s: float, threads: int
) -> float | None:
    if spec.program_metric == "time":
        return work_of(spec.program_work, threads) / wall_s if wall_s > 0 else None
    found = re.findall(spec.program_metric, output, re.MULTILINE)
    if not found:
        return None
    last = found[-1][0] if isinstance(found[-1], tuple) else found[-1]
    try:
        return float(last)
    except ValueError:
        return None


def work_done(
    spec: ExperimentSpec, throughput: float | None, wall_s: float, threads: int
) -> float | None:
    """The operations a run did: its --work, or its rate times its wall time."""
    if spec.program_metric == "time":
        return float(work_of(spec.program_work, threads))
    return throughput * wall_s if throughput is not None and wall_s > 0 else None


def run_program(spec: ExperimentSpec, config: Configuration, repeat: int) -> EngineOutcome:
    """One run: the program under the configuration's lock, bounded by its timeout."""
    threads = config.axis("nwriters")
    argv = argv_for(spec, threads)
    variant = config.variant
    with tempfile.TemporaryDirectory(prefix="locklab-exec-") as scratch:
        stats_path = Path(scratch) / "stats-%p.json"
        env = dict(os.environ)
        env.update(
            LD_PRELOAD=str(find_interpose()),
            LOCKLAB_LOCK=variant.lock,
            LOCKLAB_STATS=str(stats_path),
        )
        if variant.params:
            env["LOCKLAB_PARAMS"] = ",".join(f"{name}={value}" for name, value in variant.params)
        if variant.plugin:
            env["LOCKLAB_PLUGIN"] = variant.plugin
        start = time.monotonic()
        try:
            proc = subprocess.Popen(
                argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                errors="replace", start_new_session=True, preexec_fn=die_with_locklab(),
            )  # fmt: skip
        except OSError as error:
            raise LocklabError(f"cannot run {argv[0]}: {error.strerror}") from None
        try:
            raise_if_stopped()
            output, _ = proc.communicate(timeout=spec.run_timeout_s())
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the whole group: its children too
            output, _ = proc.communicate()
            timed_out = True
        except KeyboardInterrupt:  # in a session of its own, Ctrl-C did not reach the program
            with contextlib.suppress(ProcessLookupError):  # already gone, and reaped
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        wall_s = time.monotonic() - start
        stats = [json.loads(p.read_text()) for p in Path(scratch).glob("stats-*.json")]
    code = proc.returncode
    throughput = program_throughput(spec, output, wall_s, threads)
    name = Path(argv[0]).name
    if timed_out:
        status, error = "timeout", f"{name} did not finish in {spec.run_timeout_s():g} s"
    elif code != 0:
        how = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
        last = (output.strip().splitlines() or [""])[-1][:200]
        status, error = "error", f"{name} failed ({how}){': ' + last if last else ''}"
    elif throughput is None:
        status, error = "error", f"{name}: no throughput in its output ({spec.program_metric})"
    else:
        status, error = "ok", None
    machine = {"hostname": socket.gethostname(), "arch": os.uname().machine,
               "cpus_online": os.cpu_count(), "source": "program"}  # fmt: skip
    result = {
        "status": status,
        "error": error,
        "source": "program",
        "program": argv,
        "lock": variant.lock,
        "throughput_ops_per_s": throughput if status == "ok" else None,
        "window_s": wall_s,
        "exit_code": code,
        "interpose_stats": stats,
        "output_tail": output[-TAIL_CHARS:],
        "machine": machine,
    }
    exit_code = EXIT_OK if status == "ok" else 1
    return EngineOutcome(["LOCKLAB_LOCK=" + variant.lock, *argv], exit_code, result, "", wall_s,
                         timed_out)  # fmt: skip
