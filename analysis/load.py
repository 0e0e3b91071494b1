"""Loading and strict validation of run folders (data/README.md is the contract).

A run folder `data/runs/<run_id>/` holds `<variant>.csv`, `<variant>.meta.json` per runtime or
runtime variant (`ampere`, `ampere.nospin`, `tokio`), `<variant>.metrics.jsonl` where the program
recorded runtime metrics (analysis/metrics.py) and, when the run completed, `run.json`
(written last). A folder without `run.json` is incomplete: `latest` skips it with a one-line
warning, naming the reason from `failed.json` when there is one.

Validation is strict and stops at the first problem, reported as one line:
`<file>:<line>: <column>: <problem>` for CSV files (analysis/bench_csv.py lists the checks),
`<file>: <problem>` for JSON files and folders (raised as `DataError`; the CLI prefixes
`error: ` and exits with code 2). Across the files of a run: one schema version for every CSV
(and schema 2 when run.json says `schema_version: 2`), one (suite, tier) per benchmark.

Schema 1 runs (the first reference run) load with `cpu_ns` NaN and `workers` <NA>: not recorded,
which is not the same as zero. Schema 3 runs list their runtimes in run.json as objects
(`{"name", "versions", "absent"}`): a runtime with `absent: "<reason>"` has no CSV (`Run.absent`),
every other one has its CSV (`Run.versions` holds what each runtime is: Zig, zio, Tokio, rustc).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from . import schema
from .bench_csv import read_bench_csv
from .http_csv import empty_frame as empty_http_frame
from .http_csv import http_path, match_rows, read_http_csv
from .metrics import empty_frame as empty_metrics_frame
from .metrics import read_run_metrics
from .span import empty_frame as empty_span_frame
from .span import is_span_file, read_run_spans
from .errors import AnalysisError, DataError
from .files import check_no_symlink_loop

__all__ = ["Run", "read_bench_csv", "load_run", "latest_run_path", "resolve_run_path", "run_history",
           "machine_table", "resolve_data_dir", "runs_dir", "read_json_object", "validate_meta_json",
           "validate_run_json", "warn"]

DATA_DIR_ENV = "AMPERE_DATA_DIR"
RUN_JSON = "run.json"
FAILED_JSON = "failed.json"
#: run.json key declaring benchmarks the loader accepts although they are not in the schema's
#: list or have rows on one side only: an object, benchmark name -> the reason.
DECLARED_KEY = "declared_benchmarks"
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
        check_no_symlink_loop(path)
        raise DataError(path, f"cannot read: {exc.strerror}") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(path, f"invalid JSON: {exc.msg} (line {exc.lineno} column {exc.colno})") from None
    if not isinstance(value, dict):
        raise DataError(path, f"expected a JSON object, got {type(value).__name__}")
    return value


def validate_run_json(path: Path, info: dict[str, Any]) -> None:
    """Keys every complete run.json has, and the schema-2 keys' types where present."""
    for key, kind in RUN_JSON_REQUIRED.items():
        if key not in info:
            raise DataError(path, f'missing key "{key}"')
        if not isinstance(info[key], kind):
            raise DataError(path, f'key "{key}" must be a {kind.__name__}, got {type(info[key]).__name__}')
    if info["status"] != "complete":
        raise DataError(path, f'status must be "complete", got "{info["status"]}"')
    bad = [s for s in info["suites"] if s not in schema.SUITES]
    if bad:
        raise DataError(path, f'unknown suite "{bad[0]}" in "suites" (expected {", ".join(schema.SUITES)})')
    if "constants" in info and not isinstance(info["constants"], dict):
        raise DataError(path, 'key "constants" must be an object')
    version = info.get("schema_version", 1)
    if version not in schema.SCHEMA_VERSIONS or isinstance(version, bool):
        raise DataError(path, f'unknown "schema_version" {json.dumps(version)} (this analysis reads '
                        f'{", ".join(map(str, schema.SCHEMA_VERSIONS[:-1]))} and {schema.SCHEMA_VERSIONS[-1]})')
    variants = info.get("variants")
    if variants is not None and (not isinstance(variants, dict)
                                 or not all(isinstance(v, dict) for v in variants.values())):
        raise DataError(path, 'key "variants" must be an object of objects (name -> {runtime, settings})')
    workers = info.get("workers")
    if workers is not None and (not isinstance(workers, list) or not all(_positive_int(w) for w in workers)):
        raise DataError(path, 'key "workers" must be a list of positive integers')
    if version == 3:
        _validate_runtime_entries(path, info.get("runtimes"))
    declared = info.get(DECLARED_KEY)
    if declared is not None and (not isinstance(declared, dict) or not all(
            isinstance(v, str) and v.strip() for v in declared.values())):
        raise DataError(path, f'key "{DECLARED_KEY}" must be an object (benchmark name -> why the run has it)')
    files = info.get("metrics_files")
    if files is not None and (not isinstance(files, dict)
                              or not all(v is None or isinstance(v, str) for v in files.values())):
        raise DataError(path, 'key "metrics_files" must be an object (variant -> file name or null)')


