"""One host of --hosts, as the kernel's kvm-remote.sh does it: locklab shipped to a work folder
there (rsync over the user's ssh), built there for that host's architecture, checked by its
own `locklab doctor`, the experiment run by the same command line, and every run mirrored back
to the local store as it finishes (store/mirror.py). "localhost" is here, without ssh: this
checkout, already built, with a store of its own beside the local one.

The work folder, DIR/ALIAS on the host (--remote-dir), holds src/ (the project's working
tree without what .gitignore ignores; the host's build and virtualenv stay between ships),
inputs/ (files named on the command line from outside the project) and store/ (the host's own
results store). localhost's is STORE/hosts/localhost, beside this checkout, which it runs.
Every line runs under `sh -c`, whatever the user's login shell.

Every failure is one line naming the step (HostFailure): a connection that could not be made
or dropped, a disk that filled, a build that failed, with the last line of that step's log;
each step's whole output is kept locally in LOGS/ALIAS/STEP.log.
"""

from __future__ import annotations

import collections
import copy
import hashlib
import json
import platform
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from locklab import provenance
from locklab.kernel.arch import ARCHES
from locklab.run.ssh import LOCALHOST, SSH_FAILED, Ssh, connection_fault
from locklab.store import mirror

ROOT = Path(__file__).resolve().parents[3]
# Where a host's work folder goes, relative to the remote user's home unless absolute.
DEFAULT_REMOTE_DIR = ".cache/locklab/hosts"
PROBE_TIMEOUT_S = 60.0
DOCTOR_SAMPLE_S = 0.5
# What measuring needs built there; install-deps.sh --check-build names the packages it needs.
BUILD_TARGETS = ("build", "venv")
EXIT_MISSING_PACKAGES = 3  # install-deps.sh --check-build: packages are missing
EXIT_RUN_LOCKED = 75  # flock -E: another locklab still runs in that work folder
# After Ctrl-C, how long a host's locklab gets to stop on its own and mirror its last runs.
STOP_GRACE_S = 20.0
# In a host's command line, the host's work folder (the files shipped from outside the project).
WORK = "{work}"
TAIL_LINES = 40
# Each fact of `probe`, as the shell line that prints it on the host.
_PROBE = {
    "arch": "uname -m",
    "kernel": "uname -r",
    "cpus": "nproc",
    "numa_nodes": "ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l",
    "cpu": "lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1",
    "machine_id": "cat /etc/machine-id 2>/dev/null || hostname",
    "hostname": "hostname",
    "user": "id -un",
}

Report = Callable[[str, str, object], None]  # (alias, kind, payload), from the host's thread


class HostFailure(Exception):
    """A host's step failed: one line, without the host's name (the caller adds it)."""


