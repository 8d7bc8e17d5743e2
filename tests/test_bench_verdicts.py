"""The benchmarks' goal verdicts (bench/engine_overhead.py): the median's interval, not the median
alone, decides met, MISSED or noise. And a benchmark whose child fails says so in one line."""

import importlib.util
import math
import subprocess
import sys

import pytest
from conftest import ROOT


def bench_module(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def engine_overhead():
    return bench_module("engine_overhead")


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


def failing_child() -> None:
    subprocess.run([sys.executable, "-c", "import sys; print('no such lock', file=sys.stderr); "
                    "sys.exit(2)"], capture_output=True, text=True, check=True)  # fmt: skip


def slow_child() -> None:
    subprocess.run([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.2)


def missing_child() -> None:
    subprocess.run([str(ROOT / "build" / "no-such-loop")], check=True)


@pytest.mark.parametrize(
    ("main", "said"),
    [
        (failing_child, "exited 2: no such lock"),
        (slow_child, "ran past 0.2 s"),
        (missing_child, "no-such-loop: No such file or directory (make bench builds it)"),
    ],
)
def test_a_failed_child_is_one_line_and_a_failed_status(main, said, capsys):
    with pytest.raises(SystemExit) as ended:
        bench_module("child_failure").run_main(main)
    assert ended.value.code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err and "Traceback" not in err, err


def test_a_benchmark_that_ends_well_keeps_its_status():
    with pytest.raises(SystemExit) as ended:
        bench_module("child_failure").run_main(lambda: None)
    assert ended.value.code == 0
