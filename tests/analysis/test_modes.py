"""analysis.modes (issue 25 item 3): modes within and between invocations, verdicts, step change."""

from __future__ import annotations

import numpy as np

from analysis import modes


def _lognormal(rng, n, centre=100.0, sigma=0.05):
    return np.exp(np.log(centre) + rng.normal(0, sigma, n))


def test_unimodal_data_is_rarely_flagged():
    rng = np.random.default_rng(11)
    flagged = 0
    for _ in range(200):
        flagged += modes.find_modes(_lognormal(rng, 100, sigma=0.2), "iterations").multimodal
        flagged += modes.find_modes(_lognormal(rng, 10, sigma=0.2), "invocations").multimodal
    assert flagged <= 4  # <= 1% of 400 samples


def test_heavy_tail_of_single_outliers_is_not_a_mode():
    rng = np.random.default_rng(12)
    x = _lognormal(rng, 100)
    x[[5, 50]] *= 6  # two preempted iterations
    assert not modes.find_modes(x, "iterations").multimodal


def test_two_modes_are_found_with_shares_and_medians():
    rng = np.random.default_rng(13)
    x = np.concatenate([_lognormal(rng, 60, 20.0), _lognormal(rng, 40, 120.0)])
    m = modes.find_modes(x, "iterations")
    assert m.multimodal and [mode.name for mode in m.modes] == ["fast", "slow"]
    fast, slow = m.modes
    assert fast.n == 60 and slow.share == 0.4 and fast.share_low < 0.6 < fast.share_high
    assert 18 < fast.median < 22 and 110 < slow.median < 130


def test_a_rare_mode_the_dip_test_misses_is_found():
    rng = np.random.default_rng(14)
    x = np.concatenate([_lognormal(rng, 27, 140.0), _lognormal(rng, 3, 17.0)])
    m = modes.find_modes(x, "invocations")
    assert m.dip_pvalue > 0.05 and m.multimodal and m.modes[0].n == 3


def test_side_modes_separates_levels():
    rng = np.random.default_rng(15)
    sample = [_lognormal(rng, 10, 20.0 if k < 4 else 100.0) for k in range(10)]  # whole invocations
    levels = modes.side_modes(sample)
    assert levels["invocations"].multimodal and not levels["iterations"].multimodal


def _modes(*pairs):
    return modes.Modes("invocations", 10, 0.001, len(pairs) == 2,
                       tuple(modes.Mode(name, 5, share, 0, 1, median) for name, share, median in pairs))


def test_verdict_wording():
    tokio = _modes(("all", 1.0, 100.0))
    both = _modes(("fast", 0.1, 10.0), ("slow", 0.9, 50.0))
    mixed = _modes(("fast", 0.1, 10.0), ("slow", 0.9, 200.0))
    assert modes.mode_verdict(tokio, both, "ampere") == "ampere wins in both modes (invocations)"
    assert modes.mode_verdict(tokio, mixed, "ampere") == (
        "mixed: ampere wins in its fast mode (10% of invocations), loses in its slow mode (90% of invocations)")
    assert modes.mode_verdict(tokio, tokio, "ampere") is None
    assert modes.mode_verdict(mixed, tokio, "ampere").startswith("mixed: ampere loses in the baseline's fast mode")


def test_step_change_is_flagged_and_a_flat_window_is_not():
    rng = np.random.default_rng(16)
    stepped = [np.concatenate([_lognormal(rng, 10, 200.0), _lognormal(rng, 10, 125.0)]) for _ in range(10)]
    flat = [_lognormal(rng, 20, 125.0) for _ in range(10)]
    step = modes.step_change(stepped)
    assert step.flagged and step.shift > 0.4 and step.pvalue < 0.01
    assert not modes.step_change(flat).flagged
    assert not modes.step_change(stepped[:3]).flagged  # too few invocations to say


def test_two_means_split_is_exact():
    assert modes.two_means_split(np.array([1.0, 1.1, 1.2, 5.0, 5.1])) == 3
    assert modes.two_means_split(np.array([3.0])) == 0


def test_compare_marks_a_multimodal_row_and_its_modes(tmp_path):
    from analysis import compare
    from analysis_fakes import rows_for, write_run
    rng = np.random.default_rng(17)
    levels = [20.0, 20.0, 20.0, 20.0, 400.0, 400.0, 400.0, 400.0, 400.0, 400.0]  # ampere: two invocation modes
    ampere = rows_for("ampere", "micro", 3, "mutex_contended", "", 1000, [_lognormal(rng, 10, lv * 1000) for lv in levels])
    stepped = [np.concatenate([_lognormal(rng, 5, 300_000.0), _lognormal(rng, 5, 200_000.0)]) for _ in levels]
    tokio = rows_for("tokio", "micro", 3, "mutex_contended", "", 1000, stepped)
    data = tmp_path / "data"
    write_run(data, rows={"ampere": ampere, "tokio": tokio})
    cmp = compare("latest", data_dir=data)
    row = cmp.benchmarks.iloc[0]
    assert row["modes"].startswith("mixed: ampere wins in its fast mode (40% of invocations), loses in its slow mode")
    found = cmp.modes[(cmp.modes["runtime"] == "ampere") & (cmp.modes["level"] == "invocations")]
    assert list(found["mode"]) == ["fast", "slow"] and list(found["n"]) == [4, 6]
    codes = set(zip(cmp.diagnostics["code"], cmp.diagnostics["runtime"]))
    assert ("multimodal", "ampere") in codes and ("step_change", "tokio") in codes
    tokio_side = cmp.runtimes.set_index("runtime").loc["tokio"]
    assert bool(tokio_side["step_change"]) and not bool(tokio_side["multimodal_invocations"])
    from analysis import tables
    shown = tables.modes_table(cmp)
    assert list(shown["Mode"]) == ["fast", "slow"] and shown["Share [95% CI]"].iloc[0].startswith("40% [")
    paired = tables.paired_table(cmp)
    assert paired["Rounds (dropped)"].iloc[0] == "10 (0)" and paired["Method"].iloc[0] == "paired median"
    assert {"Ratio (default method)", "Ratio, paired t", "Paired t verdict", "Unpaired verdict"} <= set(paired.columns)
    from analysis.document import comparison_to_dict
    entry = comparison_to_dict(cmp)["benchmarks"][0]
    assert entry["ratio_method"].startswith("paired median over 10 rounds")
    assert entry["cpu_ratio_method"].startswith("paired median over 10 rounds")
    assert entry["paired_t_verdict"] in ("win", "loss", "tie", "inconclusive") and len(entry["paired_t_ratio_ci"]) == 2
