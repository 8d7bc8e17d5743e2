"""An experiment's spec checked before anything runs: each check raises LocklabError with one
line, so a typo costs one error line, not a sweep."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from locklab.errors import LocklabError
from locklab.kernel.params import TORTURE_TYPES_6_1
from locklab.model.catalogue import LockInfo
from locklab.model.cells import validate_variant
from locklab.model.values import (
    AXES,
    MAX_ENGINE_SEED,
    MAX_SEED,
    validate_axis,
    validate_label,
    validate_pin,
    validate_seconds,
)

if TYPE_CHECKING:
    from locklab.model.spec import ExperimentSpec

# The torture types whose delays the engine draws (--torture-delays), Linux 6.1's.
TORTURE_DELAY_TYPES = TORTURE_TYPES_6_1


def check_spec(spec: ExperimentSpec, catalogue: Mapping[str, LockInfo]) -> None:
    """The first thing wrong with `spec`, as one line (LocklabError)."""
    if not spec.name.strip():
        raise LocklabError("the experiment needs a name")
    if not spec.variants:
        raise LocklabError("no locks to run: give --lock or at least one [[variant]]")
    labels = [v.label for v in spec.variants]
    duplicates = sorted({label for label in labels if labels.count(label) > 1})
    if duplicates:
        raise LocklabError(f"variant label '{duplicates[0]}' is used twice")
    for variant in spec.variants:
        validate_label(variant.label)
        if spec.source == "guest":
            if not variant.plugin or not Path(variant.plugin).is_file():
                raise LocklabError(f"kernel {variant.label}: no image at {variant.plugin}")
        else:
            validate_variant(variant, catalogue)
    if spec.baseline not in labels:
        raise LocklabError(
            f"baseline '{spec.baseline}' is not one of the locks: {', '.join(labels)}"
        )
    for axis in AXES:
        validate_axis(axis, spec.sweep[axis])
    if not isinstance(spec.repeat, int) or not 1 <= spec.repeat <= 1000:
        raise LocklabError(f"repeat must be an integer from 1 to 1000 (got {spec.repeat})")
    if spec.repeat_auto and not 2 <= spec.min_repeat <= spec.repeat:
        raise LocklabError(
            f"--repeat auto: need 2 <= min-repeat ({spec.min_repeat}) <= max-repeat "
            f"({spec.repeat})"
        )
    if not 0 < spec.precision < 1:
        raise LocklabError(f"precision must be between 0 and 1 (got {spec.precision})")
    validate_seconds("duration", spec.duration_s, minimum=0.001)
    validate_seconds("warmup", spec.warmup_s, minimum=0.0)
    validate_seconds("interval", spec.interval_s, minimum=0.001)
    validate_seconds("stutter", spec.stutter_s, minimum=0.0)
    validate_pin(spec.pin)
    if isinstance(spec.seed, bool) or not 0 <= spec.seed <= MAX_SEED:
        raise LocklabError(f"seed must be an integer from 0 to {MAX_SEED} (got {spec.seed})")
    _check_engine_seed(spec)
    if isinstance(spec.numa_nodes, bool) or not 0 <= spec.numa_nodes <= 1024:
        raise LocklabError(f"numa_nodes must be from 0 to 1024 (got {spec.numa_nodes})")
    _check_workload_emulation(spec)
    if not spec.checks and not spec.program:
        busy = [axis for point in spec.points() for axis, value in point
                if axis != "nwriters" and value]  # fmt: skip
        if busy or spec.torture_delays or spec.long_hold_ms or spec.numa_remote_ns:
            raise LocklabError(
                "--no-checks measures the bare loop: writers only, without "
                f"{(busy or ['--torture-delays, --long-hold or --numa-remote-ns'])[0]}"
            )
    names = [w.name for w in spec.workloads]
    for workload in spec.workloads:
        if not workload.name or names.count(workload.name) > 1:
            raise LocklabError(f"workload names must be unique and not empty: {names}")
        if not workload.axes:
            raise LocklabError(f"workload '{workload.name}' sets no axis")
        for axis, value in workload.axes:
            validate_axis(axis, [value])
    readers = [n for n in spec.sweep["nreaders"] if n > 0]
    for variant in spec.variants:
        if readers and not catalogue[variant.lock].reader_writer:
            raise LocklabError(f"nreaders: lock '{variant.lock}' is not a reader-writer lock")
    if min(spec.sweep["nwriters"]) + min(spec.sweep["nreaders"]) == 0:
        raise LocklabError("a run with no threads: nwriters + nreaders must be at least 1")


def _check_workload_emulation(spec: ExperimentSpec) -> None:
    """locktorture's delays replace the fixed hold; the remote cost needs pinned threads,
    or a thread's node is unknown. The engine refuses both too, but mid-sweep."""
    if spec.torture_delays:
        if spec.torture_delays not in TORTURE_DELAY_TYPES:
            raise LocklabError(
                f"torture_delays: unknown type '{spec.torture_delays}' "
                f"(known: {', '.join(TORTURE_DELAY_TYPES)})"
            )
        if any(spec.sweep["hold_ns"]) or spec.long_hold_ms:
            raise LocklabError(
                "torture_delays draws every hold time: drop hold_ns and long_hold_ms"
            )
    if isinstance(spec.numa_remote_ns, bool) or not 0 <= spec.numa_remote_ns <= 10**6:
        raise LocklabError(f"numa_remote_ns must be from 0 to 1000000 (got {spec.numa_remote_ns})")
    if spec.numa_remote_ns and spec.pin == "none":
        raise LocklabError("numa_remote_ns needs pinned threads (pin = compact, cores, ...)")
    if isinstance(spec.churn, bool) or not 0 <= spec.churn <= 10**6:
        raise LocklabError(f"churn must be from 0 to 1000000 (got {spec.churn})")
    if spec.churn and (spec.torture_delays or spec.long_hold_ms or spec.numa_remote_ns):
        raise LocklabError("churn runs writers that make a thread per turn: without "
                           "torture_delays, long_hold_ms or numa_remote_ns")  # fmt: skip


def _check_engine_seed(spec: ExperimentSpec) -> None:
    """--engine-seed gives every run one seed: repeats of it would be the same run again."""
    if spec.engine_seed is None:
        return
    if isinstance(spec.engine_seed, bool) or not 0 <= spec.engine_seed <= MAX_ENGINE_SEED:
        raise LocklabError(
            f"engine seed must be an integer from 0 to {MAX_ENGINE_SEED} (got {spec.engine_seed})"
        )
    if spec.repeat != 1 or spec.repeat_auto:
        raise LocklabError("--engine-seed runs each cell once, with that seed: give --repeat 1")
