"""Property tests (hypothesis) of analysis.stats and analysis.ranks."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from analysis import ranks, stats

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MIRROR = {"win": "loss", "loss": "win", "tie": "tie", "inconclusive": "inconclusive"}

# integer nanosecond timings like the real CSVs (scaling them by an integer stays exact)
timing = hs.integers(min_value=1_000, max_value=10_000_000)


@hs.composite
def samples(draw, min_invocations=1, max_invocations=3, min_size=2, max_size=12):
    k = draw(hs.integers(min_invocations, max_invocations))
    size = draw(hs.integers(min_size, max_size))
    ragged = draw(hs.booleans())
    groups = []
    for _ in range(k):
        n = draw(hs.integers(min_size, max_size)) if ragged else size
        groups.append(np.array(draw(hs.lists(timing, min_size=n, max_size=n)), dtype=np.float64))
    return groups


@SETTINGS
@given(values=hs.lists(hs.floats(0.1, 1e9, allow_nan=False), min_size=1, max_size=200),
       q=hs.sampled_from([0.25, 0.5, 0.75, 0.9, 0.99]), confidence=hs.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_quantile_ci_contains_estimate(values, q, confidence):
    ci = stats.quantile_ci(np.array(values), q, confidence, method="inverted_cdf")
    assert ci.low <= ci.estimate <= ci.high
    assert 1 <= ci.low_rank <= ci.high_rank <= len(values)
    assert ci.widest or ci.coverage >= confidence - 1e-12
    med = stats.median_centre([np.array(values)], confidence)
    assert med.low <= med.estimate <= med.high


@SETTINGS
@given(b=samples(), c=samples())
def test_hodges_lehmann_interval_contains_estimate(b, c):
    hl = ranks.hodges_lehmann(stats.pooled(b), stats.pooled(c))
    assert hl.low <= hl.ratio <= hl.high


@SETTINGS
@given(b=samples(min_size=6), c=samples(min_size=6))
def test_ratio_ci_contains_estimate(b, c):
    r = stats.ratio_ci(b, c)
    if math.isnan(r.low):  # no interval only when a side has no variation at all
        assert np.ptp(stats.pooled(b)) == 0 or np.ptp(stats.pooled(c)) == 0
    else:
        assert r.low <= r.ratio * (1 + 1e-12) and r.ratio <= r.high * (1 + 1e-12)


@SETTINGS
@given(b=samples(), c=samples(), statistic=hs.sampled_from(["median", "mean"]),
       band=hs.sampled_from([0.0, 0.01, 0.05, 0.2]))
def test_swapping_sides_inverts_ratio_and_mirrors_verdict(b, c, statistic, band):
    forward = stats.ratio_ci(b, c, statistic)
    backward = stats.ratio_ci(c, b, statistic)
    assert backward.log_ratio == -forward.log_ratio
    assert math.isclose(backward.ratio, 1 / forward.ratio, rel_tol=1e-12)
    if math.isnan(forward.log_low):
        assert math.isnan(backward.log_low)
    else:
        assert (backward.log_low, backward.log_high) == (-forward.log_high, -forward.log_low)
        assert math.isclose(backward.low, 1 / forward.high, rel_tol=1e-12)
    assert stats.verdict(backward.log_low, backward.log_high, band) == \
        MIRROR[stats.verdict(forward.log_low, forward.log_high, band)]
    hl_f = ranks.hodges_lehmann(stats.pooled(b), stats.pooled(c))
    hl_b = ranks.hodges_lehmann(stats.pooled(c), stats.pooled(b))
    assert math.isclose(hl_b.ratio, 1 / hl_f.ratio, rel_tol=1e-9)
    assert math.isclose(ranks.rank_test(stats.pooled(c), stats.pooled(b)).cliffs_delta,
                        -ranks.rank_test(stats.pooled(b), stats.pooled(c)).cliffs_delta, abs_tol=1e-12)


@SETTINGS
@given(b=samples(), c=samples(), factor=hs.sampled_from([2, 3, 1000, 0.5, 0.25]))
def test_scaling_all_timings_leaves_ratios_unchanged(b, c, factor):
    scaled_b = [g * factor for g in b]
    scaled_c = [g * factor for g in c]
    base = stats.ratio_ci(b, c)
    scaled = stats.ratio_ci(scaled_b, scaled_c)
    assert math.isclose(scaled.ratio, base.ratio, rel_tol=1e-9)
    if not math.isnan(base.low):
        assert math.isclose(scaled.low, base.low, rel_tol=1e-9)
        assert math.isclose(scaled.high, base.high, rel_tol=1e-9)
    hl, hl_scaled = (ranks.hodges_lehmann(stats.pooled(x), stats.pooled(y)) for x, y in ((b, c), (scaled_b, scaled_c)))
    assert math.isclose(hl.ratio, hl_scaled.ratio, rel_tol=1e-9)
    assert ranks.rank_test(stats.pooled(b), stats.pooled(c)).p_value == \
        ranks.rank_test(stats.pooled(scaled_b), stats.pooled(scaled_c)).p_value


@SETTINGS
@given(p=hs.lists(hs.floats(0, 1, allow_nan=False), min_size=1, max_size=30))
def test_bh_qvalues_bounds(p):
    q = stats.bh_qvalues(p)
    assert np.all(q >= np.array(p) - 1e-12) and np.all(q <= 1.0 + 1e-12)
