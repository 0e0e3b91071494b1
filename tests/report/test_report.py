"""analysis.report: atomic writes, kernel choice, index.html, the `report` command end to end on
tiny notebooks (the comparison computed once, parameters pinned to the run, code hidden, offline
HTML, kernel logs in the report folder), the one-line error of a failing notebook, bad input, and
the real notebooks on a one-runtime run without echo rows, and the net page on a run with net
rows and a variant."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

import analysis
from analysis import artefact, index_page, report, words
from analysis.cli import main
import report_fakes  # noqa: F401,I001 (puts tests/analysis on sys.path)
from analysis_fakes import REPO, cli_env, write_run
from net_fakes import write_net_run

RUN_ID = "20261122T101500Z-lab1"
PARAMS = ('data_dir = "data"\nrun_id = "latest"\nreport_dir = "reports"\nbaseline = "tokio"\ncandidate = "ampere"\n'
          'tie_band = 0.05\nconfidence = 0.95')
EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//|url\(\s*["']?(?:https?:)?//""", re.I)
STDERR_OUTPUT = re.compile(r"<div[^>]*data-mime-type=\"application/vnd\.jupyter\.stderr\"")


def make_notebook(folder: Path, name: str, *cells: str, markdown: str = "# A tiny page") -> Path:
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell(PARAMS)
    params.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_markdown_cell(markdown), params] + [nbformat.v4.new_code_cell(c) for c in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


def run_cli(*args: object, timeout: float = 300, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "analysis", *map(str, args)], cwd=cwd,
                          env=cli_env(PYTHONPATH=str(REPO)), capture_output=True, text=True, timeout=timeout)


# -- helpers ----------------------------------------------------------------------------------

