"""End-to-end smoke: the real benchmark programs (quick profile), compare in every format, and
the report, in a temporary data folder. Nothing here depends on which benchmarks the Zig program
has implemented so far beyond the Tier 0 controls."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

from analysis.report import NOTEBOOKS  # every page the report renders, in order
from analysis.schema import CSV_COLUMNS

REPO = Path(__file__).resolve().parents[2]
CONTROLS = ("floor_cas_store", "floor_fetch_add")
TOP_FIELDS = {"run_id", "baseline", "candidate", "tie_band", "confidence", "benchmarks", "summary"}
BENCH_FIELDS = {"suite", "tier", "benchmark", "param", "ns_per_op", "ns_per_op_ci", "ratio", "ratio_ci",
                "p_value", "q_value", "verdict", "bytes_per_op", "allocs_per_op"}
ECHO_FIELDS = {"avg_ns", "min_ns", "p75_ns", "p99_ns", "max_ns"}
EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//|url\(\s*["']?(?:https?:)?//""", re.I)
IMG_SRC = re.compile(r"<img\b[^>]*?\bsrc\s*=\s*[\"']([^\"']*)[\"']", re.I)
HREF = re.compile(r"<a\b[^>]*?\bhref\s*=\s*[\"']([^\"']*)[\"']", re.I)
STDERR_OUTPUT = re.compile(r"<div[^>]*data-mime-type=\"application/vnd\.jupyter\.stderr\"")


def test_bench_records_a_complete_quick_run(pipeline):
    pipeline.require("bench")
    run = pipeline.run_dir
    names = {p.name for p in run.iterdir()}
    assert {"run.json", "ampere.csv", "tokio.csv", "ampere.meta.json", "tokio.meta.json"} <= names
    info = json.loads((run / "run.json").read_text())
    assert (info["status"], info["profile"], sorted(info["suites"]), info["invocations"]) == (
        "complete", "quick", ["echo", "io", "micro", "net"], 2)  # --suite all: every suite the programs have
    # (the quick profile's ampere and tokio; tokio_bench has the io suite's Tokio twins, ampere_bench
    # the rows of its native API)
    assert info["schema_version"] == 3 and info["workers"] == [1, 4]
    assert [e["name"] for e in info["runtimes"]] == ["ampere", "tokio"]
    assert info["runtimes"][1]["versions"]["tokio_version"] and info["runtimes"][0]["versions"]["compiler"] == "zig"
    # one warm-up per runtime and suite: under --suite all each suite is a process of its own (issue 43)
    assert [w["runtime"] for w in info["warmup"]["invocations"]] == ["ampere"] * 4 + ["tokio"] * 4
    assert info["invocation_processes"] == "one per suite"
    assert {(o["runtime"], o["suite"]) for o in info["invocation_order"]} == {
        (rt, s) for rt in ("ampere", "tokio") for s in ("micro", "echo", "net", "io")}
    assert all(o["load"]["cores"] >= 1 for o in info["invocation_order"])
    assert all((run / "logs" / f"ampere.warmup.{s}.stderr.txt").is_file() for s in ("micro", "echo", "net", "io"))
    for runtime in ("ampere", "tokio"):
        with open(run / f"{runtime}.csv", newline="") as handle:
            rows = list(csv.DictReader(handle))
        assert rows and list(rows[0]) == list(CSV_COLUMNS)
        assert {r["invocation"] for r in rows} == {"0", "1"}
        assert set(CONTROLS) <= {r["benchmark"] for r in rows if r["tier"] == "0" and r["suite"] == "micro"}
        assert all(int(r["cpu_ns"]) > 0 for r in rows), f"{runtime}: a row without CPU time"
        by_tier = {(r["suite"], r["tier"], r["workers"]) for r in rows}
        assert {w for suite, tier, w in by_tier if suite == "micro" and tier in ("0", "1", "2")} == {"0"}
        assert {w for suite, tier, w in by_tier if suite == "echo"} == {"1"}
        swept = {(r["benchmark"], r["workers"]) for r in rows
                 if (r["suite"] == "micro" and r["tier"] in ("3", "4")) or r["suite"] == "io"}
        assert swept and all({(b, "1"), (b, "4")} <= swept for b, _ in swept), "Tiers 3-4 and io must run at 1 and 4 workers"
        # both programs have io rows: tokio_bench its twins, ampere_bench its native API's
        assert {"io_queue_pingpong", "io_fan_in", "io_fan_out", "io_spawn", "io_spawn_group", "io_sleep"} <= {
            r["benchmark"] for r in rows if r["suite"] == "io"}
    meta = json.loads((run / "ampere.meta.json").read_text())
    assert meta["runtime"] == "ampere" and meta.get("variant", "ampere") == "ampere"
    assert "run complete:" in pipeline.bench.stdout


