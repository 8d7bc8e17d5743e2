"""Sanitizer reports in an engine's stderr, as one line each, and which count as findings
(a ThreadSanitizer data race counts as KCSAN counts one by default)."""

import pytest
from locklab.run.outcome import sanitizer_reports, sanitizer_summary


def race(first: str, first_fn: str, second: str, second_fn: str) -> str:
    return (
        "==================\nWARNING: ThreadSanitizer: data race (pid=7)\n"
        f"  {first} of size 8 at 0x7b50 by thread T1:\n    #0 {first_fn} rtmutex.c:238 (a.so+0x1)\n"
        f"    #1 caller rtmutex.c:1086 (a.so+0x2)\n\n"
        f"  Previous {second.lower()} of size 8 at 0x7b50 by thread T4:\n"
        f"    #0 {second_fn} rtmutex.c:218 (a.so+0x3)\n\nSUMMARY: ThreadSanitizer: data race\n"
    )


@pytest.mark.parametrize(
    ("report", "line", "counts"),
    [
        (race("Read", "mark_rt_mutex_waiters", "Atomic write", "rt_mutex_cmpxchg_acquire"),
         "ThreadSanitizer data race, mark_rt_mutex_waiters vs rt_mutex_cmpxchg_acquire", True),
        # The same pair seen from the other thread: the plain access is still named first.
        (race("Atomic write", "rt_mutex_cmpxchg_acquire", "Read", "mark_rt_mutex_waiters"),
         "ThreadSanitizer data race, mark_rt_mutex_waiters vs rt_mutex_cmpxchg_acquire", True),
        # A plain aligned write against a marked read: KCSAN's default takes it as atomic.
        (race("Write", "mark_wakeup_next_waiter", "Atomic read", "rt_mutex_owner"),
         "ThreadSanitizer data race, mark_wakeup_next_waiter vs rt_mutex_owner", False),
        ("==1==ERROR: AddressSanitizer: heap-use-after-free on address 0x1\n"
         "READ of size 8 at 0x1 thread T1\n    #0 wake_up_q sched.c:164\n",
         "AddressSanitizer heap use after free, wake_up_q", True),
    ],
    ids=["plain-read-first", "plain-read-second", "plain-write-ignored", "asan"],
)  # fmt: skip
def test_a_report_is_one_line(report, line, counts):
    (found,) = sanitizer_reports("engine output\n" + report)
    assert (found.line, found.counts) == (line, counts)
    assert sanitizer_summary(report) == (line if counts else None)


def test_no_report():
    assert sanitizer_reports("locklab-bench: 4 writers\n") == []
