"""Machines side by side (asv's machine dimension): the same benchmark on every machine of the
data folder, at every worker count each machine ran.

A *machine* is what a run's meta.json says it ran on: host name, CPU model, logical cores and
architecture (`identity`; memory, OS and the binaries' target CPU are shown, not part of the
key). For the run a page is rendered for, its own machine is represented by that run; every
other machine by its newest complete run of the same profile (another profile has other sizes,
so its ns/op are not comparable). Runs not used are in `Machines.left_out` with the reason,
never raised.

Per machine the rows are those of the run's primary comparison (candidate against baseline,
compare.py; cached per run when a report folder is given, artefact.py): each side's centre of
ns/op with its interval, the ratio baseline / candidate with its interval and verdict, and the
CPU ratio. A schema-1 run recorded no worker counts: its rows get the count the contract implies
(compare.implied_workers: 0 for Tiers 0-2, 1 for echo, the run's num_workers for Tiers 3-4).
`oversubscribed` marks rows with more workers than the machine has logical cores.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from . import artefact, schema
from .compare import compare, implied_workers
from .errors import AnalysisError
from .load import Run, load_run, read_json_object, run_history

#: The fields of a meta.json machine block that name a machine (its key).
IDENTITY_FIELDS = ("hostname", "cpu_model", "logical_cores", "arch")
MACHINE_COLUMNS = ["machine", "hostname", "cpu_model", "logical_cores", "arch", "memory_gib", "os", "kernel",
                   "target_cpu", "run_id", "started_utc", "schema_version", "profile", "workers", "invocations",
                   "is_page_run", "other_runs"]
SIDE_COLUMNS = ["median_ns_per_op", "ci_low", "ci_high", "cpu_ns_per_op"]
ROW_COLUMNS = (["machine", "run_id", "logical_cores", "suite", "tier", "benchmark", "param", "workers", "label",
                "headline", "oversubscribed"]
               + [f"baseline_{c}" for c in SIDE_COLUMNS] + [f"candidate_{c}" for c in SIDE_COLUMNS]
               + ["ratio", "ratio_ci_low", "ratio_ci_high", "verdict", "cpu_ratio", "cpu_ratio_ci_low",
                  "cpu_ratio_ci_high", "cpu_verdict"])
LEFT_OUT_COLUMNS = ["run_id", "reason"]


@dataclass
class Machines:
    """Every machine of the data folder (one run each) and their benchmark rows, long form."""

    baseline: str
    candidate: str
    machines: pd.DataFrame
    rows: pd.DataFrame
    left_out: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=LEFT_OUT_COLUMNS))
    constants_differ: dict[str, dict[str, Any]] = field(default_factory=dict)


# -- identity ---------------------------------------------------------------------------------

def machine_block(meta: dict[str, dict[str, Any]], runtimes: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """The machine block of a run: from the first runtime (in run order) whose meta.json has one,
    with that runtime's `target_cpu` added."""
    for rt in runtimes:
        block = (meta.get(rt) or {}).get("machine")
        if isinstance(block, dict):
            return {**block, "target_cpu": meta[rt].get("target_cpu")}
    return {}


def identity(block: dict[str, Any]) -> tuple[Any, ...]:
    """The key of a machine: host name, CPU model, logical cores, architecture."""
    return tuple(block.get(f) for f in IDENTITY_FIELDS)


def machine_label(block: dict[str, Any]) -> str:
    """`xeon16 (16 × Intel(R) Xeon(R) Processor)`: host, logical cores and CPU model."""
    host = block.get("hostname") or "unknown host"
    cores = block.get("logical_cores")
    cpu = block.get("cpu_model") or "unknown CPU"
    return f"{host} ({cores} × {cpu})" if isinstance(cores, int) else f"{host} ({cpu})"


def sweep_of(workers: pd.Series) -> list[int]:
    """The distinct worker counts above 0, ascending (of swept_rows: the machine's sweep)."""
    return sorted({int(w) for w in workers.dropna() if int(w) > 0})


