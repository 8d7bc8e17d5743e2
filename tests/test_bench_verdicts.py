"""The benchmarks' goal verdicts (bench/engine_overhead.py): the median's interval, not the median
alone, decides met, MISSED or noise."""

import importlib.util
import math

import pytest
from conftest import ROOT


def engine_overhead():
    spec = importlib.util.spec_from_file_location(
        "engine_overhead", ROOT / "bench" / "engine_overhead.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("n", "k"), [(3, 1), (5, 1), (7, 1), (9, 2), (11, 3), (15, 4)])
def test_median_interval_is_the_narrowest_with_its_coverage(n, k):
    bench = engine_overhead()
    low, high = bench.median_interval([float(v) for v in reversed(range(n))])
    assert (low, high) == (k - 1, n - k)

    def coverage(j: int) -> float:
        return 1 - 2 * sum(math.comb(n, i) for i in range(j)) / 2**n

    if k > 1:
        assert coverage(k) >= bench.MEDIAN_COVERAGE
    assert coverage(k + 1) < bench.MEDIAN_COVERAGE


def test_verdict_needs_the_whole_interval_on_one_side():
    bench = engine_overhead()

    def verdict(values: list[float]) -> str:
        return bench.ratio_of(values, [1.0] * len(values)).verdict(0.95)

    assert verdict([0.96, 0.97, 0.99, 1.0, 0.98]) == "met"
    assert verdict([0.90, 0.91, 0.92, 0.93, 0.94]) == "MISSED"
    # The median (0.97) clears the goal, one repeat does not: the repeats cannot tell.
    assert verdict([0.90, 0.96, 0.97, 0.98, 0.99]) == "noise"
