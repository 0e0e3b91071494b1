"""Reading and strict validation of one benchmark CSV file (data/README.md, schema 1 and 2).

What is accepted, because the contract allows it (all of these read the same rows):
- UTF-8, with or without a leading byte-order mark (U+FEFF);
- lines ending in LF or CRLF (RFC 4180; what Python's `csv.writer` and spreadsheets write),
  the last line included, mixed within a file too;
- columns in any order, matched by name: the 11 columns of schema 1, or all 13 of schema 2
  (`cpu_ns` and `workers` added);
- fields quoted RFC-4180 style (`"n=10"`), as `csv.writer(quoting=QUOTE_ALL)` writes them.

The frame returned has the schema-2 columns in contract order plus `ns_per_op`
(= elapsed_ns / ops): the integer columns int64, except `cpu_ns` float64 and `workers` pandas
`Int64`, which hold NaN / <NA> where the file does not record them (schema 1: unknown, not 0).

Validation stops at the first problem in file order and raises one line,
`DataError("<file>:<line>: <column>: <problem>")`:
1. bytes: valid UTF-8 (else the line of the first bad byte); not empty;
2. header: every required column exactly once, no unknown column, `cpu_ns` and `workers`
   together or not at all;
3. each line, as written: the header's number of fields (a last line without a line end is
   reported as truncated), no stray carriage return, integers as decimal digits (at most 18),
   runtime / benchmark / param names of the contract's syntax;
4. each row's values: integer ranges (ops >= 1, elapsed_ns >= 1, the others >= 0), runtime
   equal to the file's runtime, suite micro|echo|net|io|http, tier within the suite's range, and the
   worker rule of schema 2 (0 on micro Tiers 0-2, 1 on echo rows, >= 1 elsewhere);
5. the file as a whole: no duplicate row key (schema.ROW_KEY), one (suite, tier) per benchmark.
Problems of kinds 3 and 4 are reported by line: a bad value on line 5 comes before a bad field
count on line 9.

Speed: a well-formed unquoted file is checked by one regular expression over the whole body
(the same per-field patterns the line-by-line check uses, so the two agree by construction) and
parsed by pandas' C reader; a file that fails that check, or uses quotes, is re-read line by line
to find the exact line and column. The reference run's 3.4 MB files validate in ~0.1 s each.
"""

from __future__ import annotations

import csv
import functools
import io
import re
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from . import schema
from .errors import DataError
from .files import read_input_text

#: Syntax of an integer field: optional minus (ranges are checked as values), 1..18 digits.
_INT = rf"-?[0-9]{{1,{schema.INT_DIGITS_MAX}}}"
#: Syntax of a free text field (suite: its value is checked against the suite list).
_TEXT = r'[^,"\r\n]*'
FIELD_PATTERNS: dict[str, str] = {
    **{name: _INT for name in schema.INT_COLUMNS},
    "runtime": schema.RUNTIME_RE.pattern,
    "suite": _TEXT,
    "benchmark": schema.BENCHMARK_RE.pattern,
    "param": schema.PARAM_RE.pattern,
}
STRING_COLUMNS: tuple[str, ...] = tuple(c for c in schema.CSV_COLUMNS if c not in schema.INT_COLUMNS)


# -- bytes and lines --------------------------------------------------------------------------

def _read_text(path: Path) -> str:
    """The file as text (files.read_input_text); an empty file has no header row."""
    text = read_input_text(path, "a CSV file")
    if not text:
        raise DataError(path, "empty file (no header row)", 1, "header")
    return text


def _split_fields(path: Path, line: str, number: int, header: list[str] | None) -> list[str]:
    """Fields of one line (RFC 4180 quoting); a stray CR or broken quoting is a DataError."""
    if "\r" in line:
        index = line[: line.index("\r")].count(",")
        column = _column_at(header, index)
        raise DataError(path, "carriage return inside a line (line ends must be LF or CRLF)", number, column)
    if '"' not in line:
        return line.split(",")
    try:
        return next(csv.reader([line], strict=True))
    except csv.Error as exc:
        index = line[: line.index('"')].count(",")
        raise DataError(path, f"malformed quoting ({exc})", number, _column_at(header, index)) from None


