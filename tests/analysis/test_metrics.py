"""Runtime metrics files (`<variant>.metrics.jsonl`, analysis/metrics.py): loading, validation, per op."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis import load_run, metrics
from analysis.errors import DataError
from analysis_fakes import run_json, write_run

COUNTERS = ("polls", "parks", "unparks_issued", "steals", "tasks_stolen", "spin_ns")


def entry(variant: str = "ampere", invocation: int = 0, benchmark: str = "task_spawn", workers: int = 2,
          iterations: int = 10, ops: int = 100, suite: str = "micro", tier: int = 4, param: str = "",
          scale: int = 1) -> dict:
    per_worker = [{c: scale * (k + 1) * (w + 1) for k, c in enumerate(COUNTERS)} for w in range(workers)]
    external = {c: (2 if c == "polls" else 0) for c in COUNTERS}
    total = {c: sum(p[c] for p in per_worker) + external[c] for c in COUNTERS}
    return {"runtime": variant, "invocation": invocation, "benchmark": benchmark, "param": param, "suite": suite,
            "tier": tier, "workers": workers, "iterations": iterations, "ops": ops, "per_worker": per_worker,
            "external": external, "total": total}


def write_lines(path: Path, entries: list, end: str = "\n") -> Path:
    path.write_text("".join((e if isinstance(e, str) else json.dumps(e)) + end for e in entries), encoding="utf-8")
    return path


def test_reads_one_wide_row_per_invocation_and_benchmark(tmp_path):
    path = write_lines(tmp_path / "ampere.metrics.jsonl",
                       [entry(workers=1), entry(workers=2), entry(invocation=1, workers=1),
                        entry(benchmark="echo_f64", suite="echo", tier=0, param="n=10", workers=1, ops=10)])
    frame = metrics.read_metrics_file(path, "ampere")
    assert list(frame.columns) == [*metrics.METRICS_KEY_COLUMNS, *COUNTERS]
    assert len(frame) == 4 and frame["polls"].dtype == "int64"
    two = frame[(frame["workers"] == 2)].iloc[0]
    assert two["polls"] == 1 + 2 + 2 and two["spin_ns"] == 6 + 12  # per worker (k+1)(w+1), external polls 2
    assert metrics.counter_names(frame) == list(COUNTERS)


def test_bom_crlf_and_an_empty_file(tmp_path):
    path = tmp_path / "ampere.metrics.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + (json.dumps(entry()) + "\r\n").encode())
    assert len(metrics.read_metrics_file(path, "ampere")) == 1
    path.write_text("")
    empty = metrics.read_metrics_file(path, "ampere")
    assert empty.empty and list(empty.columns) == list(metrics.METRICS_KEY_COLUMNS)


def bad(**changes) -> dict:
    doc = entry()
    for key, value in changes.items():
        if value is DELETE:
            del doc[key]
        else:
            doc[key] = value
    return doc


DELETE = object()


@pytest.mark.parametrize("line, message", [
    ("{not json", "ampere.metrics.jsonl:2: invalid JSON: Expecting property name enclosed in double quotes (column 2)"),
    ("[1, 2]", "ampere.metrics.jsonl:2: expected a JSON object, got list"),
    ("", "ampere.metrics.jsonl:2: empty line"),
    (bad(total=DELETE), "ampere.metrics.jsonl:2: total: missing key"),
    (bad(runtime="tokio"), 'ampere.metrics.jsonl:2: runtime: "tokio" in ampere.metrics.jsonl (must be "ampere")'),
    (bad(invocation=-1), "ampere.metrics.jsonl:2: invocation: -1 out of range"),
    (bad(iterations=0), "ampere.metrics.jsonl:2: iterations: 0 out of range"),
    (bad(ops=2.5), "ampere.metrics.jsonl:2: ops: not an integer: 2.5"),
    (bad(workers=True), "ampere.metrics.jsonl:2: workers: not an integer: true"),
    (bad(suite="macro"), 'ampere.metrics.jsonl:2: suite: unknown suite "macro"'),
    (bad(tier=2), "ampere.metrics.jsonl:2: tier: tier 2 runs without a runtime"),
    (bad(tier=5), "ampere.metrics.jsonl:2: tier: tier 5 out of range for suite micro (0-4)"),
    (bad(benchmark="Task Spawn"), 'ampere.metrics.jsonl:2: benchmark: invalid value "Task Spawn"'),
    (bad(param="x=1"), 'ampere.metrics.jsonl:2: param: invalid value "x=1"'),
    (bad(per_worker=[{c: 1 for c in COUNTERS}]),
     "ampere.metrics.jsonl:2: per_worker: expected a list of 2 counter objects (one per worker), got 1 entries"),
    (bad(external={c: 0 for c in COUNTERS[1:]}), "ampere.metrics.jsonl:2: external: missing counter 'polls'"),
    (bad(total={**entry()["total"], "polls": 99}),
     "ampere.metrics.jsonl:2: total.polls: 99, but external + per_worker sum to 5"),
    (bad(total={**entry()["total"], "steals": -1}), "ampere.metrics.jsonl:2: total.steals: -1 out of range"),
    (bad(total={**entry()["total"], "parks": "3"}), 'ampere.metrics.jsonl:2: total.parks: not an integer: "3"'),
    (bad(total={**entry()["total"], "extra": 0}),
     "ampere.metrics.jsonl:2: total: unknown counter 'extra' (expected the counters of line 1's total)"),
    (entry(workers=1), "ampere.metrics.jsonl:2: benchmark: task_spawn with 1 workers twice in invocation 0 "
                       "(first on line 1)"),
])
def test_a_malformed_line_is_one_error_naming_file_and_line(tmp_path, line, message):
    path = write_lines(tmp_path / "ampere.metrics.jsonl", [entry(workers=1), line, entry(workers=4)])
    with pytest.raises(DataError) as info:
        metrics.read_metrics_file(path, "ampere")
    text = str(info.value)
    assert text.startswith(str(tmp_path)) and message in text and "\n" not in text


def test_file_level_problems(tmp_path):
    path = tmp_path / "ampere.metrics.jsonl"
    path.write_text(json.dumps(entry()) + "\n" + json.dumps(entry(workers=1)))
    with pytest.raises(DataError, match=r"ampere.metrics.jsonl:2: truncated last line \(no line end\)$"):
        metrics.read_metrics_file(path, "ampere")
    path.write_bytes(json.dumps(entry()).encode() + b"\n\xff\n")
    with pytest.raises(DataError, match=r"ampere.metrics.jsonl:2: not valid UTF-8$"):
        metrics.read_metrics_file(path, "ampere")
    with pytest.raises(DataError, match=r"nope.metrics.jsonl: file not found$"):
        metrics.read_metrics_file(tmp_path / "nope.metrics.jsonl", "nope")


def test_per_op_sums_invocations_and_divides_by_their_operations(tmp_path):
    path = write_lines(tmp_path / "ampere.metrics.jsonl",
                       [entry(workers=1, scale=1), entry(invocation=1, workers=1, scale=3),
                        entry(workers=2, iterations=5, ops=4)])
    frame = metrics.per_op(metrics.read_metrics_file(path, "ampere"))
    assert list(frame.columns[:9]) == ["runtime", "suite", "tier", "benchmark", "param", "workers", "invocations",
                                       "ops_total", "polls"]
    one = frame[frame["workers"] == 1].iloc[0]
    # polls per invocation: scale x 1 + external 2 -> (1 + 2) + (3 + 2) over 2 x 10 x 100 operations
    assert one["invocations"] == 2 and one["ops_total"] == 2000 and one["polls"] == pytest.approx(8 / 2000)
    assert one["spin_ns"] == pytest.approx((6 + 18) / 2000)
    two = frame[frame["workers"] == 2].iloc[0]
    assert two["polls"] == pytest.approx((1 + 2 + 2) / 20)
    assert metrics.per_op(metrics.empty_frame()).empty


def test_a_run_with_and_without_metrics_files(tmp_path):
    folder = write_run(tmp_path, runtimes=("ampere", "ampere.nospin", "tokio"))
    assert load_run(folder).metrics.empty  # no metrics files: an empty frame, not an error
    write_lines(folder / "ampere.metrics.jsonl", [entry(workers=1), entry(workers=4)])
    write_lines(folder / "ampere.nospin.metrics.jsonl", [entry("ampere.nospin", workers=4)])
    run = load_run(folder)
    assert list(run.metrics["runtime"]) == ["ampere", "ampere", "ampere.nospin"]
    (folder / "ampere.nospin.metrics.jsonl").write_text("{}\n")
    with pytest.raises(DataError, match=r"ampere.nospin.metrics.jsonl:1: runtime: missing key"):
        load_run(folder)


def test_run_json_metrics_files_must_exist(tmp_path):
    info = run_json("20261122T101500Z-lab1", metrics_files={"ampere": "ampere.metrics.jsonl", "tokio": None})
    folder = write_run(tmp_path, info=info)
    with pytest.raises(DataError, match=r'run.json: "metrics_files" names ampere.metrics.jsonl for ampere, '
                                        r"which is missing"):
        load_run(folder)
    write_lines(folder / "ampere.metrics.jsonl", [entry()])
    assert len(load_run(folder).metrics) == 1
    (folder / "run.json").write_text(json.dumps(run_json(folder.name, metrics_files=["ampere.metrics.jsonl"])))
    with pytest.raises(DataError, match=r'key "metrics_files" must be an object'):
        load_run(folder)


def test_the_reference_run_has_no_metrics():
    reference = Path(__file__).resolve().parents[2] / "data" / "runs" / "20261122T034801Z-vm"
    assert load_run(reference).metrics.empty
