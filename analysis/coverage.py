"""Coverage of the ratio intervals by simulation: resampled rounds of a real run, and a model.

A round of a run is invocation k of every runtime (the orchestrator runs each once per round).
Given the rounds of one benchmark row (baseline and candidate, aligned), `resampled_coverage`
draws `k` rounds (with or without replacement) `draws` times, computes each method's interval on
the drawn rounds and counts how often it contains the value of the whole run (the estimand of
that method over every round). `model_coverage` does the same with fresh rounds from a
generator (e.g. `bimodal_rounds`) and the model's true value. Seeded: the same arguments give
the same numbers.

Methods (`METHODS`; every interval on the log scale, at `confidence`)
- `unpaired t`: the Welch t interval of the ratio of the two sides' centres (stats.ratio_of of
  stats.median_centre), as used before paired rounds;
- `paired t`: stats.paired_ratio_ci of the invocation medians, SE floored by the within SE
  (the default before issue 25's coverage check; shown beside the default, `paired_t_*`);
- `paired bootstrap`: percentile bootstrap (BOOTSTRAP_RESAMPLES) of the mean per-round log ratio;
- `paired median`: stats.paired_median_ratio_ci, the median of the per-round log ratios with
  its order-statistic (sign-test) interval, half widths floored like the paired t's (the
  comparison's default from 5 rounds: benchmarks.chosen_ratio); its estimand is the median
  per-round ratio, not the ratio of geometric means: a rare mode moves it little.
- `t unless multimodal` (a combined rule, measured as applied): the paired median where either
  side of the *drawn* rounds is flagged multimodal at either level (modes.side_modes: the
  flagging runs inside every draw), else the paired t; each draw's interval is checked against
  the whole run's value of the method it used.

Every interval is checked against the value of the same estimand over all rounds of the run: the
30-round ratio of geometric means for the t and bootstrap intervals, the 30-round median
per-round ratio for the paired median. `geomean_coverage` does the same for the headline: the
geometric mean of the rows' ratios, the same rounds drawn for every row (a round of a run is
one round of every benchmark), with the aggregate methods (`AGGREGATE_METHODS`):
- `rounds t` (the summaries' interval since issue 43, stats.rounds_geometric_mean_ci): per drawn
  round the mean over the rows of the log ratio of the invocation medians, a t interval over the
  rounds;
- `rounds bootstrap`: percentile bootstrap (BOOTSTRAP_RESAMPLES) of the mean of those per-round
  means, whole rounds resampled;
- `independent paired t` (the summaries' interval before issue 43) and `independent paired
  median`: stats.geometric_mean_ci of the rows' paired-t (or paired-median) log ratios and log
  SEs, combined as if the rows' errors were independent.
Their estimand: the mean over the rows of the whole run's mean per-round log ratio (for the
independent paired median: of the median per-round log ratio).
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from . import modes, stats

METHODS = ("unpaired t", "paired t", "paired bootstrap", "paired median", "t unless multimodal")
AGGREGATE_METHODS = ("rounds t", "rounds bootstrap", "independent paired t", "independent paired median")
#: the comparison's default (benchmarks.chosen_ratio from benchmarks.MEDIAN_MIN_ROUNDS rounds)
DEFAULT_METHOD = "paired median"
#: the methods that need no further choice: each has one estimand
SIMPLE_METHODS = METHODS[:4]
BOOTSTRAP_RESAMPLES = 2000
Rounds = tuple[list[np.ndarray], list[np.ndarray]]
#: rng, number of rounds -> (baseline rounds, candidate rounds), aligned
Generator = Callable[[np.random.Generator, int], Rounds]


def round_log_ratios(base: Sequence[np.ndarray], cand: Sequence[np.ndarray]) -> np.ndarray:
    """log(median of baseline round k / median of candidate round k) for every round."""
    if len(base) != len(cand):
        raise ValueError(f"rounds differ in number: {len(base)} and {len(cand)}")
    return np.log([np.median(b) for b in base]) - np.log([np.median(c) for c in cand])


def estimand(method: str, base: Sequence[np.ndarray], cand: Sequence[np.ndarray]) -> float:
    """The log ratio a simple method estimates, over the given rounds."""
    d = round_log_ratios(base, cand)
    return float(np.median(d)) if method == "paired median" else float(d.mean())


def multimodal(base: Sequence[np.ndarray], cand: Sequence[np.ndarray]) -> bool:
    """Whether either side is flagged multimodal at either level (what the comparison's `modes`
    sentence is written for)."""
    return modes.is_multimodal(base) or modes.is_multimodal(cand)


def resolve(method: str, base: Sequence[np.ndarray], cand: Sequence[np.ndarray]) -> str:
    """The simple method a rule uses on these rounds (itself for a simple method)."""
    if method == "t unless multimodal":
        return "paired median" if multimodal(base, cand) else "paired t"
    return method


def interval(method: str, base: Sequence[np.ndarray], cand: Sequence[np.ndarray], confidence: float,
             rng: np.random.Generator) -> tuple[float, float]:
    """(log low, log high) of `method` on the given rounds; NaN when it has no interval."""
    if method == "unpaired t":
        rci = stats.ratio_of(stats.median_centre(base, confidence), stats.median_centre(cand, confidence), confidence)
        return rci.log_low, rci.log_high
    if method == "paired t":
        return _paired(stats.paired_ratio_ci, base, cand, confidence)
    d = round_log_ratios(base, cand)
    if method == "paired bootstrap":
        means = d[rng.integers(0, d.size, (BOOTSTRAP_RESAMPLES, d.size))].mean(axis=1)
        tail = (1 - confidence) / 2
        low, high = np.quantile(means, [tail, 1 - tail])
        return float(low), float(high)
    if method == "paired median":
        return _paired(stats.paired_median_ratio_ci, base, cand, confidence)
    if method == "t unless multimodal":
        return interval(resolve(method, base, cand), base, cand, confidence, rng)
    raise ValueError(f"unknown method {method!r} (one of {', '.join(METHODS)})")


def _paired(method: Callable[..., stats.RatioCI], base: Sequence[np.ndarray], cand: Sequence[np.ndarray],
            confidence: float) -> tuple[float, float]:
    rci = paired_ratio(method, base, cand, confidence)
    return rci.log_low, rci.log_high


def paired_ratio(method: Callable[..., stats.RatioCI], base: Sequence[np.ndarray], cand: Sequence[np.ndarray],
                 confidence: float) -> stats.RatioCI:
    """A paired method (stats.paired_ratio_ci or paired_median_ratio_ci) on the invocation medians
    of aligned rounds, floored by the within-invocation SE (as benchmarks.chosen_ratio does)."""
    within = math.hypot(stats.within_log_se(base), stats.within_log_se(cand))
    return method(np.array([np.median(b) for b in base]), np.array([np.median(c) for c in cand]), confidence,
                  within)


def _covers(low: float, high: float, truth: float) -> bool:
    return bool(math.isfinite(low) and math.isfinite(high) and low - 1e-12 <= truth <= high + 1e-12)


def resampled_coverage(base: Sequence[np.ndarray], cand: Sequence[np.ndarray], k: int, replace: bool, draws: int,
                       seed: int = 0, confidence: float = stats.DEFAULT_CONFIDENCE,
                       methods: Sequence[str] = METHODS) -> dict[str, float]:
    """Share of `draws` sets of k rounds of the run whose interval contains the whole run's value."""
    n = len(base)
    if not replace and k > n:
        raise ValueError(f"cannot draw {k} of {n} rounds without replacement")
    truths = {m: estimand(m, base, cand) for m in SIMPLE_METHODS}
    rng = np.random.default_rng([seed, k, int(replace)])
    hits = dict.fromkeys(methods, 0)
    for _ in range(draws):
        idx = rng.choice(n, k, replace=replace)
        b, c = [base[i] for i in idx], [cand[i] for i in idx]
        for m in methods:
            used = resolve(m, b, c)
            hits[m] += _covers(*interval(used, b, c, confidence, rng), truths[used])
    return {m: hits[m] / draws for m in methods}


