"""The io suite across every runtime of a run: the matrix, the price of straight-line code and
one sentence per runtime (the io page, notebooks/io.ipynb, and the report index).

The io suite runs one `std.Io` program on several implementations (`ampere.io`,
`zig.threaded`, `zio`, and `zio.epoll`: zio built on epoll) and Tokio's twins (runtime/bench/README.md, "Io suite"); each of them is
compared with the baseline (Tokio) in the run's comparisons (artefact.RunComparisons). Here
they are put side by side:

- `sides`: one row per io benchmark × worker count × runtime: the centre of ns/op and of CPU
  ns/op with their intervals (benchmarks.RUNTIME_COLUMNS, the same numbers as every page).
- `matrix`: per io benchmark and worker count, every runtime's ratio to the fastest runtime of
  the row (its centre ÷ the fastest's, ≥ 1) with an interval, and the winner. The interval
  combines the two centres' intervals on the log scale: each centre's interval is symmetric
  there (stats.median_centre), half width h = (log high − log low) / 2, and the ratio's half
  width is √(h_runtime² + h_fastest²) — the normal approximation of the Welch interval the
  pairwise comparisons use, without the degrees-of-freedom correction (so slightly narrow for
  runs of few invocations). The fastest's own ratio is 1 with no interval. The winner is
  `clear` when the runner-up's interval lies wholly above 1 + tie band.
- `straight_line_price`: `ampere.io` ÷ `ampere` (the same row on Ampere's std.Io and on its
  native state-machine API), where both ran it: the price of writing straight-line code.
- `runtime_sentences`: one sentence per runtime (present or absent) for the index.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from . import schema
from .compare import Comparison

SUITE = "io"
KEY = ["benchmark", "param", "workers"]
SIDE_COLUMNS = ["benchmark", "param", "workers", "label", "headline", "runtime", "n_invocations",
                "median_ns_per_op", "ci_low", "ci_high", "cpu_ns_per_op", "cpu_ci_low", "cpu_ci_high"]
MATRIX_COLUMNS = SIDE_COLUMNS + ["ratio_to_fastest", "ratio_ci_low", "ratio_ci_high", "fastest", "winner_clear"]
PRICE_COLUMNS = ["benchmark", "param", "workers", "label", "ampere_ns_per_op", "ampere_io_ns_per_op",
                 "price", "price_ci_low", "price_ci_high"]


def has_io(comparisons: Mapping[str, Comparison]) -> bool:
    return any((c.runtimes["suite"] == SUITE).any() for c in comparisons.values())


def sides(comparisons: Mapping[str, Comparison]) -> pd.DataFrame:
    """One row per io benchmark × worker count × runtime (each runtime once, though the baseline
    is in every comparison), ordered by benchmark, param value, workers, runtime."""
    frames = [c.runtimes[c.runtimes["suite"] == SUITE] for c in comparisons.values()]
    frames = [f for f in frames if not f.empty]
    if not frames:
        return pd.DataFrame(columns=SIDE_COLUMNS)
    rows = pd.concat(frames, ignore_index=True).drop_duplicates(subset=[*KEY, "runtime"])
    headline = pd.concat([c.benchmarks[c.benchmarks["suite"] == SUITE][[*KEY, "headline"]] for c in comparisons.values()])
    rows = rows.merge(headline.drop_duplicates(subset=KEY), on=KEY, how="left")
    rows = rows[[c for c in SIDE_COLUMNS if c in rows.columns]].copy()
    order = rows.apply(lambda r: (schema.bench_sort_key(SUITE, 0, r["benchmark"], r["param"], r["workers"]),
                                  schema.runtime_rank(r["runtime"])), axis=1)
    return rows.assign(_order=order).sort_values("_order").drop(columns="_order").reset_index(drop=True)


def _half_width(low: float, high: float) -> float:
    if not (low > 0 and high > 0 and math.isfinite(low) and math.isfinite(high)):
        return math.nan
    return (math.log(high) - math.log(low)) / 2


def matrix(frame: pd.DataFrame, tie_band: float) -> pd.DataFrame:
    """`sides` plus each runtime's ratio to the fastest of its row (with interval) and the winner."""
    records = []
    for _, group in frame.groupby(KEY, sort=False, dropna=False):
        ranked = group.sort_values("median_ns_per_op")
        fastest = ranked.iloc[0]
        h_fast = _half_width(fastest["ci_low"], fastest["ci_high"])
        ratios = []
        for _, row in ranked.iterrows():
            ratio = row["median_ns_per_op"] / fastest["median_ns_per_op"]
            if row["runtime"] == fastest["runtime"]:
                low = high = math.nan
            else:
                h = math.sqrt(_half_width(row["ci_low"], row["ci_high"]) ** 2 + h_fast ** 2)
                low, high = ratio * math.exp(-h), ratio * math.exp(h)
            ratios.append((row, ratio, low, high))
        runner_up_low = ratios[1][2] if len(ratios) > 1 else math.nan
        clear = len(ratios) == 1 or (math.isfinite(runner_up_low) and runner_up_low > 1 + tie_band)
        for row, ratio, low, high in ratios:
            records.append({**row.to_dict(), "ratio_to_fastest": ratio, "ratio_ci_low": low, "ratio_ci_high": high,
                            "fastest": fastest["runtime"], "winner_clear": clear})
    out = pd.DataFrame.from_records(records, columns=MATRIX_COLUMNS)
    if out.empty:
        return out
    order = out.apply(lambda r: (schema.bench_sort_key(SUITE, 0, r["benchmark"], r["param"], r["workers"]),
                                 schema.runtime_rank(r["runtime"])), axis=1)
    return out.assign(_order=order).sort_values("_order").drop(columns="_order").reset_index(drop=True)


