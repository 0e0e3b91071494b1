"""The http suite's results: requests/s, p99 latency and server CPU per request, per runtime and
connection count, with intervals over invocations (the http page, notebooks/http.ipynb, and the
report index).

Input: a loaded run's `suite=http` rows (`ops` = requests wrk completed in the measured run,
`elapsed_ns` = its duration, `cpu_ns` = the server's CPU time over it) and its latency rows
(`Run.http`, from `<runtime>.http.csv`). Per sample: requests/s = ops ÷ elapsed, p99 as wrk
reported it, CPU per request = cpu_ns ÷ ops. Each is summarised per runtime × benchmark ×
connection count with `stats.median_centre` over the invocations (the geometric mean of the
invocation medians, interval from their spread: the same centre and interval as every other page).

`summary` is the table; `runtime_sentences` the index's sentences (one per runtime: requests/s
and p99 at every connection count of the plaintext route, and how it stands against the fastest
runtime there, from intervals only: clearly the fastest, clearly behind, or not separated).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from . import schema, stats

SUITE = "http"
KEY = ["runtime", "benchmark", "param"]
SUMMARY_COLUMNS = ["benchmark", "connections", "runtime", "workers", "n_invocations", "n_samples",
                   "rps", "rps_low", "rps_high", "p99_ns", "p99_low", "p99_high",
                   "cpu_ns_per_request", "cpu_low", "cpu_high", "p50_ns", "p999_ns"]


def has_http(run: Any) -> bool:
    return bool((run.data["suite"] == SUITE).any())


def samples(run: Any) -> pd.DataFrame:
    """One row per http sample: the CSV row joined with its latency row, plus requests/s,
    connections and CPU per request."""
    rows = run.data[run.data["suite"] == SUITE]
    if rows.empty:
        return pd.DataFrame(columns=[*KEY, "invocation", "iteration", "connections", "rps", "cpu_ns_per_request",
                                     "p50_ns", "p99_ns", "p999_ns", "workers"])
    joined = rows.merge(run.http, on=["runtime", "invocation", "benchmark", "param", "iteration"], how="left",
                        validate="one_to_one")
    return joined.assign(
        connections=joined["param"].map(schema.param_sort_value),
        rps=joined["ops"] / (joined["elapsed_ns"] / 1e9),
        cpu_ns_per_request=joined["cpu_ns"] / joined["ops"],
    )


def _centre(group: pd.DataFrame, column: str, confidence: float) -> tuple[float, float, float]:
    values = [g[column].to_numpy(dtype=float) for _, g in group.groupby("invocation", sort=True)]
    values = [v[np.isfinite(v)] for v in values]
    centre = stats.median_centre([v for v in values if v.size], confidence)
    return centre.estimate, centre.low, centre.high


def summary(run: Any, confidence: float = stats.DEFAULT_CONFIDENCE) -> pd.DataFrame:
    """Per runtime × benchmark × connection count: requests/s, p99 and CPU per request with
    their intervals over invocations (and the p50 / p99.9 centres). Closed loop (wrk) only: the
    open-loop rows are `open_loop`'s."""
    frame = samples(run)
    frame = frame[frame["benchmark"] != schema.HTTP_OPEN_LOOP]
    records = []
    for (runtime, bench, param), group in frame.groupby(KEY, sort=False):
        rps = _centre(group, "rps", confidence)
        p99 = _centre(group, "p99_ns", confidence)
        cpu = _centre(group, "cpu_ns_per_request", confidence)
        records.append({"benchmark": bench, "connections": schema.param_sort_value(param), "runtime": runtime,
                        "workers": int(group["workers"].iloc[0]), "n_invocations": int(group["invocation"].nunique()),
                        "n_samples": len(group), "rps": rps[0], "rps_low": rps[1], "rps_high": rps[2],
                        "p99_ns": p99[0], "p99_low": p99[1], "p99_high": p99[2], "cpu_ns_per_request": cpu[0],
                        "cpu_low": cpu[1], "cpu_high": cpu[2],
                        "p50_ns": _centre(group, "p50_ns", confidence)[0],
                        "p999_ns": _centre(group, "p999_ns", confidence)[0]})
    out = pd.DataFrame.from_records(records, columns=SUMMARY_COLUMNS)
    if out.empty:
        return out
    order = out.apply(lambda r: (schema.HTTP_ORDER.index(r["benchmark"]) if r["benchmark"] in schema.HTTP_ORDER else 99,
                                 r["connections"], schema.runtime_rank(r["runtime"])), axis=1)
    return out.assign(_order=order).sort_values("_order").drop(columns="_order").reset_index(drop=True)


