"""Output formats of `compare` and `diff`: Unicode box table, markdown, CSV and JSON.

The box table groups rows by tier (Tier 0 controls first, then tiers 1-4, then echo), with
the seeds' columns (Benchmark | candidate | baseline | B/op candidate | B/op baseline | Winner)
plus the ratio with its interval and the verdict. Colours: green win, red loss, dim tie,
yellow inconclusive; off when stdout is not a terminal or NO_COLOR is set (non-empty).
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import sys
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import pandas as pd

from . import schema

if TYPE_CHECKING:
    from .compare import Comparison

ANSI = {"win": "\x1b[32m", "loss": "\x1b[31m", "tie": "\x1b[2m", "inconclusive": "\x1b[33m",
        "bold": "\x1b[1m", "warning": "\x1b[33m", "reset": "\x1b[0m"}
_ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")


def use_color(mode: str = "auto", stream: Any = None) -> bool:
    """auto: colour only on a terminal and without NO_COLOR; always / never force it."""
    if mode == "always":
        return True
    if mode == "never" or os.environ.get("NO_COLOR"):
        return False
    stream = stream if stream is not None else sys.stdout
    return bool(getattr(stream, "isatty", lambda: False)())


def paint(text: str, style: str | None, color: bool) -> str:
    if not color or not style or style not in ANSI:
        return text
    return f"{ANSI[style]}{text}{ANSI['reset']}"


def visible_len(text: str) -> int:
    return len(_ANSI_RE.sub("", text))


# -- number formatting ------------------------------------------------------------------------

def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def fmt_ns(value: Any) -> str:
    """A duration in ns with 3 significant digits and a unit: 12.3 ns, 4.56 µs, 7.89 ms, 1.23 s."""
    if not _finite(value):
        return "—"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(value) >= scale:
            return f"{_sig3(value / scale)} {unit}"
    return f"{_sig3(value)} ns"


def _sig3(value: float) -> str:
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def fmt_amount(value: Any) -> str:
    """Bytes or allocations per op: 0, 0.13, 21.0, 1,064."""
    if not _finite(value):
        return "—"
    if value == 0:
        return "0"
    if float(value).is_integer():
        return f"{value:,.0f}"
    return _sig3(value)


def fmt_ratio(value: Any) -> str:
    return f"{value:.3f}" if _finite(value) else "—"


def fmt_ratio_ci(ratio: Any, low: Any, high: Any) -> str:
    if not _finite(ratio):
        return "—"
    if not (_finite(low) and _finite(high)):
        return f"{ratio:.3f}x [no CI]"
    return f"{ratio:.3f}x [{low:.3f}, {high:.3f}]"


def winner(verdict: Any, ratio: Any, baseline: str, candidate: str) -> str:
    if verdict == "win":
        return f"{schema.display_name(candidate)} +{ratio:.1f}x"
    if verdict == "loss":
        return f"{schema.display_name(baseline)} +{1 / ratio:.1f}x"
    if verdict == "tie":
        return "Tie"
    if verdict == "inconclusive":
        return "?"
    return "—"


def diff_words(verdict: Any, ratio: Any) -> str:
    """Winner column of `diff`: B against A."""
    if verdict == "win":
        return f"improved {ratio:.2f}x"
    if verdict == "loss":
        return f"REGRESSED {1 / ratio:.2f}x"
    return {"tie": "same", "inconclusive": "?"}.get(verdict, "—")


# -- box table --------------------------------------------------------------------------------

Row = Sequence[str] | str  # a str is a group title spanning the whole width


def box_table(header: Sequence[str], rows: Iterable[Row], align: Sequence[str] | None = None) -> str:
    """Unicode box-drawing table; str rows are group titles; align: 'l' or 'r' per column."""
    rows = list(rows)
    cells = [r for r in rows if not isinstance(r, str)]
    widths = [max([visible_len(h)] + [visible_len(r[i]) for r in cells]) for i, h in enumerate(header)]
    inner = sum(widths) + 3 * (len(widths) - 1)
    titles = [r for r in rows if isinstance(r, str)]
    if titles and max(visible_len(t) for t in titles) > inner:
        widths[0] += max(visible_len(t) for t in titles) - inner
        inner = sum(widths) + 3 * (len(widths) - 1)
    align = align or ["l"] + ["r"] * (len(header) - 1)

    def rule(left: str, mid: str, right: str) -> str:
        return left + mid.join("─" * (w + 2) for w in widths) + right

    def line(values: Sequence[str]) -> str:
        parts = []
        for value, width, side in zip(values, widths, align):
            pad = " " * (width - visible_len(value))
            parts.append(value + pad if side == "l" else pad + value)
        return "│ " + " │ ".join(parts) + " │"

    out = [rule("┌", "┬", "┐"), line(header)]
    previous_title = False
    first = True
    for row in rows:
        if isinstance(row, str):
            out.append(rule("├", "┴", "┤") if not previous_title else rule("├", "─", "┤"))
            out.append("│ " + row + " " * (inner - visible_len(row)) + " │")
            previous_title = True
        else:
            if previous_title:
                out.append(rule("├", "┬", "┤"))
            elif first:
                out.append(rule("├", "┼", "┤"))
            previous_title = False
            out.append(line(row))
        first = False
    if previous_title:
        out.append(rule("├", "┬", "┤"))
    out.append(rule("└", "┴", "┘"))
    return "\n".join(out)


def _group_rows(comparison: "Comparison") -> list[tuple[str, pd.DataFrame]]:
    from .compare import iter_groups

    return list(iter_groups(comparison.benchmarks))


def comparison_rows(comparison: "Comparison", color: bool) -> tuple[list[str], list[Row]]:
    b, c = comparison.baseline, comparison.candidate
    bn, cn = schema.display_name(b), schema.display_name(c)
    if not comparison.compared:
        present = comparison.runtimes["runtime"].iloc[0] if not comparison.runtimes.empty else c
        role = "candidate" if present == c else "baseline"
        header = ["Benchmark", f"{schema.display_name(present)} median [CI]", "B/op", "allocs/op", "n", "rCV"]
        rows: list[Row] = []
        for title, group in _group_rows(comparison):
            rows.append(title)
            for r in group.to_dict("records"):
                rows.append([r["label"], f"{fmt_ns(r[f'{role}_median_ns_per_op'])} "
                             f"[{fmt_ns(r[f'{role}_ci_low'])}, {fmt_ns(r[f'{role}_ci_high'])}]",
                             fmt_amount(r[f"{role}_bytes_per_op"]), fmt_amount(r[f"{role}_allocs_per_op"]),
                             str(int(r[f"{role}_n"])) if _finite(r[f"{role}_n"]) else "—",
                             f"{r[f'{role}_rcv']:.1%}" if _finite(r[f"{role}_rcv"]) else "—"])
        return header, rows
    diff = "run_a" in comparison.extra
    header = ["Benchmark", cn, bn, f"B/op {cn}", f"B/op {bn}", f"{bn}/{cn} [{comparison.confidence:.0%} CI]",
              "Verdict", "Change" if diff else "Winner"]
    rows = []
    for title, group in _group_rows(comparison):
        rows.append(title)
        for r in group.to_dict("records"):
            verdict = r["verdict"] if isinstance(r["verdict"], str) else None
            style = verdict
            rows.append([
                r["label"], fmt_ns(r["candidate_median_ns_per_op"]), fmt_ns(r["baseline_median_ns_per_op"]),
                fmt_amount(r["candidate_bytes_per_op"]), fmt_amount(r["baseline_bytes_per_op"]),
                fmt_ratio_ci(r["ratio"], r["ratio_ci_low"], r["ratio_ci_high"]),
                paint(verdict or "n/a", style, color),
                paint(diff_words(verdict, r["ratio"]) if diff else winner(verdict, r["ratio"], b, c), style, color),
            ])
    return header, rows


def _align(header: Sequence[str], comparison: "Comparison") -> list[str]:
    """Text columns left, numbers right; the verdict and winner columns are text."""
    if not comparison.compared:
        return ["l"] + ["r"] * (len(header) - 1)
    return ["l"] + ["r"] * (len(header) - 3) + ["l", "l"]


def echo_rows(comparison: "Comparison") -> tuple[list[str], list[Row]]:
    header = ["Benchmark", "Runtime", "avg [CI]", "min", "p75", "p99 [CI]", "max", "avg ratio [CI]", "p99 ratio"]
    rows: list[Row] = []
    for r in comparison.echo.to_dict("records"):
        name = schema.display_name(r["runtime"])
        rows.append([r["label"], name,
                     f"{fmt_ns(r['avg_ns'])} [{fmt_ns(r['avg_ns_ci_low'])}, {fmt_ns(r['avg_ns_ci_high'])}]",
                     fmt_ns(r["min_ns"]), fmt_ns(r["p75_ns"]),
                     f"{fmt_ns(r['p99_ns'])} [{fmt_ns(r['p99_ns_ci_low'])}, {fmt_ns(r['p99_ns_ci_high'])}]",
                     fmt_ns(r["max_ns"]),
                     fmt_ratio_ci(r["avg_ratio"], r["avg_ratio_ci_low"], r["avg_ratio_ci_high"])
                     if r["role"] == "candidate" else "",
                     fmt_ratio(r["p99_ratio"]) if r["role"] == "candidate" else ""])
    return header, rows


def preamble(comparison: "Comparison") -> list[str]:
    b, c = schema.display_name(comparison.baseline), schema.display_name(comparison.candidate)
    band = comparison.tie_band
    if "run_a" in comparison.extra:
        e = comparison.extra
        return [f"{e['runtime']}: A = {e['run_a']}, B = {e['run_b']}",
                f"ratio = median(A) / median(B) ns/op (> 1: B faster); tie band "
                f"[{1 / (1 + band):.3f}, {1 + band:.3f}]; {comparison.confidence:.0%} intervals; "
                "loss = regression in B"]
    if not comparison.compared:
        return [f"run {comparison.run_id}: describing one runtime (nothing to compare against)"]
    return [f"run {comparison.run_id}: {c} (candidate) vs {b} (baseline)",
            f"ratio = {b} median / {c} median ns/op (> 1: {c} faster); tie band "
            f"[{1 / (1 + band):.3f}, {1 + band:.3f}] (log-symmetric); {comparison.confidence:.0%} intervals"]


def diagnostic_lines(comparison: "Comparison", color: bool) -> list[str]:
    """Warnings one per line; informational notes grouped into one line per kind."""
    lines: list[str] = []
    notes: dict[str, list[str]] = {}
    for d in comparison.diagnostics.to_dict("records"):
        where = schema.bench_label(d["benchmark"], d["param"]) if isinstance(d["benchmark"], str) else "run"
        who = f" [{schema.display_name(d['runtime'])}]" if isinstance(d["runtime"], str) else ""
        if d["level"] == "warning":
            lines.append(paint(f"warning: {where}{who}: {d['message']}", "warning", color))
        else:
            notes.setdefault(d["code"], []).append(f"{where}{who}" if d["code"] != "invocation_effect"
                                                   else f"{where}{who} ({d['message'].split(' of the')[0]})")
    titles = {"alloc_varies": "allocation differs between iterations in",
              "invocation_effect": "most variance is between invocations in",
              "not_compared": "not compared (one side missing):"}
    for code, places in notes.items():
        lines.append(f"note: {titles.get(code, code)} {', '.join(places)}")
    return lines


def render_table(comparison: "Comparison", color: bool = False) -> str:
    header, rows = comparison_rows(comparison, color)
    parts = preamble(comparison) + [box_table(header, rows, _align(header, comparison))]
    if not comparison.echo.empty:
        eh, er = echo_rows(comparison)
        parts += ["", "Echo per batch (ns per whole batch of n round trips):", box_table(eh, er, ["l", "l"] + ["r"] * 7)]
    diags = diagnostic_lines(comparison, color)
    if diags:
        parts += ["", "Diagnostics:"] + diags
    parts += [""] + comparison.summary.get("lines", [])
    return "\n".join(parts) + "\n"


# -- markdown ---------------------------------------------------------------------------------

def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def md_table(header: Sequence[str], rows: Iterable[Sequence[str]], align: Sequence[str] | None = None) -> str:
    align = align or ["l"] + ["r"] * (len(header) - 1)
    out = ["| " + " | ".join(_md_escape(h) for h in header) + " |",
           "|" + "|".join("---" if a == "l" else "--:" for a in align) + "|"]
    out += ["| " + " | ".join(_md_escape(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def render_markdown(comparison: "Comparison") -> str:
    header, rows = comparison_rows(comparison, color=False)
    parts = ["\n".join(preamble(comparison))]
    current: list[Sequence[str]] = []
    title = None
    for row in rows + ["__end__"]:
        if isinstance(row, str):
            if title is not None:
                parts.append(f"### {title}\n\n{md_table(header, current, _align(header, comparison))}")
            title, current = row, []
        else:
            current.append(row)
    if not comparison.echo.empty:
        eh, er = echo_rows(comparison)
        parts.append("### Echo per batch\n\n" + md_table(eh, [r for r in er if not isinstance(r, str)], ["l", "l"] + ["r"] * 7))
    diags = diagnostic_lines(comparison, color=False)
    if diags:
        parts.append("### Diagnostics\n\n" + "\n".join(f"- {_md_escape(d)}" for d in diags))
    lines = comparison.summary.get("lines", [])
    if lines:
        parts.append("### Summary\n\n" + "\n".join(f"- {line.strip()}" for line in lines))
    return "\n\n".join(parts) + "\n"


# -- csv and json -----------------------------------------------------------------------------

def render_csv(comparison: "Comparison") -> str:
    buffer = io.StringIO()
    comparison.benchmarks.to_csv(buffer, index=False, lineterminator="\n")
    return buffer.getvalue()


def jsonable(value: Any) -> Any:
    """Plain JSON values: NaN/inf -> None, numpy scalars -> Python, containers recursively."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is pd.NA or value is pd.NaT:
        return None
    return value


