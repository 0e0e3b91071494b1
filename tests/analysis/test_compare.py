"""compare / diff_runs / diagnostics / summary on synthetic runs (schema 2 unless said otherwise)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis import compare, diff_runs, fairness, load_run, span_cpu
from analysis.benchmarks import BENCHMARK_COLUMNS, RUNTIME_COLUMNS
from analysis.compare import ECHO_COLUMNS
from analysis_fakes import meta_for, rows_for, run_json, standard_rows, write_run


def test_frames_and_verdicts(data_dir):
    result = compare("latest", data_dir=data_dir)
    b = result.benchmarks.set_index("label")
    assert list(result.benchmarks.columns) == BENCHMARK_COLUMNS + list(span_cpu.COLUMNS)
    assert list(result.runtimes.columns) == RUNTIME_COLUMNS
    # canonical order: controls, tiers 1-4, echo
    assert result.benchmarks["label"].tolist() == [
        "floor_cas_store", "floor_fetch_add", "mutex", "oncecell_set", "oneshot", "mutex_contended",
        "task_spawn", "echo_f64 n=1", "echo_f64 n=10"]
    assert b.loc["mutex", "verdict"] == "win" and b.loc["mutex", "ratio"] == pytest.approx(2.0, rel=0.05)
    assert b.loc["task_spawn", "verdict"] == "loss"
    assert b.loc["floor_cas_store", "verdict"] == "tie"
    assert b.loc["oncecell_set", "baseline_bytes_per_op"] == 64 and b.loc["oncecell_set", "candidate_bytes_per_op"] == 0
    assert math.isinf(b.loc["oncecell_set", "bytes_ratio"])
    assert (result.benchmarks["q_value"] >= result.benchmarks["p_value"] - 1e-12).all()
    assert result.benchmarks["workers"].tolist() == [0, 0, 0, 0, 0, 4, 4, 1, 1]
    assert result.benchmarks["headline"].all()
    micro = result.runtimes[result.runtimes["suite"] == "micro"]
    assert micro["n"].eq(30).all() and result.runtimes["n_invocations"].eq(3).all()
    assert micro["ci_method"].str.startswith("t over 3 invocations").all()
    assert result.runtimes[result.runtimes["suite"] == "echo"]["n"].eq(120).all()
    inv = result.invocations
    assert len(inv) == 9 * 2 * 3 and set(inv["invocation"]) == {0, 1, 2}


def test_the_centre_is_the_geometric_mean_of_invocation_medians(data_dir):
    result = compare("latest", data_dir=data_dir)
    run = load_run("latest", data_dir)
    rows = run.rows("ampere").query("benchmark == 'mutex'")
    medians = rows.groupby("invocation")["ns_per_op"].median()
    side = result.runtimes.set_index(["label", "runtime"]).loc[("mutex", "ampere")]
    assert side["median_ns_per_op"] == pytest.approx(math.exp(np.log(medians).mean()))
    assert side["invocation_medians"] == pytest.approx(medians.tolist())
    mutex = result.benchmarks.set_index("label").loc["mutex"]
    assert mutex["ratio"] == pytest.approx(mutex["baseline_median_ns_per_op"] / mutex["candidate_median_ns_per_op"])


def test_one_wall_time_geomean_line_when_every_row_is_like_for_like(data_dir, monkeypatch):
    monkeypatch.setattr(fairness, "like_for_like", lambda name, readme=None: True)
    monkeypatch.setattr(fairness, "earlier_semantics", lambda name, run_id, readme=None: None)
    s = compare("latest", data_dir=data_dir).summary
    lines = "\n".join(s["lines"])
    assert "  geometric mean ratio Tokio/ampere: " in lines and "like-for-like" not in lines
    assert s["like_for_like_geomean_ratio"] == s["geomean_ratio"]


def test_echo_counts_in_the_headline_of_runs_recorded_after_the_owned_oneshot(tmp_path):
    """Issue 25 item 4: echo_f64's replies use the owned oneshot on both sides from the fairness
    table's `runs from` time on; an earlier run keeps it out, with the difference it measured."""
    data = tmp_path / "data"
    write_run(data, "20261126T023315Z-lab1")
    write_run(data, "20261201T000000Z-lab1")
    before = compare("20261126T023315Z-lab1", data_dir=data)
    after = compare("20261201T000000Z-lab1", data_dir=data)
    assert before.summary["not_like_for_like"] == ["oneshot", "echo_f64 n=1", "echo_f64 n=10"]
    assert after.summary["not_like_for_like"] == ["oneshot"]
    assert after.summary["by_suite"]["echo"]["n_like_for_like"] == 2
    notes = before.benchmarks.set_index("label")["semantics_note"]
    assert "caller-owned" in notes["echo_f64 n=1"]
    assert after.benchmarks.set_index("label").loc["echo_f64 n=1", "semantics_note"] == ""


