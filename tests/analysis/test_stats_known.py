"""Known-answer tests of analysis.stats against values computed by hand or by brute force."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
import scipy.stats as st

from analysis import stats


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
    ci = stats.median_ci(x, 0.95)
    assert (ci.estimate, ci.low, ci.high) == (5.5, 2.0, 9.0)
    ref = st.quantile_test(x, q=5.5, p=0.5).confidence_interval(0.95)
    assert (ci.low, ci.high) == (ref.low, ref.high)


@pytest.mark.parametrize("n, expected", [(6, (1, 6)), (20, (6, 15)), (30, (10, 21)), (100, (40, 61))])
def test_median_ranks_match_exact_binomial(n, expected):
    assert stats.quantile_ranks(n, 0.5, 0.95)[:2] == expected
    assert brute_force_ranks(n, Fraction(1, 2), Fraction(95, 100)) == expected


def test_small_n_gives_widest_interval_and_flag():
    x = np.array([5.0, 1.0, 4.0, 2.0, 3.0])
    ci = stats.median_ci(x, 0.95)
    assert ci.widest and (ci.low, ci.high) == (1.0, 5.0) and (ci.low_rank, ci.high_rank) == (1, 5)
    assert ci.coverage == pytest.approx(30 / 32)
    assert not stats.median_ci(np.arange(1.0, 7.0), 0.95).widest  # n = 6 reaches 95% (62/64)


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


# -- ratio of medians, bootstrap --------------------------------------------------------------

def test_ratio_of_medians_point_estimate():
    r = stats.ratio_ci([np.array([10.0, 20.0, 30.0])], [np.array([5.0, 10.0, 15.0])], n_resamples=200)
    assert r.ratio == pytest.approx(2.0)
    r = stats.ratio_ci([np.array([1.0, 2.0, 3.0, 4.0])], [np.array([1.0, 1.0, 1.0, 2.0])], n_resamples=200)
    assert r.ratio == pytest.approx(2.5)


def test_default_path_bca_9999_on_pooled_single_invocation():
    rng = np.random.default_rng(1)
    b = [rng.lognormal(np.log(20), 0.05, 30)]
    c = [rng.lognormal(np.log(10), 0.05, 30)]
    r = stats.ratio_ci(b, c)  # defaults: median, 0.95, 9999 resamples
    assert r.method == "bca"
    assert r.low < r.ratio < r.high
    assert 1.8 < r.low and r.high < 2.2
    # same numbers as calling scipy directly in the canonical orientation
    again = stats.ratio_ci(b, c)
    assert (again.low, again.high) == (r.low, r.high)


def test_default_path_hierarchical_9999():
    rng = np.random.default_rng(2)
    b = [rng.lognormal(np.log(20), 0.05, 10) for _ in range(3)]
    c = [rng.lognormal(np.log(10), 0.05, 10) for _ in range(3)]
    r = stats.ratio_ci(b, c)
    assert r.method == "hierarchical percentile"
    assert r.low < r.ratio < r.high


def test_hierarchical_resampling_is_two_stage():
    # Invocations that are constant inside: the median of a resample depends only on which
    # invocations were drawn: (1,1) -> 1, (3,3) -> 3, mixed -> 2 with probabilities 1/4, 1/4, 1/2.
    # (Pooled resampling of the 6 values would give P(median = 2) = C(6,3)/64 = 0.3125.)
    sample = [np.array([1.0, 1.0, 1.0]), np.array([3.0, 3.0, 3.0])]
    dist = stats.hierarchical_resample(sample, ("median", "mean"), 20_000, np.random.default_rng(7))
    med = dist["median"]
    assert set(np.unique(med)) == {1.0, 2.0, 3.0}
    assert np.mean(med == 2.0) == pytest.approx(0.5, abs=0.02)
    assert np.mean(med == 1.0) == pytest.approx(0.25, abs=0.02)
    assert np.array_equal(dist["mean"], med)  # constant invocations: mean == median per resample


def test_hierarchical_resampling_ragged_invocations():
    # Sizes 2 and 4: a resample draws 2 invocations and as many iterations as each has.
    sample = [np.array([1.0, 1.0]), np.array([4.0, 4.0, 4.0, 4.0])]
    means = stats.hierarchical_resample(sample, ("mean",), 20_000, np.random.default_rng(3))["mean"]
    # (A, A) -> 1, (B, B) -> 4, mixed -> (2*1 + 4*4) / 6 = 3
    assert set(np.round(np.unique(means), 12)) == {1.0, 3.0, 4.0}
    assert np.mean(np.isclose(means, 3.0)) == pytest.approx(0.5, abs=0.02)


def test_row_median_matches_numpy():
    rng = np.random.default_rng(5)
    for n in (1, 2, 3, 10, 11, 500):
        values = rng.integers(0, 4, size=(40, n)).astype(float)
        assert np.array_equal(stats._row_median_inplace(values.copy()), np.median(values, axis=1))


def test_degenerate_samples_do_not_crash():
    same = [np.full(10, 7.0)]
    r = stats.ratio_ci(same, same, n_resamples=100)
    assert (r.ratio, r.low, r.high) == (1.0, 1.0, 1.0) and r.method.startswith("degenerate")
    one_constant = stats.ratio_ci([np.full(10, 7.0)], [np.linspace(6, 8, 10)], n_resamples=500)
    assert math.isfinite(one_constant.low) and math.isfinite(one_constant.high)
    hier = stats.ratio_ci([np.full(5, 7.0)] * 3, [np.linspace(6, 8, 5)] * 3, n_resamples=500)
    assert math.isfinite(hier.low) and hier.low <= hier.high
    tiny = stats.ratio_ci([np.array([3.0])], [np.array([1.0, 2.0])], n_resamples=100)
    assert tiny.ratio == 2.0 and math.isnan(tiny.low)
    assert stats.verdict(tiny.log_low, tiny.log_high) == "inconclusive"
    assert stats.statistic_ci([np.full(4, 2.0)], "mean").low == 2.0


# -- rank-based -------------------------------------------------------------------------------

def test_mann_whitney_null_counts_small_cases():
    assert stats.mann_whitney_null_counts(2, 2) == [1, 1, 2, 1, 1]
    assert stats.mann_whitney_null_counts(3, 2) == [1, 1, 2, 2, 2, 1, 1]
    counts = stats.mann_whitney_null_counts(7, 5)
    assert sum(counts) == math.comb(12, 5) and counts == counts[::-1]


def test_mann_whitney_null_counts_match_enumeration_and_scipy():
    m, n = 4, 3
    counts = stats.mann_whitney_null_counts(m, n)
    seen = [0] * (m * n + 1)
    for x_ranks in itertools.combinations(range(m + n), m):
        y_ranks = [r for r in range(m + n) if r not in x_ranks]
        u = sum(xr > yr for xr in x_ranks for yr in y_ranks)
        seen[u] += 1
        # scipy's exact one-sided p-value is the null CDF at the observed U
        p = st.mannwhitneyu(np.array(x_ranks, float), np.array(y_ranks, float), alternative="less", method="exact").pvalue
        assert p == pytest.approx(sum(counts[: u + 1]) / math.comb(m + n, m))
    assert seen == counts


def test_hodges_lehmann_by_hand():
    b = np.exp([1.0, 2.0, 3.0])
    c = np.exp([0.0, 1.0])
    hl = stats.hodges_lehmann(b, c, 0.95)
    # differences {1, 0, 2, 1, 3, 2}: median 1.5; m*n = 6 is too small for 95% -> [min, max]
    assert hl.ratio == pytest.approx(math.exp(1.5))
    assert hl.widest and (hl.low, hl.high) == pytest.approx((1.0, math.exp(3.0)))


def test_hodges_lehmann_moses_interval_m5_n5():
    # U null for m = n = 5: P(U <= 2) = 4/252 <= 0.025 < P(U <= 3) = 7/252, so c = 3:
    # the interval is [D_(3), D_(23)] of the 25 sorted differences.
    lb = np.array([0.0, 0.3, 0.7, 1.2, 2.0])
    lc = np.array([0.1, 0.5, 0.6, 0.9, 1.5])
    diffs = sorted(x - y for x in lb for y in lc)
    hl = stats.hodges_lehmann(np.exp(lb), np.exp(lc), 0.95)
    assert not hl.widest
    assert math.log(hl.ratio) == pytest.approx(diffs[12])
    assert (math.log(hl.low), math.log(hl.high)) == pytest.approx((diffs[2], diffs[22]))


def test_moses_rank_normal_approximation_large():
    # above the exact limit the normal approximation is used; compare with the formula
    m = n = 100
    c = stats._moses_rank(m, n, 0.95)
    sigma = math.sqrt(m * n * (m + n + 1) / 12)
    assert c == math.floor(m * n / 2 - 1.959963984540054 * sigma + 0.5)


def test_cliffs_delta_by_hand():
    # baseline [2,3,4] vs candidate [1,1,5]: 6 pairs baseline > candidate, 3 pairs <, 0 ties
    r = stats.rank_test(np.array([2.0, 3.0, 4.0]), np.array([1.0, 1.0, 5.0]))
    assert r.cliffs_delta == pytest.approx(1 / 3)
    r = stats.rank_test(np.array([3.0, 4.0, 5.0]), np.array([1.0, 4.0, 6.0]))  # 4 >, 4 <, 1 tie
    assert r.cliffs_delta == pytest.approx(0.0)
    assert stats.rank_test(np.full(5, 1.0), np.full(5, 1.0)).p_value == 1.0


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
    assert stats.verdict_from_ratio(low, high, 0.05) == expected


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
    g = stats.geometric_mean_ci(logs, logs - z * 0.1, logs + z * 0.1, 0.95)
    assert g.ratio == pytest.approx(1.0) and g.n == 3
    se = math.sqrt(3 * 0.01) / 3
    assert (g.low, g.high) == pytest.approx((math.exp(-z * se), math.exp(z * se)))
    g = stats.geometric_mean_ci(np.log([1.0, 4.0]), np.log([0.9, 3.0]), np.log([1.1, 5.0]))
    assert g.ratio == pytest.approx(2.0)
    assert stats.geometric_mean_ci([0.1], [math.nan], [math.nan]).n == 0


def test_robust_cv():
    x = np.array([10.0, 11.0, 9.0, 10.0, 100.0])
    assert stats.robust_cv(x) == pytest.approx(st.median_abs_deviation(x, scale="normal") / 10.0)
