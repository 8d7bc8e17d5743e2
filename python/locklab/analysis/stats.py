"""Statistics of repeated runs: summaries, significance, noise and steady state.

Welch's t-test is the default significance test: it does not assume equal variances (a lock
under contention is often far noisier than its baseline), and it still works with 3 repeats,
where Mann-Whitney U cannot reach p < 0.05 at all (its smallest two-sided p for 3 vs 3 is 0.1).
Mann-Whitney U is offered for those who prefer a rank test with 5 or more repeats.

The t distribution comes from ``student_t`` and the rest from the standard library, so that a
`locklab run` does not pay for importing numpy and scipy; tests check these functions against
scipy.stats, which Mann-Whitney alone still imports, when it is asked for.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from locklab.analysis import student_t

TESTS = ("welch", "mann-whitney")
TEST_NAMES = {"welch": "Welch's t-test", "mann-whitney": "Mann-Whitney U test"}
DEFAULT_ALPHA = 0.05
# Seed 000 kept rows with CV near 8% and dropped rows near 85% as "too spread"; 5% is the goal
# this project sets for 2 contending threads, so a row above it deserves a second look.
DEFAULT_NOISE_CV = 0.05
# A run whose throughput moves by more than this over its measured window (fitted line, start to
# end, relative to the mean) while the slope is significant has not reached a steady state.
DEFAULT_DRIFT = 0.10
DRIFT_ALPHA = 0.01
MIN_DRIFT_POINTS = 5


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    std: float  # sample standard deviation (n - 1)
    ci95: float | None  # half-width of the 95% confidence interval of the mean; None if n < 2

    @property
    def cv(self) -> float | None:
        """Coefficient of variation, std / mean."""
        if self.n < 2 or self.mean == 0:
            return None
        return self.std / abs(self.mean)


# LKP's change-detection rule: a difference under 5% is not reported as a change. Here it is
# the smallest effect a verdict calls faster or slower, and the margin of "equal within".
DEFAULT_MIN_EFFECT_PCT = 5.0
CI_LEVEL = 0.95
# What a cell's comparison says, in the order a reader weighs them.
HIGHER, LOWER = "higher", "lower"
BELOW_MIN = "below"  # significant, but smaller than the minimum effect
EQUAL = "equal"  # the whole interval inside +-min effect
INCONCLUSIVE = "inconclusive"  # neither: more runs needed
UNTESTED = "untested"  # fewer than 2 runs on a side
MOST_RUNS = 1000  # beyond this many runs per cell, "would settle it" is not worth saying


@dataclass(frozen=True)
class Comparison:
    rel_pct: float  # (other - base) / base, in percent
    p_value: float | None  # None when a test is impossible (fewer than 2 runs on a side)
    significant: bool
    p_adjusted: float | None = None  # after the multiple-comparison correction, if any
    # The 95% interval of rel % (Fieller's, for the ratio of the means); None when it is
    # unbounded (the baseline's mean is not clearly above zero) or untestable.
    ci_pct: tuple[float, float] | None = None
    runs: int = 0  # the fewer runs of the two sides
    # other's mean - base's mean: the direction where rel % has none (a baseline of 0, as
    # context switches of a lock that never sleeps)
    difference: float = math.nan

    def judgement(self, min_effect_pct: float = DEFAULT_MIN_EFFECT_PCT) -> str:
        """HIGHER or LOWER (significant, at least the minimum effect), BELOW_MIN, EQUAL (the
        interval inside +-min_effect_pct: an equivalence test, TOST at 2.5% per side),
        INCONCLUSIVE or UNTESTED."""
        if self.p_value is None:
            return UNTESTED
        if self.significant:
            if math.isnan(self.rel_pct):  # from zero, any change is beyond every minimum
                if math.isnan(self.difference):
                    return INCONCLUSIVE
                return HIGHER if self.difference > 0 else LOWER
            if abs(self.rel_pct) < min_effect_pct:
                return BELOW_MIN
            return HIGHER if self.rel_pct > 0 else LOWER
        if self.ci_pct is not None and -min_effect_pct < self.ci_pct[0] <= self.ci_pct[1] < (
            min_effect_pct
        ):
            return EQUAL
        return INCONCLUSIVE

    def runs_to_settle(self, min_effect_pct: float = DEFAULT_MIN_EFFECT_PCT) -> int | None:
        """About how many runs per cell would settle an inconclusive comparison, the interval
        narrowing as 1/sqrt(runs): inside +-min_effect_pct if the estimate is inside it, else
        clear of zero. None when that is beyond MOST_RUNS or cannot be told."""
        if self.ci_pct is None or self.runs < 2:
            return None
        half = (self.ci_pct[1] - self.ci_pct[0]) / 2
        room = min_effect_pct - abs(self.rel_pct)
        if room <= 0:
            room = abs(self.rel_pct)
        if room <= 0 or half <= 0:
            return None
        needed = math.ceil(self.runs * (half / room) ** 2)
        return max(needed, self.runs + 1) if needed <= MOST_RUNS else None


@dataclass(frozen=True)
class Drift:
    change: float  # fitted change over the window, relative to the mean
    p_value: float
    drifting: bool


def t_quantile(probability: float, df: float) -> float:
    return student_t.quantile(probability, df)


def summarize(values: Sequence[float]) -> Summary:
    n = len(values)
    if n == 0:
        return Summary(0, math.nan, math.nan, None)
    mean = statistics.fmean(values)
    if n < 2:
        return Summary(1, mean, 0.0, None)
    std = statistics.stdev(values, mean)
    return Summary(n, mean, std, t_quantile(0.975, n - 1) * std / math.sqrt(n))


def welch_p_value(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p of Welch's unequal-variance t-test."""
    va = statistics.variance(a) / len(a)
    vb = statistics.variance(b) / len(b)
    difference = statistics.fmean(b) - statistics.fmean(a)
    if va + vb == 0:  # both samples constant: equal means, or a certain difference
        return 1.0 if difference == 0 else 0.0
    t = difference / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    return 2 * student_t.upper_tail(abs(t), df)


