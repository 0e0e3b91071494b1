"""Figures of the machines page: the worker sweep of every machine in one panel per benchmark.

`scaling_by_machine`: per Tier 3-4 benchmark, ns/op against worker threads, one colour per
machine, the candidate solid with circles and the baseline dashed with squares, intervals as
error bars; a count above the machine's logical cores is drawn hollow (oversubscribed).
`ratio_by_machine`: per Tier 3-4 benchmark, the ratio baseline ÷ candidate against worker
threads with its interval, one colour per machine, the tie band in grey. A data folder without
Tier 3-4 rows gives a figure that says so. Input: analysis.machines.Machines.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from .. import schema
from ..machines import Machines, swept_rows
from .style import BAND_COLOR, band_handle, empty_workers_figure, finite_span, grid, plain_log, ratio_axis, workers_axis

MACHINE_COLORS = ("#2ca02c", "#9467bd", "#8c564b", "#17becf", "#e377c2", "#bcbd22", "#7f7f7f", "#1f77b4")


_NO_DATA = "no machine has Tier 3-4 rows (nothing ran on a runtime at a worker count)"

def machine_colors(machines: list[str]) -> dict[str, str]:
    """One colour per machine, in page order (cycling past the palette)."""
    return {m: MACHINE_COLORS[i % len(MACHINE_COLORS)] for i, m in enumerate(machines)}


def _panels(data: Machines) -> list[tuple[str, pd.DataFrame]]:
    rows = swept_rows(data.rows)
    if rows.empty:
        return []
    keys = {(b, p): schema.bench_sort_key("micro", int(t), b, p) for b, p, t in
            zip(rows["benchmark"], rows["param"], rows["tier"])}
    order = sorted(keys, key=lambda k: keys[k])
    return [(schema.bench_label(b, p), rows[(rows["benchmark"] == b) & (rows["param"] == p)]) for b, p in order]


def _series(ax: Any, rows: pd.DataFrame, value: str, low: str, high: str, color: str, marker: str,
            linestyle: str) -> None:
    rows = rows.sort_values("workers")
    x = rows["workers"].to_numpy(dtype=float)
    y, lo, hi = (rows[c].to_numpy(dtype=float) for c in (value, low, high))
    over = rows["oversubscribed"].to_numpy(dtype=bool)
    ax.plot(x, y, color=color, linestyle=linestyle, linewidth=1.5)
    for mask, face in ((~over, color), (over, "white")):
        ax.plot(x[mask], y[mask], linestyle="none", marker=marker, color=color, markerfacecolor=face, markersize=5)
    ok = np.isfinite(y) & np.isfinite(lo) & np.isfinite(hi)
    if ok.any():
        yerr = np.vstack([np.clip(y[ok] - lo[ok], 0, None), np.clip(hi[ok] - y[ok], 0, None)])
        ax.errorbar(x[ok], y[ok], yerr=yerr, fmt="none", ecolor=color, elinewidth=1, capsize=3, alpha=0.8)


def _machine_handles(colors: dict[str, str]) -> list[Any]:
    return [Line2D([], [], color=c, linewidth=2, label=m) for m, c in colors.items()]


def scaling_by_machine(data: Machines) -> Figure:
    """ns/op against worker threads, one colour per machine, candidate and baseline."""
    bn, cn = schema.display_name(data.baseline), schema.display_name(data.candidate)
    title = f"Time per operation against worker threads on each machine: {cn} and {bn} (less is better)"
    panels = _panels(data)
    if not panels:
        return empty_workers_figure(title, "time per operation (ns/op)", _NO_DATA)
    colors = machine_colors(list(data.machines["machine"]))
    fig, axes = grid(len(panels), title)
    for ax, (label, rows) in zip(axes, panels):
        for machine, mine in rows.groupby("machine", sort=False):
            color = colors.get(str(machine), "#000000")
            _series(ax, mine, "candidate_median_ns_per_op", "candidate_ci_low", "candidate_ci_high", color, "o", "-")
            _series(ax, mine, "baseline_median_ns_per_op", "baseline_ci_low", "baseline_ci_high", color, "s", "--")
        workers_axis(ax, sorted({int(w) for w in rows["workers"]}))
        ax.set_yscale("log")
        plain_log(ax.yaxis)
        ax.set_title(label, fontsize=10)
        ax.set_ylabel("ns per operation (log scale)")
    handles = _machine_handles(colors) + [
        Line2D([], [], color="#444444", marker="o", label=cn),
        Line2D([], [], color="#444444", marker="s", linestyle="--", label=bn),
        Line2D([], [], color="#444444", marker="o", markerfacecolor="white", linestyle="none",
               label="more workers than logical cores")]
    fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 4), frameon=False)
    return fig


def ratio_by_machine(data: Machines, tie_band: float, confidence: float) -> Figure:
    """The ratio baseline ÷ candidate with its interval against worker threads, per machine."""
    bn, cn = schema.display_name(data.baseline), schema.display_name(data.candidate)
    title = f"{bn} ÷ {cn} per worker count on each machine, {confidence:.0%} intervals (> 1: {cn} faster)"
    panels = _panels(data)
    if not panels:
        return empty_workers_figure(title, f"{bn} ÷ {cn} (×)", _NO_DATA)
    colors = machine_colors(list(data.machines["machine"]))
    fig, axes = grid(len(panels), title)
    for ax, (label, rows) in zip(axes, panels):
        span = finite_span(list(rows[["ratio", "ratio_ci_low", "ratio_ci_high"]].to_numpy(dtype=float).ravel()))
        ratio_axis(ax, *(span or (0.5, 2.0)), tie_band, which="y")
        ax.axhspan(1 / (1 + tie_band), 1 + tie_band, color=BAND_COLOR, alpha=0.6, zorder=0)
        ax.axhline(1.0, color="#444444", linewidth=1, zorder=1)
        for machine, mine in rows.groupby("machine", sort=False):
            _series(ax, mine, "ratio", "ratio_ci_low", "ratio_ci_high", colors.get(str(machine), "#000000"), "o", "-")
        workers_axis(ax, sorted({int(w) for w in rows["workers"]}))
        ax.set_title(label, fontsize=10)
        ax.set_ylabel(f"{bn} ÷ {cn} (×, log)")
    handles = _machine_handles(colors) + [band_handle(tie_band)]
    fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 4), frameon=False)
    return fig
