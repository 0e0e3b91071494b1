"""The net suite (TCP over loopback) as the net page reads it: one tidy frame per run.

`sides(comparisons)` gathers the net rows of every comparison of a run (the primary candidate,
its variants, the baseline once) into one row per net benchmark x runtime, in display order
(benchmark order of the suite, then the parameter's value; within a benchmark the candidates in
the order of `comparisons`, the baseline last). Each row carries that runtime's statistics from
the comparison (benchmarks.RUNTIME_COLUMNS: the centre of ns/op with its interval, the p99 of
ns/op over the iterations with its order-statistic interval, CPU ns/op, cores busy, ...), the
pair statistics of its comparison against the baseline (ratio baseline / this runtime with its
interval and verdict, the CPU ratio, the p99 ratio; NaN / None on the baseline's own row) and,
for tcp_stream, the throughput.

What one op is (BENCHMARKS.md, "Net suite"; runtime/bench/net.zig, rust_bench/src/net.rs):
- tcp_pingpong (param size = payload bytes): one round trip on one connection, so ns/op is
  the round-trip time;
- tcp_echo_conns (param conns): one round trip of 64 B on one of `conns` connections served at
  once; ns/op = elapsed / (conns x NET_ROUNDS) is the time per round trip of the whole set (the
  inverse of the aggregate round-trip rate), not the latency one client sees (about conns x
  ns/op when the round trips do not overlap);
- tcp_connect: connect, accept, 1 B round trip, close;
- tcp_stream (param size = write chunk): one byte written and echoed back (ops = bytes), so
  throughput = 10^9 / (ns/op x 2^20) MiB/s. It is a monotone decreasing function of ns/op:
  the interval of the throughput is the interval of ns/op turned over, and the throughput
  ratio this / baseline equals the time ratio baseline / this (same interval, same verdict).

Nothing here estimates anything new: every number is a column of the comparison or that
conversion.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import pandas as pd

from . import schema
from .compare import Comparison

SUITE = "net"
#: Benchmarks whose op is a round trip (or a connection with one): read as latency.
LATENCY_BENCHMARKS: tuple[str, ...] = ("tcp_pingpong", "tcp_echo_conns", "tcp_connect")
#: Benchmarks whose op is one byte: read as throughput.
THROUGHPUT_BENCHMARKS: tuple[str, ...] = ("tcp_stream",)
#: The benchmark whose parameter is the number of connections served at once.
CONNS_BENCHMARK = "tcp_echo_conns"
BYTES_PER_MIB = 2**20
NS_PER_S = 1e9

SIDE_COLUMNS = ["n", "n_invocations", "median_ns_per_op", "ci_low", "ci_high", "ci_widest", "p99_ns_per_op",
                "p99_ci_low", "p99_ci_high", "p99_ci_widest", "cpu_ns_per_op", "cpu_ci_low", "cpu_ci_high",
                "cores_busy", "bytes_per_op", "allocs_per_op"]
PAIR_COLUMNS = ["compared", "like_for_like", "semantics_note", "ratio", "ratio_ci_low", "ratio_ci_high", "verdict",
                "verdict_reason", "cpu_ratio", "cpu_ratio_ci_low", "cpu_ratio_ci_high", "cpu_verdict",
                "p99_per_op_ratio"]
THROUGHPUT_COLUMNS = ["mib_per_s", "mib_per_s_ci_low", "mib_per_s_ci_high"]
COLUMNS = (["suite", "tier", "benchmark", "param", "value", "workers", "label", "runtime", "role", "against"]
           + SIDE_COLUMNS + PAIR_COLUMNS + THROUGHPUT_COLUMNS)


def mib_per_s(ns_per_byte: Any) -> float:
    """Throughput in MiB/s of a time per byte in ns (NaN where there is no positive finite time)."""
    try:
        value = float(ns_per_byte)
    except (TypeError, ValueError):
        return math.nan
    if not math.isfinite(value) or value <= 0:
        return math.nan
    return NS_PER_S / (value * BYTES_PER_MIB)


def has_net(comparisons: Mapping[str, Comparison]) -> bool:
    """Whether any runtime of the run has net rows."""
    return any((cmp.runtimes["suite"] == SUITE).any() for cmp in comparisons.values())


def _pair_values(pair: dict[str, Any] | None, role: str) -> dict[str, Any]:
    """The pair columns of a candidate's row; the baseline's own row (and a missing pair) has none."""
    if role == "candidate" and pair is not None:
        return {c: pair[c] for c in PAIR_COLUMNS}
    empty: dict[str, Any] = dict.fromkeys(PAIR_COLUMNS, math.nan)
    empty.update(verdict=None, verdict_reason=None, cpu_verdict=None, semantics_note="",
                 compared=bool(pair["compared"]) if pair is not None else False,
                 like_for_like=bool(pair["like_for_like"]) if pair is not None else True)
    return empty


def _throughput(side: dict[str, Any]) -> dict[str, float]:
    if side["benchmark"] not in THROUGHPUT_BENCHMARKS:
        return dict.fromkeys(THROUGHPUT_COLUMNS, math.nan)
    # a larger time per byte is a smaller throughput: the bounds swap
    return {"mib_per_s": mib_per_s(side["median_ns_per_op"]), "mib_per_s_ci_low": mib_per_s(side["ci_high"]),
            "mib_per_s_ci_high": mib_per_s(side["ci_low"])}


def _records(cmp: Comparison, roles: tuple[str, ...]) -> list[dict[str, Any]]:
    pairs = {r["label"]: r for r in cmp.benchmarks[cmp.benchmarks["suite"] == SUITE].to_dict("records")}
    runtimes = cmp.runtimes[(cmp.runtimes["suite"] == SUITE) & cmp.runtimes["role"].isin(roles)]
    out = []
    for side in runtimes.to_dict("records"):
        record = {c: side[c] for c in ("suite", "tier", "benchmark", "param", "workers", "label", "runtime", "role")}
        record["value"] = schema.param_sort_value(side["param"])
        record["against"] = cmp.baseline
        record.update({c: side[c] for c in SIDE_COLUMNS})
        record.update(_pair_values(pairs.get(side["label"]), side["role"]))
        record.update(_throughput(side))
        out.append(record)
    return out


def sides(comparisons: Mapping[str, Comparison]) -> pd.DataFrame:
    """One row per net benchmark x runtime of the run (COLUMNS), in display order; empty (with
    the columns) when the run has no net rows. `against` names the baseline of the ratios."""
    records: list[dict[str, Any]] = []
    order: list[str] = []
    for index, cmp in enumerate(comparisons.values()):
        records += _records(cmp, ("candidate",) if index else ("candidate", "baseline"))
        order.append(cmp.candidate)
        baseline = cmp.baseline
    frame = pd.DataFrame.from_records(records, columns=COLUMNS)
    if frame.empty:
        return frame
    order.append(baseline)
    rank = {rt: i for i, rt in enumerate(order)}
    keys = [(*schema.bench_sort_key(s, int(t), b, p, w), rank.get(rt, len(rank)))
            for s, t, b, p, w, rt in zip(frame["suite"], frame["tier"], frame["benchmark"], frame["param"],
                                         frame["workers"], frame["runtime"])]
    frame = frame.iloc[sorted(range(len(frame)), key=keys.__getitem__)].reset_index(drop=True)
    frame["workers"] = frame["workers"].astype("Int64")
    return frame


def latency(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows whose op is a round trip (tcp_pingpong, tcp_echo_conns, tcp_connect)."""
    return frame[frame["benchmark"].isin(LATENCY_BENCHMARKS)]


def throughput(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows whose op is one byte (tcp_stream), with MiB/s."""
    return frame[frame["benchmark"].isin(THROUGHPUT_BENCHMARKS)]


def conns(frame: pd.DataFrame) -> pd.DataFrame:
    """tcp_echo_conns rows, by runtime then number of connections (`value`)."""
    rows = frame[frame["benchmark"] == CONNS_BENCHMARK]
    return rows.sort_values(["runtime", "value"], kind="stable")


def runtimes_of(frame: pd.DataFrame) -> list[str]:
    """The runtimes of the frame in its order (candidates first, the baseline last)."""
    return list(dict.fromkeys(frame["runtime"]))

