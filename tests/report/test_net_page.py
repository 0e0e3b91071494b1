"""The net page's presentation (analysis.figures.net, the net tables and sentences, the net view
of overview.cpu_plot): every runtime of the run with its intervals, readable figures, one
sentence per benchmark and candidate, and a page that says so when the run has no net rows."""

from __future__ import annotations

import re

import numpy as np
import pytest

import analysis
from analysis import artefact, net, tables, words
from analysis.figures import net as figures
from analysis.figures import overview
from analysis.figures.style import ROLE_COLORS
from report_fakes import micro_only  # noqa: I001 (puts tests/analysis on sys.path)
from analysis_fakes import meta_for, run_json, write_run
from net_fakes import net_rows, write_net_run
from test_presentation import all_text, assert_readable


def run_comparisons(data):
    run = analysis.load_run("latest", data_dir=data)
    return artefact.compute(run, "tokio", "ampere", 0.05, 0.95)


@pytest.fixture
def net_run(tmp_path):
    """(RunComparisons, net.sides frame) of a run with ampere, ampere.nospin and tokio net rows."""
    rc = run_comparisons(write_net_run(tmp_path / "net-data").parent.parent)
    return rc, net.sides(rc.comparisons)


@pytest.fixture
def no_net_run(two_runtime_run):
    data, _ = two_runtime_run
    rc = run_comparisons(data)
    return rc, net.sides(rc.comparisons)


def lines_of(ax, color, marker, linestyle):
    return [line for line in ax.get_lines() if line.get_color() == color and line.get_marker() == marker
            and line.get_linestyle() == linestyle]


# -- figures ----------------------------------------------------------------------------------

def test_latency_plot_shows_median_and_p99_of_every_runtime(net_run):
    rc, frame = net_run
    fig = figures.latency_plot(frame, 0.95)
    texts = assert_readable(fig)
    assert texts["titles"] == ["tcp_pingpong (one connection)", "tcp_echo_conns (64 B, n connections)",
                               "tcp_connect (connect, 1 B, close)"]
    assert {"ampere", "ampere.nospin", "Tokio (baseline)", "median (95% CI)"} <= set(texts["legend"])
    assert "µs per round trip (log scale)" in texts["ylabels"] and "µs per connection (log scale)" in texts["ylabels"]
    pingpong, conns, connect = fig.axes[:3]
    assert [t.get_text() for t in pingpong.get_xticklabels()] == ["64 B", "4 KiB", "64 KiB"]
    assert [t.get_text() for t in conns.get_xticklabels()] == ["1", "16", "128"]
    assert [t.get_text() for t in connect.get_xticklabels()] == ["ampere", "ampere.nospin", "Tokio"]
    tokio = frame[(frame["runtime"] == "tokio") & (frame["benchmark"] == "tcp_pingpong")]
    median, = lines_of(pingpong, ROLE_COLORS["baseline"], "o", "-")
    p99, = lines_of(pingpong, ROLE_COLORS["baseline"], "s", "--")
    assert np.allclose(median.get_ydata(), tokio["median_ns_per_op"] / 1e3)
    assert np.allclose(p99.get_ydata(), tokio["p99_ns_per_op"] / 1e3)
    assert pingpong.get_yscale() == "log" and pingpong.get_xscale() == "log"


def test_conns_plot_shows_time_and_ratio_per_connection_count(net_run):
    rc, frame = net_run
    fig = figures.conns_plot(frame, 0.05, 0.95)
    texts = assert_readable(fig)
    assert texts["suptitle"] == "Net: scaling over connections (tcp_echo_conns)"
    assert any("tie band" in t for t in texts["legend"]) and "loss (candidate worse)" in texts["legend"]
    ratio_ax = fig.axes[1]
    assert ratio_ax.get_ylabel() == "Tokio ÷ runtime (×, log scale)"
    points = [(line.get_ydata()[0], line.get_color()) for line in ratio_ax.get_lines()
              if line.get_marker() == "o" and len(line.get_ydata()) == 1]
    ampere = net.conns(frame).query("runtime == 'ampere'")
    nospin = net.conns(frame).query("runtime == 'ampere.nospin'")
    assert sorted(y for y, _ in points) == sorted([*ampere["ratio"], *nospin["ratio"]])
    at_128 = ampere[ampere["value"] == 128].iloc[0]
    assert at_128["verdict"] == "loss"
    assert (at_128["ratio"], tables.VERDICT_COLORS["loss"]) in points  # coloured by its verdict