def test_write_text_atomic_replaces_whole_files_only(tmp_path, monkeypatch):
    target = tmp_path / "out" / "page.html"
    report.write_text_atomic(target, "first")
    report.write_text_atomic(target, "second")
    assert target.read_text() == "second"
    assert sorted(p.name for p in target.parent.iterdir()) == ["page.html"]
    mask = os.umask(0)
    os.umask(mask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~mask

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(report.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        report.write_text_atomic(target, "third")
    assert target.read_text() == "second"  # the old file is intact, the temporary file is gone
    assert sorted(p.name for p in target.parent.iterdir()) == ["page.html"]


def test_runs_this_python():
    assert report._runs_this_python(["python", "-m", "ipykernel_launcher"])
    assert report._runs_this_python([sys.executable, "-m", "ipykernel_launcher"])
    assert not report._runs_this_python(["/opt/other/bin/python3", "-m", "ipykernel_launcher"])
    assert not report._runs_this_python([])


def test_pick_kernel_runs_this_interpreter():
    from jupyter_client.kernelspec import KernelSpecManager

    name = report.pick_kernel()
    assert name in (report.KERNEL_NAME, "python3")
    assert report._runs_this_python(KernelSpecManager().get_kernel_spec(name).argv)


def test_index_summarises_the_run_and_links_every_page(two_runtime_run, tmp_path):
    data, run_id = two_runtime_run
    run = analysis.load_run(run_id, data_dir=data)
    rc = artefact.compute(run, "tokio", "ampere", 0.05, 0.95)
    cmp = rc.primary
    pages = [index_page.Page(name, tmp_path / f"{name}.html", tmp_path / f"{name}.ipynb", 1.0) for name in report.NOTEBOOKS]
    page = index_page.index_html(rc, pages, "python -m analysis report", "data/runs/x")
    counts = cmp.summary["counts"]
    assert f"run {run_id}" in page and "2026-11-22T10:15:00Z" in page
    assert "Test CPU, 8 logical cores" in page and "abc1234def" in page
    for verdict in ("win", "loss", "tie", "inconclusive"):
        assert f'<span class="{verdict}">{verdict} {counts[verdict]}</span>' in page
    assert f"{cmp.summary['geomean_ratio']:.3f}×" in page
    lo, hi = cmp.summary["geomean_ratio_ci"]
    assert f"[{lo:.3f}×, {hi:.3f}×]" in page
    assert "geometric mean Tokio/ampere, like-for-like rows" in page and "geometric mean CPU Tokio/ampere" in page
    for name in report.NOTEBOOKS:
        assert f'href="{name}.html"' in page and f'href="{name}.ipynb"' in page
    assert not EXTERNAL.search(page)
    for sentence in words.headline_sentences(cmp):
        assert sentence.replace("'", "&#x27;") in page


# -- the command on tiny notebooks ------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_report(tmp_path_factory):
    """`report` (default RUN: latest) on a synthetic run with one small notebook that plots."""
    root = tmp_path_factory.mktemp("tiny")
    data = root / "data"
    write_run(data, RUN_ID)
    notebooks = root / "notebooks"
    make_notebook(notebooks, "tiny",
                  "import sys\nimport analysis\nrun = analysis.load_run(run_id, data_dir=data_dir)\n"
                  "print('LOADED', run.run_id, 'FROM', run_id)",
                  "from analysis import notebook\nfrom matplotlib.figure import Figure\nnotebook.setup_matplotlib()\n"
                  "fig = Figure(figsize=(3, 2))\nax = fig.add_subplot()\n"
                  "ax.plot([1, 2], [3, 4])\nax.set_title('tiny plot')\nfig")
    done = run_cli("report", "--data-dir", data, "--out-dir", "reports", "--notebook-dir", notebooks, "--notebooks",
                   "tiny", cwd=root)
    return done, root / "reports" / RUN_ID


def test_report_writes_notebook_html_and_index(tiny_report):
    done, folder = tiny_report
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # kernel chatter goes to the kernel log, not the terminal
    lines = done.stdout.splitlines()
    assert lines[0] == "==> [report] comparison" and lines[2] == "==> [report] tiny.ipynb"
    assert (folder.parents[1] / lines[-1]).resolve() == (folder / "index.html").resolve()  # printed relative to the CWD
    assert sorted(p.name for p in folder.iterdir()) == ["comparison.json", "index.html", "logs", "tiny.html",
                                                        "tiny.ipynb"]
    # the kernel log is in the report folder, not in notebooks/reports/ (papermill runs kernels there)
    assert (folder / "logs" / "tiny.kernel.txt").is_file()
    assert not (folder.parents[1] / "notebooks" / "reports").exists()


def test_report_pins_the_run_and_hides_code(tiny_report):
    done, folder = tiny_report
    assert done.returncode == 0, done.stderr
    executed = nbformat.read(folder / "tiny.ipynb", as_version=4)
    params = executed.metadata["papermill"]["parameters"]
    assert params["run_id"] == RUN_ID  # `latest` resolved before the notebook ran
    assert Path(params["data_dir"]).is_absolute()
    assert params["report_dir"] == str(folder.parent)
    assert (params["baseline"], params["candidate"], params["tie_band"], params["confidence"]) == (
        "tokio", "ampere", 0.05, 0.95)
    page = (folder / "tiny.html").read_text()
    assert f"LOADED {RUN_ID} FROM {RUN_ID}" in page
    assert "analysis.load_run" not in page and "set_title" not in page  # code cells hidden
    assert "injected-parameters" not in page and "tie_band = 0.05" not in page
    assert 'src="data:image/png;base64,' in page
    assert not EXTERNAL.search(page) and "<script src" not in page
    assert not STDERR_OUTPUT.search(page)
    assert 'href="index.html"' in page


def test_failing_notebook_is_one_line_naming_notebook_and_cell(tmp_path):
    data = tmp_path / "data"
    write_run(data, RUN_ID)
    notebooks = tmp_path / "notebooks"
    make_notebook(notebooks, "broken", "table = {'y': 1}", "table['x']")
    out = tmp_path / "reports"
    done = run_cli("report", RUN_ID, "--data-dir", data, "--out-dir", out, "--notebook-dir", notebooks,
                   "--notebooks", "broken")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    # cells: [1] parameters, [2] injected parameters, [3] table = ..., [4] table['x']
    expected = (f"error: report: {notebooks / 'broken.ipynb'} cell 4: KeyError: 'x' "
                f"(executed notebook: {out / RUN_ID / 'broken.failed.ipynb'})")
    assert lines[0] == expected
    out_lines = done.stdout.splitlines()
    assert out_lines[0] == "==> [report] comparison" and out_lines[2:] == ["==> [report] broken.ipynb"]
    folder = out / RUN_ID
    assert sorted(p.name for p in folder.iterdir()) == ["broken.failed.ipynb", "comparison.json", "logs"]
    failed = nbformat.read(folder / "broken.failed.ipynb", as_version=4)
    errors = [o for c in failed.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert [(e.ename, e.evalue) for e in errors] == [("KeyError", "'x'")]


# -- bad input --------------------------------------------------------------------------------

def test_bad_run_is_a_one_line_error_exit_2(two_runtime_run, tmp_path, capsys):
    data, _ = two_runtime_run
    assert main(["report", "nope", "--data-dir", str(data), "--out-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown run id 'nope'") and err.count("\n") == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["report", str(empty), "--out-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {empty}: not a run folder (no run.json, no <runtime>.csv)\n"
    incomplete = write_run(tmp_path / "other", "20261122T111111Z-lab1", complete=False)
    assert main(["report", str(incomplete), "--out-dir", str(tmp_path / "r")]) == 2
    assert "incomplete (no run.json" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_unknown_notebook_is_a_one_line_error(two_runtime_run, capsys, tmp_path):
    data, _ = two_runtime_run
    assert main(["report", "--data-dir", str(data), "--out-dir", str(tmp_path / "r"), "--notebooks", "overview,nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --notebooks: no notebook ") and "nope.ipynb" in err and "available: " in err
    assert main(["report", "--data-dir", str(data), "--notebooks", "overview,overview"]) == 2
    assert "listed twice" in capsys.readouterr().err
    assert main(["report", "--data-dir", str(data), "--out-dir", str(tmp_path / "r"), "--kernel", "no-such-kernel"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --kernel no-such-kernel: no such Jupyter kernel (installed: ") and err.count("\n") == 1
    assert main(["report", "--data-dir", str(data), "--out-dir", str(tmp_path / "r"), "--baseline", "x",
                 "--candidate", "y"]) == 2
    assert "has no x or y data (runtimes: ampere, tokio)" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_help_lists_report(capsys):
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    out = capsys.readouterr().out
    for option in ("--data-dir", "--out-dir", "--notebooks", "--notebook-dir", "--kernel"):
        assert option in out


# -- the real notebooks on an edge-case run ---------------------------------------------------

def test_real_notebooks_on_a_one_runtime_run_without_echo(tokio_only_run, tmp_path):
    """Every notebook runs on a run with only Tokio data and no echo rows, and says so."""
    data, run_id = tokio_only_run
    lines: list[str] = []
    index = report.build_report(run_id, data_dir=data, out_dir=tmp_path / "reports", progress=lines.append, jobs=2)
    folder = index.parent
    started = [line for line in lines if line.startswith("==>")]
    assert started[0] == "==> [report] comparison"
    assert sorted(started[1:]) == sorted(f"==> [report] {n}.ipynb" for n in report.NOTEBOOKS)
    pages = {name: (folder / f"{name}.html").read_text() for name in report.NOTEBOOKS}
    for name, page in pages.items():
        assert not STDERR_OUTPUT.search(page), name
        assert "Traceback" not in page, name
        assert not EXTERNAL.search(page), name
    assert "data for Tokio only" in pages["overview"]
    assert "No echo suite in this run" in pages["echo"]
    assert "Only one complete run" in pages["history"]
    assert "No worker sweep in this run" in pages["scaling"]
    assert "No machine: no complete run" in pages["machines"] and "no ampere data" in pages["machines"]
    assert "No net suite in this run" in pages["net"] and "has no net rows (its suites: micro)" in pages["net"]
    assert 'src="data:image/png;base64,' not in pages["net"]
    assert "No runtime metrics in this run" in pages["scaling"]
    assert "No http suite in this run" in pages["http"] and 'src="data:image/png;base64,' in pages["http"]
    assert pages["overview"].count('src="data:image/png;base64,') == 2  # forest plot, allocations (no CPU ratios)
    assert pages["distributions"].count('src="data:image/png;base64,') == 2 * 5  # 5 tiers x 2 figures
    assert "This run has data for Tokio only" in index.read_text()


def test_notebooks_load_the_comparison_the_report_computed(two_runtime_run, tmp_path):
    """The report compares once; a notebook opened later finds the same file and does not compare."""
    data, run_id = two_runtime_run
    notebooks = tmp_path / "notebooks"
    make_notebook(notebooks, "probe",
                  "from analysis import notebook\n"
                  "page = notebook.open_page(data_dir, run_id, report_dir, baseline, candidate, tie_band, confidence)\n"
                  "print('GEOMEAN', page.comparisons.primary.summary['geomean_ratio'])")
    out = tmp_path / "reports"
    lines: list[str] = []
    report.build_report(run_id, data_dir=data, out_dir=out, notebooks=["probe"], notebook_dir=notebooks,
                        progress=lines.append)
    cached = artefact.path_for(out, run_id)
    stamp = cached.stat().st_mtime_ns
    page = (out / run_id / "probe.html").read_text()
    geomean = artefact.comparisons(analysis.load_run(run_id, data_dir=data), out).primary.summary["geomean_ratio"]
    assert f"GEOMEAN {geomean}" in page
    report.build_report(run_id, data_dir=data, out_dir=out, notebooks=["probe"], notebook_dir=notebooks,
                        progress=lines.append)
    assert cached.stat().st_mtime_ns == stamp  # reused, not written again


def test_jobs_must_be_positive(two_runtime_run, tmp_path, capsys):
    data, _ = two_runtime_run
    assert main(["report", "--data-dir", str(data), "--out-dir", str(tmp_path / "r"), "--jobs", "0"]) == 2
    assert capsys.readouterr().err.startswith("error: --jobs must be >= 1, got 0")
    assert not (tmp_path / "r").exists()


def test_net_page_on_a_run_with_net_rows_and_a_variant(tmp_path):
    """The real net notebook: its figures, tables and sentences for ampere, ampere.nospin and Tokio."""
    folder = write_net_run(tmp_path / "data")
    lines: list[str] = []
    index = report.build_report(folder.name, data_dir=tmp_path / "data", out_dir=tmp_path / "reports",
                                notebooks=["net"], progress=lines.append)
    page = (index.parent / "net.html").read_text()
    assert not STDERR_OUTPUT.search(page) and "Traceback" not in page and not EXTERNAL.search(page)
    assert "No net suite in this run" not in page
    # latency, scaling over connections, throughput, and the wall/CPU ratio plot per candidate
    assert page.count('src="data:image/png;base64,') == 3 + 2
    for text in ("Tokio (baseline)", "ampere.nospin", "p99 per op [CI]", "MiB/s [CI]", "tcp_echo_conns, 1 → 128 connections",
                 "30 values (10 measured iterations × 3 invocations)", "a loss for ampere"):
        assert text in page, text
    assert re.search(r"tcp\\?_pingpong size=64: ampere is 2\.\d\d× faster than Tokio per round trip", page)
    assert 'href="net.html"' in index.read_text()


def test_http_page_on_a_run_with_http_rows_and_an_absent_side(tmp_path):
    """The real http notebook on a fake run (ampere.io, zig.threaded, Tokio with http rows, zio
    absent, one failed sample): the figure, the numbers, the failed sample, the sentences, and
    the index's http section."""
    from http_fakes import write_http_run
    folder = write_http_run(tmp_path / "data")
    index = report.build_report(folder.name, data_dir=tmp_path / "data", out_dir=tmp_path / "reports",
                                notebooks=["http"], progress=[].append)
    page = (index.parent / "http.html").read_text()
    assert not STDERR_OUTPUT.search(page) and "Traceback" not in page and not EXTERNAL.search(page)
    assert "No http suite in this run" not in page
    assert page.count('src="data:image/png;base64,') == 1
    for text in ("zio: zio package not cached", "wrk 4.1.0 with 1 thread(s)", "server on CPU(s) [0] and wrk on [1]",
                 "1 failed sample(s)", "socket errors (read 3)", "GET /plaintext", "req/s",
                 "ampere.io (GET /plaintext): 16 connections", "clearly behind the fastest at 128, 512",
                 "Open loop", "Peak resident set"):
        assert text in page, text
    front = index.read_text()
    assert "Http suite under wrk: where each runtime stands" in front
    assert "Tokio (GET /plaintext): 16 connections" in front
