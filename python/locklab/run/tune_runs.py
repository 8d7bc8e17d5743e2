"""The tuner's measurements: each round is an ordinary stored experiment, one variant per value.

A tuning is named by what it measures (lock, param and the settings of every run), so running
the same `locklab tune` command again finds the rounds it already ran: values measured in full
are reused, an interrupted round is resumed, and only what is missing is measured. The search
is a deterministic function of the measurements, so a resumed tuning ends with the same choice
as an uninterrupted one.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from rich.console import Console

from locklab import provenance
from locklab.errors import LocklabError
from locklab.model.catalogue import Catalogue
from locklab.model.spec import ExperimentSpec, Variant, Workload
from locklab.run import tune as tune_module
from locklab.run.engine import Engine
from locklab.run.sweep import run_sweep
from locklab.run.tune import Measurements
from locklab.store import Experiment, Store

EXIT_RUN_FAILED = 1


@dataclass
class StoredTuning:
    engine: Engine
    store: Store
    host: str
    console: Console
    lock: str
    param: str
    sweep: dict[str, list[int]]
    workloads: list[Workload]
    repeat: int = 3
    duration_s: float = 1.0
    warmup_s: float = 0.2
    pin: str = "compact"
    # --sim: the simulated machine (ExperimentSpec's fields of the same names).
    sim: str = ""
    sim_machine: str = ""
    rounds_run: int = 0  # rounds this process measured (reused ones not counted)
    reused: list[int] = field(default_factory=list)  # experiment ids whose runs were reused

    def spec(self, values: list[int], name: str) -> ExperimentSpec:
        variants = [Variant(f"{self.param}={v}", self.lock, ((self.param, v),)) for v in values]
        return ExperimentSpec(
            name=name, variants=variants, sweep={k: list(v) for k, v in self.sweep.items()},
            repeat=self.repeat, duration_s=self.duration_s, warmup_s=self.warmup_s,
            pin=self.pin, workloads=list(self.workloads), sim=self.sim,
            sim_machine=self.sim_machine,
        )  # fmt: skip

    @property
    def prefix(self) -> str:
        """Names of this tuning's rounds: tune-LOCK-PARAM-DIGEST-N, the digest over every
        setting that changes what a run measures."""
        settings = self.spec([], "").to_dict()
        for key in ("name", "variants", "baseline"):
            settings.pop(key)
        digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:8]
        return f"tune-{self.lock}-{self.param}-{digest}-"

    def rounds(self) -> list[Experiment]:
        return [e for e in self.store.experiments() if e.name.startswith(self.prefix)]

    def in_time(self, value: int) -> str | None:
        """`value` in ns, when the tunable counts pauses: seed 004's delays are counts of
        PAUSE, whose cost differs tenfold between cores, so the choice is given both ways."""
        per_pause = sorted(
            tunable["ns_per_pause"]
            for experiment in self.rounds()
            for run in self.store.runs(experiment)
            for tunable in ((run.result or {}).get("calibration") or {}).get("pause_tunables", [])
            if tunable.get("name") == self.param and tunable.get("ns_per_pause")
        )
        if not per_pause:
            return None
        ns = per_pause[len(per_pause) // 2]
        return f"= {value * ns:.0f} ns at {ns:.1f} ns a pause here"

    def measured(self) -> Measurements:
        """Mean throughput (kops/s) of every value measured in full at every point."""
        sums: dict = {}
        for experiment in self.rounds():
            for run in self.store.runs(experiment, with_results=False):
                if run.status == "ok" and run.throughput_ops_per_s is not None:
                    key = (int(run.config_key.label.split("=", 1)[1]), run.config_key.point)
                    sums.setdefault(key, []).append(run.throughput_ops_per_s / 1000)
        points = set(self.spec([], "").points())
        complete = {
            value
            for value, _ in sums
            if all(len(sums.get((value, p), [])) >= self.repeat for p in points)
        }
        return {
            (value, point): sum(runs[: self.repeat]) / self.repeat
            for (value, point), runs in sums.items()
            if value in complete
        }

    def evaluate(self, values: list[int]) -> Measurements:
        known = self.measured()
        missing = sorted(set(values) - {value for value, _ in known})
        if len(missing) < len(values):
            self.console.print(
                f"tune: {self.param} in {sorted(set(values) - set(missing))} measured before, "
                "reused (another --store, or other settings, to measure anew)"
            )
        if missing:
            experiment = self._round_for(missing)
            self.console.print(f"tune round: {self.param} in {missing} (#{experiment.id})")
            outcome = run_sweep(self.engine, self.store, experiment, self.console)
            self.rounds_run += 1
            if outcome.failures:
                raise LocklabError(outcome.failures[0], EXIT_RUN_FAILED)
            known = self.measured()
        return {key: mean for key, mean in known.items() if key[0] in values}

    def _round_for(self, values: list[int]) -> Experiment:
        """An interrupted round that holds these values, to resume (it runs only what it is
        missing), or a new one."""
        wanted = {f"{self.param}={v}" for v in values}
        for experiment in self.rounds():
            if wanted <= {v.label for v in experiment.spec.variants}:
                return experiment
        spec = self.spec(values, f"{self.prefix}{len(self.rounds()) + 1}")
        self.engine.check(spec)
        return self.store.create_experiment(
            spec, self.host, provenance.version(), provenance.commit()
        )


@dataclass(frozen=True)
class SearchRange:
    """The values a tuning searches: LO:HI (log-spaced grid) or LO:HI:STEP, then refinements."""

    lo: int
    hi: int
    step: int | None = None
    grid: int = 8  # coarse grid points
    rounds: int = 2  # refinement rounds

    @classmethod
    def plan(
        cls, catalogue: Catalogue, lock: str, param: str, text: str, grid: int, rounds: int
    ) -> SearchRange:
        """The range of `param` of `lock` given as LO:HI or LO:HI:STEP, checked against the
        tunable's limits."""
        info = catalogue.get(lock)
        if info is None:
            raise LocklabError(f"unknown lock '{lock}' (see 'locklab list')")
        tunable = info.tunable(param)
        if tunable is None:
            known = ", ".join(t.name for t in info.tunables) or "none"
            raise LocklabError(f"lock '{lock}' has no param '{param}' (its params: {known})")
        if tunable.choices:
            raise LocklabError(
                f"{param} is a choice ({', '.join(tunable.choices)}), not a number to tune: "
                "compare its values as variants"
            )
        parts = text.split(":")
        try:
            numbers = [int(part) for part in parts]
        except ValueError:
            raise LocklabError(f"--range: expected LO:HI or LO:HI:STEP, got '{text}'") from None
        if (
            len(numbers) not in (2, 3)
            or numbers[0] >= numbers[1]
            or (len(numbers) == 3 and numbers[2] <= 0)
        ):
            raise LocklabError(f"--range: expected LO:HI or LO:HI:STEP with LO < HI, got '{text}'")
        if numbers[0] < tunable.minimum or numbers[1] > tunable.maximum:
            raise LocklabError(
                f"--range {text}: {param} must stay in [{tunable.minimum}, {tunable.maximum}]"
            )
        if grid < 2 or rounds < 0:
            raise LocklabError("--grid must be at least 2 and --rounds at least 0")
        return cls(numbers[0], numbers[1], numbers[2] if len(numbers) == 3 else None, grid, rounds)


def workload(text: str) -> Workload:
    """NAME:HOLD_NS:GAP_NS, a named (hold, gap) point."""
    name, _, rest = text.partition(":")
    hold, _, gap = rest.partition(":")
    try:
        return Workload(name, (("hold_ns", int(hold)), ("gap_ns", int(gap))))
    except ValueError:
        raise LocklabError(f"--workload: expected NAME:HOLD_NS:GAP_NS, got '{text}'") from None


def tune(tuning: StoredTuning, search: SearchRange) -> tune_module.TuneResult:
    """Check the plan against the engine, then search: every round a stored experiment."""
    tuning.engine.check(tuning.spec([search.lo], "check"))
    return tune_module.search(
        tuning.evaluate, search.lo, search.hi, search.step, search.grid, search.rounds
    )
