"""Schema 3 (data/README.md): any number of runtimes per run, their versions and absent sides in
run.json, the io suite, the rotated invocation order and `compare --suite io` with several
candidates against one baseline."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import load_run
from analysis.bench import rotated
from analysis.errors import DataError
from analysis.load import list_run_folders

from analysis_fakes import REPO, meta_for, rows_for, run_json, write_run

IO_SPEC = [("io_mutex_contended", "tasks=4", 10_000, 120.0), ("io_queue_pingpong", "pairs=1", 10_000, 900.0),
           ("io_spawn", "", 1_000, 4_000.0), ("io_sleep", "d_ms=10", 1_000, 15_000.0)]
SPEED = {"zig.threaded": 2.0, "zio": 0.8, "tokio": 1.0, "ampere": 1.0, "ampere.io": 1.0}


def io_rows(runtime: str, factor: float, seed: int = 0, invocations: int = 3) -> list[list]:
    rng = np.random.default_rng([seed, sorted(SPEED).index(runtime) + 7])
    rows: list[list] = []
    for name, param, ops, ns in IO_SPEC:
        for workers in (1, 2):
            elapsed = [ns * factor * ops * np.exp(rng.normal(0, 0.03, 10)) for _ in range(invocations)]
            rows += rows_for(runtime, "io", 0, name, param, ops, elapsed, workers=workers)
    return rows


def io_meta(runtime: str) -> dict:
    meta = meta_for("ampere" if runtime != "tokio" else "tokio")
    return {**meta, "runtime": runtime, "variant": runtime}


ENTRIES = [{"name": "zig.threaded", "versions": {"compiler_version": "0.16.0"}},
           {"name": "zio", "versions": {"zio_version": "0.17.0"}, "absent": "zio package not in the Zig cache"},
           {"name": "ampere.io", "versions": {}, "absent": "ampere.Io not built yet"},
           {"name": "tokio", "versions": {"tokio_version": "1.48.0", "compiler_version": "1.95.0"}}]


def write_io_run(data: Path, present=("zig.threaded", "tokio"), entries=None, **extra) -> Path:
    info = run_json("20261125T101500Z-lab1", schema_version=3, suites=["io"],
                    runtimes=ENTRIES if entries is None else entries, **extra)
    return write_run(data, run_id="20261125T101500Z-lab1", runtimes=present,
                     rows={rt: io_rows(rt, SPEED[rt]) for rt in present},
                     meta={rt: io_meta(rt) for rt in present}, info=info)


def test_schema3_run_loads_with_versions_and_absent_sides(tmp_path):
    run = load_run(str(write_io_run(tmp_path / "data")))
    assert run.runtimes == ("tokio", "zig.threaded")
    assert run.absent == {"zio": "zio package not in the Zig cache", "ampere.io": "ampere.Io not built yet"}
    assert run.versions["tokio"]["tokio_version"] == "1.48.0" and run.versions["zio"] == {"zio_version": "0.17.0"}
    assert set(run.data["suite"]) == {"io"} and set(run.data["param"]) == {"tasks=4", "pairs=1", "", "d_ms=10"}
    assert run.suite("io").runtimes == run.runtimes and run.suite("micro").runtimes == ()


@pytest.mark.parametrize("entries, present, message", [
    ([{"name": "tokio"}, {"name": "zig.threaded", "absent": "no zig"}], ("zig.threaded", "tokio"),
     "zig.threaded.csv: run.json records zig.threaded absent (no zig), but its CSV exists"),
    ([{"name": "tokio"}, {"name": "zig.threaded"}, {"name": "zio"}], ("zig.threaded", "tokio"),
     "run.json: runtime zio is listed present but the run has no zio.csv"),
    (["tokio", "zig.threaded"], ("zig.threaded", "tokio"),
     'run.json: key "runtimes" must be a list of objects {"name", "versions", "absent"} (schema 3)'),
    ([{"name": "tokio"}, {"name": "tokio"}], ("tokio",), "run.json: runtimes: 'tokio' listed twice"),
    ([{"name": "tokio"}, {"name": "zio", "absent": ""}], ("tokio",), 'run.json: runtimes: zio: "absent" must be a '
                                                                     "non-empty reason"),
])
def test_schema3_runtime_entries_are_checked(tmp_path, entries, present, message):
    folder = write_io_run(tmp_path / "data", present=present, entries=entries)
    with pytest.raises(DataError) as info:
        load_run(str(folder))
    assert str(info.value).endswith(message)


def test_schema2_run_has_no_absent_sides_and_versions_from_meta(tmp_path):
    run = load_run(str(write_run(tmp_path / "data")))
    assert run.absent == {} and run.versions["tokio"]["tokio_version"] == "1.48.0"


def test_every_committed_run_still_loads():
    folders = [f for f in list_run_folders(REPO / "data") if (f / "run.json").is_file()]
    assert folders
    for folder in folders:
        run = load_run(str(folder))
        assert len(run.runtimes) >= 2
        if run.info.get("schema_version", 1) < 3:  # schemas 1 and 2 have no absent sides
            assert run.absent == {} and set(run.versions) == set(run.runtimes)


def test_rotation_puts_every_runtime_first_once_per_len_rounds():
    names = ("ampere", "ampere.io", "zig.threaded", "zio", "tokio")
    orders = [rotated(names, k) for k in range(len(names))]
    assert all(sorted(o) == sorted(names) for o in orders)
    assert sorted(o[0] for o in orders) == sorted(names)
    assert rotated(names, len(names)) == names and rotated((), 3) == ()


def test_compare_suite_io_prints_every_runtime_and_the_absent_ones(tmp_path, cli):
    data = tmp_path / "data"
    write_io_run(data)
    code, out, err = cli("compare", "--data-dir", data, "--suite", "io", "--baseline", "tokio", "--color", "never")
    assert code == 0, err
    assert "zig.threaded" in out and "io_queue_pingpong pairs=1" in out
    assert "zio: absent (zio package not in the Zig cache)" in out
    assert "ampere.io: absent (ampere.Io not built yet)" in out
    code, out, err = cli("compare", "--data-dir", data, "--suite", "io", "--format", "json")
    doc = json.loads(out)
    assert doc["baseline"] == "tokio" and doc["candidates"] == ["zig.threaded"] and set(doc["absent"]) == {"zio", "ampere.io"}
    assert len(doc["comparisons"]) == 1 and doc["comparisons"][0]["candidate"] == "zig.threaded"
    ratios = {b["benchmark"]: b["ratio"] for b in doc["comparisons"][0]["benchmarks"] if b["workers"] == 1}
    assert ratios["io_spawn"] == pytest.approx(0.5, rel=0.05)  # zig.threaded 2x slower than tokio


def test_compare_several_candidates_against_a_chosen_baseline(tmp_path, cli):
    data = tmp_path / "data"
    write_io_run(data, present=("zig.threaded", "zio", "tokio"),
                 entries=[{"name": n} for n in ("zig.threaded", "zio", "tokio")])
    code, out, err = cli("compare", "--data-dir", data, "--baseline", "zig.threaded", "--candidate", "zio,tokio",
                         "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert [c["candidate"] for c in doc["comparisons"]] == ["zio", "tokio"] and doc["baseline"] == "zig.threaded"
    zio = {b["benchmark"]: b["ratio"] for b in doc["comparisons"][0]["benchmarks"] if b["workers"] == 2}
    assert zio["io_sleep"] == pytest.approx(2.5, rel=0.05)
    code, _, err = cli("compare", "--data-dir", data, "--suite", "micro")
    assert code == 2 and "no micro rows" in err
    code, out, err = cli("compare", "--data-dir", data, "--suite", "io", "--candidate", "all", "--format", "csv")
    assert code == 0, err
    frame = pd.read_csv(io.StringIO(out))
    assert list(dict.fromkeys(frame["candidate"])) == ["zig.threaded", "zio"] and set(frame["baseline"]) == {"tokio"}


def test_io_run_records_absent_sides_rotates_and_compares(tmp_path, monkeypatch, cli):
    """The orchestrator on the io suite: absent sides recorded with their reasons (ampere.io
    until ampere.Io exists, zio without its binary), every present runtime once per round in a
    rotating order, and `compare --suite io` on the result."""
    from analysis.bench import BenchOptions, run_bench
    from analysis_fakes import install_fake_bench

    for name in [n for n in __import__("os").environ if n.startswith("FAKE_")]:
        monkeypatch.delenv(name)
    # The gate of a build without ampere's std.Io (it exists now: the gate is on).
    monkeypatch.setattr("analysis.bench.AMPERE_IO_BUILT", False)
    folder = tmp_path / "bin"
    folder.mkdir()
    binaries = {"ampere": install_fake_bench(folder, "ampere"), "tokio": install_fake_bench(folder, "tokio"),
                "zig.threaded": install_fake_bench(folder, "zig.threaded"), "zio": folder / "no_such_io_bench_zio",
                "zio.epoll": folder / "no_such_io_bench_zio_epoll"}
    data = tmp_path / "data"
    options = BenchOptions(suite="io", quick=True, invocations=3, workers=(1, 2), data_dir=str(data),
                           binaries=binaries, warmup=False)
    run_dir = run_bench(options)
    info = json.loads((run_dir / "run.json").read_text())
    assert info["schema_version"] == 3 and info["suites"] == ["io"]
    entries = {e["name"]: e for e in info["runtimes"]}
    assert entries["ampere.io"]["absent"] == "ampere.Io not built yet"
    assert entries["zio"]["absent"] and "absent" not in entries["tokio"] and "absent" not in entries["zig.threaded"]
    assert entries["zio.epoll"]["absent"]
    order = [(o["runtime"], o["invocation"]) for o in info["invocation_order"]]
    present = ("ampere", "zig.threaded", "tokio", "tokio.joinset", "tokio.tracker")
    assert [rt for rt, k in order if k == 0] == list(present)
    assert sorted(order) == sorted((rt, k) for rt in present for k in range(3))
    assert info["bench_commands"]["tokio.tracker"][1:5] == ["--variant", "tokio.tracker", "--suite", "io"]
    assert [rt for rt, k in order if k == 1] != [rt for rt, k in order if k == 0]  # the order rotates
    assert info["bench_commands"]["zig.threaded"][1:5] == ["--variant", "zig.threaded", "--suite", "io"]
    assert info["bench_commands"]["ampere"][1:5] == ["--variant", "ampere", "--suite", "io"]
    run = load_run(str(run_dir))
    assert set(run.absent) == {"ampere.io", "zio", "zio.epoll"}
    assert run.runtimes == ("ampere", "tokio", "tokio.joinset", "tokio.tracker", "zig.threaded")
    assert sorted(run.rows("zig.threaded")["workers"].unique()) == [1, 2]
    native = run.rows("ampere")
    assert set(native["suite"]) == {"io"} and set(native["benchmark"]) == {"io_spawn"}
    code, out, err = cli("compare", str(run_dir), "--suite", "io", "--baseline", "tokio", "--color", "never")
    assert code == 0, err
    assert "io_mutex_contended tasks=4" in out and "ampere.io: absent (ampere.Io not built yet)" in out


def test_io_suite_takes_ampere_native_variants_and_refuses_a_program_without_io_rows(tmp_path, monkeypatch):
    from analysis import bench
    from analysis.bench import BenchOptions, check_suite
    from analysis.errors import AnalysisError

    # ampere_bench has io rows (its native API's): every ampere variant may run --suite io.
    check_suite(BenchOptions(suite="io", quick=True, runtimes=("ampere", "ampere.nospin", "ampere.io", "tokio")))
    # A program without io rows is refused before anything runs (none is today: simulated).
    monkeypatch.setattr(bench, "IO_CAPABLE", ("ampere.io", "zig.threaded", "zio", "tokio"))
    with pytest.raises(AnalysisError, match="ampere.nospin has no io rows"):
        bench.run_bench(BenchOptions(suite="io", quick=True, runtimes=("ampere.nospin", "tokio"), data_dir=str(tmp_path)))
    assert not (tmp_path / "runs").exists()


def test_a_suite_only_one_side_ran_is_left_out_of_their_comparison(tmp_path):
    """A run where Tokio has io rows and ampere's native program none (a run before ampere_bench
    had io rows, or one filtered to other rows): the ampere-vs-tokio comparison is of the suites
    both ran, the io rows go to the io runtimes'."""
    from analysis import compare
    from analysis_fakes import standard_rows

    data = tmp_path / "data"
    rows = {"ampere": standard_rows("ampere"), "tokio": standard_rows("tokio") + io_rows("tokio", 1.0),
            "zig.threaded": io_rows("zig.threaded", 2.0)}
    info = run_json("20261125T101500Z-lab1", schema_version=3, suites=["micro", "echo", "io"],
                    runtimes=[{"name": n} for n in rows])
    folder = write_run(data, run_id="20261125T101500Z-lab1", runtimes=tuple(rows), rows=rows,
                       meta={rt: io_meta(rt) if rt == "zig.threaded" else meta_for(rt) for rt in rows}, info=info)
    run = load_run(str(folder))
    native = compare(run)
    assert "io" not in set(native.benchmarks["suite"]) and native.benchmarks["compared"].all()
    threaded = compare(run, candidate="zig.threaded")
    assert set(threaded.benchmarks["suite"]) == {"io"} and threaded.benchmarks["compared"].all()


