"""Rank-based cross-checks of a comparison: Mann-Whitney U, Cliff's delta, Hodges-Lehmann.

They do not decide verdicts (the ratio interval of stats.py does); they say whether a
distribution-free view of the same two samples agrees.

- `rank_test`: two-sided Mann-Whitney U (scipy) and Cliff's delta from the same U1:
  delta = 2*U1/(m*n) - 1 (> 0: the candidate tends to be faster).
- `hodges_lehmann`: the median of all m*n pairwise differences of log times (baseline -
  candidate) as a ratio exp(shift), with the Moses interval [D_(c), D_(mn+1-c)], c from the
  exact Mann-Whitney null distribution (m*n <= EXACT_U_PAIRS_MAX) or its normal approximation.
  The differences are never built: `kth_difference` selects the k-th smallest of them from the
  two sorted samples by bisection on the value, counting the differences below a value with
  one binary search per baseline value, so time is O((m + n) log n x bisection steps) and
  memory O(m + n) (a 500-batch echo row has 250,000 differences per pair of invocations).
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.stats as st

from .stats import DEFAULT_CONFIDENCE, check_confidence, two_sided_quantile

#: Exact Mann-Whitney null distribution up to this many pairs, normal approximation above.
EXACT_U_PAIRS_MAX = 2_500
#: Bisection stops once at most this many differences lie inside the bracket (then they are
#: built and sorted), or when the bracket cannot be split any further (every difference in it
#: is then the same number).
CANDIDATES_MAX = 4_096
BISECTION_STEPS_MAX = 200


@dataclass(frozen=True)
class RankTest:
    p_value: float
    cliffs_delta: float


def rank_test(baseline: np.ndarray, candidate: np.ndarray) -> RankTest:
    """Two-sided Mann-Whitney U (scipy, method auto) and Cliff's delta from the same U.

    delta = P(baseline > candidate) - P(baseline < candidate) = 2*U1/(m*n) - 1, where U1 is
    scipy's statistic for the baseline; delta > 0 means the candidate tends to be faster.
    A NaN p-value (every value identical) is reported as 1.0: no evidence of a difference.
    """
    b = np.asarray(baseline, dtype=np.float64).ravel()
    c = np.asarray(candidate, dtype=np.float64).ravel()
    if b.size == 0 or c.size == 0:
        return RankTest(math.nan, math.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = st.mannwhitneyu(b, c, alternative="two-sided", method="auto")
    p = float(res.pvalue)
    delta = 2.0 * float(res.statistic) / (b.size * c.size) - 1.0
    return RankTest(1.0 if math.isnan(p) else p, delta)


def mann_whitney_null_counts(m: int, n: int) -> list[int]:
    """Exact counts of U = 0..m*n under H0 (no ties): coefficients of the Gaussian binomial.

    [m+n choose m]_q = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i), in exact integer arithmetic.
    The counts sum to C(m+n, m).
    """
    size = m * n + 1
    poly = [0] * size
    poly[0] = 1
    for i in range(1, m + 1):
        shift = n + i
        for u in range(size - 1, shift - 1, -1):
            poly[u] -= poly[u - shift]
        for u in range(i, size):
            poly[u] += poly[u - i]
    return poly


@functools.lru_cache(maxsize=256)
def moses_rank(m: int, n: int, confidence: float) -> int:
    """Largest c with P(U <= c-1) <= alpha/2; 0 when even c = 1 is not allowed."""
    tail = (1 - confidence) / 2
    pairs = m * n
    if pairs <= EXACT_U_PAIRS_MAX:
        counts = np.array(mann_whitney_null_counts(m, n), dtype=object)
        total = math.comb(m + n, m)
        cdf = np.cumsum(counts)
        allowed = [u + 1 for u in range(pairs + 1) if cdf[u] * 1.0 / total <= tail]
        return max(allowed) if allowed else 0
    sigma = math.sqrt(pairs * (m + n + 1) / 12.0)
    return max(0, math.floor(pairs / 2 - two_sided_quantile(confidence, math.inf) * sigma + 0.5))


def _count_at_most(x: np.ndarray, y: np.ndarray, value: float) -> int:
    """Number of pairs with x_i - y_j <= value (x, y sorted ascending): y_j >= x_i - value."""
    return int(y.size * x.size - np.searchsorted(y, x - value, side="left").sum())


def _outside(value: float, direction: float) -> float:
    """`value` moved outwards by far more than the rounding of x_i - value (a few ulps)."""
    return value + direction * (abs(value) + 1.0) * 1e-9


def kth_difference(x: np.ndarray, y: np.ndarray, k: int) -> float:
    """The k-th smallest (1-based) of the x.size * y.size differences x_i - y_j.

    `x` and `y` sorted ascending. Invariant of the bisection: fewer than k differences are
    <= low, at least k are <= high; so the answer lies in (low, high]. The bracket starts just
    outside [min, max] of the differences, so that rounding in the count cannot lose one.
    """
    m, n = x.size, y.size
    assert 1 <= k <= m * n, (k, m, n)
    low = _outside(float(x[0] - y[-1]), -1.0)
    high = _outside(float(x[-1] - y[0]), 1.0)
    below, at_high = _count_at_most(x, y, low), _count_at_most(x, y, high)
    assert below == 0 and at_high == m * n, (below, at_high, m * n)
    for _ in range(BISECTION_STEPS_MAX):
        mid = low + (high - low) / 2
        if at_high - below <= CANDIDATES_MAX or not low < mid < high:
            break
        count = _count_at_most(x, y, mid)
        if count >= k:
            high, at_high = mid, count
        else:
            low, below = mid, count
    start = np.searchsorted(y, x - high, side="left")
    stop = np.searchsorted(y, x - low, side="left")
    lengths = stop - start
    if lengths.sum() > CANDIDATES_MAX:  # the bracket cannot shrink: its differences are all equal
        i = int(np.flatnonzero(lengths)[0])
        return float(x[i] - y[start[i]])
    inside = np.concatenate([x[i] - y[start[i]:stop[i]] for i in np.flatnonzero(lengths)]) if lengths.any() \
        else np.array([high])
    inside.sort()
    return float(inside[min(max(k - below, 1), inside.size) - 1])


@dataclass(frozen=True)
class ShiftCI:
    """Hodges-Lehmann shift of log values (baseline - candidate) as a ratio exp(shift)."""

    ratio: float
    low: float
    high: float
    widest: bool


def hodges_lehmann(baseline: np.ndarray, candidate: np.ndarray,
                   confidence: float = DEFAULT_CONFIDENCE) -> ShiftCI:
    """Median of all pairwise log differences with the Moses distribution-free interval.

    Interval = [D_(c), D_(mn+1-c)] of the sorted differences, c from `moses_rank`; if the
    sample is too small for the confidence, [min D, max D] flagged `widest`.
    """
    check_confidence(confidence)
    b = np.asarray(baseline, dtype=np.float64).ravel()
    c = np.asarray(candidate, dtype=np.float64).ravel()
    if b.size == 0 or c.size == 0 or (b <= 0).any() or (c <= 0).any():
        return ShiftCI(math.nan, math.nan, math.nan, True)
    lb, lc = np.sort(np.log(b)), np.sort(np.log(c))
    pairs = lb.size * lc.size
    middle = kth_difference(lb, lc, (pairs + 1) // 2)
    shift = middle if pairs % 2 else (middle + kth_difference(lb, lc, pairs // 2 + 1)) / 2
    rank = moses_rank(lb.size, lc.size, confidence)
    widest = rank < 1
    rank = max(rank, 1)
    low, high = kth_difference(lb, lc, rank), kth_difference(lb, lc, pairs + 1 - rank)
    return ShiftCI(math.exp(shift), math.exp(low), math.exp(high), widest)
