"""The many-core bundle (analysis/bundle.py, scripts/many_core_run.sh): the worker sweep from a
core count, run.sh's argument handling, a bundle assembled from (fake) programs, and the run
folder its run.sh writes — loaded and validated by the analysis — or failed.json."""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

import analysis
from analysis import bundle
from analysis.cli import main
from analysis_fakes import REPO, install_fake_bench

SCRIPT = REPO / "scripts" / "many_core_run.sh"


def run_sh(*args: str, script: Path = SCRIPT, env: dict[str, str] | None = None,
           timeout: float = 120) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("FAKE_")}
    return subprocess.run(["bash", str(script), *args], capture_output=True, text=True, timeout=timeout,
                          env={**clean, **(env or {})})


@pytest.mark.parametrize("cores, sweep", [
    (1, "1"), (2, "1,2"), (3, "1,2,3"), (16, "1,2,4,8,16"), (48, "1,2,4,8,16,32,48"),
    (64, "1,2,4,8,16,32,64"), (96, "1,2,4,8,16,32,64"), (128, "1,2,4,8,16,32,64")])
def test_sweep_from_the_core_count(cores, sweep):
    done = run_sh("--print-sweep", "--cores", str(cores))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == sweep


def test_sweep_defaults_to_this_machines_cores():
    done = run_sh("--print-sweep")
    assert done.returncode == 0
    assert done.stdout.strip().split(",")[0] == "1"
    assert int(done.stdout.strip().split(",")[-1]) <= min(os.cpu_count() or 1, 64)


@pytest.mark.parametrize("args, message", [
    (["--cores", "x"], "error: run.sh: --cores: expected a positive integer, got 'x'"),
    (["--cores", "0"], "error: run.sh: --cores: expected a positive integer, got '0'"),
    (["--invocations", "-1"], "error: run.sh: --invocations: expected a positive integer, got '-1'"),
    (["--budget-s"], "error: run.sh: --budget-s: missing value"),
    (["--frobnicate"], "error: run.sh: unknown argument '--frobnicate' (see --help)"),
])
def test_bad_arguments_are_one_line_and_exit_2(args, message):
    done = run_sh("--print-sweep", *args)
    assert done.returncode == 2
    assert done.stderr.strip() == message


def test_help_describes_the_options():
    done = run_sh("--help")
    assert done.returncode == 0 and "--cores N" in done.stdout and "--budget-s S" in done.stdout


def completed_run(script: Path, out: Path, *args: str) -> tuple[Path, dict]:
    """run.sh with `args` into `out`, which must succeed: the run folder and its run.json."""
    done = run_sh(*args, "--out", str(out), script=script)
    assert done.returncode == 0, done.stderr
    (folder,) = out.iterdir()
    return folder, json.loads((folder / "run.json").read_text())


@pytest.fixture(scope="module")
def fake_bundle(tmp_path_factory):
    """A bundle assembled from the fake programs (the real build is the same code after build_portable)."""
    tmp = tmp_path_factory.mktemp("bundle")
    binaries = {program: install_fake_bench(tmp, rt, metrics=rt in ("ampere", "ampere.io"))
                for rt, (program, _) in bundle.RUNTIMES.items() if rt != "ampere.nospin"}
    tarball = bundle.make_bundle(REPO, tmp / "out", binaries)
    return tmp / "out", tarball


@pytest.fixture(scope="module")
def micro_bundle(tmp_path_factory):
    """A bundle of the two required programs only (no std.Io programs)."""
    tmp = tmp_path_factory.mktemp("micro-bundle")
    binaries = {f"{rt}_bench": install_fake_bench(tmp, rt) for rt in ("ampere", "tokio")}
    bundle.make_bundle(REPO, tmp / "out", binaries)
    return tmp / "out"


def test_bundle_holds_programs_script_and_run_json_pieces(fake_bundle):
    out, tarball = fake_bundle
    assert tarball.name == "ampere-bundle-x86-64-v3.tar.gz"
    with tarfile.open(tarball) as tar:
        names = set(tar.getnames())
    for name in ("bin/ampere_bench", "bin/tokio_bench", "bin/io_bench_ampere", "bin/io_bench_threaded",
                 "bin/io_bench_zio", "run.sh", "meta/constants.json", "meta/git.json", "meta/runtimes",
                 "meta/variant.ampere.nospin.json", "meta/variant.zio.json", "meta/versions.tokio_bench.json",
                 "meta/versions.io_bench_zio.json", "meta/metrics.ampere_bench", "meta/metrics.io_bench_ampere",
                 "meta/program.zig.threaded", "meta/suites.ampere.io", "meta/bundle.json"):
        assert f"ampere-bundle/{name}" in names
    assert "ampere-bundle/meta/metrics.tokio_bench" not in names  # tokio_bench takes no --metrics
    folder = out / "ampere-bundle"
    meta = folder / "meta"
    assert (meta / "runtimes").read_text().split() == ["ampere", "ampere.nospin", "tokio", "ampere.io", "zig.threaded",
                                                       "zio", "zio.epoll"]
    assert (meta / "program.zio.epoll").read_text().strip() == "io_bench_zio_epoll"
    assert (meta / "program.ampere.nospin").read_text().strip() == "ampere_bench"
    assert (meta / "suites.tokio").read_text().split() == ["micro", "io"]
    assert (meta / "suites.zio").read_text().split() == ["io"]
    assert json.loads((meta / "variant.ampere.nospin.json").read_text())["settings"] == {"spin_before_park_ns": 0}
    assert json.loads((meta / "bundle.json").read_text())["target_cpu"] == "x86-64-v3"
    assert os.access(folder / "run.sh", os.X_OK)


