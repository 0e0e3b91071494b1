"""CPU over the whole invocation: the span of each benchmark row (analysis/span.py) beside the
per-sample CPU, with its own centre, interval, ratio and verdict.

Per side and benchmark row, each invocation gives one value, span cpu_ns / span ops (the
process CPU of all threads from the first measured iteration's start to the last one's stop,
gaps included, per operation). The centre and interval are those of stats.median_centre over
one value per invocation (the geometric mean of the invocations' values, a t interval on the
log scale with k - 1 degrees of freedom); the ratio (baseline / candidate, > 1: the candidate
uses less CPU) and its verdict are stats.ratio_of and stats.verdict, as for every other ratio.

Invocations that recorded runtime metrics (`--metrics`: ampere's program, the odd invocations,
analysis/bench.py `records_metrics`) are left out of a side's span figures: the metrics
snapshots run between iterations, inside the span (about 5.6 µs of CPU per echo batch on the
2-vCPU VM), and Tokio's program takes none. `span_invocations` counts the invocations used.

`span_cpu_round_logs` lists [invocation, log span CPU per op] (what the summary's CPU geometric
mean is built over, round by round: stats.rounds_geometric_mean_ci).

Also per side: `span_cores_busy`, the median over invocations of span cpu_ns / span elapsed_ns
(cores busy over the whole span), and the CPU outside the samples per iteration: per invocation
(span cpu_ns - the sum of the samples' cpu_ns) / iterations, its median (`outside_cpu_ns`) and
range over the invocations (`outside_cpu_ns_low` / `_high`). A worker spinning on after an
iteration's last join shows up here, not in any sample.

`headline_cpu_*` is what the CPU headline uses (summary.py): the whole-invocation figure where
both sides have spans, else the per-sample one (`headline_cpu_source` says which). A run without
span files gets NaN in every span column: not recorded.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from . import schema, stats

SIDE_COLUMNS = ("span_cpu_ns_per_op", "span_cpu_ci_low", "span_cpu_ci_high", "span_cores_busy", "outside_cpu_ns",
                "outside_cpu_ns_low", "outside_cpu_ns_high", "span_invocations", "span_cpu_round_logs")
PAIR_COLUMNS = ("span_cpu_ratio", "span_cpu_ratio_ci_low", "span_cpu_ratio_ci_high", "span_cpu_log_ratio_se",
                "span_cpu_verdict", "headline_cpu_ratio", "headline_cpu_log_ratio_se", "headline_cpu_verdict",
                "headline_cpu_source")
#: The columns add_span_cpu appends to a comparison's benchmarks frame, in order.
COLUMNS = tuple(f"{role}_{c}" for role in ("baseline", "candidate") for c in SIDE_COLUMNS) + PAIR_COLUMNS
WHOLE, PER_SAMPLE = "whole invocation", "per sample"


def _key(values: tuple) -> tuple:
    suite, tier, benchmark, param, workers = values
    return (suite, int(tier), benchmark, param, None if pd.isna(workers) else int(workers))


def side_table(spans: pd.DataFrame, rows: pd.DataFrame, confidence: float,
               metrics_invocations: frozenset[int] = frozenset()) -> dict[tuple, dict[str, Any]]:
    """benchmark key -> the side's span figures (SIDE_COLUMNS plus the stats.Centre as `centre`),
    from the invocations that recorded no runtime metrics (`metrics_invocations` are left out:
    their snapshots between iterations are in the span's CPU, and the other side has none)."""
    spans = spans[~spans["invocation"].isin(metrics_invocations)] if len(spans) else spans
    if spans.empty:
        return {}
    key = ["invocation", *schema.BENCH_KEY]
    sample_cpu = rows.groupby(key, sort=False, dropna=False, observed=True)["cpu_ns"].sum().rename("sample_cpu_ns")
    joined = spans.merge(sample_cpu.reset_index().astype({"workers": "Int64"}), on=key, how="left")
    out = {}
    for values, group in joined.groupby(list(schema.BENCH_KEY), sort=False, dropna=False):
        group = group.sort_values("invocation")
        per_op = (group["cpu_ns"] / group["ops"]).to_numpy(dtype=np.float64)
        centre = stats.median_centre([np.array([v]) for v in per_op], confidence)
        busy = (group["cpu_ns"] / group["elapsed_ns"]).to_numpy(dtype=np.float64)
        outside = ((group["cpu_ns"] - group["sample_cpu_ns"]) / group["iterations"]).to_numpy(dtype=np.float64)
        finite = outside[np.isfinite(outside)]
        out[_key(values)] = {
            "centre": centre, "span_cpu_ns_per_op": centre.estimate, "span_cpu_ci_low": centre.low,
            "span_cpu_ci_high": centre.high, "span_cores_busy": float(np.median(busy)),
            "outside_cpu_ns": float(np.median(finite)) if finite.size else math.nan,
            "outside_cpu_ns_low": float(finite.min()) if finite.size else math.nan,
            "outside_cpu_ns_high": float(finite.max()) if finite.size else math.nan,
            "span_invocations": int(len(group)),
            "span_cpu_round_logs": [[int(k), math.log(v)] for k, v in zip(group["invocation"], per_op) if v > 0],
        }
    return out


def _pair(base: dict[str, Any] | None, cand: dict[str, Any] | None, names: tuple[str, str],
          confidence: float, tie_band: float) -> dict[str, Any]:
    nan = math.nan
    if base is None or cand is None:
        return {"span_cpu_ratio": nan, "span_cpu_ratio_ci_low": nan, "span_cpu_ratio_ci_high": nan,
                "span_cpu_log_ratio_se": nan, "span_cpu_verdict": None}
    ratio = stats.ratio_of(base["centre"], cand["centre"], confidence, names)
    return {"span_cpu_ratio": ratio.ratio, "span_cpu_ratio_ci_low": ratio.low, "span_cpu_ratio_ci_high": ratio.high,
            "span_cpu_log_ratio_se": ratio.log_se,
            "span_cpu_verdict": stats.verdict(ratio.log_low, ratio.log_high, tie_band)}


def add_span_cpu(benchmarks: pd.DataFrame, spans: dict[str, pd.DataFrame], rows: dict[str, pd.DataFrame],
                 names: tuple[str, str], confidence: float, tie_band: float,
                 metrics_invocations: dict[str, frozenset[int]] | None = None) -> pd.DataFrame:
    """`benchmarks` with the span columns of both sides (`baseline_*`, `candidate_*`) and of the
    pair; `spans` and `rows`: each side's span frame and CSV rows by its name (names =
    (baseline, candidate)); `metrics_invocations`: per side, the invocations that recorded
    runtime metrics (left out of its span figures)."""
    frame = benchmarks.copy()
    left_out = metrics_invocations or {}
    tables = {role: side_table(spans.get(name, pd.DataFrame()), rows[name], confidence,
                               left_out.get(name, frozenset())) if name in rows else {}
              for role, name in zip(("baseline", "candidate"), names)}
    keys = [_key(v) for v in zip(*(frame[c] for c in schema.BENCH_KEY))]
    for role in ("baseline", "candidate"):
        table = tables[role]
        for column in SIDE_COLUMNS:
            frame[f"{role}_{column}"] = [table[k][column] if k in table else math.nan for k in keys]
    pairs = [_pair(tables["baseline"].get(k), tables["candidate"].get(k), names, confidence, tie_band) for k in keys]
    for column in ("span_cpu_ratio", "span_cpu_ratio_ci_low", "span_cpu_ratio_ci_high", "span_cpu_log_ratio_se"):
        frame[column] = [p[column] for p in pairs]
    frame["span_cpu_verdict"] = pd.Series([p["span_cpu_verdict"] for p in pairs], index=frame.index, dtype=object)
    whole = frame["span_cpu_ratio"].notna() & frame["span_cpu_log_ratio_se"].notna()
    frame["headline_cpu_ratio"] = frame["span_cpu_ratio"].where(whole, frame["cpu_ratio"])
    frame["headline_cpu_log_ratio_se"] = frame["span_cpu_log_ratio_se"].where(whole, frame["cpu_log_ratio_se"])
    frame["headline_cpu_verdict"] = frame["span_cpu_verdict"].where(whole, frame["cpu_verdict"])
    frame["headline_cpu_source"] = np.where(whole, WHOLE, np.where(frame["cpu_ratio"].notna(), PER_SAMPLE, None))
    return frame
