"""The machines page (analysis.machines, analysis.machines_view, analysis.figures.machines and
notebooks/machines.ipynb): one run per machine, their rows side by side, the sweep of every
machine in one figure, and sentences that say plainly which machines are present."""

from __future__ import annotations

import json

import numpy as np
import pytest

from analysis import machines, machines_view, report
from analysis.figures import machines as figures
from report_fakes import micro_only  # noqa: I001 (puts tests/analysis on sys.path)
from analysis_fakes import meta_for, rows_for, run_json, write_run
from test_presentation import all_text, assert_readable, figure_texts

PAGE = "20261125T101500Z-lab1"
BIG = "20261124T090000Z-big64"


def sweep_rows(runtime: str, workers: tuple[int, ...], speed: float = 1.0, seed: int = 0) -> list[list]:
    """micro_only rows plus the Tier 3-4 benchmarks at every count of `workers` (ampere `speed`
    times Tokio's time)."""
    rng = np.random.default_rng([seed, 0 if runtime == "ampere" else 1])
    rows = [r for r in micro_only(runtime, seed=seed) if r[3] not in (3, 4)]
    factor = speed if runtime == "ampere" else 1.0
    for tier, name, ops, base in ((3, "mutex_contended", 10_000, 150.0), (4, "task_spawn", 1_000, 20_000.0)):
        for w in workers:
            elapsed = [base * factor * ops * (1 + 0.1 * w) * np.exp(rng.normal(0, 0.02, 10)) for _ in range(3)]
            rows += rows_for(runtime, "micro", tier, name, "", ops, elapsed, workers=w)
    return rows


def write_machine(data, run_id, host, cores, workers, speed=1.0, cpu="Test CPU", profile="full", **info):
    rows = {rt: sweep_rows(rt, workers, speed) for rt in ("ampere", "tokio")}
    meta = {rt: meta_for(rt, hostname=host, logical_cores=cores, cpu_model=cpu) for rt in ("ampere", "tokio")}
    return write_run(data, run_id, rows=rows, meta=meta,
                     info=run_json(run_id, suites=["micro"], hostname=host, profile=profile,
                                   workers=list(workers), **info))


@pytest.fixture
def two_machines(tmp_path):
    data = tmp_path / "data"
    write_machine(data, "20261120T101500Z-lab1", "lab1", 8, (1, 2, 4))           # older run of lab1
    write_machine(data, PAGE, "lab1", 8, (1, 2, 4))
    write_machine(data, BIG, "big64", 64, (1, 2, 4, 8, 16, 32, 64), speed=0.5)
    return data


def test_one_run_per_machine_fewest_cores_first(two_machines):
    data = machines.machines_data(two_machines, "tokio", "ampere", 0.05, 0.95, page_run_id=PAGE, profile="full")
    m = data.machines
    assert list(m["machine"]) == ["lab1 (8 × Test CPU)", "big64 (64 × Test CPU)"]
    assert list(m["run_id"]) == [PAGE, BIG]
    assert list(m["workers"]) == ["1, 2, 4", "1, 2, 4, 8, 16, 32, 64"]
    assert list(m["other_runs"]) == [1, 0]
    assert list(m["is_page_run"]) == [True, False]
    assert data.left_out.empty


def test_the_page_run_represents_its_machine_even_when_older(two_machines):
    older = "20261120T101500Z-lab1"
    data = machines.machines_data(two_machines, "tokio", "ampere", 0.05, 0.95, page_run_id=older)
    assert older in set(data.machines["run_id"]) and PAGE not in set(data.machines["run_id"])
    newest = machines.machines_data(two_machines, "tokio", "ampere", 0.05, 0.95, page_run_id=None)
    assert PAGE in set(newest.machines["run_id"])


