"""Test helpers: synthetic run folders and fake benchmark programs (Python scripts).

`write_run` writes a run folder straight from a small spec; `install_fake_bench` writes an
executable that implements the bench program interface of runtime/bench/README.md (CSV,
meta JSON, `# start` / `# done` progress lines on stderr) with behaviours selected by
environment variables, so the orchestrator can be tested before the real programs exist.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Iterable

import numpy as np

from analysis.schema import CSV_COLUMNS, SCHEMA2_COLUMNS

REPO = Path(__file__).resolve().parents[2]

MACHINE = {"hostname": "lab1", "arch": "x86_64", "cpu_model": "Test CPU", "logical_cores": 8,
           "memory_bytes": 25769803776, "kernel": "6.1.0-test", "os": "Debian GNU/Linux 12 (bookworm)"}


def meta_for(runtime: str, **machine_changes) -> dict:
    return {"runtime": runtime, "runtime_version": "0.1.0",
            "compiler": "zig" if runtime == "ampere" else "rustc",
            "compiler_version": "0.16.0" if runtime == "ampere" else "1.95.0",
            "tokio_version": None if runtime == "ampere" else "1.48.0",
            "build_mode": "ReleaseFast" if runtime == "ampere" else "release",
            "target_cpu": "native", "allocator": "glibc malloc", "machine": {**MACHINE, **machine_changes}}


def default_workers(suite: str, tier: int) -> int:
    """The contract's worker count of a row: 0 for micro Tiers 0-2, 1 for echo, 4 otherwise."""
    if suite == "micro" and tier <= 2:
        return 0
    return 1 if suite == "echo" else 4


def rows_for(runtime: str, suite: str, tier: int, benchmark: str, param: str, ops: int,
             elapsed: Iterable[Iterable[float]], alloc_bytes: int = 0, alloc_count: int = 0,
             workers: int | None = None, cpu_share: float = 1.0) -> list[list]:
    """Schema-2 CSV rows: `elapsed` is a list per invocation of elapsed_ns per iteration;
    cpu_ns = cpu_share x elapsed_ns; workers by the contract's rule unless given."""
    count = default_workers(suite, tier) if workers is None else workers
    out = []
    for invocation, values in enumerate(elapsed):
        for iteration, value in enumerate(values):
            out.append([runtime, invocation, suite, tier, benchmark, param, iteration, ops,
                        int(round(value)), int(round(value * cpu_share)), count, alloc_bytes, alloc_count])
    return out


