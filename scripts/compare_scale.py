"""How `compare` scales: its time and peak memory on a run and on a synthetic run with N times
its rows.

    .venv/bin/python scripts/compare_scale.py [RUN] [--factor 10] [--keep DIR]

The synthetic run repeats every invocation of RUN `factor` times (invocation k of copy c becomes
invocation c * K + k), multiplies each copy's timings by its own lognormal factor (sigma 0.05,
so the copies are different invocations, not duplicates) and each row by a small lognormal
noise, records CPU time as a random 60-140% of the wall time, and writes it as a complete
schema-2 run folder (temporary, or DIR with --keep). Each `compare --format json` runs in a
fresh interpreter; the script prints its wall time and CPU time (the command, not the
interpreter's start) and its peak resident memory (ru_maxrss), for RUN and for the synthetic run. A measurement on this
machine, not a test: other jobs on the machine change the times.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from analysis import load_run, schema  # noqa: E402
from analysis.files import write_json_atomic, write_text_atomic  # noqa: E402

SEED = 20261123


def contract_workers(rows: pd.DataFrame, num_workers: int) -> np.ndarray:
    """The worker count the contract gives a row: 0 for micro Tiers 0-2, 1 for echo, else num_workers."""
    no_runtime = (rows["suite"] == "micro") & rows["tier"].isin(schema.NO_RUNTIME_TIERS)
    return np.where(no_runtime, 0, np.where(rows["suite"] == "echo", schema.ECHO_WORKERS, num_workers))


def scaled_rows(rows: pd.DataFrame, factor: int, rng: np.random.Generator, num_workers: int) -> pd.DataFrame:
    invocations = int(rows["invocation"].max()) + 1
    copies = []
    for copy in range(factor):
        part = rows.copy()
        part["invocation"] = part["invocation"] + copy * invocations
        scale = float(np.exp(rng.normal(0, 0.05))) * np.exp(rng.normal(0, 0.01, len(part)))
        part["elapsed_ns"] = np.maximum(1, np.round(part["elapsed_ns"].to_numpy() * scale)).astype(np.int64)
        part["cpu_ns"] = np.round(part["elapsed_ns"] * rng.uniform(0.6, 1.4, len(part))).astype(np.int64)
        copies.append(part)
    out = pd.concat(copies, ignore_index=True)
    if out["workers"].isna().any():
        out["workers"] = contract_workers(out, num_workers)
    out["workers"] = out["workers"].astype(np.int64)
    return out[list(schema.CSV_COLUMNS)]


def write_scaled_run(source: Path, target_data: Path, factor: int) -> Path:
    """A complete schema-2 run folder with `factor` times the rows of `source`; returns its path."""
    run = load_run(source)
    rng = np.random.default_rng(SEED)
    folder = target_data / "runs" / f"{run.run_id.split('-')[0]}-x{factor}"
    folder.mkdir(parents=True)
    num_workers = int(run.constants.get("num_workers", 4))
    for rt in run.runtimes:
        rows = scaled_rows(run.rows(rt), factor, rng, num_workers)
        write_text_atomic(folder / f"{rt}.csv", rows.to_csv(index=False, lineterminator="\n"))
        if rt in run.meta:
            write_json_atomic(folder / f"{rt}.meta.json", run.meta[rt])
    # The runtime metrics are not part of what compare reads: the synthetic run has none.
    info = {k: v for k, v in run.info.items() if k != "metrics_files"}
    info.update(run_id=folder.name, schema_version=2, invocations=int(run.info.get("invocations", 1)) * factor,
                workers=run.info.get("workers") or [num_workers])
    write_json_atomic(folder / "run.json", info)
    return folder


PROBE = r"""
import contextlib, io, json, resource, sys, time
from analysis.cli import main
started, cpu = time.perf_counter(), time.process_time()
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(["compare", sys.argv[1], "--format", "json"])
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"code": code, "wall_s": time.perf_counter() - started, "cpu_s": time.process_time() - cpu,
                  "peak_mib": usage.ru_maxrss / 1024, "benchmarks": len(json.loads(out.getvalue())["benchmarks"])
                  if code == 0 else 0}))
"""


def measure(folder: Path) -> dict[str, float]:
    """compare --format json on `folder` in a fresh interpreter: wall and CPU seconds of the
    command (after the interpreter started), and its peak resident memory."""
    done = subprocess.run([sys.executable, "-c", PROBE, str(folder)], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0 or not done.stdout.strip():
        raise SystemExit(f"compare failed on {folder}: {done.stderr.strip()}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if result["code"] != 0:
        raise SystemExit(f"compare failed on {folder}: {done.stderr.strip()}")
    result["rows"] = sum(sum(1 for _ in p.open()) - 1 for p in folder.glob("*.csv"))
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", nargs="?", default="latest", help="run id, folder or latest (default)")
    parser.add_argument("--factor", type=int, default=10, help="times the rows (default 10)")
    parser.add_argument("--keep", type=Path, default=None, help="write the synthetic run under this data folder")
    args = parser.parse_args()
    source = load_run(args.run, ROOT / "data").path
    with tempfile.TemporaryDirectory(prefix="compare-scale-") as tmp:
        data = args.keep or Path(tmp)
        scaled = write_scaled_run(source, data, args.factor)
        for name, folder in (("run", source), (f"{args.factor}x rows", scaled)):
            m = measure(folder)
            print(f"{name:>10}: {m['rows']:>9,} rows, {m['benchmarks']} benchmarks: {m['wall_s']:6.1f} s wall, "
                  f"{m['cpu_s']:6.1f} s CPU, peak {m['peak_mib']:6.0f} MiB  ({folder})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
