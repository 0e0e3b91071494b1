"""`<runtime>.http.csv`: the http suite's latency percentiles beside `<runtime>.csv` (schema 3).

One row per http sample, keyed like its `suite=http` row of `<runtime>.csv`
(`invocation, benchmark, param, iteration`), with wrk's latency percentiles in nanoseconds and
the sample's error counts (data/README.md, "Http suite"):

    invocation,benchmark,param,iteration,p50_ns,p90_ns,p99_ns,p999_ns,errors,non_2xx

Checks, each a one-line `DataError` naming the file, line and column: the exact header (a BOM
and CRLF line ends are accepted); every field an integer >= 0 (benchmark: an http benchmark,
param: `conns=N`, or `load=N` for the open-loop rows); p50 <= p90 <= p99 <= p99.9; errors and non_2xx 0 (a sample with either is
failed and never written); no key twice; and against the runtime's CSV (`match_rows`): one
latency row per `suite=http` row and no other.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pandas as pd

from . import schema
from .errors import DataError

PERCENTILES: tuple[str, ...] = ("p50_ns", "p90_ns", "p99_ns", "p999_ns")
INT_FIELDS: tuple[str, ...] = ("invocation", "iteration", *PERCENTILES, "errors", "non_2xx")


def http_path(folder: Path, runtime: str) -> Path:
    return folder / f"{runtime}{schema.HTTP_SUFFIX}"


def empty_frame() -> pd.DataFrame:
    columns = ("runtime", *schema.HTTP_COLUMNS)
    return pd.DataFrame({c: pd.Series(dtype=object if c in ("runtime", "benchmark", "param") else "int64")
                         for c in columns})


def _text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DataError(path, f"cannot read: {exc.strerror}") from None
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        raise DataError(path, "not valid UTF-8") from None


def read_http_csv(path: Path, runtime: str) -> pd.DataFrame:
    """The latency rows of one runtime (DataError on the first problem); a `runtime` column is added."""
    lines = list(csv.reader(io.StringIO(_text(path), newline="")))
    if not lines:
        raise DataError(path, "empty file (expected a header line)", 1)
    header = tuple(lines[0])
    if header != schema.HTTP_COLUMNS:
        raise DataError(path, f"header must be {','.join(schema.HTTP_COLUMNS)}", 1, "header")
    records = []
    seen: dict[tuple, int] = {}
    for number, fields in enumerate(lines[1:], start=2):
        if not fields:
            continue
        if len(fields) != len(header):
            raise DataError(path, f"{len(fields)} fields, expected {len(header)}", number)
        row = dict(zip(header, fields))
        record: dict[str, object] = {"runtime": runtime, "benchmark": row["benchmark"], "param": row["param"]}
        if row["benchmark"] not in schema.HTTP_ORDER:
            raise DataError(path, f"{row['benchmark']!r} is not an http benchmark ({', '.join(schema.HTTP_ORDER)})",
                            number, "benchmark")
        key = "load=" if row["benchmark"] == schema.HTTP_OPEN_LOOP else "conns="
        if not row["param"].startswith(key) or not schema.PARAM_RE.fullmatch(row["param"]):
            raise DataError(path, f"{row['param']!r} is not {key}N", number, "param")
        for name in INT_FIELDS:
            text = row[name]
            if not text.isdigit() or len(text) > schema.INT_DIGITS_MAX:
                raise DataError(path, f"{text!r} is not an integer >= 0", number, name)
            record[name] = int(text)
        values = [record[p] for p in PERCENTILES]
        if values != sorted(values):
            raise DataError(path, "percentiles out of order (need p50 <= p90 <= p99 <= p99.9)", number, "p999_ns")
        for name in ("errors", "non_2xx"):
            if record[name] != 0:
                raise DataError(path, f"{record[name]} in a written sample (a sample with errors is failed, "
                                "not written)", number, name)
        key = tuple(record[k] for k in schema.HTTP_KEY)
        if key in seen:
            raise DataError(path, f"sample {key} already on line {seen[key]}", number)
        seen[key] = number
        records.append(record)
    frame = pd.DataFrame.from_records(records, columns=["runtime", *schema.HTTP_COLUMNS])
    return frame.astype({c: "int64" for c in INT_FIELDS}) if not frame.empty else empty_frame()


def match_rows(path: Path, latency: pd.DataFrame, rows: pd.DataFrame) -> None:
    """One latency row per `suite=http` row of the runtime's CSV (`rows`), and none other."""
    key = list(schema.HTTP_KEY)
    http_rows = rows[rows["suite"] == "http"]
    left = set(map(tuple, latency[key].itertuples(index=False, name=None)))
    right = set(map(tuple, http_rows[key].itertuples(index=False, name=None)))
    if left - right:
        extra = sorted(left - right)[0]
        raise DataError(path, f"sample {extra} has no suite=http row in {path.name.removesuffix(schema.HTTP_SUFFIX)}.csv")
    if right - left:
        missing = sorted(right - left)[0]
        raise DataError(path, f"no latency row for the http sample {missing} of "
                        f"{path.name.removesuffix(schema.HTTP_SUFFIX)}.csv")


def write_http_csv(target: Path, records: list[dict[str, object]]) -> str:
    """The text of a latency file for `records` (dicts with HTTP_COLUMNS), header first."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(schema.HTTP_COLUMNS)
    for record in records:
        writer.writerow([record[c] for c in schema.HTTP_COLUMNS])
    return out.getvalue()