def test_summary_counts_and_lines(data_dir):
    result = compare("latest", data_dir=data_dir)
    s = result.summary
    assert s["n_compared"] == 7  # controls excluded
    # The headline counts like-for-like rows only: oneshot (the caller-owned oneshot) is not, nor
    # is echo_f64 in this run, recorded before its replies moved to the owned oneshot.
    assert s["n_like_for_like"] == 4 and sum(s["counts"].values()) == 4 and sum(s["all_counts"].values()) == 7
    assert s["not_like_for_like"] == ["oneshot", "echo_f64 n=1", "echo_f64 n=10"]
    assert s["like_for_like_geomean_n"] == 4 and s["geomean_n"] == 7 and s["cpu_geomean_n"] == 4
    assert s["by_suite"]["micro"]["n_compared"] == 5 and s["by_suite"]["echo"]["n_compared"] == 2
    assert set(s["controls"]) == {"floor_cas_store", "floor_fetch_add"}
    assert set(s["controls"].values()) <= {"tie", "inconclusive"}  # 3 invocations: t with 2 df is wide
    micro = s["by_suite"]["micro"]
    # totals: tokio allocates 64 (oncecell_set) + 72 (oneshot) + 2 + 128; ampere 2 + 128
    assert micro["total_bytes_per_op"] == {"tokio": 266.0, "ampere": 130.0}
    lines = "\n".join(s["lines"])
    wins, losses = micro["counts"]["win"], micro["counts"]["loss"]
    assert f"micro (tiers 1-4): like-for-like rows: ampere wins: {wins} / 4   Tokio wins: {losses} / 4" in lines
    assert "not like for like: oneshot" in lines
    assert "Total bytes per op" not in lines and "Total allocs per op" not in lines  # no sum of unlike ops (issue 43)
    assert "geometric mean CPU ratio (per sample), like-for-like rows Tokio/ampere: " in lines
    lo, hi = micro["geomean_ratio_ci"]
    assert lo <= micro["geomean_ratio"] <= hi


def test_swapping_baseline_and_candidate_mirrors_everything(data_dir):
    forward = compare("latest", data_dir=data_dir).benchmarks
    backward = compare("latest", baseline="ampere", candidate="tokio", data_dir=data_dir).benchmarks
    mirror = {"win": "loss", "loss": "win", "tie": "tie", "inconclusive": "inconclusive"}
    assert backward["verdict"].tolist() == [mirror[v] for v in forward["verdict"]]
    assert backward["cpu_verdict"].tolist() == [mirror[v] for v in forward["cpu_verdict"]]
    assert np.allclose(backward["ratio"], 1 / forward["ratio"], rtol=1e-12)
    assert np.array_equal(backward["log_ratio_ci_low"], -forward["log_ratio_ci_high"])
    assert np.allclose(backward["p_value"], forward["p_value"])


def test_echo_table(data_dir):
    result = compare("latest", data_dir=data_dir)
    echo = result.echo
    assert list(echo.columns) == ECHO_COLUMNS
    assert echo["runtime"].tolist() == ["ampere", "tokio", "ampere", "tokio"]  # candidate first
    row = echo.iloc[0]
    assert row["min_ns"] <= row["p75_ns"] <= row["p99_ns"] <= row["max_ns"]
    assert row["avg_ns_ci_low"] <= row["avg_ns"] <= row["avg_ns_ci_high"]
    assert row["p99_ns_ci_low"] <= row["p99_ns"] <= row["p99_ns_ci_high"]
    assert echo.iloc[1]["avg_ratio"] == 1.0  # the baseline against itself
    run = load_run("latest", data_dir)
    batches = run.rows("ampere").query("benchmark == 'echo_f64' and param == 'n=1'")["elapsed_ns"]
    assert row["avg_ns"] == pytest.approx(batches.mean()) and row["max_ns"] == batches.max()
    assert row["p99_ns"] == np.quantile(batches, 0.99, method="inverted_cdf")


