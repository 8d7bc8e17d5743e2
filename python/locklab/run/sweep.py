"""Running an experiment's sweep: one engine process per run, each stored as it finishes."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from locklab import provenance
from locklab.errors import LocklabError
from locklab.model.cells import ConfigKey
from locklab.model.spec import Configuration, ExperimentSpec
from locklab.printable import printable
from locklab.run import adaptive, machine_check
from locklab.run.engine import Engine, RunningEngine, wait_for_one
from locklab.run.lifetime import STOP_SIGNALS, holding_stops, raise_if_stopped
from locklab.run.outcome import EXIT_USAGE, EngineOutcome
from locklab.run.replay import build_identity, replay_command, replayable
from locklab.run.simulator import simulated_runs_at_once
from locklab.store import DB_NAME, Experiment, Run, Store

STATUS_WORDS = {
    "violation": "correctness violation",
    "sanitizer": "sanitizer report",
    "watchdog": "deadlock or no progress (watchdog)",
    "timeout": "hung (killed at its time limit)",
    "error": "failed",
}


@dataclass
class SweepOutcome:
    planned: int
    already_done: int
    ran: int = 0
    skipped: int = 0
    settled: int = 0  # runs not needed: --repeat auto had settled their configuration
    taken: int = 0  # runs another process (a second resume) had claimed or finished
    failures: list[str] = field(default_factory=list)  # one line per failed variant
    replays: list[str] = field(default_factory=list)  # the command that replays each, simulated


def describe(config: Configuration, swept: set[str]) -> str:
    """The variant and the axes that vary in this sweep: enough to tell the runs apart."""
    shown = [f"{axis}={value}" for axis, value in config.axes if axis in swept]
    return printable(" ".join([config.variant.label, *shown]))


def swept_axes(spec: ExperimentSpec) -> set[str]:
    """The axes that tell this sweep's runs apart, for `describe`."""
    return {axis for axis, values in spec.sweep.items() if len(values) > 1} | {"nwriters"}


def run_sweep(
    engine: Engine,
    store: Store,
    experiment: Experiment,
    console: Console,
    extra: list[tuple[Configuration, int]] | None = None,
) -> SweepOutcome:
    """Run what is missing of ``experiment``, in its interleaved order, or the ``extra`` runs
    past its plan that settle its verdicts (run/settle.py). A variant whose run fails
    (violation, deadlock) is not run again in this sweep; the others go on. Each run is
    claimed in the store before it starts, so a second process resuming the same experiment
    at the same time measures only what this one has not taken. Measured runs go one at a
    time; simulated ones, one per CPU here at a time, stored in the order they started."""
    try:
        return _Sweep(engine, store, experiment, console, extra).run()
    finally:
        store.release_claims(experiment)


def runs_at_once(spec: ExperimentSpec) -> int:
    """How many of the spec's runs a sweep keeps going at once: one measured run at a time,
    and, for the simulator, one per CPU here."""
    simulated = spec.sim_machine and not spec.program and spec.source != "guest"
    return simulated_runs_at_once() if simulated else 1


@dataclass
class _Started:
    config: Configuration
    repeat: int
    running: RunningEngine
    result: EngineOutcome | None = None  # once it has ended


