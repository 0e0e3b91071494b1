"""Statistical building blocks: pure functions on numpy arrays (no I/O, no pandas).

Conventions
- A *sample* of one runtime for one benchmark is a list of 1-D float arrays, one array per
  process invocation (the iterations of that invocation), in ns per op (or ns per batch).
- Ratios are baseline / candidate, so > 1 means the candidate is faster. Every interval of a
  ratio is computed on the log scale and exponentiated; verdicts are decided on the log scale
  too, which makes swapping baseline and candidate mirror everything exactly (log ratio and
  interval endpoints change sign; win <-> loss).
- Randomness is reproducible and role-independent: the random stream a sample is resampled
  with is derived from SEED and from the joint rank pattern of the two samples being compared,
  never from which side is the baseline. Hence swapping the sides, or scaling every timing by a
  constant, reuses exactly the same resampling indices.

Methods (each with the reason; see analysis/README.md for the longer version)
- `quantile_ci`: distribution-free order-statistic interval [x_(l), x_(u)] of a quantile from
  the binomial distribution (scipy.stats.quantile_test(...).confidence_interval), equal-tailed,
  exact ranks. When n is too small for the requested confidence the missing side falls back
  to the sample minimum / maximum and the result is flagged `widest` with its true coverage.
- `ratio_cis` / `ratio_ci`: bootstrap CI of a ratio of statistics (median, mean); one
  resampling of each side serves every statistic requested.
  * both samples have >= 2 invocations: two-stage (hierarchical) bootstrap — resample the
    invocations with replacement, then the iterations within each drawn invocation — and a
    percentile interval on the log ratio. Invocations are the experimental unit that machine
    drift acts on; pooling them as if independent gives intervals that are too narrow.
    Percentile, not BCa: BCa's acceleration needs a jackknife of the two-level design, which
    with 3 invocations is not meaningful.
  * otherwise: scipy.stats.bootstrap, BCa, on the pooled iterations; if BCa is undefined
    (e.g. a degenerate jackknife) the percentile interval of the same bootstrap distribution.
  * both samples constant: the interval is the point (nothing varies); fewer than 2 values on a
    side: no interval (NaN).
- `hodges_lehmann`: median of all pairwise differences of log times, with the Moses interval
  whose ranks come from the exact Mann-Whitney null distribution (m*n <= 2500) or its normal
  approximation.
- `rank_test`: Mann-Whitney U two-sided p-value (scipy) and Cliff's delta from the same U1:
  delta = 2*U1/(m*n) - 1. `bh_qvalues`: Benjamini-Hochberg (scipy false_discovery_control).
- `variance_components`: one-way random-effects ANOVA (method of moments) on log ns/op.
- `verdict`: symmetric tie band on the log scale: [1/(1+band), 1+band].
- `geometric_mean_ci`: geometric mean of ratios with an interval from the per-benchmark log CIs.
"""

from __future__ import annotations

import functools
import hashlib
import math
import warnings
from dataclasses import dataclass
from typing import Callable, Literal, Sequence

import numpy as np
import scipy.stats as st

SEED = 20261122
DEFAULT_RESAMPLES = 9_999
DEFAULT_CONFIDENCE = 0.95
DEFAULT_TIE_BAND = 0.05
#: Exact Mann-Whitney null distribution up to this many pairs, normal approximation above.
EXACT_U_PAIRS_MAX = 2_500
#: Resampled values held in memory at once by the hierarchical bootstrap.
CHUNK_VALUES = 2_000_000

Statistic = Literal["median", "mean"]
Verdict = Literal["win", "loss", "tie", "inconclusive"]
Sample = Sequence[np.ndarray]

_STAT_FUNCS: dict[str, Callable[..., np.ndarray]] = {"median": np.median, "mean": np.mean}
_NAN_STAT_FUNCS: dict[str, Callable[..., np.ndarray]] = {"median": np.nanmedian, "mean": np.nanmean}


def pooled(sample: Sample) -> np.ndarray:
    """All values of a sample in one array (invocation order, then iteration order)."""
    arrays = [np.asarray(a, dtype=np.float64).ravel() for a in sample]
    return np.concatenate(arrays) if arrays else np.empty(0)


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


# -- order statistics -------------------------------------------------------------------------

