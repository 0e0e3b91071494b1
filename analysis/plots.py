"""Figures, tables and sentences for the notebooks (notebooks/*.ipynb) and the report index.

Nothing here computes a statistic: every number comes from `analysis` (load_run, compare,
diff_runs, machine_table, ...). This module only arranges those numbers for a reader who has
never seen the code: figures (matplotlib `Figure` objects, not pyplot, so they are shown once,
when the notebook displays them, and never leak), display tables (pandas frames of formatted
strings, the same formatting as the CLI tables) and sentences in words.

Conventions of every figure
- a title (figure suptitle for grids, axes title for single plots), axis labels with units,
  and a legend (figure-level for grids);
- the candidate (ampere) is always blue and the baseline (Tokio) always orange; verdict
  colours are green win, red loss, grey tie, amber inconclusive (candidate's side);
- ratios are baseline ÷ candidate (> 1: the candidate is faster) on a log axis, with the tie
  band shaded, as in the `compare` table;
- a run with only one runtime, or without echo rows, gives a figure that says so in words
  instead of failing.

Rows are grouped like the tables: Tier 0 controls first, tiers 1-4, then the echo suite (one
group per echo benchmark family, so that a group holds comparable rows).
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

from . import schema
from .render import fmt_amount, fmt_ns, fmt_ratio, fmt_ratio_ci

if TYPE_CHECKING:
    from .compare import Comparison
    from .load import Run

display_name = schema.display_name  # the notebooks' one name for a runtime ("Tokio", "ampere")

ROLE_COLORS = {"candidate": "#1f77b4", "baseline": "#ff7f0e"}
VERDICT_COLORS = {"win": "#2ca02c", "loss": "#d62728", "tie": "#7f7f7f", "inconclusive": "#e6a700"}
VERDICT_WORDS = {"win": "win (candidate faster)", "loss": "loss (candidate slower)",
                 "tie": "tie (inside the band)", "inconclusive": "inconclusive (CI crosses a band edge)"}
INVOCATION_STYLES = ("-", "--", ":", "-.")
NICE_RATIOS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200,
               500, 1000)
GRID_COLUMNS = 4
#: Label of the twin axes that only carries right-hand row texts (not a plot of its own).
TWIN_LABEL = "row-texts"
PANEL_INCHES = (3.4, 2.6)
WIDTH_INCHES = 13.0
ROW_INCHES = 0.26
ECHO_FAMILIES = (("echo_f64", "f64 (an 8-byte number)"), ("echo_string_1mib", "UTF-8 string"),
                 ("echo_bytes_1mib", "byte buffer"))


# -- notebook set-up --------------------------------------------------------------------------

def repo_root() -> Path:
    return Path(__file__).resolve().parent.parent


def notebook_data_dir(data_dir: str | os.PathLike[str]) -> Path:
    """The data folder a notebook parameter names, as an absolute path.

    Absolute paths are kept. A relative path is taken from the current directory when it exists
    there, else from the repository root: `make lab` starts kernels in notebooks/, papermill
    in the folder the report command chooses, and both must find `data`.
    """
    path = Path(data_dir)
    if path.is_absolute():
        return path
    if path.exists():
        return path.resolve()
    return (repo_root() / path).resolve()


def setup_matplotlib() -> None:
    """One look for every notebook figure (sizes readable in the HTML report).

    In IPython it also turns on the inline backend, which registers the PNG display of
    `Figure` objects: without it a figure would be shown as its text repr.
    """
    import matplotlib

    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with the notebook dependencies
        get_ipython = None  # type: ignore[assignment]
    shell = get_ipython() if get_ipython else None
    if shell is not None and hasattr(shell, "run_line_magic"):
        shell.run_line_magic("matplotlib", "inline")
        shell.run_line_magic("config", "InlineBackend.figure_formats = ['png']")
    matplotlib.rcParams.update({
        "figure.dpi": 100, "savefig.dpi": 100, "font.size": 10, "axes.titlesize": 11,
        "axes.titleweight": "bold", "figure.titlesize": 13, "figure.titleweight": "bold",
        "axes.grid": True, "grid.alpha": 0.3, "legend.fontsize": 9, "legend.framealpha": 0.9,
    })


def show_markdown(text: str) -> None:
    """Display markdown in a notebook (a plain print outside IPython)."""
    try:
        from IPython.display import Markdown, display
    except ImportError:  # pragma: no cover - IPython is a dependency of the notebooks
        print(text)
        return
    display(Markdown(text))


@dataclass
class Notes:
    """Warnings captured by `notes()`: analysis warnings on stderr and Python warnings."""

    lines: list[str] = field(default_factory=list)

    def markdown(self) -> str:
        if not self.lines:
            return ""
        return "**Notes from the analysis:**\n\n" + "\n".join(f"- {md_escape(line)}" for line in self.lines)


@contextlib.contextmanager
def notes(show: bool = True) -> Iterator[Notes]:
    """Capture what the analysis writes on stderr (`warning: ...` lines) and Python warnings.

    A report must not contain stderr output (the browser test treats it as an error), yet a
    warning must not be hidden either: the captured lines are displayed as a "Notes" list.
    """
    captured = Notes()
    buffer = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stderr(buffer):
        warnings.simplefilter("always")
        try:
            yield captured
        finally:
            for line in buffer.getvalue().splitlines():
                if line.strip():
                    captured.lines.append(line.strip().removeprefix("warning: "))
            for item in caught:
                captured.lines.append(f"{item.category.__name__}: {item.message}")
    if show and captured.lines:
        show_markdown(captured.markdown())


def show_warnings_as_notes() -> None:
    """Show Python warnings (matplotlib, pandas) as visible notes in the cell, not on stderr.

    Warnings stay visible to the reader; stderr stays empty, so the report's browser test can
    treat any stderr output as an error.
    """
    def showwarning(message: Any, category: type, filename: str, lineno: int, file: Any = None,
                    line: Any = None) -> None:
        show_markdown(f"**Note:** {category.__name__}: {md_escape(message)}")

    warnings.showwarning = showwarning


def md_escape(text: Any) -> str:
    """Escape the characters markdown would interpret in table cells and lists."""
    out = str(text)
    for char in ("\\", "|", "*", "_", "`", "<", ">", "[", "]"):
        out = out.replace(char, "\\" + char)
    return out


# -- words ------------------------------------------------------------------------------------

def _finite(value: Any) -> bool:
    try:
        return value is not None and math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def ratio_words(ratio: float, low: float, high: float, candidate: str, baseline: str) -> tuple[str, float, float]:
    """('ampere is 1.80× faster than Tokio', low, high) with the interval turned the same way.

    A ratio below 1 is read as "slower" by 1/ratio, and its interval as [1/high, 1/low].
    """
    cn, bn = schema.display_name(candidate), schema.display_name(baseline)
    if not _finite(ratio) or ratio <= 0:
        return f"there is no ratio between {cn} and {bn}", math.nan, math.nan
    if ratio >= 1:
        return f"{cn} is {ratio:.2f}× faster than {bn}", low, high
    flip = lambda v: 1 / v if _finite(v) and v > 0 else math.nan  # noqa: E731
    return f"{cn} is {1 / ratio:.2f}× slower than {bn}", flip(high), flip(low)


def geomean_sentence(part: dict[str, Any], candidate: str, baseline: str, confidence: float,
                     scope: str = "") -> str:
    """One sentence on the geometric mean ratio of a summary scope (see analysis.summary)."""
    n = int(part.get("geomean_n") or 0)
    ratio = part.get("geomean_ratio")
    low, high = (part.get("geomean_ratio_ci") or [math.nan, math.nan])[:2]
    where = f" {scope}" if scope else ""
    if n == 0 or not _finite(ratio):
        return f"No benchmark{where} was compared, so there is no geometric mean ratio."
    text, lo, hi = ratio_words(ratio, low, high, candidate, baseline)
    plural = "benchmark" if n == 1 else "benchmarks"
    sentence = f"{text} on the geometric mean of {n} {plural}{where}"
    if _finite(lo) and _finite(hi):
        sentence += f" ({confidence:.0%} CI {min(lo, hi):.2f}–{max(lo, hi):.2f}×)"
        if _finite(low) and _finite(high) and low <= 1 <= high:
            sentence += "; the interval includes 1×, so the overall difference is not established"
    return sentence + "."


def counts_sentence(part: dict[str, Any], candidate: str, baseline: str) -> str:
    counts = part.get("counts", {})
    k = int(part.get("n_compared") or 0)
    total = int(part.get("n_benchmarks") or 0)
    cn, bn = schema.display_name(candidate), schema.display_name(baseline)
    if k == 0:
        return f"None of the {total} benchmarks could be compared (a runtime has no data for them)."
    text = (f"Of {k} compared benchmarks, {cn} wins {counts.get('win', 0)}, {bn} wins {counts.get('loss', 0)}, "
            f"{counts.get('tie', 0)} are ties and {counts.get('inconclusive', 0)} are inconclusive")
    if total > k:
        text += f"; {total - k} more have data for only one runtime and are not compared"
    return text + "."


def controls_sentence(controls: dict[str, Any]) -> str:
    if not controls:
        return "The run has no Tier 0 control benchmarks to check the two harnesses against each other."
    listed = ", ".join(f"{name} {verdict or 'not compared'}" for name, verdict in controls.items())
    if all(v == "tie" for v in controls.values()):
        return f"Tier 0 controls (identical code on both sides) all tie ({listed}): the two harnesses agree."
    if any(v in ("win", "loss") for v in controls.values()):
        return (f"Tier 0 controls (identical code on both sides) are not all ties ({listed}): the two harnesses "
                "differ (timer, loop overhead, build flags), so treat every other row with suspicion.")
    return (f"Tier 0 controls (identical code on both sides) are not all shown to tie ({listed}): their intervals "
            "are too wide for the tie band; more invocations or iterations are needed to confirm the harnesses agree.")


def headline_sentences(cmp: "Comparison") -> list[str]:
    """The overview's headline in words: counts, geometric mean with CI, controls."""
    s = cmp.summary
    b, c = cmp.baseline, cmp.candidate
    if not cmp.compared:
        present = sorted(set(cmp.runtimes["runtime"])) if not cmp.runtimes.empty else []
        who = " and ".join(schema.display_name(r) for r in present) or "no runtime"
        return [f"This run has data for {who} only: nothing to compare, the pages describe it alone."]
    lines = [counts_sentence(s, c, b) + " (Tier 0 controls are a harness check and are not counted.)",
             geomean_sentence(s, c, b, cmp.confidence)]
    with_ratios = {k: v for k, v in s.get("by_suite", {}).items() if v.get("geomean_n")}
    for suite, part in with_ratios.items():
        if len(with_ratios) > 1:
            scope = "in the micro suite (tiers 1–4)" if suite == "micro" else "in the echo suite (per-op times of whole batches)"
            lines.append(geomean_sentence(part, c, b, cmp.confidence, scope))
    lines.append(controls_sentence(s.get("controls", {})))
    return lines


