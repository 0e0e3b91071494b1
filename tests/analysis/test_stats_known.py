"""Known-answer tests of analysis.stats against values computed by hand or by brute force."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
import scipy.stats as st

from analysis import ranks, stats


# -- order statistics -------------------------------------------------------------------------

def brute_force_ranks(n: int, q: Fraction, confidence: Fraction) -> tuple[int, int]:
    """Ranks by exact rational arithmetic: low = smallest k with P(B <= k) >= tail (scipy's ppf),
    high = (smallest k with P(B > k) <= tail) + 1, where B ~ Binomial(n, q)."""
    tail = (1 - confidence) / 2
    pmf = [math.comb(n, k) * q ** k * (1 - q) ** (n - k) for k in range(n + 1)]
    cdf = list(itertools.accumulate(pmf))
    low = next(k for k in range(n + 1) if cdf[k] >= tail)
    high = next(k for k in range(n + 1) if 1 - cdf[k] <= tail) + 1
    return low, high


def test_median_ranks_n10_by_enumeration():
    # Enumerate all 2^10 equally likely below/above patterns of 10 draws around the true median.
    below_counts = [sum(bits) for bits in itertools.product((0, 1), repeat=10)]
    p_at_most = lambda k: Fraction(sum(c <= k for c in below_counts), 1024)  # noqa: E731
    assert p_at_most(1) == Fraction(11, 1024) and p_at_most(1) <= Fraction(1, 40) < p_at_most(2)
    low, high, widest = stats.quantile_ranks(10, 0.5, 0.95)
    assert (low, high, widest) == (2, 9, False)
    covered = Fraction(sum(low <= c <= high - 1 for c in below_counts), 1024)
    assert covered == Fraction(1002, 1024)
    assert stats.rank_coverage(10, 0.5, low, high) == pytest.approx(float(covered), abs=1e-12)


def test_median_ci_n10_values_and_scipy_agree():
    x = np.array([7.0, 3.0, 9.0, 1.0, 5.0, 10.0, 2.0, 8.0, 4.0, 6.0])
    ci = stats.quantile_ci(x, 0.5, 0.95)
    assert (ci.estimate, ci.low, ci.high) == (5.5, 2.0, 9.0)
    ref = st.quantile_test(x, q=5.5, p=0.5).confidence_interval(0.95)
    assert (ci.low, ci.high) == (ref.low, ref.high)


@pytest.mark.parametrize("n, expected", [(6, (1, 6)), (20, (6, 15)), (30, (10, 21)), (100, (40, 61))])
def test_median_ranks_match_exact_binomial(n, expected):
    assert stats.quantile_ranks(n, 0.5, 0.95)[:2] == expected
    assert brute_force_ranks(n, Fraction(1, 2), Fraction(95, 100)) == expected


def test_small_n_gives_widest_interval_and_flag():
    x = np.array([5.0, 1.0, 4.0, 2.0, 3.0])
    ci = stats.quantile_ci(x, 0.5, 0.95)
    assert ci.widest and (ci.low, ci.high) == (1.0, 5.0) and (ci.low_rank, ci.high_rank) == (1, 5)
    assert ci.coverage == pytest.approx(30 / 32)
    assert not stats.quantile_ci(np.arange(1.0, 7.0), 0.5, 0.95).widest  # n = 6 reaches 95% (62/64)


@pytest.mark.parametrize("n, q, num, den", [(500, 0.99, 99, 100), (500, 0.75, 3, 4), (40, 0.75, 3, 4), (2000, 0.99, 99, 100)])
def test_quantile_ranks_match_exact_rational_computation(n, q, num, den):
    low, high, widest = stats.quantile_ranks(n, q, 0.95)
    ref_low, ref_high = brute_force_ranks(n, Fraction(num, den), Fraction(95, 100))
    assert (low, high) == (max(ref_low, 1), min(ref_high, n))
    assert widest == (ref_low < 1 or ref_high > n)


def test_p99_upper_rank_runs_out_for_small_n():
    # n = 500: P(B >= 500) = 0.99^500 = 0.0066 <= 0.025, so the upper rank is exactly n (the max).
    ci = stats.quantile_ci(np.arange(1.0, 501.0), 0.99, 0.95, method="inverted_cdf")
    assert (ci.low_rank, ci.high_rank, ci.widest) == (490, 500, False) and ci.estimate == 495.0
    # n = 100: P(B >= 100) = 0.99^100 = 0.37 > 0.025: no rank reaches 97.5%; the max is used, flagged.
    ci = stats.quantile_ci(np.arange(1.0, 101.0), 0.99, 0.95, method="inverted_cdf")
    assert ci.widest and ci.high == 100.0 and ci.low <= ci.estimate <= ci.high


# -- centres and ratios ------------------------------------------------------------------------

def test_median_centre_of_several_invocations_by_hand():
    # invocation medians 10 and 40: geometric mean 20; log medians ln 10, ln 40 differ by ln 4,
    # so s = ln 4 / sqrt 2 and SE = s / sqrt 2 = ln(4) / 2; t with 1 df
    sample = [np.array([9.0, 10.0, 11.0]), np.array([39.0, 40.0, 41.0])]
    c = stats.median_centre(sample, 0.95)
    assert c.estimate == pytest.approx(20.0)
    assert c.log_se == pytest.approx(math.log(4) / 2) and c.df == 1
    half = st.t.ppf(0.975, 1) * math.log(4) / 2
    assert (c.low, c.high) == pytest.approx((20 * math.exp(-half), 20 * math.exp(half)))
    assert c.method == "t over 2 invocations"


def test_invocations_that_agree_fall_back_to_the_within_invocation_se():
    # identical invocation medians (a coarse timer) must not give a zero-width interval
    sample = [np.array([10.0, 20.0, 30.0]), np.array([10.0, 20.0, 30.0]), np.array([10.0, 20.0, 30.0])]
    c = stats.median_centre(sample, 0.95)
    logs = [np.log(g) for g in sample]
    msw = sum(((g - g.mean()) ** 2).sum() for g in logs) / (9 - 3)
    assert c.estimate == pytest.approx(20.0) and c.log_se == pytest.approx(math.sqrt(msw / 9))
    assert c.df == 2 and c.low < 20.0 < c.high and "within-invocation" in c.method


def test_one_invocation_uses_the_order_statistic_interval():
    x = np.array([7.0, 3.0, 9.0, 1.0, 5.0, 10.0, 2.0, 8.0, 4.0, 6.0])
    c = stats.median_centre([x], 0.95)
    assert (c.estimate, c.low, c.high) == (5.5, 2.0, 9.0)  # ranks 2 and 9, coverage 1002/1024
    z = st.norm.ppf(1 - (1 - 1002 / 1024) / 2)
    assert c.log_se == pytest.approx((math.log(9.0) - math.log(2.0)) / (2 * z)) and math.isinf(c.df)


def test_mean_centre_by_hand():
    sample = [np.array([1.0, 3.0]), np.array([5.0, 7.0])]
    c = stats.mean_centre(sample, 0.95)
    # invocation means 2 and 6: SE = 2 / sqrt 2 ... of the mean 4; relative 0.5 / sqrt 2 * 2 / 4
    se = np.std([2.0, 6.0], ddof=1) / math.sqrt(2)
    assert c.estimate == 4.0 and c.log_se == pytest.approx(se / 4.0) and c.df == 1
    single = stats.mean_centre([np.array([1.0, 2.0, 3.0, 4.0])], 0.95)
    assert single.log_se == pytest.approx(np.std([1, 2, 3, 4], ddof=1) / 2 / 2.5) and single.df == 3


def test_ratio_is_welch_t_on_the_log_scale():
    b = [np.array([19.0, 20.0, 21.0]), np.array([38.0, 40.0, 42.0])]
    c = [np.array([9.0, 10.0, 11.0]), np.array([10.0, 10.0, 10.5])]
    cb, cc = stats.median_centre(b), stats.median_centre(c)
    r = stats.ratio_ci(b, c)
    assert r.ratio == pytest.approx(cb.estimate / cc.estimate)
    se = math.hypot(cb.log_se, cc.log_se)
    df = se ** 4 / (cb.log_se ** 4 / cb.df + cc.log_se ** 4 / cc.df)
    half = st.t.ppf(0.975, df) * se
    assert (r.log_low, r.log_high) == pytest.approx((r.log_ratio - half, r.log_ratio + half))
    assert r.log_se == pytest.approx(se) and r.method.startswith("Welch t")


def test_constant_samples_give_no_interval_not_a_zero_width_win():
    """Two constant but different samples: the uncertainty cannot be estimated, so no interval
    and no verdict beyond `inconclusive` (the bootstrap gave a `win` with a zero-width interval)."""
    r = stats.ratio_ci([np.full(10, 1000.0)] * 3, [np.full(10, 500.0)] * 3)
    assert r.ratio == 2.0 and math.isnan(r.low) and math.isnan(r.high)
    assert "no variation in the baseline or candidate timings" in r.method
    assert stats.verdict(r.log_low, r.log_high) == "inconclusive"
    one_side = stats.ratio_ci([np.full(10, 7.0)], [np.linspace(6, 8, 10)])
    assert math.isnan(one_side.low) and "baseline" in one_side.method and "candidate" not in one_side.method
    same = stats.ratio_ci([np.full(10, 7.0)], [np.full(10, 7.0)])
    assert same.ratio == 1.0 and stats.verdict(same.log_low, same.log_high) == "inconclusive"


def test_degenerate_samples_do_not_crash():
    tiny = stats.ratio_ci([np.array([3.0])], [np.array([1.0, 2.0])])
    assert tiny.ratio == 2.0 and math.isnan(tiny.low)
    assert stats.verdict(tiny.log_low, tiny.log_high) == "inconclusive"
    assert stats.mean_centre([np.full(4, 2.0)]).low == 2.0
    assert math.isnan(stats.median_centre([]).estimate)
    zero = stats.median_centre([np.array([0.0, 1.0, 2.0]), np.array([1.0, 2.0, 3.0])])
    assert math.isnan(zero.log_se) and zero.method.startswith("no interval")


def test_cliffs_delta_by_hand():
    # baseline [2,3,4] vs candidate [1,1,5]: 6 pairs baseline > candidate, 3 pairs <, 0 ties
    r = ranks.rank_test(np.array([2.0, 3.0, 4.0]), np.array([1.0, 1.0, 5.0]))
    assert r.cliffs_delta == pytest.approx(1 / 3)
    r = ranks.rank_test(np.array([3.0, 4.0, 5.0]), np.array([1.0, 4.0, 6.0]))  # 4 >, 4 <, 1 tie
    assert r.cliffs_delta == pytest.approx(0.0)
    assert ranks.rank_test(np.full(5, 1.0), np.full(5, 1.0)).p_value == 1.0


def test_bh_qvalues_by_hand():
    q = stats.bh_qvalues([0.01, 0.04, 0.03, 0.20, math.nan])
    # sorted p: 0.01, 0.03, 0.04, 0.20 (m = 4) -> p*m/i = 0.04, 0.06, 0.0533, 0.20 -> running min from the top
    assert q[:4] == pytest.approx([0.04, 0.16 / 3, 0.16 / 3, 0.20])
    assert math.isnan(q[4])


# -- verdicts, summaries ----------------------------------------------------------------------

@pytest.mark.parametrize("low, high, expected", [
    (1.05, 1.05, "tie"),                       # edges belong to the band
    (1 / 1.05, 1 / 1.05, "tie"),
    (1 / 1.05, 1.05, "tie"),
    (1.05 * (1 + 1e-9), 1.3, "win"),
    (1.0, 1.3, "inconclusive"),
    (0.5, 1 / 1.05 * (1 - 1e-9), "loss"),
    (0.5, 1 / 1.05, "inconclusive"),
    (0.9, 1.1, "inconclusive"),
    (math.nan, math.nan, "inconclusive"),
])
def test_verdict_band_edges(low, high, expected):
    logs = (math.log(low), math.log(high)) if low > 0 else (math.nan, math.nan)
    assert stats.verdict(*logs, 0.05) == expected


def test_verdict_mirrors_on_swap():
    mirror = {"win": "loss", "loss": "win", "tie": "tie", "inconclusive": "inconclusive"}
    for lo, hi in [(0.1, 0.2), (-0.2, -0.1), (-0.01, 0.02), (-0.3, 0.3), (0.0487, 0.06), (-0.06, -0.0487)]:
        assert stats.verdict(-hi, -lo, 0.05) == mirror[stats.verdict(lo, hi, 0.05)]


def test_variance_components_by_hand():
    sample = [np.exp([1.0, 2.0, 3.0]), np.exp([4.0, 5.0, 6.0])]
    vc = stats.variance_components(sample)
    # MSB = 3*1.5^2*2 = 13.5, MSW = 4/4 = 1, n0 = 3 -> between = 12.5/3, share = (25/6)/(31/6)
    assert vc.within == pytest.approx(1.0)
    assert vc.between == pytest.approx(12.5 / 3)
    assert vc.share_between == pytest.approx(25 / 31)
    assert math.isnan(stats.variance_components([np.exp([1.0, 2.0])]).share_between)


def test_geometric_mean_and_interval():
    z = st.norm.ppf(0.975)
    logs = np.log([2.0, 0.5, 1.0])
    g = stats.geometric_mean_ci(logs, [0.1, 0.1, 0.1], 0.95)
    assert g.ratio == pytest.approx(1.0) and g.n == 3
    se = math.sqrt(3 * 0.01) / 3
    assert (g.low, g.high) == pytest.approx((math.exp(-z * se), math.exp(z * se)))
    g = stats.geometric_mean_ci(np.log([1.0, 4.0]), [0.05, 0.2])
    assert g.ratio == pytest.approx(2.0)
    assert stats.geometric_mean_ci([0.1], [math.nan]).n == 0


def test_robust_cv():
    x = np.array([10.0, 11.0, 9.0, 10.0, 100.0])
    assert stats.robust_cv(x) == pytest.approx(st.median_abs_deviation(x, scale="normal") / 10.0)