def test_bench_records_ampere_runtime_metrics(pipeline):
    """ampere_bench takes --metrics: one line per runtime benchmark, invocation and worker count."""
    pipeline.require("bench")
    run = pipeline.run_dir
    info = json.loads((run / "run.json").read_text())
    assert info["metrics_files"] == {"ampere": "ampere.metrics.jsonl", "tokio": None}
    entries = [json.loads(line) for line in (run / "ampere.metrics.jsonl").read_text().splitlines()]
    with open(run / "ampere.csv", newline="") as handle:
        # the odd invocations record metrics (the even ones keep their spans free of the snapshots)
        runtime_rows = {(r["invocation"], r["benchmark"], r["param"], r["workers"]) for r in csv.DictReader(handle)
                        if (r["suite"] != "micro" or r["tier"] in ("3", "4")) and int(r["invocation"]) % 2 == 1}
    assert {(str(e["invocation"]), e["benchmark"], e["param"], str(e["workers"])) for e in entries} == runtime_rows
    assert [e["invocation"] for e in entries] == sorted(e["invocation"] for e in entries)  # invocation order
    assert runtime_rows  # the quick profile's invocation 1 recorded them
    # both programs wrote the whole invocation's span beside their CSV; the loader checked it against the CSV
    from analysis import load_run
    spans = load_run(str(run)).spans
    assert set(spans["runtime"]) == {"ampere", "tokio"} and (spans["cpu_ns"] > 0).all()
    for e in entries:
        assert len(e["per_worker"]) == e["workers"], e["benchmark"]
        if e["benchmark"] == "task_spawn":  # every spawned task is polled at least once
            assert e["total"]["polls"] >= e["iterations"] * e["ops"], e