def _validate_runtime_entries(path: Path, entries: Any) -> None:
    """Schema 3 `runtimes`: a list of {"name": RUNTIME, "versions": {...}, "absent": "reason"}
    objects (versions and absent optional), each name once."""
    shape = 'key "runtimes" must be a list of objects {"name", "versions", "absent"} (schema 3)'
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise DataError(path, shape)
    seen: set[str] = set()
    for entry in entries:
        name = entry.get("name")
        if not isinstance(name, str) or not schema.RUNTIME_RE.fullmatch(name):
            raise DataError(path, f'runtimes: "name" must be a runtime name, got {json.dumps(name)}')
        if name in seen:
            raise DataError(path, f"runtimes: {name!r} listed twice")
        seen.add(name)
        if not isinstance(entry.get("versions", {}), dict):
            raise DataError(path, f'runtimes: {name}: "versions" must be an object')
        absent = entry.get("absent")
        if absent is not None and (not isinstance(absent, str) or not absent.strip()):
            raise DataError(path, f'runtimes: {name}: "absent" must be a non-empty reason')


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def validate_meta_json(path: Path, meta: dict[str, Any], runtime: str) -> None:
    """A meta.json belongs to its file's runtime or variant.

    Schema 2 programs write the base runtime in "runtime" and the variant name in "variant"
    (`{"runtime": "ampere", "variant": "ampere.nospin"}`); schema 1 wrote only "runtime".
    """
    base = schema.base_runtime(runtime)
    variant = meta.get("variant")
    if variant is not None and variant != runtime:
        raise DataError(path, f'"variant" must be "{runtime}", got {json.dumps(variant)}')
    if meta.get("runtime") not in (runtime, base):
        expected = f'"{base}"' if base == runtime else f'"{base}" (or "{runtime}")'
        raise DataError(path, f'"runtime" must be {expected}, got {json.dumps(meta.get("runtime"))}')
    settings = meta.get("variant_settings")
    if settings is not None and not isinstance(settings, dict):
        raise DataError(path, '"variant_settings" must be an object')
    machine = meta.get("machine")
    if machine is not None and not isinstance(machine, dict):
        raise DataError(path, '"machine" must be an object')
    cores = (machine or {}).get("logical_cores")
    if cores is not None and not _positive_int(cores):
        raise DataError(path, '"machine.logical_cores" must be a positive integer')


