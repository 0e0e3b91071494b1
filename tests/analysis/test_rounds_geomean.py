"""stats.rounds_geometric_mean_ci (issue 43 item 1): the summaries' geometric means with an
interval built over rounds, because every row of a round shares its processes."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as st

from analysis import stats


def _row(base: list[float], cand: list[float], within: float = 0.0, rounds: list[int] | None = None) -> stats.RowRounds:
    keys = rounds if rounds is not None else list(range(len(base)))
    return stats.RowRounds(dict(zip(keys, np.log(base))), dict(zip(keys, np.log(cand))), within)


def test_paired_known_answer():
    """Per round the mean over the rows of the log ratio, then a t interval over the rounds."""
    rows = [_row([2.0, 4.0, 2.0], [1.0, 1.0, 1.0]), _row([1.0, 1.0, 4.0], [1.0, 2.0, 1.0])]
    g = np.array([(math.log(2) + 0) / 2, (math.log(4) - math.log(2)) / 2, (math.log(2) + math.log(4)) / 2])
    half = st.t.ppf(0.975, 2) * g.std(ddof=1) / math.sqrt(3)
    out = stats.rounds_geometric_mean_ci(rows, 0.95)
    assert out.ratio == pytest.approx(math.exp(g.mean()))
    assert (out.low, out.high) == pytest.approx((math.exp(g.mean() - half), math.exp(g.mean() + half)))
    assert (out.n, out.rounds, out.rounds_dropped) == (2, 3, 0)
    assert out.method.startswith("t over 3 rounds")


def test_same_centre_as_the_mean_of_the_rows_paired_t_ratios():
    rng = np.random.default_rng(3)
    rows = [_row(list(np.exp(rng.normal(1, 0.2, 10))), list(np.exp(rng.normal(0, 0.2, 10)))) for _ in range(5)]
    per_row = [np.mean(list(r.baseline.values())) - np.mean(list(r.candidate.values())) for r in rows]
    assert math.log(stats.rounds_geometric_mean_ci(rows).ratio) == pytest.approx(np.mean(per_row))


def test_a_drift_shared_by_every_row_widens_the_interval_beyond_the_independent_one():
    """Rows that move together in a round are one observation per round, not R: the interval over
    rounds is wider than the one that combines the rows' SEs as independent."""
    rng = np.random.default_rng(7)
    drift = rng.normal(0, 0.2, 10)
    rows = []
    for _ in range(8):
        d = drift + rng.normal(0, 0.02, 10)
        rows.append(stats.RowRounds(dict(enumerate(0.7 + d)), dict(enumerate(np.zeros(10)))))
    over_rounds = stats.rounds_geometric_mean_ci(rows)
    ses = [np.std(list(r.baseline.values()), ddof=1) / math.sqrt(10) for r in rows]
    independent = stats.geometric_mean_ci([0.7 + float(np.mean(drift))] * 8, ses)
    assert math.log(over_rounds.high / over_rounds.low) > 2.5 * math.log(independent.high / independent.low)


def test_a_round_some_row_lacks_is_dropped_for_all():
    rows = [_row([2.0, 2.2, 1.8, 2.1], [1.0] * 4), _row([3.0, 3.3, 2.7], [1.0] * 3, rounds=[0, 1, 3])]
    out = stats.rounds_geometric_mean_ci(rows)
    assert (out.rounds, out.rounds_dropped) == (3, 1)
    assert "1 round(s) some row lacks dropped" in out.method


def test_floor_and_missing_intervals():
    flat = [_row([2.0, 2.0, 2.0], [1.0, 1.0, 1.0], within=0.01), _row([4.0] * 3, [1.0] * 3, within=0.02)]
    out = stats.rounds_geometric_mean_ci(flat)
    se = math.hypot(0.01, 0.02) / 2
    assert out.ratio == pytest.approx(math.sqrt(8))
    assert math.log(out.high / out.ratio) == pytest.approx(st.t.ppf(0.975, 2) * se)
    no_floor = stats.rounds_geometric_mean_ci([_row([2.0] * 3, [1.0] * 3)])
    assert math.isnan(no_floor.low) and "no variation" in no_floor.method
    one = stats.rounds_geometric_mean_ci([_row([2.0], [1.0])])
    assert one.ratio == pytest.approx(2.0) and math.isnan(one.low) and one.rounds == 1
    assert stats.rounds_geometric_mean_ci([]).n == 0
    assert stats.rounds_geometric_mean_ci([stats.RowRounds({}, {0: 1.0})]).n == 0


def test_unpaired_welch_over_each_sides_invocations():
    """diff (two runs): per side the invocations' mean over the rows, then Welch."""
    rows = [_row([2.0, 2.4, 2.2], [1.0, 1.1, 0.9]), _row([4.0, 4.4, 3.6], [2.0, 2.1, 1.9])]
    b = np.mean([np.log([2.0, 2.4, 2.2]), np.log([4.0, 4.4, 3.6])], axis=0)
    c = np.mean([np.log([1.0, 1.1, 0.9]), np.log([2.0, 2.1, 1.9])], axis=0)
    se_b, se_c = b.std(ddof=1) / math.sqrt(3), c.std(ddof=1) / math.sqrt(3)
    df = stats.welch_df(se_b, 2, se_c, 2)
    half = st.t.ppf(0.975, df) * math.hypot(se_b, se_c)
    out = stats.rounds_geometric_mean_ci(rows, paired=False)
    centre = b.mean() - c.mean()
    assert out.ratio == pytest.approx(math.exp(centre))
    assert (out.low, out.high) == pytest.approx((math.exp(centre - half), math.exp(centre + half)))
    assert out.method.startswith("Welch t")


def test_mirrors_when_sides_swap():
    rng = np.random.default_rng(5)
    rows = [_row(list(np.exp(rng.normal(1, 0.3, 6))), list(np.exp(rng.normal(0, 0.3, 6)))) for _ in range(3)]
    swapped = [stats.RowRounds(r.candidate, r.baseline) for r in rows]
    for paired in (True, False):
        a, b = stats.rounds_geometric_mean_ci(rows, paired=paired), stats.rounds_geometric_mean_ci(swapped, paired=paired)
        assert (a.ratio, a.low, a.high) == pytest.approx((1 / b.ratio, 1 / b.high, 1 / b.low))
