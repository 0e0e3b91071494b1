"""Samples that cannot be right: flagged as diagnostics (code `absurd_sample`) so that no mean
or median silently includes them.

The loader checks each value on its own (an integer, in range); this checks a sample against
its row (one runtime's samples of one benchmark key, every invocation) and the machine:
- **time**: ns/op more than ABSURD_FACTOR times above or below the row's median ns/op, or one
  sample longer than MAX_SAMPLE_NS (a day: no invocation runs that long, the orchestrator's
  watchdog stops one after `--timeout`, 600 s by default). A clock read wrong (31 years) or a
  counter that wrapped shows up here; real noise (a preempted iteration, 10-100x) does not;
- **CPU**: cpu_ns above what the process could have used, CPU_FACTOR x logical cores x
  elapsed_ns plus CPU_SLACK_NS per core (the process CPU clock lags by up to one scheduler
  tick per thread running elsewhere, runtime/bench/README.md "CPU time"). Only where the side's
  meta.json gives `machine.logical_cores`; a schema-1 run has no CPU time and nothing to check.
One record per row and runtime, naming the first few samples (invocation, iteration).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from . import schema

ABSURD_FACTOR = 1000.0
MAX_SAMPLE_NS = 86_400 * 10**9
CPU_FACTOR = 2.0
CPU_SLACK_NS = 10_000_000
#: Samples named per record (the rest are counted).
SHOWN = 3


def _duration(ns: float) -> str:
    """A duration in the unit that reads best (ns .. years)."""
    for unit, size in (("years", 365.25 * 86_400e9), ("days", 86_400e9), ("h", 3_600e9), ("s", 1e9),
                       ("ms", 1e6), ("µs", 1e3)):
        if ns >= size:
            return f"{ns / size:.3g} {unit}"
    return f"{ns:.3g} ns"


def _cores(meta: dict[str, Any] | None) -> int | None:
    cores = ((meta or {}).get("machine") or {}).get("logical_cores")
    return cores if isinstance(cores, int) and not isinstance(cores, bool) and cores >= 1 else None


def absurd_masks(rows: pd.DataFrame, cores: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(time mask, CPU mask, the row median ns/op per sample) over `rows` (one runtime's CSV rows)."""
    key = list(schema.BENCH_KEY)
    per_op = (rows["elapsed_ns"] / rows["ops"]).to_numpy(dtype=np.float64)
    median = rows.assign(_per_op=per_op).groupby(key, sort=False, dropna=False, observed=True)["_per_op"] \
        .transform("median").to_numpy(dtype=np.float64)
    elapsed = rows["elapsed_ns"].to_numpy(dtype=np.float64)
    time = (per_op > median * ABSURD_FACTOR) | (per_op * ABSURD_FACTOR < median) | (elapsed > MAX_SAMPLE_NS)
    cpu = np.zeros(len(rows), dtype=bool)
    if cores is not None and "cpu_ns" in rows:
        cpu_ns = rows["cpu_ns"].to_numpy(dtype=np.float64)
        with np.errstate(invalid="ignore"):
            cpu = np.nan_to_num(cpu_ns, nan=0.0) > CPU_FACTOR * cores * elapsed + cores * CPU_SLACK_NS
    return time, cpu, median


def check_absurd(label: str, rows: pd.DataFrame, meta: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Diagnostic records (diagnostics.DIAGNOSTIC_COLUMNS) of the absurd samples of one side."""
    if rows.empty:
        return []
    cores = _cores(meta)
    time, cpu, median = absurd_masks(rows, cores)
    flagged = time | cpu
    if not flagged.any():
        return []
    bad = rows[flagged].assign(is_time=time[flagged], row_median=median[flagged])
    out = []
    for key, group in bad.groupby(list(schema.BENCH_KEY), sort=False, dropna=False, observed=True):
        ident = dict(zip(schema.BENCH_KEY, key))
        workers = None if pd.isna(ident["workers"]) else int(ident["workers"])
        parts = []
        for r in group.head(SHOWN).itertuples(index=False):
            where = f"invocation {int(r.invocation)} iteration {int(r.iteration)}"
            if r.is_time:
                per_op = r.elapsed_ns / r.ops
                parts.append(f"{where}: elapsed {_duration(r.elapsed_ns)} ({per_op / r.row_median:.3g}x the row's "
                             f"median ns/op)")
            else:
                parts.append(f"{where}: cpu {_duration(r.cpu_ns)} in {_duration(r.elapsed_ns)} of wall time "
                             f"(more than {cores} cores could use)")
        more = f" and {len(group) - SHOWN} more" if len(group) > SHOWN else ""
        out.append({"level": "warning", "code": "absurd_sample", "suite": ident["suite"], "tier": int(ident["tier"]),
                    "benchmark": ident["benchmark"], "param": ident["param"], "workers": workers, "runtime": label,
                    "message": f"{len(group)} absurd sample{'s' if len(group) > 1 else ''} (clock or counter "
                               f"error?), included in this row's numbers: {'; '.join(parts)}{more}"})
    return out
