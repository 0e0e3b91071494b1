"""Allocations per row and peak memory per runtime, for the io and http pages (issue 43 item 4).

- `io_table(comparisons)`: one row per io benchmark × worker count × runtime with allocations
  and bytes per op (the mean over measured iterations, benchmarks.describe_side), and the
  ratio to the baseline's — only where both are non-zero and the row is like for like (a ratio
  of or to zero, or of two different operations, is no quantity). Sums over rows are not given:
  per-op means of different operations do not add up.
- `io_wide(table)`: the page's view, one row per benchmark and worker count.
- `peak_rss(info, suite)`: per runtime, the peak resident set of its processes of one suite
  over the invocations (run.json `invocation_order[].peak_rss_bytes`: VmHWM of each
  program process, read while it runs; the http servers' at each invocation's end): median and largest. Allocation counts miss what
  does not go through the counted allocator — fiber stacks are mmap'ed, zio pools its own
  memory, thread stacks are invisible — and peak RSS sees it all.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from typing import Any

import pandas as pd

from . import schema
from .compare import Comparison

IO_COLUMNS = ["benchmark", "param", "workers", "label", "runtime", "like_for_like", "allocs_per_op", "bytes_per_op",
              "allocs_ratio", "bytes_ratio"]
RSS_COLUMNS = ["runtime", "suite", "processes", "median_bytes", "max_bytes"]


def _ratio(baseline: float, candidate: float, like: bool) -> float:
    if not like or not (baseline > 0 and candidate > 0):
        return math.nan
    return baseline / candidate


def io_table(comparisons: Mapping[str, Comparison]) -> pd.DataFrame:
    """Allocations and bytes per op of every io row and runtime, with the ratio baseline ÷ runtime
    where both are non-zero and the row is like for like (NaN otherwise; the baseline's own row
    has none)."""
    records, seen = [], set()
    for cmp in comparisons.values():
        rows = cmp.benchmarks[cmp.benchmarks["suite"] == "io"]
        for r in rows.to_dict("records"):
            like = bool(r["like_for_like"])
            for role, runtime in (("baseline", cmp.baseline), ("candidate", cmp.candidate)):
                key = (r["benchmark"], r["param"], r["workers"], runtime)
                allocs, nbytes = r[f"{role}_allocs_per_op"], r[f"{role}_bytes_per_op"]
                if key in seen or not isinstance(allocs, (int, float)) or not math.isfinite(allocs):
                    continue
                seen.add(key)
                is_base = role == "baseline"
                records.append({"benchmark": r["benchmark"], "param": r["param"], "workers": r["workers"],
                                "label": r["label"], "runtime": runtime, "like_for_like": like,
                                "allocs_per_op": allocs, "bytes_per_op": nbytes,
                                "allocs_ratio": math.nan if is_base else _ratio(r["baseline_allocs_per_op"], allocs, like),
                                "bytes_ratio": math.nan if is_base else _ratio(r["baseline_bytes_per_op"], nbytes, like)})
    out = pd.DataFrame.from_records(records, columns=IO_COLUMNS)
    if out.empty:
        return out
    order = out.apply(lambda r: (schema.bench_sort_key("io", 0, r["benchmark"], r["param"], r["workers"]),
                                 schema.runtime_rank(r["runtime"])), axis=1)
    return out.assign(_order=order).sort_values("_order").drop(columns="_order").reset_index(drop=True)


def _amount(value: float) -> str:
    if not math.isfinite(value):
        return "—"
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def io_wide(table: pd.DataFrame, baseline: str = "tokio") -> pd.DataFrame:
    """One row per io benchmark and worker count; per runtime `allocs/op · B/op`, with
    `(×r fewer)` against the baseline where the ratio is defined."""
    rows = []
    for (bench, param, workers), group in table.groupby(["benchmark", "param", "workers"], sort=False, dropna=False):
        row: dict[str, Any] = {"benchmark": schema.bench_label(bench, param), "workers": workers}
        for side in group.itertuples():
            cell = f"{_amount(side.allocs_per_op)} allocs · {_amount(side.bytes_per_op)} B"
            if math.isfinite(side.allocs_ratio):
                cell += f" (÷{side.allocs_ratio:.3g} vs {schema.display_name(baseline)})"
            row[schema.display_name(side.runtime)] = cell
        if not group["like_for_like"].iloc[0]:
            row["note"] = "not like for like: no ratio"
        rows.append(row)
    return pd.DataFrame(rows)


def peak_rss(info: Mapping[str, Any], suite: str) -> pd.DataFrame:
    """Per runtime: the peak resident set of its `suite` processes over the invocations (median,
    largest) — empty for a run from before the record."""
    entries = list(info.get("invocation_order") or [])
    if suite == "http":
        entries = list((info.get("http") or {}).get("invocation_order") or [])
    by_runtime: dict[str, list[int]] = {}
    for e in entries:
        if not isinstance(e, Mapping) or not isinstance(e.get("peak_rss_bytes"), int):
            continue
        if suite != "http" and e.get("suite") != suite:
            continue
        by_runtime.setdefault(str(e.get("runtime")), []).append(e["peak_rss_bytes"])
    records = [{"runtime": rt, "suite": suite, "processes": len(v), "median_bytes": statistics.median(v),
                "max_bytes": max(v)} for rt, v in by_runtime.items()]
    out = pd.DataFrame.from_records(records, columns=RSS_COLUMNS)
    if out.empty:
        return out
    return out.assign(_o=out["runtime"].map(schema.runtime_rank)).sort_values("_o").drop(columns="_o").reset_index(drop=True)


def rss_wide(table: pd.DataFrame) -> pd.DataFrame:
    """The peak RSS table as the pages show it (MiB)."""
    return pd.DataFrame([{"runtime": schema.display_name(r.runtime), "processes": r.processes,
                          "peak RSS, median": f"{r.median_bytes / 2**20:,.1f} MiB",
                          "peak RSS, largest": f"{r.max_bytes / 2**20:,.1f} MiB"} for r in table.itertuples()])
