"""Suite summaries: verdict counts, geometric mean of ratios, allocation totals, seed-style lines.

Scopes
- `overall`: every compared benchmark except the Tier 0 controls (they are a check of the
  harness, not a result), i.e. micro tiers 1-4 plus echo;
- `by_suite`: `micro` (tiers 1-4) and `echo` separately (echo ratios are per batch of
  payload copies: a different cost regime);
- `controls`: the Tier 0 verdicts.
Totals of bytes/op and allocs/op are sums over the scope's compared benchmarks, like the
seeds' "Total bytes per op" line. The geometric-mean interval is stats.geometric_mean_ci.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import pandas as pd

from . import schema, stats

if TYPE_CHECKING:
    from .compare import Comparison

VERDICTS = ("win", "loss", "tie", "inconclusive")


def _scope_summary(rows: pd.DataFrame, baseline: str, candidate: str, confidence: float) -> dict[str, Any]:
    compared = rows[rows["compared"].astype(bool)]
    counts = {v: int((compared["verdict"] == v).sum()) for v in VERDICTS}
    geo = stats.geometric_mean_ci(compared["log_ratio"], compared["log_ratio_ci_low"],
                                  compared["log_ratio_ci_high"], confidence)
    return {
        "n_benchmarks": int(len(rows)), "n_compared": int(len(compared)), "counts": counts,
        "geomean_ratio": geo.ratio, "geomean_ratio_ci": [geo.low, geo.high], "geomean_n": geo.n,
        "total_bytes_per_op": {baseline: float(compared["baseline_bytes_per_op"].sum()),
                               candidate: float(compared["candidate_bytes_per_op"].sum())},
        "total_allocs_per_op": {baseline: float(compared["baseline_allocs_per_op"].sum()),
                                candidate: float(compared["candidate_allocs_per_op"].sum())},
    }


def summarize(comparison: "Comparison") -> dict[str, Any]:
    b, c = comparison.baseline, comparison.candidate
    frame = comparison.benchmarks
    is_control = (frame["suite"] == "micro") & (frame["tier"] == 0)
    summary = _scope_summary(frame[~is_control], b, c, comparison.confidence)
    summary["by_suite"] = {}
    for suite in schema.SUITES:
        rows = frame[(frame["suite"] == suite) & ~is_control]
        if not rows.empty:
            summary["by_suite"][suite] = _scope_summary(rows, b, c, comparison.confidence)
    summary["controls"] = {r["benchmark"]: r["verdict"] for r in frame[is_control].to_dict("records")}
    summary["lines"] = summary_lines(comparison, summary) if comparison.compared else [
        f"not compared: the run has data for only one of {c} and {b}"]
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


def summary_lines(comparison: "Comparison", summary: dict[str, Any]) -> list[str]:
    """Seed-style lines, one block per suite scope (micro tiers 1-4, echo), then controls."""
    b, c = comparison.baseline, comparison.candidate
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
        lo, hi = part["geomean_ratio_ci"]
        if math.isfinite(part["geomean_ratio"]):
            lines.append(f"  geometric mean ratio {bn}/{cn}: {part['geomean_ratio']:.3f}x "
                         f"[{lo:.3f}, {hi:.3f}] over {part['geomean_n']} benchmarks (> 1: {cn} faster)")
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
