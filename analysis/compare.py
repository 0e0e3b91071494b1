"""Comparison of two runtimes in one run (`compare`) and of one runtime across runs (`diff_runs`).

Both reduce to the same core: two sets of rows ("baseline" and "candidate"), grouped by
benchmark (suite, tier, benchmark, param), described per side and compared pairwise:
ratio of medians of ns/op (baseline / candidate, > 1 = candidate faster) with a bootstrap
interval, Hodges-Lehmann ratio as a cross-check, Mann-Whitney p-value, Benjamini-Hochberg
q-value across every benchmark of the comparison, Cliff's delta, allocation ratios and the
verdict. The echo suite adds per-batch avg/min/p75/p99/max per side. See stats.py for the
methods and analysis/README.md for why.

Every frame is tidy enough to plot directly:
- `Comparison.benchmarks`: one row per benchmark; side-specific columns are prefixed
  `baseline_` / `candidate_` so that notebooks do not depend on the runtime names;
- `Comparison.runtimes`: one row per benchmark x runtime (long form);
- `Comparison.invocations`: one row per benchmark x runtime x invocation;
- `Comparison.echo`: the echo table (one row per echo benchmark x runtime);
- `Comparison.diagnostics`: one row per diagnostic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np
import pandas as pd

from . import schema, stats
from .errors import AnalysisError
from .load import Run, load_run

RUNTIME_COLUMNS = [
    "suite", "tier", "benchmark", "param", "label", "runtime", "role", "n", "n_invocations", "ops",
    "median_ns_per_op", "ci_low", "ci_high", "ci_low_rank", "ci_high_rank", "ci_coverage", "ci_widest",
    "mean_ns_per_op", "min_ns_per_op", "max_ns_per_op", "iqr_ns_per_op", "rcv",
    "var_between", "var_within", "share_between", "invocation_f_pvalue",
    "bytes_per_op", "allocs_per_op", "alloc_varies", "invocation_medians",
    "avg_ns", "avg_ns_ci_low", "avg_ns_ci_high", "min_ns", "p75_ns", "p99_ns", "p99_ns_ci_low",
    "p99_ns_ci_high", "p99_ns_ci_widest", "max_ns",
]
SIDE_FIELDS = ["n", "n_invocations", "median_ns_per_op", "ci_low", "ci_high", "ci_widest", "rcv",
               "share_between", "bytes_per_op", "allocs_per_op", "alloc_varies",
               "avg_ns", "avg_ns_ci_low", "avg_ns_ci_high", "min_ns", "p75_ns", "p99_ns",
               "p99_ns_ci_low", "p99_ns_ci_high", "max_ns"]
BENCHMARK_COLUMNS = (
    ["suite", "tier", "benchmark", "param", "label", "compared"]
    + [f"baseline_{f}" for f in SIDE_FIELDS] + [f"candidate_{f}" for f in SIDE_FIELDS]
    + ["ratio", "ratio_ci_low", "ratio_ci_high", "log_ratio", "log_ratio_ci_low", "log_ratio_ci_high",
       "ratio_method", "hl_ratio", "hl_ci_low", "hl_ci_high", "p_value", "q_value", "cliffs_delta",
       "verdict", "verdict_reason", "bytes_ratio", "allocs_ratio",
       "avg_ratio", "avg_ratio_ci_low", "avg_ratio_ci_high", "p99_ratio"]
)
INVOCATION_COLUMNS = ["suite", "tier", "benchmark", "param", "label", "runtime", "invocation", "n",
                      "median_ns_per_op", "mean_ns_per_op", "min_ns_per_op", "max_ns_per_op",
                      "kendall_tau", "kendall_pvalue", "kendall_qvalue", "first_is_outlier"]
DIAGNOSTIC_COLUMNS = ["level", "code", "suite", "tier", "benchmark", "param", "runtime", "message"]
VERDICTS = ("win", "loss", "tie", "inconclusive")
#: Drift test: Kendall tau of elapsed vs iteration within an invocation is flagged when its
#: p-value is below DRIFT_ALPHA, its Benjamini-Hochberg q-value across all invocations of the
#: comparison is below DRIFT_FDR (without the FDR step ~1% of invocations would be flagged by
#: chance), and |tau| is at least DRIFT_TAU_MIN: with 500 echo batches a negligible trend
#: (|tau| ~ 0.1) has p ~ 1e-4, so significance alone would flag nearly every echo row.
DRIFT_ALPHA = 0.01
DRIFT_FDR = 0.05
DRIFT_TAU_MIN = 0.3
#: A first iteration is flagged when it lies outside the range of the other iterations and
#: further from their median than OUTLIER_MADS robust SDs (normal-consistent MAD) and than
#: OUTLIER_RELATIVE of that median (a floor for very quiet benchmarks, where MAD is tiny).
OUTLIER_MADS = 5.0
OUTLIER_RELATIVE = 0.10


def _key_of(frame: pd.DataFrame) -> list[tuple]:
    keys = frame[list(schema.BENCH_KEY)].drop_duplicates().itertuples(index=False, name=None)
    return [(s, int(t), b, p) for s, t, b, p in keys]


def _sample(rows: pd.DataFrame, column: str) -> list[np.ndarray]:
    """Values of `column` per invocation (sorted by invocation, then iteration)."""
    ordered = rows.sort_values(["invocation", "iteration"])
    return [g[column].to_numpy(dtype=np.float64) for _, g in ordered.groupby("invocation", sort=True)]


# -- one side ---------------------------------------------------------------------------------

def describe_side(rows: pd.DataFrame, confidence: float, n_resamples: int, seed: int,
                  avg_ci: bool = True) -> dict[str, Any]:
    """Per-runtime statistics of one benchmark (one row of `Comparison.runtimes`).

    `avg_ci=False` skips the echo avg interval: `compare_sides` fills it in from the resamples
    it draws anyway for the ratios (same method, no second bootstrap).
    """
    sample = _sample(rows, "ns_per_op")
    values = stats.pooled(sample)
    med = stats.median_ci(values, confidence)
    comps = stats.variance_components(sample)
    per_row_bytes = (rows["alloc_bytes"] / rows["ops"]).to_numpy()
    per_row_allocs = (rows["alloc_count"] / rows["ops"]).to_numpy()
    q1, q3 = np.quantile(values, [0.25, 0.75])
    out: dict[str, Any] = {
        "n": int(values.size), "n_invocations": len(sample), "ops": int(rows["ops"].median()),
        "median_ns_per_op": med.estimate, "ci_low": med.low, "ci_high": med.high,
        "ci_low_rank": med.low_rank, "ci_high_rank": med.high_rank, "ci_coverage": med.coverage,
        "ci_widest": med.widest, "mean_ns_per_op": float(values.mean()),
        "min_ns_per_op": float(values.min()), "max_ns_per_op": float(values.max()),
        "iqr_ns_per_op": float(q3 - q1), "rcv": stats.robust_cv(values),
        "var_between": comps.between, "var_within": comps.within, "share_between": comps.share_between,
        "invocation_f_pvalue": comps.f_pvalue,
        "bytes_per_op": float(per_row_bytes.mean()), "allocs_per_op": float(per_row_allocs.mean()),
        "alloc_varies": bool(np.ptp(per_row_bytes) > 0 or np.ptp(per_row_allocs) > 0),
        "invocation_medians": [float(np.median(a)) for a in sample],
    }
    out.update(dict.fromkeys(["avg_ns", "avg_ns_ci_low", "avg_ns_ci_high", "min_ns", "p75_ns", "p99_ns",
                              "p99_ns_ci_low", "p99_ns_ci_high", "p99_ns_ci_widest", "max_ns"], math.nan))
    if (rows["suite"] == "echo").all():
        out.update(describe_batches(_sample(rows, "elapsed_ns"), confidence, n_resamples, seed, avg_ci))
    return out


def describe_batches(sample: list[np.ndarray], confidence: float, n_resamples: int, seed: int,
                     avg_ci: bool = True) -> dict[str, Any]:
    """Echo statistics per batch (elapsed_ns of a whole batch, not per op).

    avg with a bootstrap CI (stats.statistic_ci); p75 and p99 are the inverted-CDF quantiles
    (an observed batch time, x_(ceil(q n))); p99 gets its order-statistic CI.
    """
    batches = stats.pooled(sample)
    avg = (stats.statistic_ci(sample, "mean", confidence, n_resamples, seed) if avg_ci
           else stats.StatCI(float(batches.mean()), math.nan, math.nan, "deferred"))
    p75 = stats.quantile_ci(batches, 0.75, confidence, method="inverted_cdf")
    p99 = stats.quantile_ci(batches, 0.99, confidence, method="inverted_cdf")
    return {"avg_ns": avg.estimate, "avg_ns_ci_low": avg.low, "avg_ns_ci_high": avg.high,
            "min_ns": float(batches.min()), "p75_ns": p75.estimate, "p99_ns": p99.estimate,
            "p99_ns_ci_low": p99.low, "p99_ns_ci_high": p99.high, "p99_ns_ci_widest": p99.widest,
            "max_ns": float(batches.max())}


def describe_invocations(rows: pd.DataFrame) -> list[dict[str, Any]]:
    """Per-invocation medians and the drift / warm-up checks (Kendall tau, first-iteration outlier)."""
    import scipy.stats as st

    out = []
    for invocation, group in rows.sort_values(["invocation", "iteration"]).groupby("invocation", sort=True):
        values = group["ns_per_op"].to_numpy(dtype=np.float64)
        tau = pvalue = math.nan
        outlier = False
        if values.size >= schema.MIN_SAMPLES:
            if np.ptp(values) > 0:
                res = st.kendalltau(group["iteration"].to_numpy(), values)
                tau, pvalue = float(res.statistic), float(res.pvalue)
            rest = values[1:]
            centre = float(np.median(rest))
            spread = max(OUTLIER_MADS * float(st.median_abs_deviation(rest, scale="normal")),
                         OUTLIER_RELATIVE * centre)
            outside = values[0] > rest.max() or values[0] < rest.min()
            outlier = bool(outside and abs(values[0] - centre) > spread)
        out.append({"invocation": int(invocation), "n": int(values.size),
                    "median_ns_per_op": float(np.median(values)), "mean_ns_per_op": float(values.mean()),
                    "min_ns_per_op": float(values.min()), "max_ns_per_op": float(values.max()),
                    "kendall_tau": tau, "kendall_pvalue": pvalue, "first_is_outlier": outlier})
    return out


# -- two sides --------------------------------------------------------------------------------

def _safe_ratio(numerator: float, denominator: float) -> float:
    if denominator == 0:
        return math.nan if numerator == 0 else math.inf
    return numerator / denominator


def compare_sides(base: pd.DataFrame, cand: pd.DataFrame, tie_band: float, confidence: float,
                  n_resamples: int, seed: int) -> dict[str, Any]:
    """Pairwise statistics of one benchmark (p-values are adjusted later, across benchmarks).

    Echo benchmarks also get the ratio of mean ns/op (= ratio of avg batch time: ops is the
    batch size n on both sides) from the same resamples as the median ratio, and each side's
    avg-per-batch interval (`baseline_avg_ci` / `candidate_avg_ci`, a StatCI).
    """
    b_sample, c_sample = _sample(base, "ns_per_op"), _sample(cand, "ns_per_op")
    b, c = stats.pooled(b_sample), stats.pooled(c_sample)
    echo = bool((base["suite"] == "echo").all())
    pair = stats.ratio_cis(b_sample, c_sample, ("median", "mean") if echo else ("median",),
                           confidence, n_resamples, seed)
    rci = pair.cis["median"]
    hl = stats.hodges_lehmann(b, c, confidence)
    rank = stats.rank_test(b, c)
    verdict = stats.verdict(rci.log_low, rci.log_high, tie_band)
    out: dict[str, Any] = {
        "ratio": rci.ratio, "ratio_ci_low": rci.low, "ratio_ci_high": rci.high,
        "log_ratio": rci.log_ratio, "log_ratio_ci_low": rci.log_low, "log_ratio_ci_high": rci.log_high,
        "ratio_method": rci.method, "hl_ratio": hl.ratio, "hl_ci_low": hl.low, "hl_ci_high": hl.high,
        "p_value": rank.p_value, "cliffs_delta": rank.cliffs_delta, "verdict": verdict,
        "verdict_reason": verdict_reason(verdict, rci, tie_band),
    }
    out.update(dict.fromkeys(["avg_ratio", "avg_ratio_ci_low", "avg_ratio_ci_high", "p99_ratio"], math.nan))
    if echo:
        avg = pair.cis["mean"]
        out.update(avg_ratio=avg.ratio, avg_ratio_ci_low=avg.low, avg_ratio_ci_high=avg.high)
        for role, rows, dists in (("baseline", base, pair.baseline), ("candidate", cand, pair.candidate)):
            out[f"{role}_avg_ci"] = _avg_batch_ci(rows, dists, confidence, n_resamples, seed)
    return out


def _avg_batch_ci(rows: pd.DataFrame, dists: dict[str, np.ndarray] | None, confidence: float,
                  n_resamples: int, seed: int) -> stats.StatCI:
    """Interval of the mean batch time: reuse the pair's resamples of mean ns/op x batch size
    when the design was hierarchical and the batch size is constant, else bootstrap anew."""
    ops = rows["ops"].to_numpy()
    sample = _sample(rows, "elapsed_ns")
    if dists is not None and (ops == ops[0]).all():
        return stats.statistic_ci(sample, "mean", confidence, distribution=dists["mean"] * float(ops[0]))
    return stats.statistic_ci(sample, "mean", confidence, n_resamples, seed)


def verdict_reason(verdict: str, rci: stats.RatioCI, tie_band: float) -> str:
    hi_edge, lo_edge = 1 + tie_band, 1 / (1 + tie_band)
    if not (math.isfinite(rci.log_low) and math.isfinite(rci.log_high)):
        return f"no interval ({rci.method})"
    ci = f"CI [{rci.low:.3f}, {rci.high:.3f}]"
    return {
        "win": f"{ci} wholly above {hi_edge:.3f}",
        "loss": f"{ci} wholly below {lo_edge:.3f}",
        "tie": f"{ci} inside the tie band [{lo_edge:.3f}, {hi_edge:.3f}]",
        "inconclusive": f"{ci} crosses an edge of the tie band [{lo_edge:.3f}, {hi_edge:.3f}]",
    }[verdict]


# -- the result -------------------------------------------------------------------------------

@dataclass
class Comparison:
    """Result of `compare` / `diff_runs`. `compared` is False when one side has no data at all."""

    run_id: str
    baseline: str
    candidate: str
    tie_band: float
    confidence: float
    benchmarks: pd.DataFrame
    runtimes: pd.DataFrame
    invocations: pd.DataFrame
    echo: pd.DataFrame
    diagnostics: pd.DataFrame
    summary: dict[str, Any]
    compared: bool
    run: Run | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of `compare --format json` (data/README.md contract + extras)."""
        from .render import comparison_to_dict

        return comparison_to_dict(self)