class Host:
    def __init__(
        self, alias: str, ssh: Ssh, remote_dir: str, logs: Path, report: Report,
        install_deps: bool = False,
    ) -> None:  # fmt: skip
        self.alias = alias
        self.local = alias == LOCALHOST
        self.ssh = ssh
        self.logs = logs.resolve() / alias
        self.report = report
        self.install_deps = install_deps
        base = remote_dir.removeprefix("~/").rstrip("/") or "."
        self.dir = str(self.logs) if self.local else f"{base}/{alias}"
        self.src = str(ROOT) if self.local else f"{self.dir}/src"
        # As the host's locklab sees it, from src/; fetch() reaches it from the home folder.
        self.store = f"{self.dir}/store" if self.local else "../store"
        # How it was reached, which a resume reuses, and what it is (probe, doctor).
        self.facts: dict[str, object] = {"alias": alias, "remote_dir": remote_dir, "steps": {}}
        if ssh.config is not None:
            self.facts["ssh_config"] = str(ssh.config.resolve())
        self._processes: list[subprocess.Popen[bytes]] = []
        self._run: subprocess.Popen[bytes] | None = None
        self._stopped = threading.Event()
        self._logged: set[str] = set()  # the steps whose log this command has begun

    # -- commands on the host ------------------------------------------------------------------
    def _argv(self, line: str) -> list[str]:
        wrapped = f"sh -c {shlex.quote(line)}"
        return ["sh", "-c", line] if self.local else self.ssh.command(self.alias, wrapped)

    def _share_facts(self) -> None:
        """The facts as they stand, to the main thread: a copy, as this thread goes on."""
        self.report(self.alias, "facts", copy.deepcopy(self.facts))

    def _locklab(self) -> str:
        """The host's locklab, run from its src/ folder."""
        if self.local:
            return f"{shlex.quote(sys.executable)} -m locklab.cli"
        return ".venv/bin/locklab"

    def _in_src(self, line: str) -> str:
        commit = provenance.commit()
        env = f"LOCKLAB_COMMIT={shlex.quote(commit)} " if commit else ""
        return f"cd {shlex.quote(self.src)} && {env}{line}"

    def _start(self, argv: list[str], log: IO[bytes] | None = None) -> subprocess.Popen[bytes]:
        """A command of this host's, in a session of its own: Ctrl-C reaches locklab alone,
        which ends the host's commands itself (stop). Should locklab die, the ssh of a run
        sees its input end, and so does the locklab there."""
        if self._stopped.is_set():
            raise KeyboardInterrupt
        process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=log if log is not None else subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        self._processes.append(process)
        return process

    def _log(self, step: str) -> Path:
        """The step's log: begun afresh by this command, added to by its later calls."""
        self.logs.mkdir(parents=True, exist_ok=True)
        path = self.logs / f"{step}.log"
        if step not in self._logged:
            path.write_bytes(b"")
            self._logged.add(step)
        return path

    def _step(self, step: str, argv: list[str], timeout: float | None = None,
              on_line: Callable[[str], None] | None = None,
              allowed: tuple[int, ...] = (0,)) -> tuple[int, str]:  # fmt: skip
        """Run one step's command to its end, its output logged to LOGS/ALIAS/STEP.log and each
        line shown as progress: its exit status and output. A status not `allowed` is a
        HostFailure with the log's tail."""
        log_path = self._log(step)
        started = time.monotonic()
        tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        output: list[str] = []
        process = self._start(argv)
        assert process.stdin is not None and process.stdout is not None
        process.stdin.close()
        killer = threading.Timer(timeout, process.kill) if timeout else None
        if killer:
            killer.start()
        with log_path.open("a", encoding="utf-8") as log:
            for raw in process.stdout:
                line = raw.decode("utf-8", "replace").rstrip("\n")
                log.write(line + "\n")
                tail.append(line)
                output.append(line)
                if on_line is not None and line.strip():
                    on_line(line.strip())
        code = process.wait()
        if killer:
            killer.cancel()
        self._note_time(step, started)
        if self._stopped.is_set():
            raise KeyboardInterrupt
        if code not in allowed:
            raise HostFailure(self._failure(step, code, "\n".join(tail), log_path))
        return code, "\n".join(output)

    def _failure(self, step: str, code: int, tail: str, log: Path) -> str:
        """One line for a failed step: the connection's fault, else the log's telling line (a
        full disk's, else its last)."""
        lines = [line.strip() for line in tail.splitlines() if line.strip()]
        # ssh's own failure; rsync's, when the ssh under it could not connect or was cut off.
        connection = code == SSH_FAILED or any(_RSYNC_CUT in line for line in lines)
        fault = connection_fault(tail) if connection else None
        if fault is not None:
            return fault
        full = next((line for line in reversed(lines) if "No space left on device" in line), None)
        telling = full or (lines[-1] if lines else "no output")
        where = f"{step} failed (exit {code})" if code >= 0 else f"{step} was killed"
        return f"{where}: {telling} (log: {log})"

    def _shown(self, step: str) -> Callable[[str], None]:
        """A step's output lines as its progress."""
        return lambda line: self.report(self.alias, "step", f"{step}: {line}")

    def _note_time(self, step: str, started: float) -> None:
        steps = self.facts["steps"]
        assert isinstance(steps, dict)
        key = f"{step}_s"
        steps[key] = round(steps.get(key, 0.0) + time.monotonic() - started, 2)
        self._share_facts()

    # -- the steps -----------------------------------------------------------------------------
    def probe(self) -> None:
        """The host's facts, which also prove the connection and the key."""
        self.report(self.alias, "step", "connect")
        line = "; ".join(f"printf '%s=%s\\n' {key} \"$({command})\"" for key, command
                         in _PROBE.items())  # fmt: skip
        _, output = self._step("connect", self._argv(line), PROBE_TIMEOUT_S)
        for text in output.splitlines():
            key, equals, value = text.partition("=")
            if equals and key in _PROBE:
                self.facts[key] = int(value) if value.isdigit() else value
        self.facts["arch"] = architecture(str(self.facts.get("arch", "?")))
        if self.facts.get("user") == "root":
            self.facts["as_root"] = True
        self._share_facts()

    def ship(self, inputs: dict[Path, str]) -> None:
        """The project (what git tracks, without its history; the host's own build/ and .venv/
        are kept) and the inputs from outside it, by rsync."""
        if self.local:  # this checkout; the inputs into the work folder beside the store
            for local, place in inputs.items():
                if not place.startswith("src/"):
                    (self.logs / place).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(local, self.logs / place)
            return
        self.report(self.alias, "step", "ship")
        folders = " ".join(shlex.quote(f"{self.dir}/{sub}") for sub in ("src", "inputs", "store"))
        self._step("ship", self._argv(f"mkdir -p {folders}"), PROBE_TIMEOUT_S)
        rsync = ["rsync", "-a", "--delete", "-e", self.ssh.rsync_shell()]
        # The ignore rules from the command line, so they hold on the host's side as well: its
        # build and virtualenv are kept, even by the first ship into a folder.
        project = [*rsync, f"--exclude-from={ROOT / '.gitignore'}", "--exclude=/.git", f"{ROOT}/",
                   f"{self.alias}:{self.src}/"]  # fmt: skip
        self._step("ship", project)
        for local, remote in inputs.items():  # files only: a folder could hold the work folder
            destination = f"{self.alias}:{self.dir}/{remote}"
            self._step("ship", [*rsync, "--mkpath", str(local), destination])

    def build(self) -> None:
        """`make build venv` there, for the host's own architecture. The Debian packages that
        needs are checked first; --install-deps installs them with `make deps` where the ssh
        user is root, and nowhere else: locklab never asks for root on a host itself."""
        if self.local:
            return
        self.report(self.alias, "step", "build: checking packages")
        check = self._argv(self._in_src("scripts/install-deps.sh --check-build"))
        code, missing = self._step("build", check, allowed=(0, EXIT_MISSING_PACKAGES))
        if code == EXIT_MISSING_PACKAGES:
            if not (self.install_deps and self.facts.get("as_root")):
                how = "--install-deps runs it only where the ssh user is root"
                raise HostFailure(f"it lacks Debian packages ({missing.strip()}): run 'make "
                                  f"deps' there as root ({how})")  # fmt: skip
            deps = self._argv(self._in_src("make deps 2>&1"))
            self._step("deps", deps, on_line=self._shown("deps"))
        line = self._in_src(f"make --no-print-directory {' '.join(BUILD_TARGETS)} 2>&1")
        self._step("build", self._argv(line), on_line=self._shown("build"))

    def doctor(self) -> None:
        self.report(self.alias, "step", "doctor")
        line = self._in_src(f"{self._locklab()} doctor --json --sample {DOCTOR_SAMPLE_S}")
        _, output = self._step("doctor", self._argv(line), PROBE_TIMEOUT_S)
        try:
            document = json.loads(output[output.index("{") :])
        except ValueError:
            raise HostFailure(f"doctor's answer is not JSON: {output[-200:]}") from None
        self.facts["doctor"] = document.get("summary")
        self.facts["doctor_checks"] = {
            check["name"]: check["status"] for check in document.get("checks", [])
        }
        self._share_facts()

    def run(self, arguments: list[str]) -> int:
        """The command line on the host, into its own store, mirrored back line by line as the
        runs finish: the remote locklab's exit status. Its output is kept in run.log. A lock
        on the work folder keeps a second locklab (a resume while the first, cut off, has not
        noticed yet) from measuring beside it."""
        self.report(self.alias, "step", "run")
        # Before exec's "--", after which the program's own arguments start.
        cut = arguments.index("--") if "--" in arguments else len(arguments)
        work = self.dir if self.local else ".."
        own = [argument.replace(WORK, work) for argument in arguments[:cut]]
        command = shlex.join([*own, "--store", self.store, "--plain", *arguments[cut:]])
        lock = shlex.quote(f"{work}/run.lock")
        line = self._in_src(f"{mirror.MIRROR_FD_ENV}=3 exec flock -n -E {EXIT_RUN_LOCKED} {lock} "
                            f"{self._locklab()} {command} 3>&1 1>&2")  # fmt: skip
        started = time.monotonic()
        log_path = self._log("run")
        with log_path.open("ab") as log:
            process = self._run = self._start(self._argv(line), log)
            assert process.stdout is not None
            for raw in process.stdout:
                event = mirror.parse(raw.decode("utf-8", "replace"))
                if event is not None:
                    self.report(self.alias, "mirror", event)
            code = process.wait()
        self._note_time("run", started)
        if self._stopped.is_set():
            raise KeyboardInterrupt
        tail = log_path.read_text(encoding="utf-8", errors="replace")[-4000:]
        if code == SSH_FAILED:  # ssh's own line, as "unreachable" would mislead here
            fault = connection_fault(tail)
            raise HostFailure(
                f"lost mid-run: {fault.split(': ', 1)[1] if fault else 'the connection dropped'}"
            )
        if code == EXIT_RUN_LOCKED:
            raise HostFailure(f"a locklab still runs in {self.dir} there (its run.lock is "
                              "held): let it end, or end it, then resume")  # fmt: skip
        errors = [text for text in tail.splitlines() if "locklab: " in text]
        # 1: some variant's runs failed, which its own error lines and the table show.
        if code not in (0, 1) or (code == 1 and not errors):
            last = errors[-1] if errors else (tail.strip().splitlines() or ["no output"])[-1]
            raise HostFailure(f"locklab there exited with {code}: {last.strip()} "
                              f"(log: {log_path})")  # fmt: skip
        return code

    def fetch(self, into: Path) -> None:
        """What the host's store holds beside its runs (kernel consoles, reports): the runs
        themselves came over the mirror."""
        if self.local:
            return
        self.report(self.alias, "step", "fetch")
        into.mkdir(parents=True, exist_ok=True)
        rsync = ["rsync", "-a", "-e", self.ssh.rsync_shell(), "--exclude=locklab.db*",
                 f"{self.alias}:{self.dir}/store/", f"{into}/"]  # fmt: skip
        self._step("fetch", rsync)

    def stop(self) -> None:
        """Ctrl-C: end every command on the host. Closing a run's standard input ends the
        locklab there (lifetime.end_with_input), which stops its engine or guest, keeps its
        finished runs and mirrors the last of them; it gets STOP_GRACE_S for that before its
        ssh is ended. Any other step (rsync, make) is ended at once."""
        self._stopped.set()
        for process in self._processes:
            if process.poll() is not None:
                continue
            if process is self._run and process.stdin is not None:
                process.stdin.close()
                ender = threading.Timer(STOP_GRACE_S, _end, (process,))
                ender.daemon = True  # locklab's exit does not wait for it
                ender.start()
            else:
                process.terminate()


