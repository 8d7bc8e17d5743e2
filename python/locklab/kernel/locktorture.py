"""Reading the kernel's locktorture output (dmesg or a console log) into runs.

locktorture (kernel/locking/locktorture.c) prints, with or without dmesg timestamps:
  spin_lock-torture:--- Start of test: nwriters_stress=4 nreaders_stress=0 ... stat_interval=60 ...
  Writes:  Total: 93746064  Max/Min: 23998000/22977000   Fail: 0
  Reads :  Total: 1234  Max/Min: 700/534 ???  Fail: 0 !!!
  spin_lock-torture:--- End of test: SUCCESS: nwriters_stress=4 ...
The counters are cumulative since the start; `???` marks a thread that never got the lock,
`!!!` a failure. The last statistics are printed twice at cleanup. A log may hold several runs,
unrelated lines, and may end early.

A run's throughput is the counters' increase over the measured window: from the first report
kept after the warm-up (seed 000 dropped the first reports, while the kthreads settled) to
the last one, over the time between them (dmesg timestamps, or stat_interval apart).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from locklab import provenance
from locklab.errors import LocklabError
from locklab.model.cells import ConfigKey
from locklab.model.spec import Configuration, ExperimentSpec, Variant
from locklab.model.values import AXES, validate_label
from locklab.store import Experiment, Run, Store

TIMESTAMP = re.compile(r"^\s*\[\s*(\d+\.\d+)\]\s?")
START = re.compile(r"(\S+?)-torture:\s*-+\s*Start of test(?: \[debug\])?:\s*(.*)$")
END = re.compile(r"(\S+?)-torture:\s*-+\s*End of test:\s*([A-Z_]+)")
STATS = re.compile(
    r"(Writes|Reads)\s*:\s+Total:\s+(\d+)\s+Max/Min:\s+(\d+)/(\d+)\s*(\?\?\?)?\s*"
    r"Fail:\s+(\d+)\s*(!!!)?"
)
PARAM = re.compile(r"(\w+)=(-?\w+)")


@dataclass
class Report:
    time_s: float | None
    total: int
    max: int
    min: int
    starved: bool  # ???: some thread never acquired the lock
    fail: int


@dataclass
class TortureRun:
    torture_type: str
    params: dict[str, str]
    source: str
    writes: list[Report] = field(default_factory=list)
    reads: list[Report] = field(default_factory=list)
    end: str | None = None  # SUCCESS, FAILURE, ... ; None: the log stops before the end

    @property
    def nwriters(self) -> int:
        return int(self.params.get("nwriters_stress", "0"))

    @property
    def nreaders(self) -> int:
        return int(self.params.get("nreaders_stress", "0"))

    def identity(self) -> tuple:
        """What makes two copies of one run the same: the start line and every report with its
        timestamp. A console log followed by a dmesg dump of the same boot holds each run twice,
        and a log given twice holds them twice: each is one measurement, not two repeats."""
        return (
            self.torture_type,
            tuple(sorted(self.params.items())),
            tuple((r.time_s, r.total, r.max, r.min, r.fail) for r in self.writes),
            tuple((r.time_s, r.total, r.max, r.min, r.fail) for r in self.reads),
        )

    @property
    def failed(self) -> bool:
        reports = self.writes + self.reads
        return self.end == "FAILURE" or any(r.fail for r in reports)


@dataclass
class Measured:
    throughput_ops_per_s: float
    window_s: float
    write_ops: int
    read_ops: int
    intervals: list[dict]


def parse(text: str, source: str = "log") -> tuple[list[TortureRun], list[str]]:
    """All runs in a log, and one line per problem found (a truncated run is kept)."""
    runs: list[TortureRun] = []
    problems: list[str] = []
    current: TortureRun | None = None
    for number, raw in enumerate(text.splitlines(), 1):
        stamp = TIMESTAMP.match(raw)
        time_s = float(stamp.group(1)) if stamp else None
        line = raw[stamp.end() :] if stamp else raw
        if match := START.search(line):
            if current is not None and current.end is None:
                problems.append(
                    f"{source}:{number}: a new run starts before the previous "
                    f"{current.torture_type} run ended; kept what it reported"
                )
            current = TortureRun(match.group(1), dict(PARAM.findall(match.group(2))), source)
            runs.append(current)
        elif match := STATS.search(line):
            if current is None:
                continue  # statistics before any start line: not ours to guess
            kind, total, high, low, starved, fail, _ = match.groups()
            report = Report(time_s, int(total), int(high), int(low), bool(starved), int(fail))
            reports = current.writes if kind == "Writes" else current.reads
            # The final statistics are printed twice at cleanup: keep one.
            if reports and (reports[-1].total, reports[-1].max, reports[-1].min) == (
                report.total, report.max, report.min
            ):  # fmt: skip
                continue
            reports.append(report)
        elif match := END.search(line):
            if current is not None and current.torture_type == match.group(1):
                current.end = match.group(2)
    for run in runs:
        if run.end is None:
            problems.append(
                f"{source}: the {run.torture_type} run (nwriters_stress={run.nwriters}) has no "
                f"'End of test' line: the log is truncated; kept its {len(run.writes)} reports"
            )
    return runs, problems


def measure(run: TortureRun, warmup_reports: int = 1) -> Measured | None:
    """Throughput over the window after `warmup_reports` reports; None if too few remain."""
    reports = run.writes
    if len(reports) < warmup_reports + 2:
        return None
    first, last = reports[warmup_reports], reports[-1]
    interval = float(run.params.get("stat_interval", "60") or 60)

    def at(index: int) -> float:
        report = reports[index]
        if report.time_s is not None and reports[warmup_reports].time_s is not None:
            return report.time_s
        return index * interval

    window = at(len(reports) - 1) - at(warmup_reports)
    if window <= 0:
        return None
    reads = run.reads
    read_ops = 0
    if len(reads) >= warmup_reports + 2:
        read_ops = reads[-1].total - reads[warmup_reports].total
    write_ops = last.total - first.total
    intervals = []
    for index in range(warmup_reports + 1, len(reports)):
        span = at(index) - at(index - 1)
        if span > 0:
            ops = reports[index].total - reports[index - 1].total
            intervals.append(
                {"t_s": at(index) - at(warmup_reports), "span_s": span, "ops_per_s": ops / span}
            )
    return Measured((write_ops + read_ops) / window, window, write_ops, read_ops, intervals)


def read_logs(paths: list[Path]) -> tuple[list[TortureRun], list[str]]:
    runs, problems = [], []
    for path in paths:
        text = path.read_text(errors="replace")
        found, issues = parse(text, str(path))
        if not found:
            issues.append(f"{path}: no locktorture 'Start of test' line")
        runs += found
        problems += issues
    return runs, problems


@dataclass
class Imported:
    """Logs converted into an experiment: its plan, its runs, and what was odd in the logs."""

    spec: ExperimentSpec
    runs: list[Run]
    commands: list[list[str]]  # the "command" of each run: where it was read from
    problems: list[str]


def convert(
    labelled: list[tuple[str | None, Path]],
    name: str,
    host: str,
    warmup_reports: int,
    failed_logs: frozenset[str] = frozenset(),
) -> Imported:
    """The runs of each (label or None, log) as one experiment: a variant per label (default:
    the torture type), nwriters/nreaders as axes, repeated runs as repeats. Nothing is written:
    a log that yields nothing raises here, before any store is touched. A run of one of
    `failed_logs` (a boot that oopsed, hung or panicked) is kept however few its reports, so
    that its failure shows in the table."""
    entries, problems = _distinct_runs(labelled)
    if not entries:
        raise LocklabError("no locktorture run in " + ", ".join(str(p) for _, p in labelled))
    labels = list(dict.fromkeys(label for label, _ in entries))
    types = {label: run.torture_type for label, run in entries}
    spec = ExperimentSpec(
        name=name,
        variants=[Variant(label, types[label]) for label in labels],
        sweep={
            "nwriters": sorted({run.nwriters for _, run in entries}),
            "nreaders": sorted({run.nreaders for _, run in entries}),
        },
        repeat=1,
        duration_s=0.001,  # unused: the window comes from each log's reports
        warmup_s=0.0,
        source="locktorture",
    )
    seen: dict[ConfigKey, int] = {}
    stored = []
    for label, run in entries:
        config = Configuration(
            Variant(label, run.torture_type),
            tuple(
                (axis, {"nwriters": run.nwriters, "nreaders": run.nreaders}.get(axis, 0))
                for axis in AXES
            ),
        )
        measured = measure(run, warmup_reports)
        if measured is None and run.source in failed_logs:
            measured = Measured(0.0, 0.0, 0, 0, [])
        elif measured is None:
            problems.append(
                f"{run.source}: {label} (nwriters_stress={run.nwriters}) has "
                f"{len(run.writes)} reports, too few after {warmup_reports} warm-up: skipped"
            )
            continue
        repeat = seen.get(config.key, 0)
        seen[config.key] = repeat + 1
        stored.append((config, repeat, run, measured))
    if not stored:
        raise LocklabError(
            f"none of the {len(entries)} locktorture runs has two reports left after "
            f"{warmup_reports} warm-up reports: nothing to import"
        )
    spec.repeat = max(seen.values(), default=1)
    machine = {"hostname": host, "source": "locktorture"}
    imported = Imported(spec, [], [], problems)
    for config, repeat, run, measured in stored:
        imported.runs.append(_stored_run(config, repeat, run, measured, machine))
        imported.commands.append(["locktorture", run.source])
    return imported


def _distinct_runs(
    labelled: list[tuple[str | None, Path]],
) -> tuple[list[tuple[str, TortureRun]], list[str]]:
    """Every run of the logs with its label, a run found twice (the same start line and
    timestamped reports) kept once, and what was odd in the logs."""
    entries: list[tuple[str, TortureRun]] = []
    problems: list[str] = []
    first_seen: dict[tuple, tuple[str, str, int]] = {}  # identity -> (label, where, index)
    for label, path in labelled:
        if label is not None:
            validate_label(label)
        try:
            runs, issues = read_logs([path])
        except OSError as error:
            raise LocklabError(f"{path}: cannot read: {error.strerror}") from None
        problems += issues
        for run in runs:
            run_label = label or run.torture_type
            where = f"{run.source} ({run.torture_type}, nwriters_stress={run.nwriters})"
            earlier = first_seen.setdefault(run.identity(), (run_label, where, id(run)))
            if earlier[2] == id(run):
                entries.append((run_label, run))
            elif earlier[0] == run_label:
                problems.append(
                    f"{where}: the same run as {earlier[1]} (the same start line and "
                    "timestamped reports: a console and a dmesg dump of one boot, or a log given "
                    "twice): counted once"
                )
            else:
                problems.append(
                    f"{where}: labelled {run_label}, but the same run as {earlier[1]}, labelled "
                    f"{earlier[0]}: is one log given under two labels?"
                )
                entries.append((run_label, run))
    return entries, problems


def _stored_run(
    config: Configuration, repeat: int, run: TortureRun, measured: Measured, machine: dict
) -> Run:
    """A locktorture run in the engine's result shape, so tables and exports read it alike."""
    last = run.writes[-1] if run.writes else None
    result = {
        "status": "violation" if run.failed else "ok",
        "source": "locktorture",
        "log": run.source,
        "torture_type": run.torture_type,
        "params": run.params,
        "end": run.end,
        "throughput_ops_per_s": measured.throughput_ops_per_s,
        "window_s": measured.window_s,
        "write_acquisitions": measured.write_ops,
        "read_acquisitions": measured.read_ops,
        "intervals": measured.intervals,
        "fairness": {"write": {
            "max": last.max, "min": last.min,
            "max_min_ratio": last.max / last.min if last.min else None,
            "starved": last.starved,
        }} if last else {},
        "machine": machine,
    }  # fmt: skip
    failed = run.failed
    return Run(
        config.key, repeat, result["status"], 1 if failed else 0,
        None if failed else measured.throughput_ops_per_s,
        f"locktorture: End of test: {run.end}" if failed else None,
        result, machine, measured.window_s,
    )  # fmt: skip


def store_imported(store: Store, imported: Imported, host: str) -> tuple[Experiment, list[str]]:
    """The one write of an import: the converted experiment and its runs."""
    experiment = store.create_experiment(
        imported.spec, host, provenance.version(), provenance.commit()
    )
    for run, command in zip(imported.runs, imported.commands, strict=True):
        store.add_run(experiment, run, command, provenance.version(), provenance.commit())
    return experiment, imported.problems
