"""Running an experiment's sweep: one engine process per run, each stored as it finishes."""

from __future__ import annotations

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
from locklab.model.spec import RUN_WATCHDOG_S, ConfigKey, Configuration
from locklab.printable import printable
from locklab.run import adaptive, machine_check
from locklab.run.engine import Engine
from locklab.run.outcome import EXIT_USAGE, EngineOutcome
from locklab.store import Experiment, Run, Store

STATUS_WORDS = {
    "violation": "correctness violation",
    "sanitizer": "sanitizer report",
    "watchdog": f"deadlock (watchdog: no acquisition for {RUN_WATCHDOG_S:g} s)",
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


def describe(config: Configuration, swept: set[str]) -> str:
    """The variant and the axes that vary in this sweep: enough to tell the runs apart."""
    shown = [f"{axis}={value}" for axis, value in config.axes if axis in swept]
    return printable(" ".join([config.variant.label, *shown]))


def run_sweep(
    engine: Engine, store: Store, experiment: Experiment, console: Console
) -> SweepOutcome:
    """Run what is missing of ``experiment``, in its interleaved order. A variant whose run
    fails (violation, deadlock) is not run again in this sweep; the others go on. Each run is
    claimed in the store before it starts, so a second process resuming the same experiment
    at the same time measures only what this one has not taken."""
    try:
        return _run_sweep(engine, store, experiment, console)
    finally:
        store.release_claims(experiment)


def _run_sweep(
    engine: Engine, store: Store, experiment: Experiment, console: Console
) -> SweepOutcome:
    spec = experiment.spec
    schedule = spec.schedule()
    done = store.finished(experiment)
    todo = [(config, repeat) for config, repeat in schedule if (config.key, repeat) not in done]
    outcome = SweepOutcome(planned=len(schedule), already_done=len(schedule) - len(todo))
    settled_from = spec.min_repeat if spec.repeat_auto else spec.repeat
    open_keys: set[ConfigKey] | None = None  # None: every configuration still runs
    failed: set[str] = set()
    version, commit = provenance.version(), provenance.commit()
    check = machine_check.stored_facts()  # kept with each run, for the table's summary line
    per_run_s = spec.expected_run_s()
    swept = {axis for axis, values in spec.sweep.items() if len(values) > 1} | {"nwriters"}
    columns = (
        TextColumn("{task.fields[current]:<32}", markup=False),
        BarColumn(),
        TextColumn("{task.fields[runs]}", markup=False),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    # No auto-refresh: its thread would wake 10 times a second during the measurements, taking
    # a core from the lock under test. The bar is redrawn between runs only.
    with Progress(*columns, console=console, auto_refresh=False) as progress:
        task = progress.add_task(
            "sweep", total=len(todo) * per_run_s, current="", runs=_runs_text(outcome)
        )
        current_round = -1
        for config, repeat in todo:
            if repeat != current_round:
                current_round = repeat
                if repeat >= settled_from:  # adaptive: only the configurations still open
                    runs = store.runs(experiment, with_results=False)
                    open_keys = adaptive.open_configurations(spec, runs, spec.precision)
            if open_keys is not None and config.key not in open_keys:
                outcome.settled += 1
                progress.update(task, advance=per_run_s, refresh=True)
                continue
            progress.update(task, current=f"{describe(config, swept)} #{repeat + 1}", refresh=True)
            if config.variant.label in failed:
                outcome.skipped += 1
                progress.update(task, advance=per_run_s, refresh=True)
                continue
            if not store.claim(experiment, config.key, repeat, spec.run_timeout_s()):
                outcome.taken += 1
                progress.update(task, advance=per_run_s, refresh=True)
                continue
            result = engine.measure(spec, config, repeat)
            store.add_run(experiment, stored_run(config, repeat, result, check), result.command,
                          version, commit)  # fmt: skip
            outcome.ran += 1
            progress.update(task, runs=_runs_text(outcome), advance=per_run_s, refresh=True)
            if result.exit_code == EXIT_USAGE:
                raise LocklabError(
                    f"the engine refused {describe(config, swept)}: {result.error_line()}"
                )
            if result.status != "ok":
                failed.add(config.variant.label)
                outcome.failures.append(
                    f"{config.variant.label}: {STATUS_WORDS.get(result.status, result.status)} at "
                    f"{describe(config, swept)} (repeat {repeat + 1}): {result.error_line()}; "
                    "its remaining runs were skipped"
                )
    return outcome


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