def wide(table: pd.DataFrame) -> pd.DataFrame:
    """The matrix as the page shows it: one row per io benchmark and worker count, per runtime
    `ns/op (CPU ns/op) ×ratio [low, high]`, and the winner."""
    rows = []
    for (bench, param, workers), group in table.groupby(KEY, sort=False, dropna=False):
        row: dict[str, Any] = {"benchmark": schema.bench_label(bench, param), "workers": workers}
        for _, side in group.iterrows():
            row[schema.display_name(side["runtime"])] = _cell(side)
        first = group.iloc[0]
        row["winner"] = schema.display_name(first["fastest"]) + ("" if first["winner_clear"] else " (within the band)")
        rows.append(row)
    return pd.DataFrame(rows)


def _ns(value: float) -> str:
    if not math.isfinite(value):
        return "—"
    return f"{value / 1000:.3g} µs" if value >= 1000 else f"{value:.3g} ns"


def _cell(side: pd.Series) -> str:
    ratio = "fastest" if not math.isfinite(side["ratio_ci_low"]) else (
        f"×{side['ratio_to_fastest']:.2f} [{side['ratio_ci_low']:.2f}, {side['ratio_ci_high']:.2f}]")
    return f"{_ns(side['median_ns_per_op'])} (CPU {_ns(side['cpu_ns_per_op'])}) {ratio}"


def straight_line_price(frame: pd.DataFrame) -> pd.DataFrame:
    """`ampere.io` ÷ `ampere` of ns/op on every io row both ran (> 1: std.Io costs more), with
    the interval of `matrix`; empty when no row has both."""
    records = []
    for (bench, param, workers), group in frame.groupby(KEY, sort=False, dropna=False):
        by_runtime = {r["runtime"]: r for _, r in group.iterrows()}
        native, std_io = by_runtime.get("ampere"), by_runtime.get("ampere.io")
        if native is None or std_io is None:
            continue
        price = std_io["median_ns_per_op"] / native["median_ns_per_op"]
        h = math.sqrt(_half_width(native["ci_low"], native["ci_high"]) ** 2
                      + _half_width(std_io["ci_low"], std_io["ci_high"]) ** 2)
        records.append({"benchmark": bench, "param": param, "workers": workers, "label": native["label"],
                        "ampere_ns_per_op": native["median_ns_per_op"], "ampere_io_ns_per_op": std_io["median_ns_per_op"],
                        "price": price, "price_ci_low": price * math.exp(-h), "price_ci_high": price * math.exp(h)})
    return pd.DataFrame.from_records(records, columns=PRICE_COLUMNS)


