"""Bad input: one clear line on stderr, exit status 2, never a crash."""

import subprocess

import pytest
from conftest import ROOT, list_locks, plugin_path, run_engine

BAD_INPUT = {
    "unknown lock": (["--lock", "no_such_lock"], "unknown lock 'no_such_lock'"),
    "no lock": (["--nwriters", "2"], "--lock is required"),
    "negative writers": (["--lock", "tas", "--nwriters", "-1"], "--nwriters"),
    "writers not a number": (["--lock", "tas", "--nwriters", "two"], "--nwriters"),
    "too many writers": (["--lock", "tas", "--nwriters", "100000"], "out of range"),
    "no threads": (["--lock", "tas", "--nwriters", "0"], "no threads"),
    "negative duration": (["--lock", "tas", "--duration", "-1"], "must not be negative"),
    "duration not a number": (["--lock", "tas", "--duration", "1s"], "not a number"),
    "zero duration": (["--lock", "tas", "--duration", "0"], "--duration must be above 0"),
    "nan duration": (["--lock", "tas", "--duration", "nan"], "not a number"),
    "zero ops": (["--lock", "tas", "--ops", "0"], "out of range"),
    "negative warmup": (["--lock", "tas", "--warmup", "-2"], "must not be negative"),
    "readers on a mutex": (["--lock", "tas", "--nreaders", "2"], "not a reader-writer lock"),
    "ops without writers": (
        ["--lock", "pthread_rwlock", "--nwriters", "0", "--nreaders", "2", "--ops", "10"],
        "needs --nwriters",
    ),
    "unknown param": (["--lock", "ttas_backoff", "--param", "nope=1"], "no tunable 'nope'"),
    "param out of range": (
        ["--lock", "ttas_backoff", "--param", "backoff_max=0"],
        "out of range",
    ),
    "param not an integer": (["--lock", "ttas_backoff", "--param", "backoff_max=x"], "integer"),
    "param without value": (["--lock", "ttas_backoff", "--param", "backoff_max"], "NAME=VALUE"),
    "no checks with a hold": (
        ["--lock", "tas", "--no-checks", "--hold-ns", "100"],
        "--no-checks measures the bare loop",
    ),
    "no checks with readers": (
        ["--lock", "pthread_rwlock", "--no-checks", "--nreaders", "1"],
        "--no-checks measures the bare loop",
    ),
    "param on a lock without tunables": (
        ["--lock", "futex_mutex", "--param", "a=1"],
        "no tunables",
    ),
    "backoff min above max": (
        [
            "--lock",
            "ttas_backoff",
            "--param",
            "backoff_min=64",
            "--param",
            "backoff_max=8",
            "--duration",
            "0.1",
        ],
        "failed to initialise",
    ),
    "bad pin mode": (["--lock", "tas", "--pin", "sideways"], "--pin"),
    "pin to an absent CPU": (["--lock", "tas", "--pin", "4000"], "--pin"),
    "bad pin range": (["--lock", "tas", "--pin", "3-1"], "--pin"),
    "unknown option": (["--lock", "tas", "--frobnicate"], "unknown option"),
    "missing value": (["--lock"], "needs a value"),
    "stray argument": (["--lock", "tas", "extra"], "unexpected argument"),
    "latency period neither count nor auto": (
        ["--lock", "tas", "--latency-every", "often"],
        "neither a count nor auto",
    ),
    "zero latency period": (["--lock", "tas", "--latency-every", "0"], "out of range"),
    "tiny watchdog": (["--lock", "tas", "--watchdog", "0.01"], "--watchdog"),
    "missing plugin": (["--plugin", "/nonexistent/lock.so"], "cannot load plugin"),
}


@pytest.mark.parametrize(("args", "expected"), BAD_INPUT.values(), ids=BAD_INPUT.keys())
def test_bad_input_is_one_line_and_exit_2(args, expected):
    run = run_engine(args, json_out=False)
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("locklab-bench: error: ")
    assert expected in lines[0]


def test_plugin_that_is_not_a_lock():
    """A shared object without the symbol is refused, not called."""
    run = run_engine(["--plugin", "libm.so.6"], json_out=False)
    assert run.returncode == 2
    assert "does not export 'locklab_plugin_lock'" in run.stderr


def test_same_plugin_twice_is_a_name_clash():
    plugin = str(plugin_path("opt", "example_ticket"))
    run = run_engine(["--plugin", plugin, "--plugin", plugin], json_out=False)
    assert run.returncode == 2
    assert "already exists" in run.stderr


# A plugin with a writer loop of its own, compiled against another engine's structures.
PLUGIN_FOR_ANOTHER_ENGINE = """
#include <locklab/lock.h>
struct worker;
static void nothing(void *lock, struct lock_thread *self) { (void)lock; (void)self; }
void locklab_plugin_writer_loop(struct worker *w, unsigned seen) { (void)w; (void)seen; }
const char locklab_plugin_engine_layout[] = "0123456789abcdef";
const struct lock_ops locklab_plugin_lock = {
    .abi_version = LOCKLAB_ABI_VERSION, .name = "elsewhere", .family = "test",
    .summary = "built for another engine", .lock = nothing, .unlock = nothing, .lock_size = 8,
};
"""


def test_a_plugin_loop_built_for_another_engine_is_refused(tmp_path):
    """Its loop would read the engine's structures at the wrong places; the line says which
    side to rebuild when the engine, not the plugin, is the stale one."""
    source, plugin = tmp_path / "elsewhere.c", tmp_path / "elsewhere.so"
    source.write_text(PLUGIN_FOR_ANOTHER_ENGINE)
    subprocess.run(["cc", "-std=c11", "-shared", "-fPIC", "-I", str(ROOT / "native" / "include"),
                    "-o", str(plugin), str(source)], check=True)  # fmt: skip
    run = run_engine(["--plugin", str(plugin), "--lock", "elsewhere"], json_out=False)
    assert run.returncode == 2 and run.stderr.count("\n") == 1, run.stderr
    assert "built for engine layout 0123456789abcdef" in run.stderr
    assert "rebuild the older of the two" in run.stderr


def test_help_exits_0():
    run = run_engine(["--help"], json_out=False)
    assert run.returncode == 0
    assert "--nwriters" in run.stdout


def test_list_names_every_lock_with_family_and_summary():
    run = run_engine(["--list"], json_out=False)
    assert run.returncode == 0
    names = [line.split()[0] for line in run.stdout.splitlines()]
    expected = {
        "tas",
        "ttas",
        "ttas_backoff",
        "ticket",
        "mcs",
        "clh",
        "anderson",
        "futex_mutex",
        "pthread_mutex",
        "pthread_spinlock",
        "pthread_rwlock",
        "ck_ticket",
        "ck_mcs",
        "ck_clh",
        "ck_fas",
    }
    assert expected <= set(names)
    assert len(names) == len(set(names))
    for line in run.stdout.splitlines():
        assert len(line.split(None, 2)) == 3, line


def test_list_json_has_sources_and_tunables():
    locks = {lock["name"]: lock for lock in list_locks()}
    for lock in locks.values():
        assert lock["source"], lock["name"]
        assert lock["family"], lock["name"]
    backoff = {t["name"]: t for t in locks["ttas_backoff"]["tunables"]}
    assert backoff["backoff_max"]["default"] == 1024
    assert backoff["backoff_min"]["min"] <= backoff["backoff_min"]["default"]
    assert "reader_writer" in locks["pthread_rwlock"]["flags"]
    assert "sleeps" in locks["futex_mutex"]["flags"]
