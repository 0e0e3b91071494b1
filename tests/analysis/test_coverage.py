"""Intervals that mean 95%: a seeded simulation (scripts/lognormal_coverage.py) of two-level
lognormal data at the default invocation count (analysis.bench.DEFAULT_INVOCATIONS["full"])
and the full profile's iterations: every interval the analysis reports covers the true value
in at least 93% of the simulated runs, for a between-invocation share of 0 to 80%.

With the old hierarchical bootstrap at the old default of 3 invocations this was 84-87% at a
share of 60-80% (issue 13); the test fails there (checked with --invocations 3 on that code)."""

from __future__ import annotations

import importlib.util

import pytest

from analysis import bench
from analysis_fakes import REPO

DATASETS = 1000  # per share: the Monte Carlo error of a coverage near 95% is then about 0.7%
REQUIRED = 0.93


def load_script():
    spec = importlib.util.spec_from_file_location("lognormal_coverage", REPO / "scripts" / "lognormal_coverage.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def table():
    script = load_script()
    invocations = bench.DEFAULT_INVOCATIONS["full"]
    assert script.default_invocations() == invocations
    return script.table(invocations, script.default_iterations(), DATASETS)


def test_every_interval_covers_at_least_93_percent(table):
    assert set(table) == {0.0, 0.2, 0.4, 0.6, 0.8}
    low = {(share, name): value for share, row in table.items() for name, value in row.items() if value < REQUIRED}
    assert not low, f"coverage below {REQUIRED:.0%}: {low}"


def test_the_intervals_are_not_just_wide(table):
    """A method that covers everything would also pass the bound; these stay near 95%."""
    for row in table.values():
        assert row["ratio of medians"] < 0.99
