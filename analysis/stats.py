"""Statistical building blocks: pure functions on numpy arrays (no I/O, no pandas).

Conventions
- A *sample* of one runtime for one benchmark is a list of 1-D float arrays, one array per
  process invocation (the iterations of that invocation), in ns per op (or ns per batch).
- Ratios are baseline / candidate, so > 1 means the candidate is faster. Every interval of a
  ratio is computed on the log scale and exponentiated; verdicts are decided on the log scale
  too, so swapping baseline and candidate mirrors everything exactly (the log ratio and the
  interval ends change sign; win <-> loss). Nothing is random: the same data always gives the
  same numbers, and scaling every timing by a constant moves every log value by the same amount.

The centre of a side (`centre`) and its standard error on the log scale
- k >= 2 invocations: each invocation is summarised by its own statistic (median or mean of its
  iterations); the centre of the median is the geometric mean of the invocation medians, the
  centre of the mean is the mean of all values. The standard error comes from how much the
  invocation summaries differ (s / sqrt(k), k - 1 degrees of freedom): invocations are the unit
  that machine drift acts on, so treating their iterations as independent would make intervals
  too narrow. It is never taken below the standard error that the iterations alone imply
  (sqrt(MSW / N), from the spread within invocations): no estimator of a
  centre can be more precise than the mean of all values, and invocation summaries that happen
  to agree (a coarse timer) must not give a zero-width interval. The t quantile keeps k - 1
  degrees of freedom either way.
- k = 1: the median and its distribution-free order-statistic interval (below); its log
  standard error is the interval's half width over the normal quantile of its exact coverage.
  The mean: s / sqrt(n) with n - 1 degrees of freedom.
- every value of a side identical: the standard error is 0 and marked as "no variation"; a
  ratio involving such a side gets no interval (its uncertainty cannot be estimated).

Methods
- `paired_median_ratio_ci` (the default of a comparison within one run, from 5 rounds): the
  median per-round log ratio d_k (below) with the sign-test interval of that median
  (`quantile_ci` on the d_k), half widths floored like the paired t's. Its estimand is the
  median round's ratio; it is the one method measured at >= 93% coverage on every row, the
  bimodal ones included, at 10 rounds (docs/coverage.md).
- `paired_ratio_ci` (the paired t, shown beside the default; 2-4 rounds): a round of a run runs every
  runtime once, so invocation k of the baseline and of the candidate share the machine's state
  (drift moves both sides together). d_k = log(baseline summary_k) - log(candidate summary_k)
  over the rounds both sides have; the ratio is exp(mean d) (the quotient of the two geometric
  means over those rounds) with a t interval mean(d) -/+ t(k-1) s_d / sqrt(k). As for a side,
  s_d / sqrt(k) is never taken below the SE the iterations alone imply
  (sqrt(MSW_b / N_b + MSW_c / N_c)). Coverage measured on real rounds and on synthetic bimodal
  data: analysis/coverage.py, scripts/interval_coverage.py.
- `ratio_ci` (unpaired, shown beside the paired one; `diff` between two runs, whose invocations
  are not rounds): log(centre of baseline) - log(centre of candidate) with a Welch-Satterthwaite
  t interval: SE = sqrt(SE_b^2 + SE_c^2), df = SE^4 / (SE_b^4/df_b + SE_c^4/df_c).
- `quantile_ci`: order-statistic interval [x_(l), x_(u)] of a quantile from the binomial
  distribution (scipy.stats.quantile_test(...).confidence_interval), equal-tailed, exact ranks;
  when n is too small for the confidence a missing side falls back to the sample minimum /
  maximum and the result is flagged `widest` with its true coverage.
- `variance_components`: one-way random-effects ANOVA (method of moments) on log values.
- `verdict`: symmetric tie band on the log scale: [1/(1+band), 1+band].
- `rounds_geometric_mean_ci` (every aggregate of the project: the summaries' geometric means):
  the geometric mean of the rows' ratios with an interval built over *rounds*, not over rows.
  Every row of a round comes from the same processes on the same machine state, so the rows'
  errors are correlated (mean pairwise correlation of the per-round log ratios 0.28-0.49 on the
  reference runs, issue 43). Paired (one run): per round k, G_k = the mean over the rows of
  d_{r,k} = log(baseline summary_{r,k} / candidate summary_{r,k}); the centre is mean(G) and the
  interval the t interval of that mean over the K rounds every row has (K - 1 degrees of
  freedom), SE floored by sqrt(sum_r within_r^2) / R (the iterations' independent noise).
  Unpaired (`diff`: two runs, whose invocations are not rounds): per side and invocation the
  mean over the rows of its log summaries, then the Welch t interval of the difference of the
  two sides' means.
- `geometric_mean_ci`: geometric mean of ratios with an interval from their log standard errors
  taken as independent (too narrow where rows share rounds; kept as the comparison in
  analysis/coverage.py, used by no summary).
- `bh_qvalues`: Benjamini-Hochberg (scipy false_discovery_control).
The rank-based cross-checks (Mann-Whitney, Cliff's delta, Hodges-Lehmann) are in ranks.py.
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Literal, Sequence

import numpy as np
import scipy.stats as st

DEFAULT_CONFIDENCE = 0.95
DEFAULT_TIE_BAND = 0.05

Statistic = Literal["median", "mean"]
Verdict = Literal["win", "loss", "tie", "inconclusive"]
Sample = Sequence[np.ndarray]

NO_VARIATION = "no variation (every value identical)"


def pooled(sample: Sample) -> np.ndarray:
    """All values of a sample in one array (invocation order, then iteration order)."""
    arrays = [np.asarray(a, dtype=np.float64).ravel() for a in sample]
    return np.concatenate(arrays) if arrays else np.empty(0)


def check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def two_sided_quantile(confidence: float, df: float) -> float:
    """t quantile of a two-sided interval (the normal one for infinite df)."""
    upper = 1 - (1 - confidence) / 2
    return float(st.norm.ppf(upper) if math.isinf(df) else st.t.ppf(upper, df))


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


@functools.lru_cache(maxsize=4096)
def quantile_ranks(n: int, q: float, confidence: float) -> tuple[int, int, bool]:
    """Equal-tailed order-statistic ranks (1-based) for the q-quantile of n values.

    Same rule as scipy.stats.quantile_test's interval: low rank = binom.ppf(alpha/2), high
    rank = binom.isf(alpha/2) + 1 with B ~ Binomial(n, q) the count below the quantile.
    Out-of-range ranks are clipped to 1 / n and reported via the returned flag.
    """
    check_confidence(confidence)
    if n < 1:
        raise ValueError("quantile_ranks needs at least one value")
    tail = (1.0 - confidence) / 2.0
    dist = st.binom(n, q)
    low = int(dist.ppf(tail))
    high = int(dist.isf(tail)) + 1
    widest = low < 1 or high > n
    return max(low, 1), min(high, n), widest


@functools.lru_cache(maxsize=4096)
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
    F test of "no invocation effect" (scipy.stats.f_oneway). NaN with < 2 invocations, when
    some invocation has < 2 values, when a value is not positive, or when nothing varies.
    """
    groups = [np.asarray(g, dtype=np.float64) for g in sample if len(g) > 0]
    nan = math.nan
    k = len(groups)
    sizes = np.array([g.size for g in groups])
    if k < 2 or sizes.min() < 2 or any((g <= 0).any() for g in groups):
        return VarianceComponents(nan, nan, nan, nan)
    groups = [np.log(g) for g in groups]
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