def _per_runtime(sides: pd.DataFrame, column: str) -> dict[str, Any]:
    return {r["runtime"]: r[column] for r in sides.to_dict("records")}


def _per_runtime_ci(sides: pd.DataFrame, low: str, high: str) -> dict[str, Any]:
    return {r["runtime"]: [r[low], r[high]] for r in sides.to_dict("records")}


def comparison_to_dict(comparison: "Comparison") -> dict[str, Any]:
    """JSON document: data/README.md fields plus extras (documented in analysis/README.md)."""
    sides_by_key = {k: g for k, g in comparison.runtimes.groupby(["benchmark", "param"], sort=False)}
    diags = comparison.diagnostics
    entries = []
    for r in comparison.benchmarks.to_dict("records"):
        sides = sides_by_key.get((r["benchmark"], r["param"]), comparison.runtimes.iloc[0:0])
        entry = {
            "suite": r["suite"], "tier": int(r["tier"]), "benchmark": r["benchmark"], "param": r["param"],
            "label": r["label"], "compared": bool(r["compared"]),
            "ns_per_op": _per_runtime(sides, "median_ns_per_op"),
            "ns_per_op_ci": _per_runtime_ci(sides, "ci_low", "ci_high"),
            "ratio": r["ratio"], "ratio_ci": [r["ratio_ci_low"], r["ratio_ci_high"]],
            "ratio_method": r["ratio_method"], "p_value": r["p_value"], "q_value": r["q_value"],
            "verdict": r["verdict"] if isinstance(r["verdict"], str) else None,
            "verdict_reason": r["verdict_reason"],
            "hl_ratio": r["hl_ratio"], "hl_ratio_ci": [r["hl_ci_low"], r["hl_ci_high"]],
            "cliffs_delta": r["cliffs_delta"],
            "bytes_per_op": _per_runtime(sides, "bytes_per_op"),
            "allocs_per_op": _per_runtime(sides, "allocs_per_op"),
            "bytes_ratio": r["bytes_ratio"], "allocs_ratio": r["allocs_ratio"],
            "alloc_varies": _per_runtime(sides, "alloc_varies"),
            "n": _per_runtime(sides, "n"), "n_invocations": _per_runtime(sides, "n_invocations"),
            "invocation_medians": _per_runtime(sides, "invocation_medians"),
            "ns_per_op_mean": _per_runtime(sides, "mean_ns_per_op"),
            "rcv": _per_runtime(sides, "rcv"), "share_between": _per_runtime(sides, "share_between"),
            "ci_widest": _per_runtime(sides, "ci_widest"),
        }
        if r["suite"] == "echo":
            for column in ("avg_ns", "min_ns", "p75_ns", "p99_ns", "max_ns"):
                entry[column] = _per_runtime(sides, column)
            entry["avg_ns_ci"] = _per_runtime_ci(sides, "avg_ns_ci_low", "avg_ns_ci_high")
            entry["p99_ns_ci"] = _per_runtime_ci(sides, "p99_ns_ci_low", "p99_ns_ci_high")
            entry["avg_ratio"] = r["avg_ratio"]
            entry["avg_ratio_ci"] = [r["avg_ratio_ci_low"], r["avg_ratio_ci_high"]]
            entry["p99_ratio"] = r["p99_ratio"]
        if "regressed" in r:
            entry["regressed"] = bool(r["regressed"])
        mine = diags[(diags["benchmark"] == r["benchmark"]) & (diags["param"] == r["param"])] if not diags.empty else diags
        entry["diagnostics"] = [f"{d['level']}: {d['message']}" + (f" [{d['runtime']}]" if isinstance(d["runtime"], str) else "")
                                for d in mine.to_dict("records")]
        entries.append(entry)
    doc = {
        "run_id": comparison.run_id, "baseline": comparison.baseline, "candidate": comparison.candidate,
        "tie_band": comparison.tie_band, "confidence": comparison.confidence, "compared": comparison.compared,
        "ratio_definition": "baseline median ns/op / candidate median ns/op; > 1 means the candidate is faster",
        "benchmarks": entries, "summary": comparison.summary,
        "diagnostics": diags.to_dict("records") if not diags.empty else [],
    }
    for key in ("runtime", "run_a", "run_b"):
        if key in comparison.extra:
            doc[key] = comparison.extra[key]
    return jsonable(doc)


def render_json(comparison: "Comparison") -> str:
    return json.dumps(comparison_to_dict(comparison), indent=2, allow_nan=False) + "\n"


def render(comparison: "Comparison", fmt: str, color: bool = False) -> str:
    if fmt == "table":
        return render_table(comparison, color)
    if fmt == "markdown":
        return render_markdown(comparison)
    if fmt == "csv":
        return render_csv(comparison)
    if fmt == "json":
        return render_json(comparison)
    raise ValueError(f"unknown format {fmt!r}")