def test_single_runtime_describes_instead_of_comparing(tmp_path):
    data = tmp_path / "data"
    write_run(data, runtimes=["ampere"])
    result = compare("latest", data_dir=data)
    assert not result.compared
    assert result.benchmarks["verdict"].isna().all()
    assert result.benchmarks["ratio"].isna().all()
    assert result.benchmarks["verdict_reason"].str.contains("no tokio data").all()
    assert result.benchmarks["candidate_median_ns_per_op"].notna().all()
    assert result.summary["lines"] == ["not compared: the run has data for only one of ampere and tokio"]
    assert result.echo["avg_ns_ci_low"].notna().all()  # intervals still computed for the one side


def test_benchmark_missing_on_one_side(tmp_path):
    data = tmp_path / "data"
    tokio = [r for r in standard_rows("tokio") if r[4] != "mutex"]
    write_run(data, rows={"tokio": tokio},
              info=run_json("20261122T101500Z-lab1", declared_benchmarks={"mutex": "tokio's side left out"}))
    result = compare("latest", data_dir=data)
    mutex = result.benchmarks.set_index("label").loc["mutex"]
    assert not mutex["compared"] and pd.isna(mutex["verdict"])
    assert "no tokio data for this benchmark" in mutex["verdict_reason"]
    assert "not_compared" in set(result.diagnostics["code"])


def test_constant_but_different_samples_are_inconclusive_not_a_zero_width_win(tmp_path):
    """Issue 11 item 6: 1000 ns vs 500 ns in every iteration was a `win` with CI [2.000, 2.000]."""
    data = tmp_path / "data"
    rows = {rt: rows_for(rt, "micro", 1, "mutex", "", 1000, [[value] * 10] * 3)
            for rt, value in (("tokio", 1_000_000), ("ampere", 500_000))}
    write_run(data, rows=rows)
    row = compare("latest", data_dir=data).benchmarks.iloc[0]
    assert row["ratio"] == 2.0 and row["verdict"] == "inconclusive"
    assert math.isnan(row["ratio_ci_low"]) and math.isnan(row["ratio_ci_high"])
    assert row["verdict_reason"].startswith("no interval (no variation in the tokio or ampere timings")


# -- CPU time, workers, variants, like for like -----------------------------------------------

def spinning_run(tmp_path, schema=2):
    """ampere faster in wall time on mutex but with 3x the CPU per op (it spins); same CPU elsewhere."""
    rng = np.random.default_rng(5)
    rows = {}
    for rt in ("ampere", "tokio"):
        wall = 0.5 if rt == "ampere" else 1.0
        r = rows_for(rt, "micro", 1, "mutex", "", 1000, [12_000 * wall * np.exp(rng.normal(0, 0.02, 10)) for _ in range(3)],
                     cpu_share=3.0 if rt == "ampere" else 0.5)
        r += rows_for(rt, "micro", 1, "notify", "", 1000, [20_000 * np.exp(rng.normal(0, 0.02, 10)) for _ in range(3)])
        rows[rt] = r
    data = tmp_path / "data"
    write_run(data, rows=rows, schema=schema)
    return data


def test_cpu_ratio_cores_busy_and_cpu_verdict(tmp_path):
    result = compare("latest", data_dir=spinning_run(tmp_path))
    mutex = result.benchmarks.set_index("label").loc["mutex"]
    assert mutex["verdict"] == "win" and mutex["cpu_verdict"] == "loss"
    # CPU per op: ampere 3 x 6000 = 18000 ns/1000 ops, tokio 0.5 x 12000 -> ratio 1/3
    assert mutex["cpu_ratio"] == pytest.approx(1 / 3, rel=0.05)
    assert mutex["cpu_ratio_ci_low"] <= mutex["cpu_ratio"] <= mutex["cpu_ratio_ci_high"]
    assert mutex["candidate_cores_busy"] == pytest.approx(3.0) and mutex["baseline_cores_busy"] == pytest.approx(0.5)
    assert mutex["candidate_cpu_ns_per_op"] == pytest.approx(18.0, rel=0.05)
    assert result.summary["cpu_counts"]["loss"] == 1 and math.isfinite(result.summary["cpu_geomean_ratio"])