def _column_at(header: list[str] | None, index: int) -> str:
    if header is None:
        return "header"
    return header[index] if index < len(header) else "(extra)"


# -- header -----------------------------------------------------------------------------------

def _check_header(path: Path, header: list[str]) -> int:
    """Validate the header row; return the schema version (1 or 2)."""
    known = set(schema.CSV_COLUMNS)
    seen: set[str] = set()
    for name in header:
        if name not in known:
            hint = " (whitespace around the name)" if name.strip() in known else ""
            shown = name if name else "(empty)"
            raise DataError(path, f"unexpected column{hint}; known columns: {','.join(schema.CSV_COLUMNS)}", 1,
                            repr(shown) if hint else shown)
        if name in seen:
            raise DataError(path, "duplicate column", 1, name)
        seen.add(name)
    missing = [c for c in schema.CSV_COLUMNS_V1 if c not in seen]
    if missing:
        raise DataError(path, f"missing column (schema 1 has {','.join(schema.CSV_COLUMNS_V1)}; schema 2 adds "
                        f"{','.join(schema.SCHEMA2_COLUMNS)})", 1, missing[0])
    added = [c for c in schema.SCHEMA2_COLUMNS if c in seen]
    if added and len(added) != len(schema.SCHEMA2_COLUMNS):
        absent = next(c for c in schema.SCHEMA2_COLUMNS if c not in seen)
        raise DataError(path, f"missing column (schema 2 has both {' and '.join(schema.SCHEMA2_COLUMNS)}, "
                        f"this header only {added[0]})", 1, absent)
    return 2 if added else 1


@functools.lru_cache(maxsize=16)
def _body_pattern(header: tuple[str, ...]) -> re.Pattern[str]:
    row = ",".join(f"(?:{FIELD_PATTERNS[name]})" for name in header)
    # Possessive (`*+`, Python 3.11): no backtracking state is kept per line, so memory stays
    # flat on a million-line file (a plain `*` held about 1 KiB per line).
    return re.compile(rf"(?:{row}\n)*+")


@functools.lru_cache(maxsize=64)
def _field_pattern(name: str) -> re.Pattern[str]:
    return re.compile(FIELD_PATTERNS[name])


# -- line by line (the exact place of a problem) ----------------------------------------------

def _field_problem(name: str, value: str) -> str | None:
    if _field_pattern(name).fullmatch(value):
        return None
    if name in schema.INT_COLUMNS:
        if schema.INT_RE.fullmatch(value):
            return f"integer out of range: {value}"
        return f"not an integer: {value!r}"
    what = {"runtime": "runtime name", "benchmark": "benchmark name"}.get(name)
    if what:
        return f"invalid {what} {value!r}"
    return f"invalid param {value!r} (expected empty, n=<int>, size=<int> or conns=<int>)"


def _parse_lines(path: Path, text: str, header: list[str]) -> tuple[list[list[str]], DataError | None]:
    """Fields of every line up to the first malformed one, and that line's problem (or None)."""
    width = len(header)
    lines = text.split("\n")
    last_complete = lines.pop() == ""
    rows: list[list[str]] = []
    for number, line in enumerate(lines[1:], start=2):
        if line == "":
            return rows, DataError(path, "empty line", number, header[0])
        try:
            fields = _split_fields(path, line, number, header)
        except DataError as exc:
            return rows, exc
        if len(fields) != width:
            column = header[len(fields)] if len(fields) < width else "(extra)"
            return rows, DataError(path, f"expected {width} fields, got {len(fields)}", number, column)
        for name, value in zip(header, fields):
            problem = _field_problem(name, value)
            if problem:
                return rows, DataError(path, problem, number, name)
        rows.append(fields)
    if not last_complete:
        return rows, _truncated(path, text, header)
    return rows, None


def _truncated(path: Path, text: str, header: list[str]) -> DataError:
    last = text.rsplit("\n", 1)[-1]
    number = text.count("\n") + 1
    fields = last.split(",")
    column = header[min(len(fields), len(header)) - 1]
    return DataError(path, f"truncated last line (no line end; {len(fields)} of {len(header)} fields)", number, column)


