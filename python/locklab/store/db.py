"""The results store: one SQLite file, ``locklab.db``, in the store directory.

Every run is committed the moment it finishes, with the engine's full JSON, so an interrupted
sweep (Ctrl-C, kill, power) keeps everything measured before it. Experiments carry a UUID so a
store copied from another machine can be merged without clashes; each run keeps the machine
facts its engine reported.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from locklab import provenance
from locklab.errors import LocklabError
from locklab.model.cells import ConfigKey
from locklab.model.spec import ExperimentSpec
from locklab.store import mirror
from locklab.store.sqlite import (
    SCHEMA,
    SCHEMA_VERSION,
    claim_is_live,
    connect,
    loads,
    this_process,
)

DB_NAME = "locklab.db"


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
    command: str = ""  # the command line that made it, where a command line did


@dataclass
class Run:
    config_key: ConfigKey  # stored as its text, label|axis=value,...
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
    def __init__(self, location: Path, create: bool = True, read_only: bool = False) -> None:
        """``location`` is a store directory, or a ``locklab.db`` copied from elsewhere. A
        read-only store is opened without writing anything, so a store on read-only media, or
        one the user may not write, can still be listed, tabulated and exported."""
        path = location if location.suffix == ".db" or location.is_file() else location / DB_NAME
        if not path.exists():
            if not create or read_only:
                raise LocklabError(f"no results store at {location} (no {DB_NAME} there)")
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise LocklabError(
                    f"cannot create the results store {location}: {error.strerror}"
                ) from None
        self.path = path
        self.read_only = read_only
        try:
            self.db = connect(path, read_only)
            if read_only:
                self._check_schema()
            else:
                self.db.execute("PRAGMA journal_mode = WAL")
                self._migrate()
        except sqlite3.OperationalError as error:
            raise LocklabError(f"{path}: cannot open the results store ({error})") from None
        except sqlite3.DatabaseError as error:
            raise LocklabError(f"{path}: not a locklab results store ({error})") from None

    def close(self) -> None:
        self.db.close()

    def _check_schema(self) -> None:
        tables = {row[0] for row in self.db.execute("SELECT name FROM sqlite_master")}
        if not {"meta", "experiments", "runs"} <= tables:
            raise LocklabError(f"{self.path}: not a locklab results store (no locklab tables)")
        row = self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if row is not None and int(row[0]) > SCHEMA_VERSION:
            raise LocklabError(
                f"{self.path}: store schema {row[0]} is newer than this locklab's "
                f"({SCHEMA_VERSION}); update locklab"
            )

    def _migrate(self) -> None:
        tables = {row[0] for row in self.db.execute("SELECT name FROM sqlite_master")}
        if "meta" in tables:
            self._check_schema()
        # Idempotent (IF NOT EXISTS): schema 2 only added the claims table.
        self.db.executescript(SCHEMA)
        self.db.execute(
            "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
        )

    @contextmanager
    def transaction(self) -> Iterator[None]:
        if self.read_only:
            raise LocklabError(f"{self.path}: opened read-only")
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            raise LocklabError(f"{self.path}: cannot write the results store ({error})") from None
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        try:
            self.db.execute("COMMIT")
        except sqlite3.OperationalError as error:
            raise LocklabError(f"{self.path}: cannot write the results store ({error})") from None

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
                    json.dumps(_spec_with_command(spec.to_dict(), provenance.command())),
                    host,
                    version,
                    commit,
                ),
            )
        assert cursor.lastrowid is not None
        experiment = self.experiment(str(cursor.lastrowid))
        mirror.emit(_experiment_event(experiment, None))
        return experiment

    def experiments(self) -> list[Experiment]:
        rows = self.db.execute(f"SELECT {_EXPERIMENT_COLUMNS} FROM experiments ORDER BY id")
        return [_experiment(row) for row in rows]

    def experiment(self, ref: str) -> Experiment:
        """By id (``3``, ``#3``), by UUID, or by name (the newest of that name)."""
        ref = ref.removeprefix("#")
        if _is_uuid(ref):
            row = self.db.execute(
                f"SELECT {_EXPERIMENT_COLUMNS} FROM experiments WHERE uuid = ?", (ref,)
            ).fetchone()
        elif ref.isdigit():
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
        row = (
            str(run.config_key),
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
        )
        with self.transaction():
            self.db.execute(_INSERT_RUN, (experiment.id, *row))
            self.db.execute(
                "DELETE FROM claims WHERE experiment_id = ? AND config_key = ? AND repeat = ?",
                (experiment.id, str(run.config_key), run.repeat),
            )
            if experiment.host is None and run.machine is not None:
                experiment.host = run.machine.get("hostname")
                self.db.execute(
                    "UPDATE experiments SET host = ? WHERE id = ?", (experiment.host, experiment.id)
                )
        mirror.emit(_run_event(experiment.uuid, row))

    def runs(self, experiment: Experiment, with_results: bool = True) -> list[Run]:
        result_column = "result_json" if with_results else "NULL"
        rows = self.db.execute(
            "SELECT config_key, repeat, status, exit_code, throughput_ops_per_s, error,"
            f" {result_column}, machine_json, wall_s FROM runs WHERE experiment_id = ? ORDER BY id",
            (experiment.id,),
        )
        return [
            Run(
                ConfigKey.parse(key),
                repeat,
                status,
                code,
                ops,
                error,
                loads(result),
                loads(machine),
                wall,
            )  # fmt: skip
            for key, repeat, status, code, ops, error, result, machine, wall in rows
        ]

    def finished(self, experiment: Experiment) -> set[tuple[ConfigKey, int]]:
        """(config_key, repeat) of every successful run: what a resume does not redo."""
        rows = self.db.execute(
            "SELECT config_key, repeat FROM runs WHERE experiment_id = ? AND status = 'ok'",
            (experiment.id,),
        )
        return {(ConfigKey.parse(key), repeat) for key, repeat in rows}

    # -- mirrored from remote hosts (--hosts; see mirror.py) -----------------------------------
    def announce(self, experiment: Experiment, planned: int) -> None:
        """Mirror the experiment a sweep starts on, and every run it has: a resumed experiment
        replays what the local store may have missed."""
        if not mirror.active():
            return
        mirror.emit(_experiment_event(experiment, planned))
        rows = self.db.execute(
            f"SELECT {_RUN_COLUMNS} FROM runs WHERE experiment_id = ? ORDER BY id",
            (experiment.id,),
        )
        for row in rows.fetchall():
            mirror.emit(_run_event(experiment.uuid, row))

    def mirrored_experiment(self, event: dict, alias: str) -> Experiment:
        """The local copy of a host's experiment, made on its first event: its UUID, its name
        with "@ALIAS", the host's alias, origin "ssh ALIAS"."""
        row = self.db.execute("SELECT id FROM experiments WHERE uuid = ?", (event["uuid"],))
        found = row.fetchone()
        if found is not None:
            return self.experiment(str(found[0]))
        with self.transaction():
            cursor = self.db.execute(
                "INSERT INTO experiments (uuid, name, created, spec_json, host, origin,"
                " locklab_version, locklab_commit) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    event["uuid"], f"{event['name']}@{alias}", event["created"],
                    json.dumps(event["spec"]), alias, f"ssh {alias}",
                    event["locklab_version"], event["locklab_commit"],
                ),
            )  # fmt: skip
        return self.experiment(str(cursor.lastrowid))

    def mirrored_run(self, experiment: Experiment, event: dict) -> bool:
        """Store a host's run unless it is here already (a replay): whether it was new."""
        rows = self.db.execute(
            "SELECT config_key, repeat, status, finished FROM runs WHERE experiment_id = ?"
            " AND config_key = ? AND repeat = ?",
            (experiment.id, event["config_key"], event["repeat"]),
        )
        if mirror.run_identity(event) in set(rows.fetchall()):
            return False
        with self.transaction():
            self.db.execute(_INSERT_RUN, (experiment.id, *(event[f] for f in _RUN_FIELDS)))
        return True

    def set_host_facts(self, experiment: Experiment, alias: str, facts: dict) -> None:
        with self.transaction():
            self.db.execute(
                "INSERT OR REPLACE INTO host_facts VALUES (?, ?, ?)",
                (experiment.id, alias, json.dumps(facts)),
            )

    def host_facts(self, experiment: Experiment) -> tuple[str, dict] | None:
        """(alias, facts) of an experiment measured on a remote host, else None."""
        try:
            row = self.db.execute(
                "SELECT alias, facts_json FROM host_facts WHERE experiment_id = ?",
                (experiment.id,),
            ).fetchone()
        except sqlite3.OperationalError:  # a read-only store older than schema 3
            return None
        return None if row is None else (row[0], json.loads(row[1]))

    # -- claims --------------------------------------------------------------------------------
    def claim(
        self, experiment: Experiment, config_key: ConfigKey, repeat: int, hold_s: float
    ) -> bool:
        """Take (configuration, repeat) for this process, unless it is finished or another live
        process holds it. Claims from another host count as live until they expire (hold_s
        from now: the run's own time limit), as that host's processes cannot be checked."""
        me = this_process()
        key = str(config_key)
        with self.transaction():
            if self.db.execute(
                "SELECT 1 FROM runs WHERE experiment_id = ? AND config_key = ? AND repeat = ?"
                " AND status = 'ok'",
                (experiment.id, key, repeat),
            ).fetchone():
                return False
            holder = self.db.execute(
                "SELECT host, pid, process_start, expires FROM claims WHERE experiment_id = ?"
                " AND config_key = ? AND repeat = ?",
                (experiment.id, key, repeat),
            ).fetchone()
            if holder is not None and claim_is_live(*holder) and tuple(holder[:3]) != me:
                return False
            self.db.execute(
                "INSERT OR REPLACE INTO claims VALUES (?, ?, ?, ?, ?, ?, ?)",
                (experiment.id, key, repeat, *me, time.time() + hold_s),
            )
        return True

    def release_claims(self, experiment: Experiment) -> None:
        """Give back this process's unfinished claims (an interrupted sweep)."""
        host, pid, start = this_process()
        with self.transaction():
            self.db.execute(
                "DELETE FROM claims WHERE experiment_id = ? AND host = ? AND pid = ? AND"
                " process_start = ?",
                (experiment.id, host, pid, start),
            )

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
                    f"SELECT {_RUN_COLUMNS} FROM runs WHERE experiment_id = ? ORDER BY id",
                    (experiment.id,),
                )
                self.db.executemany(_INSERT_RUN, [(new_id, *row) for row in rows])
            imported.append(self.experiment(str(new_id)))
        return imported, present