def test_schema_1_run_has_cpu_not_recorded(tmp_path):
    result = compare("latest", data_dir=spinning_run(tmp_path, schema=1))
    b = result.benchmarks
    assert b["cpu_ratio"].isna().all() and b["cpu_verdict"].isna().all()
    assert b["workers"].isna().all() and b["headline"].all()
    assert b["cpu_verdict_reason"].str.startswith("CPU time not recorded").all()
    assert result.runtimes["cores_busy"].isna().all()
    assert result.summary["cpu_geomean_n"] == 0 and result.summary["cpu_counts"]["loss"] == 0


def sweep_rows(runtime: str, speeds: dict[int, float]) -> list[list]:
    rng = np.random.default_rng([7, len(runtime)])
    rows = standard_rows(runtime)
    for workers, speed in speeds.items():
        rows += rows_for(runtime, "micro", 4, "yield_many", "", 200_000,
                         [40 * speed * 200_000 * np.exp(rng.normal(0, 0.02, 10)) for _ in range(3)], workers=workers)
    return rows


def test_worker_sweep_rows_are_keyed_by_workers_and_only_num_workers_is_headline(tmp_path):
    data = tmp_path / "data"
    write_run(data, rows={"ampere": sweep_rows("ampere", {1: 1.0, 2: 0.5, 4: 0.25}),
                          "tokio": sweep_rows("tokio", {1: 1.0, 2: 1.0, 4: 1.0})})
    result = compare("latest", data_dir=data)
    y = result.benchmarks[result.benchmarks["benchmark"] == "yield_many"]
    assert y["workers"].tolist() == [1, 2, 4]
    assert y["label"].tolist() == ["yield_many (w=1)", "yield_many (w=2)", "yield_many (w=4)"]
    assert y["headline"].tolist() == [False, False, True]  # run.json: num_workers = 4
    assert y["ratio"].tolist() == pytest.approx([1.0, 2.0, 4.0], rel=0.05)
    assert y["verdict"].tolist() == ["tie", "win", "win"]
    assert result.summary["n_compared"] == 8  # 7 standard rows + yield_many at 4 workers


def test_a_variant_is_a_runtime_of_its_own(tmp_path):
    data = tmp_path / "data"
    rows = {"ampere": standard_rows("ampere", {"mutex": 0.5}), "tokio": standard_rows("tokio"),
            "ampere.nospin": [[("ampere.nospin" if i == 0 else v) for i, v in enumerate(r)]
                              for r in standard_rows("ampere", {"mutex": 0.9}, seed=4)]}
    meta = {rt: {**meta_for("ampere" if rt.startswith("ampere") else rt), "runtime": rt} for rt in rows}
    write_run(data, runtimes=list(rows), rows=rows, meta=meta)
    result = compare("latest", candidate="ampere.nospin", data_dir=data)
    mutex = result.benchmarks.set_index("label").loc["mutex"]
    assert result.candidate == "ampere.nospin" and mutex["ratio"] == pytest.approx(1 / 0.9, rel=0.05)
    assert set(result.runtimes["runtime"]) == {"ampere.nospin", "tokio"}


