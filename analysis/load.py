"""Loading and strict validation of run folders (data/README.md is the contract).

A run folder `data/runs/<run_id>/` holds `<runtime>.csv`, `<runtime>.meta.json` and, when the
run completed, `run.json` (written last). A folder without `run.json` is incomplete: `latest`
skips it with a one-line warning, naming the reason from `failed.json` when there is one.

Validation is strict and stops at the first problem, reported as one line:
`<file>:<line>: <column>: <problem>` for CSV files, `<file>: <problem>` for JSON files and
folders (raised as `DataError`; the CLI prefixes `error: ` and exits with code 2).
CSV checks: exact header in contract order; exactly 11 fields per line; a final newline (a
last line without one is truncated); integer syntax and ranges (ops > 0, elapsed_ns > 0,
alloc_* >= 0, invocation/iteration >= 0); runtime equal to the file's runtime; suite in
{micro, echo}; tier within the suite's range; param empty, `n=<int>` or `size=<int>`; no
duplicate (runtime, invocation, benchmark, param, iteration); one (suite, tier) per benchmark.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import schema
from .errors import AnalysisError, DataError

DATA_DIR_ENV = "AMPERE_DATA_DIR"
RUN_JSON = "run.json"
FAILED_JSON = "failed.json"
RUN_JSON_REQUIRED: dict[str, type | tuple[type, ...]] = {
    "status": str, "suites": list, "profile": str,
}


# -- data directory and warnings ---------------------------------------------------------------

def resolve_data_dir(data_dir: str | Path | None = None) -> Path:
    """`--data-dir` if given, else `$AMPERE_DATA_DIR`, else `data` relative to the CWD."""
    if data_dir is not None:
        return Path(data_dir)
    env = os.environ.get(DATA_DIR_ENV)
    return Path(env) if env else Path("data")


def runs_dir(data_dir: str | Path | None = None) -> Path:
    return resolve_data_dir(data_dir) / "runs"


def warn(message: str) -> None:
    """One-line warning on stderr (visible in a terminal and in notebook cell output)."""
    print(f"warning: {message}", file=sys.stderr, flush=True)


# -- JSON files -------------------------------------------------------------------------------

def read_json_object(path: Path) -> dict[str, Any]:
    """Parse a JSON file that must hold one object; any problem is a one-line DataError."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError(path, "file not found") from None
    except UnicodeDecodeError:
        raise DataError(path, "not valid UTF-8") from None
    except OSError as exc:
        raise DataError(path, f"cannot read: {exc.strerror}") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(path, f"invalid JSON: {exc.msg} (line {exc.lineno} column {exc.colno})") from None
    if not isinstance(value, dict):
        raise DataError(path, f"expected a JSON object, got {type(value).__name__}")
    return value


def validate_run_json(path: Path, info: dict[str, Any]) -> None:
    for key, kind in RUN_JSON_REQUIRED.items():
        if key not in info:
            raise DataError(path, f'missing key "{key}"')
        if not isinstance(info[key], kind):
            raise DataError(path, f'key "{key}" must be a {kind.__name__}, got {type(info[key]).__name__}')
    if info["status"] != "complete":
        raise DataError(path, f'status must be "complete", got "{info["status"]}"')
    bad = [s for s in info["suites"] if s not in schema.SUITES]
    if bad:
        raise DataError(path, f'unknown suite "{bad[0]}" in "suites" (expected micro, echo)')
    if "constants" in info and not isinstance(info["constants"], dict):
        raise DataError(path, 'key "constants" must be an object')


def validate_meta_json(path: Path, meta: dict[str, Any], runtime: str) -> None:
    if meta.get("runtime") != runtime:
        raise DataError(path, f'"runtime" must be "{runtime}", got {json.dumps(meta.get("runtime"))}')
    machine = meta.get("machine")
    if machine is not None and not isinstance(machine, dict):
        raise DataError(path, '"machine" must be an object')
    cores = (machine or {}).get("logical_cores")
    if cores is not None and (not isinstance(cores, int) or isinstance(cores, bool) or cores < 1):
        raise DataError(path, '"machine.logical_cores" must be a positive integer')


