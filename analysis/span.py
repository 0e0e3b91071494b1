"""The whole-invocation spans of a run: `<runtime>.span.csv` beside each `<runtime>.csv`
(data/README.md, "Spans").

One row per benchmark row (suite, tier, benchmark, param, workers) and invocation: from the
first measured iteration's start to the last one's stop, the gaps between iterations included,
the wall time (`elapsed_ns`), the process CPU time of all threads (`cpu_ns`,
CLOCK_PROCESS_CPUTIME_ID) and the operations of those iterations (`ops`, = iterations x ops per
iteration). A worker that spins on after an iteration's last join burns CPU in the untimed gap,
outside every sample's `cpu_ns`; the span holds it.

A run without span files (every run before them) loads with an empty frame: its
whole-invocation CPU is *not recorded*. A run with some variants' spans only has those.

Validation is strict and stops at the first problem with one line,
`<file>:<line>: <column>: <problem>`: the exact header (columns matched by name, any order),
integers as decimal digits, names of the contract's syntax, the runtime of the file, the
ranges (iterations, ops, elapsed_ns >= 1, cpu_ns >= 0), no key twice, and — against the run's
CSV — a span for exactly the (invocation, benchmark row) keys the CSV has (its http rows aside:
the orchestrator writes them, one per wrk sample), with `iterations` equal to its measured rows
and `ops` to their sum.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pandas as pd

from . import schema
from .errors import DataError
from .files import read_input_text

SUFFIX = ".span.csv"
SPAN_COLUMNS: tuple[str, ...] = ("runtime", "invocation", "suite", "tier", "benchmark", "param", "workers",
                                 "iterations", "ops", "elapsed_ns", "cpu_ns")
INT_COLUMNS: tuple[str, ...] = ("invocation", "tier", "workers", "iterations", "ops", "elapsed_ns", "cpu_ns")
INT_MIN = {"invocation": 0, "tier": 0, "workers": 0, "iterations": 1, "ops": 1, "elapsed_ns": 1, "cpu_ns": 0}
KEY: tuple[str, ...] = ("runtime", "invocation", *schema.BENCH_KEY)


def span_path(folder: Path, runtime: str) -> Path:
    return Path(folder) / f"{runtime}{SUFFIX}"


def is_span_file(path: Path) -> bool:
    return path.name.endswith(SUFFIX)


def empty_frame() -> pd.DataFrame:
    frame = pd.DataFrame({c: pd.Series(dtype="int64" if c in INT_COLUMNS else object) for c in SPAN_COLUMNS})
    frame["workers"] = frame["workers"].astype("Int64")
    return frame


def _value(path: Path, line: int, column: str, text: str, runtime: str) -> object:
    if column in INT_COLUMNS:
        if not schema.INT_RE.fullmatch(text) or len(text.lstrip("-")) > schema.INT_DIGITS_MAX:
            raise DataError(path, f"not an integer: {text!r}", line, column)
        value = int(text)
        if value < INT_MIN[column]:
            raise DataError(path, f"{value} is below {INT_MIN[column]}", line, column)
        return value
    patterns = {"runtime": schema.RUNTIME_RE, "benchmark": schema.BENCHMARK_RE, "param": schema.PARAM_RE}
    if column in patterns and not patterns[column].fullmatch(text):
        raise DataError(path, f"not a valid {column} name: {text!r}", line, column)
    if column == "runtime" and text != runtime:
        raise DataError(path, f"{text!r} in the span file of {runtime!r}", line, column)
    if column == "suite" and text not in schema.SUITES:
        raise DataError(path, f"unknown suite {text!r} (expected {', '.join(schema.SUITES)})", line, column)
    return text


def read_span_file(path: Path, runtime: str) -> pd.DataFrame:
    """One validated span file as a frame (SPAN_COLUMNS; `workers` Int64)."""
    text = read_input_text(path, "a span CSV file")
    if not text:
        raise DataError(path, "empty file (no header row)", 1, "header")
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    else:
        raise DataError(path, "truncated last line (no line end)", len(lines), None)
    header = next(csv.reader([lines[0]]))
    unknown = [h for h in header if h not in SPAN_COLUMNS]
    missing = [c for c in SPAN_COLUMNS if c not in header]
    if unknown or missing or len(header) != len(SPAN_COLUMNS):
        raise DataError(path, f"header must have the columns {','.join(SPAN_COLUMNS)}", 1,
                        (unknown or missing or ["header"])[0])
    records, seen = [], {}
    for number, fields in enumerate(csv.reader(io.StringIO("\n".join(lines[1:]))), start=2):
        if len(fields) != len(header):
            raise DataError(path, f"{len(fields)} fields, the header has {len(header)}", number, None)
        row = {column: _value(path, number, column, value, runtime) for column, value in zip(header, fields)}
        key = tuple(row[c] for c in KEY)
        if key in seen:
            raise DataError(path, f"the same benchmark row and invocation as line {seen[key]}", number, "benchmark")
        seen[key] = number
        records.append(row)
    frame = pd.DataFrame.from_records(records, columns=list(SPAN_COLUMNS)) if records else empty_frame()
    for column in INT_COLUMNS:
        frame[column] = frame[column].astype("int64")
    frame["workers"] = frame["workers"].astype("Int64")
    frame["line"] = range(2, 2 + len(frame))
    return frame


def check_against_rows(path: Path, spans: pd.DataFrame, rows: pd.DataFrame) -> None:
    """The spans of one runtime cover exactly the (invocation, benchmark row) keys of its CSV
    rows, each with as many iterations and as many ops as those rows. The http suite's rows are
    not the programs' (the orchestrator measures each wrk sample, its `cpu_ns` is the server's
    CPU over the whole sample): they have no span."""
    key = ["invocation", *schema.BENCH_KEY]
    rows = rows[rows["suite"] != "http"]
    measured = rows.groupby(key, sort=False, dropna=False, observed=True).agg(
        n=("ops", "size"), ops_sum=("ops", "sum")).reset_index()
    if measured["workers"].isna().any():  # schema 1 has no worker count; spans came later
        raise DataError(path, "span file beside a schema-1 CSV (no workers column): spans need schema 2", 1, None)
    measured["workers"] = measured["workers"].astype("Int64")
    merged = spans.merge(measured, on=key, how="outer", indicator=True)
    extra = merged[merged["_merge"] == "left_only"]
    if not extra.empty:
        r = extra.sort_values("line").iloc[0]
        raise DataError(path, f"no CSV rows of {schema.bench_label(r['benchmark'], r['param'])} (workers "
                        f"{r['workers']}) in invocation {r['invocation']}", int(r["line"]), "benchmark")
    lacking = merged[merged["_merge"] == "right_only"]
    if not lacking.empty:
        r = lacking.iloc[0]
        raise DataError(path, f"no span of {schema.bench_label(r['benchmark'], r['param'])} (workers {r['workers']}) "
                        f"in invocation {r['invocation']}, which the CSV has", None, None)
    both = merged[merged["_merge"] == "both"]
    wrong = both[(both["iterations"] != both["n"]) | (both["ops"] != both["ops_sum"])].sort_values("line")
    if not wrong.empty:
        r = wrong.iloc[0]
        column = "iterations" if r["iterations"] != r["n"] else "ops"
        want = int(r["n"]) if column == "iterations" else int(r["ops_sum"])
        raise DataError(path, f"{int(r[column])}, but the CSV has {want} for this benchmark row and invocation",
                        int(r["line"]), column)


def read_run_spans(folder: Path, runtimes: tuple[str, ...] | list[str], data: pd.DataFrame) -> pd.DataFrame:
    """Every `<runtime>.span.csv` of a run folder, validated against the run's rows (`data`);
    an empty frame when the run has none."""
    frames = []
    for runtime in runtimes:
        path = span_path(folder, runtime)
        if not path.exists() and not path.is_symlink():
            continue
        spans = read_span_file(path, runtime)
        check_against_rows(path, spans, data[data["runtime"] == runtime])
        frames.append(spans.drop(columns=["line"]))
    if not frames:
        return empty_frame()
    frame = pd.concat(frames, ignore_index=True)
    frame["workers"] = frame["workers"].astype("Int64")
    return frame
