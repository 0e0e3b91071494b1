"""Figures of the http page, from analysis.httpsuite's summary.

`panels`: one row of three panels per route — requests/s, p99 latency (log scale) and server
CPU time per request against the connection count (log axis), one line per runtime with its interval over
invocations as error bars. Every runtime has its colour (Tokio orange, ampere.io blue, the
others in style order); a run without http rows gives a figure that says so.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from .. import schema
from ..httpsuite import ROUTE_LABELS
from .style import WIDTH_INCHES, note_axes, runtime_colors

#: (column, its interval's columns, axis label, scale to the plotted unit, log axis)
METRICS = (
    ("rps", "rps_low", "rps_high", "requests/s", 1.0, False),
    ("p99_ns", "p99_low", "p99_high", "p99 latency, ms (log scale)", 1e-6, True),
    ("cpu_ns_per_request", "cpu_low", "cpu_high", "server CPU per request, µs", 1e-3, False),
)


def _errors(centre: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Error-bar lengths (below, above); 0 where the interval is unknown."""
    below = np.where(np.isfinite(low), centre - low, 0.0)
    above = np.where(np.isfinite(high), high - centre, 0.0)
    return np.vstack([np.clip(below, 0, None), np.clip(above, 0, None)])


def panels(table: pd.DataFrame, baseline: str, confidence: float) -> Figure:
    routes = [b for b in schema.HTTP_ORDER if not table.empty and (table["benchmark"] == b).any()]
    rows = max(1, len(routes))
    fig = Figure(figsize=(WIDTH_INCHES, 3.4 * rows), layout="constrained")
    axes = fig.subplots(rows, len(METRICS), squeeze=False)
    if not routes:
        for ax in axes[0]:
            note_axes(ax, "no http rows in this run")
        return fig
    runtimes = sorted(set(table["runtime"]), key=schema.runtime_rank)
    first = next((r for r in runtimes if r != baseline), baseline)
    colors = runtime_colors(baseline, first, runtimes)
    for row, bench in enumerate(routes):
        part = table[table["benchmark"] == bench]
        for col, (centre, low, high, label, scale, log) in enumerate(METRICS):
            ax = axes[row][col]
            for rt in runtimes:
                mine = part[part["runtime"] == rt].sort_values("connections")
                if mine.empty:
                    continue
                y = mine[centre].to_numpy(dtype=float) * scale
                err = _errors(y, mine[low].to_numpy(dtype=float) * scale, mine[high].to_numpy(dtype=float) * scale)
                ax.errorbar(mine["connections"], y, yerr=err, marker="o", capsize=3, color=colors[rt],
                            label=schema.display_name(rt))
            conns = sorted(set(part["connections"]))
            ax.set_xscale("log")
            ax.set_xticks(conns, [str(c) for c in conns])
            ax.minorticks_off()
            top = np.nanmax(part[high].to_numpy(dtype=float) * scale) if part[high].notna().any() else math.nan
            if log:  # the latencies of the runtimes span orders of magnitude at high connection counts
                ax.set_yscale("log")
            elif math.isfinite(top):
                ax.set_ylim(0, top * 1.15)
            ax.set_xlabel("connections")
            ax.set_ylabel(label)
            ax.set_title(f"{ROUTE_LABELS.get(bench, bench)}: {label}", fontsize=10)
            ax.grid(True, alpha=0.3)
        axes[row][0].legend(fontsize=8, title="runtime", loc="best")
    fig.suptitle(f"Http suite under wrk: centre over invocations, bars = {confidence:.0%} interval")
    return fig
