"""Issue 25 item 3: CPU over the whole invocation — `<runtime>.span.csv` (loader, orchestrator
merge) and its analysis (span_cpu.py: centre, interval, ratio, verdict, CPU outside the samples,
the CPU headline)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from analysis import compare, load_run, span, span_cpu
from analysis.errors import DataError
from analysis_fakes import rows_for, standard_rows, write_run

RUN_ID = "20261122T101500Z-lab1"
HEADER = ",".join(span.SPAN_COLUMNS)


def span_rows(rows: list[list], gap_cpu_ns: int = 0, gap_ns: int = 1000) -> list[list]:
    """One span row per (invocation, benchmark row) of CSV rows (rows_for layout): the samples'
    elapsed and CPU sums plus `gap_ns` wall and `gap_cpu_ns` CPU per iteration outside them."""
    groups: dict[tuple, list[list]] = {}
    for r in rows:
        groups.setdefault((r[0], r[1], r[2], r[3], r[4], r[5], r[10]), []).append(r)
    out = []
    for (runtime, invocation, suite, tier, name, param, workers), group in groups.items():
        n = len(group)
        out.append([runtime, invocation, suite, tier, name, param, workers, n, sum(r[7] for r in group),
                    sum(r[8] for r in group) + gap_ns * n, sum(r[9] for r in group) + gap_cpu_ns * n])
    return out


def write_span(folder, runtime: str, rows: list[list]) -> None:
    lines = [HEADER] + [",".join(str(v) for v in r) for r in rows]
    (folder / f"{runtime}.span.csv").write_text("\n".join(lines) + "\n")


def run_with_spans(tmp_path, gap_cpu: dict[str, int]):
    data = tmp_path / "data"
    rows = {rt: standard_rows(rt) for rt in ("ampere", "tokio")}
    folder = write_run(data, rows=rows)
    for rt, gap in gap_cpu.items():
        write_span(folder, rt, span_rows(rows[rt], gap))
    return data, folder, rows


# -- loading ----------------------------------------------------------------------------------

def test_a_run_without_spans_loads_with_none_and_says_not_recorded(tmp_path):
    data = tmp_path / "data"
    write_run(data)
    run = load_run("latest", data)
    assert run.spans.empty and list(run.spans.columns) == list(span.SPAN_COLUMNS)
    b = compare(run).benchmarks
    assert b["span_cpu_ratio"].isna().all() and b["candidate_span_cpu_ns_per_op"].isna().all()
    assert (b["headline_cpu_source"] == span_cpu.PER_SAMPLE).all()
    assert compare(run).summary["cpu_geomean_source"] == "per sample"


def test_span_files_load_and_are_not_runtimes(tmp_path):
    data, folder, rows = run_with_spans(tmp_path, {"ampere": 0, "tokio": 0})
    run = load_run("latest", data)
    assert run.runtimes == ("ampere", "tokio")  # ampere.span.csv is not a runtime "ampere.span"
    assert len(run.spans) == len(span_rows(rows["ampere"])) + len(span_rows(rows["tokio"]))
    assert run.spans["workers"].dtype == "Int64"


@pytest.mark.parametrize("edit, message", [
    (lambda r: r.__setitem__(7, r[7] + 1), ":2: iterations: 11, but the CSV has 10"),
    (lambda r: r.__setitem__(8, r[8] * 2), ":2: ops: "),
    (lambda r: r.__setitem__(9, 0), ":2: elapsed_ns: 0 is below 1"),
    (lambda r: r.__setitem__(0, "tokio"), ":2: runtime: 'tokio' in the span file of 'ampere'"),
    (lambda r: r.__setitem__(4, "mutex_gone"), ":2: benchmark: no CSV rows of mutex_gone"),
])
def test_a_bad_span_row_is_one_line_naming_file_line_and_column(tmp_path, edit, message):
    data = tmp_path / "data"
    rows = standard_rows("ampere")
    folder = write_run(data, rows={"ampere": rows})
    spans = span_rows(rows)
    edit(spans[0])
    write_span(folder, "ampere", spans)
    with pytest.raises(DataError) as info:
        load_run("latest", data)
    assert str(info.value).startswith(str(folder / "ampere.span.csv")) and message in str(info.value)
    assert "\n" not in str(info.value)


def test_a_span_file_missing_a_row_or_with_a_row_twice_is_an_error(tmp_path):
    data = tmp_path / "data"
    rows = standard_rows("ampere")
    folder = write_run(data, rows={"ampere": rows})
    spans = span_rows(rows)
    write_span(folder, "ampere", spans[1:])
    with pytest.raises(DataError, match=r"ampere.span.csv: no span of floor_cas_store \(workers 0\) in invocation 0"):
        load_run("latest", data)
    write_span(folder, "ampere", spans + spans[:1])
    with pytest.raises(DataError, match=rf"ampere.span.csv:{len(spans) + 2}: benchmark: the same benchmark row"):
        load_run("latest", data)
    (folder / "ampere.span.csv").write_text("runtime,invocation\n")
    with pytest.raises(DataError, match=r"ampere.span.csv:1: suite: header must have the columns"):
        load_run("latest", data)


# -- analysis ---------------------------------------------------------------------------------

def test_whole_invocation_cpu_shows_the_cpu_outside_the_samples(tmp_path):
    # ampere burns 5 µs of CPU per echo batch outside its samples (spinning after the last join),
    # tokio 0.5 µs: the per-sample CPU cannot see it, the span does.
    data, _, rows = run_with_spans(tmp_path, {"ampere": 5_000, "tokio": 500})
    cmp = compare("latest", data_dir=data)
    b = cmp.benchmarks.set_index("label")
    echo = b.loc["echo_f64 n=1"]
    assert echo["candidate_outside_cpu_ns"] == pytest.approx(5_000)
    assert echo["candidate_outside_cpu_ns_low"] == pytest.approx(5_000) == echo["candidate_outside_cpu_ns_high"]
    assert echo["baseline_outside_cpu_ns"] == pytest.approx(500)
    # per op: span cpu / span ops; its centre is the geometric mean over the invocations
    mine = [r for r in span_rows(rows["ampere"], 5_000) if r[4] == "echo_f64" and r[5] == "n=1"]
    per_op = [r[10] / r[8] for r in mine]
    assert echo["candidate_span_cpu_ns_per_op"] == pytest.approx(math.exp(np.mean(np.log(per_op))))
    assert echo["candidate_span_cpu_ci_low"] <= echo["candidate_span_cpu_ns_per_op"] <= echo["candidate_span_cpu_ci_high"]
    assert echo["span_cpu_ratio"] < echo["cpu_ratio"]  # the extra CPU makes ampere's CPU ratio worse
    assert echo["span_cpu_verdict"] in ("win", "loss", "tie", "inconclusive")
    assert echo["headline_cpu_ratio"] == echo["span_cpu_ratio"]
    assert echo["headline_cpu_source"] == span_cpu.WHOLE
    assert cmp.summary["cpu_geomean_source"] == span_cpu.WHOLE
    assert cmp.summary["cpu_geomean_ratio"] < cmp.summary["per_sample_cpu_geomean_ratio"]


def test_swapping_sides_mirrors_the_span_ratio_and_verdict(tmp_path):
    data, _, _ = run_with_spans(tmp_path, {"ampere": 3_000, "tokio": 100})
    forward = compare("latest", data_dir=data).benchmarks
    backward = compare("latest", baseline="ampere", candidate="tokio", data_dir=data).benchmarks
    assert np.allclose(backward["span_cpu_ratio"], 1 / forward["span_cpu_ratio"])
    mirror = {"win": "loss", "loss": "win", "tie": "tie", "inconclusive": "inconclusive"}
    assert backward["span_cpu_verdict"].tolist() == [mirror[v] for v in forward["span_cpu_verdict"]]


def test_spans_on_one_side_only_leave_the_per_sample_headline(tmp_path):
    data, _, _ = run_with_spans(tmp_path, {"ampere": 1_000})
    b = compare("latest", data_dir=data).benchmarks
    assert b["candidate_span_cpu_ns_per_op"].notna().all() and b["baseline_span_cpu_ns_per_op"].isna().all()
    assert b["span_cpu_ratio"].isna().all() and (b["headline_cpu_ratio"] == b["cpu_ratio"]).all()


def test_the_comparison_cache_keeps_the_span_columns(tmp_path):
    from analysis import artefact

    data, _, _ = run_with_spans(tmp_path, {"ampere": 2_000, "tokio": 200})
    run = load_run("latest", data)
    first = artefact.comparisons(run, tmp_path / "reports").primary.benchmarks
    second = artefact.comparisons(run, tmp_path / "reports").primary.benchmarks  # read back from the file
    assert np.allclose(first["span_cpu_ratio"], second["span_cpu_ratio"])
    assert second["span_cpu_verdict"].tolist() == first["span_cpu_verdict"].tolist()


# -- the orchestrator -------------------------------------------------------------------------

def test_the_orchestrator_merges_the_span_files(tmp_path, monkeypatch, cli):
    from test_bench import bench_args, only_run

    from analysis_fakes import install_fake_bench

    for name in [n for n in __import__("os").environ if n.startswith("FAKE_")]:
        monkeypatch.delenv(name)
    folder = tmp_path / "bin"
    folder.mkdir()
    fakes = {"ampere": install_fake_bench(folder, "ampere"), "tokio": install_fake_bench(folder, "tokio"),
             "data": tmp_path / "data"}
    code, _, err = cli(*bench_args(fakes, "--suite", "micro", "--invocations", "2"))
    assert code == 0, err
    run = load_run(str(only_run(fakes)))
    assert set(run.spans["runtime"]) == {"ampere", "tokio"} and set(run.spans["invocation"]) == {0, 1}
    outside = compare(run).benchmarks["candidate_outside_cpu_ns"]
    assert np.allclose(outside.dropna(), 3000)  # the fake's 3 µs of CPU per iteration outside its samples
    assert not list((only_run(fakes)).glob(".staging"))
    # A program whose later invocations wrote no span: a warning, and no partial span file.
    monkeypatch.setenv("FAKE_SPAN", "first")
    fakes["data"] = tmp_path / "data2"
    code, _, err = cli(*bench_args(fakes, "--suite", "micro", "--invocations", "2"))
    assert code == 0, err
    assert "ampere: invocations 1 wrote no span file; the run has no ampere.span.csv" in err
    assert load_run(str(only_run(fakes))).spans.empty
    assert json.loads((only_run(fakes) / "run.json").read_text())["status"] == "complete"


def test_invocations_that_recorded_metrics_are_left_out_of_the_span_cpu(tmp_path):
    """The metrics snapshots run between iterations (inside the span, outside every sample):
    an invocation that recorded them would carry that CPU, which Tokio's program never spends."""
    data = tmp_path / "data"
    rows = {rt: standard_rows(rt) for rt in ("ampere", "tokio")}
    folder = write_run(data, rows=rows)
    # invocation 1 of ampere recorded metrics: 50 µs of snapshot CPU per iteration outside its samples
    spans = span_rows(rows["ampere"], 500)
    spans = [r[:10] + [r[10] + (50_000 * r[7] if r[1] == 1 else 0)] for r in spans]
    write_span(folder, "ampere", spans)
    write_span(folder, "tokio", span_rows(rows["tokio"], 500))
    run = load_run("latest", data)
    full = compare(run).benchmarks.set_index("label")
    assert full.loc["mutex", "candidate_outside_cpu_ns_high"] == pytest.approx(50_500)
    metrics = __import__("pandas").DataFrame({"runtime": ["ampere"], "invocation": [1]})  # as Run.metrics keys it
    from dataclasses import replace
    left_out = compare(replace(run, metrics=metrics)).benchmarks.set_index("label")
    assert left_out.loc["mutex", "candidate_outside_cpu_ns_high"] == pytest.approx(500)
    assert left_out.loc["mutex", "candidate_span_invocations"] == 2 and left_out.loc["mutex", "baseline_span_invocations"] == 3