def aggregate_interval(method: str, rows: Sequence[Rounds], confidence: float,
                       rng: np.random.Generator) -> tuple[float, float]:
    """(log low, log high) of the geometric mean over `rows` (aligned rounds, the same rounds in
    every row) by one of AGGREGATE_METHODS; NaN when it has no interval."""
    if method == "rounds t":
        within = [math.hypot(stats.within_log_se(b), stats.within_log_se(c)) for b, c in rows]
        keyed = [stats.RowRounds(dict(enumerate(np.log([np.median(x) for x in b]))),
                                 dict(enumerate(np.log([np.median(x) for x in c]))), w)
                 for (b, c), w in zip(rows, within)]
        gm = stats.rounds_geometric_mean_ci(keyed, confidence)
        return (math.log(gm.low), math.log(gm.high)) if math.isfinite(gm.low) else (math.nan, math.nan)
    if method == "rounds bootstrap":
        g = np.mean([round_log_ratios(b, c) for b, c in rows], axis=0)
        means = g[rng.integers(0, g.size, (BOOTSTRAP_RESAMPLES, g.size))].mean(axis=1)
        tail = (1 - confidence) / 2
        low, high = np.quantile(means, [tail, 1 - tail])
        return float(low), float(high)
    if method in ("independent paired t", "independent paired median"):
        fn = stats.paired_median_ratio_ci if method.endswith("median") else stats.paired_ratio_ci
        rcis = [paired_ratio(fn, b, c, confidence) for b, c in rows]
        gm = stats.geometric_mean_ci([r.log_ratio for r in rcis], [r.log_se for r in rcis], confidence)
        if gm.n != len(rows):
            return math.nan, math.nan
        return math.log(gm.low), math.log(gm.high)
    raise ValueError(f"unknown aggregate method {method!r} (one of {', '.join(AGGREGATE_METHODS)})")