def test_like_for_like_from_the_fairness_table(data_dir, monkeypatch):
    """fairness.like_for_like decides (a fake here) and fairness.semantics_note names the difference;
    the summary gives the geometric mean over the like-for-like rows and over all rows."""
    monkeypatch.setattr(fairness, "like_for_like", lambda name, readme=None: name != "oneshot")
    monkeypatch.setattr(fairness, "semantics_note",
                        lambda name, readme=None: "no sender/receiver pair" if name == "oneshot" else "")
    monkeypatch.setattr(fairness, "earlier_semantics", lambda name, run_id, readme=None: None)
    result = compare("latest", data_dir=data_dir)
    b = result.benchmarks.set_index("label")
    assert not b.loc["oneshot", "like_for_like"] and b.loc["oneshot", "semantics_note"] == "no sender/receiver pair"
    assert b.drop(index="oneshot")["like_for_like"].all()
    s = result.summary
    assert s["n_like_for_like"] == s["n_compared"] - 1 and s["like_for_like_geomean_n"] == s["geomean_n"] - 1
    assert s["like_for_like_geomean_ratio"] != s["geomean_ratio"]
    lines = "\n".join(s["lines"])
    assert lines.index("geometric mean ratio, like-for-like rows") < lines.index("geometric mean ratio, all rows")


def test_the_real_fairness_table_marks_its_rows(data_dir):
    """With runtime/bench/README.md: every benchmark of the synthetic run is listed there (as
    it reads for a run recorded when this one was)."""
    result = compare("latest", data_dir=data_dir)
    b = result.benchmarks.set_index("label")
    expected = {label: fairness.like_for_like(name) and fairness.earlier_semantics(name, result.run_id) is None
                for label, name in zip(b.index, b["benchmark"])}
    assert b["like_for_like"].to_dict() == expected
    assert (b.loc[b["like_for_like"], "semantics_note"] == "").all()


def test_diff_compares_a_runtime_with_itself_like_for_like(data_dir, monkeypatch):
    monkeypatch.setattr(fairness, "like_for_like", lambda name, readme=None: False)
    assert diff_runs("latest", "latest", "ampere", data_dir=data_dir).benchmarks["like_for_like"].all()


# -- diagnostics ------------------------------------------------------------------------------

def diagnostics_run(tmp_path, **kwargs):
    data = tmp_path / "data"
    write_run(data, **kwargs)
    return compare("latest", data_dir=data).diagnostics


def test_diagnostics_machine_and_cores(tmp_path):
    meta = {"ampere": meta_for("ampere", logical_cores=2), "tokio": meta_for("tokio", cpu_model="Other CPU", logical_cores=2)}
    diag = diagnostics_run(tmp_path, meta=meta)
    codes = set(diag["code"])
    assert {"machine", "oversubscribed"} <= codes
    message = diag.set_index("code").loc["machine", "message"]
    assert "tokio and ampere ran on different machines (cpu_model: 'Other CPU' vs 'Test CPU')" == message
    assert "2 logical cores < 4 workers" in diag.set_index("code").loc["oversubscribed", "message"]


def test_diagnostics_debug_build(tmp_path):
    meta = {"ampere": {**meta_for("ampere"), "build_mode": "Debug"}, "tokio": meta_for("tokio")}
    diag = diagnostics_run(tmp_path, meta=meta)
    row = diag[diag["code"] == "build_mode"].iloc[0]
    assert row["runtime"] == "ampere" and "not a release build" in row["message"]


def test_diagnostics_samples_quantisation_drift_controls(tmp_path):
    rng = np.random.default_rng(4)
    rows = {}
    for rt in ("ampere", "tokio"):
        r = rows_for(rt, "micro", 1, "mutex", "", 1000, [[12_000] * 3 + [13_000] * 2])              # 5 samples, quantised
        r += rows_for(rt, "micro", 1, "notify", "", 1000, [np.linspace(10_000, 20_000, 12) + rng.integers(0, 9, 12)])  # drift
        r += rows_for(rt, "micro", 1, "barrier", "", 1000, [[50_000] + list(10_000 + rng.integers(0, 50, 11))])  # warm-up
        factor = 1.0 if rt == "tokio" else 0.7
        r += rows_for(rt, "micro", 0, "floor_fetch_add", "", 1000, [4000 * factor + rng.integers(0, 40, 10) for _ in range(2)])
        rows[rt] = r
    diag = diagnostics_run(tmp_path, rows=rows)
    by = lambda code: diag[diag["code"] == code]  # noqa: E731
    assert set(by("few_samples")["benchmark"]) == {"mutex"}
    assert "only 5 samples" in by("few_samples")["message"].iloc[0]
    assert by("quantisation").empty  # fewer than 6 samples are not judged for quantisation
    drift = by("drift")
    assert {"notify", "barrier"} <= set(drift["benchmark"])
    assert drift[drift["benchmark"] == "barrier"]["message"].str.contains("first iteration is an outlier").all()
    control = by("control_not_tie")
    assert control["benchmark"].tolist() == ["floor_fetch_add"]
    assert diag["level"].iloc[0] == "warning"