# -- typed frame and value checks -------------------------------------------------------------

def _typed(frame: pd.DataFrame, version: int) -> pd.DataFrame:
    """Contract column order and types; the schema-2 columns NaN / <NA> in a schema-1 file."""
    n = len(frame)
    out = pd.DataFrame(index=pd.RangeIndex(n))
    for name in schema.CSV_COLUMNS:
        if name in schema.SCHEMA2_COLUMNS and version == 1:
            out[name] = np.full(n, np.nan) if name == "cpu_ns" else pd.array([pd.NA] * n, dtype="Int64")
        elif name == "cpu_ns":
            out[name] = frame[name].astype(np.int64).astype(np.float64)
        elif name == "workers":
            out[name] = frame[name].astype(np.int64).astype("Int64")
        elif name in schema.INT_COLUMNS:
            out[name] = frame[name].astype(np.int64)
        else:
            out[name] = frame[name].astype(str)
    return out


def _first(mask: np.ndarray) -> int | None:
    hits = np.flatnonzero(mask)
    return int(hits[0]) if hits.size else None


def _value_problems(frame: pd.DataFrame, version: int, runtime: str | None) -> list[tuple[int, int, str, str]]:
    """The first problem of each value check as (row index, column order, column, problem)."""
    problems: list[tuple[int, int, str, str]] = []
    order = {c: i for i, c in enumerate(schema.CSV_COLUMNS)}

    def add(mask: np.ndarray, column: str, describe: Callable[[int], str]) -> None:
        row = _first(mask)
        if row is not None:
            problems.append((row, order[column], column, describe(row)))

    columns = schema.INT_COLUMNS if version == 2 else tuple(c for c in schema.INT_COLUMNS
                                                            if c not in schema.SCHEMA2_COLUMNS)
    for column in columns:
        values = frame[column].to_numpy(dtype=np.float64 if column == "cpu_ns" else np.int64)
        low = schema.INT_MIN[column]
        add(values < low, column, lambda r, v=values, low=low: f"{int(v[r])} is out of range (must be >= {low})")
    rt = frame["runtime"].to_numpy(dtype=object)
    if runtime is not None:
        add(rt != runtime, "runtime", lambda r: f"{rt[r]!r} does not match the file's runtime {runtime!r}")
    suite = frame["suite"].to_numpy(dtype=object)
    add(~np.isin(suite, schema.SUITES), "suite",
        lambda r: f"{suite[r]!r} is not a suite ({', '.join(schema.SUITES)})")
    tiers = frame["tier"].to_numpy(dtype=np.int64)
    for name, (low, high) in schema.TIER_RANGE.items():
        add((suite == name) & ((tiers < low) | (tiers > high)), "tier",
            lambda r, low=low, high=high, name=name: f"tier {tiers[r]} out of range for suite {name} ({low}-{high})")
    if version == 2:
        problems += _worker_problems(frame, suite, tiers, order)
    return problems


def _worker_problems(frame: pd.DataFrame, suite: np.ndarray, tiers: np.ndarray,
                     order: dict[str, int]) -> list[tuple[int, int, str, str]]:
    """Schema 2: workers 0 where no runtime runs (micro Tiers 0-2), 1 for echo, >= 1 elsewhere."""
    workers = frame["workers"].to_numpy(dtype=np.int64)
    no_runtime = (suite == "micro") & np.isin(tiers, schema.NO_RUNTIME_TIERS)
    rules = [
        (no_runtime & (workers != 0), lambda r: f"{workers[r]} on a tier {tiers[r]} row (Tiers 0-2 run without a "
                                                "runtime: must be 0)"),
        ((suite == "echo") & (workers != schema.ECHO_WORKERS),
         lambda r: f"{workers[r]} on an echo row (the echo runtime has {schema.ECHO_WORKERS} worker)"),
        (~no_runtime & (suite != "echo") & np.isin(suite, schema.SUITES) & (workers < 1),
         lambda r: f"{workers[r]} on a {suite[r]} tier {tiers[r]} row (a runtime needs >= 1 worker)"),
    ]
    out = []
    for mask, describe in rules:
        row = _first(mask)
        if row is not None:
            out.append((row, order["workers"], "workers", describe(row)))
    return out


