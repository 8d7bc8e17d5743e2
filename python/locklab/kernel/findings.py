"""What the kernel's checkers said on a console: KCSAN data races, KASAN reports, lockdep
splats and WARN()s, each as a finding of the run (`--debug kcsan,lockdep,kasan`). A finding is
not a failed run: the kernel goes on, and the run's throughput still counts. An oops, a panic
or a hang is a failed run (qemu.console_verdict); these lines are what it must not take for
one."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

# "+0x1c/0x40" after a symbol, and the module in brackets: not part of the function's name.
_OFFSET = re.compile(r"\+0x[0-9a-f]+/0x[0-9a-f]+|\s*\[\w+\]$")
_KCSAN = re.compile(r"BUG: KCSAN: ([\w-]+(?: [\w-]+)?) in (\S+)(?: / (\S+))?")
_KASAN = re.compile(r"BUG: KASAN: ([\w-]+) in (\S+)")
_LOCKDEP = re.compile(
    r"WARNING: (possible circular locking dependency detected|possible recursive locking "
    r"detected|inconsistent lock state|possible irq lock inversion dependency detected|"
    r"bad unlock balance detected!|suspicious RCU usage|possible deadlock|"
    r"lock held when returning to user space!|held lock freed!|"
    r"Nested lock was not taken|bad contention detected!)"
)
# lockdep's lock lines: " ffffffff82a3c0b8 (lock_a){+.+.}-{2:2}, at: func+0x12/0x40"
_LOCK_NAME = re.compile(r"^\s*(?:[0-9a-f]{8,16} )?\(([^)]+)\)\{[^}]*\}(?:-\{[^}]*\})?, at: (\S+)")
_WARN = re.compile(r"WARNING: CPU: \d+ PID: \d+ at (\S+) (\S+)")
_MIGHT_SLEEP = re.compile(r"BUG: sleeping function called from invalid context at (\S+)")
# Lines a checker writes that the failure markers would otherwise take for a crash.
FINDING_MARKERS = ("BUG: KCSAN:", "BUG: KASAN:", "BUG: sleeping function called")


@dataclass(frozen=True)
class Finding:
    checker: str  # KCSAN, KASAN, lockdep, WARNING
    what: str  # "data-race: lock_torture_writer vs torture_random"

    def line(self) -> str:
        return f"{self.checker} {self.what}"


def _symbol(text: str | None) -> str:
    return _OFFSET.sub("", text or "").strip()


def is_finding_line(line: str) -> bool:
    return any(marker in line for marker in FINDING_MARKERS)


def findings(console: str) -> list[Finding]:
    """Every checker report on the console, in order."""
    found: list[Finding] = []
    lines = console.splitlines()
    for index, line in enumerate(lines):
        if match := _KCSAN.search(line):
            kind, first, second = match.groups()
            sites = " vs ".join(_symbol(s) for s in (first, second) if s)
            found.append(Finding("KCSAN", f"{kind}: {sites}"))
        elif match := _KASAN.search(line):
            found.append(Finding("KASAN", f"{match.group(1)} in {_symbol(match.group(2))}"))
        elif match := _LOCKDEP.search(line):
            locks = []
            for following in lines[index + 1 : index + 40]:
                named = _LOCK_NAME.match(following.split("] ", 1)[-1])
                if named and named.group(1) not in locks:
                    locks.append(named.group(1))
                if len(locks) == 2:
                    break
            detail = f": {' vs '.join(locks)}" if locks else ""
            found.append(Finding("lockdep", f"{match.group(1).rstrip('!')}{detail}"))
        elif match := _MIGHT_SLEEP.search(line):
            found.append(Finding("might_sleep", f"sleeping in atomic context at {match.group(1)}"))
        elif match := _WARN.search(line):
            found.append(Finding("WARNING", f"at {match.group(1)} in {_symbol(match.group(2))}"))
    return found


def summary(found: list[Finding]) -> str:
    """ "3 KCSAN data-race: a vs b; 1 lockdep ...": each distinct finding once, with its count."""
    counts = Counter(f.line() for f in found)
    return "; ".join(f"{n} {line}" if n > 1 else line for line, n in counts.items())


def as_records(found: list[Finding]) -> list[dict[str, str]]:
    return [{"checker": f.checker, "what": f.what} for f in found]


def from_records(records: object) -> list[Finding]:
    if not isinstance(records, list):
        return []
    return [
        Finding(str(r.get("checker")), str(r.get("what"))) for r in records if isinstance(r, dict)
    ]
