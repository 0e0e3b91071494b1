"""The look every figure shares: colours, ratio axes, rows grouped like the tables, notes.

Conventions of every figure (figures/*.py)
- a title (figure suptitle for grids, axes title for single plots), axis labels with units,
  and a legend (figure-level for grids);
- the candidate (ampere) is blue, the baseline (Tokio) orange, further runtimes of the run
  (variants such as ampere.nospin) purple, green, brown; verdict colours are green win, red
  loss, grey tie, amber inconclusive (candidate's side);
- ratios are baseline ÷ candidate (> 1: the candidate is better) on a log axis, with the tie
  band shaded, as in the `compare` table;
- a run with only one runtime, or without the rows a figure needs, gives a figure that says
  so in words instead of failing.
Figures are matplotlib `Figure` objects (not pyplot), so they are shown once, when a notebook
displays them, and never leak.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

from .. import schema
from ..tables import VERDICT_COLORS, groups

ROLE_COLORS = {"candidate": "#1f77b4", "baseline": "#ff7f0e"}
OTHER_COLORS = ("#9467bd", "#2ca02c", "#8c564b", "#e377c2", "#17becf", "#7f7f7f")
VERDICT_WORDS = {"win": "win (candidate better)", "loss": "loss (candidate worse)",
                 "tie": "tie (inside the band)", "inconclusive": "inconclusive (CI crosses a band edge)"}
NICE_RATIOS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200,
               500, 1000)
#: Ticks of a ratio axis that spans less than two NICE_RATIOS steps.
FINE_RATIOS = (0.25, 0.33, 0.5, 0.67, 0.8, 1, 1.25, 1.5, 2, 3, 4)
#: Label of the twin axes that only carries right-hand row texts (not a plot of its own).
TWIN_LABEL = "row-texts"
PANEL_INCHES = (3.4, 2.6)
#: A grid is at least this wide, so that its title and legend fit above and below few panels.
GRID_MIN_WIDTH_INCHES = 9.0
GRID_COLUMNS = 4
#: Tick intervals per axis of a small multiple (MaxNLocator's nbins).
GRID_TICKS = 4
WIDTH_INCHES = 13.0
ROW_INCHES = 0.26
BAND_COLOR = "#cccccc"


def runtime_colors(baseline: str, candidate: str, runtimes: Sequence[str]) -> dict[str, str]:
    """A colour per runtime: candidate blue, baseline orange, the others in OTHER_COLORS order."""
    colors = {candidate: ROLE_COLORS["candidate"], baseline: ROLE_COLORS["baseline"]}
    others = [rt for rt in runtimes if rt not in colors]
    colors.update({rt: OTHER_COLORS[i % len(OTHER_COLORS)] for i, rt in enumerate(others)})
    return colors


def ratio_axis(ax: Any, low: float, high: float, tie_band: float, which: str = "x") -> None:
    """Log scale for ratios on axis `which` with readable fixed ticks (0.5×, 1×, 2×) covering [low, high]."""
    lo = min(low, 1 / (1 + tie_band)) / 1.25
    hi = max(high, 1 + tie_band) * 1.25
    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    (ax.set_xlim if which == "x" else ax.set_ylim)(lo, hi)
    ticks = [t for t in NICE_RATIOS if lo <= t <= hi]
    if len(ticks) < 3:
        ticks = [t for t in FINE_RATIOS if lo <= t <= hi]
    if len(ticks) < 3:
        ticks = sorted(set(ticks) | {round(1 / (1 + tie_band), 3), round(1 + tie_band, 3)})
    axis.set_major_locator(FixedLocator(ticks))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))
    axis.set_minor_formatter(NullFormatter())


def finite_span(values: Sequence[float]) -> tuple[float, float] | None:
    """(min, max) of the positive finite values, None if there is none."""
    ok = [float(v) for v in values if v is not None and not pd.isna(v) and math.isfinite(float(v)) and float(v) > 0]
    return (min(ok), max(ok)) if ok else None


def nice_label(value: float, _pos: Any = None) -> str:
    """Tick text for log axes: plain numbers (no 10^x), only at 1, 2 and 5 times a power of ten."""
    if not (value > 0 and math.isfinite(value)):
        return ""
    mantissa = value / 10 ** math.floor(math.log10(value) + 1e-9)
    return f"{value:g}" if any(abs(mantissa - m) < 1e-6 for m in (1, 2, 5)) else ""


def plain_log(axis: Any) -> None:
    axis.set_major_formatter(FuncFormatter(nice_label))
    axis.set_minor_formatter(FuncFormatter(nice_label))


def note_axes(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=11, color="#555555",
            wrap=True)


def workers_axis(ax: Any, workers: list[int]) -> None:
    """A log2 x axis of worker counts, ticked at the counts that ran."""
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(workers))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("worker threads (log scale)")


def empty_workers_figure(title: str, ylabel: str, note: str) -> Figure:
    """A worker-sweep figure without data: its axes, `note` in words and a "no data" legend."""
    fig = Figure(figsize=(8, 3), layout="constrained")
    ax = fig.add_subplot()
    ax.set_title(title)
    ax.set_xlabel("worker threads")
    ax.set_ylabel(ylabel)
    note_axes(ax, note)
    ax.legend(handles=[Line2D([], [], color="#999999", label="no data")], loc="upper left")
    return fig

def row_layout(frame: pd.DataFrame) -> tuple[list[tuple[float, str, bool]], list[tuple[float, dict]]]:
    """Y positions top-down: group title rows (bold, no data) and benchmark rows."""
    labels: list[tuple[float, str, bool]] = []
    rows: list[tuple[float, dict]] = []
    y = 0.0
    for title, rows_of_group in groups(frame):
        labels.append((y, title, True))
        y += 1
        for record in rows_of_group.to_dict("records"):
            labels.append((y, record["label"], False))
            rows.append((y, record))
            y += 1
        y += 0.4
    return labels, rows


def apply_row_labels(ax: Any, labels: list[tuple[float, str, bool]]) -> None:
    ax.set_yticks([y for y, _, _ in labels])
    ax.set_yticklabels([text for _, text, _ in labels])
    for tick, (_, _, bold) in zip(ax.get_yticklabels(), labels):
        if bold:
            tick.set_fontweight("bold")
    ax.yaxis.set_minor_locator(NullLocator())
    if labels:
        ax.set_ylim(labels[-1][0] + 0.8, labels[0][0] - 0.8)
    ax.grid(axis="y", visible=False)
    for y, _, bold in labels:
        if bold and y > 0:
            ax.axhline(y - 0.7, color="#bbbbbb", linewidth=0.8)


def right_labels(ax: Any, labels: list[tuple[float, str, str]], title: str = "ratio [CI] and verdict") -> None:
    """Text per row at the right edge (a twin y axis, so that the layout makes room for it)."""
    twin = ax.twinx()
    twin.set_label(TWIN_LABEL)
    twin.set_ylim(ax.get_ylim())
    twin.set_yticks([y for y, _, _ in labels])
    twin.set_yticklabels([text for _, text, _ in labels], fontsize=8)
    for tick, (_, _, color) in zip(twin.get_yticklabels(), labels):
        tick.set_color(color)
    twin.tick_params(axis="y", length=0)
    twin.grid(False)
    twin.set_ylabel(title)


def verdict_handles() -> list[Any]:
    return [Line2D([], [], color=VERDICT_COLORS[v], marker="o", linewidth=2.2, label=VERDICT_WORDS[v])
            for v in ("win", "loss", "tie", "inconclusive")]


def band_handle(tie_band: float) -> Patch:
    return Patch(color=BAND_COLOR, alpha=0.6,
                 label=f"tie band [{1 / (1 + tie_band):.3f}×, {1 + tie_band:.3f}×] (±{tie_band:.0%})")


def grid(n_panels: int, title: str) -> tuple[Figure, list[Any]]:
    """A figure of small multiples, GRID_COLUMNS wide, with unused panels hidden."""
    cols = min(GRID_COLUMNS, max(1, n_panels))
    nrows = max(1, math.ceil(n_panels / cols))
    width = max(PANEL_INCHES[0] * cols + 0.6, GRID_MIN_WIDTH_INCHES)
    fig = Figure(figsize=(width, PANEL_INCHES[1] * nrows + 1.2), layout="constrained")
    axes = fig.subplots(nrows, cols, squeeze=False).ravel().tolist()
    for ax in axes[n_panels:]:
        ax.set_visible(False)
    for ax in axes[:n_panels]:
        ax.locator_params(nbins=GRID_TICKS)  # fewer tick labels: text layout is most of a grid's drawing time
    fig.suptitle(title)
    return fig, axes[:n_panels]


def line_legend(fig: Figure, colors: dict[str, str], extra: Sequence[Any] = ()) -> None:
    """Figure-level legend: one line per runtime (display names), then `extra` handles."""
    handles = [Line2D([], [], color=c, linewidth=2, label=schema.display_name(rt)) for rt, c in colors.items()]
    handles += list(extra)
    fig.legend(handles=handles, loc="outside lower center", ncol=max(1, min(len(handles), 6)), frameon=False)
