"""Figures of the net page (TCP over loopback), from the tidy frame of analysis.net.sides.

`latency_plot`: time per round trip of tcp_pingpong against the payload size, of
tcp_echo_conns against the number of connections and of tcp_connect per runtime — median
(solid, circles) and p99 (dashed, squares), each with its interval. `conns_plot`: the scaling
over connections, time per round trip (left) and the ratio baseline ÷ runtime with its interval
and verdict colours (right). `throughput_plot`: tcp_stream MiB/s per runtime with its interval.
Every runtime of the run gets its colour (style.runtime_colors: candidate blue, baseline orange,
variants after them); a run without the rows a figure needs gives a figure that says so.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from .. import net, schema
from ..fmt import fmt_bytes
from ..tables import VERDICT_COLORS, fmt_mib_s
from .style import (BAND_COLOR, WIDTH_INCHES, band_handle, finite_span, note_axes, plain_log, ratio_axis,
                    runtime_colors, verdict_handles)

#: x of each panel of the latency figure: (benchmark, title, x label).
LATENCY_PANELS = (
    ("tcp_pingpong", "tcp_pingpong (one connection)",
     "payload size per round trip (bytes, log scale)"),
    ("tcp_echo_conns", "tcp_echo_conns (64 B, n connections)",
     "connections served at once (log scale)"),
    ("tcp_connect", "tcp_connect (connect, 1 B, close)", "runtime"),
)
#: Spread of the runtimes' points around a shared x, as a share of the x range in octaves.
DODGE = 0.02


def _colors(frame: pd.DataFrame) -> dict[str, str]:
    runtimes = net.runtimes_of(frame)
    baseline = frame["against"].iloc[0]
    candidates = [rt for rt in runtimes if rt != baseline]
    colors = runtime_colors(baseline, candidates[0] if candidates else baseline, runtimes)
    return {rt: colors[rt] for rt in runtimes}  # the frame's order: candidates, then the baseline


def _empty(title: str, xlabel: str, ylabel: str, text: str, height: float = 3.0) -> Figure:
    fig = Figure(figsize=(9, height), layout="constrained")
    ax = fig.add_subplot()
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    note_axes(ax, text)
    ax.legend(handles=[Line2D([], [], color="#999999", label="no data")], loc="upper left")
    return fig


def _series(ax: Any, x: np.ndarray, y: np.ndarray, low: np.ndarray, high: np.ndarray, **style: Any) -> None:
    """A line with markers and, where the interval is known, error bars."""
    ax.plot(x, y, **style)
    ok = np.isfinite(y) & np.isfinite(low) & np.isfinite(high)
    if ok.any():
        yerr = np.vstack([np.clip(y[ok] - low[ok], 0, None), np.clip(high[ok] - y[ok], 0, None)])
        ax.errorbar(x[ok], y[ok], yerr=yerr, fmt="none", ecolor=style.get("color"), elinewidth=1, capsize=3,
                    alpha=0.8)


def _us(rows: pd.DataFrame, column: str) -> np.ndarray:
    return rows[column].to_numpy(dtype=float) / 1e3


def _dodge(index: int, count: int, values: pd.Series) -> float:
    """Shift in octaves of runtime `index` of `count` around a shared x (log 2 axes)."""
    octaves = max(float(np.log2(values.max() / values.min())), 1.0) if len(values) and values.min() > 0 else 1.0
    return (index - (count - 1) / 2) * DODGE * octaves


def _log_x(ax: Any, values: list[float], bytes_axis: bool) -> None:
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(values))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt_bytes(v) if bytes_axis else f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    margin = 2 ** 0.5
    ax.set_xlim(min(values) / margin, max(values) * margin)


def _swept_panel(ax: Any, rows: pd.DataFrame, colors: dict[str, str], bytes_axis: bool) -> None:
    """Median and p99 per runtime against the parameter (x = param value, log 2 axis)."""
    runtimes = [rt for rt in colors if rt in set(rows["runtime"])]
    for index, rt in enumerate(runtimes):
        mine = rows[rows["runtime"] == rt].sort_values("value")
        x = mine["value"].to_numpy(dtype=float) * 2 ** _dodge(index, len(runtimes), rows["value"])
        _series(ax, x, _us(mine, "median_ns_per_op"), _us(mine, "ci_low"), _us(mine, "ci_high"),
                color=colors[rt], marker="o", linestyle="-")
        _series(ax, x, _us(mine, "p99_ns_per_op"), _us(mine, "p99_ci_low"), _us(mine, "p99_ci_high"),
                color=colors[rt], marker="s", linestyle="--")
    _log_x(ax, sorted(float(v) for v in rows["value"].unique()), bytes_axis)


def _category_panel(ax: Any, rows: pd.DataFrame, colors: dict[str, str]) -> None:
    """Median and p99 per runtime side by side (a benchmark without a parameter)."""
    runtimes = [rt for rt in colors if rt in set(rows["runtime"])]
    for index, rt in enumerate(runtimes):
        mine = rows[rows["runtime"] == rt]
        for shift, (centre, low, high, marker) in ((-0.12, ("median_ns_per_op", "ci_low", "ci_high", "o")),
                                                   (0.12, ("p99_ns_per_op", "p99_ci_low", "p99_ci_high", "s"))):
            _series(ax, np.full(len(mine), index + shift), _us(mine, centre), _us(mine, low), _us(mine, high),
                    color=colors[rt], marker=marker, linestyle="none")
    ax.set_xticks(range(len(runtimes)))
    ax.set_xticklabels([schema.display_name(rt) for rt in runtimes])
    ax.set_xlim(-0.6, len(runtimes) - 0.4)
    ax.grid(axis="x", visible=False)


def _style_handles(frame: pd.DataFrame, colors: dict[str, str], confidence: float) -> list[Any]:
    handles = [Line2D([], [], color=c, linewidth=2, label=schema.display_name(rt)
                      + (" (baseline)" if rt == frame["against"].iloc[0] else "")) for rt, c in colors.items()]
    handles += [Line2D([], [], color="#555555", marker="o", linestyle="-", label=f"median ({confidence:.0%} CI)"),
                Line2D([], [], color="#555555", marker="s", linestyle="--",
                       label=f"p99 over iterations ({confidence:.0%} CI; upper end = max)")]
    return handles


def latency_plot(frame: pd.DataFrame, confidence: float) -> Figure:
    """Median and p99 time per round trip of every round-trip benchmark, all runtimes, log axes."""
    title = "Net: time per round trip, median and p99 with intervals (less is better)"
    rows = net.latency(frame)
    panels = [(b, t, x) for b, t, x in LATENCY_PANELS if (rows["benchmark"] == b).any()]
    if not panels:
        return _empty(title, "payload size / connections", "µs per round trip",
                      "no round-trip benchmarks (tcp_pingpong, tcp_echo_conns, tcp_connect) in this run")
    colors = _colors(frame)
    fig = Figure(figsize=(WIDTH_INCHES, 4.6), layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (benchmark, panel_title, xlabel) in zip(axes, panels):
        mine = rows[rows["benchmark"] == benchmark]
        if benchmark == "tcp_connect":
            _category_panel(ax, mine, colors)
            ax.set_ylabel("µs per connection (log scale)")
        else:
            _swept_panel(ax, mine, colors, bytes_axis=benchmark == "tcp_pingpong")
            ax.set_ylabel("µs per round trip (log scale)")
        ax.set_yscale("log")
        plain_log(ax.yaxis)
        ax.set_title(panel_title, fontsize=10)
        ax.set_xlabel(xlabel)
    handles = _style_handles(frame, colors, confidence)
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), frameon=False)
    fig.suptitle(title)
    return fig


def _ratio_series(ax: Any, rows: pd.DataFrame, color: str, shift: float) -> None:
    """Ratio baseline ÷ runtime with its interval, markers in the verdict colour."""
    x = rows["value"].to_numpy(dtype=float) * 2 ** shift
    ax.plot(x, rows["ratio"].to_numpy(dtype=float), color=color, linewidth=1.2, zorder=2)
    for xi, r in zip(x, rows.to_dict("records")):
        if not np.isfinite(r["ratio"]):
            continue
        hue = VERDICT_COLORS.get(r["verdict"] if isinstance(r["verdict"], str) else "", "#000000")
        if np.isfinite(r["ratio_ci_low"]) and np.isfinite(r["ratio_ci_high"]):
            ax.plot([xi, xi], [r["ratio_ci_low"], r["ratio_ci_high"]], color=hue, linewidth=2.2, zorder=3)
        ax.plot([xi], [r["ratio"]], marker="o", markersize=7, color=hue, markeredgecolor=color,
                markeredgewidth=1.5, zorder=4)


def conns_plot(frame: pd.DataFrame, tie_band: float, confidence: float) -> Figure:
    """tcp_echo_conns against the number of connections: time per round trip of every runtime
    (left), and the ratio baseline ÷ runtime with its interval and verdict per candidate (right)."""
    rows = net.conns(frame)
    title = "Net: scaling over connections (tcp_echo_conns)"
    if rows.empty:
        return _empty(title, "connections served at once", "µs per round trip",
                      "no tcp_echo_conns rows in this run")
    colors = _colors(frame)
    baseline = frame["against"].iloc[0]
    bn = schema.display_name(baseline)
    fig = Figure(figsize=(WIDTH_INCHES, 4.8), layout="constrained")
    time_ax, ratio_ax = fig.subplots(1, 2)
    _swept_panel(time_ax, rows, colors, bytes_axis=False)
    time_ax.set_yscale("log")
    plain_log(time_ax.yaxis)
    time_ax.set_title("time per round trip (all connections together)", fontsize=10)
    time_ax.set_ylabel("µs per round trip (log scale)")
    time_ax.set_xlabel("connections served at once (log scale)")
    candidates = [rt for rt in colors if rt != baseline and rt in set(rows["runtime"])]
    compared = rows[rows["runtime"].isin(candidates)]
    span = finite_span(list(compared[["ratio", "ratio_ci_low", "ratio_ci_high"]].to_numpy(dtype=float).ravel()))
    ratio_axis(ratio_ax, *(span or (0.5, 2.0)), tie_band, which="y")
    ratio_ax.axhspan(1 / (1 + tie_band), 1 + tie_band, color=BAND_COLOR, alpha=0.6, zorder=0)
    ratio_ax.axhline(1.0, color="#444444", linewidth=1, zorder=1)
    for index, rt in enumerate(candidates):
        _ratio_series(ratio_ax, compared[compared["runtime"] == rt].sort_values("value"), colors[rt],
                      _dodge(index, len(candidates), rows["value"]))
    _log_x(ratio_ax, sorted(float(v) for v in rows["value"].unique()), bytes_axis=False)
    ratio_ax.set_title(f"{bn} ÷ runtime per round trip, {confidence:.0%} intervals (> 1: runtime faster)", fontsize=10)
    ratio_ax.set_ylabel(f"{bn} ÷ runtime (×, log scale)")
    ratio_ax.set_xlabel("connections served at once (log scale)")
    if not candidates or span is None:
        note_axes(ratio_ax, f"no runtime compared with {bn}")
    handles = _style_handles(frame, colors, confidence) + verdict_handles() + [band_handle(tie_band)]
    fig.legend(handles=handles, loc="outside lower center", ncol=4, frameon=False)
    fig.suptitle(title)
    return fig


def throughput_plot(frame: pd.DataFrame, confidence: float) -> Figure:
    """tcp_stream: MiB/s of every runtime with its interval, one bar per runtime and chunk size."""
    rows = net.throughput(frame)
    title = "Net: tcp_stream throughput (more is better)"
    xlabel = "throughput (MiB/s = 2^20 bytes per second; bytes written, each also read back)"
    if rows.empty:
        return _empty(title, xlabel, "runtime", "no tcp_stream rows in this run")
    colors = _colors(frame)
    fig = Figure(figsize=(WIDTH_INCHES, 1.6 + 0.45 * len(rows)), layout="constrained")
    ax = fig.add_subplot()
    labels = []
    top = float(np.nanmax(rows[["mib_per_s", "mib_per_s_ci_high"]].to_numpy(dtype=float))) if len(rows) else 1.0
    for y, r in enumerate(rows.to_dict("records")):
        labels.append(f"{r['label']} — {schema.display_name(r['runtime'])}")
        value = r["mib_per_s"]
        if not np.isfinite(value):
            continue
        ax.barh(y, value, height=0.6, color=colors.get(r["runtime"], "#555555"), zorder=2)
        low, high = r["mib_per_s_ci_low"], r["mib_per_s_ci_high"]
        if np.isfinite(low) and np.isfinite(high):
            ax.errorbar([value], [y], xerr=[[value - low], [high - value]], fmt="none", ecolor="#222222",
                        elinewidth=1.2, capsize=4, zorder=3)
        ax.text(max(value, high if np.isfinite(high) else value) * 1.01, y, f" {fmt_mib_s(value)}", va="center",
                fontsize=8)
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels)
    ax.set_ylim(len(labels) - 0.4, -0.6)
    ax.set_xlim(0, top * 1.2 if np.isfinite(top) and top > 0 else 1)
    ax.grid(axis="y", visible=False)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("benchmark — runtime")
    ax.set_title(title)
    ax.legend(handles=[Line2D([], [], color="#222222", marker="|", linestyle="-",
                              label=f"{confidence:.0%} interval (from the interval of ns per byte)")],
              loc="lower right")
    return fig
