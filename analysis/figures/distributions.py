"""Figures of the distributions page: every measured iteration, per benchmark, per runtime.

These plot raw rows of the run (load.Run), not a comparison: one colour per runtime of the run
(the candidate blue, the baseline orange, variants after them; style.runtime_colors).
"""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from .. import schema
from ..fmt import time_unit
from ..load import Run
from .style import grid, line_legend, runtime_colors

#: Up to this many points a run-sequence line also gets a marker per iteration.
MARKERS_MAX = 120


def benchmark_rows(run: Run) -> pd.DataFrame:
    """One row per benchmark of a run (its key and label), for `tables.groups(...)`."""
    keys = run.data[list(schema.BENCH_KEY)].drop_duplicates()
    swept = keys.groupby(["suite", "tier", "benchmark", "param"])["workers"].transform("nunique") > 1
    labels = [schema.bench_label(b, p) + (f" (w={int(w)})" if s else "")
              for b, p, w, s in zip(keys["benchmark"], keys["param"], keys["workers"], swept)]
    return keys.assign(label=labels).reset_index(drop=True)


def _panels(run: Run, rows: pd.DataFrame) -> list[tuple[dict, pd.DataFrame]]:
    data = run.data
    out = []
    for r in rows.to_dict("records"):
        mine = (data["suite"] == r["suite"]) & (data["benchmark"] == r["benchmark"]) & (data["param"] == r["param"])
        mine &= data["workers"].isna() if pd.isna(r["workers"]) else (data["workers"] == r["workers"])
        out.append((r, data[mine.to_numpy(dtype=bool)]))
    return out


def _colors(run: Run, baseline: str, candidate: str) -> dict[str, str]:
    colors = runtime_colors(baseline, candidate, run.runtimes)
    return {rt: c for rt, c in colors.items() if rt in run.runtimes}


def ecdf_grid(run: Run, title: str, rows: pd.DataFrame, baseline: str = "tokio",
              candidate: str = "ampere") -> Figure:
    """Small multiples: per benchmark, the ECDF of per-iteration ns/op of each runtime.

    Every measured iteration of every invocation is one step; two curves that lie on top of
    each other mean the same distribution; a curve to the left is faster.
    """
    colors = _colors(run, baseline, candidate)
    panels = _panels(run, rows)
    fig, axes = grid(len(panels), f"{title}: distribution of time per operation (every measured iteration)")
    for ax, (r, data) in zip(axes, panels):
        scale, unit = time_unit(data["ns_per_op"])
        for rt, color in colors.items():
            values = data.loc[data["runtime"] == rt, "ns_per_op"].to_numpy(dtype=float) / scale
            if values.size:
                ax.ecdf(values, color=color, linewidth=1.6)
        ax.set_title(r["label"], fontsize=10)
        ax.set_xlabel(f"time per operation ({unit}/op)")
        ax.set_ylabel("share of iterations ≤ x")
        ax.set_ylim(0, 1.02)
    line_legend(fig, colors)
    return fig


def run_sequence_grid(run: Run, title: str, rows: pd.DataFrame, baseline: str = "tokio",
                      candidate: str = "ampere") -> Figure:
    """Small multiples: ns/op in measurement order, the invocations of a runtime one after the
    other (one line per runtime; dotted lines separate invocations): a slope inside an
    invocation is drift or warm-up, steps between invocations are between-invocation variance."""
    colors = _colors(run, baseline, candidate)
    panels = _panels(run, rows)
    fig, axes = grid(len(panels), f"{title}: time per operation in measurement order (invocations one after another)")
    for ax, (r, data) in zip(axes, panels):
        scale, unit = time_unit(data["ns_per_op"])
        for rt, color in colors.items():
            mine = data[data["runtime"] == rt].sort_values(["invocation", "iteration"])
            if mine.empty:
                continue
            ax.plot(range(len(mine)), mine["ns_per_op"].to_numpy(dtype=float) / scale, color=color, linewidth=1.0,
                    marker="." if len(mine) <= MARKERS_MAX else None, markersize=3)
        per_invocation = data.groupby(["runtime", "invocation"]).size()
        if not per_invocation.empty:
            step = int(per_invocation.max())
            invocations = int(data["invocation"].nunique())
            for k in range(1, invocations):
                ax.axvline(k * step - 0.5, color="#999999", linewidth=0.6, linestyle=":")
        ax.set_title(r["label"], fontsize=10)
        ax.set_xlabel("measured iteration (index, invocations in order)")
        ax.set_ylabel(f"time per operation ({unit}/op)")
    boundary = Line2D([], [], color="#999999", linestyle=":", label="next invocation")
    line_legend(fig, colors, [boundary])
    return fig
