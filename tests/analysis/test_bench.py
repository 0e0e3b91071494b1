"""The orchestrator (`python -m analysis bench`) against fake benchmark programs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

import analysis.bench as bench
import analysis.build as build
from analysis import load_run
from analysis_fakes import REPO, cli_env, install_fake_bench, run_cli_subprocess


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


def measured_calls(fakes: dict[str, Path]) -> list[list[str]]:
    """(variant, invocation) of every logged call that was not a warm-up."""
    return [line.split()[:2] for line in log_lines(fakes) if ".warmup." not in line]


def test_parse_progress():
    assert bench.parse_progress("# start suite=micro benchmark=mutex param=\n") == (
        "start", {"suite": "micro", "benchmark": "mutex", "param": ""})
    kind, fields = bench.parse_progress("# done suite=echo benchmark=echo_f64 param=n=10 median_ns_per_op=12.5")
    assert kind == "done" and fields["param"] == "n=10" and fields["median_ns_per_op"] == "12.5"
    assert bench.parse_progress("error: mutex: wrong") is None
    assert bench.bench_name({"suite": "echo", "benchmark": "echo_f64", "param": "n=10"}) == "echo/echo_f64 n=10"
    assert bench.bench_name({"suite": "micro", "benchmark": "task_spawn", "param": "", "workers": "2"}) == \
        "micro/task_spawn workers=2"


def test_profile_defaults():
    full, quick = bench.BenchOptions(), bench.BenchOptions(quick=True)
    # the full profile's `--suite all` (make report) adds the io suite's std.Io implementations
    assert full.variant_names == ("ampere", "ampere.nospin", "tokio", "ampere.io", "zig.threaded", "zio", "zio.epoll",
                                  "tokio.joinset", "tokio.tracker")
    assert quick.variant_names == ("ampere", "tokio")
    assert bench.BenchOptions(suite="io").variant_names == ("ampere", "ampere.io", "zig.threaded", "zio", "zio.epoll",
                                                            "tokio", "tokio.joinset", "tokio.tracker")
    # the Tokio variants that differ only in how the io twins collect their tasks run the io suite only
    assert full.suite_for("tokio.joinset") == full.suite_for("zio") == "io" and full.suite_for("tokio") == "all"
    assert bench.BenchOptions(suite="micro").variant_names == ("ampere", "ampere.nospin", "tokio")
    assert full.invocation_count == bench.DEFAULT_INVOCATIONS["full"] >= bench.MIN_PUBLISHED_INVOCATIONS
    assert quick.invocation_count == bench.DEFAULT_INVOCATIONS["quick"]
    assert bench.default_workers("full", 2) == (1, 2, 4) and bench.default_workers("full", 4) == (1, 2, 4)
    assert bench.default_workers("full", 16) == (1, 2, 4, 16) and bench.default_workers("quick", 16) == (1, 4)
    assert full.base_runtimes == ("ampere", "tokio", "ampere.io", "zig.threaded", "zio", "zio.epoll")
    variants = bench.load_variants(REPO)
    assert {"ampere", "ampere.nospin", "tokio"} <= set(variants)
    assert variants["ampere.nospin"].runtime == "ampere" and variants["ampere.nospin"].settings == {"spin_before_park_ns": 0}


def test_warmup_then_alternating_variants_merged_csv_and_run_json(fakes, cli):
    code, out, err = cli(*bench_args(fakes, "--runtimes", "ampere,ampere.nospin,tokio", "--invocations", "3",
                                     "--filter", "mutex", "--filter", "echo", "--set", "iterations=4",
                                     "--workers", "1,2,4", "--timeout", "60"))
    assert code == 0, err
    lines = log_lines(fakes)
    # the warm-up: one discarded invocation of every variant, first, in the run's order; under
    # --suite all each suite the program lists is a process of its own (issue 43)
    assert [line.split()[0] for line in lines[:6]] == ["ampere", "ampere", "ampere.nospin", "ampere.nospin", "tokio",
                                                      "tokio"]
    assert all(".warmup." in line for line in lines[:6]) and not any(".warmup." in line for line in lines[6:])
    assert ["--suite micro" in line for line in lines[:6]] == [True, False] * 3
    # each round once through every variant per suite, the order rotated by one from round to round
    rounds = [("ampere", "ampere.nospin", "tokio"), ("ampere.nospin", "tokio", "ampere"),
              ("tokio", "ampere", "ampere.nospin")]
    assert measured_calls(fakes) == [[v, str(k)] for k, order in enumerate(rounds) for _suite in (1, 2) for v in order]
    first = lines[6]
    for flag in ("--variant ampere ", "--suite micro", "--quick", "--filter mutex", "--filter echo", "--workers 1,2,4",
                 "--set iterations=4", "--invocation 0", "--csv ", "--meta "):
        assert flag in first
    assert "--variant ampere.nospin " in lines[7] and "--suite echo" in lines[9]
    folder = only_run(fakes)
    assert sorted(p.name for p in folder.iterdir()) == [
        "ampere.csv", "ampere.meta.json", "ampere.metrics.jsonl", "ampere.nospin.csv", "ampere.nospin.meta.json",
        "ampere.nospin.metrics.jsonl", "ampere.nospin.span.csv", "ampere.span.csv", "logs", "run.json",
        "tokio.csv", "tokio.meta.json", "tokio.span.csv"]
    text = (folder / "ampere.nospin.csv").read_text()
    assert text.count("runtime,invocation") == 1
    # mutex + mutex_contended at 3 worker counts + echo_f64 n=1, n=10; 4 iterations, 3 invocations
    assert len(text.splitlines()) == 1 + (1 + 3 + 2) * 4 * 3
    info = json.loads((folder / "run.json").read_text())
    assert info["schema_version"] == 3 and info["status"] == "complete" and info["run_id"] == folder.name
    assert info["suites"] == ["micro", "echo"] and info["profile"] == "quick"
    assert [e["name"] for e in info["runtimes"]] == ["ampere", "ampere.nospin", "tokio"] and info["workers"] == [1, 2, 4]
    assert all("absent" not in e and e["versions"]["runtime_version"] for e in info["runtimes"])
    assert info["variants"]["ampere.nospin"] == {"runtime": "ampere", "settings": {"spin_before_park_ns": 0}}
    assert info["warmup"]["discarded"] is True and "discarded invocation of every variant" in info["warmup"]["what"]
    assert [w["runtime"] for w in info["warmup"]["invocations"]] == ["ampere", "ampere", "ampere.nospin",
                                                                      "ampere.nospin", "tokio", "tokio"]
    assert all(w["elapsed_s"] > 0 for w in info["warmup"]["invocations"])
    assert info["constants"]["iterations"] == 4 and info["constants"]["sync_ops"] == 2000  # quick profile
    assert info["overrides"] == {"iterations": 4}
    assert [(o["runtime"], o["invocation"], o["suite"]) for o in info["invocation_order"]] == [
        (v, k, suite) for k, order in enumerate(rounds) for suite in ("micro", "echo") for v in order]
    assert info["invocation_processes"] == "one per suite"
    # the machine's load over every invocation, and the process's peak resident set (issue 43)
    for entry in info["invocation_order"]:
        assert set(entry["load"]) == {"loadavg_1m", "steal_share", "other_cpu_cores", "measured_cpu_cores", "cores",
                                      "elapsed_s"}
        assert entry["load"]["measured_cpu_cores"] > 0
        assert entry["peak_rss_bytes"] is None or entry["peak_rss_bytes"] > 1_000_000  # a fast exit may be missed
    assert all(o["elapsed_s"] > 0 for o in info["invocation_order"]) and info["elapsed_s"] > 0
    assert info["filters"] == ["mutex", "echo"] and info["invocations"] == 3
    assert info["git"] is None or set(info["git"]) == {"commit", "dirty"}
    assert info["started_utc"] <= info["ended_utc"] and info["command_line"][1:3] == ["-m", "analysis"]
    assert set(info["binaries"]) == {"ampere", "tokio"} and len(info["binaries"]["ampere"]["sha256"]) == 64
    assert info["bench_commands"]["ampere.nospin"][1:3] == ["--variant", "ampere.nospin"]
    assert (folder / "logs" / "tokio.2.micro.stderr.txt").read_text().startswith("# start suite=micro")
    assert (folder / "logs" / "tokio.2.echo.stderr.txt").read_text().startswith("# start suite=echo")
    assert (folder / "logs" / "tokio.warmup.micro.stderr.txt").is_file()
    # progress streamed as it came
    assert "[ampere warm-up] micro/mutex ..." in out
    assert "[ampere.nospin #0] micro/mutex ..." in out and "[tokio #2] echo/echo_f64 n=10 done:" in out
    assert out.index("[ampere #0] micro/mutex done") < out.index("[ampere.nospin #0] micro/mutex ...")
    run = load_run(str(folder))
    assert run.schema_version == 2 and set(run.data["invocation"]) == {0, 1, 2}
    contended = run.data[run.data["benchmark"] == "mutex_contended"]
    assert sorted(contended["workers"].unique()) == [1, 2, 4]


def test_quick_defaults_two_variants_two_invocations_sweep(fakes, cli):
    code, _, err = cli(*bench_args(fakes, "--suite", "micro"))
    assert code == 0, err
    assert measured_calls(fakes) == [["ampere", "0"], ["tokio", "0"], ["tokio", "1"], ["ampere", "1"]]
    info = json.loads((only_run(fakes) / "run.json").read_text())
    assert info["workers"] == [1, 4] and info["invocations"] == 2
    assert [e["name"] for e in info["runtimes"]] == ["ampere", "tokio"]
    assert "--workers 1,4" in log_lines(fakes)[0]


def test_no_warmup_option(fakes, cli):
    code, _, err = cli(*bench_args(fakes, "--suite", "micro", "--invocations", "1", "--no-warmup"))
    assert code == 0, err
    assert not any(".warmup." in line for line in log_lines(fakes)) and len(log_lines(fakes)) == 2
    assert json.loads((only_run(fakes) / "run.json").read_text())["warmup"] is None


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
    assert not [p.name for p in folder.iterdir() if p.suffix == ".csv" or p.name.endswith(".meta.json")]
    failed = json.loads((folder / "failed.json").read_text())
    assert failed["status"] == "failed"
    for key, value in expected.items():
        assert failed[key] == value, (key, failed)
    lines = err.strip().splitlines()
    assert lines[-1].startswith(f"error: run {folder.name} ")
    assert "failed.json" in lines[-1]
    return failed


def test_watchdog_kills_the_process_group_and_names_the_benchmark(fakes, cli, monkeypatch, tmp_path):
    pid_file = tmp_path / "child.pid"
    monkeypatch.setenv("FAKE_MODE_tokio", "hang")
    monkeypatch.setenv("FAKE_CHILD_PID_FILE", str(pid_file))
    code, out, err = cli(*bench_args(fakes, "--invocations", "2", "--suite", "micro", "--timeout", "1.5",
                                     "--no-warmup"))
    assert code == 1
    failed = assert_failed(fakes, err, step="invocation", runtime="tokio", invocation=0, benchmark="micro/mutex")
    assert failed["reason"].startswith("watchdog: no exit after 1.5 s while running micro/mutex")
    assert "failed at step 'invocation' (tokio invocation 0, benchmark micro/mutex)" in err
    assert measured_calls(fakes) == [["ampere", "0"], ["tokio", "0"]]
    assert not alive(int(pid_file.read_text()))  # the grandchild died with its group


def test_failing_warmup_fails_the_run(fakes, cli, monkeypatch):
    monkeypatch.setenv("FAKE_MODE_tokio", "fail")
    code, _, err = cli(*bench_args(fakes))
    assert code == 1
    failed = assert_failed(fakes, err, step="warm-up", runtime="tokio", benchmark="micro/mutex", warmup=True)
    assert failed["reason"] == "exit code 1: error: mutex: counter reached 999, expected 1000"
    assert "failed at step 'warm-up' (tokio warm-up, benchmark micro/mutex)" in err
    assert measured_calls(fakes) == []


def test_failing_program_leaves_failed_json(fakes, cli, monkeypatch):
    monkeypatch.setenv("FAKE_MODE_ampere", "fail")
    code, _, err = cli(*bench_args(fakes, "--no-warmup"))
    assert code == 1
    failed = assert_failed(fakes, err, step="invocation", runtime="ampere", invocation=0, benchmark="micro/mutex")
    assert failed["reason"] == "exit code 1: error: mutex: counter reached 999, expected 1000"
    assert [line.split()[0] for line in log_lines(fakes)] == ["ampere"]  # nothing ran after the failure


@pytest.mark.parametrize("mode, reason", [
    ("badcsv", ".staging/tokio.0.csv:3: elapsed_ns: not an integer: 'fast'"),
    ("schema1", "tokio.0.csv: schema-1 header (no cpu_ns, workers): the program predates data contract v2"),
    ("noworkers", "tokio.0.csv: mutex_contended ran with workers [1], expected [1, 4] (--workers)"),
])
def test_bad_output_is_caught_by_validation(fakes, cli, monkeypatch, mode, reason):
    monkeypatch.setenv("FAKE_MODE_tokio", mode)
    code, _, err = cli(*bench_args(fakes, "--suite", "micro"))
    assert code == 1
    failed = assert_failed(fakes, err, step="validate", runtime="tokio", invocation=0)
    assert reason in failed["reason"]


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


@pytest.mark.parametrize("args, message", [
    (["--set", "no_such_constant=3"], "error: --set 'no_such_constant=3': unknown constant 'no_such_constant'"),
    (["--set", "echo_batch_sizes=1,x"], "expected comma-separated non-negative integers"),
    (["--runtimes", "ampere,go"], "error: --runtimes 'ampere,go': unknown variant 'go'; variants of "
                                  "runtime/bench/variants.json: ampere, ampere.nospin, ampere.ab, tokio"),
    (["--runtimes", "tokio,tokio"], "expected distinct names"),
    (["--workers", "1,0"], "error: --workers '1,0': expected comma-separated positive integers"),
    (["--workers", "2,2"], "a worker count appears twice"),
    (["--invocations", "0"], "--invocations must be >= 1"),
])
def test_bad_options_are_rejected_before_anything_runs(fakes, cli, args, message):
    code, _, err = cli(*bench_args(fakes, *args))
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (fakes["data"] / "runs").exists() and log_lines(fakes) == []


def test_build_failure_names_the_step(fakes, cli, monkeypatch):
    steps = [build.BuildStep("ampere", "fake compile", "fake", [sys.executable, "-c", "import sys; sys.exit(3)"])]
    monkeypatch.setattr(build, "build_steps", lambda root, runtimes: steps)
    code, _, err = cli(*bench_args(fakes, "--build"))
    assert code == 1 and err.strip().splitlines()[-1] == "error: build step 'fake compile' failed (exit code 3)"
    assert not (fakes["data"] / "runs").exists()
    steps[0] = build.BuildStep("ampere", "no such tool", "fake", ["/nonexistent/tool"])
    code, _, err = cli(*bench_args(fakes, "--build"))
    assert code == 1 and "build step 'no such tool' failed" in err


def test_one_build_recipe():
    """Makefile, bench --build, zig build compare and test_all.py all build through analysis/build.py."""
    steps = build.build_steps(build.REPO_ROOT, ("tokio",))
    assert [s.name for s in steps] == ["cargo build --release"]
    cmd = {s.name: s.command for s in build.build_steps(build.REPO_ROOT)}
    assert cmd["zig build bench-build"][-3:] == ["ziglang", "build", "bench-build"]
    assert cmd["cargo build --release"][-2:] == ["--manifest-path", str(build.REPO_ROOT / "rust_bench" / "Cargo.toml")]
    sources = {path: (REPO / path).read_text() for path in ("Makefile", "build.zig", "scripts/test_all.py",
                                                            "analysis/bench.py", "tests/e2e/conftest.py")}
    for path, text in sources.items():
        assert "cargo build" not in text and "build bench-build" not in text, path
        if path != "build.zig":  # build.zig defines the step; everyone else calls analysis/build.py
            assert '"bench-build"' not in text, path
    assert "$(PY) -m analysis build" in sources["Makefile"]
    assert '"bench", "--build", "--compare"' in sources["build.zig"] and "cargo" not in sources["build.zig"]
    assert '"-m", "analysis", "build"' in sources["scripts/test_all.py"]


def test_one_variant_run(fakes, cli):
    code, _, err = cli(*bench_args(fakes, "--runtimes", "ampere.nospin", "--invocations", "2", "--suite", "micro"))
    assert code == 0, err
    info = json.loads((only_run(fakes) / "run.json").read_text())
    assert [e["name"] for e in info["runtimes"]] == ["ampere.nospin"] and info["suites"] == ["micro"]
    assert list(info["binaries"]) == ["ampere"]
    assert load_run(str(only_run(fakes))).runtimes == ("ampere.nospin",)


def test_bench_compare_end_to_end_in_a_subprocess(fakes):
    env = cli_env(FAKE_LOG=str(fakes["log"]), FAKE_SPEED_ampere="0.5")
    done = run_cli_subprocess(*bench_args(fakes, "--invocations", "2", "--compare"), env=env)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "run complete:" in out and out.index("run complete:") < out.index("Tier 0 — controls")
    assert "ampere +2.0x" in out and "Traceback" not in done.stderr


# -- children die with the orchestrator (issue 11 item 8) ---------------------------------------

def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return "\nState:\tZ" not in status


def wait_for(predicate, timeout_s: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def start_sleeping_run(fakes: dict[str, Path], tmp_path: Path) -> tuple[subprocess.Popen, int, Path]:
    """An orchestrator whose ampere program sleeps in micro/mutex, writing into .staging/;
    returns once the orchestrator has reported that benchmark as running."""
    pid_file = tmp_path / "child.pid"
    env = cli_env(FAKE_LOG=str(fakes["log"]), FAKE_MODE_ampere="sleep", FAKE_CHILD_PID_FILE=str(pid_file),
                  PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "analysis", *bench_args(fakes, "--suite", "micro", "--no-warmup")],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:  # the orchestrator has seen the program start micro/mutex
        if "[ampere #0] micro/mutex ..." in line:
            break
    else:
        pytest.fail(f"the orchestrator never reported micro/mutex: {proc.communicate(timeout=30)}")
    assert wait_for(lambda: pid_file.exists() and pid_file.read_text().strip()), "the fake program never started"
    child_pid = int(pid_file.read_text())
    pattern = f"*/{bench.STAGING}/ampere.0.csv.partial"
    found = lambda: next((fakes["data"] / "runs").glob(pattern), None)  # noqa: E731
    assert wait_for(lambda: found() is not None and found().stat().st_size > 0), "no partial CSV in .staging/"
    return proc, child_pid, found()


def test_kill_9_of_the_orchestrator_leaves_no_orphan(fakes, tmp_path):
    proc, child_pid, partial = start_sleeping_run(fakes, tmp_path)
    assert alive(child_pid)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert wait_for(lambda: not alive(child_pid), 10), "the benchmark program outlived a kill -9 of its parent"
    size = partial.stat().st_size
    time.sleep(0.3)
    assert partial.stat().st_size == size, "something is still writing into .staging/"
    folder = only_run(fakes)
    assert not (folder / "run.json").exists()  # correctly incomplete


@pytest.mark.parametrize("sig, code, name", [(signal.SIGINT, 130, "SIGINT"), (signal.SIGTERM, 143, "SIGTERM")])
def test_interrupt_stops_the_whole_run_cleanly(fakes, tmp_path, sig, code, name):
    proc, child_pid, _ = start_sleeping_run(fakes, tmp_path)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert not alive(child_pid)
    failed = assert_failed(fakes, err, step="interrupted", reason="interrupted", signal=name, runtime="ampere",
                           invocation=0, benchmark="micro/mutex")
    assert failed["reason"] == "interrupted"
    lines = err.strip().splitlines()
    assert len([line for line in lines if line.startswith("error:")]) == 1
    assert lines[-1].startswith(f"error: run {only_run(fakes).name} interrupted by {name} (ampere invocation 0, "
                                "benchmark micro/mutex)")
    assert "Traceback" not in err
    assert measured_calls(fakes) == [["ampere", "0"]]  # nothing ran after the interrupt


# -- local runs stay untracked (issue 16 item 5) -----------------------------------------------

def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True)


def test_local_runs_are_ignored_and_reference_runs_tracked():
    if git("rev-parse", "--git-dir").returncode != 0:
        pytest.skip("not a git checkout")
    local = "data/runs/20991231T235959Z-somehost/ampere.csv"
    assert git("check-ignore", "-q", local).returncode == 0, "a local run folder would show up as untracked"
    assert git("check-ignore", "-q", "data/runs/20991231T235959Z-somehost/run.json").returncode == 0
    tracked = git("ls-files", "data/runs").stdout.split()
    references = sorted({path.split("/")[2] for path in tracked})
    assert "20261122T034801Z-vm" in references
    for run_id in references:  # every committed reference run is allow-listed, so new files in it show up
        assert git("check-ignore", "-q", f"data/runs/{run_id}/run.json").returncode == 1, run_id


# -- runtime metrics (--metrics) ----------------------------------------------------------------

def test_metrics_of_measured_invocations_merged_in_order(fakes, cli):
    code, _, err = cli(*bench_args(fakes, "--runtimes", "ampere,ampere.nospin,tokio", "--invocations", "3",
                                   "--filter", "mutex", "--filter", "echo", "--workers", "1,2"))
    assert code == 0, err
    lines = log_lines(fakes)
    warmups, measured = lines[:6], lines[6:]  # a process per suite (micro, echo)
    assert not any("--metrics" in line for line in warmups)  # the warm-up is discarded: no metrics
    for line in measured:
        variant, index = line.split()[:2]
        suite = line.split("--suite ")[1].split()[0]
        if variant == "tokio" or int(index) % 2 == 0:
            # tokio's program has no --metrics; the even invocations keep their spans free of the snapshots
            assert "--metrics" not in line
        else:
            assert line.endswith(f"--metrics {only_run(fakes)}/.staging/{variant}.{index}.{suite}.metrics.jsonl")
    folder = only_run(fakes)
    info = json.loads((folder / "run.json").read_text())
    assert info["metrics_files"] == {"ampere": "ampere.metrics.jsonl", "ampere.nospin": "ampere.nospin.metrics.jsonl",
                                     "tokio": None}
    text = (folder / "ampere.nospin.metrics.jsonl").read_text()
    entries = [json.loads(line) for line in text.splitlines()]
    # mutex_contended at 1 and 2 workers, echo_f64 n=1 and n=10; per invocation that records metrics (the odd)
    assert [(e["invocation"], e["benchmark"], e["param"], e["workers"]) for e in entries] == [
        (k, b, p, w) for k in (1,) for b, p, w in (("mutex_contended", "", 1), ("mutex_contended", "", 2),
                                                    ("echo_f64", "n=1", 1), ("echo_f64", "n=10", 1))]
    assert {e["runtime"] for e in entries} == {"ampere.nospin"}
    run = load_run(str(folder))
    assert set(run.metrics["runtime"]) == {"ampere", "ampere.nospin"} and len(run.metrics) == 2 * 4
    assert not (folder / ".staging").exists()


def test_a_program_without_metrics_runs_without_them(fakes, cli, tmp_path):
    old = install_fake_bench(tmp_path, "ampere", metrics=False)  # an ampere_bench from before --metrics
    code, _, err = cli("bench", "--data-dir", str(fakes["data"]), "--ampere-bin", str(old),
                       "--tokio-bin", str(fakes["tokio"]), "--quick", "--suite", "micro")
    assert code == 0, err
    assert not any("--metrics" in line for line in log_lines(fakes))
    folder = only_run(fakes)
    assert not list(folder.glob("*.metrics.jsonl"))
    assert json.loads((folder / "run.json").read_text())["metrics_files"] == {"ampere": None, "tokio": None}
    assert load_run(str(folder)).metrics.empty


def test_a_program_that_writes_no_metrics_file_is_fine(fakes, cli, monkeypatch):
    monkeypatch.setenv("FAKE_METRICS", "none")
    code, _, err = cli(*bench_args(fakes, "--suite", "micro"))
    assert code == 0, err
    assert json.loads((only_run(fakes) / "run.json").read_text())["metrics_files"]["ampere"] is None


def test_metrics_of_some_invocations_only_is_a_warning(fakes, cli, monkeypatch):
    monkeypatch.setenv("FAKE_METRICS", "first")  # only invocation 1 (the first asked) writes one
    code, _, err = cli(*bench_args(fakes, "--suite", "micro", "--invocations", "4"))
    assert code == 0, err
    assert "warning: ampere: invocations 3 wrote no metrics file; ampere.metrics.jsonl holds the others" in err
    counts = load_run(str(only_run(fakes))).metrics
    assert set(counts["invocation"]) == {1}


def test_metrics_are_recorded_in_the_odd_invocations_only():
    assert [bench.records_metrics(k, 10) for k in range(4)] == [False, True, False, True]
    assert bench.records_metrics(0, 1)  # a single invocation records them


@pytest.mark.parametrize("mode, reason", [
    ("bad", "ampere.1.metrics.jsonl:1: per_worker[0].tasks_stolen: -"),
    ("wronginv", "ampere.1.metrics.jsonl: invocation: invocation 7, expected 1"),
])
def test_bad_metrics_fail_validation(fakes, cli, monkeypatch, mode, reason):
    monkeypatch.setenv("FAKE_METRICS", mode)
    code, _, err = cli(*bench_args(fakes, "--suite", "micro"))
    assert code == 1
    failed = assert_failed(fakes, err, step="validate", runtime="ampere", invocation=1)
    assert reason in failed["reason"]
    assert not list(only_run(fakes).glob("*.metrics.jsonl"))


def test_merge_lines_refuses_a_truncated_part(tmp_path):
    good, cut = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    good.write_text('{"x": 1}\n')
    cut.write_text('{"x": 2}')
    target = tmp_path / "all.jsonl"
    with pytest.raises(bench.DataError, match=r"b.jsonl:1: truncated last line"):
        bench.merge_lines([good, cut], target)
    assert not target.exists() and not list(tmp_path.glob(".all*"))
    bench.merge_lines([good, good], target)
    assert target.read_text() == '{"x": 1}\n{"x": 1}\n'


def test_a_failure_after_merging_removes_the_merged_metrics(fakes, cli, monkeypatch):
    def fail(*_args):
        raise bench.StepFailed("merge", "disk full")
    monkeypatch.setattr(bench, "suites_present", fail)  # runs after every file was merged
    code, _, err = cli(*bench_args(fakes, "--suite", "micro"))
    assert code == 1
    assert_failed(fakes, err, step="merge", reason="disk full")
    assert not list(only_run(fakes).glob("*.metrics.jsonl"))


def test_binary_option_runs_a_variant_from_another_program(fakes, cli, tmp_path):
    # An A/B of two builds: ampere.ab runs from its own program (here a wrapper that marks each
    # call), ampere from the default one; both are recorded in run.json.
    marks = tmp_path / "ab-calls.txt"
    wrapper = tmp_path / "other_ampere_bench"
    wrapper.write_text(f'#!/bin/sh\necho call >> "{marks}"\nexec "{fakes["ampere"]}" "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    code, out, err = cli(*bench_args(fakes, "--runtimes", "ampere,ampere.ab", "--invocations", "2",
                                     "--filter", "mutex", "--set", "iterations=2", "--workers", "1",
                                     "--binary", f"ampere.ab={wrapper}"))
    assert code == 0, err
    # the order rotates from round to round (schema 3)
    assert measured_calls(fakes) == [["ampere", "0"], ["ampere.ab", "0"], ["ampere.ab", "1"], ["ampere", "1"]]
    # its --help (does it take --metrics?), its --list (the suites of --suite all: here micro), the
    # warm-up and two measured invocations
    assert marks.read_text().splitlines() == ["call"] * 5
    info = json.loads((only_run(fakes) / "run.json").read_text())
    assert info["binaries"]["ampere.ab"]["path"] == str(wrapper)
    assert info["binaries"]["ampere"]["path"] == str(fakes["ampere"])
    assert "tokio" not in info["binaries"]
    assert info["variants"]["ampere.ab"] == {"runtime": "ampere", "settings": {}}


@pytest.mark.parametrize("item, message", [
    ("ampere.ab", "expected VARIANT=PATH"),
    ("nosuch=/bin/true", "unknown variant 'nosuch'"),
    ("ampere.ab=/nonexistent/program", "is not an executable file"),
])
def test_binary_option_rejects_bad_input_in_one_line(fakes, cli, item, message):
    code, out, err = cli(*bench_args(fakes, "--runtimes", "ampere,ampere.ab", "--binary", item))
    assert code == 2 and message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_binary_option_for_a_variant_not_in_the_run_is_an_error(fakes, cli):
    code, out, err = cli(*bench_args(fakes, "--runtimes", "ampere,tokio", "--binary", "ampere.ab=/bin/true"))
    assert code == 2 and "not among the runtimes of this run" in err
