"""cyclictest's latency histogram (rt-tests, `cyclictest -h US`), read from a program's
output: the largest latency and the 99th percentile over every thread's samples, as seed 003
reported them. A run whose output has no histogram has no latency figures."""

from __future__ import annotations

import re

_BUCKET = re.compile(r"^(\d{6})((?:\s+\d+)+)\s*$")
_MAX = re.compile(r"^# Max Latencies:((?:\s+\d+)+)", re.M)
_OVERFLOWS = re.compile(r"^# Histogram Overflows:((?:\s+\d+)+)", re.M)


def latency(output: str) -> dict[str, float] | None:
    """{"max_us", "p99_us", "samples"} from cyclictest's histogram, or None without one. A
    sample past the histogram's last bucket (an overflow) counts as the run's max."""
    counts: dict[int, int] = {}
    for line in output.splitlines():
        bucket = _BUCKET.match(line.strip())
        if bucket:
            counts[int(bucket.group(1))] = sum(int(n) for n in bucket.group(2).split())
    maxima = _MAX.search(output)
    if not counts or maxima is None:
        return None
    worst = max(int(n) for n in maxima.group(1).split())
    overflows = _OVERFLOWS.search(output)
    over = sum(int(n) for n in overflows.group(1).split()) if overflows else 0
    samples = sum(counts.values()) + over
    if samples == 0:
        return None
    rank = 0.99 * samples
    seen = 0
    p99 = float(worst)  # in the overflows, unless the buckets reach it
    for value in sorted(counts):
        seen += counts[value]
        if seen >= rank:
            p99 = float(value)
            break
    return {"max_us": float(worst), "p99_us": p99, "samples": float(samples)}
