"""Statistics against hand-computed values and against scipy.stats."""

import math

import numpy as np
import pytest
from locklab.analysis import stats, student_t
from locklab.analysis.verdicts import _figures, _where
from scipy import stats as scipy_stats


def test_summary_matches_hand_computation():
    summary = stats.summarize([1.0, 2.0, 3.0, 4.0, 5.0])
    assert summary.n == 5
    assert summary.mean == pytest.approx(3.0)
    # sample variance: (4 + 1 + 0 + 1 + 4) / 4 = 2.5
    assert summary.std == pytest.approx(math.sqrt(2.5))
    # t(0.975, 4) = 2.776445; half-width = t * s / sqrt(n)
    assert summary.ci95 == pytest.approx(2.776445 * math.sqrt(2.5) / math.sqrt(5), rel=1e-5)
    assert summary.cv == pytest.approx(math.sqrt(2.5) / 3.0)


def test_summary_of_one_or_no_value():
    assert stats.summarize([7.0]).ci95 is None
    assert stats.summarize([7.0]).cv is None
    assert stats.summarize([]).n == 0


def test_welch_matches_hand_computation():
    a, b = [1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 4.0, 6.0, 8.0, 10.0]
    # var/n: 2.5/5 = 0.5 and 10/5 = 2; t = 3 / sqrt(2.5); df = 2.5^2 / (0.5^2/4 + 2^2/4)
    t = 3 / math.sqrt(2.5)
    df = 2.5**2 / (0.25 / 4 + 4 / 4)
    assert df == pytest.approx(5.882353, rel=1e-6)
    expected = 2 * scipy_stats.t.sf(t, df)
    assert stats.welch_p_value(a, b) == pytest.approx(expected, rel=1e-9)
    assert stats.welch_p_value(a, b) == pytest.approx(0.1075, abs=5e-4)


@pytest.mark.parametrize("seed", range(5))
def test_welch_matches_scipy(seed):
    rng = np.random.default_rng(seed)
    a = rng.normal(100, 5, size=5)
    b = rng.normal(104, 9, size=7)
    expected = scipy_stats.ttest_ind(a, b, equal_var=False).pvalue
    assert stats.welch_p_value(list(a), list(b)) == pytest.approx(expected, rel=1e-9)


def test_welch_with_constant_samples():
    assert stats.welch_p_value([5.0, 5.0], [5.0, 5.0]) == 1.0
    assert stats.welch_p_value([5.0, 5.0], [6.0, 6.0]) == 0.0


def test_mann_whitney_matches_scipy_exact():
    a, b = [1.0, 2.0, 3.0, 4.0, 5.0], [6.0, 7.0, 8.0, 9.0, 10.0]
    # Complete separation of 5 vs 5: exact two-sided p = 2 / C(10, 5) = 2 / 252.
    assert stats.mann_whitney_p_value(a, b) == pytest.approx(2 / 252)
    # With 3 vs 3 it can never reach 0.05: why Welch is the default.
    assert stats.mann_whitney_p_value([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]) == pytest.approx(0.1)


def test_compare_rel_and_significance():
    base = [100.0, 101.0, 99.0, 100.5, 99.5]
    faster = [110.0, 111.0, 109.0, 110.5, 109.5]
    comparison = stats.compare(base, faster)
    assert comparison.rel_pct == pytest.approx(10.0)
    assert comparison.significant and comparison.p_value < 1e-6
    same = stats.compare(base, [100.2, 99.1, 100.9, 99.8, 100.0])
    assert not same.significant
    single = stats.compare(base, [120.0])
    assert single.p_value is None and not single.significant
    assert single.rel_pct == pytest.approx(20.0)


