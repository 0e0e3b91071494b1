"""Paired rounds (issue 25 item 1): the ratio's interval from per-round log ratios."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as st

from analysis import compare, diff_runs, stats
from analysis.benchmarks import shared_rounds
from analysis_fakes import rows_for, write_run


def test_paired_interval_on_known_data():
    # log ratios 0.1, 0.2, 0.3: mean 0.2, s 0.1, SE 0.1 / sqrt(3), t(2) = 4.303
    base = np.exp(np.array([1.1, 2.2, 3.3]))
    cand = np.exp(np.array([1.0, 2.0, 3.0]))
    rci = stats.paired_ratio_ci(base, cand, 0.95)
    half = st.t.ppf(0.975, 2) * 0.1 / math.sqrt(3)
    assert rci.log_ratio == pytest.approx(0.2)
    assert rci.log_low == pytest.approx(0.2 - half) and rci.log_high == pytest.approx(0.2 + half)
    assert rci.ratio == pytest.approx(math.exp(0.2)) and rci.method == "paired t over 3 rounds"


def test_paired_interval_removes_shared_drift():
    """Both sides jump together from round to round: the unpaired interval is wide, the paired one
    is as narrow as the ratio's own scatter."""
    drift = np.array([1.0, 1.5, 0.8, 1.3, 1.1, 0.9, 1.4, 1.0, 1.2, 0.7])
    wobble = np.array([1.01, 0.99, 1.0, 1.02, 0.98, 1.0, 1.01, 0.99, 1.0, 1.0])
    base, cand = 2000.0 * drift * wobble, 1000.0 * drift
    paired = stats.paired_ratio_ci(base, cand)
    unpaired = stats.ratio_ci([np.array([b]) for b in base], [np.array([c]) for c in cand])
    assert paired.low > 1.95 and paired.high < 2.05
    assert (paired.high - paired.low) < (unpaired.high - unpaired.low) / 5


#: Both paired intervals: the paired t (mean) and the order-statistic one (median).
PAIRED_INTERVALS = pytest.mark.parametrize("interval", [stats.paired_ratio_ci, stats.paired_median_ratio_ci],
                                           ids=["mean", "median"])


@PAIRED_INTERVALS
def test_paired_interval_edge_cases(interval):
    base, cand = np.array([2.0, 4.0, 8.0, 16.0, 32.0]), np.array([1.0, 2.0, 4.0, 8.0, 16.0])  # every round 2x
    assert math.isnan(interval(base, cand).low)  # nothing varies: no interval
    assert math.isnan(interval(base[:1], cand[:1]).low)
    assert math.isnan(interval(np.array([1.0, -1.0]), np.array([1.0, 1.0])).ratio)
    with pytest.raises(ValueError):
        interval(base, cand[:2])


@PAIRED_INTERVALS
@pytest.mark.parametrize("seed, rounds", [(3, 8), (5, 10)])
def test_swapping_sides_mirrors_the_paired_interval(interval, seed, rounds):
    rng = np.random.default_rng(seed)
    base, cand = np.exp(rng.normal(1, 0.3, rounds)), np.exp(rng.normal(0.5, 0.3, rounds))
    a, b = interval(base, cand), interval(cand, base)
    assert a.log_ratio == pytest.approx(-b.log_ratio)
    assert a.log_low == pytest.approx(-b.log_high) and a.log_high == pytest.approx(-b.log_low)


def test_paired_interval_floor():
    base, cand = np.array([2.0, 4.0, 8.0]), np.array([1.0, 2.0, 4.0])  # every round exactly 2x
    floored = stats.paired_ratio_ci(base, cand, within_se=0.01)
    assert floored.log_se == 0.01 and floored.low < 2.0 < floored.high


def test_shared_rounds_drops_rounds_with_one_side():
    rounds = shared_rounds({0: np.ones(2), 1: np.ones(2), 3: np.ones(2)}, {0: np.ones(2), 1: np.ones(2), 2: np.ones(2)})
    assert rounds.shared == [0, 1] and rounds.dropped == 2


def _drifting(scale: float, rounds: int = 6) -> list[list[float]]:
    drift = [1.0, 1.4, 0.8, 1.2, 0.9, 1.3][:rounds]
    return [[scale * d * (1 + 0.01 * (i % 3)) for i in range(10)] for d in drift]


