"""Figures of the echo page: batch latency against batch size (seed 004's view) and the
payload-size sweeps, avg with its interval and p99 per runtime (Comparison.echo)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from .. import schema
from ..compare import Comparison
from ..fmt import fmt_bytes
from .style import ROLE_COLORS, WIDTH_INCHES, note_axes, plain_log

ECHO_FAMILIES = (("echo_f64", "f64 (an 8-byte number)"), ("echo_string_1mib", "UTF-8 string"),
                 ("echo_bytes_1mib", "byte buffer"))


def has_echo(cmp: Comparison) -> bool:
    return not cmp.echo.empty


def _name(cmp: Comparison, role: str) -> str:
    return schema.display_name(cmp.candidate if role == "candidate" else cmp.baseline)


def _echo_rows(cmp: Comparison, benchmark: str) -> pd.DataFrame:
    echo = cmp.echo
    rows = echo[echo["benchmark"] == benchmark].copy()
    rows["value"] = [schema.param_sort_value(p) for p in rows["param"]]
    return rows.sort_values("value")


def _errorbar_series(ax: Any, x: np.ndarray, y: np.ndarray, low: np.ndarray, high: np.ndarray, **style: Any) -> None:
    yerr = np.vstack([np.clip(y - low, 0, None), np.clip(high - y, 0, None)])
    ok = np.isfinite(yerr).all(axis=0)
    ax.plot(x, y, **style)
    if ok.any():
        ax.errorbar(x[ok], y[ok], yerr=yerr[:, ok], fmt="none", ecolor=style.get("color"), elinewidth=1, capsize=3,
                    alpha=0.8)


def echo_batch_plot(cmp: Comparison, payload_bytes: int | None = None) -> Figure:
    """Seed-004 view: batch avg and p99 latency vs batch size n, one panel per payload kind."""
    families = [(name, text) for name, text in ECHO_FAMILIES if not _echo_rows(cmp, name).empty]
    fig = Figure(figsize=(WIDTH_INCHES, 4.4), layout="constrained")
    if not families:
        ax = fig.add_subplot()
        ax.set_title("Echo: batch latency vs batch size")
        ax.set_xlabel("batch size n (round trips per batch)")
        ax.set_ylabel("batch latency (µs)")
        note_axes(ax, "no echo batch benchmarks (echo_f64 / echo_string_1mib / echo_bytes_1mib) in this run")
        ax.legend(handles=[Line2D([], [], color="#999999", label="no data")], loc="upper left")
        return fig
    axes = fig.subplots(1, len(families), squeeze=False)[0]
    roles_seen: list[str] = []
    for ax, (name, text) in zip(axes, families):
        rows = _echo_rows(cmp, name)
        for role in ("candidate", "baseline"):
            mine = rows[rows["role"] == role]
            if mine.empty:
                continue
            roles_seen.append(role)
            x = mine["value"].to_numpy(dtype=float)
            color = ROLE_COLORS[role]
            _errorbar_series(ax, x, mine["avg_ns"].to_numpy(dtype=float) / 1e3, mine["avg_ns_ci_low"].to_numpy(dtype=float) / 1e3,
                             mine["avg_ns_ci_high"].to_numpy(dtype=float) / 1e3, color=color, marker="o", linestyle="-")
            _errorbar_series(ax, x, mine["p99_ns"].to_numpy(dtype=float) / 1e3, mine["p99_ns_ci_low"].to_numpy(dtype=float) / 1e3,
                             mine["p99_ns_ci_high"].to_numpy(dtype=float) / 1e3, color=color, marker="s", linestyle="--")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ns = sorted(rows["value"].unique())
        ax.xaxis.set_major_locator(FixedLocator(ns))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        plain_log(ax.yaxis)
        size = "" if name == "echo_f64" or not payload_bytes else f" of {fmt_bytes(payload_bytes)}"
        ax.set_title(f"{name}: {text}{size}", fontsize=10)
        ax.set_xlabel("batch size n (round trips per batch, log scale)")
        ax.set_ylabel("batch latency (µs per whole batch, log scale)")
    handles = []
    for role in dict.fromkeys(roles_seen):
        handles.append(Line2D([], [], color=ROLE_COLORS[role], marker="o", linestyle="-",
                              label=f"{_name(cmp, role)} avg (with {cmp.confidence:.0%} CI)"))
        handles.append(Line2D([], [], color=ROLE_COLORS[role], marker="s", linestyle="--",
                              label=f"{_name(cmp, role)} p99 (with {cmp.confidence:.0%} CI)"))
    fig.legend(handles=handles, loc="outside lower center", ncol=max(1, len(handles)), frameon=False)
    fig.suptitle("Echo: average and 99th-percentile latency of a whole batch vs batch size (less is better)")
    return fig


def echo_sweep_plot(cmp: Comparison, benchmark: str = "echo_bytes_sweep", batch_n: int | None = None,
                    reference: str | None = None) -> Figure:
    """Payload size sweep on log-log axes: avg (CI band) and p99 per runtime vs payload size.

    `reference`: another sweep drawn thin and dotted for comparison (the copy path under the
    shared-buffer sweep).
    """
    fig = Figure(figsize=(WIDTH_INCHES, 5.0), layout="constrained")
    ax = fig.add_subplot()
    rows = _echo_rows(cmp, benchmark)
    what = {"echo_bytes_sweep": "byte buffer cloned on send and on reply",
            "echo_shared_sweep": "shared reference-counted buffer (only the reference travels)"}.get(benchmark, benchmark)
    batch = f", batch n = {batch_n}" if batch_n else ""
    ax.set_title(f"{benchmark}: {what}{batch}\nbatch latency vs payload size (less is better)")
    ax.set_xlabel("payload size (bytes, log scale)")
    ax.set_ylabel("batch latency (µs per whole batch, log scale)")
    if rows.empty:
        note_axes(ax, f"no {benchmark} rows in this run")
        ax.legend(handles=[Line2D([], [], color="#999999", label="no data")], loc="upper left")
        return fig
    for role in ("candidate", "baseline"):
        mine = rows[rows["role"] == role]
        if mine.empty:
            continue
        color, name = ROLE_COLORS[role], _name(cmp, role)
        x = mine["value"].to_numpy(dtype=float)
        avg = mine["avg_ns"].to_numpy(dtype=float) / 1e3
        ax.plot(x, avg, color=color, marker="o", label=f"{name} avg")
        low, high = mine["avg_ns_ci_low"].to_numpy(dtype=float) / 1e3, mine["avg_ns_ci_high"].to_numpy(dtype=float) / 1e3
        if np.isfinite(low).all() and np.isfinite(high).all():
            ax.fill_between(x, low, high, color=color, alpha=0.18, label=f"{name} avg {cmp.confidence:.0%} CI")
        ax.plot(x, mine["p99_ns"].to_numpy(dtype=float) / 1e3, color=color, marker="s", linestyle="--",
                label=f"{name} p99")
    if reference:
        ref = _echo_rows(cmp, reference)
        ref = ref[ref["value"].between(rows["value"].min(), rows["value"].max())]
        for role in ("candidate", "baseline"):
            mine = ref[ref["role"] == role]
            if not mine.empty:
                ax.plot(mine["value"], mine["avg_ns"] / 1e3, color=ROLE_COLORS[role], linestyle=":", linewidth=1.2,
                        label=f"{_name(cmp, role)} avg, {reference} (copy path)")
    sizes = sorted(rows["value"].unique())
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_locator(FixedLocator(sizes))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt_bytes(v)))
    ax.xaxis.set_minor_formatter(NullFormatter())
    plain_log(ax.yaxis)
    for label in ax.get_xticklabels():
        label.set_rotation(45)
    # Outside the axes: inside, the legend would cover the small-payload points.
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, frameon=False)
    return fig