def test_steady_state_matches_scipy_linregress():
    rng = np.random.default_rng(3)
    times = np.arange(1, 21) * 0.1
    flat = 1e6 + rng.normal(0, 1e4, size=20)
    rising = flat + (times - times[0]) * 2e5  # +200k/s per s over 1.9 s: ~ +38 %
    for series in (flat, rising):
        fit = scipy_stats.linregress(times, series)
        drift = stats.steady_state(list(times), list(series))
        assert drift is not None
        assert drift.p_value == pytest.approx(fit.pvalue, rel=1e-6, abs=1e-12)
        assert drift.change == pytest.approx(fit.slope * 1.9 / series.mean())
    assert not stats.steady_state(list(times), list(flat)).drifting
    assert stats.steady_state(list(times), list(rising)).drifting
    assert stats.steady_state([0.1, 0.2], [1.0, 2.0]) is None  # too few points


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ([2], "2"),
        ([8, 16, 32], ">= 8"),
        ([1, 2], "<= 2"),
        ([2, 4], "2-4"),
        ([1, 4, 16], "1, 4, 16"),
    ],
)
def test_where_names_row_sets(rows, expected):
    assert _where(rows, [1, 2, 4, 8, 16, 32]) == expected


def test_holm_matches_hand_computation():
    # sorted: 0.01 x 3 = 0.03; 0.03 x 2 = 0.06; 0.04 x 1 = 0.04, kept monotone -> 0.06
    assert stats.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert stats.holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])  # capped at 1
    assert stats.holm([]) == []


# Degrees of freedom as Welch makes them (fractional, from 1 up) and as summaries use them.
T_GRID_DF = [0.5, 1.0, 1.7, 2.0, 2.9, 3.0, 4.0, 5.882353, 9.0, 29.5, 100.0, 1e4]
T_GRID_T = [0.0, 1e-6, 0.1, 0.7, 1.0, 1.96, 2.5, 4.0, 10.0, 60.0, 1e4]


@pytest.mark.parametrize("df", T_GRID_DF)
def test_student_t_tail_matches_scipy(df):
    for t in T_GRID_T:
        for signed in (t, -t):
            expected = scipy_stats.t.sf(signed, df)
            got = student_t.upper_tail(signed, df)
            assert got == pytest.approx(expected, rel=1e-9, abs=1e-300), (signed, df)


@pytest.mark.parametrize("df", T_GRID_DF)
def test_student_t_quantile_matches_scipy(df):
    for probability in (1e-6, 0.01, 0.025, 0.3, 0.5, 0.8, 0.95, 0.975, 0.995, 1 - 1e-6):
        expected = scipy_stats.t.ppf(probability, df)
        assert student_t.quantile(probability, df) == pytest.approx(
            expected, rel=1e-9, abs=1e-12
        ), (probability, df)


def test_student_t_quantile_refuses_a_probability_outside_zero_one():
    for probability in (0.0, 1.0, -0.1, math.nan):
        with pytest.raises(ValueError):
            student_t.quantile(probability, 3.0)


@pytest.mark.parametrize(("runs", "cv_base", "cv_other"), [(3, 0.05, 0.05), (5, 0.03, 0.10),
                                                            (10, 0.08, 0.02)])  # fmt: skip
def test_ratio_interval_covers_the_true_ratio(runs, cv_base, cv_other):
    """Fieller's 95% interval holds the true ratio of means (1.1 here) in at least 90% of
    2000 synthetic draws, at few runs and unequal variances."""
    rng = np.random.default_rng(runs)
    hits = 0
    draws = 2000
    for _ in range(draws):
        base = rng.normal(100.0, 100.0 * cv_base, runs)
        other = rng.normal(110.0, 110.0 * cv_other, runs)
        interval = stats.ratio_interval(list(base), list(other))
        hits += interval is not None and interval[0] <= 1.1 <= interval[1]
    assert hits / draws >= 0.90


def test_ratio_interval_is_unbounded_when_the_baseline_may_be_zero():
    assert stats.ratio_interval([1.0, -1.0, 0.5], [10.0, 11.0, 12.0]) is None
    low, high = stats.ratio_interval([100.0, 100.0], [110.0, 110.0])
    assert low == high == pytest.approx(1.1)


