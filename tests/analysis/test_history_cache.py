"""The history page's cache: each run's comparison and each consecutive pair's diff are kept
under the report dir (artefact.cached_comparisons / cached_diff) and used only while their key
(data, analysis code, settings) matches."""

from __future__ import annotations

import json

import pytest

from analysis import artefact, history, load
from analysis_fakes import run_json, write_run


def _three_runs(tmp_path):
    data = tmp_path / "data"
    write_run(data, "20261122T100000Z-lab1", seed=1)
    write_run(data, "20261123T100000Z-lab1", seed=2, speed={"mutex": 2.0})
    write_run(data, "20261124T100000Z-lab1", seed=3, info=run_json("20261124T100000Z-lab1"))
    return data


def _forbid_loading(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a run was loaded although every comparison is cached")
    monkeypatch.setattr(load, "load_run", refuse)
    monkeypatch.setattr(history, "load_run", refuse)


def test_history_diffs_are_cached_and_a_cached_page_reads_no_run(tmp_path, monkeypatch):
    data, reports = _three_runs(tmp_path), tmp_path / "reports"
    first = history.history_data(data, "tokio", "ampere", 0.05, 0.95, profile="full", report_dir=reports)
    files = sorted(p.name for p in (reports / artefact.HISTORY_DIR).iterdir())
    assert files == ["20261122T100000Z-lab1..20261123T100000Z-lab1.ampere.json",
                     "20261123T100000Z-lab1..20261124T100000Z-lab1.ampere.json"]
    assert not [p for p in (reports / artefact.HISTORY_DIR).iterdir() if p.name.startswith(".")]  # no temp left
    _forbid_loading(monkeypatch)
    second = history.history_data(data, "tokio", "ampere", 0.05, 0.95, profile="full", report_dir=reports)
    assert list(second.regressions["benchmark"]) == list(first.regressions["benchmark"]) == ["mutex"]
    assert second.regressions["ratio"].tolist() == pytest.approx(first.regressions["ratio"].tolist())
    assert second.ratios["ratio"].tolist() == pytest.approx(first.ratios["ratio"].tolist(), nan_ok=True)


def test_the_same_as_without_a_cache(tmp_path):
    data = _three_runs(tmp_path)
    plain = history.history_data(data, "tokio", "ampere", 0.05, 0.95, profile="full")
    cached = history.history_data(data, "tokio", "ampere", 0.05, 0.95, profile="full", report_dir=tmp_path / "r")
    assert plain.regressions.drop(columns=["workers"]).to_dict("records") == \
        cached.regressions.drop(columns=["workers"]).to_dict("records")


def test_a_diff_is_computed_again_when_data_code_or_settings_change(tmp_path, monkeypatch):
    data, reports = _three_runs(tmp_path), tmp_path / "reports"
    a, b = data / "runs" / "20261122T100000Z-lab1", data / "runs" / "20261123T100000Z-lab1"
    calls = []
    real = artefact.diff_runs
    monkeypatch.setattr(artefact, "diff_runs", lambda *args, **kw: calls.append(1) or real(*args, **kw))
    artefact.cached_diff(a, b, "ampere", 0.05, 0.95, reports)
    artefact.cached_diff(a, b, "ampere", 0.05, 0.95, reports)
    assert len(calls) == 1
    artefact.cached_diff(a, b, "ampere", 0.10, 0.95, reports)  # another tie band
    assert len(calls) == 2
    meta = b / "ampere.meta.json"
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "runtime_version": "0.2.0"}))  # other data
    artefact.cached_diff(a, b, "ampere", 0.10, 0.95, reports)
    assert len(calls) == 3
    monkeypatch.setattr(artefact, "code_fingerprint", lambda: "other analysis code")
    diff = artefact.cached_diff(a, b, "ampere", 0.10, 0.95, reports)
    assert len(calls) == 4 and diff.extra["run_b"] == "20261123T100000Z-lab1"


def test_an_unreadable_cached_diff_is_computed_again_and_a_damaged_one_named(tmp_path):
    data, reports = _three_runs(tmp_path), tmp_path / "reports"
    a, b = data / "runs" / "20261122T100000Z-lab1", data / "runs" / "20261123T100000Z-lab1"
    path = artefact.diff_path(reports, a.name, b.name, "ampere")
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    diff = artefact.cached_diff(a, b, "ampere", 0.05, 0.95, reports)
    assert diff.compared and json.loads(path.read_text())["key"]["runtime"] == "ampere"
    doc = json.loads(path.read_text())
    doc["comparison"] = {"run_id": "x"}  # right key, broken content
    path.write_text(json.dumps(doc))
    with pytest.raises(artefact.AnalysisError, match="unreadable diff file"):
        artefact.cached_diff(a, b, "ampere", 0.05, 0.95, reports)
