"""memcached under each lock, driven by locklab's load generator (build/opt/memcached-load).

The generator's checks are proved against fake servers that corrupt a value, return a stale
one or never answer: each must be one error line and exit status 1, never a hang. Then Debian's
memcached runs under the interposition library (the generator's --spawn) with glibc's mutex
and MCS, the suite's broken lock and a lock that never unlocks, and end to end through
`locklab exec` and the campaign file. Bounded by operation counts and timeouts; nothing here
asserts on time or throughput.
"""

import json
import os
import shutil
import socket
import socketserver
import sqlite3
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import ClassVar

import pytest
from conftest import BUILD, ROOT, bench_path, interpose_path, plugin_path
from locklab.cli.main import main

LOAD = BUILD / "opt" / "memcached-load"
RUN_TIMEOUT_S = 60
SMALL = ["--clients", "2", "--keys", "200", "--ops", "2000", "--io-timeout", "5"]
# Hot keys, half sets: what makes a lock without mutual exclusion show in memcached.
HOT = ["--clients", "4", "--keys", "8", "--get-percent", "50", "--ops", "50000",
       "--io-timeout", "5", "--startup-timeout", "5"]  # fmt: skip


def load_path():
    if not LOAD.exists():
        pytest.fail(f"{LOAD} is missing: run 'make build' (make test does)")
    return LOAD


def need_memcached() -> None:
    if shutil.which("memcached") is None:
        pytest.skip("memcached missing: scripts/install-deps.sh installs Debian's memcached")


def run_load(args: list[str], env_extra: dict | None = None) -> tuple[int, list[str]]:
    """The generator's exit status and output lines; the timeout kills its process group."""
    env = dict(os.environ)
    env.update(env_extra or {})
    proc = subprocess.Popen(
        [str(load_path()), *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, start_new_session=True,
    )  # fmt: skip
    try:
        out, _ = proc.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.communicate()
        pytest.fail(f"memcached-load {args} hung for {RUN_TIMEOUT_S} s")
    return proc.returncode, out.strip().splitlines()


def one_failure(code: int, lines: list[str], expected: str) -> None:
    errors = [line for line in lines if line.startswith("memcached-load: error:")]
    assert code == 1 and len(errors) == 1 and lines[-1] == errors[0], lines
    assert expected in errors[0], errors[0]


# ---- fake servers: the generator's checks must be able to fail ----


class FakeMemcached(socketserver.StreamRequestHandler):
    """Just enough of memcached's text protocol; `mode` decides how it misbehaves."""

    mode = "honest"
    store: ClassVar[dict[bytes, bytes]] = {}
    lock = threading.Lock()

    def handle(self) -> None:
        while line := self.rfile.readline():
            words = line.split()
            if self.mode == "mute":
                continue  # reads requests, answers none
            if words[:1] == [b"set"]:
                data = self.rfile.read(int(words[4]) + 2)[:-2]
                with self.lock:
                    if self.mode != "stale" or words[1] not in self.store:
                        self.store[words[1]] = data  # "stale" keeps the first version
                self.wfile.write(b"STORED\r\n")
            elif words[:1] == [b"get"]:
                with self.lock:
                    data = self.store.get(words[1])
                if data is None:
                    self.wfile.write(b"END\r\n")
                    continue
                if self.mode == "corrupt":
                    data = data[:-1] + (b"A" if data[-1:] != b"A" else b"B")
                self.wfile.write(b"VALUE %s 0 %d\r\n%s\r\nEND\r\n" % (words[1], len(data), data))


@contextmanager
def fake_server(mode: str) -> Iterator[int]:
    handler = type("Handler", (FakeMemcached,), {"mode": mode, "store": {}})
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_an_honest_server_passes_every_check():
    with fake_server("honest") as port:
        code, lines = run_load(["--port", str(port), "--get-percent", "50", *SMALL])
    assert code == 0 and lines[-1] == "ok", lines
    assert any(line.startswith("ops/s: ") for line in lines)


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("corrupt", "corrupt value"), ("stale", "stale value"), ("mute", "no reply from memcached")],
)
def test_a_lying_or_mute_server_is_one_error_line(mode, expected):
    # Short only where the silence is the point: the fake server runs in this process, and a
    # stalled pytest must not turn a lying reply into a missing one.
    io_timeout = "1" if mode == "mute" else "10"
    with fake_server(mode) as port:
        code, lines = run_load(["--port", str(port), "--get-percent", "50", *SMALL,
                                "--io-timeout", io_timeout])  # fmt: skip
    one_failure(code, lines, expected)