def _run_meta(folder: Path) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Every `<variant>.meta.json` of a run folder (variant -> object), without loading its CSVs."""
    metas: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.glob("*.meta.json")):
        metas[path.name[: -len(".meta.json")]] = read_json_object(path)
    return metas, list(metas)


def run_machine(folder: str | os.PathLike[str]) -> tuple[Any, ...] | None:
    """The machine a run folder ran on (identity of its meta.json machine block), None
    when no meta.json names one or one cannot be read."""
    try:
        metas, names = _run_meta(Path(folder))
    except AnalysisError:
        return None
    block = machine_block(metas, names)
    return identity(block) if block else None


# -- choosing the runs ------------------------------------------------------------------------

def choose_runs(candidates: list[dict[str, Any]], page_run_id: str | None) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """One run per machine: the page's own run for its machine, else the newest (the last in
    `candidates`, which are oldest first). Returns the chosen runs (machine order: fewest logical
    cores first, then host) and, per chosen run id, how many other runs its machine has."""
    by_machine: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for item in candidates:
        by_machine.setdefault(identity(item["block"]), []).append(item)
    chosen, others = [], {}
    for items in by_machine.values():
        own = [i for i in items if i["run_id"] == page_run_id]
        pick = own[0] if own else items[-1]
        chosen.append(pick)
        others[pick["run_id"]] = len(items) - 1
    chosen.sort(key=lambda i: (i["block"].get("logical_cores") or 0, str(i["block"].get("hostname")), i["run_id"]))
    return chosen, others


def _candidate_runs(data_dir: str | os.PathLike[str] | None, profile: str | None,
                    left_out: list[dict[str, str]]) -> list[dict[str, Any]]:
    history = run_history(data_dir, validate=False)
    found = []
    for r in history.itertuples():
        if r.status != "complete":
            left_out.append({"run_id": r.run_id, "reason": f"not complete ({r.status})"})
            continue
        if profile is not None and r.profile != profile:
            left_out.append({"run_id": r.run_id, "reason": f"profile {r.profile}, not {profile} (other sizes)"})
            continue
        try:
            metas, names = _run_meta(Path(r.path))
        except AnalysisError as exc:
            left_out.append({"run_id": r.run_id, "reason": str(exc)})
            continue
        block = machine_block(metas, names)
        if not block:
            left_out.append({"run_id": r.run_id, "reason": "no meta.json names its machine"})
            continue
        found.append({"run_id": r.run_id, "path": r.path, "started_utc": r.started_utc, "block": block})
    return found


# -- rows -------------------------------------------------------------------------------------

def machine_rows(benchmarks: pd.DataFrame, label: str, run_id: str, logical_cores: Any,
                 num_workers: int | None) -> pd.DataFrame:
    """A comparison's benchmark rows as rows of one machine (ROW_COLUMNS), schema-1 worker counts
    filled in from the contract."""
    frame = implied_workers(benchmarks, num_workers) if len(benchmarks) else benchmarks
    out = pd.DataFrame({c: frame[c] for c in ROW_COLUMNS if c in frame.columns})
    out.insert(0, "logical_cores", logical_cores)
    out.insert(0, "run_id", run_id)
    out.insert(0, "machine", label)
    cores = logical_cores if isinstance(logical_cores, int) else math.inf
    out["oversubscribed"] = [bool(pd.notna(w) and int(w) > cores) for w in out["workers"]]
    for column in ROW_COLUMNS:
        if column not in out.columns:
            out[column] = math.nan
    out = out[ROW_COLUMNS]
    out["workers"] = out["workers"].astype("Int64")
    out["label"] = [row_label(b, p, s, t, w) for b, p, s, t, w in
                    zip(out["benchmark"], out["param"], out["suite"], out["tier"], out["workers"])]
    return out


def row_label(benchmark: str, param: str, suite: str, tier: Any, workers: Any) -> str:
    """`mutex_contended (w=4)` on Tiers 3-4 (schema-1 rows too, from their implied count), else
    the benchmark label."""
    label = schema.bench_label(benchmark, param)
    runs_on_workers = suite == "micro" and int(tier) in (3, 4) and pd.notna(workers)
    return f"{label} (w={int(workers)})" if runs_on_workers else label


def differing_constants(constants: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Constant -> {machine: value} for every constant whose value is not the same on all
    machines (a missing constant counts as a value: None)."""
    keys = sorted({k for c in constants.values() for k in c})
    out = {}
    for key in keys:
        values = {m: c.get(key) for m, c in constants.items()}
        if len({repr(v) for v in values.values()}) > 1:
            out[key] = values
    return out