def _cores_and_workers(run: "Run") -> tuple[int | None, int | None]:
    cores = [m.get("machine", {}).get("logical_cores") for m in run.meta.values() if isinstance(m, dict)]
    cores = [c for c in cores if isinstance(c, int)]
    workers = run.constants.get("num_workers")
    return (min(cores) if cores else None), (workers if isinstance(workers, int) else None)


def machine_sentences(run: "Run") -> list[str]:
    """Machine, toolchain and the oversubscription warning of BENCHMARKS.md, in words."""
    lines = []
    meta = next((m for m in run.meta.values() if isinstance(m, dict)), {})
    machine = meta.get("machine") or {}
    if machine:
        memory = machine.get("memory_bytes")
        mem = f", {memory / 2**30:.1f} GiB memory" if isinstance(memory, (int, float)) else ""
        lines.append(f"Machine: {machine.get('cpu_model', 'unknown CPU')}, {machine.get('logical_cores', '?')} logical "
                     f"cores{mem}, {machine.get('os', 'unknown OS')}, kernel {machine.get('kernel', '?')}.")
    else:
        lines.append("Machine: unknown (no meta.json in the run).")
    for rt in run.runtimes:
        m = run.meta.get(rt)
        if not m:
            lines.append(f"{schema.display_name(rt)}: no meta.json.")
            continue
        extra = f", Tokio {m['tokio_version']}" if m.get("tokio_version") else ""
        lines.append(f"{schema.display_name(rt)} {m.get('runtime_version', '?')}: {m.get('compiler', '?')} "
                     f"{m.get('compiler_version', '?')}{extra}, build {m.get('build_mode', '?')}, "
                     f"allocator {m.get('allocator', '?')}.")
    cores, workers = _cores_and_workers(run)
    if cores is not None and workers is not None:
        if cores < workers:
            lines.append(f"The machine has {cores} logical cores but the runtimes use num_workers = {workers}: "
                         "Tier 3–4 oversubscribe the CPU and their timings may be bimodal (read them with care).")
        else:
            lines.append(f"The machine has {cores} logical cores for num_workers = {workers}: no oversubscription.")
    info = run.info
    git = info.get("git") or {}
    commit = str(git.get("commit") or "unknown")[:10] + (" (uncommitted changes)" if git.get("dirty") else "")
    lines.append(f"Run {run.run_id}: profile {info.get('profile', '?')}, suites {', '.join(info.get('suites', []))}, "
                 f"{info.get('invocations', '?')} invocations per runtime, started {info.get('started_utc', '?')}, "
                 f"ended {info.get('ended_utc', '?')}, git commit {commit}.")
    return lines


