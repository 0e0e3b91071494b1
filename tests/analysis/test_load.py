"""Loading and strict validation (schema 1 and 2): every error path gives one line naming file,
line, column and the true cause; CRLF, BOM, quoting and column order do not change what loads."""

from __future__ import annotations

import csv
import io
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from analysis import load_run, machine_table, read_bench_csv, run_history
from analysis.errors import AnalysisError, DataError
from analysis.schema import BENCH_KEY, CSV_COLUMNS, CSV_COLUMNS_V1, ROW_KEY
from analysis_fakes import REPO, meta_for, rows_for, run_cli_subprocess, run_json, write_csv, write_run

HEADER = ",".join(CSV_COLUMNS)
HEADER_V1 = ",".join(CSV_COLUMNS_V1)
GOOD = ["ampere,0,micro,1,mutex,,0,1000,12000,11000,0,0,0", "ampere,0,micro,1,mutex,,1,1000,12100,12000,0,0,0"]
GOOD_V1 = ["ampere,0,micro,1,mutex,,0,1000,12000,0,0", "ampere,0,micro,1,mutex,,1,1000,12100,0,0"]
REFERENCE_RUN = REPO / "data" / "runs" / "20261122T034801Z-vm"


def write_text(tmp_path: Path, text: str, name: str = "ampere.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_schema2_types_and_ns_per_op(tmp_path):
    frame = read_bench_csv(write_text(tmp_path, "\n".join([HEADER, *GOOD]) + "\n"), "ampere")
    assert list(frame.columns) == [*CSV_COLUMNS, "ns_per_op"]
    assert frame["elapsed_ns"].dtype == "int64" and frame["ns_per_op"].tolist() == [12.0, 12.1]
    assert frame["cpu_ns"].dtype == "float64" and frame["cpu_ns"].tolist() == [11000.0, 12000.0]
    assert str(frame["workers"].dtype) == "Int64" and frame["workers"].tolist() == [0, 0]
    assert frame["param"].tolist() == ["", ""] and frame.attrs["schema_version"] == 2


def test_schema1_loads_with_cpu_and_workers_not_recorded(tmp_path):
    frame = read_bench_csv(write_text(tmp_path, "\n".join([HEADER_V1, *GOOD_V1]) + "\n"), "ampere")
    assert list(frame.columns) == [*CSV_COLUMNS, "ns_per_op"]
    assert frame["cpu_ns"].dtype == "float64" and frame["cpu_ns"].isna().all()
    assert str(frame["workers"].dtype) == "Int64" and frame["workers"].isna().all()
    assert frame.attrs["schema_version"] == 1 and frame["elapsed_ns"].tolist() == [12000, 12100]


def test_empty_body_has_the_contract_columns(tmp_path):
    frame = read_bench_csv(write_text(tmp_path, HEADER + "\n"), "ampere")
    assert frame.empty and list(frame.columns) == [*CSV_COLUMNS, "ns_per_op"]
    assert str(frame["workers"].dtype) == "Int64" and frame["cpu_ns"].dtype == "float64"


def test_committed_schema1_reference_run_loads():
    run = load_run(str(REFERENCE_RUN))
    assert run.schema_version == 1 and run.runtimes == ("ampere", "tokio")
    assert run.data["cpu_ns"].isna().all() and run.data["workers"].isna().all()
    assert len(run.data) == 2 * 51810
    assert run.variants == {"ampere": {"runtime": "ampere", "settings": {}}, "tokio": {"runtime": "tokio", "settings": {}}}
    # schema 1: workers is <NA>; grouping by the benchmark key must keep those rows
    groups = run.data.groupby(list(BENCH_KEY), dropna=False).ngroups
    assert groups == run.data.groupby(["suite", "tier", "benchmark", "param"]).ngroups > 50


def test_variant_runtimes_net_suite_and_conns_param(tmp_path):
    lines = [HEADER,
             "ampere.nospin,0,micro,3,mutex_contended,,0,10000,5000000,9000000,2,0,0",
             "ampere.nospin,0,micro,3,mutex_contended,,0,10000,5000000,9000000,4,0,0",
             "ampere.nospin,0,net,0,tcp_echo_conns,conns=16,0,16000,8000000,4000000,4,10,1",
             "ampere.nospin,0,echo,0,echo_f64,n=10,0,10,80000,70000,1,0,0"]
    frame = read_bench_csv(write_text(tmp_path, "\n".join(lines) + "\n", "ampere.nospin.csv"), "ampere.nospin")
    assert frame["workers"].tolist() == [2, 4, 4, 1] and set(frame["suite"]) == {"micro", "net", "echo"}


E = "ampere,0,micro,1,mutex,,{i},1000,12000,11000,{w},0,0"


@pytest.mark.parametrize("lines, message", [
    # header
    ([HEADER.replace(",tier", ""), *GOOD], "ampere.csv:1: tier: missing column (schema 1 has"),
    ([HEADER.replace(",workers", ""), *GOOD], "ampere.csv:1: workers: missing column (schema 2 has both cpu_ns and workers, this header only cpu_ns)"),
    ([HEADER + ",extra", *GOOD], "ampere.csv:1: extra: unexpected column; known columns: runtime,"),
    ([HEADER.replace(",tier", ", tier"), *GOOD], "ampere.csv:1: ' tier': unexpected column (whitespace around the name)"),
    ([HEADER + ",tier", *GOOD], "ampere.csv:1: tier: duplicate column"),
    # syntax of a line
    ([HEADER, GOOD[0], "ampere,0,micro,1,mutex,,1,1000,fast,1,0,0,0"], "ampere.csv:3: elapsed_ns: not an integer: 'fast'"),
    ([HEADER, GOOD[0], "ampere,0,micro,1,mutex,,1,1000,1.5,1,0,0,0"], "ampere.csv:3: elapsed_ns: not an integer: '1.5'"),
    ([HEADER, "ampere,0,micro,1,mutex,,0,1000,1234567890123456789,1,0,0,0"], "ampere.csv:2: elapsed_ns: integer out of range: 1234567890123456789"),
    ([HEADER, "ampere,0,micro,1,mutex,k=3,0,10,5,5,0,0,0"], "ampere.csv:2: param: invalid param 'k=3'"),
    ([HEADER, "ampere,0,micro,1,Mutex!,,0,10,5,5,0,0,0"], "ampere.csv:2: benchmark: invalid benchmark name 'Mutex!'"),
    ([HEADER, "Ampere.x,0,micro,1,mutex,,0,10,5,5,0,0,0"], "ampere.csv:2: runtime: invalid runtime name 'Ampere.x'"),
    ([HEADER, GOOD[0], "ampere,0,micro,1,mutex,,1,1000,12000,0,0,0"], "ampere.csv:3: alloc_count: expected 13 fields, got 12"),
    ([HEADER, GOOD[0], GOOD[1] + ",7"], "ampere.csv:3: (extra): expected 13 fields, got 14"),
    ([HEADER, GOOD[0], "", GOOD[1]], "ampere.csv:3: runtime: empty line"),
    ([HEADER, GOOD[0], "ampere,0,micro,1,mutex,,1,1000,12000,11000\r,0,0,0"], "ampere.csv:3: cpu_ns: carriage return inside a line"),
    ([HEADER, 'ampere,0,micro,1,"mutex,,1,1000,12000,11000,0,0,0'], "ampere.csv:2: benchmark: malformed quoting"),
    # values
    ([HEADER, "ampere,0,micro,1,mutex,,0,0,12000,1,0,0,0"], "ampere.csv:2: ops: 0 is out of range (must be >= 1)"),
    ([HEADER, "ampere,0,micro,1,mutex,,0,10,0,1,0,0,0"], "ampere.csv:2: elapsed_ns: 0 is out of range (must be >= 1)"),
    ([HEADER, "ampere,0,micro,1,mutex,,0,10,5,-1,0,0,0"], "ampere.csv:2: cpu_ns: -1 is out of range (must be >= 0)"),
    ([HEADER, "ampere,0,micro,1,mutex,,0,10,5,5,0,-1,0"], "ampere.csv:2: alloc_bytes: -1 is out of range (must be >= 0)"),
    ([HEADER, "ampere,-1,micro,1,mutex,,0,10,5,5,0,0,0"], "ampere.csv:2: invocation: -1 is out of range (must be >= 0)"),
    ([HEADER, "tokio,0,micro,1,mutex,,0,10,5,5,0,0,0"], "ampere.csv:2: runtime: 'tokio' does not match the file's runtime 'ampere'"),
    ([HEADER, "ampere,0,macro,1,mutex,,0,10,5,5,0,0,0"], "ampere.csv:2: suite: 'macro' is not a suite (micro, echo, net, io, http)"),
    ([HEADER, "ampere,0,micro,5,mutex,,0,10,5,5,0,0,0"], "ampere.csv:2: tier: tier 5 out of range for suite micro (0-4)"),
    ([HEADER, "ampere,0,echo,1,echo_f64,n=1,0,1,5,5,1,0,0"], "ampere.csv:2: tier: tier 1 out of range for suite echo (0-0)"),
    ([HEADER, "ampere,0,net,2,tcp_connect,,0,1,5,5,4,0,0"], "ampere.csv:2: tier: tier 2 out of range for suite net (0-0)"),
    ([HEADER, E.format(i=0, w=4)], "ampere.csv:2: workers: 4 on a tier 1 row (Tiers 0-2 run without a runtime: must be 0)"),
    ([HEADER, "ampere,0,micro,3,mutex_contended,,0,10,5,5,0,0,0"], "ampere.csv:2: workers: 0 on a micro tier 3 row (a runtime needs >= 1 worker)"),
    ([HEADER, "ampere,0,echo,0,echo_f64,n=1,0,1,5,5,4,0,0"], "ampere.csv:2: workers: 4 on an echo row (the echo runtime has 1 worker)"),
    # the file as a whole
    ([HEADER, GOOD[0], GOOD[1], GOOD[0]], "ampere.csv:4: iteration: duplicate row (same runtime, invocation, benchmark, param, workers, iteration as line 2)"),
    ([HEADER, GOOD[0], "ampere,0,micro,2,mutex,,1,1000,12000,1,0,0,0"], "ampere.csv:3: tier: benchmark 'mutex' is suite micro tier 2 here but suite micro tier 1 on line 2"),
])
def test_csv_errors_name_file_line_column(tmp_path, lines, message):
    path = write_text(tmp_path, "\n".join(lines) + "\n")
    with pytest.raises(DataError) as info:
        read_bench_csv(path, "ampere")
    assert str(info.value).startswith(f"{tmp_path}/{message}"), str(info.value)
    assert "\n" not in str(info.value)


def test_same_key_at_another_worker_count_is_no_duplicate(tmp_path):
    lines = [HEADER, "ampere,0,micro,3,mutex_contended,,0,10,5,5,1,0,0", "ampere,0,micro,3,mutex_contended,,0,10,5,5,2,0,0"]
    assert len(read_bench_csv(write_text(tmp_path, "\n".join(lines) + "\n"), "ampere")) == 2
    assert "workers" in ROW_KEY


def test_first_problem_in_file_order(tmp_path):
    """A bad value on an earlier line is reported before a malformed later line, and vice versa."""
    value_first = [HEADER, "ampere,0,micro,1,mutex,,0,0,12000,1,0,0,0", "ampere,0,micro,1,mutex,,1,1000,fast,1,0,0,0"]
    with pytest.raises(DataError, match=r"ampere.csv:2: ops: 0 is out of range"):
        read_bench_csv(write_text(tmp_path, "\n".join(value_first) + "\n"), "ampere")
    syntax_first = [HEADER, "ampere,0,micro,1,mutex,,1,1000,fast,1,0,0,0", "ampere,0,micro,1,mutex,,0,0,12000,1,0,0,0"]
    with pytest.raises(DataError, match=r"ampere.csv:2: elapsed_ns: not an integer: 'fast'"):
        read_bench_csv(write_text(tmp_path, "\n".join(syntax_first) + "\n"), "ampere")


def test_truncated_last_line(tmp_path):
    path = write_text(tmp_path, "\n".join([HEADER, GOOD[0], "ampere,0,micro,1,mutex,,1,10"]))
    with pytest.raises(DataError, match=r"ampere.csv:3: ops: truncated last line \(no line end; 8 of 13 fields\)"):
        read_bench_csv(path, "ampere")
    complete_fields = write_text(tmp_path, "\n".join([HEADER, *GOOD]), "b.csv")
    with pytest.raises(DataError, match=r"b.csv:3: alloc_count: truncated last line"):
        read_bench_csv(complete_fields, "ampere")
    crlf = write_text(tmp_path, "\r\n".join([HEADER, *GOOD]), "c.csv")
    with pytest.raises(DataError, match=r"c.csv:3: alloc_count: truncated last line"):
        read_bench_csv(crlf, "ampere")


def test_empty_file_and_bad_utf8(tmp_path):
    with pytest.raises(DataError, match="ampere.csv:1: header: empty file"):
        read_bench_csv(write_text(tmp_path, ""), "ampere")
    with pytest.raises(DataError, match="bom.csv:1: header: empty file"):
        read_bench_csv(write_text(tmp_path, "\ufeff", "bom.csv"), "ampere")
    bad = tmp_path / "x.csv"
    bad.write_bytes(HEADER.encode() + b"\n\xff\n")
    with pytest.raises(DataError, match="x.csv:2: not valid UTF-8"):
        read_bench_csv(bad)


# -- CRLF, BOM, quoting and column order (issue 11 item 6) -------------------------------------

def test_crlf_and_bom_load_like_lf(tmp_path):
    """Regression: a CRLF file was rejected as 'alloc_count: missing column', a BOM file as
    'runtime: missing column'; both must load exactly like the LF file."""
    lf = read_bench_csv(write_text(tmp_path, "\n".join([HEADER, *GOOD]) + "\n", "lf.csv"), "ampere")
    for name, text in {"crlf.csv": "\r\n".join([HEADER, *GOOD]) + "\r\n",
                       "bom.csv": "\ufeff" + "\n".join([HEADER, *GOOD]) + "\n",
                       "both.csv": "\ufeff" + "\r\n".join([HEADER, *GOOD]) + "\r\n",
                       "v1crlf.csv": "\r\n".join([HEADER_V1, *GOOD_V1]) + "\r\n"}.items():
        frame = read_bench_csv(write_text(tmp_path, text, name), "ampere")
        if name.startswith("v1"):
            assert frame["cpu_ns"].isna().all() and frame["elapsed_ns"].tolist() == lf["elapsed_ns"].tolist()
        else:
            pd.testing.assert_frame_equal(frame, lf)


def test_python_csv_writer_output_loads(tmp_path):
    rows = rows_for("ampere", "micro", 3, "mutex_contended", "", 10_000, [[5e6, 6e6]], workers=2)
    for quoting in (csv.QUOTE_MINIMAL, csv.QUOTE_ALL, csv.QUOTE_NONNUMERIC):
        buffer = io.StringIO()
        writer = csv.writer(buffer, quoting=quoting)  # RFC 4180: CRLF line ends
        writer.writerow(CSV_COLUMNS)
        writer.writerows(rows)
        frame = read_bench_csv(write_text(tmp_path, buffer.getvalue(), f"q{quoting}.csv"), "ampere")
        assert frame["elapsed_ns"].tolist() == [5_000_000, 6_000_000] and frame["workers"].tolist() == [2, 2]


row_values = hs.tuples(
    hs.sampled_from([("micro", 1, "mutex", "", 0), ("micro", 3, "mutex_contended", "", 2),
                     ("micro", 4, "task_spawn", "", 4), ("echo", 0, "echo_f64", "n=10", 1),
                     ("net", 0, "tcp_pingpong", "size=64", 4)]),
    hs.integers(0, 3), hs.integers(1, 10**9), hs.integers(1, 10**12), hs.integers(0, 10**12),
    hs.integers(0, 10**6), hs.integers(0, 10**4))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(values=hs.lists(row_values, min_size=0, max_size=25), order=hs.permutations(list(CSV_COLUMNS)),
       line_ends=hs.lists(hs.sampled_from(["\n", "\r\n"]), min_size=26, max_size=26),
       bom=hs.booleans(), quote=hs.booleans(), schema1=hs.booleans())
def test_crlf_bom_quoting_and_column_order_do_not_change_what_loads(tmp_path, values, order, line_ends, bom,
                                                                    quote, schema1):
    rows = []
    for i, ((suite, tier, name, param, workers), inv, ops, elapsed, cpu, nbytes, count) in enumerate(values):
        rows.append({"runtime": "ampere.nospin", "invocation": inv, "suite": suite, "tier": tier, "benchmark": name,
                     "param": param, "iteration": i, "ops": ops, "elapsed_ns": elapsed, "cpu_ns": cpu,
                     "workers": workers, "alloc_bytes": nbytes, "alloc_count": count})
    columns = [c for c in CSV_COLUMNS if not (schema1 and c in ("cpu_ns", "workers"))]
    canonical = "\n".join([",".join(columns)] + [",".join(str(r[c]) for c in columns) for r in rows]) + "\n"
    shuffled = [c for c in order if c in columns]
    field = (lambda v: f'"{v}"') if quote else str
    lines = [",".join(field(c) for c in shuffled)] + [",".join(field(r[c]) for c in shuffled) for r in rows]
    text = ("\ufeff" if bom else "") + "".join(line + end for line, end in zip(lines, line_ends))
    expected = read_bench_csv(write_text(tmp_path, canonical, "canonical.csv"), "ampere.nospin")
    got = read_bench_csv(write_text(tmp_path, text, "variant.csv"), "ampere.nospin")
    pd.testing.assert_frame_equal(got, expected)
    assert got.attrs["schema_version"] == (1 if schema1 else 2)


def test_reading_is_fast_enough_for_runs_listing():
    """Not a timing assertion on the code's speed in general: the reference run's CSV must be
    validated by the fast path (one regex + pandas' C reader), which this checks by counting
    calls of the line-by-line parser."""
    import analysis.bench_csv as bench_csv

    calls = []
    original = bench_csv._parse_lines
    bench_csv._parse_lines = lambda *a: calls.append(1) or original(*a)
    try:
        started = time.perf_counter()
        read_bench_csv(REFERENCE_RUN / "tokio.csv", "tokio")
        elapsed = time.perf_counter() - started
    finally:
        bench_csv._parse_lines = original
    assert calls == [], "the reference CSV fell back to the line-by-line parser"
    print(f"reference tokio.csv validated in {elapsed:.3f} s")


# -- runs -------------------------------------------------------------------------------------

def test_load_run_and_metadata(data_dir):
    run = load_run("latest", data_dir)
    assert run.runtimes == ("ampere", "tokio") and run.run_id == "20261122T101500Z-lab1"
    assert run.schema_version == 2 and set(run.data["runtime"]) == {"ampere", "tokio"}
    assert run.meta["tokio"]["tokio_version"] == "1.48.0"
    table = machine_table(run)
    assert table.loc["machine.cpu_model", "same"] and not table.loc["compiler", "same"]
    assert list(table.columns) == ["ampere", "tokio", "same"]
    same = load_run(str(run.path), data_dir="/nonexistent")
    assert same.run_id == run.run_id
    by_id = load_run("20261122T101500Z-lab1", data_dir)
    assert len(by_id.data) == len(run.data)


def test_variant_run_loads_with_its_settings(tmp_path):
    rows = {rt: rows_for(rt, "micro", 3, "mutex_contended", "", 10_000, [[5e6] * 3], workers=2)
            for rt in ("ampere", "ampere.nospin", "tokio")}
    meta = {"ampere.nospin": {**meta_for("ampere"), "variant": "ampere.nospin",
                              "variant_settings": {"spin_before_park_ns": 0}}}
    info = run_json("20261122T101500Z-lab1", schema_version=2, workers=[2],
                    variants={"ampere": {"runtime": "ampere", "settings": {}},
                              "ampere.nospin": {"runtime": "ampere", "settings": {"spin_before_park_ns": 0}},
                              "tokio": {"runtime": "tokio", "settings": {}}})
    folder = write_run(tmp_path / "data", runtimes=rows, rows=rows, meta=meta, info=info)
    run = load_run(str(folder))
    assert run.runtimes == ("ampere", "ampere.nospin", "tokio")
    assert run.variants["ampere.nospin"] == {"runtime": "ampere", "settings": {"spin_before_park_ns": 0}}
    assert set(run.rows("ampere.nospin")["workers"]) == {2}


@pytest.mark.parametrize("meta, message", [
    ({**meta_for("ampere"), "variant": "ampere"}, '"variant" must be "ampere.nospin", got "ampere"'),
    ({**meta_for("tokio")}, '"runtime" must be "ampere" (or "ampere.nospin"), got "tokio"'),
    ({**meta_for("ampere"), "variant": "ampere.nospin", "variant_settings": [1]}, '"variant_settings" must be an object'),
])
def test_bad_variant_meta(tmp_path, meta, message):
    rows = {"ampere.nospin": rows_for("ampere.nospin", "micro", 1, "mutex", "", 10, [[100] * 3])}
    folder = write_run(tmp_path / "data", runtimes=rows, rows=rows, meta={"ampere.nospin": meta})
    with pytest.raises(DataError) as info:
        load_run(str(folder))
    assert str(info.value) == f"{folder}/ampere.nospin.meta.json: {message}"


def test_mixed_schemas_in_one_run_are_rejected(tmp_path):
    folder = write_run(tmp_path / "data")
    write_csv(folder / "tokio.csv", rows_for("tokio", "micro", 1, "mutex", "", 10, [[100] * 3]), schema=1)
    with pytest.raises(DataError, match=r"tokio.csv: schema 1 header, but ampere.csv has schema 2: the CSV files "
                                         r"of one run share one schema"):
        load_run(str(folder))
    info = json.loads((folder / "run.json").read_text())
    write_csv(folder / "ampere.csv", rows_for("ampere", "micro", 1, "mutex", "", 10, [[100] * 3]), schema=1)
    assert load_run(str(folder)).schema_version == 1
    (folder / "run.json").write_text(json.dumps({**info, "schema_version": 2}))
    with pytest.raises(DataError, match=r"ampere.csv: schema 1 header \(no cpu_ns, workers\) in a run whose "
                                         r"run.json says schema_version 2"):
        load_run(str(folder))


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


def test_history_marks_a_run_with_a_corrupt_csv_invalid(tmp_path):
    """Regression (issue 11 item 6): `runs` listed a run with a corrupt CSV as complete."""
    data = tmp_path / "data"
    write_run(data, "20261122T100000Z-lab1")
    bad = write_run(data, "20261122T110000Z-lab1")
    text = (bad / "tokio.csv").read_text().splitlines(keepends=True)
    (bad / "tokio.csv").write_text("".join(text[:5]) + text[5][:20])  # cut off mid-line
    history = run_history(data)
    assert history["status"].tolist() == ["complete", "invalid"]
    assert history["reason"].iloc[1] == f"{bad}/tokio.csv:6: benchmark: truncated last line (no line end; 5 of 13 fields)"
    assert history["schema_version"].tolist()[0] == 2
    assert run_history(data, validate=False)["status"].tolist() == ["complete", "complete"]


@pytest.mark.parametrize("content, message", [
    ("{not json", "run.json: invalid JSON: Expecting property name enclosed in double quotes (line 1 column 2)"),
    ("[1, 2]", "run.json: expected a JSON object, got list"),
    (json.dumps({"status": "complete", "profile": "full"}), 'run.json: missing key "suites"'),
    (json.dumps({"status": "failed", "suites": [], "profile": "full"}), 'run.json: status must be "complete", got "failed"'),
    (json.dumps({"status": "complete", "suites": "micro", "profile": "full"}), 'run.json: key "suites" must be a list, got str'),
    (json.dumps({"status": "complete", "suites": ["nano"], "profile": "full"}), 'run.json: unknown suite "nano"'),
    (json.dumps({"status": "complete", "suites": [], "profile": "full", "schema_version": 4}),
     'run.json: unknown "schema_version" 4 (this analysis reads 1, 2 and 3)'),
    (json.dumps({"status": "complete", "suites": [], "profile": "full", "workers": [1, 0]}),
     'run.json: key "workers" must be a list of positive integers'),
    (json.dumps({"status": "complete", "suites": [], "profile": "full", "variants": ["ampere"]}),
     'run.json: key "variants" must be an object of objects'),
])
def test_bad_run_json(tmp_path, content, message):
    folder = write_run(tmp_path / "data", complete=False)
    (folder / "run.json").write_text(content)
    with pytest.raises(DataError) as info:
        load_run(str(folder))
    assert str(info.value).startswith(f"{folder}/{message}")


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


def test_numpy_int_workers_sort_key():
    from analysis.schema import bench_sort_key

    keys = [("micro", 3, "mutex_contended", "", pd.NA), ("micro", 3, "mutex_contended", "", np.int64(4)),
            ("micro", 3, "mutex_contended", "", 1)]
    assert [k[-1] for k in sorted(keys, key=lambda k: bench_sort_key(*k))][1:] == [1, 4]