# -- the centre of one side -------------------------------------------------------------------

@dataclass(frozen=True)
class Centre:
    """Centre of one side with the standard error of its log (see the module doc).

    `low` / `high`: the side's own interval at the requested confidence. `log_se` is 0 with
    method NO_VARIATION, NaN when it cannot be estimated (fewer than 2 values, a value <= 0).
    """

    estimate: float
    low: float
    high: float
    log_se: float
    df: float
    method: str
    widest: bool = False
    coverage: float = math.nan


def _within_se(groups: list[np.ndarray], values: np.ndarray) -> float:
    """sqrt(MSW / N) of `values` grouped like `groups` (0 when no invocation has 2 values)."""
    k, total = len(groups), values.size
    if total - k < 1:
        return 0.0
    msw = sum(float(((g - g.mean()) ** 2).sum()) for g in groups) / (total - k)
    return math.sqrt(msw / total)


def _between_centre(summaries: np.ndarray, within_se: float) -> tuple[float, float, float, str]:
    """(centre, SE, df, method) from k >= 2 invocation summaries, floored by the within SE.

    The degrees of freedom stay k - 1 when the floor is used: switching to the within df when
    the invocations happen to agree made the intervals of k = 2 cover only 88% in simulation.
    """
    k = summaries.size
    between_se = float(np.std(summaries, ddof=1)) / math.sqrt(k)
    if within_se > between_se:
        return float(summaries.mean()), within_se, float(k - 1), f"t over {k} invocations (within-invocation SE)"
    return float(summaries.mean()), between_se, float(k - 1), f"t over {k} invocations"


