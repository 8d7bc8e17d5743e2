"""What one measured process left (the engine, or a program under an interposed lock): its
exit status, its JSON, its stderr, and the sanitizer reports in that stderr, read as KCSAN would
count them."""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass, field

# Engine exit statuses (native/engine/engine.h).
EXIT_OK, EXIT_VIOLATION, EXIT_USAGE, EXIT_WATCHDOG = 0, 1, 2, 3


@dataclass
class EngineOutcome:
    """What one engine process left: its exit status, its JSON (when it wrote one), its stderr."""

    command: list[str]
    exit_code: int
    result: dict | None
    stderr: str
    wall_s: float
    timed_out: bool = False
    status: str = field(init=False)
    sanitizer: str | None = field(init=False)  # the report's one line, when there is one

    def __post_init__(self) -> None:
        reports = sanitizer_reports(self.stderr)
        self.sanitizer = next((r.line for r in reports if r.counts), None)
        if reports:  # kept with the run, whether or not they count
            self.result = {**(self.result or {}), "sanitizer_report": self.stderr}
        # A report that does not count leaves the sanitizer's exit status, not a failure.
        finished = (EXIT_OK, EXIT_VIOLATION, EXIT_WATCHDOG) + ((SANITIZER_EXIT,) if reports else ())
        if self.sanitizer is not None:
            self.status = "sanitizer"  # a finding of the run, as a violation is
        elif self.timed_out:
            self.status = "timeout"
        elif self.result is not None and self.result.get("status") and self.exit_code in finished:
            self.status = self.result.get("status", "error")
        elif self.exit_code == EXIT_WATCHDOG:  # its last resort: the line, no JSON (engine.md)
            self.status = "watchdog"
        else:
            self.status = "error"

    def error_line(self) -> str:
        """The engine's own last stderr line, or a description of how it ended."""
        if self.sanitizer is not None:
            return self.sanitizer
        if self.timed_out:
            return f"killed after {self.wall_s:.0f} s, its overall time limit, without finishing"
        if self.result is not None and self.result.get("error"):
            return str(self.result["error"])
        lines = [line for line in self.stderr.splitlines() if line.strip()]
        replay = next((line for line in lines if line.startswith(REPLAY)), None)
        lines = [line for line in lines if line is not replay]
        if lines:
            text = (
                lines[-1]
                .removeprefix("locklab-bench: error: ")
                .removeprefix("locklab-sim: error: ")
            )
        elif self.exit_code < 0:  # the engine crashed, as a kernel that oopses
            text = f"crashed ({signal.Signals(-self.exit_code).name})"
        else:
            text = f"exit status {self.exit_code}"
        # The simulator's failure names the seed of its interleaving (docs/simulator.md).
        return f"{text} ({replay.removeprefix('locklab-sim: ')})" if replay else text


# How the simulator names the seed that replays a failed run's interleaving.
REPLAY = "locklab-sim: the same command with --seed"
_REPORT = re.compile(
    r"^(?:==\d+==)?(?:WARNING|ERROR): (ThreadSanitizer|AddressSanitizer|"
    r"UndefinedBehaviorSanitizer|LeakSanitizer): ([\w-]+(?: [\w-]+)*)",
    re.M,
)
_FRAME = re.compile(r"^\s+#0 (\S+)", re.M)
_ACCESS = re.compile(r"^\s+(Previous )?(atomic )?(read|write) of size (\d+)", re.M | re.I)
# The exit status a sanitizer gives a process that reported (TSAN's default).
SANITIZER_EXIT = 66


@dataclass(frozen=True)
class SanitizerReport:
    line: str  # "ThreadSanitizer data race, A vs B": the innermost function of each access
    counts: bool  # a finding (see sanitizer_reports)


def sanitizer_reports(stderr: str) -> list[SanitizerReport]:
    """Every sanitizer report in the engine's stderr, in order, each with the innermost function
    of its accesses (a data race's plain access first). A ThreadSanitizer data race
    counts as KCSAN counts one in its default configuration (KCSAN_ASSUME_PLAIN_WRITES_ATOMIC):
    only when one of the two accesses is a plain read, or a plain write wider than a word;
    marked accesses and plain aligned writes up to a word are taken as atomic. Every other
    sanitizer report counts."""
    reports: list[SanitizerReport] = []
    starts = list(_REPORT.finditer(stderr))
    for index, found in enumerate(starts):
        tool, kind = found.group(1), found.group(2).split(" on ")[0]
        end = starts[index + 1].start() if index + 1 < len(starts) else len(stderr)
        body = stderr[found.end() : end]
        accesses = list(_ACCESS.finditer(body))
        names = [m.group(1) for m in _FRAME.finditer(body)][: max(1, len(accesses))]
        if len(accesses) == 2 == len(names) and accesses[0].group(2) and not accesses[1].group(2):
            names.reverse()  # the plain access first, whichever thread came first
        where = " vs ".join(names[:2]) or "unknown"
        counts = True
        if tool == "ThreadSanitizer" and kind == "data race" and accesses:
            counts = any(not a.group(2) and (a.group(3).lower() == "read" or int(a.group(4)) > 8)
                         for a in accesses)  # fmt: skip
        reports.append(SanitizerReport(f"{tool} {kind.replace('-', ' ')}, {where}", counts))
    return reports


def sanitizer_summary(stderr: str) -> str | None:
    """The first report that counts, as one line; None when there is none."""
    return next((r.line for r in sanitizer_reports(stderr) if r.counts), None)