def remote_input(path: Path) -> str | None:
    """Where a file named on the command line is on a host, from the work folder: the same
    place in the project when it is in it (None: shipped with it), else inputs/KEY/NAME, KEY
    from its folder."""
    resolved = path.resolve()
    if resolved.is_relative_to(ROOT):
        return None
    key = hashlib.sha256(str(resolved.parent).encode()).hexdigest()[:12]
    return f"inputs/{key}/{resolved.name}"


def host_architecture(alias: str, ssh: Ssh) -> str:
    """The host's architecture as --arch names it: a first connection, before kernels are built
    for it here. A host that cannot say is a HostFailure."""
    if alias == LOCALHOST:
        machine = platform.machine()
    else:
        try:
            answer = subprocess.run(
                ssh.command(alias, "uname -m"), capture_output=True, text=True,
                stdin=subprocess.DEVNULL, timeout=PROBE_TIMEOUT_S, check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            raise HostFailure(f"unreachable: no answer in {PROBE_TIMEOUT_S:g} s") from None
        if answer.returncode != 0:
            raise HostFailure(connection_fault(answer.stderr) or answer.stderr.strip())
        machine = answer.stdout.strip()
    return architecture(machine)


def architecture(machine: str) -> str:
    """`uname -m` as --arch names it (kernel/arch.py's architectures)."""
    for arch in ARCHES.values():
        if machine in arch.machines:
            return arch.name
    known = " and ".join(ARCHES)
    raise HostFailure(f"its architecture is {machine}: locklab builds for {known}")


def _end(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()


# rsync's word when the ssh under it could not connect or was cut off.
_RSYNC_CUT = "connection unexpectedly closed"