def _check_duplicates(path: Path, frame: pd.DataFrame) -> None:
    key = list(schema.ROW_KEY)
    row = _first(frame.duplicated(subset=key, keep="first").to_numpy())
    if row is None:
        return
    first = _first(frame.iloc[: row + 1].duplicated(subset=key, keep="last").to_numpy())
    raise DataError(path, f"duplicate row (same {', '.join(key)} as line {first + 2})", row + 2, "iteration")


def _check_tiers_consistent(path: Path, frame: pd.DataFrame) -> None:
    kinds = frame[["benchmark", "suite", "tier"]].drop_duplicates()
    repeated = kinds.duplicated(subset=["benchmark"], keep="first").to_numpy()
    row = _first(repeated)
    if row is None:
        return
    label = int(kinds.index[row])
    name = kinds.iloc[row]["benchmark"]
    first = int(kinds.index[_first((kinds["benchmark"] == name).to_numpy())])
    raise DataError(path, f"benchmark {name!r} is suite {kinds.iloc[row]['suite']} tier {kinds.iloc[row]['tier']} "
                    f"here but suite {frame.at[first, 'suite']} tier {frame.at[first, 'tier']} on line {first + 2}",
                    label + 2, "tier")


def _check_values(path: Path, frame: pd.DataFrame, version: int, runtime: str | None) -> None:
    problems = _value_problems(frame, version, runtime)
    if problems:
        row, _, column, problem = min(problems)
        raise DataError(path, problem, row + 2, column)
    _check_duplicates(path, frame)
    _check_tiers_consistent(path, frame)


# -- the reader -------------------------------------------------------------------------------

def _fast_frame(body: str, header: list[str]) -> pd.DataFrame:
    """Parse a body that matched _body_pattern with pandas' C reader (all fields unquoted)."""
    if not body:
        return pd.DataFrame({name: pd.Series([], dtype=str if name in STRING_COLUMNS else np.int64)
                             for name in header})
    # The string columns parse as categories: the C reader factorises their tokens directly
    # instead of making a Python string per cell first (_typed turns them into str columns).
    dtypes = {name: ("category" if name in STRING_COLUMNS else np.int64) for name in header}
    # Bytes, not io.StringIO: StringIO holds the text as 4 bytes per character.
    return pd.read_csv(io.BytesIO(body.encode()), header=None, names=header, dtype=dtypes, na_filter=False,
                       keep_default_na=False, engine="c", quoting=csv.QUOTE_NONE)


def read_bench_csv(path: str | Path, runtime: str | None = None) -> pd.DataFrame:
    """Read and strictly validate one benchmark CSV; returns typed rows plus `ns_per_op`.

    The file's schema version (1 or 2, from its header) is in `frame.attrs["schema_version"]`.

    `runtime` is the runtime (variant) the file belongs to, from its name; None accepts any
    valid name. Raises DataError(`<file>:<line>: <column>: <problem>`) at the first problem.
    """
    path = Path(path)
    text = _read_text(path)
    end = text.find("\n")
    header = _split_fields(path, text if end < 0 else text[:end], 1, None)
    version = _check_header(path, header)
    body = "" if end < 0 else text[end + 1:]
    if end >= 0 and '"' not in body and _body_pattern(tuple(header)).fullmatch(body):
        frame = _typed(_fast_frame(body, header), version)
    else:
        rows, syntax_error = _parse_lines(path, text, header)
        raw = pd.DataFrame(rows, columns=header, dtype=str) if rows else _fast_frame("", header)
        frame = _typed(raw, version)
        if syntax_error is not None:
            # A value problem on an earlier line comes first; then the malformed line itself.
            _check_values(path, frame, version, runtime)
            raise syntax_error
    _check_values(path, frame, version, runtime)
    frame["ns_per_op"] = frame["elapsed_ns"] / frame["ops"]
    frame.attrs["schema_version"] = version
    return frame