# -- tables -----------------------------------------------------------------------------------

def tier_tables(cmp: "Comparison") -> list[tuple[str, pd.DataFrame]]:
    """The per-tier tables of the CLI (render.comparison_rows), one frame per group."""
    from .render import comparison_rows

    header, rows = comparison_rows(cmp, color=False)
    tables: list[tuple[str, pd.DataFrame]] = []
    title, current = None, []
    for row in [*rows, "__end__"]:
        if isinstance(row, str):
            if title is not None:
                tables.append((title, pd.DataFrame(current, columns=header)))
            title, current = row, []
        else:
            current.append(list(row))
    return tables


def style_verdicts(frame: pd.DataFrame, column: str = "Verdict") -> Any:
    """A Styler that colours the verdict column (HTML in the notebook and the report)."""
    def colour(value: Any) -> str:
        hue = VERDICT_COLORS.get(str(value))
        return f"color: {hue}; font-weight: bold" if hue else ""

    styler = frame.style.hide(axis="index")
    if column in frame.columns:
        styler = styler.map(colour, subset=[column])
    return styler


def diagnostics_table(cmp: "Comparison") -> pd.DataFrame:
    """Diagnostics as a readable table: level, where, runtime, message."""
    diags = cmp.diagnostics
    if diags.empty:
        return pd.DataFrame(columns=["Level", "Where", "Runtime", "Message"])
    where = [schema.bench_label(b, p) if isinstance(b, str) else "whole run"
             for b, p in zip(diags["benchmark"], diags["param"])]
    runtime = [schema.display_name(r) if isinstance(r, str) else "both" for r in diags["runtime"]]
    return pd.DataFrame({"Level": diags["level"], "Where": where, "Runtime": runtime, "Message": diags["message"]})


def fairness_display(frame: pd.DataFrame) -> pd.DataFrame:
    """The fairness table with readable column names."""
    names = {"benchmark": "Benchmark", "ampere_timed": "Timed on the ampere side",
             "tokio_timed": "Timed on the Tokio side", "untimed_setup": "Created outside the timed region",
             "differences": "Differences that remain"}
    return frame.rename(columns=names)


def machine_display(table: pd.DataFrame) -> pd.DataFrame:
    """machine_table() with display names and 'same' as yes/no."""
    out = table.copy()
    out = out.rename(columns={rt: schema.display_name(rt) for rt in out.columns if rt != "same"})
    if "same" in out:
        out["same"] = ["yes" if v else "no" for v in out["same"]]
        out = out.rename(columns={"same": "same on both"})
    return out.astype(str).replace({"None": "—", "nan": "—"})


def echo_ratio_table(cmp: "Comparison") -> pd.DataFrame:
    """Seed-004 style table: per echo row, avg and p99 of both runtimes and the ratios."""
    b, c = cmp.baseline, cmp.candidate
    bn, cn = schema.display_name(b), schema.display_name(c)
    bench = cmp.benchmarks[cmp.benchmarks["suite"] == "echo"]
    columns = ["Benchmark", "Param", f"{cn} avg [CI]", f"{bn} avg [CI]", f"{cn} p99 [CI]", f"{bn} p99 [CI]",
               f"avg ratio {bn}/{cn} [CI]", f"p99 ratio {bn}/{cn}", "Verdict (median)"]
    rows = []
    for r in bench.to_dict("records"):
        def side(role: str, stat: str) -> str:
            value = r[f"{role}_{stat}_ns"]
            if not _finite(value):
                return "—"
            return f"{fmt_ns(value)} [{fmt_ns(r[f'{role}_{stat}_ns_ci_low'])}, {fmt_ns(r[f'{role}_{stat}_ns_ci_high'])}]"
        verdict = r["verdict"] if isinstance(r["verdict"], str) else "n/a"
        rows.append([r["benchmark"], r["param"], side("candidate", "avg"), side("baseline", "avg"),
                     side("candidate", "p99"), side("baseline", "p99"),
                     fmt_ratio_ci(r["avg_ratio"], r["avg_ratio_ci_low"], r["avg_ratio_ci_high"]),
                     fmt_ratio(r["p99_ratio"]) + ("x" if _finite(r["p99_ratio"]) else ""), verdict])
    return pd.DataFrame(rows, columns=columns)


