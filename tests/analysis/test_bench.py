"""The orchestrator (`python -m analysis bench`) against fake benchmark programs."""

from __future__ import annotations

import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

import analysis.bench as bench
from analysis import compare, load_run
from analysis_fakes import cli_env, install_fake_bench, run_cli_subprocess


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch) -> dict[str, Path]:
    for name in list(os.environ):
        if name.startswith("FAKE_"):
            monkeypatch.delenv(name)
    folder = tmp_path / "bin"
    folder.mkdir()
    log = tmp_path / "invocations.log"
    monkeypatch.setenv("FAKE_LOG", str(log))
    return {"ampere": install_fake_bench(folder, "ampere"), "tokio": install_fake_bench(folder, "tokio"),
            "log": log, "data": tmp_path / "data"}


def bench_args(fakes: dict[str, Path], *extra: str) -> list[str]:
    return ["bench", "--data-dir", str(fakes["data"]), "--ampere-bin", str(fakes["ampere"]),
            "--tokio-bin", str(fakes["tokio"]), "--quick", *extra]


def only_run(fakes: dict[str, Path]) -> Path:
    runs = sorted((fakes["data"] / "runs").iterdir())
    assert len(runs) == 1
    return runs[0]


def log_lines(fakes: dict[str, Path]) -> list[str]:
    return fakes["log"].read_text().splitlines() if fakes["log"].exists() else []


def test_parse_progress():
    assert bench.parse_progress("# start suite=micro benchmark=mutex param=\n") == (
        "start", {"suite": "micro", "benchmark": "mutex", "param": ""})
    kind, fields = bench.parse_progress("# done suite=echo benchmark=echo_f64 param=n=10 median_ns_per_op=12.5")
    assert kind == "done" and fields["param"] == "n=10" and fields["median_ns_per_op"] == "12.5"
    assert bench.parse_progress("error: mutex: wrong") is None
    assert bench.bench_name({"suite": "echo", "benchmark": "echo_f64", "param": "n=10"}) == "echo/echo_f64 n=10"


def test_alternating_invocations_merged_csv_and_run_json(fakes, cli):
    code, out, err = cli(*bench_args(fakes, "--invocations", "3", "--filter", "mutex", "--filter", "echo",
                                     "--set", "iterations=4", "--workers", "2", "--timeout", "60"))
    assert code == 0, err
    calls = [line.split()[:2] for line in log_lines(fakes)]
    assert calls == [["ampere", "0"], ["tokio", "0"], ["ampere", "1"], ["tokio", "1"], ["ampere", "2"], ["tokio", "2"]]
    first = log_lines(fakes)[0]
    for flag in ("--suite all", "--quick", "--filter mutex", "--filter echo", "--workers 2", "--set iterations=4",
                 "--invocation 0", "--csv ", "--meta "):
        assert flag in first
    folder = only_run(fakes)
    assert sorted(p.name for p in folder.iterdir()) == ["ampere.csv", "ampere.meta.json", "logs", "run.json",
                                                        "tokio.csv", "tokio.meta.json"]
    text = (folder / "ampere.csv").read_text()
    assert text.count("runtime,invocation") == 1
    # mutex + mutex_contended + echo_f64 n=1, n=10 with 4 iterations, 3 invocations
    assert len(text.splitlines()) == 1 + 4 * 4 * 3
    info = json.loads((folder / "run.json").read_text())
    assert info["status"] == "complete" and info["run_id"] == folder.name
    assert info["suites"] == ["micro", "echo"] and info["profile"] == "quick"
    assert info["constants"]["iterations"] == 4 and info["constants"]["num_workers"] == 2
    assert info["constants"]["sync_ops"] == 2000  # from constants.json's quick profile
    assert info["overrides"] == {"iterations": 4, "num_workers": 2}
    assert [(o["runtime"], o["invocation"]) for o in info["invocation_order"]][:3] == [("ampere", 0), ("tokio", 0), ("ampere", 1)]
    assert info["filters"] == ["mutex", "echo"] and info["invocations"] == 3
    assert info["git"] is None or set(info["git"]) == {"commit", "dirty"}
    assert info["started_utc"] <= info["ended_utc"] and info["command_line"][1:3] == ["-m", "analysis"]
    assert len(info["binaries"]["ampere"]["sha256"]) == 64
    assert (folder / "logs" / "tokio.2.stderr.txt").read_text().startswith("# start suite=micro")
    # progress streamed as it came
    assert "[ampere #0] micro/mutex ..." in out and "[tokio #2] echo/echo_f64 n=10 done:" in out
    assert out.index("[ampere #0] micro/mutex done") < out.index("[tokio #0] micro/mutex ...")
    run = load_run(str(folder))
    assert set(run.data["invocation"]) == {0, 1, 2}
    result = compare(run)
    assert result.compared and len(result.benchmarks) == 4