def write_csv(path: Path, rows: list[list], schema: int = 2) -> None:
    """Rows of rows_for as a CSV file; schema=1 drops the cpu_ns and workers columns."""
    columns = list(CSV_COLUMNS)
    if schema == 1:
        keep = [i for i, c in enumerate(CSV_COLUMNS) if c not in SCHEMA2_COLUMNS]
        columns = [CSV_COLUMNS[i] for i in keep]
        rows = [[row[i] for i in keep] for row in rows]
    lines = [",".join(columns)] + [",".join(str(v) for v in row) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def run_json(run_id: str, **extra) -> dict:
    info = {"run_id": run_id, "status": "complete", "suites": ["micro", "echo"], "profile": "full",
            "constants": {"num_workers": 4, "iterations": 10}, "invocation_order": [],
            "git": {"commit": "abc1234def", "dirty": False}, "hostname": "lab1",
            "started_utc": "2026-11-22T10:15:00Z", "ended_utc": "2026-11-22T10:25:00Z"}
    info.update(extra)
    return info


def standard_rows(runtime: str, speed: dict[str, float] | None = None, seed: int = 0,
                  invocations: int = 3, iterations: int = 10, echo_batches: int = 40) -> list[list]:
    """A small but realistic run: controls, a few micro benchmarks of every tier, echo."""
    rng = np.random.default_rng([seed, 0 if runtime == "ampere" else 1])
    speed = speed or {}
    spec = [("micro", 0, "floor_cas_store", "", 1_000_000, 5.0, 0, 0),
            ("micro", 0, "floor_fetch_add", "", 1_000_000, 4.0, 0, 0),
            ("micro", 1, "mutex", "", 1_000_000, 12.0, 0, 0),
            ("micro", 1, "oncecell_set", "", 1_000_000, 40.0, 64 if runtime == "tokio" else 0, 1 if runtime == "tokio" else 0),
            ("micro", 2, "oneshot", "", 100_000, 30.0, 72 if runtime == "tokio" else 0, 1 if runtime == "tokio" else 0),
            ("micro", 3, "mutex_contended", "", 10_000, 150.0, 2, 0),
            ("micro", 4, "task_spawn", "", 1_000, 20_000.0, 128, 2)]
    rows: list[list] = []
    for suite, tier, name, param, ops, base_ns, bytes_op, allocs_op in spec:
        factor = speed.get(name, 1.0)
        elapsed = [base_ns * factor * ops * np.exp(rng.normal(0, 0.03, iterations)) for _ in range(invocations)]
        rows += rows_for(runtime, suite, tier, name, param, ops, elapsed, bytes_op * ops, allocs_op * ops)
    for n in (1, 10):
        factor = speed.get("echo_f64", 1.0)
        elapsed = [8_000.0 * n * factor * np.exp(rng.normal(0, 0.1, echo_batches)) for _ in range(invocations)]
        rows += rows_for(runtime, "echo", 0, "echo_f64", f"n={n}", n, elapsed, 100 * n, 2 * n)
    return rows


def write_run(data_dir: Path, run_id: str = "20261122T101500Z-lab1", runtimes: Iterable[str] = ("ampere", "tokio"),
              rows: dict[str, list[list]] | None = None, meta: dict[str, dict] | None = None,
              info: dict | None = None, complete: bool = True, speed: dict[str, float] | None = None,
              seed: int = 0, schema: int = 2) -> Path:
    folder = data_dir / "runs" / run_id
    folder.mkdir(parents=True)
    for rt in runtimes:
        data = (rows or {}).get(rt)
        if data is None:
            data = standard_rows(rt, speed if rt == "ampere" else None, seed)
        write_csv(folder / f"{rt}.csv", data, schema)
        (folder / f"{rt}.meta.json").write_text(json.dumps((meta or {}).get(rt, meta_for(rt))), encoding="utf-8")
    if complete:
        (folder / "run.json").write_text(json.dumps(info if info is not None else run_json(run_id)), encoding="utf-8")
    return folder


# -- fake benchmark programs ------------------------------------------------------------------

FAKE_BENCH = r'''#!{python}
"""Fake {runtime}_bench implementing the bench program interface, schema 2 (tests only)."""
import argparse, json, os, random, subprocess, sys, time

RUNTIME = "{runtime}"
COLUMNS = "runtime,invocation,suite,tier,benchmark,param,iteration,ops,elapsed_ns,cpu_ns,workers,alloc_bytes,alloc_count"
MICRO = [(0, "floor_cas_store", 5.0), (1, "mutex", 12.0), (3, "mutex_contended", 150.0)]

if sys.argv[1:2] == ["http-server"]:  # tokio_bench's http server: each connection = 100 requests
    import socket, threading
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    if "--meta" in sys.argv:
        path = sys.argv[sys.argv.index("--meta") + 1]
        with open(path + ".tmp", "w") as f:
            json.dump({{"runtime": RUNTIME, "variant": RUNTIME, "variant_settings": {{}}, "runtime_version": "1",
                       "compiler": "fake", "hyper_version": "1.0.0", "machine": {{"logical_cores": 8}}}}, f)
        os.replace(path + ".tmp", path)
    print(f"listening {{listener.getsockname()[1]}}", flush=True)
    count = [0]
    def accept():
        while True:
            conn, _ = listener.accept()
            count[0] += 100
            conn.close()
    threading.Thread(target=accept, daemon=True).start()
    sys.stdin.read()
    print(f"requests {{count[0]}}", flush=True)
    sys.exit(0)

p = argparse.ArgumentParser()
p.add_argument("--variant", default=RUNTIME)
p.add_argument("--suite", default="micro")
p.add_argument("--quick", action="store_true")
p.add_argument("--filter", action="append", default=[])
p.add_argument("--workers", default="4")
p.add_argument("--set", action="append", default=[])
p.add_argument("--invocation", type=int, default=0)
p.add_argument("--csv")
p.add_argument("--meta")
p.add_argument("--list", action="store_true")
if {metrics_option}:  # the fake ampere takes --metrics, like ampere_bench; the fake tokio does not
    p.add_argument("--metrics")
a = p.parse_args()
VARIANT = a.variant
if VARIANT != RUNTIME and VARIANT.split(".")[0] != RUNTIME:
    print(f"error: variant {{VARIANT}} is not a {{RUNTIME}} variant", file=sys.stderr)
    sys.exit(2)

def env(name, default=""):
    for key in (f"FAKE_{{name}}_{{VARIANT.replace('.', '_')}}", f"FAKE_{{name}}_{{RUNTIME}}", f"FAKE_{{name}}"):
        if key in os.environ:
            return os.environ[key]
    return default

log = env("LOG")
if log and not a.list:
    with open(log, "a") as f:
        f.write(f"{{VARIANT}} {{a.invocation}} {{' '.join(sys.argv[1:])}}\n")
mode = env("MODE", "ok")
speed = float(env("SPEED", "1.0"))
iterations = 6
for item in a.set:
    k, v = item.split("=")
    if k == "iterations":
        iterations = int(v)
sweep = [int(w) for w in a.workers.split(",")]
rng = random.Random(hash((VARIANT, a.invocation)) & 0xffff)
benches = []
if a.suite in ("micro", "all"):
    for t, n, ns in MICRO:
        for w in (sweep if t >= 3 else [0]):
            benches.append(("micro", t, n, "", 1000, ns, w))
if a.suite in ("echo", "all"):
    benches += [("echo", 0, "echo_f64", f"n={{n}}", n, 8000.0, 1) for n in (1, 10)]
IO_PROGRAMS = ("zig.threaded", "zio", "zio.epoll", "ampere.io")
if a.suite == "io" and (RUNTIME in IO_PROGRAMS or RUNTIME == "tokio"):  # the io suite, at every worker count
    for w in sweep:
        benches += [("io", 0, "io_mutex_contended", "tasks=4", 1000, 9.0, w), ("io", 0, "io_spawn", "", 100, 400.0, w)]
if a.suite == "io" and RUNTIME == "ampere":  # ampere_bench's native io rows (no io_mutex_contended)
    benches += [("io", 0, "io_spawn", "", 100, 300.0, w) for w in sweep]
benches = [b for b in benches if not a.filter or any(f in b[2] for f in a.filter)]
if a.list:  # `suite tier benchmark param` per selected benchmark, like the real programs
    for b in benches:
        print(f"{{b[0]}} {{b[1]}} {{b[2]}} {{b[3]}}")
    sys.exit(0)
rows = []
COUNTERS = ["polls", "parks", "unparks_issued", "steals", "tasks_stolen", "inject_pushes", "spin_ns"]
metric_lines = []
spans = []  # the span file beside the CSV: gaps of 1 µs per iteration, 3 µs of CPU outside the samples
for suite, tier, name, param, ops, ns, workers in benches:
    print(f"# start suite={{suite}} benchmark={{name}} param={{param}}", file=sys.stderr, flush=True)
    if mode == "hang" and name == env("HANG_BENCH", "mutex"):
        child = subprocess.Popen(["sleep", "1000"])
        with open(env("CHILD_PID_FILE", os.devnull), "w") as f:
            f.write(str(child.pid))
        child.wait()
    if mode == "sleep" and name == "mutex":
        # keeps writing into the run's staging folder until killed (at most 60 s)
        with open(env("CHILD_PID_FILE", os.devnull), "w") as f:
            f.write(str(os.getpid()))
        with open(a.csv + ".partial", "a") as out:
            for _ in range(1200):
                out.write("x\n")
                out.flush()
                time.sleep(0.05)
        sys.exit(3)
    if mode == "fail" and name == "mutex":
        print(f"error: mutex: counter reached 999, expected 1000", file=sys.stderr, flush=True)
        sys.exit(1)
    times = []
    for i in range(iterations):
        elapsed = int(ns * ops * speed * (1 + 0.02 * rng.random()))
        times.append(elapsed)
        rows.append([VARIANT, a.invocation, suite, tier, name, param, i, ops, elapsed, elapsed, workers, 0, 0])
    if getattr(a, "metrics", None) and (tier >= 3 or suite != "micro"):  # ran on a runtime: counts that grow with the workers
        per_worker = [{{c: (k + 1) * iterations * ops // 10 + workers for k, c in enumerate(COUNTERS)}}
                      for _ in range(workers)]
        external = {{c: (3 if c == "inject_pushes" else 0) for c in COUNTERS}}
        total = {{c: sum(w[c] for w in per_worker) + external[c] for c in COUNTERS}}
        metric_lines.append({{"runtime": VARIANT, "invocation": a.invocation, "benchmark": name, "param": param,
                              "suite": suite, "tier": tier, "workers": workers, "iterations": iterations,
                              "ops": ops, "per_worker": per_worker, "external": external, "total": total}})
    spans.append([VARIANT, a.invocation, suite, tier, name, param, workers, iterations, iterations * ops,
                  sum(times) + 1000 * iterations, sum(times) + 3000 * iterations])
    times.sort()
    print(f"# done suite={{suite}} benchmark={{name}} param={{param}} median_ns_per_op={{times[len(times)//2]/ops:.3f}}",
          file=sys.stderr, flush=True)
    print(f"{{name}} {{param}} ok")
if mode == "badcsv":
    rows[1][8] = "fast"
if mode == "schema1":  # a program from before contract v2: one worker count, no cpu_ns / workers
    COLUMNS = COLUMNS.replace(",cpu_ns,workers", "")
    rows = [r[:9] + r[11:] for r in rows if r[3] < 3 or r[10] == sweep[0]]
if mode == "noworkers":
    rows = [r for r in rows if not (r[3] >= 3 and r[10] == sweep[-1])]
if a.csv and mode != "nocsv":
    tmp = a.csv + ".tmp"
    with open(tmp, "w") as f:
        f.write(COLUMNS + "\n")
        for r in rows:
            f.write(",".join(str(v) for v in r) + "\n")
    os.replace(tmp, a.csv)
    span_mode = env("SPAN", "ok")
    if span_mode == "ok" or (span_mode == "first" and a.invocation == 0):
        span = (a.csv[:-4] if a.csv.endswith(".csv") else a.csv) + ".span.csv"
        with open(span + ".tmp", "w") as f:
            f.write("runtime,invocation,suite,tier,benchmark,param,workers,iterations,ops,elapsed_ns,cpu_ns\n")
            for r in spans:
                f.write(",".join(str(v) for v in r) + "\n")
        os.replace(span + ".tmp", span)
metrics_mode = env("METRICS", "ok")
if getattr(a, "metrics", None) and metrics_mode != "none":
    text = "".join(json.dumps(m) + "\n" for m in metric_lines)
    if metrics_mode == "bad" and a.invocation == 1:
        text = text.replace('"tasks_stolen": ', '"tasks_stolen": -', 1)
    if metrics_mode == "wronginv":
        text = text.replace(f'"invocation": {{a.invocation}}', '"invocation": 7')
    if metrics_mode == "first" and a.invocation > 1:
        text = None
    if text is not None:
        with open(a.metrics + ".tmp", "w") as f:
            f.write(text)
        os.replace(a.metrics + ".tmp", a.metrics)
if a.meta:
    meta = {{"runtime": RUNTIME, "variant": VARIANT, "variant_settings": {{}}, "runtime_version": "0.1.0",
            "compiler": "fake", "compiler_version": "1", "tokio_version": None, "build_mode": "ReleaseFast",
            "target_cpu": "native", "allocator": "fake",
            "machine": {{"hostname": "lab1", "arch": "x86_64", "cpu_model": "Test", "logical_cores": 8,
                         "memory_bytes": 1, "kernel": "k", "os": "o"}}}}
    with open(a.meta + ".tmp", "w") as f:
        json.dump(meta, f)
    os.replace(a.meta + ".tmp", a.meta)
'''


def install_fake_bench(folder: Path, runtime: str, metrics: bool | None = None) -> Path:
    """A fake program; `metrics` (default: the ampere one) makes it take `--metrics PATH` and
    write one JSON line per benchmark that ran on a runtime (FAKE_METRICS: ok, none, bad,
    wronginv, first)."""
    path = folder / f"{runtime.replace('.', '_')}_bench"
    takes_metrics = runtime == "ampere" if metrics is None else metrics
    path.write_text(FAKE_BENCH.format(python=sys.executable, runtime=runtime, metrics_option=takes_metrics),
                    encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def cli_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAKE_", "AMPERE_DATA_DIR", "NO_COLOR"))}
    env.update(extra)
    return env


def run_cli_subprocess(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run `python -m analysis ...` in a fresh interpreter from the repo root."""
    return subprocess.run([sys.executable, "-m", "analysis", *map(str, args)], cwd=REPO, env=env or cli_env(),
                          capture_output=True, text=True, timeout=timeout)