# -- grouping and units -----------------------------------------------------------------------

def group_title(suite: str, tier: int, benchmark: str) -> str:
    if suite == "echo":
        return f"Echo — {benchmark}"
    return schema.group_title(suite, tier)


def groups(frame: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """Rows of a benchmark-keyed frame in display order, grouped by tier (echo: by benchmark)."""
    if frame.empty:
        return []
    keys = [schema.bench_sort_key(s, int(t), b, p) for s, t, b, p in
            zip(frame["suite"], frame["tier"], frame["benchmark"], frame["param"])]
    ordered = frame.iloc[sorted(range(len(frame)), key=keys.__getitem__)]
    titles = [group_title(s, int(t), b) for s, t, b in zip(ordered["suite"], ordered["tier"], ordered["benchmark"])]
    out: list[tuple[str, pd.DataFrame]] = []
    for title in dict.fromkeys(titles):
        out.append((title, ordered[[t == title for t in titles]]))
    return out


def time_unit(values: Sequence[float] | np.ndarray) -> tuple[float, str]:
    """(divisor, unit) so that the largest finite value reads between 1 and 1000."""
    arr = np.asarray(values, dtype=np.float64)
    arr = arr[np.isfinite(arr)]
    top = float(np.max(np.abs(arr))) if arr.size else 0.0
    for scale, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "µs")):
        if top >= scale:
            return scale, unit
    return 1.0, "ns"


def fmt_bytes(value: float) -> str:
    for scale, unit in ((2**20, "MiB"), (2**10, "KiB")):
        if value >= scale:
            v = value / scale
            return f"{v:g} {unit}"
    return f"{value:g} B"


def _ratio_axis(ax: Any, low: float, high: float, tie_band: float) -> None:
    """Log axis for ratios with readable fixed ticks (0.5×, 1×, 2×) covering [low, high]."""
    lo = min(low, 1 / (1 + tie_band)) / 1.25
    hi = max(high, 1 + tie_band) * 1.25
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    ticks = [t for t in NICE_RATIOS if lo <= t <= hi]
    if len(ticks) < 3:
        ticks = sorted(set(ticks) | {round(1 / (1 + tie_band), 3), round(1 + tie_band, 3)})
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def _nice_label(value: float, _pos: Any = None) -> str:
    """Tick text for log axes: plain numbers (no 10^x), only at 1, 2 and 5 times a power of ten."""
    if not (value > 0 and math.isfinite(value)):
        return ""
    mantissa = value / 10 ** math.floor(math.log10(value) + 1e-9)
    return f"{value:g}" if any(abs(mantissa - m) < 1e-6 for m in (1, 2, 5)) else ""


def _plain_log(axis: Any) -> None:
    axis.set_major_formatter(FuncFormatter(_nice_label))
    axis.set_minor_formatter(FuncFormatter(_nice_label))


def _note_axes(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=11, color="#555555",
            wrap=True)


def _row_layout(frame: pd.DataFrame) -> tuple[list[tuple[float, str, bool]], list[tuple[float, dict]]]:
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


def _apply_row_labels(ax: Any, labels: list[tuple[float, str, bool]]) -> None:
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


def _right_labels(ax: Any, labels: list[tuple[float, str, str]]) -> None:
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
    twin.set_ylabel(f"ratio [CI] and verdict")


def _runtime_label(cmp: Any, role: str) -> str:
    return schema.display_name(cmp.candidate if role == "candidate" else cmp.baseline)


# -- overview figures -------------------------------------------------------------------------

def forest_plot(cmp: "Comparison") -> Figure:
    """Every benchmark's ratio (baseline ÷ candidate median ns/op) with its CI, log axis.

    Grouped by tier, Tier 0 controls at the top; tie band shaded; verdict colours; the ratio and
    interval written at the right; benchmarks with one runtime only say "not compared".
    """
    bench = cmp.benchmarks
    bn, cn = schema.display_name(cmp.baseline), schema.display_name(cmp.candidate)
    labels, rows = _row_layout(bench)
    fig = Figure(figsize=(WIDTH_INCHES, max(3.0, 1.8 + ROW_INCHES * len(labels))), layout="constrained")
    ax = fig.add_subplot()
    band_lo, band_hi = 1 / (1 + cmp.tie_band), 1 + cmp.tie_band
    finite = bench[bench["compared"].astype(bool)]
    lows = pd.concat([finite["ratio_ci_low"], finite["ratio"]]).to_numpy(dtype=float)
    highs = pd.concat([finite["ratio_ci_high"], finite["ratio"]]).to_numpy(dtype=float)
    lows, highs = lows[np.isfinite(lows) & (lows > 0)], highs[np.isfinite(highs) & (highs > 0)]
    _ratio_axis(ax, float(lows.min()) if lows.size else 0.5, float(highs.max()) if highs.size else 2.0, cmp.tie_band)
    ax.axvspan(band_lo, band_hi, color="#cccccc", alpha=0.6, zorder=0)
    ax.axvline(1.0, color="#444444", linewidth=1, zorder=1)
    right: list[tuple[float, str, str]] = []
    for y, r in rows:
        if not r["compared"]:
            ax.text(1.0, y, f"  not compared ({r['verdict_reason'].removeprefix('not compared: ')})",
                    va="center", ha="left", fontsize=8, color="#777777", style="italic")
            continue
        verdict = r["verdict"] if isinstance(r["verdict"], str) else None
        color = VERDICT_COLORS.get(verdict or "", "#000000")
        ratio, low, high = r["ratio"], r["ratio_ci_low"], r["ratio_ci_high"]
        if not _finite(ratio) or ratio <= 0:
            ax.text(1.0, y, "  no ratio (a median is 0)", va="center", fontsize=8, color="#777777")
            continue
        if _finite(low) and _finite(high):
            ax.plot([low, high], [y, y], color=color, linewidth=2.2, solid_capstyle="butt", zorder=3)
        ax.plot([ratio], [y], marker="o", markersize=6, color=color, zorder=4,
                markerfacecolor=color if _finite(low) else "white")
        right.append((y, fmt_ratio_ci(ratio, low, high).replace("x [", "× [") + (f"  {verdict}" if verdict else ""), color))
    _apply_row_labels(ax, labels)
    _right_labels(ax, right)
    ax.set_xlabel(f"{bn} median ÷ {cn} median of ns/op (×, log scale) — right of 1×: {cn} faster, left: {bn} faster")
    ax.set_ylabel("benchmark (grouped by tier)")
    ax.set_title(f"{cn} vs {bn}: ratio of median time per operation with {cmp.confidence:.0%} confidence intervals\n"
                 f"run {cmp.run_id}", loc="center")
    ax.text(0.0, 1.002, f"← {bn} faster", transform=ax.transAxes, ha="left", va="bottom", fontsize=9, color="#555555")
    ax.text(1.0, 1.002, f"{cn} faster →", transform=ax.transAxes, ha="right", va="bottom", fontsize=9, color="#555555")
    handles = [Line2D([], [], color=VERDICT_COLORS[v], marker="o", linewidth=2.2, label=VERDICT_WORDS[v])
               for v in ("win", "loss", "tie", "inconclusive")]
    handles.append(Patch(color="#cccccc", alpha=0.6,
                         label=f"tie band [{band_lo:.3f}×, {band_hi:.3f}×] (±{cmp.tie_band:.0%})"))
    fig.legend(handles=handles, loc="outside lower center", ncol=3, frameon=False)
    if not rows:
        _note_axes(ax, "no benchmarks in this run")
    elif not cmp.compared:
        _note_axes(ax, "only one runtime in this run: there are no ratios to show")
    return fig