def price_sentence(price: pd.DataFrame, absent: Mapping[str, str]) -> str:
    """The price of straight-line code in one sentence, or why it is not measured."""
    if price.empty:
        why = (f"ampere.io is absent from this run ({absent['ampere.io']})" if "ampere.io" in absent
               else "no io row ran on both ampere.io and ampere's native API")
        return f"The price of straight-line code (ampere.io ÷ ampere) is not measured: {why}."
    logs = np.log(price["price"].to_numpy(dtype=float))
    return (f"ampere.io ÷ ampere over {len(price)} io rows both ran: geometric mean ×{math.exp(logs.mean()):.2f} "
            f"(from ×{price['price'].min():.2f} to ×{price['price'].max():.2f}; > 1: the std.Io version is slower).")


def runtime_sentences(table: pd.DataFrame, comparisons: Mapping[str, Comparison], absent: Mapping[str, str],
                      baseline: str) -> list[str]:
    """One sentence per runtime of the io suite: where it stands (headline rows: the run's
    num_workers, else the sweep's largest count), or why it is absent."""
    headline = table[table["headline"].fillna(True).astype(bool)] if not table.empty else table
    if headline.empty and not table.empty:  # a sweep without the run's num_workers: its largest count
        headline = table[table["workers"] == table["workers"].max()]
    out = []
    for runtime in sorted(set(headline["runtime"]) | set(absent), key=schema.runtime_rank):
        name = schema.display_name(runtime)
        if runtime in absent:
            out.append(f"{name}: absent from this run — {absent[runtime]}.")
            continue
        mine = headline[headline["runtime"] == runtime]
        wins = int((mine["fastest"] == runtime).sum())
        ratio = float(np.exp(np.log(mine["ratio_to_fastest"].to_numpy(dtype=float)).mean()))
        text = (f"{name}: fastest in {wins} of {len(mine)} io rows; on average ×{ratio:.2f} the time of the "
                "fastest runtime of each row")
        cmp = comparisons.get(runtime)
        if runtime != baseline and cmp is not None and cmp.compared:
            io_rows = cmp.benchmarks[(cmp.benchmarks["suite"] == SUITE)
                                     & cmp.benchmarks["workers"].isin(set(mine["workers"]))]
            ratios = io_rows["ratio"].to_numpy(dtype=float)
            ratios = ratios[np.isfinite(ratios) & (ratios > 0)]
            if ratios.size:
                counts = io_rows["verdict"].value_counts()
                text += (f"; against {schema.display_name(baseline)} a geometric mean of ×{math.exp(np.log(ratios).mean()):.2f} "
                         f"({schema.display_name(baseline)} ÷ {name}, > 1: {name} faster; wins {int(counts.get('win', 0))}, "
                         f"losses {int(counts.get('loss', 0))}, ties {int(counts.get('tie', 0))})")
        out.append(text + ".")
    return out


def absent_sides(info: Mapping[str, Any]) -> dict[str, str]:
    """run.json's absent runtimes (schema 3) with their reasons."""
    entries = info.get("runtimes") if info.get("schema_version", 1) >= 3 else None
    return {e["name"]: e["absent"] for e in entries or [] if isinstance(e, dict) and e.get("absent")}


def io_comparison(cmp: Comparison) -> Comparison:
    """The comparison restricted to its io rows (for the io page's forest plots)."""
    keep = cmp.benchmarks["suite"] == SUITE
    return replace(cmp, benchmarks=cmp.benchmarks[keep].reset_index(drop=True),
                   runtimes=cmp.runtimes[cmp.runtimes["suite"] == SUITE].reset_index(drop=True))
