"""fairness_table: the markdown table under `## Fairness table` as a DataFrame; like_for_like
and semantics_note: its "same semantics" column."""

from __future__ import annotations

import pytest

from analysis import FAIRNESS_COLUMNS, DataError, fairness_table, parse_fairness_table
from analysis.fairness import earlier_semantics, like_for_like, semantics_note
from analysis.schema import ECHO_ORDER, MICRO_ORDER

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
    assert list(table.columns)[: len(FAIRNESS_COLUMNS)] == FAIRNESS_COLUMNS
    assert table["benchmark"].str.len().gt(0).all()


SEMANTICS = """## Fairness table

| benchmark | ampere timed | tokio timed | untimed setup | differences | Same semantics |
|---|---|---|---|---|---|
| mutex | a | b | c | none | yes |
| barrier | a | b | c | d | Yes (a note after yes is allowed) |
| yield_many | a | b | c | d | no: Tokio defers the task \\| ampere re-queues it |
| spaced | a | b | c | d |   NO :  the gap |
"""


def write(tmp_path, text: str):
    path = tmp_path / "README.md"
    path.write_text(text)
    return path


def test_same_semantics_column_is_parsed(tmp_path):
    table = fairness_table(write(tmp_path, SEMANTICS))
    assert list(table.columns) == FAIRNESS_COLUMNS
    assert table["same_semantics"].tolist()[:2] == ["yes", "Yes (a note after yes is allowed)"]


def test_like_for_like_and_the_note(tmp_path):
    path = write(tmp_path, SEMANTICS)
    assert like_for_like("mutex", path) is True
    assert like_for_like("barrier", path) is True
    assert like_for_like("yield_many", path) is False
    assert semantics_note("yield_many", path) == "Tokio defers the task | ampere re-queues it"
    assert like_for_like("spaced", path) is False and semantics_note("spaced", path) == "the gap"
    assert semantics_note("mutex", path) == ""
    # Nothing vouches for a benchmark the table does not list.
    assert like_for_like("net_echo", path) is False
    assert semantics_note("net_echo", path) == "not in the fairness table"


def test_a_changed_readme_is_read_again(tmp_path):
    path = write(tmp_path, SEMANTICS)
    assert like_for_like("mutex", path) is True
    text = SEMANTICS.replace("| none | yes |", "| none | no: now it differs |")
    path.write_text(text)
    import os
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert like_for_like("mutex", path) is False


@pytest.mark.parametrize("cell, problem", [
    ("maybe", "'maybe' must start with 'yes' or 'no:'"),
    ("", "'' must start with 'yes' or 'no:'"),
    ("no:", "'no:' names no difference"),
    ("nope: x", "'nope: x' must start with 'yes' or 'no:'"),
    ("yes (runs from 2026-11-26 on): x; earlier runs: no: y",
     "'runs from 2026-11-26' is not a UTC time like 20261126T050000Z"),
    ("yes (runs from 20261126T050000Z on): x", "'runs from' without an 'earlier runs: no: <difference>' note"),
    ("yes (runs from 20261126T050000Z on): x; earlier runs: no:", "'runs from' without an 'earlier runs: no: <difference>' note"),
])
def test_a_malformed_cell_names_file_and_line(tmp_path, cell, problem):
    path = write(tmp_path, SEMANTICS.replace("| none | yes |", f"| none | {cell} |"))
    with pytest.raises(DataError) as raised:
        like_for_like("barrier", path)
    # The mutex row is line 5 of the file.
    assert str(raised.value) == f"{path}:5: same semantics: {problem}"


def test_a_row_that_became_like_for_like_keeps_earlier_runs_out(tmp_path):
    cell = "yes (runs from 20261126T050000Z on): owned on both sides; earlier runs: no: caller-owned here"
    path = write(tmp_path, SEMANTICS.replace("| none | yes |", f"| none | {cell} |"))
    assert like_for_like("mutex", path) is True and semantics_note("mutex", path) == ""
    assert earlier_semantics("mutex", "20261126T045959Z-vm", path) == "caller-owned here"
    assert earlier_semantics("mutex", "20261126T050000Z-vm", path) is None
    assert earlier_semantics("mutex", "20261127T000000Z-lab1", path) is None
    # A run id without a start time: nothing says it was recorded after the change.
    assert earlier_semantics("mutex", "handmade", path) == "caller-owned here"
    # Rows without a `runs from` time, `no:` rows and unlisted benchmarks: the current answer.
    for name in ("barrier", "yield_many", "net_echo"):
        assert earlier_semantics(name, "20200101T000000Z-vm", path) is None


def test_a_table_without_the_column_or_a_missing_file_is_an_error(tmp_path):
    path = write(tmp_path, README)
    with pytest.raises(DataError, match=r"README.md:13: the fairness table has no 'same semantics' column"):
        like_for_like("mutex", path)
    with pytest.raises(DataError, match="cannot read the fairness table"):
        like_for_like("mutex", tmp_path / "missing.md")


def test_every_benchmark_has_a_row_with_a_valid_semantics_cell():
    table = fairness_table()
    listed = set(table["benchmark"])
    for name in (*MICRO_ORDER, *ECHO_ORDER):
        assert name in listed, f"{name} has no row in the fairness table"
        like_for_like(name)  # Raises on a malformed cell.
    assert like_for_like("floor_cas_store") and like_for_like("watch_rc") and like_for_like("broadcast_rc")
    assert not like_for_like("yield_many") and semantics_note("yield_many").startswith("Tokio's `yield_now`")


def test_the_headline_rows_are_marked_honestly():
    """Issue 25 item 4: what the headline leaves out, and the owned oneshot it counts instead."""
    assert like_for_like("oneshot_owned")
    assert not like_for_like("oneshot") and "caller-owned" in semantics_note("oneshot")
    table = fairness_table().set_index("benchmark")
    # Built on the owned oneshot on both sides (one allocation per channel): like for like,
    # from the runs made after the change; earlier runs measured the caller-owned oneshot.
    for name in ("ping_pong", "chained_spawn", *ECHO_ORDER):
        assert like_for_like(name), name
        assert "owned oneshot on both sides" in table.loc[name, "same_semantics"], name
        assert "caller-owned" in earlier_semantics(name, "20261126T023315Z-vm"), name
        assert earlier_semantics(name, "20261201T000000Z-vm") is None, name
    for name in ("ping_pong", "chained_spawn", "echo_f64"):
        assert "OwnedOneshot(" in table.loc[name, "ampere_timed"] + table.loc[name, "untimed_setup"], name
    assert not like_for_like("channel_mpmc") and "async-channel" in semantics_note("channel_mpmc")
    for name in ("watch", "broadcast"):
        assert not like_for_like(name) and semantics_note(name).startswith("plain data"), name
    assert not like_for_like("yield_many")
