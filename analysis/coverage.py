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
  (the comparison's default; benchmarks.paired_ratio);
- `paired bootstrap`: percentile bootstrap (BOOTSTRAP_RESAMPLES) of the mean per-round log ratio;
- `paired median`: the median of the per-round log ratios with its order-statistic (sign-test)
  interval (stats.quantile_ci); its estimand is the median per-round ratio, not the ratio of
  geometric means: a rare mode moves it little.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from . import stats

METHODS = ("unpaired t", "paired t", "paired bootstrap", "paired median")
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
    """The log ratio a method estimates, over the given rounds."""
    d = round_log_ratios(base, cand)
    return float(np.median(d)) if method == "paired median" else float(d.mean())


def interval(method: str, base: Sequence[np.ndarray], cand: Sequence[np.ndarray], confidence: float,
             rng: np.random.Generator) -> tuple[float, float]:
    """(log low, log high) of `method` on the given rounds; NaN when it has no interval."""
    if method == "unpaired t":
        rci = stats.ratio_of(stats.median_centre(base, confidence), stats.median_centre(cand, confidence), confidence)
        return rci.log_low, rci.log_high
    if method == "paired t":
        within = math.hypot(stats.within_log_se(base), stats.within_log_se(cand))
        rci = stats.paired_ratio_ci(np.array([np.median(b) for b in base]), np.array([np.median(c) for c in cand]),
                                    confidence, within)
        return rci.log_low, rci.log_high
    d = round_log_ratios(base, cand)
    if method == "paired bootstrap":
        means = d[rng.integers(0, d.size, (BOOTSTRAP_RESAMPLES, d.size))].mean(axis=1)
        tail = (1 - confidence) / 2
        low, high = np.quantile(means, [tail, 1 - tail])
        return float(low), float(high)
    if method == "paired median":
        ci = stats.quantile_ci(d, 0.5, confidence)
        return ci.low, ci.high
    raise ValueError(f"unknown method {method!r} (one of {', '.join(METHODS)})")


def _covers(low: float, high: float, truth: float) -> bool:
    return bool(math.isfinite(low) and math.isfinite(high) and low - 1e-12 <= truth <= high + 1e-12)


def resampled_coverage(base: Sequence[np.ndarray], cand: Sequence[np.ndarray], k: int, replace: bool, draws: int,
                       seed: int = 0, confidence: float = stats.DEFAULT_CONFIDENCE,
                       methods: Sequence[str] = METHODS) -> dict[str, float]:
    """Share of `draws` sets of k rounds of the run whose interval contains the whole run's value."""
    n = len(base)
    if not replace and k > n:
        raise ValueError(f"cannot draw {k} of {n} rounds without replacement")
    truths = {m: estimand(m, base, cand) for m in methods}
    rng = np.random.default_rng([seed, k, int(replace)])
    hits = dict.fromkeys(methods, 0)
    for _ in range(draws):
        idx = rng.choice(n, k, replace=replace)
        b, c = [base[i] for i in idx], [cand[i] for i in idx]
        for m in methods:
            hits[m] += _covers(*interval(m, b, c, confidence, rng), truths[m])
    return {m: hits[m] / draws for m in methods}


def model_coverage(generate: Generator, truths: dict[str, float], k: int, draws: int, seed: int = 0,
                   confidence: float = stats.DEFAULT_CONFIDENCE) -> dict[str, float]:
    """Share of `draws` fresh runs of k rounds whose interval contains the model's true value."""
    rng = np.random.default_rng([seed, k])
    hits = dict.fromkeys(truths, 0)
    for _ in range(draws):
        base, cand = generate(rng, k)
        for m, truth in truths.items():
            hits[m] += _covers(*interval(m, base, cand, confidence, rng), truth)
    return {m: hits[m] / draws for m in truths}


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
    return {m: estimand(m, base, cand) for m in METHODS}