def test_variant_runs_end_to_end(pipeline, tmp_path):
    """ampere.nospin through the real program: its own CSV and meta, rows labelled with it."""
    pipeline.require("bench")
    data = tmp_path / "data"
    done = subprocess.run([sys.executable, "-m", "analysis", "bench", "--quick", "--runtimes", "ampere.nospin",
                           "--invocations", "1", "--suite", "micro", "--filter", "task_spawn", "--workers", "2",
                           "--data-dir", str(data)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    run = next((data / "runs").iterdir())
    meta = json.loads((run / "ampere.nospin.meta.json").read_text())
    assert meta["runtime"] == "ampere" and meta["variant"] == "ampere.nospin"
    assert meta["variant_settings"] == {"spin_before_park_ns": 0}
    with open(run / "ampere.nospin.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert rows and {r["runtime"] for r in rows} == {"ampere.nospin"} and {r["workers"] for r in rows} == {"2"}
    info = json.loads((run / "run.json").read_text())
    assert info["variants"] == {"ampere.nospin": {"runtime": "ampere", "settings": {"spin_before_park_ns": 0}}}


def test_compare_json_has_the_contract_fields(pipeline):
    pipeline.require("bench", "compare")
    doc = json.loads(pipeline.compare["json"].stdout)
    assert TOP_FIELDS <= set(doc)
    assert (doc["run_id"], doc["baseline"], doc["candidate"]) == (pipeline.run_dir.name, "tokio", "ampere")
    assert doc["benchmarks"], "no benchmarks in the comparison"
    for entry in doc["benchmarks"]:
        assert BENCH_FIELDS <= set(entry), BENCH_FIELDS - set(entry)
        if entry["suite"] == "echo":
            assert ECHO_FIELDS <= set(entry), ECHO_FIELDS - set(entry)
    controls = {e["benchmark"]: e for e in doc["benchmarks"] if e["suite"] == "micro" and e["tier"] == 0}
    assert set(CONTROLS) <= set(controls)
    for name in CONTROLS:
        entry = controls[name]
        assert set(entry["ns_per_op"]) == {"ampere", "tokio"}, f"{name} must run on both sides"
        assert entry["ratio"] > 0 and len(entry["ratio_ci"]) == 2
        assert entry["verdict"] in {"win", "loss", "tie", "inconclusive"}
    summary = doc["summary"]
    assert {"counts", "geomean_ratio", "geomean_ratio_ci"} <= set(summary)


def test_compare_csv_markdown_and_table_parse(pipeline):
    pipeline.require("bench", "compare")
    count = len(json.loads(pipeline.compare["json"].stdout)["benchmarks"])
    rows = list(csv.DictReader(io.StringIO(pipeline.compare["csv"].stdout)))
    assert len(rows) == count
    assert {"suite", "tier", "benchmark", "param", "ratio", "verdict"} <= set(rows[0])
    assert {r["benchmark"] for r in rows} >= set(CONTROLS)
    markdown = pipeline.compare["markdown"].stdout
    tables = re.findall(r"^\| Benchmark \|.*\n\|[-:|]+\|\n((?:\|.*\|\n)+)", markdown, re.M)
    assert tables and sum(len(t.splitlines()) for t in tables) >= count
    assert "### Tier 0 — controls (must tie)" in markdown
    table = pipeline.compare["table"].stdout
    lines = table.splitlines()
    assert any(line.startswith("┌") for line in lines) and any(line.startswith("└") for line in lines)
    assert "Tier 0 — controls (must tie)" in table
    assert all(name in table for name in CONTROLS)
    assert "\x1b[" not in table


def test_report_writes_every_page_and_prints_the_index_last(pipeline):
    pipeline.require("bench", "report")
    out = pipeline.report.stdout.splitlines()
    folder = pipeline.report_dir
    assert Path(out[-1]).resolve() == (folder / "index.html").resolve()
    assert out[0] == "==> [report] comparison" and (folder / "comparison.json").is_file()
    started = [line for line in out if line.startswith("==> [report] ") and line.endswith(".ipynb")]
    assert sorted(started) == sorted(f"==> [report] {name}.ipynb" for name in NOTEBOOKS)  # one per core at a time
    for name in NOTEBOOKS:
        assert (folder / f"{name}.html").stat().st_size > 0
        assert (folder / f"{name}.ipynb").stat().st_size > 0
    assert not [p.name for p in folder.iterdir() if p.name.startswith(".") or ".failed." in p.name]


def test_report_pages_are_self_contained(pipeline):
    pipeline.require("bench", "report")
    folder = pipeline.report_dir
    for page in ["index.html"] + [f"{name}.html" for name in NOTEBOOKS]:
        text = (folder / page).read_text(encoding="utf-8")
        assert not EXTERNAL.search(text), f"{page}: external resource {EXTERNAL.search(text).group(0)!r}"
        assert "<script src" not in text and "<link rel=\"stylesheet\"" not in text, page
        images = IMG_SRC.findall(text)
        assert all(src.startswith("data:image/") for src in images), page
        assert not STDERR_OUTPUT.search(text), f"{page}: error or stderr output in the report"
        assert "Traceback" not in text, page
        if page != "index.html":
            assert images, f"{page}: no figures"


def test_report_contents_name_the_run(pipeline):
    pipeline.require("bench", "report")
    folder = pipeline.report_dir
    run_id = pipeline.run_dir.name
    index = (folder / "index.html").read_text(encoding="utf-8")
    assert run_id in index and "quick" in index
    for name in NOTEBOOKS:
        assert f'href="{name}.html"' in index
    overview = (folder / "overview.html").read_text(encoding="utf-8")
    assert run_id in overview and "Tier 0 — controls (must tie)" in overview
    assert "logical cores" in overview
    echo = (folder / "echo.html").read_text(encoding="utf-8")
    assert "No echo suite in this run" not in echo  # the quick run has the echo suite
    history = (folder / "history.html").read_text(encoding="utf-8")
    assert "Only one complete run of the quick profile" in history
    scaling = (folder / "scaling.html").read_text(encoding="utf-8")
    assert "Events per operation" in scaling and "No runtime metrics in this run" not in scaling


def test_index_links_resolve(pipeline):
    pipeline.require("bench", "report")
    folder = pipeline.report_dir
    links = HREF.findall((folder / "index.html").read_text(encoding="utf-8"))
    assert len(links) == 2 * len(NOTEBOOKS)
    for href in links:
        assert not re.match(r"[a-z]+:", href), href
        assert (folder / href).is_file(), href


def test_http_suite_runs_briefly_on_the_real_servers(tmp_path):
    """`--suite http` with the real servers (std.http.Server on zig.threaded and ampere.io, hyper
    on Tokio) and the installed wrk: 1 s per sample at 8 connections on both routes, no warm-up.
    Every sample is clean, every server's request count passed the check, and the run loads."""
    import shutil

    import pytest

    from analysis import httpsuite, load_run

    if shutil.which("wrk") is None:
        pytest.skip("wrk is not installed (scripts/bootstrap.sh installs it)")
    data = tmp_path / "data"
    done = subprocess.run([sys.executable, "-m", "analysis", "bench", "--suite", "http", "--quick",
                           "--runtimes", "ampere.io,zig.threaded,tokio", "--set", "http_connections=8",
                           "--set", "http_bytes_connections=8", "--set", "http_warmup_s=0",
                           "--set", "http_duration_s=1", "--data-dir", str(data)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    run = load_run(next((data / "runs").iterdir()))
    assert run.info["suites"] == ["http"] and run.info["http"]["failed_samples"] == []
    assert run.info["http"]["load_generator"]["name"] == "wrk" and run.info["http"]["load_generator"]["version"]
    assert set(run.runtimes) == {"ampere.io", "zig.threaded", "tokio"}
    assert run.meta["tokio"]["hyper_version"].startswith("1.")
    table = httpsuite.summary(run)
    assert len(table) == 2 * 3 and (table["rps"] > 0).all() and (table["p99_ns"] > 0).all()
    assert (table["cpu_ns_per_request"] > 0).all()


def test_ampere_io_records_runtime_metrics_on_the_io_rows(tmp_path):
    """The real ampere.io io program under the orchestrator: its odd invocations take --metrics,
    and the counts show the direct fiber hand-offs of the queue ping-pong (every hop of a pair
    on one worker hands off, up to the LIFO cap) and the spawned fibers of io_spawn completed on
    their own stack (each then hands off to its awaiter)."""
    from analysis import load_run

    data = tmp_path / "data"
    done = subprocess.run([sys.executable, "-m", "analysis", "bench", "--suite", "io", "--quick",
                           "--runtimes", "ampere.io,tokio", "--invocations", "2", "--workers", "1",
                           "--data-dir", str(data)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    run = load_run(next((data / "runs").iterdir()))
    assert run.info["metrics_files"]["ampere.io"] == "ampere.io.metrics.jsonl"
    counts = run.metrics[run.metrics["runtime"] == "ampere.io"]
    assert set(counts["invocation"]) == {1}  # the odd measured invocation only
    pingpong = counts[(counts["benchmark"] == "io_queue_pingpong") & (counts["param"] == "pairs=1")].iloc[0]
    assert pingpong["handoffs"] >= pingpong["ops"]
    assert pingpong["handoffs"] - pingpong["queue_handoffs"] <= pingpong["lifo_hits"]
    spawn = counts[counts["benchmark"] == "io_spawn"].iloc[0]
    assert spawn["early_completions"] * 10 >= spawn["iterations"] * spawn["ops"] * 9  # counts cover iterations x ops
    assert spawn["handoffs"] >= spawn["early_completions"]
