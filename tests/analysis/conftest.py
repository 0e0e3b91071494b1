"""Fixtures of the analysis tests (helpers live in analysis_fakes.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.cli import main
from analysis_fakes import write_run


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A data folder with one complete two-runtime run (ampere 2x faster on mutex)."""
    folder = tmp_path / "data"
    write_run(folder, speed={"mutex": 0.5, "task_spawn": 1.5})
    return folder


@pytest.fixture
def cli(capsys):
    """Run the CLI in-process: returns (exit code, stdout, stderr)."""

    def run(*args: str) -> tuple[int, str, str]:
        code = main([str(a) for a in args])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run
