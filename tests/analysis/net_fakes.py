"""Synthetic net-suite rows and runs (tests of analysis.net, the net tables, sentences, figures and page).

Ops per iteration as the bench programs count them (BENCHMARKS.md, "Net suite"): tcp_pingpong
NET_ROUNDS round trips, tcp_echo_conns conns x NET_ROUNDS, tcp_connect NET_CONNECT_OPS,
tcp_stream NET_STREAM_BYTES (one op = one byte).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from analysis_fakes import meta_for, rows_for, run_json, standard_rows, write_run

NET_ROUNDS = 200
NET_CONNECT_OPS = 20
NET_STREAM_BYTES = 2 * 2**20
#: (benchmark, param, ops per iteration, Tokio's ns per op)
NET_SPEC = (
    ("tcp_pingpong", "size=64", NET_ROUNDS, 20_000.0),
    ("tcp_pingpong", "size=4096", NET_ROUNDS, 25_000.0),
    ("tcp_pingpong", "size=65536", NET_ROUNDS, 60_000.0),
    ("tcp_echo_conns", "conns=1", NET_ROUNDS, 20_000.0),
    ("tcp_echo_conns", "conns=16", 16 * NET_ROUNDS, 8_000.0),
    ("tcp_echo_conns", "conns=128", 128 * NET_ROUNDS, 6_000.0),
    ("tcp_connect", "", NET_CONNECT_OPS, 80_000.0),
    ("tcp_stream", "size=1048576", NET_STREAM_BYTES, 0.5),
)
NET_CONSTANTS = {"num_workers": 4, "iterations": 10, "net_rounds": NET_ROUNDS, "net_connect_ops": NET_CONNECT_OPS,
                 "net_stream_bytes": NET_STREAM_BYTES}


def net_rows(runtime: str, speed: dict[str, float] | None = None, seed: int = 0, invocations: int = 3,
             iterations: int = 10, cpu_share: float = 0.6, name: str | None = None) -> list[list]:
    """Net rows of one runtime: `speed` maps a label (`tcp_connect`, `tcp_echo_conns conns=128`)
    to a factor on Tokio's time per op; `name` is the runtime column (a variant)."""
    rng = np.random.default_rng([seed, sum(map(ord, runtime))])
    speed = speed or {}
    rows: list[list] = []
    for benchmark, param, ops, ns in NET_SPEC:
        label = f"{benchmark} {param}" if param else benchmark
        factor = speed.get(label, 1.0)
        elapsed = [ns * factor * ops * np.exp(rng.normal(0, 0.02, iterations)) for _ in range(invocations)]
        rows += rows_for(name or runtime, "net", 0, benchmark, param, ops, elapsed, cpu_share=cpu_share)
    return rows


#: ampere: 2x faster on tcp_pingpong size=64, 1.5x slower at 128 connections, streams 1.25x more.
AMPERE_SPEED = {"tcp_pingpong size=64": 0.5, "tcp_echo_conns conns=1": 0.8, "tcp_echo_conns conns=128": 1.5,
                "tcp_stream size=1048576": 0.8}
#: ampere.nospin: like Tokio except tcp_connect, 1.25x faster.
NOSPIN_SPEED = {"tcp_connect": 0.8}


def write_net_run(data: Path, run_id: str = "20261122T101500Z-lab1", variants: bool = True,
                  micro: bool = True) -> Path:
    """A complete run with net rows (and the micro rows of standard_rows when `micro`):
    ampere (AMPERE_SPEED), ampere.nospin (NOSPIN_SPEED, when `variants`) and tokio."""
    def others(rt: str) -> list[list]:
        return [row for row in standard_rows(rt) if row[2] == "micro"] if micro else []

    rows = {"ampere": others("ampere") + net_rows("ampere", AMPERE_SPEED),
            "tokio": others("tokio") + net_rows("tokio")}
    if variants:
        rows["ampere.nospin"] = ([["ampere.nospin", *r[1:]] for r in others("ampere")]
                                 + net_rows("ampere", NOSPIN_SPEED, seed=3, name="ampere.nospin"))
    meta = {rt: {**meta_for("ampere" if rt.startswith("ampere") else rt), "runtime": rt} for rt in rows}
    info = run_json(run_id, suites=(["micro"] if micro else []) + ["net"], invocations=3, constants=NET_CONSTANTS)
    return write_run(data, run_id, runtimes=list(rows), rows=rows, meta=meta, info=info)