def test_run_json_is_written_last(fakes, cli, monkeypatch):
    renamed: list[str] = []
    real_replace = os.replace

    def recording_replace(src, dst):
        dst = Path(dst)
        if dst.name == "run.json":
            folder = dst.parent
            assert not (folder / bench.STAGING).exists()
            assert all((folder / n).exists() for n in ("ampere.csv", "tokio.csv", "ampere.meta.json", "tokio.meta.json"))
        renamed.append(dst.name)
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", recording_replace)
    code, _, err = cli(*bench_args(fakes, "--invocations", "1", "--suite", "micro"))
    assert code == 0, err
    assert renamed[-1] == "run.json" and renamed.count("run.json") == 1
    assert {"ampere.csv", "tokio.csv", "ampere.meta.json", "tokio.meta.json"} <= set(renamed[:-1])


def assert_failed(fakes: dict[str, Path], err: str, **expected) -> dict:
    folder = only_run(fakes)
    assert not (folder / "run.json").exists()
    assert not (folder / bench.STAGING).exists()
    assert not (folder / "ampere.csv").exists() and not (folder / "tokio.csv").exists()
    failed = json.loads((folder / "failed.json").read_text())
    assert failed["status"] == "failed"
    for key, value in expected.items():
        assert failed[key] == value, (key, failed)
    lines = err.strip().splitlines()
    assert lines[-1].startswith(f"error: run {folder.name} failed at step '{failed['step']}'")
    assert "failed.json" in lines[-1]
    return failed


def test_watchdog_kills_the_process_group_and_names_the_benchmark(fakes, cli, monkeypatch, tmp_path):
    pid_file = tmp_path / "child.pid"
    monkeypatch.setenv("FAKE_MODE_tokio", "hang")
    monkeypatch.setenv("FAKE_CHILD_PID_FILE", str(pid_file))
    code, out, err = cli(*bench_args(fakes, "--invocations", "2", "--suite", "micro", "--timeout", "1.5"))
    assert code == 1
    failed = assert_failed(fakes, err, step="invocation", runtime="tokio", invocation=0, benchmark="micro/mutex")
    assert failed["reason"].startswith("watchdog: no exit after 1.5 s while running micro/mutex")
    assert "benchmark micro/mutex" in err
    assert [line.split()[:2] for line in log_lines(fakes)] == [["ampere", "0"], ["tokio", "0"]]
    child = int(pid_file.read_text())
    status = Path(f"/proc/{child}/status")
    assert not status.exists() or "\nState:\tZ" in status.read_text()  # killed with its group


def test_failing_program_leaves_failed_json(fakes, cli, monkeypatch):
    monkeypatch.setenv("FAKE_MODE_ampere", "fail")
    code, _, err = cli(*bench_args(fakes))
    assert code == 1
    failed = assert_failed(fakes, err, step="invocation", runtime="ampere", invocation=0, benchmark="micro/mutex")
    assert failed["reason"] == "exit code 1: error: mutex: counter reached 999, expected 1000"
    assert [line.split()[0] for line in log_lines(fakes)] == ["ampere"]  # nothing ran after the failure


def test_bad_csv_is_caught_by_validation(fakes, cli, monkeypatch):
    monkeypatch.setenv("FAKE_MODE_tokio", "badcsv")
    code, _, err = cli(*bench_args(fakes, "--suite", "micro"))
    assert code == 1
    failed = assert_failed(fakes, err, step="validate", runtime="tokio", invocation=0)
    assert ".staging/tokio.0.csv:3: elapsed_ns: not an integer: 'fast'" in failed["reason"]


