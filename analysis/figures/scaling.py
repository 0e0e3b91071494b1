"""Figures of the scaling page: the benchmarks of a worker sweep (Tiers 3-4 at every count).

`scaling_grid`: per benchmark, ns/op (solid) and CPU ns/op (dashed) against the worker count,
both runtimes, with intervals. `ratio_grid`: per benchmark, the ratio baseline ÷ candidate
against the worker count with its interval, the tie band and verdict colours (CPU ratio as
hollow squares). A run without a sweep gives a figure that says so. `runtime_metrics_grid`:
per Tier 3–4 benchmark, the runtime's events per operation (analysis/metrics.py) against the
worker count, one line per counter and variant; a run without metrics files gives a figure
that says so.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from .. import schema
from ..compare import Comparison
from ..tables import METRICS_SHOWN, VERDICT_COLORS, runtime_metrics_rows, swept
from .style import (BAND_COLOR, OTHER_COLORS, ROLE_COLORS, band_handle, empty_workers_figure, finite_span, grid,
                    note_axes, plain_log, ratio_axis, verdict_handles, workers_axis)


_NO_DATA = "no benchmark of this run ran at more than one worker count (no worker sweep)"

def _by_benchmark(cmp: Comparison) -> list[tuple[str, pd.DataFrame]]:
    rows = swept(cmp.benchmarks)
    return [(schema.bench_label(b, p), g) for (b, p), g in rows.groupby(["benchmark", "param"], sort=False)]


def _series(ax: Any, x: np.ndarray, y: np.ndarray, low: np.ndarray, high: np.ndarray, **style: Any) -> None:
    ax.plot(x, y, **style)
    ok = np.isfinite(y) & np.isfinite(low) & np.isfinite(high)
    if ok.any():
        yerr = np.vstack([np.clip(y[ok] - low[ok], 0, None), np.clip(high[ok] - y[ok], 0, None)])
        ax.errorbar(x[ok], y[ok], yerr=yerr, fmt="none", ecolor=style.get("color"), elinewidth=1, capsize=3, alpha=0.8)


def scaling_grid(cmp: Comparison) -> Figure:
    """ns/op and CPU ns/op against workers, both runtimes, one panel per swept benchmark."""
    bn, cn = schema.display_name(cmp.baseline), schema.display_name(cmp.candidate)
    title = f"Time per operation against worker threads: {cn} and {bn} (less is better)"
    panels = _by_benchmark(cmp)
    if not panels:
        return empty_workers_figure(title, "time per operation (ns/op)", _NO_DATA)
    fig, axes = grid(len(panels), title)
    cpu_seen = False
    for ax, (label, rows) in zip(axes, panels):
        x = rows["workers"].to_numpy(dtype=float)
        for role in ("candidate", "baseline"):
            color = ROLE_COLORS[role]
            col = lambda name: rows[f"{role}_{name}"].to_numpy(dtype=float)  # noqa: E731
            _series(ax, x, col("median_ns_per_op"), col("ci_low"), col("ci_high"), color=color, marker="o")
            if np.isfinite(col("cpu_ns_per_op")).any():
                cpu_seen = True
                _series(ax, x, col("cpu_ns_per_op"), col("cpu_ci_low"), col("cpu_ci_high"), color=color, marker="s",
                        linestyle="--")
        workers_axis(ax, sorted(int(w) for w in rows["workers"]))
        ax.set_yscale("log")
        plain_log(ax.yaxis)
        ax.set_title(label, fontsize=10)
        ax.set_ylabel("ns per operation (log scale)")
    handles = [Line2D([], [], color=ROLE_COLORS[r], marker="o", label=f"{n} wall time") for r, n in
               (("candidate", cn), ("baseline", bn))]
    if cpu_seen:
        handles += [Line2D([], [], color=ROLE_COLORS[r], marker="s", linestyle="--", label=f"{n} CPU time")
                    for r, n in (("candidate", cn), ("baseline", bn))]
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), frameon=False)
    return fig


def ratio_grid(cmp: Comparison) -> Figure:
    """The ratio baseline ÷ candidate with its interval at each worker count, per swept benchmark."""
    bn, cn = schema.display_name(cmp.baseline), schema.display_name(cmp.candidate)
    title = f"{bn} ÷ {cn} per worker count with {cmp.confidence:.0%} intervals (> 1: {cn} better)"
    panels = _by_benchmark(cmp)
    if not panels:
        return empty_workers_figure(title, f"{bn} ÷ {cn} (×)", _NO_DATA)
    fig, axes = grid(len(panels), title)
    for ax, (label, rows) in zip(axes, panels):
        x = rows["workers"].to_numpy(dtype=float)
        span = finite_span(list(rows[["ratio", "ratio_ci_low", "ratio_ci_high", "cpu_ratio", "cpu_ratio_ci_low",
                                      "cpu_ratio_ci_high"]].to_numpy(dtype=float).ravel())) or (0.5, 2.0)
        ratio_axis(ax, span[0], span[1], cmp.tie_band, which="y")
        ax.axhspan(1 / (1 + cmp.tie_band), 1 + cmp.tie_band, color=BAND_COLOR, alpha=0.6, zorder=0)
        ax.axhline(1.0, color="#444444", linewidth=1, zorder=1)
        for column, verdict_column, marker, filled in (("ratio", "verdict", "o", True),
                                                        ("cpu_ratio", "cpu_verdict", "s", False)):
            for xi, r in zip(x, rows.to_dict("records")):
                color = VERDICT_COLORS.get(r[verdict_column] if isinstance(r[verdict_column], str) else "", "#000000")
                value, low, high = r[column], r[f"{column}_ci_low"], r[f"{column}_ci_high"]
                if not np.isfinite(value):
                    continue
                shift = 1.0 if filled else 1.08
                if np.isfinite(low) and np.isfinite(high):
                    ax.plot([xi * shift] * 2, [low, high], color=color, linewidth=2)
                ax.plot([xi * shift], [value], marker=marker, color=color, markersize=6,
                        markerfacecolor=color if filled else "white")
        workers = sorted(int(w) for w in rows["workers"])
        workers_axis(ax, workers)
        if not np.isfinite(rows[["ratio", "cpu_ratio"]].to_numpy(dtype=float)).any():
            # a row only one side ran (e.g. an io row ampere's native API does not have): no
            # point, so the log x axis gets its limits here, and the panel says why it is empty
            ax.set_xlim(workers[0] / 1.5, workers[-1] * 1.5)
            note_axes(ax, f"no ratio: not run by both {cn} and {bn}")
        ax.set_title(label, fontsize=10)
        ax.set_ylabel(f"{bn} ÷ {cn} (×, log scale)")
    handles = verdict_handles() + [band_handle(cmp.tie_band),
                                   Line2D([], [], color="#555555", marker="o", linestyle="none", label="wall-time ratio"),
                                   Line2D([], [], color="#555555", marker="s", markerfacecolor="white",
                                          linestyle="none", label="CPU-time ratio")]
    fig.legend(handles=handles, loc="outside lower center", ncol=3, frameon=False)
    return fig


#: The counters drawn per benchmark (events per operation; the table has the others).
METRICS_DRAWN: tuple[str, ...] = ("parks", "unparks_issued", "steals", "tasks_stolen", "inject_pops", "budget_yields")
_COUNTER_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b")
_VARIANT_STYLES = (("-", "o"), ("--", "s"), (":", "^"), ("-.", "D"))


def runtime_metrics_grid(per_op: pd.DataFrame) -> Figure:
    """Events per operation against worker threads, per Tier 3–4 benchmark: one colour per
    counter (METRICS_DRAWN), one line style per variant."""
    title = "Runtime events per operation against worker threads"
    rows = runtime_metrics_rows(per_op)
    drawn = [c for c in METRICS_DRAWN if c in rows.columns]
    if rows.empty or not drawn:
        return empty_workers_figure(title, "events per operation",
                                    "no runtime metrics in this run (recorded with --metrics: ampere variants)")
    variants = list(dict.fromkeys(rows["runtime"]))
    panels = [(schema.bench_label(b, p), g) for (b, p), g in rows.groupby(["benchmark", "param"], sort=False)]
    fig, axes = grid(len(panels), title)
    colors = dict(zip(drawn, (_COUNTER_COLORS + OTHER_COLORS)[: len(drawn)]))
    for ax, (label, group) in zip(axes, panels):
        for variant, (linestyle, marker) in zip(variants, _VARIANT_STYLES):
            mine = group[group["runtime"] == variant].sort_values("workers")
            x = mine["workers"].to_numpy(dtype=float)
            for counter in drawn:
                ax.plot(x, mine[counter].to_numpy(dtype=float), color=colors[counter], linestyle=linestyle,
                        marker=marker, markersize=4)
        workers_axis(ax, sorted(int(w) for w in group["workers"].unique()))
        ax.set_ylim(bottom=0)
        ax.set_title(label, fontsize=10)
        ax.set_ylabel("events per operation")
    handles = [Line2D([], [], color=colors[c], linewidth=2, label=METRICS_SHOWN.get(c, c)) for c in drawn]
    handles += [Line2D([], [], color="#555555", linestyle=ls, marker=m, label=schema.display_name(v))
                for v, (ls, m) in zip(variants, _VARIANT_STYLES)]
    fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 5), frameon=False)
    return fig