def test_rows_carry_each_machines_ratio_with_interval_and_oversubscription(two_machines):
    data = machines.machines_data(two_machines, "tokio", "ampere", 0.05, 0.95, page_run_id=PAGE)
    rows = machines.swept_rows(data.rows)
    big = rows[(rows["machine"] == "big64 (64 × Test CPU)") & (rows["benchmark"] == "mutex_contended")]
    assert sorted(big["workers"]) == [1, 2, 4, 8, 16, 32, 64]
    assert np.allclose(big["ratio"], 2.0, rtol=0.05)
    assert (big["ratio_ci_low"] < big["ratio"]).all() and (big["ratio"] < big["ratio_ci_high"]).all()
    assert set(big["verdict"]) == {"win"}
    assert not big["oversubscribed"].any()
    small = rows[rows["machine"] == "lab1 (8 × Test CPU)"]
    assert np.allclose(small["ratio"], 1.0, rtol=0.05)
    assert "mutex_contended (w=64)" in set(big["label"])


def test_more_workers_than_cores_is_marked(tmp_path):
    data = tmp_path / "data"
    write_machine(data, PAGE, "lab1", 2, (1, 2, 4))
    rows = machines.swept_rows(machines.machines_data(data, "tokio", "ampere", 0.05, 0.95).rows)
    assert list(rows.sort_values("workers")["oversubscribed"].drop_duplicates()) == [False, True]
    assert set(rows[rows["oversubscribed"]]["workers"]) == {4}


def test_schema_1_rows_get_the_worker_count_the_contract_implies(tmp_path):
    data = tmp_path / "data"
    write_run(data, "20261122T034801Z-old", schema=1,
              meta={rt: meta_for(rt, hostname="old", logical_cores=4) for rt in ("ampere", "tokio")},
              info=run_json("20261122T034801Z-old", hostname="old"))
    data_ = machines.machines_data(data, "tokio", "ampere", 0.05, 0.95)
    rows = data_.rows
    assert set(rows[rows["tier"].isin([3, 4])]["workers"]) == {4}
    assert set(rows[(rows["suite"] == "micro") & (rows["tier"] <= 2)]["workers"]) == {0}
    assert set(rows[rows["suite"] == "echo"]["workers"]) == {1}
    assert "mutex_contended (w=4)" in set(rows["label"])
    assert data_.machines["workers"].iloc[0] == "4"
    assert any("schema-1 run" in line for line in machines_view.machine_sentences(data_))


def test_one_host_name_on_two_cpus_is_two_machines(tmp_path):
    data = tmp_path / "data"
    write_machine(data, "20261120T101500Z-vm", "vm", 2, (1, 2), cpu="AMD EPYC")
    write_machine(data, "20261121T101500Z-vm", "vm", 2, (1, 2), cpu="Intel Xeon")
    result = machines.machines_data(data, "tokio", "ampere", 0.05, 0.95)
    assert len(result.machines) == 2
    assert any("Host name 'vm' is on 2 machines" in line for line in machines_view.machine_sentences(result))


def test_runs_that_cannot_be_used_are_left_out_with_the_reason(two_machines):
    write_machine(two_machines, "20261126T101500Z-quick", "q", 4, (1, 4), profile="quick")
    write_run(two_machines, "20261126T111500Z-tk", runtimes=("tokio",), rows={"tokio": micro_only("tokio")},
              meta={"tokio": meta_for("tokio", hostname="tk")}, info=run_json("20261126T111500Z-tk", hostname="tk"))
    write_run(two_machines, "20261126T121500Z-inc", complete=False)
    data = machines.machines_data(two_machines, "tokio", "ampere", 0.05, 0.95, page_run_id=PAGE, profile="full")
    reasons = dict(zip(data.left_out["run_id"], data.left_out["reason"]))
    assert reasons["20261126T101500Z-quick"] == "profile quick, not full (other sizes)"
    assert reasons["20261126T111500Z-tk"].startswith("no ampere data")
    assert reasons["20261126T121500Z-inc"].startswith("not complete")
    assert len(data.machines) == 2