def _io_comparisons(tmp_path, present, entries=None, speed=None):
    from analysis import artefact

    global SPEED
    saved = dict(SPEED)
    SPEED.update(speed or {})
    try:
        folder = write_io_run(tmp_path / "data", present=present,
                              entries=entries if entries is not None else [{"name": n} for n in present])
    finally:
        SPEED.clear()
        SPEED.update(saved)
    return artefact.compute(load_run(str(folder)), "tokio", present[0], 0.05, 0.95)


def test_io_matrix_ratio_to_the_fastest_winner_and_sentences(tmp_path):
    from analysis import iosuite

    rc = _io_comparisons(tmp_path, ("zig.threaded", "zio", "tokio"))
    table = iosuite.matrix(iosuite.sides(rc.comparisons), 0.05)
    row = table[(table["benchmark"] == "io_spawn") & (table["workers"] == 1)].set_index("runtime")
    assert set(row["fastest"]) == {"zio"} and row["winner_clear"].all()
    assert row.loc["zio", "ratio_to_fastest"] == 1.0 and np.isnan(row.loc["zio", "ratio_ci_low"])
    assert row.loc["zig.threaded", "ratio_to_fastest"] == pytest.approx(2.5, rel=0.05)  # 2.0 / 0.8
    assert row.loc["tokio", "ratio_ci_low"] < 1.25 < row.loc["tokio", "ratio_ci_high"]
    wide = iosuite.wide(table)
    assert list(wide.columns) == ["benchmark", "workers", "zig.threaded", "zio", "Tokio", "winner"]
    assert set(wide["winner"]) == {"zio"}
    sentences = iosuite.runtime_sentences(table, rc.comparisons, {"ampere.io": "ampere.Io not built yet"}, "tokio")
    assert sentences[0] == "ampere.io: absent from this run — ampere.Io not built yet."
    assert sentences[2].startswith("zio: of 4 io rows, clearly fastest in 4, clearly behind the fastest in 0, "
                                   "not separated from the fastest in 0")
    assert "against Tokio the geometric mean over its 4 like-for-like rows is ×1.25 [" in sentences[2]
    assert "interval over rounds" in sentences[2]
    price = iosuite.straight_line_price(table)
    assert price.empty and iosuite.price_sentence(price, {"ampere.io": "ampere.Io not built yet"}) == (
        "The price of straight-line code (ampere.io ÷ ampere) is not measured: ampere.io is absent from this run "
        "(ampere.Io not built yet).")