def test_throughput_plot_has_one_bar_per_runtime(net_run):
    rc, frame = net_run
    fig = figures.throughput_plot(frame, 0.95)
    texts = assert_readable(fig)
    assert "MiB/s" in texts["xlabels"][0] and "more is better" in texts["titles"][0]
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "tcp_stream size=1048576 — ampere", "tcp_stream size=1048576 — ampere.nospin",
        "tcp_stream size=1048576 — Tokio"]
    widths = [patch.get_width() for patch in ax.patches]
    assert widths == pytest.approx(net.throughput(frame)["mib_per_s"].tolist())
    assert any("MiB/s" in t.get_text() for t in ax.texts)


def test_net_figures_without_net_rows_say_so(no_net_run):
    _, frame = no_net_run
    for fig, text in ((figures.latency_plot(frame, 0.95), "no round-trip benchmarks"),
                      (figures.conns_plot(frame, 0.05, 0.95), "no tcp_echo_conns rows in this run"),
                      (figures.throughput_plot(frame, 0.95), "no tcp_stream rows in this run")):
        assert_readable(fig)
        assert text in all_text(fig)


def test_cpu_plot_of_the_net_suite_shows_only_net_rows(net_run):
    rc, _ = net_run
    fig = overview.cpu_plot(rc.primary, suite="net")
    texts = assert_readable(fig)
    assert texts["suptitle"].startswith("Net suite — ampere vs Tokio: wall time against CPU time")
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels[0] == "Net — TCP over loopback" and "tcp_connect" in labels
    assert not any("mutex" in label or "Tier" in label for label in labels)
    assert len(labels) == 1 + 8


# -- tables -----------------------------------------------------------------------------------

def test_latency_table_has_median_p99_ratio_and_verdict_per_runtime(net_run):
    _, frame = net_run
    table = tables.net_latency_table(frame)
    assert len(table) == 7 * 3  # 7 round-trip rows x 3 runtimes
    assert list(table.columns[:6]) == ["Benchmark", "Runtime", "median per op [CI]", "p99 per op [CI]",
                                       "Tokio ÷ runtime [CI]", "Verdict"]
    first = table[table["Benchmark"] == "tcp_pingpong size=64"]
    assert first["Runtime"].tolist() == ["ampere", "ampere.nospin", "Tokio (baseline)"]
    assert first["Verdict"].tolist() == ["win", "tie", ""]
    assert re.fullmatch(r"2\.\d\d\dx \[\d\.\d\d\d, \d\.\d\d\d\]", first["Tokio ÷ runtime [CI]"].iloc[0])
    # 30 values per side: the p99 is the largest and its interval ends there
    assert all(cell.endswith("= max]") for cell in table["p99 per op [CI]"])
    assert re.fullmatch(r"\d+\.\d µs \[\d+\.\d µs, \d+\.\d µs\]", first["median per op [CI]"].iloc[2])
    assert set(table["cores busy"]) == {"0.60"}


def test_throughput_table_in_mib_per_s(net_run):
    _, frame = net_run
    table = tables.net_throughput_table(frame)
    assert table["Runtime"].tolist() == ["ampere", "ampere.nospin", "Tokio (baseline)"]
    ampere = net.throughput(frame).iloc[0]
    assert table["MiB/s [CI]"].iloc[0].startswith(tables.fmt_mib_s(ampere["mib_per_s"]) + " [")
    assert table["Verdict"].tolist() == ["win", "tie", ""]
    assert tables.fmt_mib_s(1907.35) == "1,907 MiB/s" and tables.fmt_mib_s(float("nan")) == "—"


def test_net_tables_of_a_run_without_net_rows_are_empty(no_net_run):
    _, frame = no_net_run
    assert tables.net_latency_table(frame).empty and tables.net_throughput_table(frame).empty


# -- sentences --------------------------------------------------------------------------------