def alloc_plot(cmp: "Comparison") -> Figure:
    """Heap bytes per operation of every benchmark for both runtimes (log axis, 0 written out)."""
    sides = cmp.runtimes
    base = cmp.benchmarks[["suite", "tier", "benchmark", "param", "label"]]
    labels, rows = _row_layout(base)
    height = max(3.0, 1.8 + ROW_INCHES * 1.3 * len(labels))
    fig = Figure(figsize=(WIDTH_INCHES, height), layout="constrained")
    ax = fig.add_subplot()
    values = sides["bytes_per_op"].to_numpy(dtype=float) if not sides.empty else np.empty(0)
    positive = values[np.isfinite(values) & (values > 0)]
    floor = 10 ** math.floor(math.log10(positive.min() / 2)) if positive.size else 0.1
    top = positive.max() * 3 if positive.size else 10.0
    ax.set_xscale("log")
    ax.set_xlim(floor, max(top, floor * 100))
    by_key = {(r["benchmark"], r["param"], r["role"]): r for r in sides.to_dict("records")}
    offsets = {"candidate": -0.2, "baseline": 0.2}
    for y, r in rows:
        for role, dy in offsets.items():
            color = ROLE_COLORS[role]
            side = by_key.get((r["benchmark"], r["param"], role))
            if side is None:
                ax.text(floor * 1.15, y + dy, f"no {_runtime_label(cmp, role)} data", va="center", ha="left",
                        fontsize=7, color=color, alpha=0.6, style="italic")
                continue
            value = side["bytes_per_op"]
            if _finite(value) and value > 0:
                ax.barh(y + dy, value - floor, left=floor, height=0.38, color=color, zorder=2)
                ax.text(value * 1.08, y + dy, fmt_amount(value), va="center", ha="left", fontsize=7, color=color)
            else:
                ax.plot([floor], [y + dy], marker="|", markersize=9, color=color, zorder=3, clip_on=False)
                ax.text(floor * 1.15, y + dy, "0 B/op (no allocation)", va="center", ha="left", fontsize=7,
                        color=color, fontweight="bold")
    _apply_row_labels(ax, labels)
    _plain_log(ax.xaxis)
    ax.set_xlabel("heap bytes allocated per operation (B/op, log scale; bars start at the left edge; "
                  "0 is written out)")
    ax.set_ylabel("benchmark (grouped by tier)")
    ax.set_title(f"Allocation: bytes per operation, mean over measured iterations — run {cmp.run_id}")
    handles = [Patch(color=ROLE_COLORS["candidate"], label=_runtime_label(cmp, "candidate")),
               Patch(color=ROLE_COLORS["baseline"], label=_runtime_label(cmp, "baseline"))]
    fig.legend(handles=handles, loc="outside lower center", ncol=2, frameon=False)
    if not rows:
        _note_axes(ax, "no benchmarks in this run")
    return fig


# -- distributions ----------------------------------------------------------------------------

def _grid(n_panels: int, title: str) -> tuple[Figure, list[Any]]:
    cols = min(GRID_COLUMNS, max(1, n_panels))
    nrows = max(1, math.ceil(n_panels / cols))
    fig = Figure(figsize=(PANEL_INCHES[0] * cols + 0.6, PANEL_INCHES[1] * nrows + 1.2), layout="constrained")
    axes = fig.subplots(nrows, cols, squeeze=False).ravel().tolist()
    for ax in axes[n_panels:]:
        ax.set_visible(False)
    fig.suptitle(title)
    return fig, axes[:n_panels]


@dataclass(frozen=True)
class Sides:
    """Which runtime is the baseline and which the candidate (what the grids need of a comparison)."""

    baseline: str = "tokio"
    candidate: str = "ampere"


