"""Display tables for the notebooks: pandas frames of formatted strings, in display order.

The numbers come from a Comparison (compare.py), the history (history.py) or the run's
metadata; the formatting is that of the CLI tables (fmt.py, render.py).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from . import net, schema
from .compare import Comparison
from .fmt import finite, fmt_busy, fmt_ns, fmt_ratio, fmt_ratio_ci
from .history import History
from .render import comparison_rows

VERDICT_COLORS = {"win": "#2ca02c", "loss": "#d62728", "tie": "#7f7f7f", "inconclusive": "#e6a700"}


def group_title(suite: str, tier: int, benchmark: str) -> str:
    if suite == "echo":
        return f"Echo — {benchmark}"
    return schema.group_title(suite, tier)


def groups(frame: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """Rows of a benchmark-keyed frame in display order, grouped by tier (echo: by benchmark)."""
    if frame.empty:
        return []
    workers = frame["workers"] if "workers" in frame else pd.Series([None] * len(frame), index=frame.index)
    keys = [schema.bench_sort_key(s, int(t), b, p, w) for s, t, b, p, w in
            zip(frame["suite"], frame["tier"], frame["benchmark"], frame["param"], workers)]
    ordered = frame.iloc[sorted(range(len(frame)), key=keys.__getitem__)]
    titles = [group_title(s, int(t), b) for s, t, b in zip(ordered["suite"], ordered["tier"], ordered["benchmark"])]
    return [(title, ordered[[t == title for t in titles]]) for title in dict.fromkeys(titles)]


def tier_tables(cmp: Comparison) -> list[tuple[str, pd.DataFrame]]:
    """The per-tier tables of the CLI (render.comparison_rows), one frame per group."""
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


def style_verdicts(frame: pd.DataFrame,
                   columns: tuple[str, ...] = ("Verdict", "CPU verdict", "Whole-invocation verdict")) -> Any:
    """A Styler that colours the verdict columns (HTML in the notebook and the report)."""
    def colour(value: Any) -> str:
        hue = VERDICT_COLORS.get(str(value))
        return f"color: {hue}; font-weight: bold" if hue else ""

    styler = frame.style.hide(axis="index")
    present = [c for c in columns if c in frame.columns]
    return styler.map(colour, subset=present) if present else styler


def cpu_table(cmp: Comparison) -> pd.DataFrame:
    """Wall time against CPU time per headline row: both ratios with intervals, CPU ns/op and
    cores busy per runtime, and whether a wall-time win costs more CPU."""
    bn, cn = schema.display_name(cmp.baseline), schema.display_name(cmp.candidate)
    columns = ["Benchmark", f"wall {bn}/{cn} [CI]", "Verdict", f"CPU {bn}/{cn} [CI]", "CPU verdict",
               f"whole-invocation CPU {bn}/{cn} [CI]", "Whole-invocation verdict",
               f"{cn} CPU/op", f"{bn} CPU/op", f"{cn} cores busy", f"{bn} cores busy", "Note"]
    rows = []
    for _, group in groups(cmp.benchmarks[cmp.benchmarks["headline"].astype(bool)]):
        for r in group.to_dict("records"):
            note = ""
            if r["verdict"] == "win" and r["cpu_verdict"] == "loss":
                note = f"faster but costs {1 / r['cpu_ratio']:.2f}× the CPU of {bn}"
            rows.append([r["label"], fmt_ratio_ci(r["ratio"], r["ratio_ci_low"], r["ratio_ci_high"]),
                         _text(r["verdict"]), fmt_ratio_ci(r["cpu_ratio"], r["cpu_ratio_ci_low"], r["cpu_ratio_ci_high"]),
                         _text(r["cpu_verdict"], "not recorded"),
                         _span_ratio(r), _text(r.get("span_cpu_verdict"), "not recorded"),
                         fmt_ns(r["candidate_cpu_ns_per_op"]),
                         fmt_ns(r["baseline_cpu_ns_per_op"]), fmt_busy(r["candidate_cores_busy"]),
                         fmt_busy(r["baseline_cores_busy"]), note])
    return pd.DataFrame(rows, columns=columns)


def _span_ratio(r: dict[str, Any]) -> str:
    ratio = r.get("span_cpu_ratio")
    if ratio is None or not finite(ratio):
        return "not recorded"
    return fmt_ratio_ci(ratio, r["span_cpu_ratio_ci_low"], r["span_cpu_ratio_ci_high"])


def _outside(r: dict[str, Any], role: str) -> str:
    """CPU outside the samples per iteration: the median over invocations and their range."""
    mid = r.get(f"{role}_outside_cpu_ns")
    if mid is None or not finite(mid):
        return "not recorded"
    return f"{fmt_ns(mid)} ({fmt_ns(r[f'{role}_outside_cpu_ns_low'])}–{fmt_ns(r[f'{role}_outside_cpu_ns_high'])})"


def span_cpu_table(cmp: Comparison, suite: str | None = None) -> pd.DataFrame:
    """CPU inside the samples against CPU over the whole invocation (span_cpu.py), per headline
    row of `suite` (all suites: None): both CPU ratios with intervals and verdicts, each side's
    whole-invocation CPU per op, and the CPU outside the samples per iteration (echo: per
    batch; median over the invocations, their range in brackets)."""
    bn, cn = schema.display_name(cmp.baseline), schema.display_name(cmp.candidate)
    frame = cmp.benchmarks[cmp.benchmarks["headline"].astype(bool)]
    if suite is not None:
        frame = frame[frame["suite"] == suite]
    rows = []
    for _, group in groups(frame):
        for r in group.to_dict("records"):
            rows.append([r["label"], fmt_ratio_ci(r["cpu_ratio"], r["cpu_ratio_ci_low"], r["cpu_ratio_ci_high"]),
                         _text(r["cpu_verdict"], "not recorded"), _span_ratio(r),
                         _text(r.get("span_cpu_verdict"), "not recorded"),
                         fmt_ns(r.get("candidate_span_cpu_ns_per_op", math.nan)),
                         fmt_ns(r.get("baseline_span_cpu_ns_per_op", math.nan)),
                         _outside(r, "candidate"), _outside(r, "baseline")])
    return pd.DataFrame(rows, columns=["Benchmark", f"CPU in samples {bn}/{cn} [CI]", "CPU verdict",
                                       f"whole-invocation CPU {bn}/{cn} [CI]", "Whole-invocation verdict",
                                       f"{cn} whole-invocation CPU/op", f"{bn} whole-invocation CPU/op",
                                       f"{cn} CPU outside samples / iteration", f"{bn} CPU outside samples / iteration"])


def _text(value: Any, missing: str = "n/a") -> str:
    return value if isinstance(value, str) else missing


def diagnostics_table(cmp: Comparison) -> pd.DataFrame:
    """Diagnostics as a readable table: level, where, runtime, message."""
    diags = cmp.diagnostics
    if diags.empty:
        return pd.DataFrame(columns=["Level", "Where", "Runtime", "Message"])
    where = [schema.bench_label(b, p) + ("" if pd.isna(w) else f" (w={int(w)})") if isinstance(b, str) else "whole run"
             for b, p, w in zip(diags["benchmark"], diags["param"], diags["workers"])]
    runtime = [schema.display_name(r) if isinstance(r, str) else "both" for r in diags["runtime"]]
    return pd.DataFrame({"Level": diags["level"], "Where": where, "Runtime": runtime, "Message": diags["message"]})


def fairness_display(frame: pd.DataFrame) -> pd.DataFrame:
    """The fairness table with readable column names."""
    names = {"benchmark": "Benchmark", "ampere_timed": "Timed on the ampere side",
             "tokio_timed": "Timed on the Tokio side", "untimed_setup": "Created outside the timed region",
             "differences": "Differences that remain", "same_semantics": "Same semantics"}
    return frame.rename(columns=names)


def machine_display(table: pd.DataFrame) -> pd.DataFrame:
    """The machine table (load.machine_table) with display names and 'same' as yes/no."""
    out = table.copy()
    out = out.rename(columns={rt: schema.display_name(rt) for rt in out.columns if rt != "same"})
    if "same" in out:
        out["same"] = ["yes" if v else "no" for v in out["same"]]
        out = out.rename(columns={"same": "same on all"})
    return out.astype(str).replace({"None": "—", "nan": "—"})


def echo_ratio_table(cmp: Comparison) -> pd.DataFrame:
    """Seed-004 style table: per echo row, avg and p99 of both runtimes and the ratios."""
    bn, cn = schema.display_name(cmp.baseline), schema.display_name(cmp.candidate)
    bench = cmp.benchmarks[cmp.benchmarks["suite"] == "echo"]
    columns = ["Benchmark", "Param", f"{cn} avg [CI]", f"{bn} avg [CI]", f"{cn} p99 [CI]", f"{bn} p99 [CI]",
               f"avg ratio {bn}/{cn} [CI]", f"p99 ratio {bn}/{cn}", "Verdict"]
    rows = []
    for r in bench.to_dict("records"):
        def side(role: str, stat: str) -> str:
            value = r[f"{role}_{stat}_ns"]
            if not finite(value):
                return "—"
            return f"{fmt_ns(value)} [{fmt_ns(r[f'{role}_{stat}_ns_ci_low'])}, {fmt_ns(r[f'{role}_{stat}_ns_ci_high'])}]"
        rows.append([r["benchmark"], r["param"], side("candidate", "avg"), side("baseline", "avg"),
                     side("candidate", "p99"), side("baseline", "p99"),
                     fmt_ratio_ci(r["avg_ratio"], r["avg_ratio_ci_low"], r["avg_ratio_ci_high"]),
                     fmt_ratio(r["p99_ratio"]) + ("x" if finite(r["p99_ratio"]) else ""), _text(r["verdict"])])
    return pd.DataFrame(rows, columns=columns)


def _interval(value: Any, low: Any, high: Any, fmt: Any, widest: Any = False) -> str:
    """`12.3 µs [11.9 µs, 12.8 µs]`, `12.3 µs [no CI]` or `—`; `widest`: the upper end is the
    largest observed value (marked `max`)."""
    if not finite(value):
        return "—"
    if not (finite(low) and finite(high)):
        return f"{fmt(value)} [no CI]"
    top = f"{fmt(high)} = max" if widest is True else fmt(high)
    return f"{fmt(value)} [{fmt(low)}, {top}]"


def fmt_mib_s(value: Any) -> str:
    """Throughput in MiB/s with 3 significant digits (1,234 MiB/s, 56.7 MiB/s), or `—`."""
    if not finite(value):
        return "—"
    value = float(value)
    text = f"{value:,.0f}" if value >= 100 else f"{value:.1f}" if value >= 10 else f"{value:.2f}"
    return f"{text} MiB/s"


def _runtime_cell(r: dict[str, Any]) -> str:
    name = schema.display_name(r["runtime"])
    return f"{name} (baseline)" if r["role"] == "baseline" else name


def net_latency_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per round-trip benchmark of the net suite (tcp_pingpong, tcp_echo_conns, tcp_connect) and
    runtime: median and p99 per op with intervals, the ratio baseline ÷ runtime with its
    interval and verdict, the p99 ratio, CPU per op, cores busy and the CPU ratio and verdict.
    `frame`: net.sides(...)."""
    rows = net.latency(frame)
    bn = schema.display_name(rows["against"].iloc[0]) if not rows.empty else "baseline"
    columns = ["Benchmark", "Runtime", "median per op [CI]", "p99 per op [CI]", f"{bn} ÷ runtime [CI]", "Verdict",
               f"p99 {bn} ÷ runtime", "CPU per op", "cores busy", f"CPU {bn} ÷ runtime [CI]", "CPU verdict"]
    out = []
    for r in rows.to_dict("records"):
        own = r["role"] == "baseline"
        out.append([r["label"], _runtime_cell(r), _interval(r["median_ns_per_op"], r["ci_low"], r["ci_high"], fmt_ns),
                     _interval(r["p99_ns_per_op"], r["p99_ci_low"], r["p99_ci_high"], fmt_ns, r["p99_ci_widest"]),
                     "" if own else fmt_ratio_ci(r["ratio"], r["ratio_ci_low"], r["ratio_ci_high"]),
                     "" if own else _text(r["verdict"], "not compared"),
                     "" if own else fmt_ratio(r["p99_per_op_ratio"]) + ("x" if finite(r["p99_per_op_ratio"]) else ""),
                     fmt_ns(r["cpu_ns_per_op"]), fmt_busy(r["cores_busy"]),
                     "" if own else fmt_ratio_ci(r["cpu_ratio"], r["cpu_ratio_ci_low"], r["cpu_ratio_ci_high"]),
                     "" if own else _text(r["cpu_verdict"], "not recorded")])
    return pd.DataFrame(out, columns=columns)