# -- runs -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Run:
    """One complete run folder, loaded and validated.

    `data` has the CSV columns of every runtime (variant) in contract order plus `ns_per_op`
    (= elapsed_ns / ops); `cpu_ns` is float64 and `workers` Int64, NaN / <NA> in a schema-1 run.
    `meta` maps runtime -> its meta.json (absent runtimes have no entry); `info` is run.json;
    `schema_version` is that of the CSV files (1 or 2). `metrics` holds the runtime metrics of
    every `<variant>.metrics.jsonl` (analysis/metrics.py; empty when the run has none).
    """

    run_id: str
    path: Path
    data: pd.DataFrame
    meta: dict[str, dict[str, Any]]
    info: dict[str, Any]
    runtimes: tuple[str, ...] = field(default=())
    schema_version: int = 1
    metrics: pd.DataFrame = field(default_factory=empty_metrics_frame)
    #: `<runtime>.span.csv` rows (analysis/span.py): the whole measured span of every benchmark
    #: row and invocation; empty when the run has none (not recorded).
    spans: pd.DataFrame = field(default_factory=empty_span_frame)
    #: The http suite's latency rows of every `<runtime>.http.csv` (analysis/http_csv.py), with a
    #: `runtime` column; empty when the run has none (every run before the http suite).
    http: pd.DataFrame = field(default_factory=empty_http_frame)

    def rows(self, runtime: str) -> pd.DataFrame:
        return self.data[self.data["runtime"] == runtime]

    def _entries(self) -> list[dict[str, Any]]:
        """run.json's schema-3 runtime entries (none in a schema-1 or -2 run)."""
        entries = self.info.get("runtimes") if self.info.get("schema_version", 1) >= 3 else None
        return [e for e in entries or [] if isinstance(e, dict)]

    @property
    def absent(self) -> dict[str, str]:
        """runtime -> the reason it has no data (schema 3 `absent`; empty for older runs)."""
        return {e["name"]: e["absent"] for e in self._entries() if e.get("absent")}

    @property
    def versions(self) -> dict[str, dict[str, Any]]:
        """runtime -> what it is (schema 3 `versions`: zig, zio, tokio, rustc ...), present or absent;
        for older runs taken from meta.json (compiler and runtime versions)."""
        recorded = {e["name"]: dict(e.get("versions") or {}) for e in self._entries()}
        if recorded:
            return recorded
        keys = ("runtime_version", "compiler", "compiler_version", "tokio_version")
        return {rt: {k: self.meta.get(rt, {}).get(k) for k in keys if self.meta.get(rt, {}).get(k) is not None}
                for rt in self.runtimes}

    def suite(self, name: str) -> "Run":
        """This run restricted to one suite's rows; `runtimes` keeps those with rows in it."""
        data = self.data[self.data["suite"] == name].reset_index(drop=True)
        present = tuple(rt for rt in self.runtimes if (data["runtime"] == rt).any())
        spans = self.spans[self.spans["suite"] == name].reset_index(drop=True)
        return replace(self, data=data, runtimes=present, spans=spans)

    @property
    def constants(self) -> dict[str, Any]:
        return dict(self.info.get("constants") or {})

    @property
    def variants(self) -> dict[str, dict[str, Any]]:
        """name -> {"runtime": base runtime, "settings": {...}} for every runtime of the run:
        from run.json (schema 2), else from meta.json, else the base runtime with no settings."""
        recorded = self.info.get("variants") or {}
        out = {}
        for name in self.runtimes:
            entry = recorded.get(name) or {}
            settings = entry.get("settings", self.meta.get(name, {}).get("variant_settings")) or {}
            out[name] = {"runtime": entry.get("runtime", schema.base_runtime(name)), "settings": dict(settings)}
        return out