def test_no_server_is_one_error_line():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    code, lines = run_load(["--port", str(port), *SMALL])
    one_failure(code, lines, "cannot connect to 127.0.0.1")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--host", "10.1.2.3"], "refusing 10.1.2.3: loopback addresses only"),
        (["--host", "example.com"], "not an IPv4 address"),
        (["--clients", "0"], "--clients"),
        (["--value-size", "8"], "--value-size"),
        (["--keys", "2", "--clients", "4"], "must be at least --clients"),
        (["--spawn", "--port", "11211"], "--spawn picks a free port"),
        (["--bogus", "1"], "unknown option '--bogus'"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(args, expected):
    code, lines = run_load(args)
    assert code == 2 and len(lines) == 1 and expected in lines[0], lines


def test_spawn_without_memcached_is_one_line():
    code, lines = run_load(["--spawn", "--memcached", "/nonexistent/memcached", *SMALL])
    one_failure(code, lines, "Debian package memcached")


# ---- the real memcached under the interposition library ----


def preloaded(lock_env: dict, tmp_path) -> dict:
    return {"LD_PRELOAD": str(interpose_path("opt")),
            "LOCKLAB_STATS": str(tmp_path / "stats-%p.json"), **lock_env}  # fmt: skip


@pytest.mark.parametrize("lock", ["pthread_mutex", "mcs"])
def test_memcached_consistent_under_a_lock(lock, tmp_path):
    need_memcached()
    env = preloaded({"LOCKLAB_LOCK": lock}, tmp_path)
    code, lines = run_load(["--spawn", "--server-threads", "2", *SMALL], env)
    assert code == 0 and lines[-1] == "ok", lines
    assert any("exited cleanly; its stats agree" in line for line in lines), lines
    # One stats file, memcached's: the generator itself ran without the library.
    (stats,) = tmp_path.glob("stats-*.json")
    doc = json.loads(stats.read_text())
    assert doc["lock"] == lock
    if lock != "pthread_mutex":  # glibc's own mutex is passed through, not counted
        assert doc["mutexes_seen"] > 0 and doc["acquisitions"] > 0


def test_a_broken_lock_under_memcached_is_a_failed_run(tmp_path):
    """broken_tts (no mutual exclusion) on hot keys: memcached returns stale or missing values,
    or dies. A try that happens to pass is allowed; three that all pass are not."""
    need_memcached()
    env = preloaded({"LOCKLAB_PLUGIN": str(plugin_path("opt", "broken_tts"))}, tmp_path)
    for _ in range(3):
        code, lines = run_load(["--spawn", "--server-threads", "2", *HOT], env)
        if code != 0:
            one_failure(code, lines, "")
            return
        assert lines[-1] == "ok", lines
    pytest.fail("three runs of memcached under broken_tts all passed every check")


def test_a_lock_that_never_unlocks_is_a_hung_memcached(tmp_path):
    need_memcached()
    env = preloaded({"LOCKLAB_PLUGIN": str(plugin_path("opt", "never_unlock"))}, tmp_path)
    args = ["--spawn", "--server-threads", "2", *SMALL, "--io-timeout", "2",
            "--startup-timeout", "2"]  # fmt: skip
    code, lines = run_load(args, env)
    one_failure(code, lines, "(hung?)")


# ---- end to end: `locklab exec` and the campaign file ----


def statuses(store) -> dict[str, str]:
    with sqlite3.connect(store / "locklab.db") as db:
        return dict(db.execute("SELECT config_key, status FROM runs ORDER BY id").fetchall())


def test_exec_memcached_a_failing_lock_does_not_stop_the_sweep(tmp_path, capsys, monkeypatch):
    need_memcached()
    monkeypatch.setenv("LOCKLAB_ENGINE", str(bench_path("opt")))
    store = tmp_path / "s"
    args = ["exec", "--lock", "pthread_mutex,futex_mutex,never_unlock", "--threads", "1,2",
            "--plugin", str(plugin_path("opt", "never_unlock")), "--repeat", "1",
            "--metric-regex", r"^ops/s: ([0-9.]+)", "--timeout", "30", "--store", str(store),
            "--plain", "--", "memcached-load", "--spawn", "--server-threads", "{threads}",
            *SMALL, "--startup-timeout", "5"]  # fmt: skip
    assert main(args) == 1
    captured = capsys.readouterr()
    assert "Verdict against pthread_mutex:" in captured.out
    errors = [line for line in captured.err.splitlines() if line.startswith("locklab: error:")]
    assert len(errors) == 1 and "never_unlock:" in errors[0] and "(hung?)" in errors[0], errors
    found = statuses(store)
    assert [status for key, status in found.items() if not key.startswith("never_unlock")] == [
        "ok"
    ] * 4, found


def test_memcached_campaign_at_a_tiny_scale(tmp_path, capsys, monkeypatch):
    """The campaign file at 1000 operations, 1 and 2 workers. memcached's checks must pass
    under every lock; a spinning lock may crawl past the timeout on a loaded 2-core machine
    (a preempted holder or next waiter), which is a failed run but not an inconsistency."""
    need_memcached()
    monkeypatch.setenv("LOCKLAB_ENGINE", str(bench_path("opt")))
    text = (ROOT / "campaigns" / "memcached.toml").read_text()
    small = tmp_path / "memcached.toml"
    small.write_text(
        # A crawl is the program timeout's to end (a "timeout"), not a 5 s reply limit's (an error).
        text.replace('"--duration", "1"', '"--ops", "1000", "--io-timeout", "30"')
        .replace('"10000"', '"200"')
        .replace("program_timeout = 30", "program_timeout = 20")
    )
    assert '"--ops", "1000", "--io-timeout", "30"' in small.read_text()
    assert "[1, 2]" in small.read_text()
    store = tmp_path / "s"
    code = main(["campaign", str(small), "--repeat", "1", "--store", str(store), "--plain"])
    assert "Lock:" in capsys.readouterr().out
    found = statuses(store)
    assert code in (0, 1) and "error" not in found.values(), found
    sleeping = {key: status for key, status in found.items()
                if key.startswith(("pthread_mutex|", "futex_mutex|"))}  # fmt: skip
    assert len(sleeping) == 4 and set(sleeping.values()) == {"ok"}, found