def median_centre(sample: Sample, confidence: float = DEFAULT_CONFIDENCE) -> Centre:
    """Centre of the median: geometric mean of invocation medians (k >= 2) or the median (k = 1)."""
    check_confidence(confidence)
    groups = [np.asarray(g, dtype=np.float64).ravel() for g in sample if len(g) > 0]
    values = pooled(groups)
    nan = math.nan
    if values.size == 0:
        return Centre(nan, nan, nan, nan, nan, "none (no values)", True)
    if len(groups) == 1:
        return _single_median(values, confidence)
    medians = np.array([np.median(g) for g in groups])
    if (values <= 0).any():
        centre = float(np.median(values)) if (medians <= 0).any() else float(np.exp(np.log(medians).mean()))
        return Centre(centre, nan, nan, nan, nan, "no interval (a value <= 0)")
    if np.ptp(values) == 0:
        return Centre(float(values[0]), float(values[0]), float(values[0]), 0.0, nan, NO_VARIATION)
    logs = [np.log(g) for g in groups]
    log_centre, se, df, method = _between_centre(np.log(medians), _within_se(logs, pooled(logs)))
    half = two_sided_quantile(confidence, df) * se
    return Centre(math.exp(log_centre), math.exp(log_centre - half), math.exp(log_centre + half), se, df, method,
                  coverage=confidence)


def _single_median(values: np.ndarray, confidence: float) -> Centre:
    """One invocation: the median with its order-statistic interval; SE from its width."""
    ci = quantile_ci(values, 0.5, confidence)
    if np.ptp(values) == 0:
        return Centre(ci.estimate, ci.low, ci.high, 0.0, math.nan, NO_VARIATION, ci.widest, ci.coverage)
    if values.size < 2 or ci.low <= 0:
        return Centre(ci.estimate, ci.low, ci.high, math.nan, math.nan, "order statistics (no SE)",
                      ci.widest, ci.coverage)
    z = two_sided_quantile(ci.coverage, math.inf)
    se = (math.log(ci.high) - math.log(ci.low)) / (2 * z)
    return Centre(ci.estimate, ci.low, ci.high, se, math.inf, "order statistics", ci.widest, ci.coverage)


def mean_centre(sample: Sample, confidence: float = DEFAULT_CONFIDENCE) -> Centre:
    """Centre of the mean: the mean of all values, SE over invocation means (k >= 2) or values.

    The log SE is the relative SE (delta method); the interval is mean x exp(-/+ t SE).
    """
    check_confidence(confidence)
    groups = [np.asarray(g, dtype=np.float64).ravel() for g in sample if len(g) > 0]
    values = pooled(groups)
    nan = math.nan
    if values.size == 0:
        return Centre(nan, nan, nan, nan, nan, "none (no values)", True)
    mean = float(values.mean())
    if np.ptp(values) == 0:
        return Centre(mean, mean, mean, 0.0, nan, NO_VARIATION)
    if values.size < 2 or mean <= 0:
        return Centre(mean, nan, nan, nan, nan, "no interval (fewer than 2 values or mean <= 0)")
    if len(groups) == 1:
        se, df, method = float(values.std(ddof=1)) / math.sqrt(values.size), float(values.size - 1), "t over iterations"
    else:
        _, se, df, method = _between_centre(np.array([g.mean() for g in groups]), _within_se(groups, values))
    log_se = se / mean
    half = two_sided_quantile(confidence, df) * log_se
    return Centre(mean, mean * math.exp(-half), mean * math.exp(half), log_se, df, method, coverage=confidence)


