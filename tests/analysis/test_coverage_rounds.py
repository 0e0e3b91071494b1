"""analysis.coverage (issue 25 item 2): coverage of the ratio intervals by resampling rounds."""

from __future__ import annotations

import numpy as np
import pytest

from analysis import coverage


def _rounds(rng: np.random.Generator, rounds: int, ratio: float = 2.0, sigma: float = 0.1):
    drift = rng.normal(0, 0.2, rounds)
    base = [np.exp(np.log(1000 * ratio) + d + rng.normal(0, sigma, 10)) for d in drift]
    cand = [np.exp(np.log(1000) + d + rng.normal(0, sigma, 10)) for d in drift]
    return base, cand


def test_drawing_every_round_without_replacement_always_covers():
    """k = all rounds, no replacement: the drawn rounds are the run, so the estimate is the run's
    value and every interval of positive width contains it."""
    base, cand = _rounds(np.random.default_rng(1), 8)
    cov = coverage.resampled_coverage(base, cand, 8, False, 20, methods=("unpaired t", "paired t", "paired median"))
    assert cov == {"unpaired t": 1.0, "paired t": 1.0, "paired median": 1.0}


def test_paired_t_covers_about_95_percent_of_a_lognormal_model():
    generate = coverage.bimodal_rounds(rare_share=0.0)
    truths = {m: v for m, v in coverage.model_truths(generate, 50_000).items() if m in ("paired t", "paired median")}
    cov = coverage.model_coverage(generate, truths, 10, 600, seed=3)
    assert 0.92 <= cov["paired t"] <= 0.99
    assert cov["paired median"] >= 0.95  # ranks 2 and 9 of 10: 97.9% by construction


def test_a_rare_mode_breaks_the_mean_intervals_but_not_the_paired_median():
    generate = coverage.bimodal_rounds(rare_share=0.1, mode_factor=8.0)
    truths = {m: v for m, v in coverage.model_truths(generate, 50_000).items() if m in ("paired t", "paired median")}
    cov = coverage.model_coverage(generate, truths, 10, 300, seed=4)
    assert cov["paired t"] < 0.8 and cov["paired median"] >= 0.93


def test_sign_test_interval_of_three_rounds_covers_75_percent():
    """Known answer: [min, max] of 3 rounds covers the median with probability 1 - 2 / 2^3 (one
    iteration per invocation: no within-invocation floor widens it)."""
    generate = coverage.bimodal_rounds(rare_share=0.0, iterations=1)
    truths = {"paired median": coverage.model_truths(generate, 50_000)["paired median"]}
    cov = coverage.model_coverage(generate, truths, 3, 2000, seed=5)
    assert cov["paired median"] == pytest.approx(0.75, abs=0.03)


def test_combined_rule_flags_inside_each_draw():
    """"t unless multimodal" decides per draw: a draw of 10 rounds that misses the rare mode looks
    unimodal, uses the paired t and is checked against the whole run's geometric-mean ratio, which
    the rare mode moved; so the rule covers less than the paired median alone on a bimodal run."""
    rng = np.random.default_rng(11)
    base, cand = _rounds(rng, 30)
    cand = [c / 8.0 if i in (4, 17, 25) else c for i, c in enumerate(cand)]  # 3 of 30 rounds 8x faster
    assert coverage.multimodal(base, cand)
    assert coverage.resolve("t unless multimodal", base, cand) == "paired median"
    assert coverage.resolve("t unless multimodal", base[:4], cand[:4]) == "paired t"  # the rare rounds missed
    cov = coverage.resampled_coverage(base, cand, 10, False, 100, seed=2,
                                      methods=("paired t", "paired median", "t unless multimodal"))
    assert cov["paired median"] >= 0.95
    assert cov["paired t"] < 0.85 and cov["t unless multimodal"] < 0.85


def test_combined_rule_on_a_model_uses_the_truth_of_the_method_it_chose():
    generate = coverage.bimodal_rounds(rare_share=0.0)
    truths = coverage.model_truths(generate, 50_000)
    cov = coverage.model_coverage(generate, truths, 10, 100, seed=8, methods=("paired t", "t unless multimodal"))
    assert cov["t unless multimodal"] == cov["paired t"]  # unimodal: the rule is the paired t


def test_headline_coverage_of_the_geometric_mean():
    rng = np.random.default_rng(12)
    rows = [_rounds(rng, 30, ratio=r) for r in (1.5, 2.0, 3.0)]
    for method in ("paired median", "paired t"):
        assert coverage.geomean_coverage(rows, 10, False, 100, method, seed=1) >= 0.9
    assert coverage.geomean_coverage(rows, 30, False, 5, "paired t") == 1.0  # the run itself
    with pytest.raises(ValueError, match="differ in their number of rounds"):
        coverage.geomean_coverage([rows[0], (rows[1][0][:20], rows[1][1][:20])], 5, True, 1)
    with pytest.raises(ValueError, match="without replacement"):
        coverage.geomean_coverage(rows, 31, False, 1)


def test_bad_arguments():
    base, cand = _rounds(np.random.default_rng(2), 4)
    with pytest.raises(ValueError, match="without replacement"):
        coverage.resampled_coverage(base, cand, 5, False, 1)
    with pytest.raises(ValueError, match="unknown method"):
        coverage.interval("magic", base, cand, 0.95, np.random.default_rng(0))
    with pytest.raises(ValueError, match="differ in number"):
        coverage.round_log_ratios(base, cand[:3])


def test_seeded():
    base, cand = _rounds(np.random.default_rng(6), 12)
    a = coverage.resampled_coverage(base, cand, 5, True, 50, seed=9)
    assert a == coverage.resampled_coverage(base, cand, 5, True, 50, seed=9)
