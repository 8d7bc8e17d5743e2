"""Runs of a kernel: lock compiled from commits of the user's git tree, one commit at a time:
what `locklab bisect` and `locklab history` measure with (each commit's build shared with
the commits whose locking files are the same, kernel/revisions.py); or, with `--kernel`, of
each commit's whole kernel booted with locktorture (commit_boots.py)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import astuple, dataclass, field
from pathlib import Path
from typing import Protocol

from locklab.analysis.stats import judge_change
from locklab.errors import LocklabError
from locklab.kernel.from_source import build_source_lock
from locklab.run.engine import Engine
from locklab.run.outcome import EXIT_USAGE


@dataclass(frozen=True)
class BootSettings:
    """Runs in whole kernels booted in QEMU, locktorture built in (`--kernel`)."""

    cpus: int
    accel: str  # auto | kvm | tcg
    stat_interval_s: int = 1
    warmup_reports: int = 1  # locktorture's reports dropped first: the booted warm-up


@dataclass(frozen=True)
class RunSettings:
    lock: str
    nwriters: int
    duration_s: float
    warmup_s: float
    build: str
    sim_machine: str = ""  # a flat machine file's text: simulated
    nreaders: int = 0
    boot: BootSettings | None = None  # booted kernels instead of the engine

    @property
    def threads(self) -> str:
        """The threads, as a title says them: '2 writers', '2 writers and 4 readers'."""
        writers = f"{self.nwriters} writer{'s' if self.nwriters != 1 else ''}"
        if not self.nreaders:
            return writers
        return f"{writers} and {self.nreaders} reader{'s' if self.nreaders != 1 else ''}"


@dataclass
class Side:
    """The runs of one commit: throughputs, and the first failure's line."""

    figures: list[float] = field(default_factory=list)
    failure: str | None = None
    # The commit could not be tried: it does not build. A bisect skips it, as `git bisect
    # skip` skips a commit that cannot be tested, whatever it hunts.
    untestable: bool = False


def compare_sides(before: Side, side: Side, min_effect_pct: float,
                  exact: bool) -> tuple[float, str]:  # fmt: skip
    """`side`'s change against `before` and its judgement (stats.judge_change)."""
    return judge_change(before.figures, side.figures, min_effect_pct, exact)


class Journal:
    """The runs of a bisect or a history, by key (a commit, or a step and commit), in a JSON
    file of the store named after what was asked (`kind`, `identity`): what resumes it."""

    def __init__(self, folder: Path, kind: str, identity: list[object],
                 settings: RunSettings) -> None:  # fmt: skip
        machine = hashlib.sha256(settings.sim_machine.encode()).hexdigest()
        # Older journals had neither readers nor boots: their keys stay as they were.
        readers = [settings.nreaders] if settings.nreaders else []
        boot = [astuple(settings.boot)] if settings.boot else []
        text = json.dumps([*identity, settings.lock, settings.nwriters, settings.duration_s,
                           settings.warmup_s, settings.build, machine, *readers, *boot],
                          default=str)  # fmt: skip
        self.kind = kind
        self.path = folder / f"{kind}-{hashlib.sha256(text.encode()).hexdigest()[:16]}.json"
        self.data: dict[str, dict] = {}
        if self.path.is_file():
            try:
                self.data = json.loads(self.path.read_text())
            except ValueError:
                raise LocklabError(f"{kind}: {self.path} is not a journal (remove it to start "
                                   "over)") from None  # fmt: skip

    def side(self, key: str) -> Side:
        stored = self.data.get(key, {})
        return Side(list(stored.get("figures", [])), stored.get("failure"),
                    bool(stored.get("untestable", False)))  # fmt: skip

    def keep(self, key: str, side: Side) -> None:
        self.data[key] = {"figures": side.figures, "failure": side.failure,
                          "untestable": side.untestable}  # fmt: skip
        partial = self.path.with_suffix(".partial")
        partial.write_text(json.dumps(self.data, indent=1) + "\n")
        partial.replace(self.path)


class Runner(Protocol):
    def run_once(self, commit: str, side: Side) -> None: ...


def commit_runner(top: Path, settings: RunSettings, engine: Engine) -> Runner:
    """What runs a commit: its lock compiled into the engine, or its whole kernel booted."""
    if settings.boot is not None:
        from locklab.run.commit_boots import BootedCommitRunner

        return BootedCommitRunner(top, settings)
    return CommitRunner(top, settings, engine)


def not_built(commit: str, side: Side, error: LocklabError) -> None:
    """`commit` does not build: its side says so, and that it cannot be tried."""
    side.failure = f"does not build at {commit[:12]}: {error}"[:300]
    side.untestable = True


class CommitRunner:
    def __init__(self, top: Path, settings: RunSettings, engine: Engine) -> None:
        self.top = top
        self.settings = settings
        self.engine = engine
        self.plugins: dict[str, str] = {}
        self.proven = False  # a run with these settings went through: they are not at fault

    def plugin(self, commit: str) -> str:
        if commit not in self.plugins:
            s = self.settings
            built = build_source_lock(s.lock, commit[:12], [], s.build, self.engine.path,
                                      self.top, s.sim_machine, commit)  # fmt: skip
            self.plugins[commit] = str(built.plugin)
        return self.plugins[commit]

    def run_once(self, commit: str, side: Side) -> None:
        """One run of the lock at `commit`: its throughput, or its failure's line."""
        s = self.settings
        try:
            plugin = self.plugin(commit)
        except LocklabError as error:
            return not_built(commit, side, error)
        args = ["--plugin", plugin, "--lock", s.lock, "--nwriters", str(s.nwriters),
                "--nreaders", str(s.nreaders), "--duration", str(s.duration_s), "--warmup",
                str(s.warmup_s)]  # fmt: skip
        outcome = self.engine.run(args, timeout_s=s.warmup_s + s.duration_s + 600,
                                  sim_machine=s.sim_machine)  # fmt: skip
        if outcome.exit_code == EXIT_USAGE and not self.proven:
            # Before any run went through, the run as asked is wrong, not the commit.
            raise LocklabError(f"the engine refused {s.lock} at {commit[:12]}: "
                               f"{outcome.error_line()}")  # fmt: skip
        if outcome.status == "ok" and outcome.result is not None:
            self.proven = True
            side.figures.append(float(outcome.result["throughput_ops_per_s"]))
        elif side.failure is None:  # refused after others ran (its lock's init fails): its own
            side.failure = outcome.error_line()[:300]