def aggregate_truth(method: str, rows: Sequence[Rounds]) -> float:
    """The whole run's value of an aggregate method's estimand (mean over the rows)."""
    simple = "paired median" if method == "independent paired median" else "paired t"
    return float(np.mean([estimand(simple, b, c) for b, c in rows]))


def geomean_coverage(rows: Sequence[Rounds], k: int, replace: bool, draws: int, method: str = "rounds t",
                     seed: int = 0, confidence: float = stats.DEFAULT_CONFIDENCE) -> float:
    """Share of `draws` sets of k rounds (the same rounds for every row) whose headline interval
    by `method` (AGGREGATE_METHODS; the old names "paired t" / "paired median" mean the
    independent ones) contains the whole run's value of its estimand."""
    method = {"paired t": "independent paired t", "paired median": "independent paired median"}.get(method, method)
    if method not in AGGREGATE_METHODS:
        raise ValueError(f"unknown aggregate method {method!r} (one of {', '.join(AGGREGATE_METHODS)})")
    sizes = {len(b) for b, _ in rows}
    if len(sizes) != 1:
        raise ValueError(f"rows differ in their number of rounds: {sorted(sizes)}")
    n = sizes.pop()
    if not replace and k > n:
        raise ValueError(f"cannot draw {k} of {n} rounds without replacement")
    truth = aggregate_truth(method, rows)
    rng = np.random.default_rng([seed, k, int(replace), 7])
    hits = 0
    for _ in range(draws):
        idx = rng.choice(n, k, replace=replace)
        drawn = [([b[i] for i in idx], [c[i] for i in idx]) for b, c in rows]
        hits += _covers(*aggregate_interval(method, drawn, confidence, rng), truth)
    return hits / draws


def model_coverage(generate: Generator, truths: dict[str, float], k: int, draws: int, seed: int = 0,
                   confidence: float = stats.DEFAULT_CONFIDENCE,
                   methods: Sequence[str] | None = None) -> dict[str, float]:
    """Share of `draws` fresh runs of k rounds whose interval contains the model's true value of
    the estimand of the method used (`truths`: simple method -> true log ratio; `methods`:
    default the keys of `truths`; a rule needs the truths of the methods it resolves to)."""
    methods = tuple(truths) if methods is None else tuple(methods)
    rng = np.random.default_rng([seed, k])
    hits = dict.fromkeys(methods, 0)
    for _ in range(draws):
        base, cand = generate(rng, k)
        for m in methods:
            used = resolve(m, base, cand)
            hits[m] += _covers(*interval(used, base, cand, confidence, rng), truths[used])
    return {m: hits[m] / draws for m in methods}


def bimodal_rounds(rare_share: float = 0.1, mode_factor: float = 8.0, iterations: int = 10,
                   drift_sigma: float = 0.15, noise_sigma: float = 0.05, ratio: float = 2.0) -> Generator:
    """A two-mode model like rwlock_contended at 2 workers: per round a machine drift shared by
    both sides (lognormal, drift_sigma), the baseline at `ratio` x the candidate's common mode,
    and the candidate's whole invocation in a rare mode `mode_factor` x faster with probability
    `rare_share`; iterations lognormal (noise_sigma) around their invocation's level."""
    def generate(rng: np.random.Generator, rounds: int) -> Rounds:
        drift = rng.normal(0.0, drift_sigma, rounds)
        rare = rng.random(rounds) < rare_share
        base_level = math.log(1000.0 * ratio) + drift
        cand_level = math.log(1000.0) + drift - np.where(rare, math.log(mode_factor), 0.0)
        noise = rng.normal(0.0, noise_sigma, (2, rounds, iterations))
        base = list(np.exp(base_level[:, None] + noise[0]))
        cand = list(np.exp(cand_level[:, None] + noise[1]))
        return base, cand
    return generate


def model_truths(generate: Generator, rounds: int = 200_000, seed: int = 1) -> dict[str, float]:
    """Each method's estimand over a very large run of the model (its true value, numerically)."""
    base, cand = generate(np.random.default_rng(seed), rounds)
    return {m: estimand(m, base, cand) for m in SIMPLE_METHODS}