# -- CSV files --------------------------------------------------------------------------------

def _check_header(path: Path, header: list[str]) -> None:
    expected = list(schema.CSV_COLUMNS)
    if header == expected:
        return
    missing = [c for c in expected if c not in header]
    if missing:
        raise DataError(path, f"missing column (header must be {','.join(expected)})", 1, missing[0])
    extra = [c for c in header if c not in expected]
    if extra:
        raise DataError(path, "unexpected column", 1, extra[0] or "(empty)")
    for index, (got, want) in enumerate(zip(header, expected)):
        if got != want:
            raise DataError(path, f"column out of order (expected {want} at position {index + 1})", 1, got)
    raise DataError(path, "duplicate column", 1, header[len(expected)])


def _split_lines(path: Path) -> list[str]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise DataError(path, "file not found") from None
    except OSError as exc:
        raise DataError(path, f"cannot read: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(path, "not valid UTF-8", raw[: exc.start].count(b"\n") + 1) from None
    if not text:
        raise DataError(path, "empty file (no header row)", 1, "header")
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    else:
        fields = lines[-1].split(",")
        column = schema.CSV_COLUMNS[min(len(fields), len(schema.CSV_COLUMNS)) - 1]
        raise DataError(path, f"truncated last line (no trailing newline; {len(fields)} of "
                        f"{len(schema.CSV_COLUMNS)} fields)", len(lines), column)
    return lines


def _first_bad(mask: np.ndarray) -> int | None:
    hits = np.flatnonzero(mask)
    return int(hits[0]) if hits.size else None


def _row_problems(frame: pd.DataFrame, runtime: str | None) -> list[tuple[int, int, str, str]]:
    """First problem of each check as (row index, column order, column, problem)."""
    problems: list[tuple[int, int, str, str]] = []
    order = {c: i for i, c in enumerate(schema.CSV_COLUMNS)}

    def add(mask: np.ndarray, column: str, describe) -> None:
        row = _first_bad(mask)
        if row is not None:
            problems.append((row, order[column], column, describe(row)))

    for column in schema.INT_COLUMNS:
        text = frame[column]
        bad_syntax = ~text.str.fullmatch(schema.INT_RE.pattern).to_numpy(dtype=bool)
        add(bad_syntax, column, lambda r, t=text: f"not an integer: {t.iat[r]!r}")
        too_long = text.str.lstrip("-").str.len().to_numpy() > 18
        add(~bad_syntax & too_long, column, lambda r, t=text: f"integer out of range: {t.iat[r]}")
        values = pd.to_numeric(text.where(~bad_syntax & ~too_long, "0")).to_numpy(dtype=np.int64)
        low = schema.INT_MIN[column]
        add(~bad_syntax & ~too_long & (values < low), column,
            lambda r, v=values, low=low: f"{v[r]} is out of range (must be >= {low})")
    rt = frame["runtime"]
    if runtime is not None:
        add((rt != runtime).to_numpy(dtype=bool), "runtime",
            lambda r: f"{rt.iat[r]!r} does not match the file's runtime {runtime!r}")
    else:
        add(~rt.str.fullmatch(schema.RUNTIME_RE.pattern).to_numpy(dtype=bool), "runtime",
            lambda r: f"invalid runtime name {rt.iat[r]!r}")
    suite = frame["suite"]
    bad_suite = ~suite.isin(schema.SUITES).to_numpy(dtype=bool)
    add(bad_suite, "suite", lambda r: f"{suite.iat[r]!r} is not a suite (micro, echo)")
    tier_text = frame["tier"]
    tier_ok = tier_text.str.fullmatch(schema.INT_RE.pattern).to_numpy(dtype=bool) & (tier_text.str.len() < 10).to_numpy()
    tiers = pd.to_numeric(tier_text.where(tier_ok, "-1")).to_numpy(dtype=np.int64)
    for name, (low, high) in schema.TIER_RANGE.items():
        in_suite = (suite == name).to_numpy(dtype=bool)
        add(in_suite & tier_ok & ((tiers < low) | (tiers > high)), "tier",
            lambda r, low=low, high=high, name=name: f"tier {tiers[r]} out of range for suite {name} ({low}-{high})")
    bench = frame["benchmark"]
    add(~bench.str.fullmatch(schema.BENCHMARK_RE.pattern).to_numpy(dtype=bool), "benchmark",
        lambda r: f"invalid benchmark name {bench.iat[r]!r}")
    param = frame["param"]
    add(~param.str.fullmatch(schema.PARAM_RE.pattern).to_numpy(dtype=bool), "param",
        lambda r: f"invalid param {param.iat[r]!r} (expected empty, n=<int> or size=<int>)")
    return problems


def _check_duplicates(path: Path, frame: pd.DataFrame) -> None:
    key = list(schema.ROW_KEY)
    dup = frame.duplicated(subset=key, keep="first").to_numpy()
    row = _first_bad(dup)
    if row is None:
        return
    same = (frame[key] == frame.iloc[row][key]).all(axis=1).to_numpy()
    first = _first_bad(same)
    raise DataError(path, f"duplicate row (same runtime, invocation, benchmark, param, iteration as line {first + 2})",
                    row + 2, "iteration")


def _check_tiers_consistent(path: Path, frame: pd.DataFrame) -> None:
    kinds = frame[["benchmark", "suite", "tier"]].drop_duplicates()
    repeated = kinds.duplicated(subset=["benchmark"], keep="first")
    if not repeated.any():
        return
    row = int(repeated.to_numpy().nonzero()[0][0])
    label = kinds.index[row]
    name = kinds.iloc[row]["benchmark"]
    first = kinds[kinds["benchmark"] == name].index[0]
    raise DataError(path, f"benchmark {name!r} is suite {kinds.iloc[row]['suite']} tier {kinds.iloc[row]['tier']} here "
                    f"but suite {frame.at[first, 'suite']} tier {frame.at[first, 'tier']} on line {first + 2}",
                    int(label) + 2, "tier")


def read_bench_csv(path: str | Path, runtime: str | None = None) -> pd.DataFrame:
    """Read and strictly validate one benchmark CSV; returns typed rows plus `ns_per_op`.

    `runtime` is the runtime the file belongs to (from its name); None accepts any valid name.
    Raises DataError(`<file>:<line>: <column>: <problem>`) at the first problem.
    """
    path = Path(path)
    lines = _split_lines(path)
    header = lines[0].split(",")
    _check_header(path, header)
    width = len(schema.CSV_COLUMNS)
    rows: list[list[str]] = []
    for number, line in enumerate(lines[1:], start=2):
        fields = line.split(",")
        if len(fields) != width:
            if line == "":
                raise DataError(path, "empty line", number, schema.CSV_COLUMNS[0])
            column = schema.CSV_COLUMNS[len(fields)] if len(fields) < width else "(extra)"
            raise DataError(path, f"expected {width} fields, got {len(fields)}", number, column)
        rows.append(fields)
    frame = pd.DataFrame(rows, columns=list(schema.CSV_COLUMNS), dtype=object).astype(str)
    problems = _row_problems(frame, runtime)
    if problems:
        row, _, column, problem = min(problems)
        raise DataError(path, problem, row + 2, column)
    typed = frame.astype({c: np.int64 for c in schema.INT_COLUMNS})
    _check_duplicates(path, typed)
    _check_tiers_consistent(path, typed)
    typed["ns_per_op"] = typed["elapsed_ns"] / typed["ops"]
    return typed


# -- runs -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Run:
    """One complete run folder, loaded and validated.

    `data` has the CSV columns of every runtime plus `ns_per_op` (= elapsed_ns / ops);
    `meta` maps runtime -> its meta.json (absent runtimes have no entry); `info` is run.json.
    """

    run_id: str
    path: Path
    data: pd.DataFrame
    meta: dict[str, dict[str, Any]]
    info: dict[str, Any]
    runtimes: tuple[str, ...] = field(default=())

    def rows(self, runtime: str) -> pd.DataFrame:
        return self.data[self.data["runtime"] == runtime]

    @property
    def constants(self) -> dict[str, Any]:
        return dict(self.info.get("constants") or {})

    @property
    def started(self) -> datetime | None:
        return run_timestamp(self.run_id)


def run_timestamp(run_id: str) -> datetime | None:
    match = schema.RUN_ID_RE.fullmatch(run_id)
    if not match:
        return None
    return datetime.strptime(match["stamp"], "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc)


def _runtime_files(folder: Path) -> list[str]:
    names = []
    for item in sorted(folder.iterdir()):
        if item.is_file() and item.suffix == ".csv" and not item.name.startswith("."):
            stem = item.stem
            if schema.RUNTIME_RE.fullmatch(stem):
                names.append(stem)
    return names


def _looks_like_run(folder: Path) -> bool:
    if schema.RUN_ID_RE.fullmatch(folder.name):
        return True
    if (folder / RUN_JSON).exists() or (folder / FAILED_JSON).exists():
        return True
    return bool(_runtime_files(folder))


def failure_reason(folder: Path) -> str | None:
    """The `reason` of failed.json (or a note that it is unreadable), None without failed.json."""
    path = folder / FAILED_JSON
    if not path.exists():
        return None
    try:
        failed = read_json_object(path)
    except DataError as exc:
        return f"failed.json unreadable ({exc.problem})"
    reason = failed.get("reason", "no reason recorded")
    step = failed.get("step")
    return f"{step}: {reason}" if step else str(reason)


def incomplete_note(folder: Path) -> str:
    reason = failure_reason(folder)
    return f"failed ({reason})" if reason else "incomplete (no run.json; still running or crashed)"


def list_run_folders(data_dir: str | Path | None = None) -> list[Path]:
    """Run folders under data/runs, oldest first (by run_id timestamp, then name)."""
    root = runs_dir(data_dir)
    if not root.is_dir():
        return []
    folders = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")]
    stamp = lambda p: (run_timestamp(p.name) or datetime.min.replace(tzinfo=timezone.utc), p.name)  # noqa: E731
    return sorted(folders, key=stamp)


def latest_run_path(data_dir: str | Path | None = None, quiet: bool = False) -> Path:
    """Newest complete run; incomplete folders newer than it are skipped with a warning."""
    root = runs_dir(data_dir)
    for folder in reversed(list_run_folders(data_dir)):
        if run_timestamp(folder.name) is None:
            continue
        if (folder / RUN_JSON).is_file():
            return folder
        if not quiet:
            warn(f"{folder}: {incomplete_note(folder)}; skipped")
    raise AnalysisError(f"{root}: no complete run (a run folder needs run.json; make one with `python -m analysis bench`)")


def resolve_run_path(spec: str | Path = "latest", data_dir: str | Path | None = None) -> Path:
    """Turn `latest`, a run id or a path into a folder path (existence checked, not content)."""
    text = str(spec)
    if text == "latest":
        return latest_run_path(data_dir)
    candidate = Path(text)
    if candidate.is_dir():
        return candidate
    if os.sep in text or candidate.exists():
        if candidate.exists():
            raise DataError(candidate, "not a run folder (not a directory)")
        raise DataError(candidate, "no such run folder")
    folder = runs_dir(data_dir) / text
    if not folder.is_dir():
        raise AnalysisError(f"unknown run id {text!r} (no folder {folder})")
    return folder


def load_run(spec: str | Path = "latest", data_dir: str | Path | None = None) -> Run:
    """Load and validate a complete run: `latest` (default), a run id, or a folder path."""
    folder = resolve_run_path(spec, data_dir)
    if not _looks_like_run(folder):
        raise DataError(folder, "not a run folder (no run.json, no <runtime>.csv)")
    run_json = folder / RUN_JSON
    if not run_json.is_file():
        raise DataError(folder, f"{incomplete_note(folder)}; only complete runs can be analysed")
    info = read_json_object(run_json)
    validate_run_json(run_json, info)
    runtimes = _runtime_files(folder)
    if not runtimes:
        raise DataError(folder, "no <runtime>.csv in the run folder")
    frames = [read_bench_csv(folder / f"{rt}.csv", rt) for rt in runtimes]
    data = pd.concat(frames, ignore_index=True)
    _check_cross_file_tiers(folder, data)
    meta: dict[str, dict[str, Any]] = {}
    for rt in runtimes:
        meta_path = folder / f"{rt}.meta.json"
        if meta_path.exists():
            meta[rt] = read_json_object(meta_path)
            validate_meta_json(meta_path, meta[rt], rt)
    run_id = str(info.get("run_id") or folder.name)
    return Run(run_id=run_id, path=folder, data=data, meta=meta, info=info, runtimes=tuple(runtimes))


def _check_cross_file_tiers(folder: Path, data: pd.DataFrame) -> None:
    kinds = data[["runtime", "benchmark", "suite", "tier"]].drop_duplicates()
    per_bench = kinds.groupby("benchmark")[["suite", "tier"]].nunique()
    clash = per_bench[(per_bench["suite"] > 1) | (per_bench["tier"] > 1)]
    if not clash.empty:
        name = clash.index[0]
        seen = kinds[kinds["benchmark"] == name]
        desc = ", ".join(f"{r.runtime}: {r.suite} tier {r.tier}" for r in seen.itertuples())
        raise DataError(folder / f"{seen.iloc[-1]['runtime']}.csv", f"benchmark {name!r} differs between runtimes ({desc})")


# -- history and metadata tables --------------------------------------------------------------

HISTORY_COLUMNS = ["run_id", "started_utc", "host", "status", "suites", "profile", "runtimes",
                   "git_commit", "git_dirty", "reason", "path"]


def run_history(data_dir: str | Path | None = None) -> pd.DataFrame:
    """One row per run folder (oldest first): status is complete, failed, incomplete or invalid.

    Never raises for a bad folder: its problem goes into `reason` (status `invalid`).
    """
    records = []
    for folder in list_run_folders(data_dir):
        stamp = run_timestamp(folder.name)
        match = schema.RUN_ID_RE.fullmatch(folder.name)
        record: dict[str, Any] = {
            "run_id": folder.name, "started_utc": pd.Timestamp(stamp) if stamp else pd.NaT,
            "host": match["host"] if match else None, "status": "incomplete", "suites": None,
            "profile": None, "runtimes": ",".join(_runtime_files(folder)) or None,
            "git_commit": None, "git_dirty": None, "reason": None, "path": str(folder),
        }
        if (folder / RUN_JSON).is_file():
            try:
                info = read_json_object(folder / RUN_JSON)
                validate_run_json(folder / RUN_JSON, info)
            except DataError as exc:
                record.update(status="invalid", reason=str(exc))
            else:
                git = info.get("git") or {}
                record.update(status="complete", suites=",".join(info["suites"]), profile=info["profile"],
                              git_commit=git.get("commit"), git_dirty=git.get("dirty"),
                              host=info.get("hostname", record["host"]))
        elif (folder / FAILED_JSON).exists():
            record.update(status="failed", reason=failure_reason(folder))
        records.append(record)
    return pd.DataFrame.from_records(records, columns=HISTORY_COLUMNS)


MACHINE_FIELDS = (
    "runtime_version", "compiler", "compiler_version", "tokio_version", "build_mode", "target_cpu",
    "allocator", "machine.hostname", "machine.arch", "machine.cpu_model", "machine.logical_cores",
    "machine.memory_bytes", "machine.kernel", "machine.os",
)


def _flatten(meta: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in meta.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def machine_table(run: Run) -> pd.DataFrame:
    """Metadata side by side: index `field`, one column per runtime, and `same` (all equal).

    Known fields come first in a fixed order, then any other field found in a meta.json.
    Fields that legitimately differ between the runtimes (compiler, versions) are included;
    `machine.*` and `build_mode` are the ones the diagnostics compare.
    """
    flat = {rt: _flatten(run.meta.get(rt, {})) for rt in run.runtimes}
    extra = sorted({k for f in flat.values() for k in f} - set(MACHINE_FIELDS) - {"runtime"})
    fields = list(MACHINE_FIELDS) + extra
    table = pd.DataFrame({rt: [flat[rt].get(f) for f in fields] for rt in run.runtimes},
                         index=pd.Index(fields, name="field"), dtype=object)
    table["same"] = [len({json.dumps(v, sort_keys=True) for v in row}) <= 1 for row in table[list(run.runtimes)].itertuples(index=False)]
    return table