def _runtimes_in(sides: Any, data: pd.DataFrame) -> list[tuple[str, str]]:
    """(role, runtime) of the runtimes present in data, candidate first."""
    present = set(data["runtime"])
    return [(role, rt) for role, rt in (("candidate", sides.candidate), ("baseline", sides.baseline)) if rt in present]


def benchmark_rows(run: "Run") -> pd.DataFrame:
    """One row per benchmark of a run (suite, tier, benchmark, param, label), without statistics.

    For the pages that plot raw iterations and need no comparison (`groups(benchmark_rows(run))`).
    """
    keys = run.data[list(schema.BENCH_KEY)].drop_duplicates()
    keys = keys.assign(label=[schema.bench_label(b, p) for b, p in zip(keys["benchmark"], keys["param"])])
    return keys.reset_index(drop=True)


def _bench_rows(run: "Run", title_rows: pd.DataFrame) -> list[tuple[dict, pd.DataFrame]]:
    data = run.data
    out = []
    for r in title_rows.to_dict("records"):
        rows = data[(data["suite"] == r["suite"]) & (data["benchmark"] == r["benchmark"]) & (data["param"] == r["param"])]
        out.append((r, rows))
    return out


def ecdf_grid(run: "Run", title: str, rows: pd.DataFrame, baseline: str = "tokio",
              candidate: str = "ampere") -> Figure:
    """Small multiples: per benchmark, the ECDF of per-iteration ns/op of each runtime.

    Every measured iteration of every invocation is one step; two curves that lie on top of
    each other mean the same distribution; a curve to the left is faster.
    """
    cmp = Sides(baseline, candidate)
    panels = _bench_rows(run, rows)
    fig, axes = _grid(len(panels), f"{title}: distribution of time per operation (every measured iteration)")
    for ax, (r, data) in zip(axes, panels):
        scale, unit = time_unit(data["ns_per_op"])
        for role, rt in _runtimes_in(cmp, data):
            values = data.loc[data["runtime"] == rt, "ns_per_op"].to_numpy(dtype=float) / scale
            ax.ecdf(values, color=ROLE_COLORS[role], linewidth=1.6)
        ax.set_title(r["label"], fontsize=10)
        ax.set_xlabel(f"time per operation ({unit}/op)")
        ax.set_ylabel("share of iterations ≤ x")
        ax.set_ylim(0, 1.02)
    _role_legend(fig, cmp, [role for role, _ in _runtimes_in(cmp, run.data)], kind="line")
    return fig


def run_sequence_grid(run: "Run", title: str, rows: pd.DataFrame, baseline: str = "tokio",
                      candidate: str = "ampere") -> Figure:
    """Small multiples: ns/op vs iteration, one line per runtime and invocation (drift, warm-up)."""
    cmp = Sides(baseline, candidate)
    panels = _bench_rows(run, rows)
    fig, axes = _grid(len(panels), f"{title}: time per operation in measurement order (one line per invocation)")
    invocations: set[int] = set()
    for ax, (r, data) in zip(axes, panels):
        scale, unit = time_unit(data["ns_per_op"])
        for role, rt in _runtimes_in(cmp, data):
            mine = data[data["runtime"] == rt]
            for inv, group in mine.groupby("invocation", sort=True):
                invocations.add(int(inv))
                group = group.sort_values("iteration")
                ax.plot(group["iteration"], group["ns_per_op"] / scale, color=ROLE_COLORS[role], marker=".",
                        markersize=4, linewidth=1.2, linestyle=INVOCATION_STYLES[int(inv) % len(INVOCATION_STYLES)])
        ax.set_title(r["label"], fontsize=10)
        ax.set_xlabel("measured iteration (index)")
        ax.set_ylabel(f"time per operation ({unit}/op)")
    roles = [role for role, _ in _runtimes_in(cmp, run.data)]
    handles = [Line2D([], [], color=ROLE_COLORS[role], linewidth=2, label=_runtime_label(cmp, role)) for role in roles]
    handles += [Line2D([], [], color="#555555", linestyle=INVOCATION_STYLES[i % len(INVOCATION_STYLES)],
                       label=f"invocation {i}") for i in sorted(invocations)]
    fig.legend(handles=handles, loc="outside lower center", ncol=max(1, len(handles)), frameon=False)
    return fig


def _role_legend(fig: Figure, cmp: Any, roles: Sequence[str], kind: str = "patch") -> None:
    if kind == "line":
        handles = [Line2D([], [], color=ROLE_COLORS[r], linewidth=2, label=_runtime_label(cmp, r)) for r in roles]
    else:
        handles = [Patch(color=ROLE_COLORS[r], label=_runtime_label(cmp, r)) for r in roles]
    fig.legend(handles=handles, loc="outside lower center", ncol=max(1, len(handles)), frameon=False)


# -- echo -------------------------------------------------------------------------------------

def has_echo(cmp: "Comparison") -> bool:
    return not cmp.echo.empty


def _echo_rows(cmp: "Comparison", benchmark: str) -> pd.DataFrame:
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


def echo_batch_plot(cmp: "Comparison", payload_bytes: int | None = None) -> Figure:
    """Seed-004 view: batch avg and p99 latency vs batch size n, one panel per payload kind."""
    families = [(name, text) for name, text in ECHO_FAMILIES if not _echo_rows(cmp, name).empty]
    fig = Figure(figsize=(WIDTH_INCHES, 4.4), layout="constrained")
    if not families:
        ax = fig.add_subplot()
        ax.set_title("Echo: batch latency vs batch size")
        ax.set_xlabel("batch size n (round trips per batch)")
        ax.set_ylabel("batch latency (µs)")
        _note_axes(ax, "no echo batch benchmarks (echo_f64 / echo_string_1mib / echo_bytes_1mib) in this run")
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
        _plain_log(ax.yaxis)
        size = "" if name == "echo_f64" or not payload_bytes else f" of {fmt_bytes(payload_bytes)}"
        ax.set_title(f"{name}: {text}{size}", fontsize=10)
        ax.set_xlabel("batch size n (round trips per batch, log scale)")
        ax.set_ylabel("batch latency (µs per whole batch, log scale)")
    handles = []
    for role in dict.fromkeys(roles_seen):
        handles.append(Line2D([], [], color=ROLE_COLORS[role], marker="o", linestyle="-",
                              label=f"{_runtime_label(cmp, role)} avg (with {cmp.confidence:.0%} CI)"))
        handles.append(Line2D([], [], color=ROLE_COLORS[role], marker="s", linestyle="--",
                              label=f"{_runtime_label(cmp, role)} p99 (with {cmp.confidence:.0%} CI)"))
    fig.legend(handles=handles, loc="outside lower center", ncol=max(1, len(handles)), frameon=False)
    fig.suptitle("Echo: average and 99th-percentile latency of a whole batch vs batch size (less is better)")
    return fig


