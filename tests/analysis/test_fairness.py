"""fairness_table: the markdown table under `## Fairness table` as a DataFrame."""

from __future__ import annotations

from analysis import FAIRNESS_COLUMNS, fairness_table, parse_fairness_table

README = """# Benchmarks

## Program interface

| flag | meaning |
|---|---|
| --suite | which suite |

## Fairness table

Some words first.

| Benchmark | ampere: timed | Tokio: timed | Untimed setup | Differences | Notes |
|---|---|---|---|:--:|---|
| mutex | `try_lock` + unlock | `try_lock()`, drop guard | mutex created | none | a \\| b |
| echo_f64 | batch of n | batch of n | runtime |

More words.

## Next section

| x | y |
|---|---|
| 1 | 2 |
"""


def test_parses_the_table_under_the_heading(tmp_path):
    path = tmp_path / "README.md"
    path.write_text(README)
    table = fairness_table(path)
    assert list(table.columns) == [*FAIRNESS_COLUMNS, "notes"]
    assert table["benchmark"].tolist() == ["mutex", "echo_f64"]
    assert table.loc[0, "ampere_timed"] == "`try_lock` + unlock"
    assert table.loc[0, "tokio_timed"] == "`try_lock()`, drop guard"
    assert table.loc[0, "untimed_setup"] == "mutex created"
    assert table.loc[0, "notes"] == "a | b"
    assert table.loc[1, "differences"] == "" and table.loc[1, "notes"] == ""  # short rows are padded


def test_missing_section_or_table_gives_empty_frame(tmp_path):
    for text in ("# Title\n\n## Other\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
                 "## Fairness table\n\n(Filled in per benchmark as the suites land.)\n\n## Next\n"):
        table = parse_fairness_table(text)
        assert table.empty and list(table.columns) == FAIRNESS_COLUMNS
    assert list(fairness_table(tmp_path / "missing.md").columns) == FAIRNESS_COLUMNS


def test_project_readme_parses():
    table = fairness_table()
    assert list(table.columns)[:5] == FAIRNESS_COLUMNS
    if not table.empty:  # the section is being written by another engineer
        assert table["benchmark"].str.len().gt(0).all()