def test_program_that_writes_no_csv(fakes, cli, monkeypatch):
    monkeypatch.setenv("FAKE_MODE_ampere", "nocsv")
    code, _, err = cli(*bench_args(fakes, "--suite", "micro"))
    assert code == 1
    failed = assert_failed(fakes, err, step="invocation", runtime="ampere", invocation=0)
    assert failed["reason"] == "program exited 0 but wrote no CSV (ampere.0.csv)"


def test_missing_binary(fakes, cli, tmp_path):
    code, _, err = cli("bench", "--data-dir", str(fakes["data"]), "--ampere-bin", str(tmp_path / "nope"),
                       "--tokio-bin", str(fakes["tokio"]), "--quick")
    assert code == 1
    failed = assert_failed(fakes, err, step="check binaries")
    assert "nope" in failed["reason"] and log_lines(fakes) == []


def test_never_overwrites_an_existing_run_folder(fakes, cli, monkeypatch):
    moment = datetime(2026, 11, 22, 10, 15, 0, tzinfo=timezone.utc)
    monkeypatch.setattr(bench, "utc_now", lambda: moment)
    monkeypatch.setattr(bench, "short_hostname", lambda: "lab1")
    existing = fakes["data"] / "runs" / "20261122T101500Z-lab1"
    existing.mkdir(parents=True)
    (existing / "marker.txt").write_text("keep me")
    code, _, err = cli(*bench_args(fakes))
    assert code == 1 and "already exists; it is never overwritten" in err
    assert [p.name for p in existing.iterdir()] == ["marker.txt"] and log_lines(fakes) == []


def test_bad_overrides_are_rejected_before_anything_runs(fakes, cli):
    code, _, err = cli(*bench_args(fakes, "--set", "no_such_constant=3"))
    assert code == 2 and err == "error: --set 'no_such_constant=3': unknown constant 'no_such_constant'\n"
    code, _, err = cli(*bench_args(fakes, "--set", "echo_batch_sizes=1,x"))
    assert code == 2 and "expected comma-separated non-negative integers" in err
    code, _, err = cli(*bench_args(fakes, "--runtimes", "ampere,go"))
    assert code == 2 and "--runtimes" in err
    assert not (fakes["data"] / "runs").exists() and log_lines(fakes) == []


def test_build_failure_names_the_step(fakes, cli, monkeypatch):
    steps = [("fake compile", [sys.executable, "-c", "import sys; sys.exit(3)"])]
    monkeypatch.setattr(bench, "build_steps", lambda root, runtimes: steps)
    code, _, err = cli(*bench_args(fakes, "--build"))
    assert code == 1 and err.strip().splitlines()[-1] == "error: build step 'fake compile' failed (exit code 3)"
    assert not (fakes["data"] / "runs").exists()
    steps[0] = ("no such tool", ["/nonexistent/tool"])
    code, _, err = cli(*bench_args(fakes, "--build"))
    assert code == 1 and "build step 'no such tool' failed" in err


def test_build_steps_only_for_selected_runtimes():
    names = [name for name, _ in bench.build_steps(bench.REPO_ROOT, ("tokio",))]
    assert names == ["cargo build --release"]
    cmd = dict(bench.build_steps(bench.REPO_ROOT, ("ampere", "tokio")))
    assert cmd["zig build bench-build"][-3:] == ["ziglang", "build", "bench-build"]
    assert cmd["cargo build --release"][-2:] == ["--manifest-path", str(bench.REPO_ROOT / "rust_bench" / "Cargo.toml")]


def test_one_runtime_run_then_describe(fakes, cli):
    code, _, err = cli(*bench_args(fakes, "--runtimes", "ampere", "--invocations", "2", "--suite", "micro"))
    assert code == 0, err
    info = json.loads((only_run(fakes) / "run.json").read_text())
    assert info["runtimes"] == ["ampere"] and info["suites"] == ["micro"]
    assert not compare(str(only_run(fakes))).compared


def test_bench_compare_end_to_end_in_a_subprocess(fakes):
    env = cli_env(FAKE_LOG=str(fakes["log"]), FAKE_SPEED_ampere="0.5")
    done = run_cli_subprocess(*bench_args(fakes, "--invocations", "2", "--compare"), env=env)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "run complete:" in out and out.index("run complete:") < out.index("Tier 0 — controls")
    assert "ampere +2.0x" in out and "Traceback" not in done.stderr
