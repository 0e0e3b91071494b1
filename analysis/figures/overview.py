"""Figures of the overview page: every ratio with its interval (forest plot), wall time against
CPU time per row, and heap bytes per operation. Rows are the comparison's headline rows
(benchmarks.is_headline), grouped like the tables; see style.py for the conventions."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from .. import schema
from ..compare import Comparison
from ..fmt import finite, fmt_amount, fmt_ratio_ci
from ..tables import VERDICT_COLORS
from .style import (BAND_COLOR, ROLE_COLORS, ROW_INCHES, WIDTH_INCHES, apply_row_labels, band_handle, finite_span,
                    note_axes, plain_log, ratio_axis, right_labels, row_layout, verdict_handles)

#: Marker of a row whose two sides do not have the same semantics (fairness table).
UNLIKE_MARKER = "D"
UNLIKE_SUFFIX = " ≠"


def headline(cmp: Comparison, suite: str | None = None) -> pd.DataFrame:
    """The rows the overview shows (of one suite when `suite` is given), labelled ' ≠' where the
    two sides' semantics differ."""
    keep = cmp.benchmarks["headline"].astype(bool)
    if suite is not None:
        keep &= cmp.benchmarks["suite"] == suite
    rows = cmp.benchmarks[keep].copy()
    unlike = ~rows["like_for_like"].astype(bool)
    rows.loc[unlike, "label"] = rows.loc[unlike, "label"] + UNLIKE_SUFFIX
    return rows


def _ratio_row(ax: Any, y: float, ratio: float, low: float, high: float, verdict: Any, marker: str) -> None:
    color = VERDICT_COLORS.get(verdict if isinstance(verdict, str) else "", "#000000")
    if finite(low) and finite(high):
        ax.plot([low, high], [y, y], color=color, linewidth=2.2, solid_capstyle="butt", zorder=3)
    ax.plot([ratio], [y], marker=marker, markersize=6, color=color, zorder=4,
            markerfacecolor=color if finite(low) else "white")


def _draw_ratios(ax: Any, rows: list[tuple[float, dict]], column: str, verdict_column: str,
                 tie_band: float) -> list[tuple[float, str, str]]:
    """Dots, intervals and the tie band of one ratio column; returns the right-hand texts."""
    span = finite_span([r[c] for _, r in rows for c in (column, f"{column}_ci_low", f"{column}_ci_high")
                        if r["compared"]]) or (0.5, 2.0)
    ratio_axis(ax, span[0], span[1], tie_band)
    ax.axvspan(1 / (1 + tie_band), 1 + tie_band, color=BAND_COLOR, alpha=0.6, zorder=0)
    ax.axvline(1.0, color="#444444", linewidth=1, zorder=1)
    right: list[tuple[float, str, str]] = []
    for y, r in rows:
        ratio, verdict = r[column], r[verdict_column]
        if not r["compared"]:
            ax.text(1.0, y, f"  not compared ({r['verdict_reason'].removeprefix('not compared: ')})",
                    va="center", ha="left", fontsize=8, color="#777777", style="italic")
            continue
        if not finite(ratio) or ratio <= 0:
            ax.text(1.0, y, "  not recorded" if column == "cpu_ratio" else "  no ratio (a centre is 0)",
                    va="center", fontsize=8, color="#777777")
            continue
        marker = "o" if r["like_for_like"] else UNLIKE_MARKER
        _ratio_row(ax, y, ratio, r[f"{column}_ci_low"], r[f"{column}_ci_high"], verdict, marker)
        text = fmt_ratio_ci(ratio, r[f"{column}_ci_low"], r[f"{column}_ci_high"]).replace("x [", "× [")
        right.append((y, text + (f"  {verdict}" if isinstance(verdict, str) else ""),
                      VERDICT_COLORS.get(verdict if isinstance(verdict, str) else "", "#000000")))
    return right


def _legend(fig: Figure, cmp: Comparison, rows: pd.DataFrame) -> None:
    handles = verdict_handles() + [band_handle(cmp.tie_band)]
    if not rows["like_for_like"].astype(bool).all():
        handles.append(Line2D([], [], color="#555555", marker=UNLIKE_MARKER, linestyle="none",
                              label="≠ not like for like: the two sides' semantics differ (fairness table)"))
    fig.legend(handles=handles, loc="outside lower center", ncol=3, frameon=False)


def forest_plot(cmp: Comparison) -> Figure:
    """Every headline benchmark's ratio (baseline ÷ candidate centre of ns/op) with its CI, log axis.

    Grouped by tier, Tier 0 controls at the top; tie band shaded; verdict colours; the ratio and
    interval written at the right; rows that are not like for like marked ≠ (diamond); rows with
    one runtime only say "not compared".
    """
    bench = headline(cmp)
    bn, cn = schema.display_name(cmp.baseline), schema.display_name(cmp.candidate)
    labels, rows = row_layout(bench)
    fig = Figure(figsize=(WIDTH_INCHES, max(3.0, 1.8 + ROW_INCHES * len(labels))), layout="constrained")
    ax = fig.add_subplot()
    right = _draw_ratios(ax, rows, "ratio", "verdict", cmp.tie_band)
    apply_row_labels(ax, labels)
    right_labels(ax, right)
    ax.set_xlabel(f"{bn} ÷ {cn} of ns/op (×, log scale) — right of 1×: {cn} faster, left: {bn} faster")
    ax.set_ylabel("benchmark (grouped by tier)")
    ax.set_title(f"{cn} vs {bn}: ratio of time per operation with {cmp.confidence:.0%} confidence intervals\n"
                 f"run {cmp.run_id}", loc="center")
    ax.text(0.0, 1.002, f"← {bn} faster", transform=ax.transAxes, ha="left", va="bottom", fontsize=9, color="#555555")
    ax.text(1.0, 1.002, f"{cn} faster →", transform=ax.transAxes, ha="right", va="bottom", fontsize=9, color="#555555")
    _legend(fig, cmp, bench)
    if not rows:
        note_axes(ax, "no benchmarks in this run")
    elif not cmp.compared:
        note_axes(ax, "only one runtime in this run: there are no ratios to show")
    return fig


