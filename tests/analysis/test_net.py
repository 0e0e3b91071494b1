"""The p99 of ns/op per side (benchmarks.describe_p99) and analysis.net: the net rows of every
comparison of a run as one frame, with MiB/s for tcp_stream."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as st

from analysis import artefact, compare, load_run, net
from analysis_fakes import rows_for, run_json, write_run
from net_fakes import NET_SPEC, write_net_run


def one_benchmark_run(tmp_path, values_ns: dict[str, list[list[float]]], ops: int = 100):
    """A run of one net benchmark whose ns/op per runtime and invocation are `values_ns`."""
    rows = {rt: rows_for(rt, "net", 0, "tcp_pingpong", "size=64", ops, [[v * ops for v in inv] for inv in invs])
            for rt, invs in values_ns.items()}
    write_run(tmp_path / "data", rows=rows, info=run_json("20261122T101500Z-lab1", suites=["net"]))
    return load_run("latest", data_dir=tmp_path / "data")


def test_p99_per_op_is_the_observed_quantile_with_the_order_statistic_interval(tmp_path):
    rng = np.random.default_rng(7)
    tokio = rng.permutation(np.arange(1, 1001) * 1000.0)  # ns/op 1,000 ... 1,000,000 in random order
    run = one_benchmark_run(tmp_path, {"tokio": [list(tokio)], "ampere": [list(tokio / 2)]})
    cmp = compare(run)
    sides = cmp.runtimes.set_index("runtime")
    # inverted CDF: x_(ceil(0.99 n)) = the 990th smallest of 1,000
    assert sides.loc["tokio", "p99_ns_per_op"] == 990_000.0
    assert sides.loc["ampere", "p99_ns_per_op"] == 495_000.0
    expected = st.quantile_test(np.sort(tokio), q=990_000.0, p=0.99).confidence_interval(0.95)
    assert (sides.loc["tokio", "p99_ci_low"], sides.loc["tokio", "p99_ci_high"]) == (expected.low, expected.high)
    assert sides.loc["tokio", "p99_ci_low"] < 990_000.0 < sides.loc["tokio", "p99_ci_high"] < 1_000_000.0
    assert not sides.loc["tokio", "p99_ci_widest"]
    row = cmp.benchmarks.iloc[0]
    assert row["p99_per_op_ratio"] == 2.0  # baseline / candidate, > 1: the candidate's p99 is lower
    assert (row["baseline_p99_ns_per_op"], row["candidate_p99_ns_per_op"]) == (990_000.0, 495_000.0)


def test_p99_of_few_iterations_is_the_maximum_and_flagged(tmp_path):
    values = [[10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 40.0], [10.5, 11.5, 12.5, 13.5, 14.5, 15.5,
                                                                               16.5, 17.5, 18.5, 19.5]]
    run = one_benchmark_run(tmp_path, {"tokio": values, "ampere": values})
    side = compare(run).runtimes.set_index("runtime").loc["tokio"]
    assert side["p99_ns_per_op"] == 40.0 and side["p99_ci_high"] == 40.0
    assert side["p99_ci_widest"]
    assert side["p99_ci_low"] == 19.5  # rank 19 of 20: binom(20, 0.99).ppf(0.025) = 19
    assert side["median_ns_per_op"] < 20.0


def test_sides_has_every_runtime_of_every_net_row_candidates_first(tmp_path):
    run = load_run(write_net_run(tmp_path / "data"))
    rc = artefact.compute(run, "tokio", "ampere", 0.05, 0.95)
    frame = net.sides(rc.comparisons)
    assert list(frame.columns) == net.COLUMNS
    labels = [f"{b} {p}" if p else b for b, p, _, _ in NET_SPEC]
    assert list(dict.fromkeys(frame["label"])) == labels  # suite order, params by value
    for _, rows in frame.groupby("label", sort=False):
        assert rows["runtime"].tolist() == ["ampere", "ampere.nospin", "tokio"]
        assert rows["role"].tolist() == ["candidate", "candidate", "baseline"]
    assert set(frame["against"]) == {"tokio"} and set(frame["workers"]) == {4}
    indexed = frame.set_index(["label", "runtime"])
    for name, cmp in rc.comparisons.items():
        pairs = cmp.benchmarks[cmp.benchmarks["suite"] == "net"].set_index("label")
        for label in labels:
            assert indexed.loc[(label, name), "ratio"] == pairs.loc[label, "ratio"]
            assert indexed.loc[(label, name), "verdict"] == pairs.loc[label, "verdict"]
            assert indexed.loc[(label, name), "p99_ns_per_op"] == pairs.loc[label, "candidate_p99_ns_per_op"]
            assert indexed.loc[(label, "tokio"), "median_ns_per_op"] == pairs.loc[label, "baseline_median_ns_per_op"]
    tokio = frame[frame["runtime"] == "tokio"]
    assert tokio["ratio"].isna().all() and tokio["verdict"].isna().all()
    assert indexed.loc[("tcp_pingpong size=64", "ampere"), "verdict"] == "win"
    assert indexed.loc[("tcp_echo_conns conns=128", "ampere"), "verdict"] == "loss"
    assert indexed.loc[("tcp_connect", "ampere.nospin"), "verdict"] == "win"
    assert indexed.loc[("tcp_connect", "ampere.nospin"), "ratio"] == pytest.approx(1.25, rel=0.03)
    assert indexed.loc[("tcp_connect", "tokio"), "cores_busy"] == pytest.approx(0.6, abs=0.01)
    assert net.has_net(rc.comparisons)
    assert net.conns(frame)["value"].tolist() == [1, 16, 128] * 3
    assert set(net.latency(frame)["benchmark"]) == {"tcp_pingpong", "tcp_echo_conns", "tcp_connect"}


def test_tcp_stream_throughput_is_the_time_per_byte_turned_over(tmp_path):
    run = load_run(write_net_run(tmp_path / "data", variants=False))
    frame = net.sides(artefact.compute(run, "tokio", "ampere", 0.05, 0.95).comparisons)
    stream = net.throughput(frame).set_index("runtime")
    assert list(stream.index) == ["ampere", "tokio"]
    for rt, row in stream.iterrows():
        assert row["mib_per_s"] == pytest.approx(1e9 / (row["median_ns_per_op"] * 2**20), rel=1e-12)
        assert row["mib_per_s_ci_low"] == pytest.approx(1e9 / (row["ci_high"] * 2**20), rel=1e-12)
        assert row["mib_per_s_ci_high"] == pytest.approx(1e9 / (row["ci_low"] * 2**20), rel=1e-12)
        assert row["mib_per_s_ci_low"] < row["mib_per_s"] < row["mib_per_s_ci_high"]
    assert stream.loc["tokio", "mib_per_s"] == pytest.approx(1e9 / (0.5 * 2**20), rel=0.03)  # 0.5 ns per byte
    # the throughput ratio ampere / Tokio is the time ratio Tokio / ampere
    assert stream.loc["ampere", "mib_per_s"] / stream.loc["tokio", "mib_per_s"] == pytest.approx(
        stream.loc["ampere", "ratio"], rel=1e-9)
    assert net.latency(frame)["mib_per_s"].isna().all()


def test_mib_per_s_of_nothing_is_nan():
    assert net.mib_per_s(1.0) == pytest.approx(953.674, rel=1e-6)
    for value in (0, -1.0, math.nan, math.inf, None, "x"):
        assert math.isnan(net.mib_per_s(value))


def test_a_run_without_net_rows_gives_an_empty_frame(data_dir):
    rc = artefact.compute(load_run("latest", data_dir=data_dir), "tokio", "ampere", 0.05, 0.95)
    frame = net.sides(rc.comparisons)
    assert frame.empty and list(frame.columns) == net.COLUMNS
    assert not net.has_net(rc.comparisons)


def test_p99_columns_survive_the_cached_comparison(tmp_path):
    run = load_run(write_net_run(tmp_path / "data", variants=False))
    computed = net.sides(artefact.comparisons(run, tmp_path / "reports").comparisons)
    read_back = net.sides(artefact.comparisons(load_run(run.path), tmp_path / "reports").comparisons)
    columns = ["p99_ns_per_op", "p99_ci_low", "p99_ci_high", "p99_per_op_ratio", "mib_per_s"]
    assert np.array_equal(computed[columns].to_numpy(dtype=float), read_back[columns].to_numpy(dtype=float),
                          equal_nan=True)
    assert computed["p99_ci_widest"].tolist() == read_back["p99_ci_widest"].tolist()
