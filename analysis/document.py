"""The JSON document of `compare --format json` / `diff --format json` (data/README.md contract).

Per benchmark: the contract's fields (suite, tier, benchmark, param, workers, ns_per_op and its
interval per runtime, ratio and interval, p / q values, verdict, bytes and allocs per op, echo
avg / min / p75 / p99 / max, and from schema 2 cpu_ns_per_op with its interval, cpu_ratio with
its interval, cpu_verdict, cores_busy) plus extras documented in analysis/README.md (labels,
methods, cross-checks, like_for_like and semantics_note, the benchmark's diagnostics). Values
that were not recorded (CPU time of a schema-1 run) are null, never 0.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from .compare import Comparison


def jsonable(value: Any) -> Any:
    """Plain JSON values: NaN/inf -> None, numpy scalars -> Python, containers recursively."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if value is pd.NA or value is pd.NaT or value is None:
        return None
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _per_runtime(sides: pd.DataFrame, column: str) -> dict[str, Any]:
    return {r["runtime"]: r[column] for r in sides.to_dict("records")}


def _per_runtime_ci(sides: pd.DataFrame, low: str, high: str) -> dict[str, Any]:
    return {r["runtime"]: [r[low], r[high]] for r in sides.to_dict("records")}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def benchmark_entry(r: dict[str, Any], sides: pd.DataFrame, diagnostics: list[str]) -> dict[str, Any]:
    entry = {
        "suite": r["suite"], "tier": int(r["tier"]), "benchmark": r["benchmark"], "param": r["param"],
        "workers": r["workers"], "label": r["label"], "compared": bool(r["compared"]),
        "headline": bool(r["headline"]), "like_for_like": bool(r["like_for_like"]),
        "semantics_note": r["semantics_note"] or "",
        "ns_per_op": _per_runtime(sides, "median_ns_per_op"),
        "ns_per_op_ci": _per_runtime_ci(sides, "ci_low", "ci_high"),
        "ci_method": _per_runtime(sides, "ci_method"),
        "ratio": r["ratio"], "ratio_ci": [r["ratio_ci_low"], r["ratio_ci_high"]],
        "ratio_method": _text(r["ratio_method"]), "paired_rounds": r["paired_rounds"],
        "rounds_dropped": r["rounds_dropped"],
        "unpaired_ratio_ci": [r["unpaired_ratio_ci_low"], r["unpaired_ratio_ci_high"]],
        "unpaired_verdict": _text(r["unpaired_verdict"]),
        "paired_t_ratio": r["paired_t_ratio"], "paired_t_ratio_ci": [r["paired_t_ratio_ci_low"], r["paired_t_ratio_ci_high"]],
        "paired_t_verdict": _text(r["paired_t_verdict"]), "p_value": r["p_value"], "q_value": r["q_value"],
        "verdict": _text(r["verdict"]), "verdict_reason": _text(r["verdict_reason"]),
        "cpu_ns_per_op": _per_runtime(sides, "cpu_ns_per_op"),
        "cpu_ns_per_op_ci": _per_runtime_ci(sides, "cpu_ci_low", "cpu_ci_high"),
        "cpu_ratio": r["cpu_ratio"], "cpu_ratio_ci": [r["cpu_ratio_ci_low"], r["cpu_ratio_ci_high"]],
        "cpu_ratio_method": _text(r["cpu_ratio_method"]),
        "cpu_verdict": _text(r["cpu_verdict"]), "cpu_verdict_reason": _text(r["cpu_verdict_reason"]),
        "cpu_unpaired_ratio_ci": [r["cpu_unpaired_ratio_ci_low"], r["cpu_unpaired_ratio_ci_high"]],
        "cpu_unpaired_verdict": _text(r["cpu_unpaired_verdict"]),
        "cpu_paired_t_ratio_ci": [r["cpu_paired_t_ratio_ci_low"], r["cpu_paired_t_ratio_ci_high"]],
        "cpu_paired_t_verdict": _text(r["cpu_paired_t_verdict"]),
        "cores_busy": _per_runtime(sides, "cores_busy"),
        "hl_ratio": r["hl_ratio"], "hl_ratio_ci": [r["hl_ci_low"], r["hl_ci_high"]],
        "cliffs_delta": r["cliffs_delta"],
        "bytes_per_op": _per_runtime(sides, "bytes_per_op"),
        "allocs_per_op": _per_runtime(sides, "allocs_per_op"),
        "bytes_ratio": r["bytes_ratio"], "allocs_ratio": r["allocs_ratio"],
        "alloc_varies": _per_runtime(sides, "alloc_varies"),
        "n": _per_runtime(sides, "n"), "n_invocations": _per_runtime(sides, "n_invocations"),
        "invocation_medians": _per_runtime(sides, "invocation_medians"),
        "ns_per_op_mean": _per_runtime(sides, "mean_ns_per_op"),
        "rcv": _per_runtime(sides, "rcv"), "share_between": _per_runtime(sides, "share_between"),
        "ci_widest": _per_runtime(sides, "ci_widest"),
    }
    if r["suite"] == "echo":
        for column in ("avg_ns", "min_ns", "p75_ns", "p99_ns", "max_ns"):
            entry[column] = _per_runtime(sides, column)
        entry["avg_ns_ci"] = _per_runtime_ci(sides, "avg_ns_ci_low", "avg_ns_ci_high")
        entry["p99_ns_ci"] = _per_runtime_ci(sides, "p99_ns_ci_low", "p99_ns_ci_high")
        entry["avg_ratio"] = r["avg_ratio"]
        entry["avg_ratio_ci"] = [r["avg_ratio_ci_low"], r["avg_ratio_ci_high"]]
        entry["p99_ratio"] = r["p99_ratio"]
    if "span_cpu_ratio" in r:  # CPU over the whole invocation (span_cpu.py); null: not recorded
        names = {"baseline": r.get("_baseline"), "candidate": r.get("_candidate")}
        for column in ("span_cpu_ns_per_op", "outside_cpu_ns", "span_cores_busy"):
            entry[column] = {names[role]: r[f"{role}_{column}"] for role in names}
        entry["span_cpu_ns_per_op_ci"] = {names[role]: [r[f"{role}_span_cpu_ci_low"], r[f"{role}_span_cpu_ci_high"]]
                                          for role in names}
        entry["outside_cpu_ns_range"] = {names[role]: [r[f"{role}_outside_cpu_ns_low"],
                                                       r[f"{role}_outside_cpu_ns_high"]] for role in names}
        entry["span_cpu_ratio"] = r["span_cpu_ratio"]
        entry["span_cpu_ratio_ci"] = [r["span_cpu_ratio_ci_low"], r["span_cpu_ratio_ci_high"]]
        entry["span_cpu_verdict"] = _text(r["span_cpu_verdict"])
    if "regressed" in r:
        entry["regressed"] = bool(r["regressed"])
    entry["diagnostics"] = diagnostics
    return entry