def test_one_sentence_per_benchmark_and_candidate(net_run):
    _, frame = net_run
    lines = words.net_sentences(frame, 0.05, 0.95)
    assert len(lines) == 8 * 2
    assert re.fullmatch(r"tcp_pingpong size=64: ampere is 2\.\d\d× faster than Tokio per round trip "
                        r"\(95% CI 1\.9\d–2\.\d\d×\), a win for ampere; median (9\.\d\d|10\.\d) µs against 20\.\d µs, "
                        r"p99 1\d\.\d µs against 2\d\.\d µs\.", lines[0]), lines[0]
    assert lines[1].startswith("tcp_pingpong size=64: ampere.nospin is 1.0") and "a tie (the interval lies " in lines[1]
    conns = next(line for line in lines if line.startswith("tcp_echo_conns conns=128: ampere is"))
    assert re.match(r"tcp_echo_conns conns=128: ampere is 1\.[45]\d× slower than Tokio per round trip .*, a loss "
                    r"for ampere \(Tokio is faster beyond the ±5% tie band\)", conns), conns
    connect = next(line for line in lines if line.startswith("tcp_connect: ampere.nospin"))
    assert "1.2" in connect and "faster than Tokio per connection" in connect and "a win for ampere.nospin" in connect
    stream = next(line for line in lines if line.startswith("tcp_stream size=1048576: ampere streams"))
    assert re.match(r"tcp_stream size=1048576: ampere streams 1\.2\d× the throughput of Tokio \(95% CI "
                    r"1\.\d\d–1\.\d\d×\), a win for ampere; 2,\d{3} MiB/s against 1,9\d\d MiB/s\.", stream), stream


def test_sentences_when_one_side_lacks_a_benchmark(tmp_path):
    data = tmp_path / "data"
    rows = {"ampere": [r for r in net_rows("ampere") if r[4] != "tcp_connect"],
            "tokio": [r for r in net_rows("tokio") if r[4] != "tcp_stream"]}
    declared = {"tcp_connect": "ampere's side left out", "tcp_stream": "tokio's side left out"}
    write_run(data, rows=rows, info=run_json("20261122T101500Z-lab1", suites=["net"], declared_benchmarks=declared))
    frame = net.sides(run_comparisons(data).comparisons)
    lines = words.net_sentences(frame, 0.05, 0.95)
    assert any(re.fullmatch(r"tcp_connect: only Tokio has data \(median \d+\.\d µs, p99 \d+\.\d µs\); nothing to "
                            r"compare\.", line) for line in lines), lines
    assert "tcp_stream size=1048576: ampere is not compared with Tokio (not compared: no tokio data for this " \
           "benchmark)." in lines
    assert len(lines) == 8


def test_conns_sentence_names_every_runtime_and_verdict(net_run):
    _, frame = net_run
    sentence = words.conns_sentence(net.conns(frame))
    assert re.fullmatch(r"tcp_echo_conns, 1 → 128 connections: ampere 16\.\d µs → 9\.\d\d µs per round trip "
                        r"\(1\.\d\d× less\); ampere\.nospin (19|2\d)\.\d µs → 6\.\d\d µs per round trip \(3\.\d\d× less\); "
                        r"Tokio 2\d\.\d µs → 6\.\d\d µs per round trip \(3\.\d\d× less\)\. ampere against Tokio: "
                        r"win at 1, tie at 16, loss at 128; ampere\.nospin against Tokio: tie at 1, tie at 16, "
                        r"tie at 128\.", sentence), sentence


def test_setup_and_missing_sentences(net_run, no_net_run, tmp_path):
    rc, _ = net_run
    setup = words.net_setup_sentence(rc.constants, rc.info)
    assert "tcp_pingpong does 200 round trips on one connection" in setup
    assert "tcp_connect 20 connections; tcp_stream writes 2 MiB" in setup
    assert "30 values (10 measured iterations × 3 invocations)" in setup
    rc, _ = no_net_run
    assert words.net_missing_sentence(rc).startswith(
        f"Run {rc.run_id} has no net rows (its suites: micro, echo), so this page has nothing to show")
    data = tmp_path / "old"
    write_run(data, rows={rt: micro_only(rt) for rt in ("ampere", "tokio")}, schema=1,
              meta={rt: meta_for(rt) for rt in ("ampere", "tokio")},
              info=run_json("20261122T101500Z-lab1", suites=["micro"]))
    old = run_comparisons(data)
    assert "(its suites: micro) (a schema-1 run: it predates the net suite)" in words.net_missing_sentence(old)