def test_run_sh_writes_a_run_folder_the_analysis_loads(fake_bundle, tmp_path):
    out, _ = fake_bundle
    data = tmp_path / "data"
    folder, _ = completed_run(out / "ampere-bundle" / "run.sh", data / "runs", "--cores", "4", "--invocations", "3",
                              "--budget-s", "120")
    run = analysis.load_run(folder.name, data_dir=data)
    names = ("ampere", "ampere.nospin", "tokio", "ampere.io", "zig.threaded", "zio", "zio.epoll")
    assert sorted(run.runtimes) == sorted(names)
    info = run.info
    assert info["schema_version"] == 3 and info["workers"] == [1, 2, 4] and info["suites"] == ["micro", "io"]
    assert info["invocations"] == 3 and len(info["invocation_order"]) == 21
    firsts = [e["runtime"] for e in info["invocation_order"][::7]]
    assert firsts == ["ampere", "ampere.nospin", "tokio"]  # the order rotates by one per round
    assert info["metrics_files"] == {"ampere": "ampere.metrics.jsonl", "ampere.nospin": "ampere.nospin.metrics.jsonl",
                                     "tokio": None, "ampere.io": "ampere.io.metrics.jsonl", "zig.threaded": None,
                                     "zio": None, "zio.epoll": None}
    assert len(info["warmup"]["invocations"]) == 7
    assert info["warnings"] == ["only 3 measured invocation(s) per runtime fitted the 120 s budget (a published run "
                                "has at least 5)"]
    rows = run.rows("ampere")
    assert sorted(set(rows[rows["tier"] == 3]["workers"])) == [1, 2, 4]
    assert set(rows["suite"]) == {"micro", "io"} and set(run.rows("zio")["suite"]) == {"io"}
    assert sorted(set(run.rows("zio")["invocation"])) == [0, 1, 2]
    # the odd invocations record metrics (the orchestrator's rule), every suite of them
    metrics = [json.loads(line) for line in (folder / "ampere.metrics.jsonl").read_text().splitlines()]
    assert {m["invocation"] for m in metrics} == {1} and {m["suite"] for m in metrics} == {"micro", "io"}
    assert not run.spans.empty and set(run.spans["runtime"]) == set(names)
    assert not (folder / ".staging").exists() and not (folder / "failed.json").exists()
    assert sorted(p.name for p in (folder / "logs").iterdir())[:2] == ["ampere.0.io.stderr.txt",
                                                                      "ampere.0.io.stdout.txt"]
    cmp = analysis.compare(run)
    assert cmp.compared


def test_suites_and_runtimes_narrow_the_run(fake_bundle, tmp_path):
    out, _ = fake_bundle
    folder, info = completed_run(out / "ampere-bundle" / "run.sh", tmp_path, "--cores", "2", "--invocations", "1",
                                 "--suites", "io", "--runtimes", "ampere,zio")
    assert info["suites"] == ["io"] and [r["name"] for r in info["runtimes"]] == ["ampere", "zio"]
    assert info["metrics_files"] == {"ampere": "ampere.metrics.jsonl", "zio": None}  # one invocation: it records
    assert {line.split(",")[2] for line in (folder / "ampere.csv").read_text().splitlines()[1:]} == {"io"}


def test_a_runtime_outside_the_suites_is_refused(fake_bundle, tmp_path):
    out, _ = fake_bundle
    done = run_sh("--suites", "micro", "--runtimes", "ampere,zio", "--out", str(tmp_path),
                  script=out / "ampere-bundle" / "run.sh")
    assert done.returncode == 2
    assert done.stderr.strip() == "error: run.sh: --runtimes: zio runs none of the suites micro (it runs: io)"
    done = run_sh("--suites", "micro,echo", "--out", str(tmp_path), script=out / "ampere-bundle" / "run.sh")
    assert done.returncode == 2
    assert done.stderr.strip() == "error: run.sh: --suites: unknown suite 'echo' (a bundle runs micro and io)"
    assert not any(tmp_path.iterdir())


