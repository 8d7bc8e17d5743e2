"""Shared fixtures: where the engine builds are, and a bounded way to run them.

Every engine call has a subprocess timeout on top of the engine's own watchdog, so a test can
fail but never hang. Nothing here asserts on time or throughput.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from locklab.store import Store

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build"
VARIANTS = ("opt", "tsan", "asan")
# The CPUs this process may run on, as the engine counts them (a cpuset or taskset shrinks it).
CORES = len(os.sched_getaffinity(0))
OVERSUBSCRIBED = 3 * CORES  # threads >= 3 x cores, as the torture tests require
RUN_TIMEOUT_S = 120
# Tables outside a terminal fold at $COLUMNS where it is set (output/listing.py): the tests
# read each row on one line, as a pipe without it gets them, whatever the shell exported.
os.environ.pop("COLUMNS", None)


@dataclass
class EngineRun:
    returncode: int
    stdout: str
    stderr: str
    result: dict | None  # the --json document, when one was written


def bench_path(variant: str) -> Path:
    path = BUILD / variant / "locklab-bench"
    if not path.exists():
        pytest.fail(f"{path} is missing: run 'make build-all' (make test does)")
    return path


def plugin_path(variant: str, name: str) -> Path:
    path = BUILD / variant / "plugins" / f"{name}.so"
    if not path.exists():
        pytest.fail(f"{path} is missing: run 'make build-all' (make test does)")
    return path


def run_engine(
    args: list[str], variant: str = "opt", tmp_path: Path | None = None, json_out: bool = True
) -> EngineRun:
    cmd = [str(bench_path(variant)), *args]
    json_file = None
    if json_out and tmp_path is not None:
        json_file = tmp_path / f"result-{len(list(tmp_path.iterdir()))}.json"
        cmd += ["--json", str(json_file)]
    env = dict(os.environ)
    # Sanitizers: fail loudly, with a distinct exit code, on the first report.
    env["TSAN_OPTIONS"] = "halt_on_error=1 exitcode=66 second_deadlock_stack=1"
    env["ASAN_OPTIONS"] = "halt_on_error=1 exitcode=67 detect_leaks=1"
    env["UBSAN_OPTIONS"] = "halt_on_error=1 print_stacktrace=1"
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env=env, check=False
    )
    result = None
    if json_file is not None and json_file.exists() and json_file.stat().st_size > 0:
        result = json.loads(json_file.read_text())
    return EngineRun(proc.returncode, proc.stdout, proc.stderr, result)


def list_locks(variant: str = "opt") -> list[dict]:
    proc = subprocess.run(
        [str(bench_path(variant)), "--list", "--json", "-"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return json.loads(proc.stdout)["locks"]


@pytest.fixture(scope="session")
def result_schema() -> dict:
    return json.loads((ROOT / "native" / "engine" / "result.schema.json").read_text())


def run_unit(variant: str, name: str) -> subprocess.CompletedProcess:
    """Run a C unit test (tests/unit/NAME.c) from the build of `variant`."""
    binary = BUILD / variant / "unit" / name
    if not binary.exists():
        pytest.fail(f"{binary} is missing: run 'make build-all'")
    return subprocess.run([str(binary)], capture_output=True, text=True, timeout=60, check=False)


def run_unit_against_mutant(
    tmp_path: Path, unit: str, source_file: str, old: str, new: str
) -> subprocess.CompletedProcess:
    """Compile tests/unit/UNIT.c against a copy of native/SOURCE_FILE (a lock file name means
    native/locks/) with `old` replaced by `new` (the mistake the unit test must catch), and
    run it. The folder's other files come along, so the copy includes what the original does
    (a lock file that includes a mutated header, too)."""
    relative = source_file if "/" in source_file else f"locks/{source_file}"
    original = ROOT / "native" / relative
    source = original.read_text()
    mutant = source.replace(old, new)
    assert mutant != source, f"{old!r} is not in {relative}"
    folder = tmp_path / "native" / Path(relative).parent
    folder.mkdir(parents=True)
    for neighbour in [*original.parent.glob("*.h"), *original.parent.glob("*.c")]:
        (folder / neighbour.name).write_text(neighbour.read_text())
    (folder / original.name).write_text(mutant)
    (tmp_path / "tests" / "unit").mkdir(parents=True)
    test_source = tmp_path / "tests" / "unit" / f"{unit}.c"
    test_source.write_text((ROOT / "tests" / "unit" / f"{unit}.c").read_text())
    binary = tmp_path / unit
    subprocess.run(
        [
            "cc", "-std=c11", "-D_GNU_SOURCE", "-O2", "-pthread",
            f"-I{ROOT / 'native' / 'include'}", f"-I{ROOT / 'tests' / 'unit'}",
            "-o", str(binary), str(test_source), "-lm",
        ],
        check=True,
        timeout=120,
    )  # fmt: skip
    return subprocess.run([str(binary)], capture_output=True, text=True, timeout=120, check=False)


# A stand-in qemu-system-x86_64 (tests/fakes/fake_qemu.py): under -accel kvm it misbehaves as
# $FAKE_QEMU_KVM says, under tcg it prints a real console log and exits, as a guest that powers
# off does; with -qmp it serves the QMP that vCPU pinning needs, on real threads.
FAKE_QEMU = ROOT / "tests" / "fakes" / "fake_qemu.py"
FAKE_QEMU_CONSOLE = ROOT / "tests" / "data" / "locktorture" / "qemu_debian_6.1_spin_lock.log"
FAKE_QEMU_SHORT_SIGN_OF_LIFE_S = 1.0


@pytest.fixture
def fake_qemu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from locklab.kernel import qemu

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program = bin_dir / "qemu-system-x86_64"
    program.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_QEMU}" "$@"\n')
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_QEMU_CONSOLE", str(FAKE_QEMU_CONSOLE))
    monkeypatch.setattr(qemu, "kvm_device_usable", lambda: True)  # whatever this host has
    # Generous: the stand-in (sh, then Python) can take seconds to print on a loaded machine,
    # and a limit that fires early turns a working or aborting KVM into a hang. A test that
    # needs the limit to fire sets it short (FAKE_QEMU_SHORT_SIGN_OF_LIFE_S).
    monkeypatch.setattr(qemu, "KVM_SIGN_OF_LIFE_S", 30.0)
    return tmp_path


@pytest.fixture
def store(tmp_path):
    """An empty result store, closed after the test."""
    store = Store(tmp_path / "store")
    yield store
    store.close()


# ---- programs under liblocklab-interpose.so ---------------------------------------------------

PRELOADED_TIMEOUT_S = 150


def interpose_path(variant: str) -> Path:
    path = BUILD / variant / "liblocklab-interpose.so"
    if not path.exists():
        pytest.fail(f"{path} is missing: run 'make build-all' (make test does)")
    return path


def run_preloaded(
    cmd: list[str], variant: str, env_extra: dict, timeout: float = PRELOADED_TIMEOUT_S
) -> tuple[str, int | None, str]:
    """Run cmd under the interposer: ("ok"|"failed"|"hung", returncode, output).

    The program runs in its own process group, which is killed on timeout: a program that
    hangs under a lock is a failed run with one line saying so, and the suite goes on.
    """
    env = dict(os.environ)
    env.update(env_extra)
    env["LD_PRELOAD"] = str(interpose_path(variant))
    env["TSAN_OPTIONS"] = "halt_on_error=1 exitcode=66 second_deadlock_stack=1"
    proc = subprocess.Popen(
        cmd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return "hung", None, f"hung: killed after {timeout:.0f} s\n{out}"
    return ("ok" if proc.returncode == 0 else "failed"), proc.returncode, out


# ---- a kernel git tree (tests/test_revisions.py, the git workflow in docs/kernels.md) -------

RTMUTEX_C = "kernel/locking/rtmutex.c"
# The branch `regress`, four commits past master: one slows rt_mutex_lock() by four pauses
# per call, a comment, one breaks mutual exclusion (the deliberately broken patch), a README.
SLOW_SUBJECT = "locking/rtmutex: pause four times in rt_mutex_lock()"
BROKEN_SUBJECT = "locking/rtmutex: DELIBERATELY BROKEN: take an owned lock now and then"
SLOW_AT = "void __sched rt_mutex_lock(struct rt_mutex *lock)\n{\n"
_SLOWER = "\tfor (int i = 0; i < 4; i++)\n\t\tcpu_relax();\n"
RTMUTEX_ANCHOR = "#include <linux/sched.h>\n"  # a line of rtmutex.c the commits below edit after


def git(repository: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@example.org"}  # fmt: skip
    return subprocess.run(["git", "-C", str(repository), *args], capture_output=True,
                          text=True, check=True, env=env).stdout  # fmt: skip


def edit_file(repository: Path, path: str, old: str, new: str) -> None:
    file = repository / path
    text = file.read_text()
    assert old in text
    file.unlink()  # a new file: in a hard-linked copy of a tree, the tree's stays as it was
    file.write_text(text.replace(old, new, 1))


def commit_edit(repository: Path, path: str, old: str, new: str, subject: str) -> None:
    edit_file(repository, path, old, new)
    git(repository, "commit", "-q", "-am", subject)


def make_kernel_repo(folder: Path) -> Path:
    """A small kernel git tree in folder/linux, from the installed 6.1 tree (only the files the
    from-source build compiles): tag v6.1, the 6.1 files; tag docs, a commit outside them;
    master, a comment in rtmutex.c on top; a branch `series` two patches past v6.1, mailed
    as folder/series.mbox with a cover letter; and a branch `regress` (above) past master.
    An untracked file stands for the user's work."""
    from locklab.kernel.build import unpack_default_source
    from locklab.kernel.from_source import TREE_PARTS

    tree = unpack_default_source()
    repository = folder / "linux"
    for part in TREE_PARTS:
        origin, target = tree / part, repository / part
        target.parent.mkdir(parents=True, exist_ok=True)
        if origin.is_dir():  # copies, never links: the commits below edit files in place
            shutil.copytree(origin, target)
        else:
            shutil.copy2(origin, target)
    (repository / "README").write_text("linux\n")
    git(repository, "init", "-q", "-b", "master")
    git(repository, "add", "-A")
    git(repository, "commit", "-q", "-m", "Linux 6.1")
    git(repository, "tag", "v6.1")
    (repository / "README").write_text("linux, documented\n")
    git(repository, "commit", "-q", "-am", "README: say more")
    git(repository, "tag", "docs")
    comment = "locking/rtmutex: add a comment"
    commit_edit(repository, RTMUTEX_C, RTMUTEX_ANCHOR, RTMUTEX_ANCHOR + "/* a comment */\n",
                comment)  # fmt: skip
    git(repository, "checkout", "-q", "-b", "series", "v6.1")
    first = "locking/rtmutex: first of two"
    commit_edit(repository, RTMUTEX_C, RTMUTEX_ANCHOR, RTMUTEX_ANCHOR + "/* first */\n",
                first)  # fmt: skip
    commit_edit(
        repository,
        RTMUTEX_C,
        "/* first */\n",
        "/* first, then second */\n",
        "locking/rtmutex: second of two, on the first",
    )
    mbox = git(repository, "format-patch", "--stdout", "--cover-letter", "v6.1..series")
    (folder / "series.mbox").write_text(mbox)
    git(repository, "checkout", "-q", "-b", "regress", "master")
    commit_edit(repository, "kernel/locking/rtmutex_api.c", SLOW_AT, SLOW_AT + _SLOWER,
                SLOW_SUBJECT)  # fmt: skip
    commit_edit(repository, RTMUTEX_C, "/* a comment */\n", "/* a comment, longer */\n",
                "locking/rtmutex: a longer comment")  # fmt: skip
    broken = ROOT / "campaigns" / "patches" / "broken" / (
        "0001-rtmutex-take-an-owned-lock-now-and-then.patch")  # fmt: skip
    subprocess.run(["patch", "-s", "-p1", "-i", str(broken)], cwd=repository, check=True)
    git(repository, "commit", "-q", "-am", BROKEN_SUBJECT)
    commit_edit(repository, "README", "documented", "documented again", "README: again")
    git(repository, "checkout", "-q", "master")
    (repository / "scratch.txt").write_text("uncommitted\n")  # the user's own work, untracked
    return repository


@pytest.fixture(scope="session")
def kernel_repo(tmp_path_factory) -> Path:
    """make_kernel_repo's tree, made once for the tests that read it and never change it."""
    return make_kernel_repo(tmp_path_factory.mktemp("kernel"))


def locklab_cli(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """`locklab ARGS` in a process of its own, from the repository, with the opt engine."""
    return subprocess.run(
        [sys.executable, "-m", "locklab.cli", *args], capture_output=True, text=True,
        timeout=timeout, check=False, cwd=ROOT,
        env={**os.environ, "LOCKLAB_ENGINE": str(bench_path("opt"))},
    )  # fmt: skip