CENTRES = {"median": median_centre, "mean": mean_centre}


# -- ratios -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class RatioCI:
    """Ratio estimate with its interval; `log_*` are the natural logs (used for verdicts)."""

    ratio: float
    low: float
    high: float
    log_ratio: float
    log_low: float
    log_high: float
    log_se: float
    method: str


def welch_df(se_a: float, df_a: float, se_b: float, df_b: float) -> float:
    """Welch-Satterthwaite degrees of freedom of SE = sqrt(se_a^2 + se_b^2)."""
    parts = [se ** 4 / df for se, df in ((se_a, df_a), (se_b, df_b)) if se > 0 and not math.isinf(df)]
    total = (se_a ** 2 + se_b ** 2) ** 2
    return total / sum(parts) if parts else math.inf


def ratio_of(baseline: Centre, candidate: Centre, confidence: float = DEFAULT_CONFIDENCE,
             names: tuple[str, str] = ("baseline", "candidate")) -> RatioCI:
    """baseline / candidate from two centres, with the Welch t interval of the log ratio."""
    check_confidence(confidence)
    nan = math.nan
    if not (baseline.estimate > 0 and candidate.estimate > 0):
        return RatioCI(nan, nan, nan, nan, nan, nan, nan, "no ratio (a centre is not positive)")
    log_ratio = math.log(baseline.estimate) - math.log(candidate.estimate)
    ratio = math.exp(log_ratio)
    flat = [name for name, side in zip(names, (baseline, candidate)) if side.method == NO_VARIATION]
    if flat:
        why = (f"no variation in the {' or '.join(flat)} timings: every value identical, so the uncertainty "
               "cannot be estimated (a coarse timer?)")
        return RatioCI(ratio, nan, nan, log_ratio, nan, nan, nan, f"no interval ({why})")
    if not (math.isfinite(baseline.log_se) and math.isfinite(candidate.log_se)):
        return RatioCI(ratio, nan, nan, log_ratio, nan, nan, nan,
                       "no interval (fewer than 2 values on a side, or a value <= 0)")
    se = math.hypot(baseline.log_se, candidate.log_se)
    df = welch_df(baseline.log_se, baseline.df, candidate.log_se, candidate.df)
    half = two_sided_quantile(confidence, df) * se
    method = "Welch t" + ("" if math.isinf(df) else f" (df {df:.1f})")
    return RatioCI(ratio, math.exp(log_ratio - half), math.exp(log_ratio + half), log_ratio, log_ratio - half,
                   log_ratio + half, se, method)


def ratio_ci(baseline: Sample, candidate: Sample, statistic: Statistic = "median",
             confidence: float = DEFAULT_CONFIDENCE) -> RatioCI:
    """stat(baseline) / stat(candidate) with its interval (see the module doc)."""
    centre = CENTRES[statistic]
    return ratio_of(centre(baseline, confidence), centre(candidate, confidence), confidence)


def within_log_se(sample: Sample) -> float:
    """sqrt(MSW / N) of the log values of a sample (0 when no invocation has 2 values or a value
    is <= 0): the least SE of any centre of it."""
    groups = [np.asarray(g, dtype=np.float64).ravel() for g in sample if len(g) > 0]
    values = pooled(groups)
    if values.size == 0 or (values <= 0).any():
        return 0.0
    logs = [np.log(g) for g in groups]
    return _within_se(logs, pooled(logs))