def echo_sweep_plot(cmp: "Comparison", benchmark: str = "echo_bytes_sweep", batch_n: int | None = None,
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
        _note_axes(ax, f"no {benchmark} rows in this run")
        ax.legend(handles=[Line2D([], [], color="#999999", label="no data")], loc="upper left")
        return fig
    for role in ("candidate", "baseline"):
        mine = rows[rows["role"] == role]
        if mine.empty:
            continue
        color, name = ROLE_COLORS[role], _runtime_label(cmp, role)
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
                        label=f"{_runtime_label(cmp, role)} avg, {reference} (copy path)")
    sizes = sorted(rows["value"].unique())
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_locator(FixedLocator(sizes))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt_bytes(v)))
    ax.xaxis.set_minor_formatter(NullFormatter())
    _plain_log(ax.yaxis)
    for label in ax.get_xticklabels():
        label.set_rotation(45)
    # Outside the axes: inside, the legend would cover the small-payload points.
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, frameon=False)
    return fig


# -- history ----------------------------------------------------------------------------------

@dataclass
class History:
    """Ratios per run and regressions between consecutive runs (see `history_data`)."""

    runs: pd.DataFrame
    ratios: pd.DataFrame
    regressions: pd.DataFrame
    notes: list[str]


HISTORY_RATIO_COLUMNS = ["run_id", "run_label", "position", "suite", "tier", "benchmark", "param", "label",
                         "ratio", "ratio_ci_low", "ratio_ci_high", "verdict", "compared"]
HISTORY_REGRESSION_COLUMNS = ["run_a", "run_b", "position", "suite", "tier", "benchmark", "param", "label",
                              "ratio", "ratio_ci_low", "ratio_ci_high", "verdict_reason"]


def run_label(run_id: str, started: Any, commit: Any, dirty: Any) -> str:
    stamp = started.strftime("%Y-%m-%d %H:%M") if hasattr(started, "strftime") and not pd.isna(started) else run_id
    has_commit = isinstance(commit, str) and commit != ""
    git = (commit[:7] + ("+" if dirty is True else "")) if has_commit else "no git"
    return f"{stamp}\n{git}"


def history_data(data_dir: str | os.PathLike[str] | None, baseline: str, candidate: str, tie_band: float,
                 confidence: float, profile: str | None = None, limit: int = 20,
                 n_resamples: int | None = None) -> History:
    """Compare every complete run (of `profile`, newest `limit`) and diff consecutive runs.

    Ratios come from analysis.compare (baseline ÷ candidate per run); regressions from
    analysis.diff_runs on the candidate between consecutive runs (`regressed` = slower in the
    later run beyond the tie band). Runs of another profile are left out: their sizes differ,
    so their times are not comparable. Problems become notes, never exceptions.
    `n_resamples`: bootstrap resamples of every interval (default: the analysis default).
    """
    from .compare import compare, diff_runs
    from .errors import AnalysisError
    from .load import load_run, run_history

    from .stats import DEFAULT_RESAMPLES

    resamples = n_resamples or DEFAULT_RESAMPLES
    notes_out: list[str] = []
    history = run_history(data_dir)
    complete = history[history["status"] == "complete"]
    skipped = history[history["status"] != "complete"]
    if not skipped.empty:
        notes_out.append(f"{len(skipped)} run folder(s) are not complete and are left out: "
                         + ", ".join(f"{r.run_id} ({r.status})" for r in skipped.itertuples()))
    if profile is not None:
        other = complete[complete["profile"] != profile]
        if not other.empty:
            notes_out.append(f"{len(other)} complete run(s) of another profile than {profile!r} are left out "
                             "(different sizes, not comparable): " + ", ".join(other["run_id"]))
        complete = complete[complete["profile"] == profile]
    if len(complete) > limit:
        notes_out.append(f"showing the newest {limit} of {len(complete)} runs")
        complete = complete.iloc[-limit:]
    runs_rows, ratio_frames, regression_frames = [], [], []
    loaded: list[tuple[int, Any]] = []
    for item in complete.itertuples():
        try:
            run = load_run(item.path)
            cmp = compare(run, baseline=baseline, candidate=candidate, tie_band=tie_band, confidence=confidence,
                          n_resamples=resamples)
        except AnalysisError as exc:
            notes_out.append(f"{item.run_id}: left out ({exc})")
            continue
        position = len(runs_rows)
        label = run_label(item.run_id, item.started_utc, item.git_commit, item.git_dirty)
        runs_rows.append({"run_id": item.run_id, "position": position, "run_label": label,
                          "started_utc": item.started_utc, "git_commit": item.git_commit, "git_dirty": item.git_dirty,
                          "profile": item.profile, "compared": cmp.compared})
        frame = cmp.benchmarks[["suite", "tier", "benchmark", "param", "label", "ratio", "ratio_ci_low",
                                "ratio_ci_high", "verdict", "compared"]].copy()
        frame.insert(0, "position", position)
        frame.insert(0, "run_label", label)
        frame.insert(0, "run_id", item.run_id)
        ratio_frames.append(frame)
        loaded.append((position, run))
    for (_, run_a), (position_b, run_b) in zip(loaded, loaded[1:]):
        try:
            diff = diff_runs(run_a, run_b, runtime=candidate, tie_band=tie_band, confidence=confidence,
                             n_resamples=resamples)
        except AnalysisError as exc:
            notes_out.append(f"no diff {run_a.run_id} → {run_b.run_id}: {exc}")
            continue
        bad = diff.benchmarks[diff.benchmarks["regressed"].astype(bool)]
        if not bad.empty:
            frame = bad[["suite", "tier", "benchmark", "param", "label", "ratio", "ratio_ci_low", "ratio_ci_high",
                         "verdict_reason"]].copy()
            frame.insert(0, "position", position_b)
            frame.insert(0, "run_b", run_b.run_id)
            frame.insert(0, "run_a", run_a.run_id)
            regression_frames.append(frame)
    runs = pd.DataFrame.from_records(runs_rows, columns=["run_id", "position", "run_label", "started_utc", "git_commit",
                                                         "git_dirty", "profile", "compared"])
    ratios = (pd.concat(ratio_frames, ignore_index=True) if ratio_frames
              else pd.DataFrame(columns=HISTORY_RATIO_COLUMNS))
    regressions = (pd.concat(regression_frames, ignore_index=True) if regression_frames
                   else pd.DataFrame(columns=HISTORY_REGRESSION_COLUMNS))
    return History(runs=runs, ratios=ratios, regressions=regressions, notes=notes_out)


