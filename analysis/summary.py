"""Summaries of a comparison: verdict counts, geometric means, allocation totals, seed-style lines.

Only headline rows count (benchmarks.is_headline: a worker sweep's Tier 3-4 rows at other
counts than num_workers are shown on the scaling page, not summed here).
Scopes
- overall: every compared headline benchmark except the Tier 0 controls (they check the
  harness, they are not a result);
- `by_suite`: each suite separately (micro tiers 1-4, echo, net: different cost regimes);
- `controls`: the Tier 0 verdicts.
Per scope, the headline is over the like-for-like rows only (fairness table: same semantics on
both sides; rows marked `no:` — Tier 2 oneshot (ampere's caller-owned oneshot), async-channel
standing in for Tokio, the plain-data watch/broadcast paths, yield_many — are outside it):
- `counts` / `cpu_counts`: verdict counts of the like-for-like rows (wall time; CPU time by the
  headline CPU verdict, span_cpu.py: the whole invocation's CPU where the run has spans);
  `all_counts` / `all_cpu_counts` over every compared row, shown beside;
- `like_for_like_geomean_ratio`: the geometric mean of the wall ratios over the like-for-like
  rows (the headline), `geomean_ratio` over all compared rows;
- `cpu_geomean_ratio`: the geometric mean of the headline CPU ratios (whole invocation where
  both sides have spans, else per sample; `cpu_geomean_source` says which) over the
  like-for-like rows; `per_sample_cpu_geomean_ratio` the per-sample CPU ratios over the same
  rows; `all_rows_cpu_geomean_ratio` the headline CPU ratios over every compared row
  (all with intervals, stats.geometric_mean_ci);
- `not_like_for_like`: the labels of the compared rows outside the headline;
- totals of bytes/op and allocs/op per runtime over the scope's compared benchmarks, like the
  seeds' "Total bytes per op" line.
Controls (`controls`: name -> verdict; `control_ratios`: name -> ratio and interval) are shown
with the band their interval fits in (a tie needs it within the tie band).
The geometric means average each row's ratio of geometric means over its rounds (the paired
t's ratio and log SE; the unpaired ratio where a row is not paired; a whole-invocation CPU ratio
as span_cpu.py gives it), not the rows' default verdict ratio (the median per-round ratio):
measured, that interval covers the 30-round value 95-100% at 5-15 rounds, where the same mean
over the rows' median ratios with the sign-test intervals' normal-equivalent SEs covered 86-94%
(docs/coverage.md).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from . import schema, stats
from .benchmarks import VERDICTS
from .span_cpu import WHOLE


def _counts(column: pd.Series) -> dict[str, int]:
    return {v: int((column == v).sum()) for v in VERDICTS}


def _geomean(rows: pd.DataFrame, ratio: str, se: str, confidence: float) -> stats.GeoMean:
    """Geometric mean of the rows' ratios of geometric means: where a row is paired, the paired
    t's ratio and log SE of the same quantity (`paired_t_*` for the wall ratio, `cpu_paired_t_*`
    for the per-sample CPU ratio, also inside a CPU headline column that took the per-sample
    figure); otherwise `ratio` and `se` (unpaired, a `diff`, or a whole-invocation CPU ratio)."""
    ratios, ses = rows[ratio], rows[se]
    prefix = {"ratio": "", "cpu_ratio": "cpu_", "headline_cpu_ratio": "cpu_"}.get(ratio)
    if prefix is not None and f"{prefix}paired_t_log_ratio_se" in rows:
        paired = rows[f"{prefix}paired_t_log_ratio_se"].map(math.isfinite)
        if ratio == "headline_cpu_ratio":  # only its per-sample rows hold the per-sample ratio
            paired &= rows["headline_cpu_source"] != WHOLE
        ratios = rows[f"{prefix}paired_t_ratio"].where(paired, ratios)
        ses = rows[f"{prefix}paired_t_log_ratio_se"].where(paired, ses)
    return stats.geometric_mean_ci(ratios.map(_log), ses, confidence)


def _log(value: float) -> float:
    return math.log(value) if value > 0 else math.nan


def _cpu_columns(rows: pd.DataFrame) -> tuple[str, str, str]:
    """(ratio, log SE, verdict) columns of the CPU headline: span_cpu.py's headline columns when
    the frame has them (a comparison), else the per-sample ones."""
    if "headline_cpu_ratio" in rows:
        return "headline_cpu_ratio", "headline_cpu_log_ratio_se", "headline_cpu_verdict"
    return "cpu_ratio", "cpu_log_ratio_se", "cpu_verdict"


def _cpu_source(rows: pd.DataFrame) -> str:
    """Where the CPU headline's ratios come from: whole invocation, per sample, mixed or none."""
    if "headline_cpu_source" not in rows:
        return "per sample"
    sources = set(rows.loc[rows["headline_cpu_ratio"].notna(), "headline_cpu_source"].dropna())
    return next(iter(sources)) if len(sources) == 1 else ("mixed" if sources else "none")


