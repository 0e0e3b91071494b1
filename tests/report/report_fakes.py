"""Helpers of the report tests (synthetic runs come from tests/analysis/analysis_fakes.py)."""

from __future__ import annotations

import sys
from pathlib import Path

# The synthetic-run helpers of the analysis tests, reused (imported, never edited).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "analysis"))

from analysis_fakes import standard_rows  # noqa: E402


def micro_only(runtime: str, speed: dict[str, float] | None = None, seed: int = 0) -> list[list]:
    """standard_rows without the echo suite."""
    return [row for row in standard_rows(runtime, speed, seed) if row[2] == "micro"]