_EXPERIMENT_COLUMNS = (
    "id, uuid, name, created, spec_json, host, origin, locklab_version, locklab_commit"
)
# A run's columns but its experiment, in the order a mirrored run's event names them.
_RUN_FIELDS = (
    "config_key", "repeat", "status", "exit_code", "throughput_ops_per_s", "error",
    "command_json", "result_json", "machine_json", "wall_s", "finished", "locklab_version",
    "locklab_commit",
)  # fmt: skip
_RUN_COLUMNS = ", ".join(_RUN_FIELDS)
_INSERT_RUN = (
    f"INSERT INTO runs (experiment_id, {_RUN_COLUMNS})"
    f" VALUES ({', '.join('?' * (len(_RUN_FIELDS) + 1))})"
)


def _is_uuid(text: str) -> bool:
    try:
        return str(uuid.UUID(text)) == text.lower()
    except ValueError:
        return False


def _spec_with_command(spec: dict, command: str) -> dict:
    """The stored plan, with the command line beside it (not part of it: a campaign resumed
    from another folder is the same plan)."""
    return {**spec, "command": command} if command else spec


def _experiment_event(experiment: Experiment, planned: int | None) -> dict:
    return {
        "event": "experiment", "uuid": experiment.uuid, "name": experiment.name,
        "created": experiment.created,
        "spec": _spec_with_command(experiment.spec.to_dict(), experiment.command),
        "host": experiment.host, "locklab_version": experiment.locklab_version,
        "locklab_commit": experiment.locklab_commit, "planned": planned,
    }  # fmt: skip


def _run_event(experiment_uuid: str, row: tuple) -> dict:
    fields = dict(zip(_RUN_FIELDS, row, strict=True))
    return {"event": "run", "experiment": experiment_uuid, **fields}


def _experiment(row: tuple) -> Experiment:
    id_, uuid_, name, created, spec_json, host, origin, version, commit = row
    data = json.loads(spec_json)
    spec = ExperimentSpec.from_dict(data)
    return Experiment(id_, uuid_, name, created, spec, host, origin, version, commit,
                      str(data.get("command", "")))  # fmt: skip
