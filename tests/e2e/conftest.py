"""The end-to-end pipeline, run once per test session and shared by the smoke and browser tests.

bench (`--quick --invocations 2 --suite all`, the real binaries) -> compare in every format ->
report, all into one temporary data folder. A step that fails does not raise here: the failure
is recorded and every test that needs the step fails with the step's command, exit code and
the tail of its output (a missing binary is a failure too, never a skip: `make test` builds
both programs before pytest runs).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BINARIES = {
    "ampere": REPO / "zig-out" / "bin" / "ampere_bench",
    "tokio": REPO / "rust_bench" / "target" / "release" / "tokio_bench",
}
BUILD_HINT = ".venv/bin/python -m analysis build"
FORMATS = ("json", "csv", "markdown", "table")
#: Seconds any one step may take before the session gives up on it (the quick profile needs ~5 s).
STEP_TIMEOUT_S = 600


@dataclass
class Step:
    command: list[str]
    returncode: int
    stdout: str
    stderr: str

    def describe(self) -> str:
        tail = "\n".join((self.stderr or self.stdout).splitlines()[-15:])
        return f"`{' '.join(self.command)}` exited with {self.returncode}:\n{tail}"


@dataclass
class Pipeline:
    root: Path
    data_dir: Path
    reports_dir: Path
    problem: str | None = None
    bench: Step | None = None
    compare: dict[str, Step] = field(default_factory=dict)
    report: Step | None = None

    def require(self, *steps: str) -> None:
        """Fail the calling test (never skip) when the pipeline did not get that far."""
        if self.problem:
            pytest.fail(self.problem, pytrace=False)
        for name in steps:
            step = {"bench": self.bench, "report": self.report}.get(name) if name != "compare" else None
            if name == "compare":
                for fmt, result in self.compare.items():
                    if result.returncode != 0:
                        pytest.fail(f"compare --format {fmt}: {result.describe()}", pytrace=False)
            elif step is None or step.returncode != 0:
                pytest.fail(f"{name}: {step.describe() if step else 'did not run'}", pytrace=False)

    @property
    def run_dir(self) -> Path:
        runs = sorted(p for p in (self.data_dir / "runs").iterdir() if p.is_dir())
        assert len(runs) == 1, runs
        return runs[0]

    @property
    def report_dir(self) -> Path:
        return self.reports_dir / self.run_dir.name


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("AMPERE_DATA_DIR", "NO_COLOR", "MPLBACKEND")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _run(*args: str) -> Step:
    command = [sys.executable, "-m", "analysis", *args]
    try:
        done = subprocess.run(command, cwd=REPO, env=_env(), capture_output=True, text=True, timeout=STEP_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        return Step(command, -1, exc.stdout or "", f"timed out after {STEP_TIMEOUT_S} s")
    return Step(command, done.returncode, done.stdout, done.stderr)


@pytest.fixture(scope="session")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> Pipeline:
    root = tmp_path_factory.mktemp("e2e")
    result = Pipeline(root=root, data_dir=root / "data", reports_dir=root / "reports")
    missing = [f"{rt}: {path} (build it with `{BUILD_HINT}`, or run `make test`, which builds both)"
               for rt, path in BINARIES.items() if not os.access(path, os.X_OK)]
    if missing:
        result.problem = "benchmark binary missing: " + "; ".join(missing)
        return result
    result.bench = _run("bench", "--quick", "--invocations", "2", "--suite", "all", "--timeout", "300",
                        "--data-dir", str(result.data_dir))
    if result.bench.returncode != 0:
        return result
    for fmt in FORMATS:
        result.compare[fmt] = _run("compare", "latest", "--format", fmt, "--color", "never",
                                   "--data-dir", str(result.data_dir))
    # A data folder relative to the repository, as `make report` passes it (`data`): the
    # notebooks run in notebooks/, so every path they use must be resolved, not taken as given.
    result.report = _run("report", "latest", "--data-dir", os.path.relpath(result.data_dir, REPO),
                         "--out-dir", str(result.reports_dir))
    return result