class _Sweep:
    def __init__(
        self,
        engine: Engine,
        store: Store,
        experiment: Experiment,
        console: Console,
        extra: list[tuple[Configuration, int]] | None,
    ) -> None:
        self.engine, self.store, self.experiment, self.console = engine, store, experiment, console
        spec = self.spec = experiment.spec
        schedule = spec.schedule() if extra is None else extra
        done = store.finished(experiment)
        self.todo = [(config, repeat) for config, repeat in schedule
                     if (config.key, repeat) not in done]  # fmt: skip
        self.outcome = SweepOutcome(planned=len(schedule),
                                    already_done=len(schedule) - len(self.todo))  # fmt: skip
        # The round from which --repeat auto runs only open configurations; never, for extras.
        self.settled_from = (
            sys.maxsize if extra is not None else spec.min_repeat if spec.repeat_auto
            else spec.repeat
        )  # fmt: skip
        self.open_keys: set[ConfigKey] | None = None  # None: every configuration still runs
        self.current_round = -1
        self.failed: set[str] = set()  # variants with a failed run stored
        self.failing: set[str] = set()  # and with one ended, stored or not yet
        self.version, self.commit = provenance.version(), provenance.commit()
        self.check = machine_check.stored_facts()  # kept with each run, for the table's summary
        self.per_run_s = spec.expected_run_s()
        self.swept = swept_axes(spec)

    def run(self) -> SweepOutcome:
        columns = (
            TextColumn("{task.fields[current]:<32}", markup=False),
            BarColumn(),
            TextColumn("{task.fields[runs]}", markup=False),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
        )
        # No auto-refresh: its thread would wake 10 times a second during the measurements,
        # taking a core from the lock under test. The bar is redrawn between runs only.
        with Progress(*columns, console=self.console, auto_refresh=False) as progress:
            self.progress = progress
            self.task = progress.add_task("sweep", total=len(self.todo) * self.per_run_s,
                                          current="", runs=_runs_text(self.outcome))  # fmt: skip
            at_once = runs_at_once(self.spec)
            if at_once > 1:
                self._several_at_a_time(at_once)
            else:
                for config, repeat in self.todo:
                    self._enter_round(repeat)
                    if self._to_run(config, repeat):
                        self._store(config, repeat, self.engine.measure(self.spec, config, repeat))
        return self.outcome

    def _several_at_a_time(self, at_once: int) -> None:
        """Simulated runs, up to `at_once` under way; each stored once those started before it
        are, so the store holds what one at a time stores, in the same order. A round of
        --repeat auto waits for the runs before it: its open configurations are read from
        them."""
        started: list[_Started] = []
        waiting = list(reversed(self.todo))
        try:
            while waiting or started:
                while waiting and sum(run.result is None for run in started) < at_once:
                    config, repeat = waiting[-1]
                    if repeat != self.current_round and repeat >= self.settled_from and started:
                        break  # the round's open configurations need every earlier run stored
                    waiting.pop()
                    self._enter_round(repeat)
                    if self._to_run(config, repeat):
                        with holding_stops():  # until the run is in `started`, for the finally
                            running = self.engine.start_measure(self.spec, config, repeat)
                            started.append(_Started(config, repeat, running))
                        raise_if_stopped()
                if any(run.result is None for run in started):
                    self._wait_for_one(started)
                while started and started[0].result is not None:
                    first = started.pop(0)
                    if first.config.variant.label in self.failed:  # after its failure
                        self._skip()
                    else:
                        self._store(first.config, first.repeat, first.result)
        finally:  # Ctrl-C or a refused run: no simulation goes on without us
            for run in started:
                if run.result is None:
                    run.running.discard()
            for run in started:  # ended: kept in order, as one at a time would have kept them
                label = run.config.variant.label
                if (run.result is None or label in self.failed
                        or -run.result.exit_code in STOP_SIGNALS):  # fmt: skip
                    continue
                self._keep(run.config, run.repeat, run.result)
                if run.result.status != "ok":
                    self.failed.add(label)

    def _wait_for_one(self, started: list[_Started]) -> None:
        """Until one more of the runs under way has ended (or been killed at its time limit).
        A failure stops the variant's runs from starting: each not yet started comes after it."""
        while True:
            raise_if_stopped()  # before a run a stop signal killed can be taken for a failure
            ended = False
            for run in started:
                if run.result is None and run.running.done():
                    run.result = run.running.outcome()
                    ended = True
                    if run.result.status != "ok":
                        self.failing.add(run.config.variant.label)
            if ended:
                return
            wait_for_one([run.running for run in started if run.result is None])

    def _enter_round(self, repeat: int) -> None:
        """`repeat`'s round: with --repeat auto, from the minimum on, only the configurations
        still open run."""
        if repeat != self.current_round:
            self.current_round = repeat
            if repeat >= self.settled_from:
                runs = self.store.runs(self.experiment, with_results=False)
                self.open_keys = adaptive.open_configurations(self.spec, runs, self.spec.precision)

    def _to_run(self, config: Configuration, repeat: int) -> bool:
        """Whether this run is measured (claimed) now, or counted as settled, skipped or taken."""
        outcome = self.outcome
        if self.open_keys is not None and config.key not in self.open_keys:
            outcome.settled += 1
            self._advance()
            return False
        self.progress.update(self.task, current=f"{describe(config, self.swept)} #{repeat + 1}",
                             refresh=True)  # fmt: skip
        if config.variant.label in self.failed | self.failing:
            self._skip()
            return False
        if not self.store.claim(self.experiment, config.key, repeat, self.spec.run_timeout_s()):
            outcome.taken += 1
            self._advance()
            return False
        return True

    def _skip(self) -> None:
        self.outcome.skipped += 1
        self._advance()

    def _advance(self) -> None:
        """The bar past a run, measured or not."""
        self.progress.update(self.task, advance=self.per_run_s, refresh=True)

    def _keep(self, config: Configuration, repeat: int, result: EngineOutcome) -> None:
        if self.spec.source == "locklab-bench" and not self.spec.program:  # the engine's run
            result.result = {**(result.result or {}), "replay": build_identity(result.command)}
        self.store.add_run(self.experiment, stored_run(config, repeat, result, self.check),
                           result.command, self.version, self.commit)  # fmt: skip
        self.outcome.ran += 1
        self.progress.update(self.task, runs=_runs_text(self.outcome))
        self._advance()

    def _store(self, config: Configuration, repeat: int, result: EngineOutcome) -> None:
        """Kept, and judged: a refused run ends the sweep, a failed one its variant's runs."""
        self._keep(config, repeat, result)
        if result.exit_code == EXIT_USAGE:
            raise LocklabError(
                f"the engine refused {describe(config, self.swept)}: {result.error_line()}"
            )
        label = config.variant.label
        if result.status != "ok":  # never after another of its failures: those are skipped
            self.failed.add(label)
            self.outcome.failures.append(
                f"{label}: {STATUS_WORDS.get(result.status, result.status)} at "
                f"{describe(config, self.swept)} (repeat {repeat + 1}): {result.error_line()}; "
                "its remaining runs were skipped"
            )
            replay = (result.result or {}).get("replay")  # kept by _keep for engine runs
            if replay is not None and replayable(self.spec):
                store = self.store.path.resolve()
                folder = store.parent if store.name == DB_NAME else store
                self.outcome.replays.append(
                    replay_command(self.spec, config, repeat, replay, folder)
                )


def stored_run(
    config: Configuration, repeat: int, result: EngineOutcome, check: dict | None = None
) -> Run:
    """What the store keeps of one engine process; ``check``: the machine check's facts, kept
    with the engine's machine facts."""
    ok = result.status == "ok"
    machine = (result.result or {}).get("machine")
    if isinstance(machine, dict) and check is not None:
        machine = {**machine, "check": check}
    return Run(
        config.key, repeat, result.status, result.exit_code,
        (result.result or {}).get("throughput_ops_per_s") if ok else None,
        None if ok else result.error_line(), result.result,
        machine, result.wall_s,
    )  # fmt: skip


def _runs_text(outcome: SweepOutcome) -> str:
    return f"{outcome.already_done + outcome.ran}/{outcome.planned} runs"