def cpu_plot(cmp: Comparison, suite: str | None = None) -> Figure:
    """Wall-time ratio (left) against CPU-time ratio (right) for every headline row (of one
    suite when `suite` is given: the net page).

    Both are baseline ÷ candidate per operation: right of 1× the candidate is faster (left
    panel) or uses less CPU (right panel). A row green on the left and red on the right is a
    wall-time win that costs more CPU than the baseline spends (e.g. spinning instead of sleeping).
    """
    bench = headline(cmp, suite)
    bn, cn = schema.display_name(cmp.baseline), schema.display_name(cmp.candidate)
    labels, rows = row_layout(bench)
    fig = Figure(figsize=(WIDTH_INCHES + 3, max(3.0, 1.8 + ROW_INCHES * len(labels))), layout="constrained")
    wall_ax, cpu_ax = fig.subplots(1, 2, sharey=True)
    _draw_ratios(wall_ax, rows, "ratio", "verdict", cmp.tie_band)
    recorded = bool(bench["cpu_ratio"].notna().any())
    right = _draw_ratios(cpu_ax, rows, "cpu_ratio", "cpu_verdict", cmp.tie_band) if recorded else []
    apply_row_labels(wall_ax, labels)
    right_labels(cpu_ax, right, "CPU ratio [CI] and verdict")
    wall_ax.set_title(f"wall time: {bn} ÷ {cn} of ns/op")
    wall_ax.set_xlabel(f"× (log scale) — right of 1×: {cn} faster")
    cpu_ax.set_title(f"CPU time: {bn} ÷ {cn} of CPU ns/op")
    cpu_ax.set_xlabel(f"× (log scale) — right of 1×: {cn} uses less CPU")
    wall_ax.set_ylabel("benchmark (grouped by tier)")
    scope = f"{suite.capitalize()} suite — " if suite else ""
    fig.suptitle(f"{scope}{cn} vs {bn}: wall time against CPU time per operation, {cmp.confidence:.0%} intervals — "
                 f"run {cmp.run_id}")
    _legend(fig, cmp, bench)
    if not recorded:
        cpu_ax.set_xscale("log")
        note_axes(cpu_ax, "CPU time not recorded in this run (schema 1)")
    return fig


def alloc_plot(cmp: Comparison) -> Figure:
    """Heap bytes per operation of every headline benchmark for both runtimes (log axis, 0 written out)."""
    sides = cmp.runtimes
    base = headline(cmp)[["suite", "tier", "benchmark", "param", "workers", "label"]]
    labels, rows = row_layout(base)
    fig = Figure(figsize=(WIDTH_INCHES, max(3.0, 1.8 + ROW_INCHES * 1.3 * len(labels))), layout="constrained")
    ax = fig.add_subplot()
    values = sides["bytes_per_op"].to_numpy(dtype=float) if not sides.empty else np.empty(0)
    positive = values[np.isfinite(values) & (values > 0)]
    floor = 10 ** math.floor(math.log10(positive.min() / 2)) if positive.size else 0.1
    top = positive.max() * 3 if positive.size else 10.0
    ax.set_xscale("log")
    ax.set_xlim(floor, max(top, floor * 100))
    by_key = {(r["label"], r["role"]): r for r in sides.to_dict("records")}
    names = {"candidate": schema.display_name(cmp.candidate), "baseline": schema.display_name(cmp.baseline)}
    for y, r in rows:
        for role, dy in (("candidate", -0.2), ("baseline", 0.2)):
            color = ROLE_COLORS[role]
            side = by_key.get((r["label"].removesuffix(UNLIKE_SUFFIX), role))
            if side is None:
                ax.text(floor * 1.15, y + dy, f"no {names[role]} data", va="center", ha="left",
                        fontsize=7, color=color, alpha=0.6, style="italic")
                continue
            value = side["bytes_per_op"]
            if finite(value) and value > 0:
                ax.barh(y + dy, value - floor, left=floor, height=0.38, color=color, zorder=2)
                ax.text(value * 1.08, y + dy, fmt_amount(value), va="center", ha="left", fontsize=7, color=color)
            else:
                ax.plot([floor], [y + dy], marker="|", markersize=9, color=color, zorder=3, clip_on=False)
                ax.text(floor * 1.15, y + dy, "0 B/op (no allocation)", va="center", ha="left", fontsize=7,
                        color=color, fontweight="bold")
    apply_row_labels(ax, labels)
    plain_log(ax.xaxis)
    ax.set_xlabel("heap bytes allocated per operation (B/op, log scale; bars start at the left edge; "
                  "0 is written out)")
    ax.set_ylabel("benchmark (grouped by tier)")
    ax.set_title(f"Allocation: bytes per operation, mean over measured iterations — run {cmp.run_id}")
    fig.legend(handles=[Patch(color=ROLE_COLORS[role], label=names[role]) for role in ("candidate", "baseline")],
               loc="outside lower center", ncol=2, frameon=False)
    if not rows:
        note_axes(ax, "no benchmarks in this run")
    return fig