def _num_workers(constants: dict[str, Any]) -> int | None:
    value = constants.get("num_workers")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _comparison(run: Run, baseline: str, candidate: str, tie_band: float, confidence: float,
                report_dir: str | Path | None) -> Any:
    if report_dir is None:
        return compare(run, baseline, candidate, tie_band, confidence)
    return artefact.comparisons(run, report_dir, baseline, candidate, tie_band, confidence).primary


def machines_data(data_dir: str | os.PathLike[str] | None, baseline: str, candidate: str, tie_band: float,
                  confidence: float, page_run_id: str | None = None, profile: str | None = None,
                  report_dir: str | Path | None = None) -> Machines:
    """Every machine of the data folder with one run each (see choose_runs) and its rows.

    `page_run_id`: the run the page is rendered for (represents its machine); `profile`: only
    runs of this profile (None: all); `report_dir`: where each run's comparison is cached.
    A run without the baseline or the candidate is left out with the reason.
    """
    left_out: list[dict[str, str]] = []
    found = _candidate_runs(data_dir, profile, left_out)
    chosen, others = choose_runs(found, page_run_id)
    machine_records, frames, constants = [], [], {}
    for item in chosen:
        block, label = item["block"], machine_label(item["block"])
        try:
            run = load_run(item["path"])
            missing = [rt for rt in (baseline, candidate) if rt not in run.runtimes]
            if missing:
                raise AnalysisError(f"no {' or '.join(missing)} data (runtimes: {', '.join(run.runtimes)})")
            cmp = _comparison(run, baseline, candidate, tie_band, confidence, report_dir)
        except AnalysisError as exc:
            left_out.append({"run_id": item["run_id"], "reason": str(exc)})
            continue
        memory = block.get("memory_bytes")
        rows = machine_rows(cmp.benchmarks, label, run.run_id, block.get("logical_cores"),
                            _num_workers(run.constants))
        machine_records.append({
            "machine": label, "hostname": block.get("hostname"), "cpu_model": block.get("cpu_model"),
            "logical_cores": block.get("logical_cores"), "arch": block.get("arch"),
            "memory_gib": memory / 2**30 if isinstance(memory, (int, float)) else math.nan,
            "os": block.get("os"), "kernel": block.get("kernel"), "target_cpu": block.get("target_cpu"),
            "run_id": run.run_id, "started_utc": item["started_utc"],
            "schema_version": run.info.get("schema_version", 1), "profile": run.info.get("profile"),
            "workers": ", ".join(map(str, sweep_of(swept_rows(rows)["workers"]))),
            "invocations": run.info.get("invocations"), "is_page_run": run.run_id == page_run_id,
            "other_runs": others[item["run_id"]]})
        frames.append(rows)
        constants[label] = run.constants
    return Machines(baseline=baseline, candidate=candidate,
                    machines=pd.DataFrame.from_records(machine_records, columns=MACHINE_COLUMNS),
                    rows=pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=ROW_COLUMNS),
                    left_out=pd.DataFrame.from_records(left_out, columns=LEFT_OUT_COLUMNS),
                    constants_differ=differing_constants(constants) if len(constants) > 1 else {})


# -- views ------------------------------------------------------------------------------------

def ordered(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows in the canonical benchmark order (schema.bench_sort_key), then machine order."""
    if rows.empty:
        return rows
    keys = [schema.bench_sort_key(s, int(t), b, p, w) for s, t, b, p, w in
            zip(rows["suite"], rows["tier"], rows["benchmark"], rows["param"], rows["workers"])]
    order = sorted(range(len(rows)), key=lambda i: keys[i])
    return rows.iloc[order].reset_index(drop=True)


def swept_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """Tier 3-4 micro rows (those run on a runtime at a worker count): the scaling curves."""
    if rows.empty:
        return rows
    return rows[(rows["suite"] == "micro") & rows["tier"].isin([3, 4]) & rows["workers"].notna()]


def on_every_machine(rows: pd.DataFrame, machines: list[str]) -> pd.DataFrame:
    """Rows of the benchmarks (suite, tier, benchmark, param, workers) that every machine ran."""
    if rows.empty or not machines:
        return rows
    key = ["suite", "tier", "benchmark", "param", "workers"]
    counts = rows.groupby(key, dropna=False)["machine"].nunique().rename("machines").reset_index()
    full = counts[counts["machines"] == len(machines)].drop(columns="machines")
    return rows.merge(full, on=key, how="inner")
