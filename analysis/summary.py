"""Summaries of a comparison: verdict counts, geometric means, allocation totals, seed-style lines.

Only headline rows count (benchmarks.is_headline: a worker sweep's Tier 3-4 rows at other
counts than num_workers are shown on the scaling page, not summed here).
Scopes
- overall: every compared headline benchmark except the Tier 0 controls (they check the
  harness, they are not a result);
- `by_suite`: each suite separately (micro tiers 1-4, echo, net: different cost regimes);
- `controls`: the Tier 0 verdicts.
Per scope: verdict counts of wall time and of CPU time; the geometric mean of the wall ratios
over the like-for-like rows (fairness table: same semantics on both sides) and over all rows,
and of the CPU ratios (stats.geometric_mean_ci); totals of bytes/op and allocs/op per runtime
over the scope's compared benchmarks, like the seeds' "Total bytes per op" line.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from . import schema, stats
from .benchmarks import VERDICTS


def _counts(column: pd.Series) -> dict[str, int]:
    return {v: int((column == v).sum()) for v in VERDICTS}


def _geomean(rows: pd.DataFrame, ratio: str, se: str, confidence: float) -> stats.GeoMean:
    return stats.geometric_mean_ci(rows[ratio].map(_log), rows[se], confidence)


def _log(value: float) -> float:
    return math.log(value) if value > 0 else math.nan


def scope_summary(rows: pd.DataFrame, names: tuple[str, str], confidence: float) -> dict[str, Any]:
    """Counts, geometric means and totals of one scope (rows of `benchmarks`)."""
    baseline, candidate = names
    compared = rows[rows["compared"].astype(bool)]
    like = compared[compared["like_for_like"].astype(bool)]
    wall = _geomean(compared, "ratio", "log_ratio_se", confidence)
    fair = _geomean(like, "ratio", "log_ratio_se", confidence)
    cpu = _geomean(compared, "cpu_ratio", "cpu_log_ratio_se", confidence)
    return {
        "n_benchmarks": int(len(rows)), "n_compared": int(len(compared)), "n_like_for_like": int(len(like)),
        "counts": _counts(compared["verdict"]), "cpu_counts": _counts(compared["cpu_verdict"]),
        "geomean_ratio": wall.ratio, "geomean_ratio_ci": [wall.low, wall.high], "geomean_n": wall.n,
        "like_for_like_geomean_ratio": fair.ratio, "like_for_like_geomean_ratio_ci": [fair.low, fair.high],
        "like_for_like_geomean_n": fair.n,
        "cpu_geomean_ratio": cpu.ratio, "cpu_geomean_ratio_ci": [cpu.low, cpu.high], "cpu_geomean_n": cpu.n,
        "total_bytes_per_op": {baseline: float(compared["baseline_bytes_per_op"].sum()),
                               candidate: float(compared["candidate_bytes_per_op"].sum())},
        "total_allocs_per_op": {baseline: float(compared["baseline_allocs_per_op"].sum()),
                                candidate: float(compared["candidate_allocs_per_op"].sum())},
    }


def is_control(frame: pd.DataFrame) -> pd.Series:
    return (frame["suite"] == "micro") & (frame["tier"] == 0)


def summarize(benchmarks: pd.DataFrame, names: tuple[str, str], confidence: float, compared: bool) -> dict[str, Any]:
    frame = benchmarks[benchmarks["headline"].astype(bool)]
    control = is_control(frame)
    summary = scope_summary(frame[~control], names, confidence)
    summary["by_suite"] = {}
    for suite in schema.SUITES:
        rows = frame[(frame["suite"] == suite) & ~control]
        if not rows.empty:
            summary["by_suite"][suite] = scope_summary(rows, names, confidence)
    summary["controls"] = {r["benchmark"]: r["verdict"] for r in frame[control].to_dict("records")}
    summary["lines"] = summary_lines(names, summary) if compared else [
        f"not compared: the run has data for only one of {names[1]} and {names[0]}"]
    return summary


def _fmt_amount(value: float) -> str:
    return f"{value:,.1f}"


def _times(candidate_total: float, baseline_total: float, less: str, more: str) -> str:
    if candidate_total == baseline_total:
        return "same"
    if candidate_total == 0:
        return f"none vs {_fmt_amount(baseline_total)}"
    if baseline_total == 0:
        return f"{more} (baseline none)"
    factor = baseline_total / candidate_total
    return f"{factor:.1f}x {less}" if factor > 1 else f"{1 / factor:.1f}x {more}"


def _geomean_line(what: str, part: dict[str, Any], prefix: str, names: tuple[str, str]) -> str | None:
    ratio, n = part[f"{prefix}geomean_ratio"], part[f"{prefix}geomean_n"]
    if not math.isfinite(ratio):
        return None
    lo, hi = part[f"{prefix}geomean_ratio_ci"]
    bn, cn = (schema.display_name(x) for x in names)
    better = "uses less CPU" if prefix == "cpu_" else "faster"
    return f"  {what} {bn}/{cn}: {ratio:.3f}x [{lo:.3f}, {hi:.3f}] over {n} benchmarks (> 1: {cn} {better})"


def _geomeans(part: dict[str, Any]) -> list[tuple[str, str]]:
    """(words, summary prefix) of the geometric means to print: like-for-like rows first when
    some rows are not like for like, then all rows, then CPU time."""
    if part["n_like_for_like"] < part["n_compared"]:
        wall = [("geometric mean ratio, like-for-like rows", "like_for_like_"), ("geometric mean ratio, all rows", "")]
    else:
        wall = [("geometric mean ratio", "")]
    return wall + [("geometric mean CPU ratio", "cpu_")]


def summary_lines(names: tuple[str, str], summary: dict[str, Any]) -> list[str]:
    """Seed-style lines, one block per suite scope (micro tiers 1-4, echo, net), then controls."""
    b, c = names
    bn, cn = schema.display_name(b), schema.display_name(c)
    lines = []
    for suite, part in summary["by_suite"].items():
        title = "micro (tiers 1-4)" if suite == "micro" else suite
        k = part["n_compared"]
        if k == 0:
            continue
        counts = part["counts"]
        lines.append(f"{title}: {cn} wins: {counts['win']} / {k}   {bn} wins: {counts['loss']} / {k}   "
                     f"ties: {counts['tie']} / {k}   inconclusive: {counts['inconclusive']} / {k}")
        for what, prefix in _geomeans(part):
            line = _geomean_line(what, part, prefix, names)
            if line:
                lines.append(line)
        tb, ta = part["total_bytes_per_op"], part["total_allocs_per_op"]
        lines.append(f"  Total bytes per op: {cn} {_fmt_amount(tb[c])}  {bn} {_fmt_amount(tb[b])} "
                     f"({_times(tb[c], tb[b], 'less', 'more')})")
        lines.append(f"  Total allocs per op: {cn} {_fmt_amount(ta[c])}  {bn} {_fmt_amount(ta[b])} "
                     f"({_times(ta[c], ta[b], 'fewer', 'more')})")
    controls = summary["controls"]
    if controls:
        listing = ", ".join(f"{k} {v}" for k, v in controls.items())
        if all(v == "tie" for v in controls.values()):
            lines.append("controls: all tie (harnesses agree)")
        elif any(v in ("win", "loss") for v in controls.values()):
            lines.append(f"controls: {listing} — NOT all ties: the harnesses differ, treat every row with suspicion")
        else:
            lines.append(f"controls: {listing} — not all shown to tie: intervals too wide for the tie band")
    return lines