def _analyse(base_rows: pd.DataFrame, cand_rows: pd.DataFrame, baseline: str, candidate: str,
             tie_band: float, confidence: float, n_resamples: int, seed: int
             ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Core of compare/diff: (benchmarks, runtimes, invocations) frames, sorted canonically."""
    if tie_band < 0:
        raise AnalysisError(f"--tie-band must be >= 0, got {tie_band}")
    if not 0 < confidence < 1:
        raise AnalysisError(f"--confidence must be between 0 and 1, got {confidence}")
    keys = sorted(set(_key_of(base_rows)) | set(_key_of(cand_rows)), key=lambda k: schema.bench_sort_key(*k))
    b_groups = {k: g for k, g in base_rows.groupby(list(schema.BENCH_KEY), sort=False)}
    c_groups = {k: g for k, g in cand_rows.groupby(list(schema.BENCH_KEY), sort=False)}
    bench_records, side_records, inv_records = [], [], []
    for key in keys:
        suite, tier, name, param = key
        ident = {"suite": suite, "tier": tier, "benchmark": name, "param": param,
                 "label": schema.bench_label(name, param)}
        sides: dict[str, dict[str, Any]] = {}
        groups = {"baseline": b_groups.get(key), "candidate": c_groups.get(key)}
        both = all(g is not None for g in groups.values())
        for role, rows in groups.items():
            if rows is not None:
                sides[role] = describe_side(rows, confidence, n_resamples, seed, avg_ci=not both)
        record: dict[str, Any] = {**ident, "compared": both}
        if both:
            pairwise = compare_sides(groups["baseline"], groups["candidate"], tie_band, confidence, n_resamples, seed)
            for role in ("baseline", "candidate"):
                avg = pairwise.pop(f"{role}_avg_ci", None)
                if avg is not None:
                    sides[role].update(avg_ns_ci_low=avg.low, avg_ns_ci_high=avg.high)
            record.update(pairwise)
            record["bytes_ratio"] = _safe_ratio(sides["baseline"]["bytes_per_op"], sides["candidate"]["bytes_per_op"])
            record["allocs_ratio"] = _safe_ratio(sides["baseline"]["allocs_per_op"], sides["candidate"]["allocs_per_op"])
            if suite == "echo":
                record["p99_ratio"] = _safe_ratio(sides["baseline"]["p99_ns"], sides["candidate"]["p99_ns"])
        else:
            missing = candidate if groups["candidate"] is None else baseline
            record.update(verdict=None, verdict_reason=f"not compared: no {missing} data for this benchmark")
        for role, label in (("baseline", baseline), ("candidate", candidate)):
            if role in sides:
                side_records.append({**ident, "runtime": label, "role": role, **sides[role]})
                inv_records += [{**ident, "runtime": label, **inv} for inv in describe_invocations(groups[role])]
            for f in SIDE_FIELDS:
                record[f"{role}_{f}"] = sides.get(role, {}).get(f, math.nan)
        bench_records.append(record)
    benchmarks = pd.DataFrame.from_records(bench_records, columns=BENCHMARK_COLUMNS)
    benchmarks["q_value"] = stats.bh_qvalues(benchmarks["p_value"].to_numpy(dtype=np.float64))
    runtimes = pd.DataFrame.from_records(side_records, columns=RUNTIME_COLUMNS)
    invocations = pd.DataFrame.from_records(inv_records, columns=INVOCATION_COLUMNS)
    invocations["kendall_qvalue"] = stats.bh_qvalues(invocations["kendall_pvalue"].to_numpy(dtype=np.float64))
    return benchmarks, runtimes, invocations


def compare(run: Run | str = "latest", baseline: str = "tokio", candidate: str = "ampere",
            tie_band: float = stats.DEFAULT_TIE_BAND, confidence: float = stats.DEFAULT_CONFIDENCE,
            n_resamples: int = stats.DEFAULT_RESAMPLES, seed: int = stats.SEED,
            data_dir: str | None = None) -> Comparison:
    """Compare `candidate` against `baseline` in one run (a Run, a run id, a path or `latest`).

    With only one of the two runtimes in the run it describes that runtime instead: no ratios,
    every verdict is None and `verdict_reason` says why.
    """
    from .diagnostics import diagnose
    from .summary import summarize

    if not isinstance(run, Run):
        run = load_run(run, data_dir)
    if baseline == candidate:
        raise AnalysisError(f"baseline and candidate are both {baseline!r}")
    present = [rt for rt in (baseline, candidate) if rt in run.runtimes]
    if not present:
        raise AnalysisError(f"run {run.run_id} has no {baseline} or {candidate} data (runtimes: {', '.join(run.runtimes)})")
    benchmarks, runtimes, invocations = _analyse(run.rows(baseline), run.rows(candidate), baseline, candidate,
                                                 tie_band, confidence, n_resamples, seed)
    compared = len(present) == 2
    if not compared:
        missing = candidate if baseline in present else baseline
        benchmarks["verdict_reason"] = f"not compared: run has no {missing} data (describing {present[0]} only)"
    result = Comparison(run_id=run.run_id, baseline=baseline, candidate=candidate, tie_band=tie_band,
                        confidence=confidence, benchmarks=benchmarks, runtimes=runtimes,
                        invocations=invocations, echo=pd.DataFrame(), diagnostics=pd.DataFrame(),
                        summary={}, compared=compared, run=run)
    result.echo = echo_table(result)
    result.diagnostics = diagnose(result, sources={baseline: run.rows(baseline), candidate: run.rows(candidate)},
                                  metas={rt: run.meta.get(rt) for rt in present}, constants=run.constants)
    result.summary = summarize(result)
    return result


def diff_runs(a: Run | str, b: Run | str, runtime: str = "ampere", tie_band: float = stats.DEFAULT_TIE_BAND,
              confidence: float = stats.DEFAULT_CONFIDENCE, n_resamples: int = stats.DEFAULT_RESAMPLES,
              seed: int = stats.SEED, data_dir: str | None = None) -> Comparison:
    """Same runtime in two runs: ratio = median(A) / median(B), > 1 means B is faster.

    Verdicts are from B's side: `win` = B faster beyond the band (improvement), `loss` = B
    slower beyond the band (regression; `regressed` column). Sides are labelled "A" and "B";
    `extra` holds the run ids.
    """
    from .diagnostics import diagnose
    from .summary import summarize

    run_a = a if isinstance(a, Run) else load_run(a, data_dir)
    run_b = b if isinstance(b, Run) else load_run(b, data_dir)
    for run in (run_a, run_b):
        if runtime not in run.runtimes:
            raise AnalysisError(f"run {run.run_id} has no {runtime} data (runtimes: {', '.join(run.runtimes)})")
    benchmarks, runtimes, invocations = _analyse(run_a.rows(runtime), run_b.rows(runtime), "A", "B",
                                                 tie_band, confidence, n_resamples, seed)
    benchmarks["regressed"] = benchmarks["verdict"] == "loss"
    result = Comparison(run_id=f"{run_a.run_id}..{run_b.run_id}", baseline="A", candidate="B",
                        tie_band=tie_band, confidence=confidence, benchmarks=benchmarks, runtimes=runtimes,
                        invocations=invocations, echo=pd.DataFrame(), diagnostics=pd.DataFrame(), summary={},
                        compared=True, run=None,
                        extra={"runtime": runtime, "run_a": run_a.run_id, "run_b": run_b.run_id,
                               "runs": (run_a, run_b)})
    result.echo = echo_table(result)
    result.diagnostics = diagnose(result, sources={"A": run_a.rows(runtime), "B": run_b.rows(runtime)},
                                  metas={"A": run_a.meta.get(runtime), "B": run_b.meta.get(runtime)},
                                  constants=run_b.constants)
    result.summary = summarize(result)
    return result


ECHO_COLUMNS = ["suite", "tier", "benchmark", "param", "label", "runtime", "role", "n",
                "avg_ns", "avg_ns_ci_low", "avg_ns_ci_high", "min_ns", "p75_ns", "p99_ns",
                "p99_ns_ci_low", "p99_ns_ci_high", "p99_ns_ci_widest", "max_ns",
                "avg_ratio", "avg_ratio_ci_low", "avg_ratio_ci_high", "p99_ratio"]


def echo_table(comparison: "Comparison | Run | str") -> pd.DataFrame:
    """Echo suite per batch: one row per echo benchmark x runtime (ns per whole batch).

    Takes a Comparison (cheap: already computed), or a Run / run spec (compared with the
    default baseline and candidate first).

    `avg_ratio` (with its bootstrap CI) and `p99_ratio` are baseline / this runtime, like
    every ratio here (> 1: faster than the baseline); they are 1 on the baseline's own rows
    and NaN where there is nothing to compare.
    """
    if not isinstance(comparison, Comparison):
        return compare(comparison).echo
    sides = comparison.runtimes
    echo = sides[sides["suite"] == "echo"]
    # candidate row first within each benchmark, as in the main table's column order
    position = {key: i for i, key in enumerate(dict.fromkeys(zip(echo["benchmark"], echo["param"])))}
    order = [(position[(b, p)], role != "candidate") for b, p, role in zip(echo["benchmark"], echo["param"], echo["role"])]
    echo = echo.iloc[sorted(range(len(echo)), key=order.__getitem__)]
    if echo.empty:
        return pd.DataFrame(columns=ECHO_COLUMNS)
    ratios = comparison.benchmarks.set_index(["benchmark", "param"])
    records = []
    for row in echo.to_dict("records"):
        key = (row["benchmark"], row["param"])
        record = {c: row.get(c) for c in ECHO_COLUMNS if c in row}
        if row["role"] == "candidate" and key in ratios.index:
            r = ratios.loc[key]
            record.update({c: r[c] for c in ("avg_ratio", "avg_ratio_ci_low", "avg_ratio_ci_high", "p99_ratio")})
        elif row["role"] == "baseline" and key in ratios.index and bool(ratios.loc[key]["compared"]):
            record.update(avg_ratio=1.0, avg_ratio_ci_low=1.0, avg_ratio_ci_high=1.0, p99_ratio=1.0)
        records.append(record)
    return pd.DataFrame.from_records(records, columns=ECHO_COLUMNS)


def benchmark_history(data_dir: str | None = None, runtime: str | None = None,
                      confidence: float = stats.DEFAULT_CONFIDENCE) -> pd.DataFrame:
    """Median ns/op with its order-statistic CI per complete run, runtime and benchmark.

    For trend plots across runs. Runs that fail validation are skipped with a warning.
    """
    from .errors import AnalysisError as _Err
    from .load import run_history, warn

    columns = ["run_id", "started_utc", "runtime", "suite", "tier", "benchmark", "param", "label",
               "n", "median_ns_per_op", "ci_low", "ci_high", "bytes_per_op", "allocs_per_op"]
    records = []
    history = run_history(data_dir)
    for item in history[history["status"] == "complete"].itertuples():
        try:
            run = load_run(item.path)
        except _Err as exc:
            warn(f"{item.path}: skipped ({exc})")
            continue
        for (rt, suite, tier, name, param), rows in run.data.groupby(["runtime", *schema.BENCH_KEY], sort=False):
            if runtime is not None and rt != runtime:
                continue
            ci = stats.median_ci(rows["ns_per_op"].to_numpy(), confidence)
            records.append({"run_id": run.run_id, "started_utc": item.started_utc, "runtime": rt,
                            "suite": suite, "tier": int(tier), "benchmark": name, "param": param,
                            "label": schema.bench_label(name, param), "n": ci.n,
                            "median_ns_per_op": ci.estimate, "ci_low": ci.low, "ci_high": ci.high,
                            "bytes_per_op": float((rows["alloc_bytes"] / rows["ops"]).mean()),
                            "allocs_per_op": float((rows["alloc_count"] / rows["ops"]).mean())})
    return pd.DataFrame.from_records(records, columns=columns)


def iter_groups(benchmarks: pd.DataFrame) -> Iterable[tuple[str, pd.DataFrame]]:
    """(group title, rows) in display order: Tier 0 controls, tiers 1-4, then echo."""
    for (suite, tier), rows in benchmarks.groupby(["suite", "tier"], sort=False):
        yield schema.group_title(suite, int(tier)), rows