def test_constants_that_differ_between_machines_are_named(tmp_path):
    data = tmp_path / "data"
    write_machine(data, PAGE, "lab1", 8, (1, 2), constants={"num_workers": 4, "echo_batches": 200})
    write_machine(data, BIG, "big", 16, (1, 2), constants={"num_workers": 4, "echo_batches": 500})
    result = machines.machines_data(data, "tokio", "ampere", 0.05, 0.95)
    assert result.constants_differ == {"echo_batches": {"lab1 (8 × Test CPU)": 200, "big (16 × Test CPU)": 500}}
    assert any("echo_batches" in line for line in machines_view.machine_sentences(result))
    assert machines.differing_constants({"a": {"x": 1}, "b": {"x": 1, "y": 2}}) == {"y": {"a": None, "b": 2}}


def test_choose_runs_prefers_the_page_run_then_the_newest():
    block = {"hostname": "h", "cpu_model": "c", "logical_cores": 4, "arch": "x86_64"}
    items = [{"run_id": f"r{i}", "block": block} for i in range(3)]
    chosen, others = machines.choose_runs(items, "r0")
    assert [c["run_id"] for c in chosen] == ["r0"] and others == {"r0": 2}
    chosen, _ = machines.choose_runs(items, "elsewhere")
    assert [c["run_id"] for c in chosen] == ["r2"]


def test_side_by_side_table_has_a_column_group_per_machine(two_machines):
    data = machines.machines_data(two_machines, "tokio", "ampere", 0.05, 0.95, page_run_id=PAGE)
    table = machines_view.side_by_side(data, "micro")
    groups = list(dict.fromkeys(c[0] for c in table.columns))
    assert groups == ["", "lab1 (8 × Test CPU)", "big64 (64 × Test CPU)"]
    row = table[table[("", "Benchmark")] == "mutex_contended (w=64)"].iloc[0]
    assert row[("lab1 (8 × Test CPU)", "ampere ns/op")] == "not run"
    assert row[("big64 (64 × Test CPU)", "Verdict")] == "win"
    assert row[("big64 (64 × Test CPU)", "Tokio ÷ ampere")].startswith("2.")
    common = machines_view.side_by_side(data, "micro", common_only=True)
    assert "mutex_contended (w=64)" not in set(common[("", "Benchmark")])
    assert "mutex_contended (w=4)" in set(common[("", "Benchmark")])
    assert machines_view.side_by_side(data, "net").empty
    html = machines_view.style_side_by_side(table).to_html()
    assert "color: #" in html


def test_sentences_say_which_machines_are_present(two_machines, tmp_path):
    data = machines.machines_data(two_machines, "tokio", "ampere", 0.05, 0.95, page_run_id=PAGE)
    lines = machines_view.machine_sentences(data)
    assert lines[0].startswith("2 machines in the data folder: lab1 (8 × Test CPU), x86_64, run " + PAGE)
    one = tmp_path / "one"
    write_machine(one, PAGE, "lab1", 8, (1, 2))
    lines = machines_view.machine_sentences(machines.machines_data(one, "tokio", "ampere", 0.05, 0.95))
    assert lines[0].startswith("1 machine in the data folder") and "Only one machine" in lines[1]
    none = machines.machines_data(tmp_path / "empty", "tokio", "ampere", 0.05, 0.95)
    assert machines_view.machine_sentences(none)[0].startswith("No machine")
    assert list(machines_view.machines_table(data)["Logical cores"]) == [8, 64]