@dataclass(frozen=True)
class QuantileCI:
    """Point estimate and order-statistic interval of a quantile.

    Ranks are 1-based positions in the sorted sample; `coverage` is the exact coverage of
    [x_(low_rank), x_(high_rank)] for a continuous distribution; `widest` is True when the
    requested confidence was not reachable and a side fell back to the minimum / maximum.
    """

    q: float
    n: int
    estimate: float
    low: float
    high: float
    low_rank: int
    high_rank: int
    coverage: float
    widest: bool


def quantile_ranks(n: int, q: float, confidence: float) -> tuple[int, int, bool]:
    """Equal-tailed order-statistic ranks (1-based) for the q-quantile of n values.

    Same rule as scipy.stats.quantile_test's interval: low rank = binom.ppf(alpha/2), high
    rank = binom.isf(alpha/2) + 1 with B ~ Binomial(n, q) the count below the quantile.
    Out-of-range ranks are clipped to 1 / n and reported via the returned flag.
    """
    _check_confidence(confidence)
    if n < 1:
        raise ValueError("quantile_ranks needs at least one value")
    tail = (1.0 - confidence) / 2.0
    dist = st.binom(n, q)
    low = int(dist.ppf(tail))
    high = int(dist.isf(tail)) + 1
    widest = low < 1 or high > n
    return max(low, 1), min(high, n), widest


def rank_coverage(n: int, q: float, low_rank: int, high_rank: int) -> float:
    """P(x_(low) <= true q-quantile < x_(high)) = P(low <= B <= high-1), B ~ Binomial(n, q)."""
    dist = st.binom(n, q)
    return float(dist.cdf(high_rank - 1) - dist.cdf(low_rank - 1))


def quantile_ci(values: np.ndarray, q: float = 0.5, confidence: float = DEFAULT_CONFIDENCE,
                method: str = "linear") -> QuantileCI:
    """Quantile estimate (numpy `method`) and its distribution-free order-statistic interval."""
    x = np.sort(np.asarray(values, dtype=np.float64).ravel())
    n = x.size
    if n == 0:
        nan = math.nan
        return QuantileCI(q, 0, nan, nan, nan, 0, 0, nan, True)
    low_rank, high_rank, widest = quantile_ranks(n, q, confidence)
    if not widest:
        ci = st.quantile_test(x, q=float(np.median(x)), p=q).confidence_interval(confidence)
        assert (ci.low, ci.high) == (x[low_rank - 1], x[high_rank - 1]), "rank rule diverged from scipy"
    estimate = float(np.quantile(x, q, method=method))
    return QuantileCI(q=q, n=n, estimate=estimate, low=float(x[low_rank - 1]), high=float(x[high_rank - 1]),
                      low_rank=low_rank, high_rank=high_rank,
                      coverage=rank_coverage(n, q, low_rank, high_rank), widest=widest)


def median_ci(values: np.ndarray, confidence: float = DEFAULT_CONFIDENCE) -> QuantileCI:
    return quantile_ci(values, 0.5, confidence)


# -- spread and invocation structure ----------------------------------------------------------

def robust_cv(values: np.ndarray) -> float:
    """Normal-consistent MAD (scipy median_abs_deviation, scale='normal') divided by the median.

    Robust analogue of the coefficient of variation: one slow iteration does not inflate it.
    """
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        return math.nan
    med = float(np.median(x))
    return float(st.median_abs_deviation(x, scale="normal") / med) if med > 0 else math.nan


@dataclass(frozen=True)
class VarianceComponents:
    """One-way random-effects decomposition of log values into between/within invocations."""

    between: float
    within: float
    share_between: float
    f_pvalue: float