def _paired_log_ratios(baseline: np.ndarray, candidate: np.ndarray) -> np.ndarray | None:
    """d_k = log(baseline_k / candidate_k) per round of aligned summaries; None when there is no
    round or a summary is <= 0. Summaries of different lengths are a ValueError."""
    b = np.asarray(baseline, dtype=np.float64).ravel()
    c = np.asarray(candidate, dtype=np.float64).ravel()
    if b.shape != c.shape:
        raise ValueError(f"paired summaries differ in length: {b.size} and {c.size}")
    if b.size == 0 or not ((b > 0).all() and (c > 0).all()):
        return None
    return np.log(b) - np.log(c)


def _paired_start(baseline: np.ndarray, candidate: np.ndarray, confidence: float,
                  center: Callable[[np.ndarray], Any]) -> RatioCI | tuple[np.ndarray, float, float]:
    """What both paired intervals begin with: the per-round log ratios d, the point estimate
    log ratio = center(d) and its ratio — or the finished result when there is no ratio (no
    complete round, a summary <= 0) or no interval (fewer than 2 rounds)."""
    check_confidence(confidence)
    d = _paired_log_ratios(baseline, candidate)
    nan = math.nan
    if d is None:
        return RatioCI(nan, nan, nan, nan, nan, nan, nan, "no ratio (no complete round, or a summary <= 0)")
    log_ratio = float(center(d))
    ratio = math.exp(log_ratio)
    if d.size < 2:
        return RatioCI(ratio, nan, nan, log_ratio, nan, nan, nan, "no interval (fewer than 2 complete rounds)")
    return d, log_ratio, ratio


def paired_ratio_ci(baseline: np.ndarray, candidate: np.ndarray, confidence: float = DEFAULT_CONFIDENCE,
                    within_se: float = 0.0) -> RatioCI:
    """baseline / candidate from per-round summaries (aligned: element k of both is round k).

    exp(mean d) with d_k = log(baseline_k / candidate_k) and the t interval of mean d on k - 1
    degrees of freedom; its SE is floored by `within_se` (the SE the iterations imply, see the
    module doc). No interval with fewer than 2 rounds, a summary <= 0, or no variation at all.
    """
    start = _paired_start(baseline, candidate, confidence, np.mean)
    if isinstance(start, RatioCI):
        return start
    d, log_ratio, ratio = start
    k = d.size
    nan = math.nan
    spread = 0.0 if np.ptp(d) < 1e-12 else float(np.std(d, ddof=1))  # equal up to rounding: none
    se = max(spread / math.sqrt(k), within_se)
    if se == 0.0:
        return RatioCI(ratio, nan, nan, log_ratio, nan, nan, nan,
                       f"no interval ({NO_VARIATION}: the uncertainty cannot be estimated)")
    half = two_sided_quantile(confidence, float(k - 1)) * se
    return RatioCI(ratio, math.exp(log_ratio - half), math.exp(log_ratio + half), log_ratio, log_ratio - half,
                   log_ratio + half, se, f"paired t over {k} rounds")