def test_scaling_figure_has_one_colour_per_machine_and_both_runtimes(two_machines):
    data = machines.machines_data(two_machines, "tokio", "ampere", 0.05, 0.95, page_run_id=PAGE)
    fig = figures.scaling_by_machine(data)
    texts = assert_readable(fig)
    assert len([ax for ax in fig.axes if ax.get_visible()]) == 2  # mutex_contended, task_spawn
    for label in ("lab1 (8 × Test CPU)", "big64 (64 × Test CPU)", "ampere", "Tokio"):
        assert label in texts["legend"]
    colors = figures.machine_colors(list(data.machines["machine"]))
    ax = fig.axes[0]
    big_lines = [line for line in ax.get_lines() if line.get_color() == colors["big64 (64 × Test CPU)"]
                 and line.get_linestyle() == "-"]
    assert any(len(line.get_xdata()) == 7 for line in big_lines)
    ratio = figures.ratio_by_machine(data, 0.05, 0.95)
    assert "tie band" in " ".join(assert_readable(ratio)["legend"])


def test_figures_without_tier_3_4_rows_say_so(tmp_path):
    data = tmp_path / "data"
    rows = {rt: [r for r in micro_only(rt) if r[3] <= 2] for rt in ("ampere", "tokio")}
    write_run(data, PAGE, rows=rows, info=run_json(PAGE, suites=["micro"]))
    result = machines.machines_data(data, "tokio", "ampere", 0.05, 0.95)
    for fig in (figures.scaling_by_machine(result), figures.ratio_by_machine(result, 0.05, 0.95)):
        assert "no machine has Tier 3-4 rows" in all_text(fig)
        assert figure_texts(fig)["legend"]


def test_the_page_renders_two_machines(two_machines, tmp_path):
    index = report.build_report(PAGE, data_dir=two_machines, out_dir=tmp_path / "reports", notebooks=["machines"],
                                progress=lambda line: None, jobs=1)
    page = (index.parent / "machines.html").read_text(encoding="utf-8")
    assert "2 machines in the data folder" in page
    assert "big64 (64 × Test CPU)" in page and "lab1 (8 × Test CPU)" in page
    assert page.count('src="data:image/png;base64,') == 2
    assert "Traceback" not in page
    assert json.loads((index.parent / "comparison.json").read_text(encoding="utf-8"))["key"]["run_id"] == PAGE


def test_history_keeps_to_the_page_runs_host(two_machines):
    from analysis.history import history_data
    result = history_data(two_machines, "tokio", "ampere", 0.05, 0.95, profile="full", hostname="lab1")
    assert list(result.runs["run_id"]) == ["20261120T101500Z-lab1", PAGE]
    reasons = dict(zip(result.left_out["run_id"], result.left_out["reason"]))
    assert reasons[BIG] == "another machine (host big64): see the machines page"


def test_history_keeps_to_the_page_runs_machine_when_hosts_share_a_name(tmp_path):
    """Two KVM guests both named `vm` are two machines: the identity (host, CPU, cores, arch) tells
    them apart, so the 64-core run is not diffed against the 8-core ones as a regression."""
    from analysis.history import history_data
    data = tmp_path / "data"
    write_machine(data, "20261120T101500Z-vm", "vm", 8, (1, 2, 4))
    write_machine(data, "20261121T101500Z-vm", "vm", 64, (1, 2, 4, 8, 16, 32, 64), speed=0.5)
    write_machine(data, "20261122T101500Z-vm", "vm", 8, (1, 2, 4))
    mine = machines.run_machine(data / "runs" / "20261122T101500Z-vm")
    assert mine == ("vm", "Test CPU", 8, "x86_64")
    result = history_data(data, "tokio", "ampere", 0.05, 0.95, profile="full", hostname="vm", machine=mine)
    assert list(result.runs["run_id"]) == ["20261120T101500Z-vm", "20261122T101500Z-vm"]
    reasons = dict(zip(result.left_out["run_id"], result.left_out["reason"]))
    assert reasons["20261121T101500Z-vm"] == "another machine (vm (64 × Test CPU)): see the machines page"
    by_host = history_data(data, "tokio", "ampere", 0.05, 0.95, profile="full", hostname="vm")
    assert len(by_host.runs) == 3  # the host name alone cannot tell them apart
    assert machines.run_machine(tmp_path / "no-such-run") is None
