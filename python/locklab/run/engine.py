"""Finding and running the native engine, ``locklab-bench``.

Every measurement is one engine process; this module only builds its command line, waits for it
and reads the JSON it prints. Nothing of Python runs inside a measurement.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from locklab.errors import LocklabError
from locklab.model.catalogue import Catalogue, lock_info
from locklab.model.spec import Configuration
from locklab.run.guest_program import run_in_guest
from locklab.run.lifetime import die_with_locklab, holding_stops, raise_if_stopped
from locklab.run.outcome import EXIT_USAGE, EngineOutcome
from locklab.run.program import run_program
from locklab.run.simulator import engine_invocation

if TYPE_CHECKING:
    from locklab.model.spec import ExperimentSpec

ENGINE_NAME = "locklab-bench"


def find_engine(explicit: str | None = None) -> Path:
    """The engine to run: --engine, then $LOCKLAB_ENGINE, then the one beside this Python
    (the virtualenv's bin/, where ``make`` puts it), then $PATH."""
    candidates: list[tuple[str, str | None]] = [
        ("--engine", explicit),
        ("LOCKLAB_ENGINE", os.environ.get("LOCKLAB_ENGINE")),
        ("the virtualenv", str(Path(sys.executable).parent / ENGINE_NAME)),
        ("PATH", shutil.which(ENGINE_NAME)),
    ]
    for origin, candidate in candidates:
        if not candidate:
            continue
        path = Path(candidate)
        if path.is_file() and os.access(path, os.X_OK):
            return path
        if origin in ("--engine", "LOCKLAB_ENGINE"):
            raise LocklabError(f"engine not found: {origin} names '{candidate}', not an executable")
    raise LocklabError(
        f"engine not found: no {ENGINE_NAME} in the virtualenv or on PATH "
        "(build it with 'make build venv', or give --engine PATH)"
    )


class Engine:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._catalogues: dict[tuple[tuple[str, ...], str], Catalogue] = {}

    def catalogue(self, plugins: tuple[str, ...] = (), sim_machine: str = "") -> Catalogue:
        """Every lock the engine knows, with these plugins loaded, by name; with
        ``sim_machine``, as the simulator lists them (plugins built for it load only there)."""
        key = (plugins, sim_machine)
        if key not in self._catalogues:
            binary, env = engine_invocation(self.path, sim_machine, sanitizer_environment())
            command = [str(binary)]
            for plugin in plugins:
                command += ["--plugin", plugin]
            command += ["--list", "--json", "-"]
            proc = self._call(command, timeout_s=30.0, env=env)
            if proc.returncode != 0:
                last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
                raise LocklabError(f"engine {binary}: --list failed: {last}")
            locks = json.loads(proc.stdout)["locks"]
            self._catalogues[key] = Catalogue([lock_info(lock) for lock in locks])
        return self._catalogues[key]

    def build(self) -> str:
        """Which build this engine is, by the sanitizer runtime it links: tsan, asan or opt
        (a plugin loaded into it must be compiled the same way)."""
        binary = self.path.read_bytes()
        if b"__tsan_init" in binary:
            return "tsan"
        return "asan" if b"__asan_init" in binary else "opt"

    def check(self, spec: ExperimentSpec) -> None:
        """The spec against this engine's catalogue, with the plugins it loads; a variant that
        names a plugin must take its lock from it, not from the built-in locks."""
        # Each plugin is listed alone: several may bring a lock of one name (kernel:rtmutex,
        # built with different patches).
        if spec.source == "guest":  # kernels, not locks: their images are checked
            spec.validate(Catalogue([]))
            return
        machine = spec.sim_machine
        locks = {name: info for name, info in self.catalogue().items()}
        for plugin in spec.plugins():
            locks.update(self.catalogue((plugin,), machine).items())
        spec.validate(Catalogue(list(locks.values())))
        built_in = self.catalogue()
        for variant in spec.variants:
            if variant.plugin and variant.lock in built_in:
                provided = sorted(set(self.catalogue((variant.plugin,), machine)) - set(built_in))
                raise LocklabError(
                    f"variant '{variant.label}': lock '{variant.lock}' is built in, not from "
                    f"{Path(variant.plugin).name} (which adds: {', '.join(provided) or 'nothing'})"
                )
        if spec.sim:  # the spec is sound: what fails now is the simulator's
            self._check_simulated(spec)

    def _check_simulated(self, spec: ExperimentSpec) -> None:
        """Each lock once in the simulator at the sweep's first point (its writers, readers and
        the variant's params: a lock for a fixed number of threads refuses any other), a few
        acquisitions: a lock it cannot run (glibc's, a PI futex, inline assembly) is one line
        now, not a column of failed runs."""
        point = spec.points()[0]
        for variant in spec.variants:
            args = [*spec.engine_args(Configuration(variant, point), 0), "--warmup", "0"]
            # --ops counts checked writes: readers alone, or the bare loop, run the duration.
            if dict(point)["nwriters"] and spec.checks:
                args += ["--ops", "10"]
            outcome = self.run(args, timeout_s=60.0, sim_machine=spec.sim_machine)
            # Only a refusal (the lock's init, a lock the simulator cannot run): a lock that
            # fails its run (a violation, a deadlock, a crash) is what the sweep is for.
            if outcome.exit_code == EXIT_USAGE:
                at = " ".join(f"{axis}={value}" for axis, value in point if value)
                raise LocklabError(f"--sim: {variant.label} at {at}: {outcome.error_line()}")

    def topology(self, numa_nodes: int | None = None) -> str:
        """What the engine detects (and, with numa_nodes, how it would split the CPUs)."""
        command = [str(self.path), "--topology"]
        if numa_nodes is not None:
            command += ["--numa-nodes", str(numa_nodes)]
        proc = self._call(command, timeout_s=30.0)
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
            raise LocklabError(last.removeprefix("locklab-bench: error: "))
        return proc.stdout

    def cache_miss_counter(self) -> str | None:
        """None when the engine can count this machine's cache misses; else why not, as the
        engine says it ("perf_event_open: No such file or directory" on a VM without a PMU)."""
        outcome = self.run(["--lock", "tas", "--nwriters", "1", "--ops", "1000"], timeout_s=30.0)
        misses = (outcome.result or {}).get("cache_misses")
        if not isinstance(misses, dict):
            return f"the engine did not say ({outcome.error_line()})"
        reason = misses.get("reason")
        return str(reason) if reason is not None else None

    def measure(self, spec: ExperimentSpec, config: Configuration, repeat: int) -> EngineOutcome:
        """One run of `spec`'s configuration: the engine, or the spec's program under the
        interposed lock (run/program.py)."""
        if spec.source == "guest":
            return run_in_guest(spec, config, repeat)
        if spec.program:
            return run_program(spec, config, repeat)
        with holding_stops():
            running = self.start_measure(spec, config, repeat)
        return running.wait()

    def run(self, args: list[str], timeout_s: float, sim_machine: str = "") -> EngineOutcome:
        """One measurement: the engine with ``args`` and ``--json -``, waited for at most
        ``timeout_s``; with ``sim_machine`` (a flat machine file's text) the simulator on that
        machine. Ctrl-C kills the engine and propagates; an interrupt Python lost as the engine
        started is raised when it ends."""
        with holding_stops():
            running = self.start(args, timeout_s, sim_machine)
        return running.wait()

    def start_measure(
        self, spec: ExperimentSpec, config: Configuration, repeat: int
    ) -> RunningEngine:
        """measure()'s engine run, started and not waited for: simulated runs go several at a
        time (run/sweep.py)."""
        return self.start(spec.engine_args(config, repeat), spec.run_timeout_s(),
                          spec.sim_machine)  # fmt: skip

    def start(self, args: list[str], timeout_s: float, sim_machine: str = "") -> RunningEngine:
        """The engine started; the caller holds stop signals (holding_stops()) until it has
        the run in hand, so that Ctrl-C never leaves it running."""
        binary, env = engine_invocation(self.path, sim_machine, sanitizer_environment())
        command = [str(binary), *args, "--json", "-"]
        # Files in memory, not pipes: a run polled among others never blocks on a full pipe.
        output: tuple[int, ...] = ()
        try:
            output = os.memfd_create("engine-stdout"), os.memfd_create("engine-stderr")
            proc = subprocess.Popen(command, stdout=output[0], stderr=output[1],
                                    env=env or sanitizer_environment(),
                                    preexec_fn=die_with_locklab())  # fmt: skip
        except BaseException as error:
            for descriptor in output:
                os.close(descriptor)
            if isinstance(error, OSError):
                raise LocklabError(f"engine {self.path} cannot run: {error.strerror}") from None
            if isinstance(error, subprocess.SubprocessError):  # its preexec_fn failed
                raise LocklabError(f"engine {self.path} cannot run: {error}") from None
            raise
        return RunningEngine(command, proc, output, timeout_s)

    def _call(
        self, command: list[str], timeout_s: float, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(
                command,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
                preexec_fn=die_with_locklab(),
                env=env or sanitizer_environment(),
            )
        except OSError as error:
            raise LocklabError(f"engine {self.path} cannot run: {error.strerror}") from None


class RunningEngine:
    """An engine process under way: wait() for it, or wait_for_one() of several; either way it
    is killed at its time limit, and outcome() reads what it printed."""

    def __init__(self, command: list[str], proc: subprocess.Popen[bytes],
                 output: tuple[int, ...], timeout_s: float) -> None:  # fmt: skip
        self.command = command
        self.proc = proc
        self.output = output  # its stdout's and stderr's files, closed once read or discarded
        self.started = time.monotonic()
        self.deadline = self.started + timeout_s
        self.ended: float | None = None
        self.timed_out = False
        try:  # readable once the process has ended: waited for asleep (Linux 5.3)
            self.ends: int | None = os.pidfd_open(proc.pid)
        except OSError:
            self.ends = None

    def wait(self) -> EngineOutcome:
        try:
            raise_if_stopped()  # one held while it started
            while not self.done():
                wait_for_one([self])
            outcome = self.outcome()
        finally:
            self.discard()  # Ctrl-C included: the engine never outlives the wait
            raise_if_stopped()
        return outcome

    def done(self) -> bool:
        """Ended, or killed now that its time is up."""
        if self.ended is not None:
            return True
        if self.proc.poll() is not None or time.monotonic() >= self.deadline:
            self.timed_out = self.proc.poll() is None
            self.stop()
            return True
        return False

    def stop(self) -> None:
        """Killed if it still runs; its end noted."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.ended is None:
            self.ended = time.monotonic()
        if self.ends is not None:
            os.close(self.ends)
            self.ends = None

    def discard(self) -> None:
        """Stopped, and what it printed thrown away (nothing, once outcome() has read it)."""
        self.stop()
        output, self.output = self.output, ()
        for descriptor in output:
            os.close(descriptor)

    def outcome(self) -> EngineOutcome:
        wall_s = (self.ended or time.monotonic()) - self.started
        output, self.output = self.output, ()  # closed by the reads, whatever interrupts them
        out, err = (_read(descriptor) for descriptor in output)
        if self.timed_out:
            return EngineOutcome(self.command, -9, None, err, wall_s, True)
        result = None
        if out.strip():
            try:
                result = json.loads(out)
            except json.JSONDecodeError:
                result = None
        return EngineOutcome(self.command, self.proc.returncode, result, err, wall_s)


def wait_for_one(running: list[RunningEngine]) -> None:
    """Until one of `running` may have ended or reached its time limit, asleep meanwhile: the
    measured run's locklab takes no CPU from it. Where a process's end cannot be waited for
    (a kernel before 5.3), it looks every 50 ms, as Popen.wait() does."""
    timeout = max(0.0, min(run.deadline for run in running) - time.monotonic())
    ends = select.poll()  # not select(): no limit on descriptor numbers
    for run in running:
        if run.ends is None:
            timeout = min(timeout, 0.05)
        else:
            ends.register(run.ends, select.POLLIN)
    ends.poll(timeout * 1000)


def _read(descriptor: int) -> str:
    """A file's text from its start; the file closed."""
    with os.fdopen(descriptor, "rb") as file:
        file.seek(0)
        return file.read().decode(errors="replace")


def sanitizer_environment() -> dict[str, str]:
    """The environment for a process that may run under ThreadSanitizer: every racing address
    reported, not only the first pair found on it (a plain write that does not count must not
    hide a plain read that does); the user's own TSAN_OPTIONS come after, and win."""
    env = dict(os.environ)
    env["TSAN_OPTIONS"] = f"suppress_equal_addresses=0 {env.get('TSAN_OPTIONS', '')}".strip()
    return env