def paired_median_ratio_ci(baseline: np.ndarray, candidate: np.ndarray, confidence: float = DEFAULT_CONFIDENCE,
                           within_se: float = 0.0) -> RatioCI:
    """baseline / candidate as the median per-round ratio, with its order-statistic interval.

    d_k = log(baseline_k / candidate_k) per round (aligned summaries); the ratio is exp(median d)
    and the interval [d_(l), d_(u)] the distribution-free sign-test interval of the median
    (`quantile_ci`: n = 10 at 95%: ranks 2 and 9, exact coverage 97.9%; with fewer than 6 rounds
    at 95% it is [min, max] and the method names its true coverage). Its estimand is the median
    round's ratio, which a rare mode (a few rounds in another regime) moves little. As for the
    paired t, the half widths are never taken below t(k-1) x `within_se` (the SE the iterations
    imply), so rounds that happen to agree do not give a zero-width interval. `log_se` is the
    normal-equivalent SE of the interval, (log high - log low) / (2 z) with z the normal quantile
    of the ranks' exact coverage (what geometric_mean_ci combines). No interval with fewer than 2 rounds, a
    summary <= 0, or no variation at all.
    """
    start = _paired_start(baseline, candidate, confidence, np.median)
    if isinstance(start, RatioCI):
        return start
    d, log_ratio, ratio = start
    k = d.size
    nan = math.nan
    if np.ptp(d) < 1e-12 and within_se == 0.0:
        return RatioCI(ratio, nan, nan, log_ratio, nan, nan, nan,
                       f"no interval ({NO_VARIATION}: the uncertainty cannot be estimated)")
    ci = quantile_ci(d, 0.5, confidence)
    floor = two_sided_quantile(confidence, float(k - 1)) * within_se
    low, high = min(ci.low, log_ratio - floor), max(ci.high, log_ratio + floor)
    floored = (low, high) != (ci.low, ci.high)
    se = (high - low) / (2 * two_sided_quantile(ci.coverage, math.inf))
    method = f"paired median over {k} rounds"
    if ci.widest:
        method += f" ([min, max] of the rounds: coverage {ci.coverage:.1%})"
    if floored:
        method += " (within-invocation floor)"
    return RatioCI(ratio, math.exp(low), math.exp(high), log_ratio, low, high, se, method)


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


@dataclass(frozen=True)
class GeoMean:
    ratio: float
    low: float
    high: float
    n: int


def geometric_mean_ci(log_ratios: Sequence[float], log_ses: Sequence[float],
                      confidence: float = DEFAULT_CONFIDENCE) -> GeoMean:
    """Geometric mean of ratios with an interval from their log standard errors.

    SE(mean log ratio) = sqrt(sum SE_i^2) / k; the interval is exp(mean -/+ z SE). This answers
    "how precisely is the average speed-up over *these* benchmarks measured" (benchmarks are a
    fixed set, not a sample of some population, so no resampling of benchmarks); it assumes the
    benchmarks' errors are independent. Benchmarks without a finite SE are left out.
    """
    lr = np.asarray(log_ratios, dtype=np.float64)
    se = np.asarray(log_ses, dtype=np.float64)
    ok = np.isfinite(lr) & np.isfinite(se)
    k = int(ok.sum())
    if k == 0:
        return GeoMean(math.nan, math.nan, math.nan, 0)
    z = two_sided_quantile(confidence, math.inf)
    centre = float(lr[ok].mean())
    spread = math.sqrt(float((se[ok] ** 2).sum())) / k
    return GeoMean(math.exp(centre), math.exp(centre - z * spread), math.exp(centre + z * spread), k)


#: One row of an aggregate: its per-round log summaries on each side (round -> log of the
#: invocation's summary, e.g. the log invocation median of ns/op) and the within-invocation SE
#: of its log ratio (the floor; 0 when unknown).
@dataclass(frozen=True)
class RowRounds:
    baseline: dict[int, float]
    candidate: dict[int, float]
    within_se: float = 0.0


@dataclass(frozen=True)
class RoundGeoMean:
    """Geometric mean of ratios with its interval over rounds (`rounds_geometric_mean_ci`).

    `n`: rows in it; `rounds`: rounds the interval is built over (paired: the rounds every row
    has on both sides; unpaired: the smaller side's); `rounds_dropped`: rounds some row lacks;
    `method` names the interval (or why there is none)."""

    ratio: float
    low: float
    high: float
    n: int
    rounds: int
    rounds_dropped: int
    method: str


def _usable(row: RowRounds) -> RowRounds | None:
    """The row with finite values only; None when a side has none."""
    b = {int(k): float(v) for k, v in row.baseline.items() if math.isfinite(v)}
    c = {int(k): float(v) for k, v in row.candidate.items() if math.isfinite(v)}
    return RowRounds(b, c, row.within_se if math.isfinite(row.within_se) else 0.0) if b and c else None


