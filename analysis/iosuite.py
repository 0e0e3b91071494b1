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
- `runtime_sentences`: one sentence per runtime (present or absent) for the index, each claim
  from intervals (`standing`: clearly fastest / clearly behind / not separated), the baseline
  comparison from the summary's geometric mean over rounds and the like-for-like verdicts;
  `peer_sentences`: ampere.io against each zio build, tallies of verdicts (issue 43: no count
  or ranking built on point estimates).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from . import schema
from . import summary as summary_
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
        row["winner"] = (schema.display_name(first["fastest"]) if first["winner_clear"]
                         else "none established (the runner-up's interval reaches into the tie band)")
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


def standing(table: pd.DataFrame, tie_band: float) -> pd.DataFrame:
    """Each runtime's place in each row of the matrix from intervals only: `clearly fastest`
    (fastest, and the runner-up's interval lies wholly above 1 + tie band), `clearly behind`
    (its own interval of the ratio to the fastest lies wholly above 1 + tie band), otherwise
    `not separated` (from the fastest: no order is established). Never from point estimates."""
    edge = 1 + tie_band
    if table.empty:
        return table.assign(standing=[])
    place = np.where((table["runtime"] == table["fastest"]) & table["winner_clear"].astype(bool), "clearly fastest",
                     np.where(table["ratio_ci_low"] > edge, "clearly behind", "not separated"))
    return table.assign(standing=place)


def _peer_counts(part: Mapping[str, Any]) -> str:
    counts = part.get("counts", {})
    return (f"{int(counts.get('win', 0))} wins, {int(counts.get('loss', 0))} losses, {int(counts.get('tie', 0))} ties, "
            f"{int(counts.get('inconclusive', 0))} inconclusive")


def cell_counts(cmp: Comparison, workers: set[int] | None = None) -> tuple[dict[str, int], int, list[str]]:
    """(verdict counts, number) of a comparison's like-for-like io cells (at `workers` only when
    given), and the benchmarks left out as not like for like."""
    rows = cmp.benchmarks[(cmp.benchmarks["suite"] == SUITE) & cmp.benchmarks["compared"].astype(bool)]
    if workers is not None:
        rows = rows[rows["workers"].isin(workers)]
    like = rows[rows["like_for_like"].astype(bool)]
    counts = {v: int((like["verdict"] == v).sum()) for v in ("win", "loss", "tie", "inconclusive")}
    return counts, len(like), sorted(set(rows.loc[~rows["like_for_like"].astype(bool), "benchmark"]))


def runtime_sentences(table: pd.DataFrame, comparisons: Mapping[str, Comparison], absent: Mapping[str, str],
                      baseline: str, tie_band: float = 0.05) -> list[str]:
    """One sentence per runtime of the io suite, every claim from an interval (issue 43): where
    it stands among the runtimes (`standing`) on the headline rows (the run's num_workers, else the
    sweep's largest count), and against the baseline the summary's like-for-like geometric mean
    with its interval over rounds and the verdict counts of the same rows — or why it is absent."""
    headline = table[table["headline"].fillna(True).astype(bool)] if not table.empty else table
    if headline.empty and not table.empty:  # a sweep without the run's num_workers: its largest count
        headline = table[table["workers"] == table["workers"].max()]
    ranked = standing(headline, tie_band)
    out = []
    for runtime in sorted(set(headline["runtime"]) | set(absent), key=schema.runtime_rank):
        name = schema.display_name(runtime)
        if runtime in absent:
            out.append(f"{name}: absent from this run — {absent[runtime]}.")
            continue
        mine = ranked[ranked["runtime"] == runtime]
        places = mine["standing"].value_counts()
        text = (f"{name}: of {len(mine)} io rows, clearly fastest in {int(places.get('clearly fastest', 0))}, "
                f"clearly behind the fastest in {int(places.get('clearly behind', 0))}, not separated from the "
                f"fastest in {int(places.get('not separated', 0))} (intervals of the ratio to the fastest, "
                f"±{tie_band:.0%} band)")
        cmp = comparisons.get(runtime)
        part = _io_part(cmp, set(mine["workers"])) if cmp is not None and cmp.compared else None
        if runtime != baseline and part and part.get("n_compared"):
            bn = schema.display_name(baseline)
            ratio = part.get("like_for_like_geomean_ratio")
            low, high = (part.get("like_for_like_geomean_ratio_ci") or [math.nan, math.nan])[:2]
            n_like = int(part.get("n_like_for_like") or 0)
            if ratio is not None and math.isfinite(ratio):
                interval = (f" [{low:.2f}, {high:.2f}]" if math.isfinite(low) and math.isfinite(high)
                            else " (no interval)")
                text += (f"; against {bn} the geometric mean over its {n_like} like-for-like rows is ×{ratio:.2f}"
                         f"{interval} ({bn} ÷ {name}, > 1: {name} faster; interval over rounds), "
                         f"{_peer_counts(part)}")
            left = part.get("not_like_for_like") or []
            if left:
                text += f" (not counted, not like for like: {', '.join(left)})"
        out.append(text + ".")
    return out


def _io_part(cmp: Comparison, workers: set[int]) -> dict[str, Any] | None:
    """The summary scope of a comparison's io rows: the summary's own (its headline rows), or where
    the run's num_workers is not among the shown worker counts the same scope computed over the
    rows at those counts (summary.scope_summary: the same estimator)."""
    part = (cmp.summary.get("by_suite") or {}).get(SUITE)
    if part and part.get("n_compared"):
        return part
    rows = cmp.benchmarks[(cmp.benchmarks["suite"] == SUITE) & cmp.benchmarks["workers"].isin(workers)]
    if rows.empty:
        return None
    return summary_.scope_summary(rows, (cmp.baseline, cmp.candidate), cmp.confidence)


def peer_sentences(peers: Mapping[str, Comparison]) -> list[str]:
    """ampere.io against each zio build (artefact.PEER_PAIRS), one build at a time, from the
    verdicts of every io cell (all worker counts, then per worker count): the tally a reader may
    quote. Empty when the run has no such pair."""
    out = []
    for cmp in peers.values():
        if not cmp.compared:
            continue
        bn, cn = schema.display_name(cmp.baseline), schema.display_name(cmp.candidate)
        build = {"zio": "zio's default build (io_uring)", "zio.epoll": "zio built on epoll"}.get(cmp.baseline, bn)
        counts, n, left = cell_counts(cmp)
        text = f"{cn} against {build}, every io cell: {_peer_counts({'counts': counts})} of {n}"
        workers = sorted(int(w) for w in cmp.benchmarks["workers"].dropna().unique())
        if len(workers) > 1:
            text += " (" + "; ".join(f"{w} worker{'s' if w != 1 else ''}: {_peer_counts({'counts': cell_counts(cmp, {w})[0]})}"
                                     for w in workers) + ")"
        if left:
            text += f"; not counted, not like for like: {', '.join(left)}"
        out.append(text + f". Each verdict is the cell's paired-median interval against the ±{cmp.tie_band:.0%} tie "
                          "band; an inconclusive cell establishes no order.")
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