def with_ratios(table: pd.DataFrame) -> pd.DataFrame:
    """`summary` plus each runtime's requests/s ÷ the best of its row (≤ 1), the runtime with the
    most requests/s (`fastest`, a point estimate: never quoted alone), `loses` (its interval lies
    wholly below the fastest's) and `clear` (it is the fastest and every other runtime loses):
    the only orders the sentences state."""
    if table.empty:
        return table.assign(of_fastest=[], fastest=[], loses=[], clear=[])
    parts = []
    for _, group in table.groupby(["benchmark", "connections"], sort=False):
        best = group.loc[group["rps"].idxmax()]
        # an interval of one invocation (or with no spread) has no width: it separates nothing
        real = (group["n_invocations"] >= 2) & (group["rps_low"] < group["rps_high"])
        loses = (group["runtime"] != best["runtime"]) & (group["rps_high"] < best["rps_low"]) & real & bool(
            real[group["runtime"] == best["runtime"]].all())
        clear = (group["runtime"] == best["runtime"]) & bool(loses.sum() == len(group) - 1) & (len(group) > 1)
        parts.append(group.assign(of_fastest=group["rps"] / best["rps"], fastest=best["runtime"], loses=loses,
                                  clear=clear))
    return pd.concat(parts).loc[table.index]


def wide(table: pd.DataFrame) -> pd.DataFrame:
    """The table as the page shows it: one row per route and connection count, per runtime
    `requests/s [low, high] · p99 [low, high] · CPU/request`."""
    rows = []
    for (bench, conns), group in table.groupby(["benchmark", "connections"], sort=False):
        row: dict[str, Any] = {"route": ROUTE_LABELS.get(bench, bench), "connections": conns}
        for side in group.itertuples():
            row[schema.display_name(side.runtime)] = (
                f"{_rate(side.rps)} [{_rate(side.rps_low)}, {_rate(side.rps_high)}] req/s · p99 {_ms(side.p99_ns)} "
                f"[{_ms(side.p99_low)}, {_ms(side.p99_high)}] · CPU {_us(side.cpu_ns_per_request)}/req")
        rows.append(row)
    return pd.DataFrame(rows)


ROUTE_LABELS = {"http_plaintext": "GET /plaintext", "http_bytes": "GET /bytes/16384"}
OPEN_COLUMNS = ["load_percent", "rate_rps", "runtime", "n_invocations", "achieved_rps", "p50_ns", "p50_low", "p50_high",
                "p99_ns", "p99_low", "p99_high", "p999_ns", "p999_low", "p999_high", "cpu_ns_per_request"]