def test_a_and_a_is_not_called_a_regression():
    """The same lock against itself, 500 synthetic cells of 5 runs at a 2% CV (seeded): the
    verdict calls at most about alpha of them significant, and none a change of 5% or more."""
    rng = np.random.default_rng(7)
    judged = [
        stats.compare(list(rng.normal(100, 2, 5)), list(rng.normal(100, 2, 5))).judgement()
        for _ in range(500)
    ]
    significant = sum(j in (stats.HIGHER, stats.LOWER, stats.BELOW_MIN) for j in judged)
    assert significant / len(judged) <= 0.075  # alpha, with room for 500 draws
    assert stats.HIGHER not in judged and stats.LOWER not in judged


@pytest.mark.parametrize(
    ("base", "other", "expected"),
    [
        ([100, 101, 99, 100], [120, 121, 119, 120], stats.HIGHER),
        ([100, 101, 99, 100], [80, 81, 79, 80], stats.LOWER),
        ([100.0, 100.1, 99.9, 100.0], [102, 102.1, 101.9, 102], stats.BELOW_MIN),
        ([100, 101, 99, 100], [100, 101, 99, 100.5], stats.EQUAL),
        ([100, 130, 70, 100], [100, 140, 60, 110], stats.INCONCLUSIVE),
        ([100], [100, 101], stats.UNTESTED),
    ],
)
def test_judgements(base, other, expected):
    assert stats.compare(base, other).judgement(5.0) == expected


def test_a_significant_change_from_a_baseline_of_zero_keeps_its_direction():
    """A lock that never sleeps has 0 switches per 1k ops: rel % has no value there, and a
    column that switches 300 times as often once read "fewer switches (+nan%)"."""
    more = stats.compare([0.0, 0.0, 0.0], [300.0, 310.0, 320.0])
    assert math.isnan(more.rel_pct) and more.judgement(5.0) == stats.HIGHER
    assert stats.compare([0.0, 0.0, 0.0], [-3.0, -3.1, -3.2]).judgement(5.0) == stats.LOWER
    assert _figures([more], 5.0) == "(from a baseline of 0, p < 0.001)"
    assert stats.judge_change([0.0], [300.0], 5.0, exact=True)[1] == stats.HIGHER
    assert stats.judge_change([0.0, 0.0, 0.0], [300.0, 310.0, 320.0], 5.0, exact=False)[1] == (
        stats.HIGHER
    )
    assert stats.judge_change([0.0], [0.0], 5.0, exact=True)[1] == stats.EQUAL
    # Zero on both sides, as both locks' switches at one writer: equal, not "inconclusive".
    assert stats.compare([0.0, 0.0, 0.0], [0.0, 0.0, 0.0]).judgement(5.0) == stats.EQUAL


def test_runs_to_settle_shrink_the_interval_as_one_over_root_n():
    comparison = stats.Comparison(1.0, 0.5, False, None, (-7.0, 9.0), 5)
    # half-width 8, room 5 - 1 = 4: (8 / 4)^2 = 4 times the runs
    assert comparison.judgement(5.0) == stats.INCONCLUSIVE
    assert comparison.runs_to_settle(5.0) == 20
    wide = stats.Comparison(1.0, 0.5, False, None, (-300.0, 300.0), 5)
    assert wide.runs_to_settle(5.0) is None  # beyond MOST_RUNS


def test_a_shown_rel_never_contradicts_its_verdict():
    """Rounded for display after judging, to as many digits as keep it on its side of the
    minimum effect; a lower bound past -100% (no figure falls by more than all of itself) is
    said in words."""
    assert stats.shown_pct(4.97) == "+4.97"  # significant but below 5%: never "+5.0"
    assert stats.shown_pct(5.04) == "+5.0" and stats.shown_pct(-12.34) == "-12.3"
    assert stats.shown_pct(-4.9996) == "-4.9996"
    assert stats.shown_interval((-4.96, 4.97)) == "[-4.96, +4.97]"  # "equal within 5%" holds
    assert stats.shown_interval((-215.2, 529.9)) == "[no lower bound, +529.9]"
