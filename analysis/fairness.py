"""The fairness table of runtime/bench/README.md as a DataFrame.

The README documents, per benchmark, what is timed on each side. This module finds the
section headed exactly `## Fairness table`, takes the first markdown table in it (before the
next `## ` heading) and maps its header cells to the expected columns by keyword:
benchmark, ampere_timed ("ampere"), tokio_timed ("tokio"), untimed_setup ("untimed",
"setup", "outside") and differences ("difference"). Other columns are kept under a
snake_case version of their header. Without the section or a table in it the result is an
empty frame with the expected columns.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

FAIRNESS_COLUMNS = ["benchmark", "ampere_timed", "tokio_timed", "untimed_setup", "differences"]
HEADING = "## Fairness table"
_KEYWORDS = (("difference", "differences"), ("untimed", "untimed_setup"), ("setup", "untimed_setup"),
             ("outside", "untimed_setup"), ("ampere", "ampere_timed"), ("tokio", "tokio_timed"),
             ("benchmark", "benchmark"))


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


def _section(text: str) -> list[str]:
    lines = text.splitlines()
    for start, line in enumerate(lines):
        if line.strip() == HEADING:
            end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
            return lines[start + 1: end]
    return []


def parse_fairness_table(text: str) -> pd.DataFrame:
    """Parse markdown text (the README's content); see the module doc for the rules."""
    section = _section(text)
    table: list[str] = []
    for line in section:
        if line.strip().startswith("|"):
            table.append(line)
        elif table:
            break
    is_rule = lambda cells: all(re.fullmatch(r":?-+:?", c) for c in cells if c)  # noqa: E731
    if len(table) < 2 or not is_rule(_cells(table[1])):
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