def test_compare_pairs_rounds_and_drops_an_incomplete_round(tmp_path):
    data = tmp_path / "data"
    tokio = rows_for("tokio", "micro", 1, "mutex", "", 1000, _drifting(2_000_000))
    ampere = [r for r in rows_for("ampere", "micro", 1, "mutex", "", 1000, _drifting(1_000_000)) if r[1] != 4]
    write_run(data, rows={"tokio": tokio, "ampere": ampere})
    row = compare("latest", data_dir=data).benchmarks.iloc[0]
    assert row["paired_rounds"] == 5 and row["rounds_dropped"] == 1
    assert "1 round(s) with one side only dropped" in row["verdict_reason"]
    assert row["ratio_method"].startswith("paired median over 5 rounds ([min, max] of the rounds: coverage 93.8%)")
    assert row["verdict"] == "win" and 1.9 < row["ratio_ci_low"] < 2.0 < row["ratio_ci_high"] < 2.1
    # the paired t is kept beside it
    assert row["paired_t_verdict"] == "win" and 1.9 < row["paired_t_ratio_ci_low"] < 2.0 < row["paired_t_ratio_ci_high"]
    assert row["cpu_ratio_method"].startswith("paired median over 5 rounds")
    # the unpaired interval is kept beside it and is far wider (drift counted as noise)
    assert row["unpaired_ratio_ci_low"] < row["ratio_ci_low"] and row["unpaired_ratio_ci_high"] > row["ratio_ci_high"]
    assert row["cpu_unpaired_verdict"] in ("win", "inconclusive") and row["cpu_verdict"] == "win"


def test_diff_between_runs_stays_unpaired(tmp_path):
    data = tmp_path / "data"
    write_run(data, "20261122T101500Z-lab1", seed=1)
    write_run(data, "20261122T111500Z-lab1", seed=2)
    result = diff_runs("20261122T101500Z-lab1", "20261122T111500Z-lab1", data_dir=data)
    assert (result.benchmarks["paired_rounds"].fillna(0) == 0).all()
    assert not result.benchmarks["ratio_method"].dropna().str.startswith("paired").any()


# -- the paired median (the default from 5 rounds) ---------------------------------------------

def test_paired_median_interval_on_known_data():
    """10 rounds with log ratios 0.1 .. 1.0: median 0.55, sign-test ranks 2 and 9 (97.9%)."""
    d = np.arange(1, 11) / 10
    rci = stats.paired_median_ratio_ci(np.exp(d + 3.0), np.full(10, math.exp(3.0)))
    assert rci.log_ratio == pytest.approx(0.55) and rci.ratio == pytest.approx(math.exp(0.55))
    assert rci.log_low == pytest.approx(0.2) and rci.log_high == pytest.approx(0.9)
    coverage = st.binom(10, 0.5).cdf(8) - st.binom(10, 0.5).cdf(1)
    assert rci.log_se == pytest.approx(0.7 / (2 * st.norm.ppf(0.5 + coverage / 2)))
    assert rci.method == "paired median over 10 rounds"


def test_paired_median_bimodal_rounds_the_paired_t_misses():
    """A 30-round run: 27 rounds at 2x and 3 in a rare mode at 16x (ampere 8x faster, a
    convoy-free invocation). Its geometric-mean ratio is 2 x 8^(3/30) = 2.52, its median ratio 2.
    10 rounds that miss the rare mode (as 10 of 30 drawn at random do 25% of the time): the paired
    t's interval sits tightly around 2 and misses the run's geometric mean (its estimand); the
    paired median's contains the run's median round (its estimand)."""
    wobble = np.tile([1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 0.99, 1.0, 1.0], 3)
    ratios = 2.0 * wobble
    ratios[[4, 17, 25]] = 16.0
    base, cand = 1000.0 * ratios, np.full(30, 1000.0)
    run_geomean = math.exp(np.log(ratios).mean())
    run_median = float(np.median(ratios))
    assert run_geomean == pytest.approx(2.0 * 8 ** 0.1, rel=0.01) and run_median == pytest.approx(2.0)
    drawn = [i for i in range(30) if i not in (4, 17, 25)][:10]
    t = stats.paired_ratio_ci(base[drawn], cand[drawn])
    median = stats.paired_median_ratio_ci(base[drawn], cand[drawn])
    assert t.high < run_geomean  # the paired t misses
    assert median.low <= run_median <= median.high  # the paired median covers
    # with the rare rounds drawn the paired median still covers and still says win
    with_rare = stats.paired_median_ratio_ci(base[[0, 1, 2, 3, 4, 5, 6, 7, 8, 17]], cand[:10])
    assert with_rare.low <= run_median <= with_rare.high
    assert stats.verdict(with_rare.log_low, with_rare.log_high) == "win"


