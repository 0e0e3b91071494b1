"""Runs every test runner of the project and prints one summary line: "N passed, N failed".

Runners: `zig build test -Dio-ampere=true` (runtime + bench harness + the io program on
zig.threaded and ampere.io), `zig build test-tsan` (ThreadSanitizer),
`cargo test` (rust_bench), and `pytest` (analysis, end-to-end smoke, browser). The bench
binaries are built first (release), because the end-to-end smoke runs them. Output of each
runner streams through; its counts are parsed from its own summary line. A runner that dies
before printing counts counts as one failure. The summary is also written to
build/test-summary.txt for .ci/run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
PY = str(ROOT / ".venv" / "bin" / "python")


@dataclass
class Counts:
    passed: int = 0
    failed: int = 0


def parse_zig(output: str) -> Counts | None:
    """Zig's (0.16) build summary: "N/M tests passed[ (K skipped, F failed, C crashed, T timed out)]".

    Every test that neither passed nor was skipped failed (a leak fails its test)."""
    match = None
    for match in re.finditer(r"(\d+)/(\d+) tests passed(?: \(([^)]*)\))?", output):
        pass
    if match is None:
        return None
    passed, total = int(match[1]), int(match[2])
    skipped = re.search(r"(\d+) skipped", match[3] or "")
    return Counts(passed=passed, failed=total - passed - (int(skipped[1]) if skipped else 0))


def parse_cargo(output: str) -> Counts | None:
    results = re.findall(r"test result: \w+\. (\d+) passed; (\d+) failed", output)
    if not results:
        return None
    return Counts(passed=sum(int(p) for p, _ in results), failed=sum(int(f) for _, f in results))


def parse_pytest(output: str) -> Counts | None:
    lines = [line for line in output.splitlines() if re.search(r"\d+ (passed|failed|error)", line)]
    if not lines:
        return None
    last = lines[-1]
    def count(word: str) -> int:
        found = re.search(rf"(\d+) {word}", last)
        return int(found[1]) if found else 0
    return Counts(passed=count("passed"), failed=count("failed") + count("errors?"))


@dataclass
class Step:
    name: str
    command: list[str]
    parse: Callable[[str], Counts | None] | None  # None: a build step, not a test runner


STEPS = [
    # the one build recipe of the benchmark programs (analysis/build.py)
    Step("build ampere_bench and tokio_bench (release)", [PY, "-m", "analysis", "build"], None),
    # -Dio-ampere=true: the io program's tests on ampere.io too (zig.threaded's always run)
    Step("zig build test", [PY, "-m", "ziglang", "build", "test", "-Dio-ampere=true", "--summary", "all"], parse_zig),
    Step("zig build test-tsan", [PY, "-m", "ziglang", "build", "test-tsan", "--summary", "all"], parse_zig),
    Step("cargo test", ["cargo", "test", "--quiet", "--manifest-path", "rust_bench/Cargo.toml"], parse_cargo),
    Step("pytest", [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], parse_pytest),
]


def run(step: Step) -> tuple[int, str]:
    print(f"==> [test] {step.name}", flush=True)
    started = time.monotonic()
    process = subprocess.Popen(step.command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    captured: list[str] = []
    assert process.stdout is not None
    for line in process.stdout:
        captured.append(line)
        sys.stdout.write(line)
        sys.stdout.flush()
    status = process.wait()
    print(f"==> [test] {step.name}: exit {status} after {time.monotonic() - started:.0f} s", flush=True)
    return status, "".join(captured)


EXPLORE_LOG = ROOT / "build" / "explore.log"


def report_explorer() -> None:
    """The schedule explorer's sweep summaries (runtime/src/explore.zig): seeds run and
    perturbations per hook point, one line per scenario and test binary."""
    if not EXPLORE_LOG.exists():
        return
    lines = EXPLORE_LOG.read_text().splitlines()
    print(f"==> [test] schedule explorer: {len(lines)} sweeps", flush=True)
    for line in lines:
        print("    " + line, flush=True)


def main() -> int:
    total = Counts()
    broken: list[str] = []
    (ROOT / "build").mkdir(exist_ok=True)
    EXPLORE_LOG.unlink(missing_ok=True)
    os.environ["AMPERE_EXPLORE_LOG"] = str(EXPLORE_LOG)
    for step in STEPS:
        status, output = run(step)
        if step.parse is None:
            if status != 0:
                broken.append(step.name)
                total.failed += 1
                break  # Nothing else can run without the binaries.
            continue
        counts = step.parse(output)
        if counts is None:
            counts = Counts(failed=1)  # Died before reporting (compile error, crash).
        elif status != 0 and counts.failed == 0:
            counts.failed = 1  # Failed outside any single test (e.g. a leak check or crash).
        if counts.failed:
            broken.append(step.name)
        print(f"==> [test] {step.name}: {counts.passed} passed, {counts.failed} failed", flush=True)
        total.passed += counts.passed
        total.failed += counts.failed
    report_explorer()
    if broken:
        print("failed runners: " + ", ".join(broken), flush=True)
    summary = f"{total.passed} passed, {total.failed} failed"
    (ROOT / "build").mkdir(exist_ok=True)
    (ROOT / "build" / "test-summary.txt").write_text(summary + "\n")
    print(summary, flush=True)
    return 0 if total.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