def test_io_price_of_straight_line_code_where_both_ran(tmp_path):
    from analysis import iosuite

    rc = _io_comparisons(tmp_path, ("ampere", "ampere.io", "tokio"), speed={"ampere": 1.0, "ampere.io": 1.5})
    price = iosuite.straight_line_price(iosuite.matrix(iosuite.sides(rc.comparisons), 0.05))
    assert len(price) == 8 and price["price"].to_numpy() == pytest.approx(1.5, rel=0.05)
    assert (price["price_ci_low"] < 1.5).all() and (price["price_ci_high"] > 1.5).all()
    assert iosuite.price_sentence(price, {}).startswith("ampere.io ÷ ampere over 8 io rows both ran: geometric mean ×1.5")


def test_io_matrix_plot_is_readable_and_says_when_there_is_nothing(tmp_path):
    from analysis import iosuite
    from analysis.figures import io as figures

    rc = _io_comparisons(tmp_path, ("zig.threaded", "zio", "tokio"))
    table = iosuite.matrix(iosuite.sides(rc.comparisons), 0.05)
    fig = figures.matrix_plot(table, 2, "tokio", 0.95)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["io_mutex_contended tasks=4", "io_queue_pingpong pairs=1",
                                                            "io_spawn", "io_sleep d_ms=10"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["zig.threaded", "zio", "Tokio"]
    assert "ns" in ax.get_xlabel() and "2 worker(s)" in ax.get_title()
    assert {t.get_text() for t in ax.texts} == {"zio"}  # the winner of every row
    empty = figures.matrix_plot(iosuite.matrix(iosuite.sides({}), 0.05), None, "tokio", 0.95)
    assert "no io rows in this run" in [t.get_text() for t in empty.axes[0].texts]


def test_native_ampere_may_lack_the_io_rows_its_api_does_not_have(tmp_path):
    """ampere_bench's io rows are the native API's (schema.NATIVE_IO_BENCHMARKS): without
    io_mutex_contended the run loads; a std.Io side, or the native side without one of its own
    rows, is still one-sided and stops loading."""
    from analysis import schema
    from analysis.errors import DataError

    present = ("ampere", "ampere.io", "tokio")
    entries = [{"name": n} for n in present]

    def write(name, drop):
        rows = {rt: [r for r in io_rows(rt, SPEED[rt]) if (rt, r[4]) not in drop] for rt in present}
        info = run_json("20261125T101500Z-lab1", schema_version=3, suites=["io"], runtimes=entries)
        return write_run(tmp_path / name, run_id="20261125T101500Z-lab1", runtimes=present, rows=rows,
                         meta={rt: io_meta(rt) for rt in present}, info=info)

    assert "io_mutex_contended" not in schema.NATIVE_IO_BENCHMARKS
    run = load_run(str(write("native", {("ampere", "io_mutex_contended")})))
    assert "io_mutex_contended" not in set(run.rows("ampere")["benchmark"])
    assert schema.runs_benchmark("ampere.nospin", "io", "io_spawn") and not schema.runs_benchmark(
        "ampere.nospin", "io", "io_tcp_connect")
    with pytest.raises(DataError, match=r"ampere\.csv: no rows of io benchmark 'io_spawn'"):
        load_run(str(write("own", {("ampere", "io_spawn")})))
    with pytest.raises(DataError, match=r"ampere\.io\.csv: no rows of io benchmark 'io_mutex_contended'"):
        load_run(str(write("stdio", {("ampere.io", "io_mutex_contended")})))


def test_io_run_records_ampere_io_metrics_and_no_other_io_programs(tmp_path, monkeypatch):
    """The ampere.io io program takes --metrics (its odd invocations write
    ampere.io.metrics.jsonl); zig.threaded shares the usage text that lists --metrics but
    records nothing, so it is never asked."""
    from analysis.bench import BenchOptions, run_bench
    from analysis_fakes import install_fake_bench

    for name in [n for n in __import__("os").environ if n.startswith("FAKE_")]:
        monkeypatch.delenv(name)
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("FAKE_LOG", str(tmp_path / "log.txt"))
    binaries = {"ampere": install_fake_bench(folder, "ampere"), "tokio": install_fake_bench(folder, "tokio"),
                "ampere.io": install_fake_bench(folder, "ampere.io", metrics=True),
                "zig.threaded": install_fake_bench(folder, "zig.threaded", metrics=True),
                "zio": folder / "no_such_io_bench_zio", "zio.epoll": folder / "no_such_io_bench_zio_epoll"}
    options = BenchOptions(suite="io", quick=True, invocations=2, workers=(1, 2), data_dir=str(tmp_path / "data"),
                           binaries=binaries, warmup=False)
    run_dir = run_bench(options)
    info = json.loads((run_dir / "run.json").read_text())
    assert info["metrics_files"] == {"ampere": "ampere.metrics.jsonl", "ampere.io": "ampere.io.metrics.jsonl",
                                     "zig.threaded": None, "tokio": None, "tokio.joinset": None,
                                     "tokio.tracker": None}
    commands = (tmp_path / "log.txt").read_text().splitlines()
    assert any("--variant ampere.io" in line and "--metrics" in line for line in commands)
    assert not any("--variant zig.threaded" in line and "--metrics" in line for line in commands)
    run = load_run(str(run_dir))
    io_counts = run.metrics[run.metrics["runtime"] == "ampere.io"]
    assert set(io_counts["suite"]) == {"io"} and set(io_counts["workers"]) == {1, 2}


def test_ampere_io_against_each_zio_build_is_tallied_from_verdicts(tmp_path):
    """artefact.peer_comparisons compares ampere.io with each zio build directly; the tally names
    the build and counts the cells' verdicts (issue 43: no count of point estimates)."""
    from analysis import artefact, iosuite

    rc = _io_comparisons(tmp_path, ("ampere.io", "zio", "tokio"), speed={"ampere.io": 0.5, "zio": 0.8})
    assert list(rc.peers) == ["zio:ampere.io"]  # no zio.epoll in this run
    peer = rc.peers["zio:ampere.io"]
    assert set(peer.benchmarks["suite"]) == {"io"} and (peer.benchmarks["verdict"] == "win").all()
    assert peer.benchmarks["like_for_like"].all()  # the same std.Io program on both sides
    lines = iosuite.peer_sentences(rc.peers)
    n = len(peer.benchmarks)
    assert lines == [f"ampere.io against zio's default build (io_uring), every io cell: {n} wins, 0 losses, 0 ties, "
                     f"0 inconclusive of {n} (1 worker: {n // 2} wins, 0 losses, 0 ties, 0 inconclusive; 2 workers: "
                     f"{n // 2} wins, 0 losses, 0 ties, 0 inconclusive). Each verdict is the cell's paired-median "
                     "interval against the ±5% tie band; an inconclusive cell establishes no order."]
    again = artefact.from_json(__import__("json").loads(artefact.to_json(rc, {})))
    assert list(again.peers) == ["zio:ampere.io"] and iosuite.peer_sentences(again.peers) == lines


def test_allocations_per_row_ratios_only_where_both_are_non_zero_and_peak_rss(tmp_path):
    from analysis import allocations

    rc = _io_comparisons(tmp_path, ("ampere.io", "zio", "tokio"))
    cmp = rc.comparisons["ampere.io"]
    b = cmp.benchmarks
    b.loc[b.index[0], ["baseline_allocs_per_op", "candidate_allocs_per_op"]] = [2.0, 0.5]
    b.loc[b.index[1], ["baseline_allocs_per_op", "candidate_allocs_per_op"]] = [2.0, 0.0]
    table = allocations.io_table(rc.comparisons)
    assert set(table["runtime"]) == {"ampere.io", "zio", "tokio"}
    first = table[(table["label"] == b.iloc[0]["label"]) & (table["runtime"] == "ampere.io")].iloc[0]
    assert first["allocs_ratio"] == 4.0
    second = table[(table["label"] == b.iloc[1]["label"]) & (table["runtime"] == "ampere.io")].iloc[0]
    assert np.isnan(second["allocs_ratio"])  # a ratio to zero is no quantity
    assert table[table["runtime"] == "tokio"]["allocs_ratio"].isna().all()
    assert "÷4 vs Tokio" in " ".join(allocations.io_wide(table).astype(str).values.ravel())
    info = {"invocation_order": [{"runtime": "tokio", "suite": "io", "peak_rss_bytes": 10 << 20},
                                 {"runtime": "tokio", "suite": "io", "peak_rss_bytes": 30 << 20},
                                 {"runtime": "tokio", "suite": "micro", "peak_rss_bytes": 99 << 20}],
            "http": {"invocation_order": [{"runtime": "zio", "peak_rss_bytes": 5 << 20}]}}
    rss = allocations.peak_rss(info, "io")
    assert rss.to_dict("records") == [{"runtime": "tokio", "suite": "io", "processes": 2, "median_bytes": 20 << 20,
                                       "max_bytes": 30 << 20}]
    assert allocations.peak_rss(info, "http")["runtime"].tolist() == ["zio"]
    assert allocations.peak_rss({}, "io").empty
    assert allocations.rss_wide(rss).iloc[0]["peak RSS, largest"] == "30.0 MiB"
