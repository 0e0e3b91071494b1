"""Test helpers of the http suite: a run folder with http rows and latency files, a fake
server and a fake wrk (Python scripts) for the orchestrator's fault paths."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import numpy as np

from analysis import schema
from analysis_fakes import meta_for, run_json, standard_rows, write_csv

HTTP_RUNTIMES = ("ampere.io", "zig.threaded", "tokio")


def http_rows(runtime: str, rps: dict[int, float], invocations: int = 3, seed: int = 0) -> tuple[list[list], list[list]]:
    """(CSV rows, latency rows) of GET /plaintext at each connection count of `rps` (requests/s),
    2 s samples, one per invocation; p99 = connections / rps x 4."""
    rng = np.random.default_rng([seed, len(runtime)])
    rows, latency = [], []
    for conns, rate in rps.items():
        for k in range(invocations):
            requests = int(rate * 2 * np.exp(rng.normal(0, 0.02)))
            rows += [[runtime, k, "http", 0, "http_plaintext", f"conns={conns}", 0, requests, 2_000_000_000,
                      900_000_000, 1, 0, 0]]
            p50 = int(conns / rate * 1e9)
            latency.append([k, "http_plaintext", f"conns={conns}", 0, p50, 2 * p50, 4 * p50, 6 * p50, 0, 0])
    return rows, latency


def write_latency(path: Path, latency: list[list]) -> None:
    lines = [",".join(schema.HTTP_COLUMNS)] + [",".join(map(str, r)) for r in latency]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_http_run(data_dir: Path, run_id: str = "20261126T101500Z-lab1", with_micro: bool = True) -> Path:
    """ampere, ampere.io, zig.threaded and tokio; the last three with http rows (ampere.io
    slower than tokio at 512 connections), zio absent."""
    folder = data_dir / "runs" / run_id
    folder.mkdir(parents=True)
    speeds = {"ampere.io": {16: 34_000, 128: 25_000, 512: 20_000},
              "zig.threaded": {16: 25_000, 128: 20_000, 512: 15_000},
              "tokio": {16: 29_000, 128: 33_000, 512: 31_000}}
    names = ["ampere", *HTTP_RUNTIMES] if with_micro else list(HTTP_RUNTIMES)
    for rt in names:
        rows = standard_rows(rt) if with_micro and rt in ("ampere", "tokio") else []
        if rt in speeds:
            extra, latency = http_rows(rt, speeds[rt])
            rows += extra
            write_latency(folder / f"{rt}{schema.HTTP_SUFFIX}", latency)
        write_csv(folder / f"{rt}.csv", rows)
        meta = {**meta_for(rt), "variant": rt}
        (folder / f"{rt}.meta.json").write_text(json.dumps(meta), encoding="utf-8")
    info = run_json(run_id, schema_version=3, suites=["micro", "echo", "http"] if with_micro else ["http"],
                    runtimes=[*({"name": n, "versions": {}} for n in names), {"name": "zio", "versions": {},
                                                                             "absent": "zio package not cached"}],
                    http={"load_generator": {"name": "wrk", "version": "4.1.0", "threads": 1},
                          "cpu_pinning": {"tool": "taskset", "server_cpus": [0], "wrk_cpus": [1]},
                          "server_workers": 1,
                          "settings": {"connections": [16, 128, 512], "bytes_connections": [], "warmup_s": 1,
                                       "duration_s": 2, "samples": 1, "invocations": 3},
                          "failed_samples": [{"runtime": "zig.threaded", "invocation": 1, "benchmark": "http_plaintext",
                                              "connections": 512, "iteration": 0, "reason": "socket errors (read 3)"}]})
    (folder / "run.json").write_text(json.dumps(info), encoding="utf-8")
    return folder


FAKE_SERVER = r'''#!{python}
"""Fake http server (tests): prints `listening <port>`, counts connections (each = 100
requests, what the fake wrk reports), exits at stdin EOF with `requests N` (+ FAKE_EXTRA).
With the marker file missing it creates it and exits with code 3 at its first connection."""
import os, socket, sys, threading
marker, extra = sys.argv[1], int(sys.argv[2])
crash = not os.path.exists(marker)
if crash:
    open(marker, "w").close()
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(64)
print(f"listening {{listener.getsockname()[1]}}", flush=True)
count = [0]
def accept():
    while True:
        conn, _ = listener.accept()
        if crash:
            os._exit(3)
        count[0] += 100
        conn.close()
threading.Thread(target=accept, daemon=True).start()
sys.stdin.read()
print(f"requests {{count[0] + extra}}", flush=True)
'''

FAKE_WRK = r'''#!{python}
"""Fake wrk (tests): connects once to the URL's port, waits a little, reports 100 requests."""
import json, socket, sys, time
url = sys.argv[-1]
port = int(url.split(":")[2].split("/")[0])
try:
    socket.create_connection(("127.0.0.1", port)).close()
except OSError:
    pass
time.sleep(0.3)
report = {{"requests": 100, "duration_us": 1000000, "bytes": 100 * (16384 + 120),
          "errors": {{"connect": 0, "read": 0, "write": 0, "status": 0, "timeout": 0}},
          "latency_us": {{"p50": 100, "p90": 200, "p99": 300, "p999": 400, "max": 500}}}}
print("Running 1s test")
print("WRK_JSON " + json.dumps(report))
'''


FAKE_OHA = r'''#!{python}
"""Fake oha (tests): connects once, then reports a constant-rate run as oha's JSON."""
import json, socket, sys, time
if sys.argv[1:] == ["--version"]:
    print("oha 1.16.0")
    sys.exit(0)
url = sys.argv[-1]
port = int(url.split(":")[2].split("/")[0])
rate = float(sys.argv[sys.argv.index("-q") + 1])
assert "--latency-correction" in sys.argv and sys.argv[sys.argv.index("--output-format") + 1] == "json"
try:
    socket.create_connection(("127.0.0.1", port)).close()
except OSError:
    pass
time.sleep(0.2)
n = int(rate)
print(json.dumps({{"summary": {{"successRate": 1.0, "total": 1.0, "slowest": 0.004, "fastest": 0.0001,
                                "requestsPerSec": rate, "totalData": 13 * n, "sizePerRequest": 13}},
                  "latencyPercentiles": {{"p50": 0.0005, "p90": 0.001, "p99": 0.002, "p99.9": 0.003}},
                  "statusCodeDistribution": {{"200": n}}, "errorDistribution": {{"aborted due to deadline": 3}}}}))
'''


def install(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text.format(python=sys.executable), encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path
