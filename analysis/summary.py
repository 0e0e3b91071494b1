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
  rows; `all_rows_cpu_geomean_ratio` the headline CPU ratios over every compared row;
  each with `*_geomean_ratio_ci`, `*_geomean_n` (rows), `*_geomean_rounds` and `*_geomean_method`;
- `not_like_for_like`: the labels of the compared rows outside the headline;
- totals of bytes/op and allocs/op per runtime over the scope's compared benchmarks (kept in the
  data; no summary line prints them: a sum of per-op means of different operations is no
  quantity, issue 43 — the pages show allocations per row instead).
Controls (`controls`: name -> verdict; `control_ratios`: name -> ratio and interval) are shown
with the band their interval fits in (a tie needs it within the tie band).
The geometric means are built over rounds (stats.rounds_geometric_mean_ci): every row of a
round comes from the same processes on the same machine state, so their errors are correlated
and an interval that combined the rows' standard errors as independent was too narrow (issue
43: the io native headline [2.60, 3.00] became [2.40, 3.26]). Per round, the mean over the rows
of the log ratio of the invocation medians (wall; per-sample CPU) or of the whole invocation's
CPU per op (span_cpu.py); the centre is their mean over the rounds (the same centre as the mean
of the rows' paired-t ratios when every row has every round), the interval a t interval over
the rounds. In `diff` (two runs) the Welch interval of the two runs' per-invocation means.
Its coverage: docs/coverage.md.
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


def _pairs(value: Any) -> dict[int, float]:
    """A `*_round_logs` cell ([[round, log value], ...]) as a dict; {} when missing (NaN)."""
    if not isinstance(value, (list, tuple)):
        return {}
    return {int(k): float(v) for k, v in value}


def _within(row: dict[str, Any], prefix: str) -> float:
    """The row's within-invocation SE of its log ratio: both sides' (`{role}_{prefix}within_log_se`)."""
    parts = [row.get(f"{role}_{prefix}within_log_se", math.nan) for role in ("baseline", "candidate")]
    parts = [float(p) for p in parts if isinstance(p, (int, float)) and math.isfinite(p)]
    return math.hypot(*parts) if parts else 0.0


def row_rounds(rows: pd.DataFrame, ratio: str) -> list[stats.RowRounds]:
    """The per-round log summaries of each row that a geometric mean of `ratio` is built over:
    `ratio` the wall ratio (invocation medians of ns/op), `cpu_ratio` (of CPU ns/op per sample)
    or `headline_cpu_ratio` (the whole invocation's CPU per op where the row's headline CPU
    comes from it, span_cpu.py, else per sample)."""
    out = []
    for row in rows.to_dict("records"):
        if ratio == "ratio":
            column, within = "round_logs", _within(row, "")
        elif ratio == "headline_cpu_ratio" and row.get("headline_cpu_source") == WHOLE:
            column, within = "span_cpu_round_logs", 0.0  # one value per invocation: no within spread
        else:
            column, within = "cpu_round_logs", _within(row, "cpu_")
        out.append(stats.RowRounds(_pairs(row.get(f"baseline_{column}")), _pairs(row.get(f"candidate_{column}")),
                                   within))
    return out


def _geomean(rows: pd.DataFrame, ratio: str, confidence: float, paired: bool) -> stats.RoundGeoMean:
    """Geometric mean of the rows' ratios with its interval over rounds (stats.rounds_geometric_mean_ci:
    every row of a round shares its processes and machine state, so the rows are not independent)."""
    return stats.rounds_geometric_mean_ci(row_rounds(rows, ratio), confidence, paired)


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


def _geo_fields(prefix: str, geo: stats.RoundGeoMean) -> dict[str, Any]:
    return {f"{prefix}geomean_ratio": geo.ratio, f"{prefix}geomean_ratio_ci": [geo.low, geo.high],
            f"{prefix}geomean_n": geo.n, f"{prefix}geomean_rounds": geo.rounds,
            f"{prefix}geomean_method": geo.method}


def scope_summary(rows: pd.DataFrame, names: tuple[str, str], confidence: float, paired: bool = True
                  ) -> dict[str, Any]:
    """Counts, geometric means and totals of one scope (rows of `benchmarks`)."""
    baseline, candidate = names
    compared = rows[rows["compared"].astype(bool)]
    like = compared[compared["like_for_like"].astype(bool)]
    cpu_ratio, cpu_se, cpu_verdict = _cpu_columns(compared)
    return {
        "n_benchmarks": int(len(rows)), "n_compared": int(len(compared)), "n_like_for_like": int(len(like)),
        "counts": _counts(like["verdict"]), "cpu_counts": _counts(like[cpu_verdict]),
        "all_counts": _counts(compared["verdict"]), "all_cpu_counts": _counts(compared[cpu_verdict]),
        **_geo_fields("", _geomean(compared, "ratio", confidence, paired)),
        **_geo_fields("like_for_like_", _geomean(like, "ratio", confidence, paired)),
        **_geo_fields("cpu_", _geomean(like, cpu_ratio, confidence, paired)),
        "cpu_geomean_source": _cpu_source(like),
        **_geo_fields("per_sample_cpu_", _geomean(like, "cpu_ratio", confidence, paired)),
        **_geo_fields("all_rows_cpu_", _geomean(compared, cpu_ratio, confidence, paired)),
        "not_like_for_like": [str(x) for x in compared.loc[~compared["like_for_like"].astype(bool), "label"]],
        "total_bytes_per_op": {baseline: float(compared["baseline_bytes_per_op"].sum()),
                               candidate: float(compared["candidate_bytes_per_op"].sum())},
        "total_allocs_per_op": {baseline: float(compared["baseline_allocs_per_op"].sum()),
                                candidate: float(compared["candidate_allocs_per_op"].sum())},
    }


def is_control(frame: pd.DataFrame) -> pd.Series:
    return (frame["suite"] == "micro") & (frame["tier"] == 0)


def summarize(benchmarks: pd.DataFrame, names: tuple[str, str], confidence: float, compared: bool,
              tie_band: float, paired: bool = True) -> dict[str, Any]:
    """The summary of a comparison; `paired`: the sides' invocations are rounds of one run
    (compare), not two runs (diff_runs)."""
    frame = benchmarks[benchmarks["headline"].astype(bool)]
    control = is_control(frame)
    summary = scope_summary(frame[~control], names, confidence, paired)
    summary["by_suite"] = {}
    for suite in schema.SUITES:
        rows = frame[(frame["suite"] == suite) & ~control]
        if not rows.empty:
            summary["by_suite"][suite] = scope_summary(rows, names, confidence, paired)
    summary["controls"] = {r["benchmark"]: r["verdict"] for r in frame[control].to_dict("records")}
    summary["control_ratios"] = {r["benchmark"]: [r["ratio"], r["ratio_ci_low"], r["ratio_ci_high"]]
                                 for r in frame[control].to_dict("records")}
    summary["lines"] = summary_lines(names, summary, tie_band) if compared else [
        f"not compared: the run has data for only one of {names[1]} and {names[0]}"]
    return summary


def _geomean_line(what: str, part: dict[str, Any], prefix: str, names: tuple[str, str]) -> str | None:
    ratio, n = part[f"{prefix}geomean_ratio"], part[f"{prefix}geomean_n"]
    if not math.isfinite(ratio):
        return None
    lo, hi = part[f"{prefix}geomean_ratio_ci"]
    bn, cn = (schema.display_name(x) for x in names)
    better = "uses less CPU" if "cpu_" in prefix else "faster"
    rounds = part.get(f"{prefix}geomean_rounds") or 0
    where = f", interval over {rounds} rounds" if rounds and math.isfinite(lo) else ""
    return f"  {what} {bn}/{cn}: {ratio:.3f}x [{lo:.3f}, {hi:.3f}] over {n} benchmarks{where} (> 1: {cn} {better})"


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
    controls = summary["controls"]
    if controls:
        lines.append(controls_line(controls, summary.get("control_ratios", {}), tie_band))
    return lines