def test_quantisation_by_microsecond_clock(tmp_path):
    rows = {rt: rows_for(rt, "micro", 1, "mutex", "", 1000, [[12_000, 13_000, 14_000, 15_000, 16_000, 17_000, 18_000]])
            for rt in ("ampere", "tokio")}
    diag = diagnostics_run(tmp_path, rows=rows)
    q = diag[diag["code"] == "quantisation"]
    assert len(q) == 2 and q["message"].str.contains("multiple of 1000").all()


def test_drift_needs_an_effect_not_only_significance():
    """500 batches with a tiny trend (tau ~ 0.1) are significant but not flagged; a strong trend is."""
    from scipy import stats as sps

    from analysis.diagnostics import DRIFT_TAU_MIN, check_drift

    rng = np.random.default_rng(3)
    n = 500
    weak = 1000 + 0.006 * np.arange(n) + rng.normal(0, 5, n)
    strong = 1000 + 0.5 * np.arange(n) + rng.normal(0, 5, n)
    rows = []
    for label, series in (("weak", weak), ("strong", strong)):
        tau, p = sps.kendalltau(np.arange(n), series)
        rows.append({"suite": "echo", "tier": 0, "benchmark": label, "param": "n=1", "workers": 1, "runtime": "ampere",
                     "invocation": 0, "kendall_tau": tau, "kendall_pvalue": p, "kendall_qvalue": p,
                     "first_is_outlier": False})
    frame = pd.DataFrame(rows)
    assert frame.loc[0, "kendall_pvalue"] < 0.01 and abs(frame.loc[0, "kendall_tau"]) < DRIFT_TAU_MIN
    flagged = {row["benchmark"] for row in check_drift(frame)}
    assert flagged == {"strong"}


def test_generic_cpu_build_on_one_side_is_flagged():
    from analysis.diagnostics import check_meta

    tuned = {"build_mode": "ReleaseFast", "target_cpu": "sapphirerapids", "machine": {"cores": 2}}
    generic = {"build_mode": "release (opt-level=3, lto=fat, codegen-units=1, rustflags: none)",
               "target_cpu": "generic", "machine": {"cores": 2}}
    rows = check_meta({"ampere": tuned, "tokio": generic})
    assert [(r["code"], r["runtime"]) for r in rows] == [("target_cpu", "tokio")]
    both_native = dict(generic, target_cpu="native")
    assert check_meta({"ampere": tuned, "tokio": both_native}) == []


def test_inconclusive_control_is_reported_as_unresolved_not_as_different_harnesses(tmp_path):
    rng = np.random.default_rng(9)
    rows = {rt: rows_for(rt, "micro", 0, "floor_fetch_add", "", 1000,
                         [4000 * np.exp(rng.normal(0, 0.3, 6)) for _ in range(2)]) for rt in ("ampere", "tokio")}
    data = tmp_path / "data"
    write_run(data, rows=rows)
    result = compare("latest", data_dir=data)
    assert result.benchmarks["verdict"].tolist() == ["inconclusive"]
    message = result.diagnostics.set_index("code").loc["control_not_tie", "message"]
    assert message.startswith("control not shown to tie") and "harnesses differ" not in message
    line = result.summary["lines"][-1]
    # the control's interval and the band it does fit in, beside the verdict
    assert line.startswith("controls: floor_fetch_add inconclusive (") and ", within ±" in line
    assert line.endswith("not shown to tie within ±5%: the intervals are wider than the tie band, so the harnesses "
                         "are not shown to agree to that precision")
    # the line names the band the verdicts were given with, not the default
    wide = compare("latest", data_dir=data, tie_band=0.2).summary["lines"][-1]
    assert "within ±20%" in wide and "±5%" not in wide


# -- diff and history ---------------------------------------------------------------------------