def never_compared(history: History) -> list[str]:
    """Labels of benchmarks that no run compared (one runtime only), in display order."""
    ratios = history.ratios
    if ratios.empty:
        return []
    flags = ratios.groupby(["suite", "tier", "benchmark", "param", "label"], sort=False)["compared"].any().reset_index()
    missing = flags[~flags["compared"].astype(bool)]
    return [label for _, rows in groups(missing) for label in rows["label"]]


def regressions_table(history: History, candidate: str) -> pd.DataFrame:
    """Regressions as a display table (diff ratio = median in the earlier ÷ later run)."""
    cn = schema.display_name(candidate)
    rows = []
    for r in history.regressions.to_dict("records"):
        rows.append([r["label"], r["run_a"], r["run_b"], fmt_ratio_ci(r["ratio"], r["ratio_ci_low"], r["ratio_ci_high"]),
                     f"{1 / r['ratio']:.2f}× slower" if _finite(r["ratio"]) and r["ratio"] > 0 else "—",
                     r["verdict_reason"]])
    return pd.DataFrame(rows, columns=["Benchmark", "Earlier run", "Later run", f"{cn} earlier ÷ later [CI]",
                                       f"{cn} in the later run", "Why"])


def history_plot(history: History, baseline: str, candidate: str, tie_band: float, confidence: float) -> Figure:
    """Ratio per benchmark over the runs (oldest left), one panel per group; regressions marked."""
    bn, cn = schema.display_name(baseline), schema.display_name(candidate)
    ratios = history.ratios
    compared = ratios[ratios["compared"].astype(bool)] if not ratios.empty else ratios
    grouped = groups(compared.drop_duplicates(subset=["suite", "tier", "benchmark", "param"])) if not compared.empty else []
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
        _note_axes(ax, "no complete run has both runtimes for any benchmark")
        ax.legend(handles=[Patch(color="#cccccc", label="tie band")], loc="upper left")
        return fig
    regressed = {(r["position"], r["benchmark"], r["param"]) for r in history.regressions.to_dict("records")}
    for ax, (title, keys) in zip(axes, grouped):
        ax.axhspan(band_lo, band_hi, color="#cccccc", alpha=0.6, zorder=0, label=f"tie band ±{tie_band:.0%}")
        ax.axhline(1.0, color="#444444", linewidth=1, zorder=1)
        spread = 0.25 / max(1, len(keys))
        finite_values = []
        flagged_any = False
        for i, key in enumerate(keys.to_dict("records")):
            mine = ratios[(ratios["suite"] == key["suite"]) & (ratios["benchmark"] == key["benchmark"])
                          & (ratios["param"] == key["param"])].sort_values("position")
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
                if (pos, key["benchmark"], key["param"]) in regressed and np.isfinite(yp):
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
            _note_axes(ax, "not compared in any run (one runtime only)")
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


# -- helpers for tests and the report index ---------------------------------------------------

def figure_texts(fig: Figure) -> dict[str, Any]:
    """Titles, axis labels and legend texts of a figure (what a reader sees; used by tests)."""
    visible = [ax for ax in fig.axes if ax.get_visible() and ax.get_label() != TWIN_LABEL]
    legends = [t.get_text() for ax in visible if ax.get_legend() for t in ax.get_legend().get_texts()]
    legends += [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    return {"suptitle": fig.get_suptitle(),
            "titles": [ax.get_title() for ax in visible],
            "xlabels": [ax.get_xlabel() for ax in visible], "ylabels": [ax.get_ylabel() for ax in visible],
            "legend": legends}


__all__ = [
    "ECHO_FAMILIES", "History", "Notes", "ROLE_COLORS", "Sides", "benchmark_rows", "VERDICT_COLORS", "alloc_plot", "controls_sentence",
    "counts_sentence", "diagnostics_table", "display_name", "echo_batch_plot", "echo_ratio_table", "echo_sweep_plot",
    "ecdf_grid", "fairness_display", "figure_texts", "fmt_bytes", "forest_plot", "geomean_sentence", "groups",
    "has_echo", "headline_sentences", "history_data", "history_plot", "machine_display", "machine_sentences",
    "md_escape", "never_compared", "notebook_data_dir", "notes", "ratio_words", "regressions_table", "run_label",
    "run_sequence_grid", "setup_matplotlib", "show_markdown", "show_warnings_as_notes", "style_verdicts", "tier_tables", "time_unit",
]
