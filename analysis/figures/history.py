"""Figure of the history page: each benchmark's ratio per run, oldest left, regressions marked."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from .. import schema
from ..history import History
from ..tables import groups
from .style import BAND_COLOR, NICE_RATIOS, WIDTH_INCHES, note_axes


def history_plot(history: History, baseline: str, candidate: str, tie_band: float, confidence: float) -> Figure:
    """Ratio per benchmark over the runs (oldest left), one panel per group; regressions marked."""
    bn, cn = schema.display_name(baseline), schema.display_name(candidate)
    ratios = history.ratios
    compared = ratios[ratios["compared"].astype(bool)] if not ratios.empty else ratios
    grouped = groups(compared.drop_duplicates(subset=["suite", "tier", "benchmark", "param", "workers"])) if not compared.empty else []
    n = max(1, len(grouped))
    fig = Figure(figsize=(WIDTH_INCHES, 3.4 * n + 1.2), layout="constrained")
    axes = fig.subplots(n, 1, squeeze=False)[:, 0]
    fig.suptitle(f"History: {bn} ÷ {cn} median ns/op ratio per run with {confidence:.0%} CIs (> 1: {cn} faster)")
    positions = history.runs["position"].tolist()
    labels = history.runs["run_label"].tolist()
    band_lo, band_hi = 1 / (1 + tie_band), 1 + tie_band
    if not grouped:
        ax = axes[0]
        ax.set_xlabel("run (start date, git commit)")
        ax.set_ylabel(f"{bn} ÷ {cn} (×, log scale)")
        ax.set_title("no compared benchmarks")
        note_axes(ax, "no complete run has both runtimes for any benchmark")
        ax.legend(handles=[Patch(color=BAND_COLOR, label="tie band")], loc="upper left")
        return fig
    regressed = {(r["position"], r["label"]) for r in history.regressions.to_dict("records")}
    for ax, (title, keys) in zip(axes, grouped):
        ax.axhspan(band_lo, band_hi, color=BAND_COLOR, alpha=0.6, zorder=0, label=f"tie band ±{tie_band:.0%}")
        ax.axhline(1.0, color="#444444", linewidth=1, zorder=1)
        spread = 0.25 / max(1, len(keys))
        finite_values = []
        flagged_any = False
        for i, key in enumerate(keys.to_dict("records")):
            mine = ratios[ratios["label"] == key["label"]].sort_values("position")
            mine = mine[mine["compared"].astype(bool)]
            if mine.empty:
                continue
            x = mine["position"].to_numpy(dtype=float) + (i - (len(keys) - 1) / 2) * spread
            y = mine["ratio"].to_numpy(dtype=float)
            low, high = mine["ratio_ci_low"].to_numpy(dtype=float), mine["ratio_ci_high"].to_numpy(dtype=float)
            line = ax.plot(x, y, marker="o", markersize=5, linewidth=1.2, label=key["label"])[0]
            ok = np.isfinite(low) & np.isfinite(high) & np.isfinite(y)
            if ok.any():
                ax.errorbar(x[ok], y[ok], yerr=np.vstack([y[ok] - low[ok], high[ok] - y[ok]]), fmt="none",
                            ecolor=line.get_color(), elinewidth=1, capsize=2, alpha=0.8)
            finite_values += [v for v in np.concatenate([low, high, y]) if np.isfinite(v) and v > 0]
            for xp, yp, pos in zip(x, y, mine["position"]):
                if (pos, key["label"]) in regressed and np.isfinite(yp):
                    ax.plot([xp], [yp], marker="o", markersize=13, markerfacecolor="none", markeredgecolor="#d62728",
                            markeredgewidth=2, zorder=5)
                    flagged_any = True
        ax.set_yscale("log")
        if finite_values:
            lo, hi = min(min(finite_values), band_lo) / 1.2, max(max(finite_values), band_hi) * 1.2
            ax.set_ylim(lo, hi)
            ticks = [t for t in NICE_RATIOS if lo <= t <= hi] or [1]
            ax.yaxis.set_major_locator(FixedLocator(ticks))
        else:
            note_axes(ax, "not compared in any run (one runtime only)")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xticks(positions)
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_xlim(min(positions) - 0.6, max(positions) + 0.6)
        ax.set_title(title)
        ax.set_xlabel("run (start date UTC, git commit; oldest left)")
        ax.set_ylabel(f"{bn} ÷ {cn} (×, log scale)")
        handles, _ = ax.get_legend_handles_labels()
        if flagged_any:
            handles.append(Line2D([], [], marker="o", markersize=11, markerfacecolor="none", markeredgecolor="#d62728",
                                  markeredgewidth=2, linestyle="none",
                                  label=f"{cn} slower than in the previous run (diff)"))
        ax.legend(handles=handles, loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, frameon=False)
    return fig