def test_diff_runs_regression_and_improvement(tmp_path):
    data = tmp_path / "data"
    write_run(data, "20261122T100000Z-lab1", seed=1)
    write_run(data, "20261122T110000Z-lab1", seed=2, speed={"mutex": 2.0, "oneshot": 0.5})
    result = diff_runs("20261122T100000Z-lab1", "20261122T110000Z-lab1", "ampere", data_dir=data)
    b = result.benchmarks.set_index("label")
    assert b.loc["mutex", "verdict"] == "loss" and b.loc["mutex", "regressed"]
    assert b.loc["mutex", "ratio"] == pytest.approx(0.5, rel=0.05)
    assert b.loc["oneshot", "verdict"] == "win" and not b.loc["oneshot", "regressed"]
    assert result.extra["run_a"] == "20261122T100000Z-lab1"
    assert set(result.runtimes["runtime"]) == {"A", "B"}


def test_diff_of_a_run_with_itself_is_all_ties_or_inconclusive(data_dir):
    result = diff_runs("latest", "latest", "ampere", data_dir=data_dir)
    assert set(result.benchmarks["verdict"]) <= {"tie", "inconclusive"}
    assert not result.benchmarks["regressed"].any()
    assert np.allclose(result.benchmarks["ratio"], 1.0)
    # identical samples get an interval symmetric around 1
    assert np.allclose(result.benchmarks["log_ratio_ci_low"], -result.benchmarks["log_ratio_ci_high"])


def test_bad_arguments(data_dir):
    from analysis.errors import AnalysisError

    with pytest.raises(AnalysisError, match="has no nobody or somebody data"):
        compare("latest", baseline="nobody", candidate="somebody", data_dir=data_dir)
    with pytest.raises(AnalysisError, match="both 'tokio'"):
        compare("latest", baseline="tokio", candidate="tokio", data_dir=data_dir)
    with pytest.raises(AnalysisError, match="tie-band"):
        compare("latest", tie_band=-1, data_dir=data_dir)
    with pytest.raises(AnalysisError, match="confidence"):
        compare("latest", confidence=1.5, data_dir=data_dir)
    with pytest.raises(AnalysisError, match="has no missing data"):
        diff_runs("latest", "latest", "missing", data_dir=data_dir)


def test_benchmark_history_across_runs(tmp_path):
    from analysis import benchmark_history

    data = tmp_path / "data"
    write_run(data, "20261122T100000Z-lab1", seed=1)
    write_run(data, "20261122T110000Z-lab1", seed=2, speed={"mutex": 2.0})
    write_run(data, "20261122T120000Z-lab1", complete=False)
    history = benchmark_history(data, runtime="ampere")
    assert set(history["run_id"]) == {"20261122T100000Z-lab1", "20261122T110000Z-lab1"}
    assert set(history["runtime"]) == {"ampere"}
    mutex = history[history["benchmark"] == "mutex"].sort_values("run_id")["median_ns_per_op"].tolist()
    assert mutex[1] / mutex[0] == pytest.approx(2.0, rel=0.05)
    assert (history["ci_low"] <= history["median_ns_per_op"]).all()


def test_schema_1_and_schema_2_runs_compare_through_history(tmp_path):
    from analysis.history import history_data

    data = tmp_path / "data"
    write_run(data, "20261122T100000Z-lab1", seed=1, schema=1,
              info=run_json("20261122T100000Z-lab1"))
    write_run(data, "20261123T100000Z-lab1", seed=2, speed={"mutex": 2.0})
    history = history_data(data, "tokio", "ampere", 0.05, 0.95, profile="full")
    assert list(history.runs["run_id"]) == ["20261122T100000Z-lab1", "20261123T100000Z-lab1"]
    assert history.left_out.empty
    assert list(history.regressions["benchmark"]) == ["mutex"]
    # rows without a recorded worker count match the count the contract implies (0, 1 or num_workers)
    assert set(history.ratios[history.ratios["run_id"] == "20261122T100000Z-lab1"]["workers"].dropna()) == set()
    diff = diff_runs("20261122T100000Z-lab1", "20261123T100000Z-lab1", "ampere", data_dir=data)
    assert diff.benchmarks["compared"].all() and diff.benchmarks["workers"].tolist() == [0, 0, 0, 0, 0, 4, 4, 1, 1]