def _geo_fields(prefix: str, geo: stats.GeoMean) -> dict[str, Any]:
    return {f"{prefix}geomean_ratio": geo.ratio, f"{prefix}geomean_ratio_ci": [geo.low, geo.high],
            f"{prefix}geomean_n": geo.n}


def scope_summary(rows: pd.DataFrame, names: tuple[str, str], confidence: float) -> dict[str, Any]:
    """Counts, geometric means and totals of one scope (rows of `benchmarks`)."""
    baseline, candidate = names
    compared = rows[rows["compared"].astype(bool)]
    like = compared[compared["like_for_like"].astype(bool)]
    cpu_ratio, cpu_se, cpu_verdict = _cpu_columns(compared)
    return {
        "n_benchmarks": int(len(rows)), "n_compared": int(len(compared)), "n_like_for_like": int(len(like)),
        "counts": _counts(like["verdict"]), "cpu_counts": _counts(like[cpu_verdict]),
        "all_counts": _counts(compared["verdict"]), "all_cpu_counts": _counts(compared[cpu_verdict]),
        **_geo_fields("", _geomean(compared, "ratio", "log_ratio_se", confidence)),
        **_geo_fields("like_for_like_", _geomean(like, "ratio", "log_ratio_se", confidence)),
        **_geo_fields("cpu_", _geomean(like, cpu_ratio, cpu_se, confidence)),
        "cpu_geomean_source": _cpu_source(like),
        **_geo_fields("per_sample_cpu_", _geomean(like, "cpu_ratio", "cpu_log_ratio_se", confidence)),
        **_geo_fields("all_rows_cpu_", _geomean(compared, cpu_ratio, cpu_se, confidence)),
        "not_like_for_like": [str(x) for x in compared.loc[~compared["like_for_like"].astype(bool), "label"]],
        "total_bytes_per_op": {baseline: float(compared["baseline_bytes_per_op"].sum()),
                               candidate: float(compared["candidate_bytes_per_op"].sum())},
        "total_allocs_per_op": {baseline: float(compared["baseline_allocs_per_op"].sum()),
                                candidate: float(compared["candidate_allocs_per_op"].sum())},
    }


def is_control(frame: pd.DataFrame) -> pd.Series:
    return (frame["suite"] == "micro") & (frame["tier"] == 0)


