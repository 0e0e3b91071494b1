"""scripts/test_all.py counts the Zig tests from the build summary line, whose format changed in
Zig 0.16 ("N/M tests passed (K skipped, F failed)" instead of "; K skipped; F failed"): a
skipped test must not count as a failure, and every other test that did not pass must.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "test_all.py"


def load_test_all():
    spec = importlib.util.spec_from_file_location("test_all", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def counts(line: str) -> tuple[int, int] | None:
    parsed = load_test_all().parse_zig(line)
    return None if parsed is None else (parsed.passed, parsed.failed)


def test_all_passed():
    assert counts("Build Summary: 7/7 steps succeeded; 366/366 tests passed\n") == (366, 0)


def test_skipped_tests_are_not_failures_and_the_rest_are():
    line = "Build Summary: 3/5 steps succeeded (1 failed); 7/11 tests passed (1 skipped, 1 failed, 1 crashed, 1 timed out)"
    assert counts(line) == (7, 3)
    assert counts("Build Summary: 5/5 steps succeeded; 9/10 tests passed (1 skipped)") == (9, 0)


def test_the_last_summary_counts_and_no_summary_is_none():
    output = "1/2 tests passed (1 failed)\n...\nBuild Summary: 4/4 steps succeeded; 2/2 tests passed\n"
    assert counts(output) == (2, 0)
    assert counts("error: 1 compilation errors\n") is None