def run_timestamp(run_id: str) -> datetime | None:
    match = schema.RUN_ID_RE.fullmatch(run_id)
    if not match:
        return None
    return datetime.strptime(match["stamp"], "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc)


def _runtime_files(folder: Path) -> list[str]:
    names = []
    for item in sorted(folder.iterdir()):
        if item.suffix == ".csv" and not item.name.startswith("."):
            check_no_symlink_loop(item)
        if (item.is_file() and item.suffix == ".csv" and not item.name.startswith(".") and not is_span_file(item)
                and not item.name.endswith(schema.HTTP_SUFFIX)):
            stem = item.stem
            if schema.RUNTIME_RE.fullmatch(stem):
                names.append(stem)
    return names


def runtime_names(folder: Path) -> tuple[str, ...]:
    """The runtimes of a run folder as load_run lists them (its `<runtime>.csv` files, sorted),
    without reading them."""
    return tuple(_runtime_files(Path(folder)))


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
    check_no_symlink_loop(resolve_data_dir(data_dir))
    check_no_symlink_loop(root)
    if not root.is_dir():
        return []
    for entry in root.iterdir():
        if not entry.name.startswith("."):
            check_no_symlink_loop(entry)
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
    check_no_symlink_loop(candidate)
    check_no_symlink_loop(runs_dir(data_dir) / text)
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
    check_no_symlink_loop(run_json)
    if not run_json.is_file():
        raise DataError(folder, f"{incomplete_note(folder)}; only complete runs can be analysed")
    info = read_json_object(run_json)
    validate_run_json(run_json, info)
    runtimes = _runtime_files(folder)
    if not runtimes:
        raise DataError(folder, "no <runtime>.csv in the run folder")
    _check_absent_sides(folder, run_json, info, runtimes)
    frames = [read_bench_csv(folder / f"{rt}.csv", rt) for rt in runtimes]
    version = _check_one_schema(folder, info, runtimes, [f.attrs["schema_version"] for f in frames])
    data = pd.concat(frames, ignore_index=True)
    data.attrs = {}
    _check_cross_file_tiers(folder, data)
    _check_benchmark_names(folder, run_json, info.get(DECLARED_KEY) or {}, data, runtimes)
    meta: dict[str, dict[str, Any]] = {}
    for rt in runtimes:
        meta_path = folder / f"{rt}.meta.json"
        check_no_symlink_loop(meta_path)
        if meta_path.exists():
            meta[rt] = read_json_object(meta_path)
            validate_meta_json(meta_path, meta[rt], rt)
    metrics = read_run_metrics(folder, info.get("metrics_files"))
    spans = read_run_spans(folder, runtimes, data)
    http = _read_http(folder, runtimes, frames)
    run_id = str(info.get("run_id") or folder.name)
    return Run(run_id=run_id, path=folder, data=data, meta=meta, info=info, runtimes=tuple(runtimes),
               schema_version=version, metrics=metrics, spans=spans, http=http)


def _read_http(folder: Path, runtimes: list[str], frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Every runtime's `<runtime>.http.csv`, checked against its CSV's http rows: a runtime with
    http rows needs the file, and one without them must not have it."""
    parts = []
    for rt, rows in zip(runtimes, frames):
        path = http_path(folder, rt)
        if path.is_file():
            latency = read_http_csv(path, rt)
            match_rows(path, latency, rows)
            parts.append(latency)
        elif (rows["suite"] == "http").any():
            raise DataError(path, f"file not found ({rt}.csv has http rows; their latency percentiles belong here)")
    parts = [p for p in parts if not p.empty]
    return pd.concat(parts, ignore_index=True) if parts else empty_http_frame()


def _check_absent_sides(folder: Path, run_json: Path, info: dict[str, Any], runtimes: list[str]) -> None:
    """Schema 3: a runtime recorded absent has no CSV, and every runtime listed present has one."""
    if info.get("schema_version", 1) < 3:
        return
    for entry in info["runtimes"]:
        name = entry["name"]
        if entry.get("absent") and name in runtimes:
            raise DataError(folder / f"{name}.csv", f"run.json records {name} absent ({entry['absent']}), "
                            "but its CSV exists")
        if not entry.get("absent") and name not in runtimes:
            raise DataError(run_json, f"runtime {name} is listed present but the run has no {name}.csv")


def _check_one_schema(folder: Path, info: dict[str, Any], runtimes: list[str], versions: list[int]) -> int:
    """Every CSV of a run has one schema; schema 2 if run.json says so. Returns it."""
    for rt, version in zip(runtimes[1:], versions[1:]):
        if version != versions[0]:
            raise DataError(folder / f"{rt}.csv", f"schema {version} header, but {runtimes[0]}.csv has schema "
                            f"{versions[0]}: the CSV files of one run share one schema (rebuild both programs)")
    declared = info.get("schema_version", 1)
    if declared >= 2 and versions[0] != 2:
        raise DataError(folder / f"{runtimes[0]}.csv", "schema 1 header (no cpu_ns, workers) in a run whose "
                        f"run.json says schema_version {declared}")
    return versions[0]


def _first_line(data: pd.DataFrame, runtime: str, benchmark: str) -> int:
    """The CSV line (1-based, header = 1) of the first row of `benchmark` in `runtime`'s file."""
    rows = data["runtime"] == runtime
    position = int((data.loc[rows, "benchmark"].to_numpy() == benchmark).argmax())
    return position + 2


def _check_benchmark_names(folder: Path, run_json: Path, declared: dict[str, str], data: pd.DataFrame,
                           runtimes: list[str]) -> None:
    """Every benchmark is in the schema's list of its suite (schema.SUITE_ORDER) and present in
    every runtime that has rows of that suite (except where the contract says that runtime has
    no such row: schema.runs_benchmark, the io rows ampere's native API lacks), unless run.json
    declares it (DECLARED_KEY)."""
    kinds = data[["runtime", "suite", "benchmark"]].drop_duplicates().astype(str)
    for row in kinds.itertuples(index=False):
        if row.benchmark not in schema.SUITE_ORDER.get(row.suite, ()) and row.benchmark not in declared:
            raise DataError(folder / f"{row.runtime}.csv", f"benchmark {row.benchmark!r} is not in the schema's list "
                            f"of {row.suite} benchmarks (a run that means it declares it in run.json "
                            f'"{DECLARED_KEY}")', _first_line(data, row.runtime, row.benchmark), "benchmark")
    for suite, group in kinds.groupby("suite", sort=False):
        sides = [rt for rt in runtimes if (group["runtime"] == rt).any()]
        for name, rows in group.groupby("benchmark", sort=False):
            present = set(rows["runtime"])
            missing = [rt for rt in sides if rt not in present and schema.runs_benchmark(rt, suite, name)]
            if missing and name not in declared:
                have = ", ".join(rt for rt in sides if rt in present)
                raise DataError(folder / f"{missing[0]}.csv", f"no rows of {suite} benchmark {name!r}, which "
                                f"{have} has: a benchmark on one side only is not compared (a run that means it "
                                f'declares it in run.json "{DECLARED_KEY}")')


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

HISTORY_COLUMNS = ["run_id", "started_utc", "host", "status", "suites", "profile", "runtimes", "schema_version",
                   "workers", "git_commit", "git_dirty", "reason", "path"]


def run_history(data_dir: str | Path | None = None, validate: bool = True) -> pd.DataFrame:
    """One row per run folder (oldest first): status is complete, failed, incomplete or invalid.

    `complete` means the folder loads: with `validate` (the default) every CSV and JSON file of
    a folder with run.json is read and checked as load_run does (about 0.1 s per 3 MB CSV), so a
    run whose CSV is corrupt is `invalid` with the loader's one-line reason. `validate=False`
    checks run.json only (for callers that load each complete run anyway).
    Never raises for a bad folder: its problem goes into `reason`.
    """
    records = []
    for folder in list_run_folders(data_dir):
        stamp = run_timestamp(folder.name)
        match = schema.RUN_ID_RE.fullmatch(folder.name)
        record: dict[str, Any] = {
            "run_id": folder.name, "started_utc": pd.Timestamp(stamp) if stamp else pd.NaT,
            "host": match["host"] if match else None, "status": "incomplete", "suites": None,
            "profile": None, "runtimes": ",".join(_runtime_files(folder)) or None, "schema_version": None,
            "workers": None, "git_commit": None, "git_dirty": None, "reason": None, "path": str(folder),
        }
        if (folder / RUN_JSON).is_file():
            record.update(_complete_record(folder, record, validate))
        elif (folder / FAILED_JSON).exists():
            record.update(status="failed", reason=failure_reason(folder))
        records.append(record)
    return pd.DataFrame.from_records(records, columns=HISTORY_COLUMNS)


def _complete_record(folder: Path, record: dict[str, Any], validate: bool) -> dict[str, Any]:
    """History fields of a folder with run.json: complete, or invalid with the first problem."""
    try:
        info = read_json_object(folder / RUN_JSON)
        validate_run_json(folder / RUN_JSON, info)
        version = load_run(folder).schema_version if validate else info.get("schema_version", 1)
    except AnalysisError as exc:
        return {"status": "invalid", "reason": str(exc)}
    git = info.get("git") or {}
    workers = info.get("workers")
    return {"status": "complete", "suites": ",".join(info["suites"]), "profile": info["profile"],
            "schema_version": version, "workers": ",".join(map(str, workers)) if workers else None,
            "git_commit": git.get("commit"), "git_dirty": git.get("dirty"),
            "host": info.get("hostname", record["host"])}


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