def variance_components(sample: Sample) -> VarianceComponents:
    """ANOVA (method-of-moments) estimator on log values.

    MSB = sum n_i (mean_i - mean)^2 / (k-1), MSW = sum (y_ij - mean_i)^2 / (N-k),
    n0 = (N - sum n_i^2 / N) / (k-1); sigma_b^2 = max(0, (MSB - MSW) / n0), sigma_w^2 = MSW,
    share = sigma_b^2 / (sigma_b^2 + sigma_w^2) (the intraclass correlation). The p-value is the
    F test of "no invocation effect" (scipy.stats.f_oneway). NaN with < 2 invocations or when
    some invocation has < 2 values or nothing varies.
    """
    groups = [np.log(np.asarray(g, dtype=np.float64)) for g in sample if len(g) > 0]
    nan = math.nan
    k = len(groups)
    sizes = np.array([g.size for g in groups])
    if k < 2 or sizes.min() < 2:
        return VarianceComponents(nan, nan, nan, nan)
    total = sizes.sum()
    grand = np.concatenate(groups).mean()
    msb = float(sum(g.size * (g.mean() - grand) ** 2 for g in groups) / (k - 1))
    msw = float(sum(((g - g.mean()) ** 2).sum() for g in groups) / (total - k))
    n0 = (total - (sizes ** 2).sum() / total) / (k - 1)
    between = max(0.0, (msb - msw) / n0)
    if between + msw == 0.0:
        return VarianceComponents(0.0, 0.0, nan, nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pvalue = float(st.f_oneway(*groups).pvalue)
    return VarianceComponents(between, msw, between / (between + msw), pvalue)


# -- reproducible, role-independent random streams ---------------------------------------------

def _digest(*parts: np.ndarray) -> int:
    h = hashlib.blake2b(digest_size=8)
    for part in parts:
        h.update(np.ascontiguousarray(part).tobytes())
        h.update(b"|")
    return int.from_bytes(h.digest(), "little")


def _pair_keys(x: Sample, y: Sample) -> tuple[int, int]:
    """Keys of two samples from their joint ranks and invocation sizes (scale invariant)."""
    px, py = pooled(x), pooled(y)
    ranks = st.rankdata(np.concatenate([px, py]))
    sx = np.array([len(a) for a in x], dtype=np.int64)
    sy = np.array([len(a) for a in y], dtype=np.int64)
    return _digest(ranks[: px.size], sx), _digest(ranks[px.size:], sy)


def _pair_rngs(x: Sample, y: Sample, seed: int
               ) -> tuple[bool, bool, np.random.Generator, np.random.Generator]:
    """(swapped, identical, rng of the first in canonical order, rng of the second).

    `identical`: equal keys, i.e. the two samples are the same values in the same layout; no
    orientation can be preferred, so callers symmetrise the interval around 0 (log scale).
    """
    kx, ky = _pair_keys(x, y)
    swapped = kx > ky
    lo, hi = (ky, kx) if swapped else (kx, ky)
    seq = np.random.SeedSequence(seed, spawn_key=(lo, hi))
    first, second = seq.spawn(2)
    return swapped, kx == ky, np.random.default_rng(first), np.random.default_rng(second)


def _single_rng(x: Sample, seed: int) -> np.random.Generator:
    px = pooled(x)
    key = _digest(st.rankdata(px), np.array([len(a) for a in x], dtype=np.int64))
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(key,)))


# -- bootstrap --------------------------------------------------------------------------------