def net_throughput_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per tcp_stream row and runtime: MiB/s with its interval, ns per byte, the throughput ratio
    runtime ÷ baseline (= the time ratio baseline ÷ runtime) with its interval and verdict, CPU
    per byte, cores busy and the CPU verdict. `frame`: net.sides(...)."""
    rows = net.throughput(frame)
    bn = schema.display_name(rows["against"].iloc[0]) if not rows.empty else "baseline"
    columns = ["Benchmark", "Runtime", "MiB/s [CI]", "ns per byte [CI]", f"runtime ÷ {bn} throughput [CI]", "Verdict",
               "CPU per byte", "cores busy", f"CPU {bn} ÷ runtime [CI]", "CPU verdict"]
    out = []
    for r in rows.to_dict("records"):
        own = r["role"] == "baseline"
        out.append([r["label"], _runtime_cell(r),
                     _interval(r["mib_per_s"], r["mib_per_s_ci_low"], r["mib_per_s_ci_high"], fmt_mib_s),
                     _interval(r["median_ns_per_op"], r["ci_low"], r["ci_high"], fmt_ns),
                     "" if own else fmt_ratio_ci(r["ratio"], r["ratio_ci_low"], r["ratio_ci_high"]),
                     "" if own else _text(r["verdict"], "not compared"),
                     fmt_ns(r["cpu_ns_per_op"]), fmt_busy(r["cores_busy"]),
                     "" if own else fmt_ratio_ci(r["cpu_ratio"], r["cpu_ratio_ci_low"], r["cpu_ratio_ci_high"]),
                     "" if own else _text(r["cpu_verdict"], "not recorded")])
    return pd.DataFrame(out, columns=columns)


def scaling_table(cmp: Comparison) -> pd.DataFrame:
    """Per swept benchmark and worker count: ns/op and CPU ns/op of both sides, the ratio with
    its interval and the verdict (the benchmarks that ran at more than one worker count)."""
    bn, cn = schema.display_name(cmp.baseline), schema.display_name(cmp.candidate)
    rows = []
    for r in swept(cmp.benchmarks).to_dict("records"):
        rows.append([schema.bench_label(r["benchmark"], r["param"]), int(r["workers"]),
                     fmt_ns(r["candidate_median_ns_per_op"]), fmt_ns(r["baseline_median_ns_per_op"]),
                     fmt_ratio_ci(r["ratio"], r["ratio_ci_low"], r["ratio_ci_high"]), _text(r["verdict"]),
                     fmt_ns(r["candidate_cpu_ns_per_op"]), fmt_ns(r["baseline_cpu_ns_per_op"]),
                     fmt_ratio_ci(r["cpu_ratio"], r["cpu_ratio_ci_low"], r["cpu_ratio_ci_high"]),
                     _text(r["cpu_verdict"], "not recorded")])
    return pd.DataFrame(rows, columns=["Benchmark", "Workers", f"{cn} ns/op", f"{bn} ns/op", f"{bn}/{cn} [CI]",
                                       "Verdict", f"{cn} CPU/op", f"{bn} CPU/op", f"CPU {bn}/{cn} [CI]",
                                       "CPU verdict"])


#: Runtime metrics of the scaling page (counters of analysis/metrics.py) and their headings.
METRICS_SHOWN: dict[str, str] = {
    "polls": "polls", "lifo_hits": "LIFO hits", "handoffs": "hand-offs", "queue_handoffs": "queue hand-offs", "early_completions": "early completions", "lifo_requeues": "LIFO requeues", "parks": "parks",
    "unparks_issued": "unparks issued", "steals": "steals", "tasks_stolen": "tasks stolen",
    "restraints": "restraints", "dozes": "dozes",
    "inject_pushes": "inject pushes", "inject_pops": "inject pops", "budget_yields": "budget yields",
    "spin_ns": "spin ns",
}


def runtime_metrics_rows(per_op: pd.DataFrame, suite: str = "micro") -> pd.DataFrame:
    """Rows of metrics.per_op for micro Tiers 3–4 (or every row of another `suite`: io), by
    benchmark, worker count, then variant (in the order the variants first appear)."""
    rows = per_op[per_op["suite"] == suite]
    if suite == "micro":
        rows = rows[rows["tier"].isin(schema.OVERSUBSCRIBED_TIERS)]
    variants = list(dict.fromkeys(rows["runtime"]))
    keys = [(*schema.bench_sort_key(s, int(t), b, p, w), variants.index(r)) for r, s, t, b, p, w in
            zip(rows["runtime"], rows["suite"], rows["tier"], rows["benchmark"], rows["param"], rows["workers"])]
    return rows.iloc[sorted(range(len(rows)), key=keys.__getitem__)]


def fmt_per_op(value: Any) -> str:
    """Events per operation: three significant digits, thousands whole; 0 as 0; — if missing."""
    if not finite(value):
        return "—"
    if value == 0:
        return "0"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def runtime_metrics_table(per_op: pd.DataFrame, suite: str = "micro") -> pd.DataFrame:
    """Per Tier 3–4 benchmark (or io row: `suite="io"`), worker count and variant: the runtime's
    events per operation (METRICS_SHOWN that the run recorded; a counter an older run lacks is
    left out), averaged over the measured iterations of every invocation."""
    rows = runtime_metrics_rows(per_op, suite)
    shown = [c for c in METRICS_SHOWN if c in rows.columns and rows[c].notna().any()]
    columns = ["Benchmark", "Workers", "Variant", *[f"{METRICS_SHOWN[c]}/op" for c in shown]]
    out = [[schema.bench_label(r["benchmark"], r["param"]), int(r["workers"]), schema.display_name(r["runtime"]),
            *[fmt_per_op(r[c]) for c in shown]] for r in rows.to_dict("records")]
    return pd.DataFrame(out, columns=columns)


def swept(benchmarks: pd.DataFrame) -> pd.DataFrame:
    """Rows of the benchmarks that ran at more than one worker count, by benchmark then count."""
    recorded = benchmarks[benchmarks["workers"].notna()]
    counts = recorded.groupby(["suite", "tier", "benchmark", "param"])["workers"].transform("nunique")
    rows = recorded[counts > 1]
    keys = [schema.bench_sort_key(s, int(t), b, p, w) for s, t, b, p, w in
            zip(rows["suite"], rows["tier"], rows["benchmark"], rows["param"], rows["workers"])]
    return rows.iloc[sorted(range(len(rows)), key=keys.__getitem__)]


def regressions_table(history: History, candidate: str) -> pd.DataFrame:
    """Regressions as a display table (diff ratio = median in the earlier ÷ later run)."""
    cn = schema.display_name(candidate)
    rows = []
    for r in history.regressions.to_dict("records"):
        rows.append([r["label"], r["run_a"], r["run_b"], fmt_ratio_ci(r["ratio"], r["ratio_ci_low"], r["ratio_ci_high"]),
                     f"{1 / r['ratio']:.2f}× slower" if finite(r["ratio"]) and r["ratio"] > 0 else "—",
                     r["verdict_reason"]])
    return pd.DataFrame(rows, columns=["Benchmark", "Earlier run", "Later run", f"{cn} earlier ÷ later [CI]",
                                       f"{cn} in the later run", "Why"])


def paired_table(cmp: Comparison) -> pd.DataFrame:
    """Every compared row: the default ratio interval and verdict (the paired median: median
    per-round ratio, sign-test interval) beside the paired t (geometric-mean ratio over the rounds)
    and the unpaired Welch one, with the method and the rounds used and dropped."""
    rows = cmp.benchmarks[cmp.benchmarks["compared"].astype(bool)]
    return pd.DataFrame({
        "Benchmark": rows["label"],
        "Ratio (default method)": [fmt_ratio_ci(r, lo, hi) for r, lo, hi in
                                   zip(rows["ratio"], rows["ratio_ci_low"], rows["ratio_ci_high"])],
        "Verdict": rows["verdict"].map(_text),
        "Method": rows["ratio_method"].map(_method_name),
        "Ratio, paired t": [fmt_ratio_ci(r, lo, hi) for r, lo, hi in
                            zip(rows["paired_t_ratio"], rows["paired_t_ratio_ci_low"], rows["paired_t_ratio_ci_high"])],
        "Paired t verdict": rows["paired_t_verdict"].map(_text),
        "Ratio, unpaired": [fmt_ratio_ci(r, lo, hi) for r, lo, hi in
                            zip(rows["unpaired_ratio"], rows["unpaired_ratio_ci_low"], rows["unpaired_ratio_ci_high"])],
        "Unpaired verdict": rows["unpaired_verdict"].map(_text),
        "Rounds (dropped)": [f"{int(k)} ({int(d)})" if finite(k) and k > 0 else "unpaired"
                             for k, d in zip(rows["paired_rounds"], rows["rounds_dropped"].fillna(0))],
    }).reset_index(drop=True)


def _method_name(method: Any) -> str:
    """The method's name without its details: "paired median", "paired t", "unpaired Welch t"."""
    if not isinstance(method, str):
        return "—"
    for name in ("paired median", "paired t"):
        if method.startswith(name):
            return name
    return "unpaired Welch t" if method.startswith("Welch") else method.split(" (")[0]


def modes_table(cmp: Comparison) -> pd.DataFrame:
    """The rows where a side is multimodal: per runtime and level each mode's share of the
    invocations or iterations [95% interval] and its median, and the row's mode verdict."""
    columns = ["Benchmark", "Verdict by mode", "Runtime", "Level", "Mode", "Share [95% CI]", "Median ns/op"]
    marked = cmp.benchmarks[cmp.benchmarks["modes"].map(lambda v: isinstance(v, str))]
    records = []
    for row in marked.to_dict("records"):
        mine = cmp.modes[(cmp.modes["label"] == row["label"])]
        flagged = mine.groupby(["runtime", "level"])["multimodal"].transform("any").astype(bool)
        for m in mine[flagged].to_dict("records"):
            records.append([row["label"], row["modes"], schema.display_name(m["runtime"]), m["level"], m["mode"],
                            f"{m['share']:.0%} [{m['share_ci_low']:.0%}, {m['share_ci_high']:.0%}]",
                            fmt_ns(m["median_ns_per_op"])])
    return pd.DataFrame.from_records(records, columns=columns)