def test_paired_median_floor_and_small_counts():
    base, cand = np.array([2.0, 4.0, 8.0, 16.0, 32.0]), np.array([1.0, 2.0, 4.0, 8.0, 16.0])  # every round 2x
    floored = stats.paired_median_ratio_ci(base, cand, within_se=0.01)
    half = st.t.ppf(0.975, 4) * 0.01
    assert floored.log_low == pytest.approx(math.log(2) - half) and floored.log_high == pytest.approx(math.log(2) + half)
    assert "within-invocation floor" in floored.method
    widest = stats.paired_median_ratio_ci(base * np.array([1.0, 1.1, 0.9, 1.05, 0.95]), cand)
    assert "coverage 93.8%" in widest.method  # [min, max] of 5 rounds: 1 - 2 / 2^5
    assert widest.low == pytest.approx(1.8) and widest.high == pytest.approx(2.2)


def test_compare_uses_the_paired_t_below_five_rounds(tmp_path):
    data = tmp_path / "data"
    tokio = rows_for("tokio", "micro", 1, "mutex", "", 1000, _drifting(2_000_000, rounds=4))
    ampere = rows_for("ampere", "micro", 1, "mutex", "", 1000, _drifting(1_000_000, rounds=4))
    write_run(data, rows={"tokio": tokio, "ampere": ampere})
    row = compare("latest", data_dir=data).benchmarks.iloc[0]
    assert row["ratio_method"] == "paired t over 4 rounds (fewer than 5 rounds for the paired median)"
    assert row["ratio_ci_low"] == row["paired_t_ratio_ci_low"] and row["verdict"] == row["paired_t_verdict"]


def test_compare_bimodal_rounds_verdict_follows_the_paired_median(tmp_path):
    """Known data: ampere's round 10 sits in a rare mode 8x faster. The default (paired median)
    gives the typical round's ratio 2x; the paired t beside it gives the geometric mean (pulled
    up by the rare round, and its interval widened by it)."""
    data = tmp_path / "data"
    drift = [1.0, 1.4, 0.8, 1.2, 0.9, 1.3, 1.1, 0.95, 1.05, 1.0]
    tokio = rows_for("tokio", "micro", 1, "mutex", "", 1000,
                     [[2_000_000 * d * (1 + 0.01 * (i % 3)) for i in range(10)] for d in drift])
    ampere = rows_for("ampere", "micro", 1, "mutex", "", 1000,
                      [[1_000_000 * d * (0.125 if r == 9 else 1.0) * (1 + 0.01 * ((i + r) % 3)) for i in range(10)]
                       for r, d in enumerate(drift)])
    write_run(data, rows={"tokio": tokio, "ampere": ampere})
    row = compare("latest", data_dir=data).benchmarks.iloc[0]
    assert row["ratio_method"].startswith("paired median over 10 rounds")
    assert row["ratio_ci_low"] <= 2.0 <= row["ratio_ci_high"] and row["ratio"] == pytest.approx(2.0, rel=0.02)
    assert row["paired_t_ratio"] == pytest.approx(2.0 * 8 ** 0.1, rel=0.02)  # one round in ten at 16x
    # the one rare round widens the paired t's interval many times over; the median's stays tight
    t_width = math.log(row["paired_t_ratio_ci_high"] / row["paired_t_ratio_ci_low"])
    assert t_width > 5 * math.log(row["ratio_ci_high"] / row["ratio_ci_low"])
    assert row["verdict"] == "win"