def test_a_bundle_without_io_programs_runs_its_three_runtimes(micro_bundle, tmp_path):
    """ampere_bench and tokio_bench run the io suite's native rows too, without the std.Io programs."""
    _, info = completed_run(micro_bundle / "ampere-bundle" / "run.sh", tmp_path, "--cores", "2", "--invocations", "1")
    assert info["suites"] == ["micro", "io"]
    assert [r["name"] for r in info["runtimes"]] == ["ampere", "ampere.nospin", "tokio"]


def test_the_budget_bounds_the_measured_rounds(fake_bundle, tmp_path):
    """Rounds = what fits in the budget after the warm-up at the warm-up round's pace (x 1.1),
    at least 1, at most --invocations."""
    out, _ = fake_bundle
    _, info = completed_run(out / "ampere-bundle" / "run.sh", tmp_path, "--cores", "2", "--budget-s", "1",
                            "--invocations", "50", "--runtimes", "ampere,tokio")
    round_s = sum(w["elapsed_s"] for w in info["warmup"]["invocations"])
    assert [r["name"] for r in info["runtimes"]] == ["ampere", "tokio"]
    assert 1 <= info["invocations"] <= max(1, int(1 / (round_s * 1.1)))
    assert info["invocations"] < 50


def test_a_failing_program_leaves_failed_json_and_no_run_json(fake_bundle, tmp_path):
    out, _ = fake_bundle
    done = run_sh("--cores", "2", "--out", str(tmp_path), script=out / "ampere-bundle" / "run.sh",
                  env={"FAKE_MODE_tokio": "fail"})
    assert done.returncode == 1
    (folder,) = tmp_path.iterdir()
    assert not (folder / "run.json").exists() and not (folder / ".staging").exists()
    failed = json.loads((folder / "failed.json").read_text())
    assert failed["status"] == "failed" and failed["step"] == "warm-up" and failed["runtime"] == "tokio"
    assert "exit code" in failed["reason"]
    assert "error: run" in done.stderr and "failed at step 'warm-up'" in done.stderr


def test_unknown_runtime_is_refused(fake_bundle, tmp_path):
    out, _ = fake_bundle
    done = run_sh("--runtimes", "ampere,glommio", "--out", str(tmp_path), script=out / "ampere-bundle" / "run.sh")
    assert done.returncode == 2
    assert done.stderr.strip() == ("error: run.sh: --runtimes: unknown runtime 'glommio' (this bundle has: "
                                   "ampere,ampere.nospin,tokio,ampere.io,zig.threaded,zio,zio.epoll)")
    assert not any(tmp_path.iterdir())


def test_bundle_command_wants_both_prebuilt_programs_or_none(tmp_path, capsys):
    assert main(["bundle", "--out", str(tmp_path), "--ampere-bin", "x"]) == 2
    assert "give both --ampere-bin and --tokio-bin" in capsys.readouterr().err
    assert main(["bundle", "--out", str(tmp_path), "--ampere-bin", "x", "--tokio-bin", "y",
                 "--io-dir", str(tmp_path / "nowhere")]) == 2
    assert "--io-dir" in capsys.readouterr().err


def test_prebuilt_io_programs_are_taken_from_the_io_dir(tmp_path):
    (tmp_path / "io_bench_threaded").write_text("x")
    got = bundle.prebuilt("a", "t", str(tmp_path))
    assert got == {"ampere_bench": Path("a"), "tokio_bench": Path("t"), "io_bench_threaded": tmp_path / "io_bench_threaded"}
    assert bundle.prebuilt(None, None, None) is None


def test_portable_build_commands_target_x86_64_v3(tmp_path):
    commands = bundle.build_commands(REPO, tmp_path, ["-Dio-ampere=true"])
    assert "-Dcpu=x86_64_v3" in commands["ampere"][0] and "-Dcpu=x86_64_v3" in commands["io"][0]
    assert [b.name for b in commands["io"][2]] == ["io_bench_ampere", "io_bench_threaded"]  # no -Dzio=true: no zio
    with_zio = bundle.build_commands(REPO, tmp_path, ["-Dio-ampere=true", "-Dzio=true"])
    assert [b.name for b in with_zio["io"][2]][-2:] == ["io_bench_zio", "io_bench_zio_epoll"]
    assert all(str(b).startswith(str(tmp_path)) for b in commands["io"][2])
    assert commands["tokio"][1]["RUSTFLAGS"] == "-C target-cpu=x86-64-v3"
    assert commands["tokio"][1]["CARGO_TARGET_DIR"].startswith(str(tmp_path))  # the native build is left alone
