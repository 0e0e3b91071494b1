"""Runtime metrics files of a run: `<variant>.metrics.jsonl` (data/README.md, "Runtime metrics").

A bench program run with `--metrics PATH` (today: ampere_bench) writes one JSON line per
benchmark that ran on a runtime (micro Tiers 3–4 at each worker count of the sweep, echo, net):
the runtime's event counts (`ampere.Runtime.metrics()`) summed over the measured iterations of
that benchmark in that invocation. The orchestrator concatenates the invocations' files, in
invocation order, into `<variant>.metrics.jsonl` in the run folder. One line:

    {"runtime": "ampere", "invocation": 0, "benchmark": "task_spawn", "param": "", "suite": "micro",
     "tier": 4, "workers": 2, "iterations": 10, "ops": 1000,
     "per_worker": [{"polls": 1204, ...}, {...}], "external": {...}, "total": {...}}

`ops` is per iteration, so the counts cover `iterations × ops` operations. `total` is the sum of
`per_worker` and `external` (events on other threads: `blockOn`, remote spawns and wakes).

Validation stops at the first problem and raises one line,
`DataError("<file>:<line>: <key>: <problem>")`:
1. bytes: valid UTF-8 (a leading byte-order mark and CRLF line ends are accepted); every line
   ends with a line end (a last line without one is reported as truncated); no empty line;
2. each line: one JSON object with the keys above (other keys are ignored), `runtime` equal to
   the file's variant, names of the CSV contract's syntax, suite micro|echo|net, the tier within
   the suite's range and not a micro tier without a runtime (0–2), `workers` >= 1,
   `invocation` >= 0, `iterations` and `ops` >= 1, one counter object per worker
   (`len(per_worker) == workers`), counts non-negative integers;
3. counters: the same counter names in `per_worker`, `external` and `total` of a line and on
   every line of the file (as on line 1); `total` = `external` + the sum of `per_worker`;
4. the file: no benchmark twice in one invocation (runtime, invocation, benchmark, param, workers).

The loaded frame is wide: one row per variant × invocation × benchmark key, the columns
`METRICS_KEY_COLUMNS` and then one int64 column per counter of `total`, in the file's order (a
run whose files name different counters: the union, NaN where a file has no such counter).
A file with no lines loads as an empty frame. A run without metrics files (Tokio, a program
from before `--metrics`, the schema-1 reference run) has an empty frame, not an error.
`per_op` turns counts into events per operation per benchmark, worker count and variant.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from . import schema
from .errors import DataError
from .files import read_input_text

SUFFIX = ".metrics.jsonl"
#: The identifying columns of the loaded frame, in order; the counters follow.
METRICS_KEY_COLUMNS: tuple[str, ...] = ("runtime", "invocation", "suite", "tier", "benchmark", "param", "workers",
                                        "iterations", "ops")
#: Within a file, a benchmark is recorded once per invocation and worker count.
ENTRY_KEY: tuple[str, ...] = ("runtime", "invocation", "benchmark", "param", "workers")
_INT_MIN: dict[str, int] = {"invocation": 0, "tier": 0, "workers": 1, "iterations": 1, "ops": 1}
_COUNT_MAX = 2**63 - 1


def metrics_path(folder: Path, variant: str) -> Path:
    return Path(folder) / f"{variant}{SUFFIX}"


def metrics_variants(folder: Path) -> list[str]:
    """Variants with a `<variant>.metrics.jsonl` in the folder, sorted by name."""
    names = []
    for item in sorted(Path(folder).iterdir()):
        stem = item.name[: -len(SUFFIX)] if item.name.endswith(SUFFIX) else ""
        if item.is_file() and schema.RUNTIME_RE.fullmatch(stem):
            names.append(stem)
    return names


def empty_frame(counters: tuple[str, ...] = ()) -> pd.DataFrame:
    frame = pd.DataFrame({c: pd.Series(dtype="int64") for c in (*METRICS_KEY_COLUMNS, *counters)})
    return frame.astype({"runtime": object, "suite": object, "benchmark": object, "param": object})


# -- one file ---------------------------------------------------------------------------------

def _lines(path: Path) -> list[str]:
    """The file's lines without their line ends (files.read_input_text: UTF-8, BOM and CRLF
    accepted)."""
    text = read_input_text(path, "a metrics file")
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] != "":
        raise DataError(path, "truncated last line (no line end)", len(lines))
    return lines[:-1]


def _int(path: Path, number: int, key: str, value: Any, minimum: int = 0) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise DataError(path, f"not an integer: {json.dumps(value)}", number, key)
    if value < minimum or value > _COUNT_MAX:
        raise DataError(path, f"{value} out of range (must be {minimum} to {_COUNT_MAX})", number, key)
    return value


def _text(path: Path, number: int, key: str, value: Any, pattern: Any = None) -> str:
    if not isinstance(value, str):
        raise DataError(path, f"not a string: {json.dumps(value)}", number, key)
    if pattern is not None and not pattern.fullmatch(value):
        raise DataError(path, f"invalid value {json.dumps(value)} (expected {pattern.pattern})", number, key)
    return value


def _counts(path: Path, number: int, key: str, value: Any, names: tuple[str, ...] | None) -> dict[str, int]:
    """One counter object; `names` (when given) are the counters it must have, in any order."""
    if not isinstance(value, dict):
        raise DataError(path, f"expected an object of counters, got {json.dumps(value)[:40]}", number, key)
    counts = {name: _int(path, number, f"{key}.{name}", v) for name, v in value.items()}
    if names is not None and set(counts) != set(names):
        missing, extra = sorted(set(names) - set(counts)), sorted(set(counts) - set(names))
        what = f"missing counter {missing[0]!r}" if missing else f"unknown counter {extra[0]!r}"
        reference = "line 1's total" if key == "total" else "this line's total"
        raise DataError(path, f"{what} (expected the counters of {reference})", number, key)
    return counts


def _entry(path: Path, number: int, line: str, variant: str, counters: tuple[str, ...] | None) -> dict[str, Any]:
    """One validated line as a flat record (the key columns and the totals)."""
    if not line.strip():
        raise DataError(path, "empty line", number)
    try:
        doc = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DataError(path, f"invalid JSON: {exc.msg} (column {exc.colno})", number) from None
    if not isinstance(doc, dict):
        raise DataError(path, f"expected a JSON object, got {type(doc).__name__}", number)
    required = (*METRICS_KEY_COLUMNS, "per_worker", "external", "total")
    missing = [k for k in required if k not in doc]
    if missing:
        raise DataError(path, "missing key", number, missing[0])
    record: dict[str, Any] = {"runtime": _text(path, number, "runtime", doc["runtime"], schema.RUNTIME_RE)}
    if record["runtime"] != variant:
        raise DataError(path, f"{json.dumps(record['runtime'])} in {path.name} (must be {json.dumps(variant)})",
                        number, "runtime")
    for key in ("invocation", "tier", "workers", "iterations", "ops"):
        record[key] = _int(path, number, key, doc[key], _INT_MIN[key])
    suite = _text(path, number, "suite", doc["suite"])
    if suite not in schema.SUITES:
        raise DataError(path, f"unknown suite {json.dumps(suite)} (expected {', '.join(schema.SUITES)})", number,
                        "suite")
    low, high = schema.TIER_RANGE[suite]
    if not low <= record["tier"] <= high:
        raise DataError(path, f"tier {record['tier']} out of range for suite {suite} ({low}-{high})", number, "tier")
    if suite == "micro" and record["tier"] in schema.NO_RUNTIME_TIERS:
        raise DataError(path, f"tier {record['tier']} runs without a runtime: it has no runtime metrics", number,
                        "tier")
    record.update(suite=suite, benchmark=_text(path, number, "benchmark", doc["benchmark"], schema.BENCHMARK_RE),
                  param=_text(path, number, "param", doc["param"], schema.PARAM_RE))
    total = _counts(path, number, "total", doc["total"], counters)
    names = tuple(total)
    workers = doc["per_worker"]
    if not isinstance(workers, list) or len(workers) != record["workers"]:
        got = f"{len(workers)} entries" if isinstance(workers, list) else json.dumps(workers)[:40]
        raise DataError(path, f"expected a list of {record['workers']} counter objects (one per worker), got {got}",
                        number, "per_worker")
    parts = [_counts(path, number, f"per_worker[{i}]", w, names) for i, w in enumerate(workers)]
    parts.append(_counts(path, number, "external", doc["external"], names))
    for name in names:
        summed = sum(part[name] for part in parts)
        if summed != total[name]:
            raise DataError(path, f"{total[name]}, but external + per_worker sum to {summed}", number,
                            f"total.{name}")
    return {**{k: record[k] for k in METRICS_KEY_COLUMNS}, **total}


def read_metrics_file(path: Path, variant: str) -> pd.DataFrame:
    """Load and validate one `<variant>.metrics.jsonl` (or an invocation's file)."""
    path = Path(path)
    records: list[dict[str, Any]] = []
    counters: tuple[str, ...] | None = None
    first_line: dict[tuple, int] = {}
    for number, line in enumerate(_lines(path), start=1):
        record = _entry(path, number, line, variant, counters)
        if counters is None:
            counters = tuple(k for k in record if k not in METRICS_KEY_COLUMNS)
        key = tuple(record[k] for k in ENTRY_KEY)
        if key in first_line:
            label = schema.bench_label(record["benchmark"], record["param"])
            raise DataError(path, f"{label} with {record['workers']} workers twice in invocation "
                            f"{record['invocation']} (first on line {first_line[key]})", number, "benchmark")
        first_line[key] = number
        records.append(record)
    if not records:
        return empty_frame()
    return pd.DataFrame.from_records(records, columns=[*METRICS_KEY_COLUMNS, *(counters or ())])


# -- a run ------------------------------------------------------------------------------------

def read_run_metrics(folder: Path, listed: dict[str, str | None] | None = None) -> pd.DataFrame:
    """Every metrics file of a run folder, concatenated (empty frame when there is none).

    `listed` is run.json's `metrics_files` (variant -> file name or null) when it has one: a
    file it names must exist.
    """
    folder = Path(folder)
    for variant, name in (listed or {}).items():
        if name is not None and not (folder / name).is_file():
            raise DataError(folder / "run.json", f'"metrics_files" names {name} for {variant}, which is missing')
    frames = [read_metrics_file(metrics_path(folder, v), v) for v in metrics_variants(folder)]
    frames = [f for f in frames if not f.empty]
    if not frames:
        return empty_frame()
    return pd.concat(frames, ignore_index=True)


def counter_names(frame: pd.DataFrame) -> list[str]:
    """The counter columns of a loaded frame, in order."""
    return [c for c in frame.columns if c not in METRICS_KEY_COLUMNS]


def per_op(frame: pd.DataFrame) -> pd.DataFrame:
    """Events per operation: per variant and benchmark key, each counter summed over the
    invocations and divided by the operations they cover (Σ iterations × ops).

    Columns: `runtime`, the benchmark key (schema.BENCH_KEY), `invocations`, `ops_total`, and
    one float column per counter (`spin_ns`: nanoseconds spun per operation).
    """
    counters = counter_names(frame)
    key = ["runtime", *schema.BENCH_KEY]
    if frame.empty:
        return pd.DataFrame(columns=[*key, "invocations", "ops_total", *counters])
    work = frame.assign(ops_total=frame["iterations"] * frame["ops"])
    grouped = work.groupby(key, sort=False, dropna=False)
    sums = grouped[["ops_total", *counters]].sum(min_count=1)
    out = sums[counters].div(sums["ops_total"], axis=0)
    out.insert(0, "ops_total", sums["ops_total"])
    out.insert(0, "invocations", grouped["invocation"].nunique())
    return out.reset_index()
