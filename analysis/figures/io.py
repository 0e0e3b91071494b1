"""Figures of the io page, from analysis.iosuite's matrix.

`matrix_plot`: the matrix as a figure — one row per io benchmark at one worker count, every
runtime's centre of ns/op as a dot with its confidence interval, on a log axis; the fastest
runtime of each row is named at the right. Every runtime has its colour (Tokio orange, the
others in style order); a run without io rows gives a figure that says so.
"""

from __future__ import annotations

import math

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from .. import schema
from .style import ROW_INCHES, WIDTH_INCHES, note_axes, plain_log, runtime_colors


def matrix_plot(table: pd.DataFrame, workers: int | None, baseline: str, confidence: float) -> Figure:
    """Time per op of every runtime on every io row at `workers` (None: every row)."""
    rows = table if workers is None or table.empty else table[table["workers"] == workers]
    keys = list(dict.fromkeys(zip(rows["benchmark"], rows["param"], rows["workers"])))
    runtimes = sorted(set(rows["runtime"]), key=schema.runtime_rank)
    first = next((r for r in runtimes if r != baseline), baseline)
    colors = runtime_colors(baseline, first, runtimes)
    fig = Figure(figsize=(WIDTH_INCHES, max(3.0, 1.8 + 2.2 * ROW_INCHES * len(keys))), layout="constrained")
    ax = fig.add_subplot()
    offsets = {rt: (i - (len(runtimes) - 1) / 2) * 0.12 for i, rt in enumerate(runtimes)}
    for y, key in enumerate(keys):
        group = rows[(rows["benchmark"] == key[0]) & (rows["param"] == key[1]) & (rows["workers"] == key[2])]
        for side in group.itertuples():
            centre, low, high = side.median_ns_per_op, side.ci_low, side.ci_high
            yy = y + offsets[side.runtime]
            if all(math.isfinite(v) and v > 0 for v in (low, high)):
                ax.plot([low, high], [yy, yy], color=colors[side.runtime], linewidth=1.6)
            ax.plot([centre], [yy], marker="o", color=colors[side.runtime], markersize=5, linestyle="none")
        winner = group["fastest"].iloc[0]
        ax.annotate(schema.display_name(winner), xy=(1.0, y), xycoords=("axes fraction", "data"), xytext=(6, 0),
                    textcoords="offset points", va="center", fontsize=9, color=colors.get(winner, "#333333"))
    ax.set_yticks(range(len(keys)), [schema.bench_label(b, p) for b, p, _ in keys])
    ax.invert_yaxis()
    ax.set_xscale("log")
    plain_log(ax.xaxis)
    at = f" at {workers} worker(s)" if workers is not None else ""
    ax.set_xlabel(f"time per op, ns (log scale; dot = centre, line = {confidence:.0%} interval)")
    ax.set_ylabel("io benchmark")
    ax.set_title(f"Io suite{at}: every runtime's time per op (fastest named at the right)", loc="center")
    handles = [Line2D([], [], color=colors[rt], marker="o", linewidth=1.6, label=schema.display_name(rt))
               for rt in runtimes]
    if handles:
        ax.legend(handles=handles, loc="lower right", fontsize=9, title="runtime")
    else:
        ax.legend(handles=[Line2D([], [], color="#999999", label="no runtime")], loc="lower right")
        note_axes(ax, "no io rows in this run")
    return fig
