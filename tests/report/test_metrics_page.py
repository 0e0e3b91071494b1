"""The scaling page's runtime metrics section: table and figure from `<variant>.metrics.jsonl`."""

from __future__ import annotations

import io
import json
import warnings
from pathlib import Path

from matplotlib.figure import Figure

import analysis
from analysis import metrics, tables
from analysis.figures import scaling
from report_fakes import micro_only  # noqa: I001 (puts tests/analysis on sys.path)
from analysis_fakes import rows_for, write_run

COUNTERS = ("polls", "lifo_hits", "parks", "unparks_issued", "steals", "tasks_stolen", "inject_pushes", "inject_pops",
            "budget_yields", "spin_ns", "blockon_parks")


def line(variant: str, invocation: int, benchmark: str, tier: int, workers: int, parks_per_op: float,
         suite: str = "micro", param: str = "") -> str:
    iterations, ops = 10, 100
    per_worker = []
    for w in range(workers):
        counts = {c: 0 for c in COUNTERS}
        counts["polls"] = iterations * ops // workers
        counts["parks"] = int(parks_per_op * iterations * ops) if w == 0 else 0
        counts["spin_ns"] = 1000 * workers if w == 0 else 0
        per_worker.append(counts)
    external = {c: 0 for c in COUNTERS}
    total = {c: sum(p[c] for p in per_worker) for c in COUNTERS}
    return json.dumps({"runtime": variant, "invocation": invocation, "benchmark": benchmark, "param": param,
                       "suite": suite, "tier": tier, "workers": workers, "iterations": iterations, "ops": ops,
                       "per_worker": per_worker, "external": external, "total": total}) + "\n"


def swept_run(tmp_path: Path) -> Path:
    """ampere, ampere.nospin and Tokio at 1 and 2 workers, with metrics files for the ampere variants."""
    data = tmp_path / "data"
    rows = {}
    for rt in ("ampere", "ampere.nospin", "tokio"):
        base = [r for r in micro_only("tokio" if rt == "tokio" else "ampere") if r[3] < 3]
        for r in base:
            r[0] = rt
        for workers in (1, 2):
            base += rows_for(rt, "micro", 4, "task_spawn", "", 1000, [[20_000_000.0] * 10] * 3, workers=workers)
            base += rows_for(rt, "micro", 3, "mutex_contended", "", 10_000, [[1_500_000.0] * 10] * 3, workers=workers)
        rows[rt] = base
    folder = write_run(data, runtimes=("ampere", "ampere.nospin", "tokio"), rows=rows)
    for rt in ("ampere", "ampere.nospin"):
        text = "".join(line(rt, k, b, t, w, 0.5 * w if rt == "ampere" else 0.25)
                       for k in range(3) for b, t in (("mutex_contended", 3), ("task_spawn", 4)) for w in (1, 2))
        text += line(rt, 0, "echo_f64", 0, 1, 1.0, suite="echo", param="n=1")  # not a Tier 3–4 row
        (folder / f"{rt}.metrics.jsonl").write_text(text)
    return folder


def render(fig: Figure) -> None:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig.savefig(buffer, format="png")
    assert buffer.getvalue().startswith(b"\x89PNG")


def test_metrics_table_per_benchmark_worker_count_and_variant(tmp_path):
    run = analysis.load_run(swept_run(tmp_path))
    table = tables.runtime_metrics_table(metrics.per_op(run.metrics))
    assert list(table.columns) == ["Benchmark", "Workers", "Variant", "polls/op", "LIFO hits/op", "parks/op",
                                   "unparks issued/op", "steals/op", "tasks stolen/op", "inject pushes/op",
                                   "inject pops/op", "budget yields/op", "spin ns/op"]
    # Tier 3 before Tier 4, by worker count, ampere before ampere.nospin; echo left out
    assert table[["Benchmark", "Workers", "Variant"]].values.tolist() == [
        ["mutex_contended", 1, "ampere"], ["mutex_contended", 1, "ampere.nospin"],
        ["mutex_contended", 2, "ampere"], ["mutex_contended", 2, "ampere.nospin"],
        ["task_spawn", 1, "ampere"], ["task_spawn", 1, "ampere.nospin"],
        ["task_spawn", 2, "ampere"], ["task_spawn", 2, "ampere.nospin"]]
    assert table["parks/op"].tolist()[:4] == ["0.5", "0.25", "1", "0.25"]
    assert table["polls/op"].tolist()[0] == "1" and table["steals/op"].tolist()[0] == "0"
    assert table["spin ns/op"].tolist()[2] == "2"  # 2000 ns per invocation over 1000 operations


def test_metrics_figure_one_panel_per_benchmark(tmp_path):
    run = analysis.load_run(swept_run(tmp_path))
    fig = scaling.runtime_metrics_grid(metrics.per_op(run.metrics))
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in visible] == ["mutex_contended", "task_spawn"]
    assert all(ax.get_ylabel() == "events per operation" and "worker threads" in ax.get_xlabel() for ax in visible)
    legend = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    assert {"parks", "unparks issued", "steals", "ampere", "ampere.nospin"} <= set(legend)
    parks = [ln for ln in visible[0].get_lines() if ln.get_color() == "#1f77b4"]  # the parks colour
    assert [list(ln.get_ydata()) for ln in parks] == [[0.5, 1.0], [0.25, 0.25]]
    render(fig)


def test_a_run_without_metrics_files_says_so(two_runtime_run):
    data, run_id = two_runtime_run
    run = analysis.load_run(run_id, data_dir=data)
    counts = metrics.per_op(run.metrics)
    assert tables.runtime_metrics_table(counts).empty
    fig = scaling.runtime_metrics_grid(counts)
    assert "no runtime metrics in this run" in "\n".join(t.get_text() for ax in fig.axes for t in ax.texts)
    render(fig)


def test_the_reference_run_renders_without_metrics():
    reference = Path(__file__).resolve().parents[2] / "data" / "runs" / "20261122T034801Z-vm"
    counts = metrics.per_op(metrics.read_run_metrics(reference, None))
    assert counts.empty and tables.runtime_metrics_table(counts).empty
