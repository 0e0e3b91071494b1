"""The fairness table of runtime/bench/README.md as a DataFrame, and whether a benchmark is
like for like.

The README documents, per benchmark, what is timed on each side. This module finds the
section headed exactly `## Fairness table`, takes the first markdown table in it (before the
next `## ` heading) and maps its header cells to the expected columns by keyword:
benchmark, ampere_timed ("ampere"), tokio_timed ("tokio"), untimed_setup ("untimed",
"setup", "outside"), differences ("difference") and same_semantics ("semantic"). Other
columns are kept under a snake_case version of their header. Without the section or a table
in it the result is an empty frame with the expected columns; a table without a column gets
it empty.

The "same semantics" cell starts with `yes` (the two sides have the same semantics) or with
`no:` followed by the difference that remains. `like_for_like(benchmark)` reads it (True for
`yes`; False for `no:` and for a benchmark the table does not list, since nothing vouches for
it) and `semantics_note(benchmark)` returns the text after `no:`. A cell that is empty or
starts with anything else is an error naming the README's file and line.

A row whose benchmark changed to become like for like says since when: its cell starts
`yes (runs from YYYYMMDDTHHMMSSZ on):` and carries `earlier runs: no: <difference>` (the
difference runs recorded before that time still measured). `earlier_semantics(benchmark,
run_id)` returns that difference for a run whose id (which starts with its UTC start time)
is earlier, or for an id without a time; None when the table's current answer applies to the
run. A `runs from` without a valid time or without the `earlier runs: no:` note is an error.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import pandas as pd

from .errors import DataError

FAIRNESS_COLUMNS = ["benchmark", "ampere_timed", "tokio_timed", "untimed_setup", "differences", "same_semantics"]
HEADING = "## Fairness table"
_KEYWORDS = (("semantic", "same_semantics"), ("difference", "differences"), ("untimed", "untimed_setup"),
             ("setup", "untimed_setup"), ("outside", "untimed_setup"), ("ampere", "ampere_timed"),
             ("tokio", "tokio_timed"), ("benchmark", "benchmark"))
_YES = re.compile(r"yes\b", re.IGNORECASE)
_NO = re.compile(r"no\s*:", re.IGNORECASE)
_SINCE = re.compile(r"yes\s*\(runs from (\S*) on\)", re.IGNORECASE)
_STAMP = re.compile(r"\d{8}T\d{6}Z")
_EARLIER = re.compile(r"earlier runs:\s*no\s*:\s*(.*)$", re.IGNORECASE)


def default_readme() -> Path:
    return Path(__file__).resolve().parent.parent / "runtime" / "bench" / "README.md"


def _cells(line: str) -> list[str]:
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    parts = re.split(r"(?<!\\)\|", body)
    return [p.strip().replace("\\|", "|") for p in parts]


def _column_name(header: str, taken: set[str]) -> str:
    lowered = header.lower()
    for word, column in _KEYWORDS:
        if word in lowered and column not in taken:
            return column
    name = re.sub(r"[^a-z0-9]+", "_", lowered).strip("_") or "column"
    while name in taken:
        name += "_"
    return name


def _section(text: str) -> tuple[int, list[str]]:
    """The lines of the fairness section and the 1-based line number of the first one."""
    lines = text.splitlines()
    for start, line in enumerate(lines):
        if line.strip() == HEADING:
            end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
            return start + 2, lines[start + 1: end]
    return 0, []


def _table_lines(text: str) -> tuple[int, list[str]]:
    """The line number of the header and the table's lines (header, rule, rows); (0, []) if
    the section holds no table."""
    first, section = _section(text)
    table: list[str] = []
    start = 0
    for offset, line in enumerate(section):
        if line.strip().startswith("|"):
            if not table:
                start = first + offset
            table.append(line)
        elif table:
            break
    is_rule = lambda cells: all(re.fullmatch(r":?-+:?", c) for c in cells if c)  # noqa: E731
    if len(table) < 2 or not is_rule(_cells(table[1])):
        return 0, []
    return start, table


def parse_fairness_table(text: str) -> pd.DataFrame:
    """Parse markdown text (the README's content); see the module doc for the rules."""
    _, table = _table_lines(text)
    if not table:
        return pd.DataFrame(columns=FAIRNESS_COLUMNS)
    taken: set[str] = set()
    names = []
    for header in _cells(table[0]):
        name = _column_name(header, taken)
        taken.add(name)
        names.append(name)
    rows = []
    for line in table[2:]:
        cells = _cells(line)
        cells = (cells + [""] * len(names))[: len(names)]
        rows.append(cells)
    frame = pd.DataFrame(rows, columns=names)
    for column in FAIRNESS_COLUMNS:
        if column not in frame:
            frame[column] = ""
    ordered = FAIRNESS_COLUMNS + [c for c in names if c not in FAIRNESS_COLUMNS]
    return frame[ordered]


def fairness_table(readme: str | Path | None = None) -> pd.DataFrame:
    """The fairness table of runtime/bench/README.md (or `readme`); empty frame if absent."""
    path = Path(readme) if readme is not None else default_readme()
    if not path.is_file():
        return pd.DataFrame(columns=FAIRNESS_COLUMNS)
    return parse_fairness_table(path.read_text(encoding="utf-8"))


_Semantics = tuple[bool, str, str | None, str]


def _semantics_cell(cell: str, path: Path | str, line: int) -> _Semantics:
    """(like for like, the remaining difference, the run time it holds from or None, the
    difference of earlier runs) of one "same semantics" cell."""
    text = cell.strip()
    since = _SINCE.match(text)
    if since:
        if not _STAMP.fullmatch(since.group(1)):
            raise DataError(path, f"'runs from {since.group(1)}' is not a UTC time like 20261126T050000Z",
                            line=line, column="same semantics")
        earlier = _EARLIER.search(text)
        if not earlier or not earlier.group(1).strip():
            raise DataError(path, "'runs from' without an 'earlier runs: no: <difference>' note",
                            line=line, column="same semantics")
        return True, "", since.group(1), earlier.group(1).strip()
    if _YES.match(text):
        return True, "", None, ""
    if _NO.match(text):
        note = text.split(":", 1)[1].strip()
        if note:
            return False, note, None, ""
        raise DataError(path, "'no:' names no difference", line=line, column="same semantics")
    shown = text if len(text) <= 40 else text[:37] + "..."
    raise DataError(path, f"{shown!r} must start with 'yes' or 'no:'", line=line, column="same semantics")


@lru_cache(maxsize=8)
def _semantics(path: str, mtime_ns: int) -> dict[str, _Semantics]:
    """Benchmark -> (like for like, note) of the README at `path` (cached per modification)."""
    del mtime_ns  # Part of the cache key only.
    text = Path(path).read_text(encoding="utf-8")
    start, table = _table_lines(text)
    if not table:
        raise DataError(path, f"no table under '{HEADING}'")
    headers = _cells(table[0])
    taken: set[str] = set()
    names = []
    for header in headers:
        names.append(_column_name(header, taken))
        taken.add(names[-1])
    if "same_semantics" not in names:
        raise DataError(path, "the fairness table has no 'same semantics' column", line=start)
    index_benchmark, index_semantics = names.index("benchmark"), names.index("same_semantics")
    result: dict[str, _Semantics] = {}
    for offset, line in enumerate(table[2:]):
        cells = _cells(line) + [""] * len(names)
        result[cells[index_benchmark]] = _semantics_cell(cells[index_semantics], path, start + 2 + offset)
    return result


def _lookup(benchmark: str, readme: str | Path | None) -> _Semantics | None:
    path = Path(readme) if readme is not None else default_readme()
    try:
        mtime_ns = path.stat().st_mtime_ns
    except OSError as err:
        raise DataError(path, f"cannot read the fairness table: {err.strerror or err}") from None
    return _semantics(str(path), mtime_ns).get(benchmark)


def like_for_like(benchmark: str, readme: str | Path | None = None) -> bool:
    """True when the fairness table says the two sides of `benchmark` have the same semantics
    (its "same semantics" cell starts with `yes`); False for `no:` and for a benchmark the
    table does not list. Raises `DataError` (file, line) for a malformed cell."""
    found = _lookup(benchmark, readme)
    return found is not None and found[0]


def semantics_note(benchmark: str, readme: str | Path | None = None) -> str:
    """The difference that remains (the cell's text after `no:`); "" when the semantics are
    the same; "not in the fairness table" for a benchmark the table does not list."""
    found = _lookup(benchmark, readme)
    return "not in the fairness table" if found is None else found[1]


def earlier_semantics(benchmark: str, run_id: str, readme: str | Path | None = None) -> str | None:
    """The difference that a run recorded before `benchmark` became like for like still
    measured (the cell's `earlier runs: no:` note), when `run_id` starts with a UTC time
    earlier than the cell's `runs from` time or with no time at all; None when the table's
    current answer applies to the run."""
    found = _lookup(benchmark, readme)
    if found is None or found[2] is None:
        return None
    stamp = _STAMP.match(run_id)
    if stamp and stamp.group(0) >= found[2]:
        return None
    return found[3]