def test_the_json_document_carries_the_whole_invocation_cpu(tmp_path, capsys):
    from analysis.cli import main

    data, _, _ = run_with_spans(tmp_path, {"ampere": 4_000, "tokio": 400})
    assert main(["compare", "--data-dir", str(data), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    echo = next(e for e in doc["benchmarks"] if e["label"] == "echo_f64 n=1")
    assert echo["outside_cpu_ns"] == {"tokio": pytest.approx(400), "ampere": pytest.approx(4_000)}
    assert echo["span_cpu_verdict"] in ("win", "loss", "tie", "inconclusive") and len(echo["span_cpu_ratio_ci"]) == 2
    assert doc["summary"]["cpu_geomean_source"] == "whole invocation"
    write_run(tmp_path / "old")  # no spans: null, not zero
    assert main(["compare", "--data-dir", str(tmp_path / "old"), "--format", "json"]) == 0
    old = json.loads(capsys.readouterr().out)["benchmarks"][0]
    assert old["span_cpu_ratio"] is None and old["outside_cpu_ns"] == {"tokio": None, "ampere": None}


def test_the_pages_show_the_whole_invocation_cpu_or_say_not_recorded(tmp_path):
    from analysis import tables, words

    data, _, _ = run_with_spans(tmp_path, {"ampere": 5_000, "tokio": 500})
    cmp = compare("latest", data_dir=data)
    echo = tables.span_cpu_table(cmp, "echo").set_index("Benchmark")
    assert list(echo.index) == ["echo_f64 n=1", "echo_f64 n=10"]
    assert echo.loc["echo_f64 n=1", "ampere CPU outside samples / iteration"] == "5.00 µs (5.00 µs–5.00 µs)"
    assert echo.loc["echo_f64 n=1", "Tokio CPU outside samples / iteration"] == "500 ns (500 ns–500 ns)"
    assert "not recorded" not in set(tables.cpu_table(cmp)["whole-invocation CPU Tokio/ampere [CI]"])
    sentences = words.cpu_sentences(cmp)
    assert "CPU over the whole invocation" in sentences[0] and "inside the timed samples" in sentences[1]
    old = compare(load_run("latest", write_run(tmp_path / "old").parent.parent))
    assert set(tables.span_cpu_table(old)["Whole-invocation verdict"]) == {"not recorded"}
    assert "was not recorded in this run" in words.cpu_sentences(old)[1]
