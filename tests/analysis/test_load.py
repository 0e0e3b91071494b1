"""Loading and strict validation: every error path gives one line and exit code 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis import load_run, machine_table, read_bench_csv, run_history
from analysis.errors import AnalysisError, DataError
from analysis.schema import CSV_COLUMNS
from analysis_fakes import meta_for, rows_for, run_cli_subprocess, write_run

HEADER = ",".join(CSV_COLUMNS)
GOOD = ["ampere,0,micro,1,mutex,,0,1000,12000,0,0", "ampere,0,micro,1,mutex,,1,1000,12100,0,0"]


def write_text(tmp_path: Path, text: str, name: str = "ampere.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_valid_csv_types_and_ns_per_op(tmp_path):
    frame = read_bench_csv(write_text(tmp_path, "\n".join([HEADER, *GOOD]) + "\n"), "ampere")
    assert list(frame.columns) == [*CSV_COLUMNS, "ns_per_op"]
    assert frame["elapsed_ns"].dtype == "int64" and frame["ns_per_op"].tolist() == [12.0, 12.1]
    assert frame["param"].tolist() == ["", ""]


@pytest.mark.parametrize("lines, message", [
    ([HEADER.replace(",tier", ""), *GOOD], "ampere.csv:1: tier: missing column"),
    ([HEADER + ",extra", *GOOD], "ampere.csv:1: extra: unexpected column"),
    ([HEADER.replace("runtime,invocation", "invocation,runtime"), *GOOD],
     "ampere.csv:1: invocation: column out of order (expected runtime at position 1)"),
    ([HEADER, GOOD[0], "ampere,0,micro,1,mutex,,1,1000,fast,0,0"], "ampere.csv:3: elapsed_ns: not an integer: 'fast'"),
    ([HEADER, GOOD[0], "ampere,0,micro,1,mutex,,1,1000,1.5,0,0"], "ampere.csv:3: elapsed_ns: not an integer: '1.5'"),
    ([HEADER, "ampere,0,micro,1,mutex,,0,0,12000,0,0"], "ampere.csv:2: ops: 0 is out of range (must be >= 1)"),
    ([HEADER, "ampere,0,micro,1,mutex,,0,10,0,0,0"], "ampere.csv:2: elapsed_ns: 0 is out of range (must be >= 1)"),
    ([HEADER, "ampere,0,micro,1,mutex,,0,10,5,-1,0"], "ampere.csv:2: alloc_bytes: -1 is out of range (must be >= 0)"),
    ([HEADER, "ampere,-1,micro,1,mutex,,0,10,5,0,0"], "ampere.csv:2: invocation: -1 is out of range (must be >= 0)"),
    ([HEADER, "tokio,0,micro,1,mutex,,0,10,5,0,0"], "ampere.csv:2: runtime: 'tokio' does not match the file's runtime 'ampere'"),
    ([HEADER, "ampere,0,macro,1,mutex,,0,10,5,0,0"], "ampere.csv:2: suite: 'macro' is not a suite (micro, echo)"),
    ([HEADER, "ampere,0,micro,5,mutex,,0,10,5,0,0"], "ampere.csv:2: tier: tier 5 out of range for suite micro (0-4)"),
    ([HEADER, "ampere,0,echo,1,echo_f64,n=1,0,1,5,0,0"], "ampere.csv:2: tier: tier 1 out of range for suite echo (0-0)"),
    ([HEADER, "ampere,0,micro,1,mutex,k=3,0,10,5,0,0"], "ampere.csv:2: param: invalid param 'k=3'"),
    ([HEADER, "ampere,0,micro,1,Mutex!,,0,10,5,0,0"], "ampere.csv:2: benchmark: invalid benchmark name 'Mutex!'"),
    ([HEADER, GOOD[0], GOOD[1], GOOD[0]], "ampere.csv:4: iteration: duplicate row (same runtime, invocation, benchmark, param, iteration as line 2)"),
    ([HEADER, GOOD[0], "ampere,0,micro,1,mutex,,1,1000,12000,0"], "ampere.csv:3: alloc_count: expected 11 fields, got 10"),
    ([HEADER, GOOD[0], "ampere,0,micro,1,mutex,,1,1000,12000,0,0,7"], "ampere.csv:3: (extra): expected 11 fields, got 12"),
    ([HEADER, GOOD[0], "", GOOD[1]], "ampere.csv:3: runtime: empty line"),
    ([HEADER, GOOD[0], "ampere,0,micro,2,mutex,,1,1000,12000,0,0"], "ampere.csv:3: tier: benchmark 'mutex' is suite micro tier 2 here but suite micro tier 1 on line 2"),
])
def test_csv_errors_name_file_line_column(tmp_path, lines, message):
    path = write_text(tmp_path, "\n".join(lines) + "\n")
    with pytest.raises(DataError) as info:
        read_bench_csv(path, "ampere")
    assert str(info.value).startswith(f"{tmp_path}/{message}")
    assert "\n" not in str(info.value)


def test_truncated_last_line(tmp_path):
    path = write_text(tmp_path, "\n".join([HEADER, GOOD[0], "ampere,0,micro,1,mutex,,1,10"]))
    with pytest.raises(DataError, match=r"ampere.csv:3: ops: truncated last line \(no trailing newline; 8 of 11 fields\)"):
        read_bench_csv(path, "ampere")
    complete_fields = write_text(tmp_path, "\n".join([HEADER, *GOOD]), "b.csv")
    with pytest.raises(DataError, match=r"b.csv:3: alloc_count: truncated last line"):
        read_bench_csv(complete_fields, "ampere")


def test_empty_file_and_bad_utf8(tmp_path):
    with pytest.raises(DataError, match="ampere.csv:1: header: empty file"):
        read_bench_csv(write_text(tmp_path, ""), "ampere")
    bad = tmp_path / "x.csv"
    bad.write_bytes(HEADER.encode() + b"\n\xff\n")
    with pytest.raises(DataError, match="x.csv:2: not valid UTF-8"):
        read_bench_csv(bad)


def test_load_run_and_metadata(data_dir):
    run = load_run("latest", data_dir)
    assert run.runtimes == ("ampere", "tokio") and run.run_id == "20261122T101500Z-lab1"
    assert set(run.data["runtime"]) == {"ampere", "tokio"}
    assert run.meta["tokio"]["tokio_version"] == "1.48.0"
    table = machine_table(run)
    assert table.loc["machine.cpu_model", "same"] and not table.loc["compiler", "same"]
    assert list(table.columns) == ["ampere", "tokio", "same"]
    same = load_run(str(run.path), data_dir="/nonexistent")
    assert same.run_id == run.run_id
    by_id = load_run("20261122T101500Z-lab1", data_dir)
    assert len(by_id.data) == len(run.data)


def test_latest_skips_incomplete_and_failed_with_warning(tmp_path, capsys):
    data = tmp_path / "data"
    write_run(data, "20261122T100000Z-lab1")
    write_run(data, "20261122T110000Z-lab1", complete=False)
    failed = write_run(data, "20261122T120000Z-lab1", complete=False)
    (failed / "failed.json").write_text(json.dumps({"step": "invocation", "reason": "watchdog: no exit"}))
    run = load_run("latest", data)
    assert run.run_id == "20261122T100000Z-lab1"
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2
    assert "20261122T120000Z-lab1: failed (invocation: watchdog: no exit); skipped" in err[0]
    assert "20261122T110000Z-lab1: incomplete (no run.json" in err[1]
    history = run_history(data)
    assert history["status"].tolist() == ["complete", "incomplete", "failed"]
    assert history["reason"].iloc[2] == "invocation: watchdog: no exit"


@pytest.mark.parametrize("content, message", [
    ("{not json", "run.json: invalid JSON: Expecting property name enclosed in double quotes (line 1 column 2)"),
    ("[1, 2]", "run.json: expected a JSON object, got list"),
    (json.dumps({"status": "complete", "profile": "full"}), 'run.json: missing key "suites"'),
    (json.dumps({"status": "failed", "suites": [], "profile": "full"}), 'run.json: status must be "complete", got "failed"'),
    (json.dumps({"status": "complete", "suites": "micro", "profile": "full"}), 'run.json: key "suites" must be a list, got str'),
    (json.dumps({"status": "complete", "suites": ["nano"], "profile": "full"}), 'run.json: unknown suite "nano"'),
])
def test_bad_run_json(tmp_path, content, message):
    folder = write_run(tmp_path / "data", complete=False)
    (folder / "run.json").write_text(content)
    with pytest.raises(DataError) as info:
        load_run(str(folder))
    assert str(info.value) == f"{folder}/{message}" or str(info.value).startswith(f"{folder}/{message}")


def test_bad_meta_json(tmp_path):
    folder = write_run(tmp_path / "data", meta={"tokio": {**meta_for("tokio"), "runtime": "ampere"}})
    with pytest.raises(DataError, match=r'tokio.meta.json: "runtime" must be "tokio", got "ampere"'):
        load_run(str(folder))
    (folder / "tokio.meta.json").write_text("{")
    with pytest.raises(DataError, match=r"tokio.meta.json: invalid JSON"):
        load_run(str(folder))


def test_resolution_errors(tmp_path):
    data = tmp_path / "data"
    with pytest.raises(AnalysisError, match="no complete run"):
        load_run("latest", data)
    with pytest.raises(AnalysisError, match=r"unknown run id 'nope' \(no folder .*runs/nope\)"):
        load_run("nope", data)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DataError, match=r"empty: not a run folder"):
        load_run(str(empty))
    incomplete = write_run(data, complete=False)
    with pytest.raises(DataError, match=r"incomplete \(no run.json.*only complete runs can be analysed"):
        load_run(str(incomplete))
    with pytest.raises(DataError, match="no such run folder"):
        load_run(str(tmp_path / "missing" / "x"))


def test_cross_file_tier_clash(tmp_path):
    rows = {"ampere": rows_for("ampere", "micro", 1, "mutex", "", 10, [[100] * 3]),
            "tokio": rows_for("tokio", "micro", 2, "mutex", "", 10, [[100] * 3])}
    folder = write_run(tmp_path / "data", rows=rows)
    with pytest.raises(DataError, match="benchmark 'mutex' differs between runtimes"):
        load_run(str(folder))


def test_data_dir_from_environment(tmp_path, monkeypatch):
    write_run(tmp_path / "elsewhere")
    monkeypatch.setenv("AMPERE_DATA_DIR", str(tmp_path / "elsewhere"))
    assert load_run().run_id == "20261122T101500Z-lab1"


# -- through the CLI in a fresh interpreter: one line, exit code 2, no traceback ---------------

def _bad_csv_run(tmp_path: Path, mutate) -> Path:
    data = tmp_path / "data"
    folder = write_run(data)
    path = folder / "ampere.csv"
    path.write_text(mutate(path.read_text()))
    return data


CLI_CASES = {
    "missing column": (lambda t: _bad_csv_run(t, lambda s: s.replace("runtime,invocation,suite,tier,", "runtime,invocation,suite,", 1)),
                       ["compare"], "ampere.csv:1: tier: missing column"),
    "non-numeric": (lambda t: _bad_csv_run(t, lambda s: s.replace(",1000000,", ",lots,", 1)),
                    ["compare"], "ampere.csv:2: ops: not an integer: 'lots'"),
    "truncated": (lambda t: _bad_csv_run(t, lambda s: s[: s.rstrip("\n").rfind(",") - 2]),
                  ["compare"], "truncated last line"),
    "not a run folder": (lambda t: (t / "plain").mkdir() or t / "data", ["compare", "{tmp}/plain"], "plain: not a run folder"),
    "bad run.json": (lambda t: (write_run(t / "data") / "run.json").write_text("{oops") and t / "data",
                     ["compare"], "run.json: invalid JSON"),
    "unknown run id": (lambda t: write_run(t / "data") and t / "data", ["compare", "20990101T000000Z-x"],
                       "unknown run id '20990101T000000Z-x'"),
}


@pytest.mark.parametrize("case", list(CLI_CASES))
def test_cli_error_is_one_line_exit_2(tmp_path, case):
    setup, args, expected = CLI_CASES[case]
    data = setup(tmp_path)
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    done = run_cli_subprocess(*args, "--data-dir", str(data))
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_machine_table_without_meta(tmp_path):
    folder = write_run(tmp_path / "data")
    (folder / "tokio.meta.json").unlink()
    run = load_run(str(folder))
    table = machine_table(run)
    assert table["tokio"].isna().all() and not table.loc["machine.cpu_model", "same"]
    assert run.constants == {"num_workers": 4, "iterations": 10}