def hierarchical_resample(sample: Sample, statistics: Sequence[Statistic], n_resamples: int,
                          rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Bootstrap distributions of `statistics` under two-stage resampling (same resamples for all).

    For each of n_resamples: draw k invocations with replacement from the k invocations, then
    for each drawn invocation draw as many iterations as it has, with replacement, from it;
    each statistic is taken over all drawn values. Ragged invocations are padded with NaN.
    """
    groups = [np.asarray(g, dtype=np.float64).ravel() for g in sample]
    k = len(groups)
    sizes = np.array([g.size for g in groups], dtype=np.int64)
    width = int(sizes.max())
    table = np.full((k, width), np.nan)
    for i, g in enumerate(groups):
        table[i, : g.size] = g
    flat = table.ravel()
    ragged = bool((sizes != width).any())
    funcs = _NAN_STAT_FUNCS if ragged else _STAT_FUNCS
    chunk = max(1, CHUNK_VALUES // (k * width))
    out = {name: np.empty(n_resamples) for name in statistics}
    for start in range(0, n_resamples, chunk):
        count = min(chunk, n_resamples - start)
        inv = rng.integers(0, k, size=(count, k), dtype=np.int32)
        if ragged:
            drawn_sizes = sizes[inv]
            it = np.floor(rng.random((count, k, width)) * drawn_sizes[..., None]).astype(np.int64)
            values = flat.take(it + (inv.astype(np.int64) * width)[..., None])
            values[np.arange(width) >= drawn_sizes[..., None]] = np.nan
        else:
            it = rng.integers(0, width, size=(count, k, width), dtype=np.int32)
            values = flat.take(it + (inv * width)[..., None])
        values = values.reshape(count, k * width)
        # the median (a partition in place) goes last: it reorders `values`
        for name in sorted(statistics, key=lambda s: s == "median"):
            if name == "median" and not ragged:
                out[name][start: start + count] = _row_median_inplace(values)
            else:
                out[name][start: start + count] = funcs[name](values, axis=1)
    return out


def _row_median_inplace(values: np.ndarray) -> np.ndarray:
    """Median of each row, equal to np.median(values, axis=1) but ~5x faster; reorders rows.

    One partition at h = n // 2 puts the h-th smallest value at column h with every smaller
    value before it; for even n the other middle value is the maximum of columns [0, h).
    """
    n = values.shape[1]
    half = n // 2
    values.partition(half, axis=1)
    upper = values[:, half]
    if n % 2:
        return upper.copy()
    return (values[:, :half].max(axis=1) + upper) / 2


def percentile_interval(distribution: np.ndarray, confidence: float) -> tuple[float, float]:
    tail = (1 - confidence) / 2
    low, high = np.quantile(distribution, [tail, 1 - tail])
    return float(low), float(high)


@dataclass(frozen=True)
class RatioCI:
    """Ratio estimate with its interval; `log_*` are the natural logs (used for verdicts)."""

    ratio: float
    low: float
    high: float
    log_ratio: float
    log_low: float
    log_high: float
    method: str


def _ratio_from_logs(log_ratio: float, log_low: float, log_high: float, method: str) -> RatioCI:
    return RatioCI(math.exp(log_ratio), math.exp(log_low) if np.isfinite(log_low) else math.nan,
                   math.exp(log_high) if np.isfinite(log_high) else math.nan,
                   log_ratio, log_low, log_high, method)


def _bootstrap_logratio(first: np.ndarray, second: np.ndarray, statistic: Statistic, confidence: float,
                        n_resamples: int, rng: np.random.Generator) -> tuple[float, float, str]:
    func = _STAT_FUNCS[statistic]

    def log_ratio(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.log(func(a, axis=axis)) - np.log(func(b, axis=axis))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = st.bootstrap((first, second), log_ratio, n_resamples=n_resamples, method="BCa",
                           confidence_level=confidence, vectorized=True, rng=rng)
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if np.isfinite(low) and np.isfinite(high):
        return low, high, "bca"
    low, high = percentile_interval(res.bootstrap_distribution, confidence)
    return low, high, "percentile"


@dataclass(frozen=True)
class PairBootstrap:
    """Ratio intervals of several statistics from one resampling of each side.

    With the hierarchical design, `baseline` / `candidate` hold each side's bootstrap
    distribution per statistic (so per-side intervals can reuse the same resamples);
    otherwise they are None.
    """

    cis: dict[str, RatioCI]
    hierarchical: bool
    baseline: dict[str, np.ndarray] | None = None
    candidate: dict[str, np.ndarray] | None = None


def ratio_cis(baseline: Sample, candidate: Sample, statistics: Sequence[Statistic] = ("median",),
              confidence: float = DEFAULT_CONFIDENCE, n_resamples: int = DEFAULT_RESAMPLES,
              seed: int = SEED) -> PairBootstrap:
    """stat(baseline) / stat(candidate) for each statistic, with bootstrap intervals.

    Design (see the module doc): hierarchical percentile when both sides have >= 2
    invocations, else BCa on pooled values via scipy.stats.bootstrap. The computation always
    runs in a canonical orientation decided by the samples' joint ranks, and is negated on the
    log scale when the caller's orientation is the other one, so swapping the sides mirrors
    the result exactly. Two identical samples get the interval's symmetric hull around 0.
    """
    _check_confidence(confidence)
    if n_resamples < 1:
        raise ValueError("n_resamples must be >= 1")
    b, c = pooled(baseline), pooled(candidate)
    if b.size == 0 or c.size == 0:
        raise ValueError("ratio_ci needs values on both sides")
    logs = {name: float(np.log(_STAT_FUNCS[name](b)) - np.log(_STAT_FUNCS[name](c))) for name in statistics}
    if b.size < 2 or c.size < 2:
        return PairBootstrap({n: _ratio_from_logs(v, math.nan, math.nan, "none (fewer than 2 values on a side)")
                              for n, v in logs.items()}, False)
    if np.ptp(b) == 0 and np.ptp(c) == 0:
        return PairBootstrap({n: _ratio_from_logs(v, v, v, "degenerate (all values identical)")
                              for n, v in logs.items()}, False)
    swapped, identical, rng_first, rng_second = _pair_rngs(baseline, candidate, seed)
    first, second = (candidate, baseline) if swapped else (baseline, candidate)

    def orient(low: float, high: float) -> tuple[float, float]:
        if identical:
            return min(low, -high), max(high, -low)
        return (-high, -low) if swapped else (low, high)

    cis: dict[str, RatioCI] = {}
    if len(baseline) >= 2 and len(candidate) >= 2:
        d1 = hierarchical_resample(first, statistics, n_resamples, rng_first)
        d2 = hierarchical_resample(second, statistics, n_resamples, rng_second)
        for name in statistics:
            low, high = orient(*percentile_interval(np.log(d1[name]) - np.log(d2[name]), confidence))
            cis[name] = _ratio_from_logs(logs[name], low, high, "hierarchical percentile")
        dist_b, dist_c = (d2, d1) if swapped else (d1, d2)
        return PairBootstrap(cis, True, dist_b, dist_c)
    for name in statistics:
        low, high, method = _bootstrap_logratio(pooled(first), pooled(second), name, confidence,
                                                n_resamples, rng_first)
        cis[name] = _ratio_from_logs(logs[name], *orient(low, high), method)
    return PairBootstrap(cis, False)


def ratio_ci(baseline: Sample, candidate: Sample, statistic: Statistic = "median",
             confidence: float = DEFAULT_CONFIDENCE, n_resamples: int = DEFAULT_RESAMPLES,
             seed: int = SEED) -> RatioCI:
    """stat(baseline) / stat(candidate) with a bootstrap interval (see `ratio_cis`)."""
    return ratio_cis(baseline, candidate, (statistic,), confidence, n_resamples, seed).cis[statistic]


@dataclass(frozen=True)
class StatCI:
    estimate: float
    low: float
    high: float
    method: str


def statistic_ci(sample: Sample, statistic: Statistic = "mean", confidence: float = DEFAULT_CONFIDENCE,
                 n_resamples: int = DEFAULT_RESAMPLES, seed: int = SEED,
                 distribution: np.ndarray | None = None) -> StatCI:
    """One-sample bootstrap CI of the mean or median, same design rule as `ratio_cis`.

    `distribution`: a hierarchical bootstrap distribution of this statistic already computed
    (e.g. PairBootstrap.baseline["mean"]); its percentile interval is used instead of resampling.
    """
    _check_confidence(confidence)
    x = pooled(sample)
    func = _STAT_FUNCS[statistic]
    if x.size == 0:
        return StatCI(math.nan, math.nan, math.nan, "none (no values)")
    estimate = float(func(x))
    if x.size < 2:
        return StatCI(estimate, math.nan, math.nan, "none (fewer than 2 values)")
    if np.ptp(x) == 0:
        return StatCI(estimate, estimate, estimate, "degenerate (all values identical)")
    if distribution is not None and len(sample) >= 2:
        return StatCI(estimate, *percentile_interval(distribution, confidence), "hierarchical percentile")
    rng = _single_rng(sample, seed)
    if len(sample) >= 2:
        dist = hierarchical_resample(sample, (statistic,), n_resamples, rng)[statistic]
        return StatCI(estimate, *percentile_interval(dist, confidence), "hierarchical percentile")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = st.bootstrap((x,), lambda a, axis=-1: func(a, axis=axis), n_resamples=n_resamples,
                           method="BCa", confidence_level=confidence, vectorized=True, rng=rng)
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if np.isfinite(low) and np.isfinite(high):
        return StatCI(estimate, low, high, "bca")
    return StatCI(estimate, *percentile_interval(res.bootstrap_distribution, confidence), "percentile")


# -- rank-based comparison --------------------------------------------------------------------

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
def _moses_rank(m: int, n: int, confidence: float) -> int:
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
    return max(0, math.floor(pairs / 2 + st.norm.ppf(tail) * sigma + 0.5))


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

    Interval = [D_(c), D_(mn+1-c)] of the sorted differences, c from `_moses_rank`; if the
    sample is too small for the confidence, [min D, max D] flagged `widest`.
    """
    _check_confidence(confidence)
    lb = np.log(np.asarray(baseline, dtype=np.float64).ravel())
    lc = np.log(np.asarray(candidate, dtype=np.float64).ravel())
    if lb.size == 0 or lc.size == 0:
        return ShiftCI(math.nan, math.nan, math.nan, True)
    diffs = np.sort(np.subtract.outer(lb, lc).ravel())
    shift = float(np.median(diffs))
    c = _moses_rank(lb.size, lc.size, confidence)
    widest = c < 1
    c = max(c, 1)
    low, high = diffs[c - 1], diffs[diffs.size - c]
    return ShiftCI(math.exp(shift), math.exp(low), math.exp(high), widest)


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


def bh_qvalues(p_values: Sequence[float]) -> np.ndarray:
    """Benjamini-Hochberg q-values (scipy.stats.false_discovery_control); NaN stays NaN."""
    p = np.asarray(p_values, dtype=np.float64)
    q = np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    if ok.any():
        q[ok] = st.false_discovery_control(p[ok], method="bh")
    return q


# -- verdicts and summaries -------------------------------------------------------------------

#: Interval ends within this distance (log scale, i.e. a relative 1e-12) of a band edge count as
#: on the edge, so that `log(1.05)` and `log1p(0.05)` (an ulp apart) give the same verdict.
EDGE_TOLERANCE = 1e-12


def verdict(log_low: float, log_high: float, tie_band: float = DEFAULT_TIE_BAND) -> Verdict:
    """Verdict from a log-ratio interval with a symmetric band L = log(1 + tie_band).

    win: low > L (whole CI above 1+band); loss: high < -L (whole CI below 1/(1+band));
    tie: -L <= low and high <= L (whole CI inside the band, edges included);
    inconclusive: anything else, including a missing interval. Symmetric under
    (low, high) -> (-high, -low), so swapping baseline and candidate mirrors win <-> loss.
    """
    if tie_band < 0:
        raise ValueError("tie_band must be >= 0")
    if not (np.isfinite(log_low) and np.isfinite(log_high)):
        return "inconclusive"
    band = math.log1p(tie_band) + EDGE_TOLERANCE
    if log_low > band:
        return "win"
    if log_high < -band:
        return "loss"
    if -band <= log_low and log_high <= band:
        return "tie"
    return "inconclusive"


def verdict_from_ratio(low: float, high: float, tie_band: float = DEFAULT_TIE_BAND) -> Verdict:
    """`verdict` for a ratio interval given on the ratio scale."""
    if not (low > 0 and high > 0):
        return "inconclusive"
    return verdict(math.log(low), math.log(high), tie_band)


@dataclass(frozen=True)
class GeoMean:
    ratio: float
    low: float
    high: float
    n: int


def geometric_mean_ci(log_ratios: Sequence[float], log_lows: Sequence[float], log_highs: Sequence[float],
                      confidence: float = DEFAULT_CONFIDENCE) -> GeoMean:
    """Geometric mean of ratios with an interval propagated from the per-benchmark log CIs.

    Each benchmark's standard error on the log scale is taken as its CI width / (2 z);
    SE(mean) = sqrt(sum SE_i^2) / k; the interval is exp(mean log ratio -/+ z SE). This answers
    "how precisely is the average speed-up over *these* benchmarks measured" (benchmarks are a
    fixed set, not a sample of some population, so no bootstrap over benchmarks); it assumes the
    benchmarks' errors are independent. Benchmarks without a finite CI are left out.
    """
    lr = np.asarray(log_ratios, dtype=np.float64)
    lo = np.asarray(log_lows, dtype=np.float64)
    hi = np.asarray(log_highs, dtype=np.float64)
    ok = np.isfinite(lr) & np.isfinite(lo) & np.isfinite(hi)
    k = int(ok.sum())
    if k == 0:
        return GeoMean(math.nan, math.nan, math.nan, 0)
    z = st.norm.ppf(1 - (1 - confidence) / 2)
    centre = float(np.log(st.gmean(np.exp(lr[ok]))))
    se = math.sqrt(float((((hi[ok] - lo[ok]) / (2 * z)) ** 2).sum())) / k
    return GeoMean(math.exp(centre), math.exp(centre - z * se), math.exp(centre + z * se), k)
