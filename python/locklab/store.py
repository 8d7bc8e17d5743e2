"""The results store: one SQLite file, ``locklab.db``, in the store directory.

Every run is committed the moment it finishes, with the engine's full JSON, so an interrupted
sweep (Ctrl-C, kill, power) keeps everything measured before it. Experiments carry a UUID so a
store copied from another machine can be merged without clashes; each run keeps the machine
facts its engine reported.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from locklab.errors import LocklabError
from locklab.experiment import ExperimentSpec

SCHEMA_VERSION = 1
DB_NAME = "locklab.db"

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
"""


@dataclass
class Experiment:
    id: int
    uuid: str
    name: str
    created: str
    spec: ExperimentSpec
    host: str | None
    origin: str
    locklab_version: str
    locklab_commit: str | None


@dataclass
class Run:
    config_key: str
    repeat: int
    status: str
    exit_code: int
    throughput_ops_per_s: float | None
    error: str | None
    result: dict | None
    machine: dict | None
    wall_s: float


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Store:
    def __init__(self, location: Path, create: bool = True) -> None:
        """``location`` is a store directory, or a ``locklab.db`` copied from elsewhere."""
        path = location if location.suffix == ".db" or location.is_file() else location / DB_NAME
        if not path.exists():
            if not create:
                raise LocklabError(f"no results store at {location} (no {DB_NAME} there)")
            path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        try:
            self.db = sqlite3.connect(path, isolation_level=None)
            self.db.execute("PRAGMA foreign_keys = ON")
            self.db.execute("PRAGMA journal_mode = WAL")
            self._migrate()
        except sqlite3.DatabaseError as error:
            raise LocklabError(f"{path}: not a locklab results store ({error})") from None

    def close(self) -> None:
        self.db.close()

    def _migrate(self) -> None:
        tables = {row[0] for row in self.db.execute("SELECT name FROM sqlite_master")}
        if "meta" in tables:
            row = self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if row is not None and int(row[0]) > SCHEMA_VERSION:
                raise LocklabError(
                    f"{self.path}: store schema {row[0]} is newer than this locklab's "
                    f"({SCHEMA_VERSION}); update locklab"
                )
        # Idempotent (IF NOT EXISTS); schema 2 will add its ALTERs here, keyed on the old version.
        self.db.executescript(SCHEMA)
        self.db.execute(
            "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
        )

    @contextmanager
    def transaction(self) -> Iterator[None]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # -- experiments ---------------------------------------------------------------------------
    def create_experiment(
        self, spec: ExperimentSpec, host: str, version: str, commit: str | None
    ) -> Experiment:
        with self.transaction():
            cursor = self.db.execute(
                "INSERT INTO experiments (uuid, name, created, spec_json, host, locklab_version,"
                " locklab_commit) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    str(uuid.uuid4()),
                    spec.name,
                    _now(),
                    json.dumps(spec.to_dict()),
                    host,
                    version,
                    commit,
                ),
            )
        assert cursor.lastrowid is not None
        return self.experiment(str(cursor.lastrowid))

    def experiments(self) -> list[Experiment]:
        rows = self.db.execute(f"SELECT {_EXPERIMENT_COLUMNS} FROM experiments ORDER BY id")
        return [_experiment(row) for row in rows]

    def experiment(self, ref: str) -> Experiment:
        """By id (``3``, ``#3``) or by name (the newest of that name)."""
        ref = ref.removeprefix("#")
        if ref.isdigit():
            row = self.db.execute(
                f"SELECT {_EXPERIMENT_COLUMNS} FROM experiments WHERE id = ?", (int(ref),)
            ).fetchone()
        else:
            row = self.db.execute(
                f"SELECT {_EXPERIMENT_COLUMNS} FROM experiments WHERE name = ? "
                "ORDER BY id DESC LIMIT 1",
                (ref,),
            ).fetchone()
        if row is None:
            raise LocklabError(f"no experiment '{ref}' in {self.path} (see 'locklab results')")
        return _experiment(row)

    # -- runs ----------------------------------------------------------------------------------
    def add_run(
        self,
        experiment: Experiment,
        run: Run,
        command: list[str],
        version: str,
        commit: str | None,
    ) -> None:
        """Write one finished run and commit it at once."""
        with self.transaction():
            self.db.execute(
                "INSERT INTO runs (experiment_id, config_key, repeat, status, exit_code,"
                " throughput_ops_per_s, error, command_json, result_json, machine_json, wall_s,"
                " finished, locklab_version, locklab_commit)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    experiment.id,
                    run.config_key,
                    run.repeat,
                    run.status,
                    run.exit_code,
                    run.throughput_ops_per_s,
                    run.error,
                    json.dumps(command),
                    json.dumps(run.result) if run.result is not None else None,
                    json.dumps(run.machine) if run.machine is not None else None,
                    run.wall_s,
                    _now(),
                    version,
                    commit,
                ),
            )
            if experiment.host is None and run.machine is not None:
                experiment.host = run.machine.get("hostname")
                self.db.execute(
                    "UPDATE experiments SET host = ? WHERE id = ?", (experiment.host, experiment.id)
                )

    def runs(self, experiment: Experiment, with_results: bool = True) -> list[Run]:
        result_column = "result_json" if with_results else "NULL"
        rows = self.db.execute(
            "SELECT config_key, repeat, status, exit_code, throughput_ops_per_s, error,"
            f" {result_column}, machine_json, wall_s FROM runs WHERE experiment_id = ? ORDER BY id",
            (experiment.id,),
        )
        return [
            Run(key, repeat, status, code, ops, error, _loads(result), _loads(machine), wall)
            for key, repeat, status, code, ops, error, result, machine, wall in rows
        ]

    def finished(self, experiment: Experiment) -> set[tuple[str, int]]:
        """(config_key, repeat) of every successful run: what a resume does not redo."""
        rows = self.db.execute(
            "SELECT config_key, repeat FROM runs WHERE experiment_id = ? AND status = 'ok'",
            (experiment.id,),
        )
        return {(key, repeat) for key, repeat in rows}

    # -- merge ---------------------------------------------------------------------------------
    def merge(self, other: Store) -> tuple[list[Experiment], list[Experiment]]:
        """Copy in every experiment of ``other`` not already here (same UUID), with all its runs
        and machine facts. Returns (imported, already present)."""
        imported, present = [], []
        for experiment in other.experiments():
            exists = self.db.execute(
                "SELECT 1 FROM experiments WHERE uuid = ?", (experiment.uuid,)
            ).fetchone()
            if exists:
                present.append(experiment)
                continue
            with self.transaction():
                cursor = self.db.execute(
                    "INSERT INTO experiments (uuid, name, created, spec_json, host, origin,"
                    " locklab_version, locklab_commit) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        experiment.uuid,
                        experiment.name,
                        experiment.created,
                        json.dumps(experiment.spec.to_dict()),
                        experiment.host,
                        f"merged from {other.path}"
                        if experiment.origin == "local"
                        else experiment.origin,
                        experiment.locklab_version,
                        experiment.locklab_commit,
                    ),
                )
                new_id = cursor.lastrowid
                rows = other.db.execute(
                    "SELECT config_key, repeat, status, exit_code, throughput_ops_per_s, error,"
                    " command_json, result_json, machine_json, wall_s, finished,"
                    " locklab_version, locklab_commit FROM runs WHERE experiment_id = ?"
                    " ORDER BY id",
                    (experiment.id,),
                )
                self.db.executemany(
                    "INSERT INTO runs (experiment_id, config_key, repeat, status, exit_code,"
                    " throughput_ops_per_s, error, command_json, result_json, machine_json,"
                    " wall_s, finished, locklab_version, locklab_commit)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [(new_id, *row) for row in rows],
                )
            imported.append(self.experiment(str(new_id)))
        return imported, present


_EXPERIMENT_COLUMNS = (
    "id, uuid, name, created, spec_json, host, origin, locklab_version, locklab_commit"
)


def _experiment(row: tuple) -> Experiment:
    id_, uuid_, name, created, spec_json, host, origin, version, commit = row
    spec = ExperimentSpec.from_dict(json.loads(spec_json))
    return Experiment(id_, uuid_, name, created, spec, host, origin, version, commit)


def _loads(text: str | None) -> dict | None:
    return json.loads(text) if text is not None else None