def open_loop(run: Any, confidence: float = stats.DEFAULT_CONFIDENCE) -> pd.DataFrame:
    """The open-loop rows (oha at a fixed rate, latency corrected for coordinated omission): per
    load (percent of the slowest server's closed-loop capacity) and runtime, p50 / p99 / p99.9
    with intervals over invocations (stats.median_centre), the rate asked and achieved, and the
    server's CPU per request. Empty when the run has none."""
    frame = samples(run)
    frame = frame[frame["benchmark"] == schema.HTTP_OPEN_LOOP]
    rates = ((run.info.get("http") or {}).get("open_loop") or {}).get("rates_rps") or {}
    records = []
    for (runtime, param), group in frame.groupby(["runtime", "param"], sort=False):
        percent = schema.param_sort_value(param)
        cells = {name: _centre(group, f"{name}_ns", confidence) for name in ("p50", "p99", "p999")}
        records.append({"load_percent": percent, "rate_rps": float(rates.get(str(percent), math.nan)),
                        "runtime": runtime, "n_invocations": int(group["invocation"].nunique()),
                        "achieved_rps": float(group["rps"].median()),
                        **{f"{n}_ns": c[0] for n, c in cells.items()}, **{f"{n}_low": c[1] for n, c in cells.items()},
                        **{f"{n}_high": c[2] for n, c in cells.items()},
                        "cpu_ns_per_request": float(group["cpu_ns_per_request"].median())})
    out = pd.DataFrame.from_records(records, columns=OPEN_COLUMNS)
    if out.empty:
        return out
    order = out.apply(lambda r: (r["load_percent"], schema.runtime_rank(r["runtime"])), axis=1)
    return out.assign(_order=order).sort_values("_order").drop(columns="_order").reset_index(drop=True)


def open_loop_wide(table: pd.DataFrame) -> pd.DataFrame:
    """The open-loop table as the page shows it: one row per load, per runtime `p50 · p99 [low,
    high] · p99.9 [low, high]`."""
    rows = []
    for percent, group in table.groupby("load_percent", sort=False):
        row: dict[str, Any] = {"load": f"{percent}% ({_rate(group['rate_rps'].iloc[0])} req/s)"}
        for side in group.itertuples():
            row[schema.display_name(side.runtime)] = (
                f"p50 {_ms(side.p50_ns)} · p99 {_ms(side.p99_ns)} [{_ms(side.p99_low)}, {_ms(side.p99_high)}] · "
                f"p99.9 {_ms(side.p999_ns)} [{_ms(side.p999_low)}, {_ms(side.p999_high)}]")
        rows.append(row)
    return pd.DataFrame(rows)


def open_loop_sentences(table: pd.DataFrame, info: Mapping[str, Any]) -> list[str]:
    """The open loop in words: how it was run, then per load which p99 intervals lie wholly apart
    (an order only where they do; otherwise none is established)."""
    record = (info.get("http") or {}).get("open_loop")
    if not record:
        return ["No open-loop measurement in this run (a run from before issue 43, or a profile without one)."]
    if record.get("absent"):
        return [f"The open loop did not run: {record['absent']}."]
    gen = record.get("generator") or {}
    out = [f"Open loop: {gen.get('name', 'oha')} {gen.get('version') or '?'} at a fixed rate with latency correction "
           f"(each request timed from when it was due, so a stall counts for every request it delays), "
           f"{record.get('connections')} connections, {record.get('duration_s')} s per run, at "
           + ", ".join(f"{p}%" for p in record.get("load_percent", []))
           + f" of the slowest server's closed-loop capacity ({schema.display_name(str(record.get('slowest')))}, "
           f"{_rate(float((record.get('capacity_rps') or {}).get(record.get('slowest'), math.nan)))} req/s)."]
    for percent, group in table.groupby("load_percent", sort=False):
        best = group.loc[group["p99_ns"].idxmin()]
        real = bool(((group["n_invocations"] >= 2) & (group["p99_low"] < group["p99_high"])).all())
        behind = [schema.display_name(r.runtime) for r in group.itertuples()
                  if real and r.runtime != best["runtime"] and r.p99_low > best["p99_high"]]
        if behind and len(behind) == len(group) - 1:
            out.append(f"At {percent}%: {schema.display_name(best['runtime'])} has the lowest p99 "
                       f"({_ms(best['p99_ns'])}), its interval apart from every other runtime's.")
        else:
            apart = f"; clearly above it: {', '.join(behind)}" if behind else ""
            why = "the intervals over invocations overlap" if real else "fewer than 2 invocations: no interval"
            out.append(f"At {percent}%: no runtime's p99 is established as the lowest ({why}{apart}).")
    return out


