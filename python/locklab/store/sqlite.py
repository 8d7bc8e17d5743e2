"""The store's SQLite side: its schema, how a store is opened (read-only without writing
anything), and which process holds a run's claim."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from pathlib import Path

SCHEMA_VERSION = 3

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS experiments (
    id INTEGER PRIMARY KEY,
    uuid TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    created TEXT NOT NULL,
    spec_json TEXT NOT NULL,
    host TEXT,
    origin TEXT NOT NULL DEFAULT 'local',
    locklab_version TEXT NOT NULL,
    locklab_commit TEXT
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    config_key TEXT NOT NULL,
    repeat INTEGER NOT NULL,
    status TEXT NOT NULL,
    exit_code INTEGER NOT NULL,
    throughput_ops_per_s REAL,
    error TEXT,
    command_json TEXT NOT NULL,
    result_json TEXT,
    machine_json TEXT,
    wall_s REAL NOT NULL,
    finished TEXT NOT NULL,
    locklab_version TEXT NOT NULL,
    locklab_commit TEXT
);
CREATE INDEX IF NOT EXISTS runs_by_config ON runs (experiment_id, config_key, repeat);
-- Schema 2: a run being measured is claimed first, so that two resumers of one experiment
-- never measure the same (configuration, repeat). A claim whose process is gone is stale.
CREATE TABLE IF NOT EXISTS claims (
    experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    config_key TEXT NOT NULL,
    repeat INTEGER NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    process_start TEXT NOT NULL,
    expires REAL NOT NULL,
    PRIMARY KEY (experiment_id, config_key, repeat)
);
-- Schema 3: an experiment measured on a remote host (--hosts) keeps the host's alias and
-- facts: its CPU, cores, NUMA nodes, kernel, doctor's verdict and each step's time.
CREATE TABLE IF NOT EXISTS host_facts (
    experiment_id INTEGER PRIMARY KEY REFERENCES experiments(id) ON DELETE CASCADE,
    alias TEXT NOT NULL,
    facts_json TEXT NOT NULL
);
"""


def connect(path: Path, read_only: bool) -> sqlite3.Connection:
    if not read_only:
        db = sqlite3.connect(path, isolation_level=None)
        db.execute("PRAGMA foreign_keys = ON")
        return db
    # mode=ro writes nothing; a WAL store whose folder is read-only may still need its -shm
    # file, which only immutable=1 does without (it is then read as the file stands).
    uri = path.resolve().as_uri()
    if not Path(f"{path}-wal").exists():
        # No writer has it open (a WAL writer keeps its -wal until it closes): read the file as
        # it stands, without the -wal and -shm that mode=ro would create and leave behind. A
        # writer that starts meanwhile appends to a -wal of its own and leaves this file as it
        # is until its first checkpoint.
        return sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None)
    try:
        db = sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None)
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return db
    except sqlite3.OperationalError:
        return sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None)


def _process_start(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22): with the
    pid, it names one process, even after the pid is reused."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def this_process() -> tuple[str, int, str]:
    pid = os.getpid()
    return socket.gethostname(), pid, _process_start(pid) or "?"


def claim_is_live(host: str, pid: int, process_start: str, expires: float) -> bool:
    if host != socket.gethostname():
        return time.time() < expires
    return _process_start(pid) == process_start


def loads(text: str | None) -> dict | None:
    return json.loads(text) if text is not None else None