def _diagnostic_text(d: dict[str, Any]) -> str:
    who = f" [{d['runtime']}]" if isinstance(d["runtime"], str) else ""
    return f"{d['level']}: {d['message']}{who}"


def comparison_to_dict(comparison: Comparison) -> dict[str, Any]:
    """The JSON document: the data/README.md fields plus the extras of analysis/README.md."""
    sides_by_label = {k: g for k, g in comparison.runtimes.groupby("label", sort=False)}
    diags = comparison.diagnostics.to_dict("records")
    by_bench: dict[tuple, list[str]] = {}
    for d in diags:
        key = (d["benchmark"], d["param"], None if pd.isna(d["workers"]) else int(d["workers"]))
        by_bench.setdefault(key, []).append(_diagnostic_text(d))
    entries = []
    for r in comparison.benchmarks.to_dict("records"):
        r["workers"] = None if pd.isna(r["workers"]) else int(r["workers"])
        r["_baseline"], r["_candidate"] = comparison.baseline, comparison.candidate
        sides = sides_by_label.get(r["label"], comparison.runtimes.iloc[0:0])
        entries.append(benchmark_entry(r, sides, by_bench.get((r["benchmark"], r["param"], r["workers"]), [])))
    doc = {
        "run_id": comparison.run_id, "baseline": comparison.baseline, "candidate": comparison.candidate,
        "tie_band": comparison.tie_band, "confidence": comparison.confidence, "compared": comparison.compared,
        "ratio_definition": "baseline median ns/op / candidate median ns/op; > 1 means the candidate is faster",
        "cpu_ratio_definition": "baseline CPU ns/op / candidate CPU ns/op; > 1 means the candidate uses less CPU",
        "span_cpu_ratio_definition": "the same over the whole invocation (first measured iteration's start to the "
                                     "last one's end, gaps included; span files), null where not recorded",
        "benchmarks": entries, "summary": comparison.summary, "diagnostics": diags,
    }
    for key in ("runtime", "run_a", "run_b", "machine_load"):
        if key in comparison.extra:
            doc[key] = comparison.extra[key]
    return jsonable(doc)