def mann_whitney_p_value(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p of the Mann-Whitney U test (exact for small samples without ties)."""
    from scipy import stats  # slow to import; only when asked for

    return float(stats.mannwhitneyu(a, b, alternative="two-sided").pvalue)


def ratio_interval(
    base: Sequence[float], other: Sequence[float], level: float = CI_LEVEL
) -> tuple[float, float] | None:
    """The `level` confidence interval of mean(other) / mean(base), by Fieller's theorem for
    two independent samples of unequal variances: the ratios R for which mean(other) -
    R * mean(base) is not significantly different from zero, with the Welch-Satterthwaite
    degrees of freedom at the estimated ratio (see Kalibera and Jones, "Rigorous benchmarking
    in reasonable time", ISMM 2013, and Franz, "Ratios: a short guide to confidence limits",
    2007). None when the interval is unbounded: the baseline's mean is not clearly above zero.
    """
    x, y = statistics.fmean(base), statistics.fmean(other)
    vx = statistics.variance(base) / len(base)
    vy = statistics.variance(other) / len(other)
    if x == 0:
        return None
    ratio = y / x
    spread = vy + ratio**2 * vx
    if spread == 0:
        return ratio, ratio
    df = spread**2 / (vy**2 / (len(other) - 1) + ratio**4 * vx**2 / (len(base) - 1))
    t = t_quantile(1 - (1 - level) / 2, df)
    a = x * x - t * t * vx
    if a <= 0:
        return None
    b = x * y
    c = y * y - t * t * vy
    root = math.sqrt(max(b * b - a * c, 0.0))
    return (b - root) / a, (b + root) / a


def compare(
    base: Sequence[float],
    other: Sequence[float],
    test: str = "welch",
    alpha: float = DEFAULT_ALPHA,
) -> Comparison:
    base_mean = statistics.fmean(base) if len(base) else math.nan
    other_mean = statistics.fmean(other) if len(other) else math.nan
    rel_pct = (other_mean - base_mean) / base_mean * 100 if base_mean else math.nan
    difference = other_mean - base_mean
    if len(base) < 2 or len(other) < 2:
        return Comparison(rel_pct, None, False, difference=difference)
    if test == "welch":
        p_value = welch_p_value(base, other)
    elif test == "mann-whitney":
        p_value = mann_whitney_p_value(base, other)
    else:
        raise ValueError(f"unknown test {test}")
    interval = ratio_interval(base, other)
    ci_pct = None if interval is None else ((interval[0] - 1) * 100, (interval[1] - 1) * 100)
    if not any(base) and not any(other):  # zero on both sides (a lock that never sleeps): equal
        rel_pct, ci_pct = 0.0, (0.0, 0.0)
    return Comparison(rel_pct, p_value, p_value < alpha, None, ci_pct, min(len(base), len(other)),
                      difference=difference)  # fmt: skip


def shown_pct(value: float, min_effect_pct: float = DEFAULT_MIN_EFFECT_PCT) -> str:
    """A rel % as a verdict reads it: signed, to one decimal, or more where one would put it
    on the other side of +-min_effect_pct than it was judged on (4.97, significant but below
    5%, is +4.97, never +5.0)."""
    below = abs(value) < min_effect_pct
    for digits in range(1, 7):
        text = f"{value:+.{digits}f}"
        if (abs(float(text)) < min_effect_pct) == below:
            return text
    return f"{value:+}"


def shown_interval(
    ci_pct: tuple[float, float], min_effect_pct: float = DEFAULT_MIN_EFFECT_PCT
) -> str:
    """A rel % interval, each bound as shown_pct rounds it. No figure falls by more than all of
    itself: a lower bound below -100% (the ratio's interval reaching zero) is said in words."""
    low, high = ci_pct
    shown_low = "no lower bound" if low <= -100.0 else shown_pct(low, min_effect_pct)
    return f"[{shown_low}, {shown_pct(high, min_effect_pct)}]"


def judge_change(before: Sequence[float], after: Sequence[float], min_effect_pct: float,
                 exact: bool) -> tuple[float, str]:  # fmt: skip
    """`after`'s change against `before`, in percent of the means, and its judgement: EQUAL,
    BELOW_MIN, HIGHER, LOWER or INCONCLUSIVE. Exact (simulated: one deterministic run a side),
    the change itself decides; measured, the tables' verdict (Welch's test, Fieller's interval)."""
    before_mean, after_mean = statistics.fmean(before), statistics.fmean(after)
    if before_mean == 0:  # a measure that can be zero (context switches): no ratio to take
        if after_mean == 0:
            return math.nan, EQUAL
        if exact:
            return math.nan, HIGHER if after_mean > 0 else LOWER
        judgement = compare(before, after).judgement(min_effect_pct)
        return math.nan, judgement if judgement in (HIGHER, LOWER) else INCONCLUSIVE
    change = (after_mean / before_mean - 1) * 100
    if exact:
        if abs(change) < min_effect_pct:
            return change, EQUAL
        return change, HIGHER if change > 0 else LOWER
    judgement = compare(before, after).judgement(min_effect_pct)
    settled = judgement in (EQUAL, BELOW_MIN, HIGHER, LOWER)
    return change, judgement if settled else INCONCLUSIVE


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (same order as given): the smallest p times m, the
    next times m - 1, ..., kept monotone. Controls the chance of any false "significant" in
    the family at alpha, without Bonferroni's full cost."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [0.0] * len(p_values)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def steady_state(
    times: Sequence[float], rates: Sequence[float], threshold: float = DEFAULT_DRIFT
) -> Drift | None:
    """Fit a line to a run's per-interval throughput; it drifts when the fitted change over the
    window exceeds ``threshold`` of the mean and the slope is significant (p < 0.01).
    None when there are too few intervals to tell."""
    n = len(times)
    if n < MIN_DRIFT_POINTS:
        return None
    mean_x, mean_y = statistics.fmean(times), statistics.fmean(rates)
    sxx = math.fsum((x - mean_x) ** 2 for x in times)
    if sxx == 0 or mean_y == 0:
        return None
    points = list(zip(times, rates, strict=True))
    slope = math.fsum((x - mean_x) * (y - mean_y) for x, y in points) / sxx
    sse = math.fsum((y - (mean_y + slope * (x - mean_x))) ** 2 for x, y in points)
    if sse == 0:
        p_value = 0.0 if slope != 0 else 1.0
    else:
        standard_error = math.sqrt(sse / (n - 2) / sxx)
        p_value = 2 * student_t.upper_tail(abs(slope / standard_error), n - 2)
    change = slope * (times[-1] - times[0]) / mean_y
    return Drift(change, p_value, abs(change) > threshold and p_value < DRIFT_ALPHA)