def summarize(benchmarks: pd.DataFrame, names: tuple[str, str], confidence: float, compared: bool,
              tie_band: float) -> dict[str, Any]:
    frame = benchmarks[benchmarks["headline"].astype(bool)]
    control = is_control(frame)
    summary = scope_summary(frame[~control], names, confidence)
    summary["by_suite"] = {}
    for suite in schema.SUITES:
        rows = frame[(frame["suite"] == suite) & ~control]
        if not rows.empty:
            summary["by_suite"][suite] = scope_summary(rows, names, confidence)
    summary["controls"] = {r["benchmark"]: r["verdict"] for r in frame[control].to_dict("records")}
    summary["control_ratios"] = {r["benchmark"]: [r["ratio"], r["ratio_ci_low"], r["ratio_ci_high"]]
                                 for r in frame[control].to_dict("records")}
    summary["lines"] = summary_lines(names, summary, tie_band) if compared else [
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
    better = "uses less CPU" if "cpu_" in prefix else "faster"
    return f"  {what} {bn}/{cn}: {ratio:.3f}x [{lo:.3f}, {hi:.3f}] over {n} benchmarks (> 1: {cn} {better})"


def _geomeans(part: dict[str, Any]) -> list[tuple[str, str]]:
    """(words, summary prefix) of the geometric means to print: the headline over the
    like-for-like rows when some rows are not like for like, all rows beside it, then CPU."""
    some = part["n_like_for_like"] < part["n_compared"]
    if some:
        wall = [("geometric mean ratio, like-for-like rows (headline)", "like_for_like_"),
                ("geometric mean ratio, all rows", "")]
    else:
        wall = [("geometric mean ratio", "")]
    scope = ", like-for-like rows" if some else ""
    source = part.get("cpu_geomean_source", "per sample")
    cpu = [(f"geometric mean CPU ratio ({source}){scope}", "cpu_")]
    if source not in ("per sample", "none"):
        cpu.append((f"geometric mean CPU ratio (per sample){scope}", "per_sample_cpu_"))
    return wall + cpu


def control_band(low: float, high: float) -> float:
    """The smallest symmetric band b (on the log scale: [1/(1+b), 1+b]) that holds [low, high]."""
    if not (math.isfinite(low) and math.isfinite(high)) or low <= 0 or high <= 0:
        return math.nan
    return math.exp(max(abs(math.log(low)), abs(math.log(high)))) - 1


def controls_line(controls: dict[str, Any], ratios: dict[str, list[float]], tie_band: float) -> str:
    """The controls in one line: each with its ratio, interval and the band the interval fits in."""
    parts = []
    for name, verdict in controls.items():
        ratio, low, high = (ratios.get(name) or [math.nan] * 3)[:3]
        band = control_band(low, high)
        shown = (f"{ratio:.3f}x [{low:.3f}, {high:.3f}], within ±{band:.1%}" if math.isfinite(band)
                 else "no interval")
        parts.append(f"{name} {verdict} ({shown})")
    listing = ", ".join(parts)
    if all(v == "tie" for v in controls.values()):
        return f"controls: all tie within ±{tie_band:.0%} (harnesses agree): {listing}"
    if any(v in ("win", "loss") for v in controls.values()):
        return f"controls: {listing} — NOT all ties: the harnesses differ, treat every row with suspicion"
    return (f"controls: {listing} — not shown to tie within ±{tie_band:.0%}: the intervals are wider than the "
            "tie band, so the harnesses are not shown to agree to that precision")


def summary_lines(names: tuple[str, str], summary: dict[str, Any], tie_band: float) -> list[str]:
    """Seed-style lines, one block per suite scope (micro tiers 1-4, echo, net), then controls
    (whose verdicts were given with `tie_band`, the comparison's)."""
    b, c = names
    bn, cn = schema.display_name(b), schema.display_name(c)
    lines = []
    for suite, part in summary["by_suite"].items():
        title = "micro (tiers 1-4)" if suite == "micro" else suite
        k, n_like = part["n_compared"], part["n_like_for_like"]
        if k == 0:
            continue
        counts = part["counts"]
        scope = "like-for-like rows: " if n_like < k else ""
        if n_like == 0:
            every = part["all_counts"]
            lines.append(f"{title}: no like-for-like row, nothing in the headline (all {k} compared rows: {cn} wins "
                         f"{every['win']}, {bn} wins {every['loss']}, ties {every['tie']}, inconclusive "
                         f"{every['inconclusive']}; not like for like: {', '.join(part['not_like_for_like'])})")
            for what, prefix in _geomeans(part)[1:2]:
                line = _geomean_line(what, part, prefix, names)
                if line:
                    lines.append(line)
            continue
        lines.append(f"{title}: {scope}{cn} wins: {counts['win']} / {n_like}   {bn} wins: "
                     f"{counts['loss']} / {n_like}   ties: {counts['tie']} / {n_like}   inconclusive: "
                     f"{counts['inconclusive']} / {n_like}")
        if n_like < k:
            every = part["all_counts"]
            lines.append(f"  all {k} compared rows: {cn} wins {every['win']}, {bn} wins {every['loss']}, ties "
                         f"{every['tie']}, inconclusive {every['inconclusive']}; not like for like: "
                         f"{', '.join(part['not_like_for_like'])}")
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
        lines.append(controls_line(controls, summary.get("control_ratios", {}), tie_band))
    return lines
