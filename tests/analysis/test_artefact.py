"""analysis.artefact: a run's comparisons computed once into <report dir>/<run_id>/comparison.json,
read back identical, reused while the key matches, computed again when the data, the options or
the candidates change."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from analysis import artefact, load_run
from analysis_fakes import meta_for, standard_rows, write_run


def three_runtime_run(tmp_path):
    data = tmp_path / "data"
    rows = {"ampere": standard_rows("ampere", {"mutex": 0.5}), "tokio": standard_rows("tokio"),
            "ampere.nospin": [["ampere.nospin", *r[1:]] for r in standard_rows("ampere", {"mutex": 0.8}, seed=3)]}
    meta = {rt: {**meta_for("ampere" if rt.startswith("ampere") else rt), "runtime": rt} for rt in rows}
    write_run(data, runtimes=list(rows), rows=rows, meta=meta)
    return load_run("latest", data_dir=data)


def test_every_other_runtime_is_a_candidate_primary_first(tmp_path):
    run = three_runtime_run(tmp_path)
    result = artefact.comparisons(run, tmp_path / "reports")
    assert list(result.comparisons) == ["ampere", "ampere.nospin"]
    assert result.primary.candidate == "ampere" and result.baseline == "tokio"
    assert {c.baseline for c in result.comparisons.values()} == {"tokio"}
    nospin = result.comparisons["ampere.nospin"].benchmarks.set_index("label")
    assert nospin.loc["mutex", "ratio"] == pytest.approx(1 / 0.8, rel=0.05)


def test_the_file_reads_back_identical(tmp_path):
    run = three_runtime_run(tmp_path)
    computed = artefact.comparisons(run, tmp_path / "reports")
    path = artefact.path_for(tmp_path / "reports", run.run_id)
    doc = json.loads(path.read_text())
    read = artefact.from_json(doc)
    for name, cmp in computed.comparisons.items():
        again = read.comparisons[name]
        for frame in artefact.FRAMES:
            pd.testing.assert_frame_equal(getattr(cmp, frame), getattr(again, frame), check_exact=True)
        assert json.dumps(cmp.summary, sort_keys=True) == json.dumps(again.summary, sort_keys=True)
        assert (cmp.run_id, cmp.compared, cmp.tie_band, cmp.confidence) == (again.run_id, again.compared,
                                                                             again.tie_band, again.confidence)
    oncecell = read.primary.benchmarks.set_index("label").loc["oncecell_set"]
    assert math.isinf(oncecell["bytes_ratio"])  # infinities survive (JSON's Infinity token)
    pd.testing.assert_frame_equal(computed.machine, read.machine)
    assert (read.info, read.meta, read.variants, read.runtimes) == (run.info, run.meta, run.variants, run.runtimes)


def test_reused_while_the_key_matches_and_computed_again_when_it_does_not(tmp_path, monkeypatch):
    run = three_runtime_run(tmp_path)
    reports = tmp_path / "reports"
    artefact.comparisons(run, reports)
    calls = []
    real = artefact.compute
    monkeypatch.setattr(artefact, "compute", lambda *a: calls.append(a[1:]) or real(*a))
    artefact.comparisons(run, reports)
    assert calls == []  # same data, code and options: read, not computed
    artefact.comparisons(run, reports, tie_band=0.1)
    artefact.comparisons(run, reports, tie_band=0.1, candidate="ampere.nospin")
    assert calls == [("tokio", "ampere", 0.1, 0.95), ("tokio", "ampere.nospin", 0.1, 0.95)]
    with open(run.path / "tokio.csv", "a", encoding="utf-8") as csv:  # the run's data changed
        csv.write(",".join(map(str, ["tokio", 0, "micro", 1, "mutex", "", 99, 1000000, 12000000, 12000000, 0, 0, 0])) + "\n")
    artefact.comparisons(load_run(run.path), reports, tie_band=0.1, candidate="ampere.nospin")
    assert len(calls) == 3


def test_a_damaged_file_is_computed_again(tmp_path):
    run = three_runtime_run(tmp_path)
    path = artefact.path_for(tmp_path / "reports", run.run_id)
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    result = artefact.comparisons(run, tmp_path / "reports")
    assert result.primary.compared and json.loads(path.read_text())["key"]["run_id"] == run.run_id