def _rate(value: float) -> str:
    return "—" if not math.isfinite(value) else f"{value:,.0f}"


def _ms(value_ns: float) -> str:
    return "—" if not math.isfinite(value_ns) else f"{value_ns / 1e6:.3g} ms"


def _us(value_ns: float) -> str:
    return "—" if not math.isfinite(value_ns) else f"{value_ns / 1e3:.3g} µs"


def runtime_sentences(table: pd.DataFrame, absent: Mapping[str, str]) -> list[str]:
    """One sentence per runtime (present or absent): GET /plaintext requests/s and p99 at every
    connection count, and where it stands against the fastest runtime of each count."""
    ranked = with_ratios(table)
    plain = ranked[ranked["benchmark"] == "http_plaintext"] if not ranked.empty else ranked
    out = []
    runtimes = sorted(set(plain["runtime"]) | set(absent), key=schema.runtime_rank) if not plain.empty else sorted(absent, key=schema.runtime_rank)
    for runtime in runtimes:
        name = schema.display_name(runtime)
        if runtime in absent and (plain.empty or runtime not in set(plain["runtime"])):
            out.append(f"{name}: absent from the http suite — {absent[runtime]}.")
            continue
        mine = plain[plain["runtime"] == runtime]
        at = "; ".join(f"{r.connections} connections {_rate(r.rps)} req/s [{_rate(r.rps_low)}, {_rate(r.rps_high)}], "
                       f"p99 {_ms(r.p99_ns)}" for r in mine.itertuples())
        ahead = [str(r.connections) for r in mine.itertuples() if r.clear]
        behind = [str(r.connections) for r in mine.itertuples() if r.loses]
        apart = len(mine) - len(ahead) - len(behind)
        parts = []
        if ahead:
            parts.append(f"clearly the fastest at {', '.join(ahead)} connections")
        if behind:
            parts.append(f"clearly behind the fastest at {', '.join(behind)}")
        if apart:
            parts.append(f"no order established at {apart} of {len(mine)} connection counts")
        stand = ", ".join(parts) + " (intervals of requests/s over invocations)"
        out.append(f"{name} (GET /plaintext): {at}; {stand}.")
    return out




def settings_sentence(info: Mapping[str, Any]) -> str:
    """How the samples were taken (run.json `http`), in one sentence."""
    http = info.get("http") or {}
    settings, wrk = http.get("settings") or {}, http.get("load_generator") or {}
    pinning = http.get("cpu_pinning")
    pin = (f"server on CPU(s) {pinning.get('server_cpus')} and wrk on {pinning.get('wrk_cpus')} ({pinning.get('tool')})"
           if pinning else "server and wrk not pinned (one CPU)")
    return (f"wrk {wrk.get('version', '?')} with {wrk.get('threads', '?')} thread(s); each sample a "
            f"{settings.get('warmup_s', '?')} s warm-up run, then {settings.get('duration_s', '?')} s measured; "
            f"{settings.get('invocations', '?')} invocation(s) per runtime, {settings.get('samples', '?')} sample(s) "
            f"per case; {http.get('server_workers', '?')} server worker(s); {pin}; "
            f"{len(http.get('failed_samples') or [])} failed sample(s).")


def failed_samples(info: Mapping[str, Any]) -> pd.DataFrame:
    return pd.DataFrame((info.get("http") or {}).get("failed_samples") or [],
                        columns=["runtime", "invocation", "benchmark", "connections", "iteration", "reason"])


def absent_sides(info: Mapping[str, Any], table: pd.DataFrame) -> dict[str, str]:
    """Runtimes of the http suite with no rows: absent in run.json (schema 3), or an http-capable
    runtime of the run whose every sample failed."""
    entries = info.get("runtimes") if info.get("schema_version", 1) >= 3 else None
    absent = {e["name"]: e["absent"] for e in entries or [] if isinstance(e, dict) and e.get("absent")}
    return {k: v for k, v in absent.items() if k in ("ampere.io", "zig.threaded", "zio", "tokio")}
