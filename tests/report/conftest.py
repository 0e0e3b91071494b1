"""Fixtures of the report tests: synthetic run folders (analysis_fakes) and matplotlib set-up."""

from __future__ import annotations

from pathlib import Path

import pytest

from report_fakes import micro_only  # also puts tests/analysis on sys.path

import analysis_fakes  # noqa: E402  (tests/analysis/analysis_fakes.py)
from analysis_fakes import meta_for, write_run  # noqa: E402


@pytest.fixture
def two_runtime_run(tmp_path: Path):
    """(data dir, run id) of a complete run: ampere 2x faster on mutex, 1.5x slower on task_spawn."""
    data = tmp_path / "data"
    write_run(data, "20261122T101500Z-lab1", speed={"mutex": 0.5, "task_spawn": 1.5})
    return data, "20261122T101500Z-lab1"


@pytest.fixture
def tokio_only_run(tmp_path: Path):
    """A run with only Tokio data and no echo suite (both edge cases the pages must handle)."""
    data = tmp_path / "data"
    write_run(data, "20261122T101500Z-lab1", runtimes=("tokio",), rows={"tokio": micro_only("tokio")},
              info=analysis_fakes.run_json("20261122T101500Z-lab1", suites=["micro"]))
    return data, "20261122T101500Z-lab1"


@pytest.fixture
def oversubscribed_meta() -> dict[str, dict]:
    return {rt: meta_for(rt, logical_cores=2) for rt in ("ampere", "tokio")}
