"""analysis.ranks: Mann-Whitney null distribution, Moses ranks, Hodges-Lehmann by selection
(checked against building every pairwise difference), Cliff's delta."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.stats as st

from analysis import ranks


def test_mann_whitney_null_counts_small_cases():
    assert ranks.mann_whitney_null_counts(2, 2) == [1, 1, 2, 1, 1]
    assert ranks.mann_whitney_null_counts(3, 2) == [1, 1, 2, 2, 2, 1, 1]
    counts = ranks.mann_whitney_null_counts(7, 5)
    assert sum(counts) == math.comb(12, 5) and counts == counts[::-1]


def test_mann_whitney_null_counts_match_enumeration_and_scipy():
    m, n = 4, 3
    counts = ranks.mann_whitney_null_counts(m, n)
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
    hl = ranks.hodges_lehmann(b, c, 0.95)
    # differences {1, 0, 2, 1, 3, 2}: median 1.5; m*n = 6 is too small for 95% -> [min, max]
    assert hl.ratio == pytest.approx(math.exp(1.5))
    assert hl.widest and (hl.low, hl.high) == pytest.approx((1.0, math.exp(3.0)))


def test_hodges_lehmann_moses_interval_m5_n5():
    # U null for m = n = 5: P(U <= 2) = 4/252 <= 0.025 < P(U <= 3) = 7/252, so c = 3:
    # the interval is [D_(3), D_(23)] of the 25 sorted differences.
    lb = np.array([0.0, 0.3, 0.7, 1.2, 2.0])
    lc = np.array([0.1, 0.5, 0.6, 0.9, 1.5])
    diffs = sorted(x - y for x in lb for y in lc)
    hl = ranks.hodges_lehmann(np.exp(lb), np.exp(lc), 0.95)
    assert not hl.widest
    assert math.log(hl.ratio) == pytest.approx(diffs[12])
    assert (math.log(hl.low), math.log(hl.high)) == pytest.approx((diffs[2], diffs[22]))


def test_moses_rank_normal_approximation_large():
    # above the exact limit the normal approximation is used; compare with the formula
    m = n = 100
    c = ranks.moses_rank(m, n, 0.95)
    sigma = math.sqrt(m * n * (m + n + 1) / 12)
    assert c == math.floor(m * n / 2 - 1.959963984540054 * sigma + 0.5)


def test_kth_difference_matches_every_pairwise_difference():
    rng = np.random.default_rng(11)
    for _ in range(200):
        m, n = (int(v) for v in rng.integers(1, 50, 2))
        digits = int(rng.integers(0, 3))  # rounded values: many ties
        x = np.sort(np.round(rng.normal(0, 1, m), digits))
        y = np.sort(np.round(rng.normal(0, 1, n), digits))
        diffs = np.sort(np.subtract.outer(x, y).ravel())
        for k in {1, m * n, (m * n + 1) // 2, int(rng.integers(1, m * n + 1))}:
            assert ranks.kth_difference(x, y, k) == pytest.approx(diffs[k - 1], abs=1e-12)


def test_kth_difference_of_many_equal_differences_and_large_samples():
    assert ranks.kth_difference(np.zeros(3000), np.zeros(3000), 4_500_000) == 0.0
    rng = np.random.default_rng(12)
    x, y = np.sort(rng.normal(0, 1, 2000)), np.sort(rng.normal(0.3, 1, 1500))
    diffs = np.sort(np.subtract.outer(x, y).ravel())
    for k in (1, 12_345, 1_500_000, 3_000_000):
        assert ranks.kth_difference(x, y, k) == pytest.approx(diffs[k - 1], abs=1e-12)


def test_hodges_lehmann_matches_the_quadratic_definition():
    rng = np.random.default_rng(13)
    b, c = np.exp(rng.normal(1.0, 0.2, 300)), np.exp(rng.normal(0.8, 0.3, 250))
    diffs = np.sort(np.subtract.outer(np.log(b), np.log(c)).ravel())
    hl = ranks.hodges_lehmann(b, c, 0.95)
    rank = ranks.moses_rank(300, 250, 0.95)
    assert math.log(hl.ratio) == pytest.approx(np.median(diffs), abs=1e-12)
    assert (math.log(hl.low), math.log(hl.high)) == pytest.approx((diffs[rank - 1], diffs[diffs.size - rank]), abs=1e-12)
