"""Output formats of `compare` and `diff`: Unicode box table, markdown, CSV and JSON.

The box table groups rows by tier (Tier 0 controls first, then tiers 1-4, then echo and net),
with the seeds' columns (Benchmark | candidate | baseline | B/op candidate | B/op baseline |
Winner) plus the ratio with its interval and the verdict, and — when the run recorded CPU time —
the CPU ratio with its interval and verdict. Colours: green win, red loss, dim tie, yellow
inconclusive; off when stdout is not a terminal or NO_COLOR is set (non-empty). The JSON
document is built by document.py.
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
from typing import Any, Iterable, Sequence

import pandas as pd

from . import schema
from .compare import Comparison
from .document import comparison_to_dict
from .fmt import finite, fmt_amount, fmt_ns, fmt_ratio, fmt_ratio_ci

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


def tier_groups(benchmarks: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """(group title, rows) in display order: Tier 0 controls, tiers 1-4, then echo and net."""
    return [(schema.group_title(suite, int(tier)), rows)
            for (suite, tier), rows in benchmarks.groupby(["suite", "tier"], sort=False)]


def has_cpu(comparison: Comparison) -> bool:
    """Whether any compared row has a CPU ratio (schema 2 runs record CPU time)."""
    return bool(comparison.benchmarks["cpu_ratio"].notna().any())


def comparison_rows(comparison: Comparison, color: bool) -> tuple[list[str], list[Row]]:
    b, c = comparison.baseline, comparison.candidate
    bn, cn = schema.display_name(b), schema.display_name(c)
    if not comparison.compared:
        present = comparison.runtimes["runtime"].iloc[0] if not comparison.runtimes.empty else c
        role = "candidate" if present == c else "baseline"
        header = ["Benchmark", f"{schema.display_name(present)} median [CI]", "B/op", "allocs/op", "n", "rCV"]
        rows: list[Row] = []
        for title, group in tier_groups(comparison.benchmarks):
            rows.append(title)
            for r in group.to_dict("records"):
                rows.append([r["label"], f"{fmt_ns(r[f'{role}_median_ns_per_op'])} "
                             f"[{fmt_ns(r[f'{role}_ci_low'])}, {fmt_ns(r[f'{role}_ci_high'])}]",
                             fmt_amount(r[f"{role}_bytes_per_op"]), fmt_amount(r[f"{role}_allocs_per_op"]),
                             str(int(r[f"{role}_n"])) if finite(r[f"{role}_n"]) else "—",
                             f"{r[f'{role}_rcv']:.1%}" if finite(r[f"{role}_rcv"]) else "—"])
        return header, rows
    diff = "run_a" in comparison.extra
    cpu = has_cpu(comparison)
    header = ["Benchmark", cn, bn, f"B/op {cn}", f"B/op {bn}", f"{bn}/{cn} [{comparison.confidence:.0%} CI]",
              "Verdict", "Change" if diff else "Winner"] + (["CPU ratio [CI]", "CPU verdict"] if cpu else [])
    rows = []
    for title, group in tier_groups(comparison.benchmarks):
        rows.append(title)
        for r in group.to_dict("records"):
            verdict = r["verdict"] if isinstance(r["verdict"], str) else None
            row = [
                r["label"], fmt_ns(r["candidate_median_ns_per_op"]), fmt_ns(r["baseline_median_ns_per_op"]),
                fmt_amount(r["candidate_bytes_per_op"]), fmt_amount(r["baseline_bytes_per_op"]),
                fmt_ratio_ci(r["ratio"], r["ratio_ci_low"], r["ratio_ci_high"]),
                paint(verdict or "n/a", verdict, color),
                paint(diff_words(verdict, r["ratio"]) if diff else winner(verdict, r["ratio"], b, c), verdict, color),
            ]
            if cpu:
                cpu_verdict = r["cpu_verdict"] if isinstance(r["cpu_verdict"], str) else None
                row += [fmt_ratio_ci(r["cpu_ratio"], r["cpu_ratio_ci_low"], r["cpu_ratio_ci_high"]),
                        paint(cpu_verdict or "not recorded", cpu_verdict, color)]
            rows.append(row)
    return header, rows


def _align(header: Sequence[str], comparison: Comparison) -> list[str]:
    """Text columns left, numbers right; the verdict and winner columns are text."""
    if not comparison.compared:
        return ["l"] + ["r"] * (len(header) - 1)
    align = ["l"] + ["r"] * 5 + ["l", "l"]
    return align + ["r", "l"] if len(header) > len(align) else align


def echo_rows(comparison: Comparison) -> tuple[list[str], list[Row]]:
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


def preamble(comparison: Comparison) -> list[str]:
    """The header lines: what is compared, how, and the machine's load of the run(s) (issue 43:
    a disturbed run says so first)."""
    return (comparison.extra.get("machine_load") or []) + _what(comparison)


def _what(comparison: Comparison) -> list[str]:
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
    cpu = (f"CPU ratio = {b} / {c} CPU ns per op (> 1: {c} uses less CPU)" if has_cpu(comparison)
           else "CPU time: not recorded in this run")
    return [f"run {comparison.run_id}: {c} (candidate) vs {b} (baseline)",
            f"ratio = {b} median / {c} median ns/op (> 1: {c} faster); tie band "
            f"[{1 / (1 + band):.3f}, {1 + band:.3f}] (log-symmetric); {comparison.confidence:.0%} intervals; {cpu}"]


def diagnostic_lines(comparison: Comparison, color: bool) -> list[str]:
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


def render_table(comparison: Comparison, color: bool = False) -> str:
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


def render_markdown(comparison: Comparison) -> str:
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

def render_csv(comparison: Comparison) -> str:
    buffer = io.StringIO()
    comparison.benchmarks.to_csv(buffer, index=False, lineterminator="\n")
    return buffer.getvalue()


def render_json(comparison: Comparison) -> str:
    return json.dumps(comparison_to_dict(comparison), indent=2, allow_nan=False) + "\n"


def render(comparison: Comparison, fmt: str, color: bool = False) -> str:
    if fmt == "table":
        return render_table(comparison, color)
    if fmt == "markdown":
        return render_markdown(comparison)
    if fmt == "csv":
        return render_csv(comparison)
    if fmt == "json":
        return render_json(comparison)
    raise ValueError(f"unknown format {fmt!r}")


def render_many(comparisons: Sequence[Comparison], fmt: str, color: bool = False,
                absent: dict[str, str] | None = None, several: bool = False) -> str:
    """Several candidates against one baseline (`compare --candidate a,b` or `--suite io`).

    One candidate, unless `several` asks for the many-candidate form, renders exactly as `render`
    (table and markdown add the absent lines). Several: table and markdown print one comparison
    after another, then one line per runtime the run recorded absent; CSV concatenates the
    benchmark rows (one header; the `candidate` column tells them apart); JSON is one object
    `{"run_id", "baseline", "candidates", "absent", "comparisons": [document, ...]}`.
    """
    absent = absent or {}
    notes = [f"{name}: absent ({reason})" for name, reason in absent.items()]
    tail = "\n" + "\n".join(notes) + "\n" if notes and fmt in ("table", "markdown") else ""
    if len(comparisons) == 1 and not several:
        return render(comparisons[0], fmt, color) + tail
    if fmt == "json":
        doc = {"run_id": comparisons[0].run_id, "baseline": comparisons[0].baseline,
               "candidates": [c.candidate for c in comparisons], "absent": dict(absent),
               "comparisons": [comparison_to_dict(c) for c in comparisons]}
        return json.dumps(doc, indent=2, allow_nan=False) + "\n"
    if fmt == "csv":
        frames = [c.benchmarks.assign(baseline=c.baseline, candidate=c.candidate) for c in comparisons]
        buffer = io.StringIO()
        pd.concat(frames, ignore_index=True).to_csv(buffer, index=False, lineterminator="\n")
        return buffer.getvalue()
    return "\n".join(render(c, fmt, color) for c in comparisons) + tail