def rounds_geometric_mean_ci(rows: Sequence[RowRounds], confidence: float = DEFAULT_CONFIDENCE,
                             paired: bool = True) -> RoundGeoMean:
    """Geometric mean of the rows' ratios (baseline / candidate) with an interval over rounds.

    See the module doc. Rows without a value on a side are left out (`n` counts the others).
    Paired: only the rounds that every row has on both sides enter (a round some row lacks is
    dropped for all, `rounds_dropped`); with fewer than 2 such rounds the ratio of the rows'
    own geometric means is given without an interval. Unpaired: per side the invocations every
    row of that side has. No interval when nothing varies and no floor is known.
    """
    check_confidence(confidence)
    usable = [r for r in (_usable(row) for row in rows) if r is not None]
    nan = math.nan
    if not usable:
        return RoundGeoMean(nan, nan, nan, 0, 0, 0, "no rows")
    n = len(usable)
    floor = math.sqrt(sum(r.within_se ** 2 for r in usable)) / n
    if paired:
        every = set.union(*(set(r.baseline) | set(r.candidate) for r in usable))
        shared = sorted(set.intersection(*(set(r.baseline) & set(r.candidate) for r in usable)))
        dropped = len(every) - len(shared)
        if not shared:
            centre = float(np.mean([np.mean(list(r.baseline.values())) - np.mean(list(r.candidate.values()))
                                    for r in usable]))
            return RoundGeoMean(math.exp(centre), nan, nan, n, 0, dropped, "no interval (no round every row has)")
        g = np.array([np.mean([r.baseline[k] - r.candidate[k] for r in usable]) for k in shared])
        centre, k = float(g.mean()), g.size
        if k < 2:
            return RoundGeoMean(math.exp(centre), nan, nan, n, k, dropped, "no interval (fewer than 2 complete rounds)")
        spread = 0.0 if np.ptp(g) < 1e-12 else float(np.std(g, ddof=1)) / math.sqrt(k)
        se, df = max(spread, floor), float(k - 1)
        method = f"t over {k} rounds of the rows' mean log ratio"
    else:
        sides = []
        for values in ([r.baseline for r in usable], [r.candidate for r in usable]):
            common = sorted(set.intersection(*(set(v) for v in values)))
            sides.append(np.array([np.mean([v[i] for v in values]) for i in common]))
        b, c = sides
        dropped = 0
        if b.size == 0 or c.size == 0:
            centre = float(np.mean([np.mean(list(r.baseline.values())) - np.mean(list(r.candidate.values()))
                                    for r in usable]))
            return RoundGeoMean(math.exp(centre), nan, nan, n, 0, 0, "no interval (no invocation every row has)")
        centre, k = float(b.mean() - c.mean()), int(min(b.size, c.size))
        if b.size < 2 or c.size < 2:
            return RoundGeoMean(math.exp(centre), nan, nan, n, k, 0, "no interval (fewer than 2 invocations a side)")
        se_b, se_c = (float(np.std(x, ddof=1)) / math.sqrt(x.size) if np.ptp(x) >= 1e-12 else 0.0 for x in (b, c))
        df = welch_df(se_b, float(b.size - 1), se_c, float(c.size - 1))
        se = max(math.hypot(se_b, se_c), floor)
        if se == floor and floor > 0:
            df = float(min(b.size, c.size) - 1)
        method = f"Welch t over the invocations' mean log values ({b.size} and {c.size} invocations)"
    if se == 0.0:
        return RoundGeoMean(math.exp(centre), nan, nan, n, k, dropped,
                            f"no interval ({NO_VARIATION}: the uncertainty cannot be estimated)")
    half = two_sided_quantile(confidence, df) * se
    if dropped:
        method += f"; {dropped} round(s) some row lacks dropped"
    return RoundGeoMean(math.exp(centre), math.exp(centre - half), math.exp(centre + half), n, k, dropped, method)


def bh_qvalues(p_values: Sequence[float]) -> np.ndarray:
    """Benjamini-Hochberg q-values (scipy.stats.false_discovery_control); NaN stays NaN."""
    p = np.asarray(p_values, dtype=np.float64)
    q = np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    if ok.any():
        q[ok] = st.false_discovery_control(p[ok], method="bh")
    return q
