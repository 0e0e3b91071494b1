"""The presentation layer (analysis.figures, analysis.words, analysis.tables): every figure has a
title, labelled axes with units and a legend; edge cases (one runtime, no echo rows, one run in
the history, no worker sweep, no CPU time) give a figure that says so; sentences and tables say
what the analysis computed."""

from __future__ import annotations

import io
import math
import re
import warnings

import numpy as np
import pytest
from matplotlib.figure import Figure

import analysis
from analysis import artefact, fmt, history, notebook, tables, words
from analysis.figures import distributions, echo, overview, scaling
from analysis.figures import history as history_figures
from analysis.figures.style import TWIN_LABEL
from report_fakes import micro_only  # noqa: I001 (puts tests/analysis on sys.path)
from analysis_fakes import run_json, write_run

UNIT_WORDS = ("ns", "µs", "ms", "B/op", "×", "bytes", "index", "share", "round trips", "date")


def comparison(data, run_id="latest", **kw):
    run = analysis.load_run(run_id, data_dir=data)
    return run, analysis.compare(run, **kw)


def figure_texts(fig: Figure) -> dict:
    """Titles, axis labels and legend texts of a figure (what a reader sees)."""
    visible = [ax for ax in fig.axes if ax.get_visible() and ax.get_label() != TWIN_LABEL]
    legends = [t.get_text() for ax in visible if ax.get_legend() for t in ax.get_legend().get_texts()]
    legends += [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    return {"suptitle": fig.get_suptitle(), "titles": [ax.get_title() for ax in visible],
            "xlabels": [ax.get_xlabel() for ax in visible], "ylabels": [ax.get_ylabel() for ax in visible],
            "legend": legends}


def render(fig: Figure) -> bytes:
    """Draw the figure to PNG; any matplotlib warning (e.g. a collapsed layout) fails the test."""
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig.savefig(buffer, format="png")
    data = buffer.getvalue()
    assert data.startswith(b"\x89PNG") and len(data) > 1000
    return data


def assert_readable(fig: Figure) -> dict:
    """Title, axis labels with a unit word, and a legend — on every visible plot of the figure."""
    texts = figure_texts(fig)
    assert texts["suptitle"] or all(texts["titles"]), texts
    assert texts["titles"] and all(t.strip() for t in texts["titles"]), texts
    visible = [ax for ax in fig.axes if ax.get_visible() and ax.get_label() != TWIN_LABEL]
    for ax, label in zip(visible, texts["ylabels"]):
        shares_rows = len(ax.get_shared_y_axes().get_siblings(ax)) > 1 and ax is not visible[0]
        assert label.strip() or shares_rows, texts  # a panel beside another shows the same rows
    for label in texts["xlabels"]:
        assert label.strip(), texts
    assert any(any(word in label for word in UNIT_WORDS) for label in texts["xlabels"] + texts["ylabels"]), texts
    assert texts["legend"], texts
    render(fig)
    return texts


def all_text(fig: Figure) -> str:
    parts = [t.get_text() for ax in fig.axes for t in ax.texts]
    parts += [t.get_text() for ax in fig.axes for t in ax.get_yticklabels()]
    return "\n".join(parts)


# -- overview figures -------------------------------------------------------------------------

def test_forest_plot_groups_tiers_controls_first_and_colours_verdicts(two_runtime_run):
    data, _ = two_runtime_run
    _, cmp = comparison(data)
    fig = overview.forest_plot(cmp)
    texts = assert_readable(fig)
    assert "confidence intervals" in texts["titles"][0] and cmp.run_id in texts["titles"][0]
    assert "log scale" in texts["xlabels"][0] and "ampere faster" in texts["xlabels"][0]
    assert any("tie band" in t for t in texts["legend"])
    assert {"win (candidate better)", "loss (candidate worse)"} <= set(texts["legend"])
    # oneshot, and echo_f64 in a run from before the owned oneshot, are not like for like (fairness table)
    assert any("not like for like" in t for t in texts["legend"])
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[:3] == ["Tier 0 — controls (must tie)", "floor_cas_store", "floor_fetch_add"]
    tiers = [labels.index(t) for t in ("Tier 1 — sync fast path", "Tier 2 — channel fast path",
                                       "Tier 3 — async, contended", "Tier 4 — task scheduling", "Echo — echo_f64")]
    assert tiers == sorted(tiers)
    # the right-hand column states each ratio with its interval and verdict, in the verdict colour
    right = [t for t in fig.axes[1].get_yticklabels()]
    mutex = cmp.benchmarks.set_index("label").loc["mutex"]
    line = next(t for t in right if t.get_text().startswith(f"{mutex['ratio']:.3f}×"))
    assert mutex["verdict"] == "win" and line.get_text().endswith("win")
    assert line.get_color() == tables.VERDICT_COLORS["win"]
    assert ax.get_xscale() == "log"
    low, high = ax.get_xlim()
    assert low < 1 / 1.05 and high > cmp.benchmarks["ratio_ci_high"].max()


def test_forest_plot_of_a_one_runtime_run_says_so(tokio_only_run):
    data, _ = tokio_only_run
    _, cmp = comparison(data)
    fig = overview.forest_plot(cmp)
    assert_readable(fig)
    text = all_text(fig)
    assert "only one runtime in this run" in text
    assert "not compared" in text


def test_alloc_plot_writes_zero_out_and_labels_values(two_runtime_run):
    data, _ = two_runtime_run
    _, cmp = comparison(data)
    fig = overview.alloc_plot(cmp)
    texts = assert_readable(fig)
    assert "B/op" in texts["xlabels"][0] and "log scale" in texts["xlabels"][0]
    assert set(texts["legend"]) == {"ampere", "Tokio"}
    text = all_text(fig)
    # controls allocate nothing on both sides: written out, twice per control
    assert text.count("0 B/op (no allocation)") >= 4
    assert "64" in text and "128" in text  # Tokio oncecell_set 64 B/op, task_spawn 128 B/op
    assert fig.axes[0].get_xscale() == "log"


def test_alloc_plot_of_a_one_runtime_run_marks_the_missing_side(tokio_only_run):
    data, _ = tokio_only_run
    _, cmp = comparison(data)
    fig = overview.alloc_plot(cmp)
    assert_readable(fig)
    assert "no ampere data" in all_text(fig)


# -- distributions ----------------------------------------------------------------------------

@pytest.mark.parametrize("builder", [distributions.ecdf_grid, distributions.run_sequence_grid])
def test_small_multiples_one_panel_per_benchmark(two_runtime_run, builder):
    data, _ = two_runtime_run
    run, cmp = comparison(data)
    groups = tables.groups(distributions.benchmark_rows(run))
    assert [title for title, _ in tables.groups(cmp.benchmarks)] == [title for title, _ in groups]
    assert [title for title, _ in groups] == ["Tier 0 — controls (must tie)", "Tier 1 — sync fast path",
                                              "Tier 2 — channel fast path", "Tier 3 — async, contended",
                                              "Tier 4 — task scheduling", "Echo — echo_f64"]
    title, rows = groups[1]
    fig = builder(run, title, rows, "tokio", "ampere")
    texts = assert_readable(fig)
    assert title in texts["suptitle"]
    assert texts["titles"] == list(rows["label"])
    assert {"ampere", "Tokio"} <= set(texts["legend"])
    if builder is distributions.run_sequence_grid:
        assert "next invocation" in texts["legend"]
        # one line per runtime with every measured iteration of its 3 invocations, in order
        lines = [line for line in fig.axes[0].get_lines() if len(line.get_xdata()) > 2]
        assert len(lines) == 2 and all(len(line.get_xdata()) == 30 for line in lines)


def test_small_multiples_of_a_one_runtime_run(tokio_only_run):
    data, _ = tokio_only_run
    run = analysis.load_run("latest", data_dir=data)
    title, rows = tables.groups(distributions.benchmark_rows(run))[0]
    for builder in (distributions.ecdf_grid, distributions.run_sequence_grid):
        texts = assert_readable(builder(run, title, rows))
        assert "Tokio" in texts["legend"] and "ampere" not in texts["legend"]


def test_time_unit_and_bytes():
    assert fmt.time_unit([5.0, 900.0]) == (1.0, "ns")
    assert fmt.time_unit([1500.0]) == (1e3, "µs")
    assert fmt.time_unit([2.5e6, math.nan]) == (1e6, "ms")
    assert [fmt.fmt_bytes(v) for v in (8, 1024, 4096, 1 << 20)] == ["8 B", "1 KiB", "4 KiB", "1 MiB"]


# -- echo -------------------------------------------------------------------------------------

def test_echo_batch_plot_and_table(two_runtime_run):
    data, _ = two_runtime_run
    _, cmp = comparison(data)
    assert echo.has_echo(cmp)
    fig = echo.echo_batch_plot(cmp, payload_bytes=4096)
    texts = assert_readable(fig)
    assert texts["titles"] == ["echo_f64: f64 (an 8-byte number)"]
    assert "batch size n" in texts["xlabels"][0] and "µs" in texts["ylabels"][0]
    assert {"ampere avg (with 95% CI)", "Tokio p99 (with 95% CI)"} <= set(texts["legend"])
    table = tables.echo_ratio_table(cmp)
    assert list(table["Param"]) == ["n=1", "n=10"]
    assert table.columns[-3] == "avg ratio Tokio/ampere [CI]"
    assert all(cell.endswith("]") for cell in table["avg ratio Tokio/ampere [CI]"])


def test_echo_figures_without_echo_rows_say_so(tmp_path):
    data = tmp_path / "data"
    write_run(data, rows={rt: micro_only(rt) for rt in ("ampere", "tokio")},
              info=run_json("20261122T101500Z-lab1", suites=["micro"]))
    _, cmp = comparison(data)
    assert not echo.has_echo(cmp)
    assert tables.echo_ratio_table(cmp).empty
    batch = echo.echo_batch_plot(cmp)
    assert_readable(batch)
    assert "no echo batch benchmarks" in all_text(batch)
    sweep = echo.echo_sweep_plot(cmp, "echo_bytes_sweep", batch_n=100)
    assert_readable(sweep)
    assert "no echo_bytes_sweep rows" in all_text(sweep)


def test_echo_sweep_plot_log_log_with_reference(tmp_path):
    from analysis_fakes import rows_for, standard_rows

    data = tmp_path / "data"
    rows = {}
    for rt, factor in (("ampere", 0.8), ("tokio", 1.0)):
        extra = []
        for name, sizes in (("echo_bytes_sweep", (8, 16, 32, 64)), ("echo_shared_sweep", (8, 16, 32))):
            for size in sizes:
                extra += rows_for(rt, "echo", 0, name, f"size={size}", 100,
                                  [[80_000 * factor + 10 * size + i for i in range(8)] for _ in range(2)])
        rows[rt] = standard_rows(rt) + extra
    write_run(data, rows=rows)
    _, cmp = comparison(data)
    fig = echo.echo_sweep_plot(cmp, "echo_shared_sweep", batch_n=100, reference="echo_bytes_sweep")
    texts = assert_readable(fig)
    assert "batch n = 100" in texts["titles"][0]
    assert "payload size (bytes" in texts["xlabels"][0]
    assert "Tokio avg, echo_bytes_sweep (copy path)" in texts["legend"]
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["8 B", "16 B", "32 B"]


# -- CPU time, variants, like for like, scaling --------------------------------------------------

def spinning_run(tmp_path, schema=2, tokio_only_row=False):
    """ampere 2x faster in wall time on mutex but with 3x the CPU per op; schema 2: a sweep of
    task_spawn over 1 and 2 workers (ampere 1.43x faster at 2); `tokio_only_row`: io_spawn on
    both and a sweep of io_mutex_contended that only Tokio ran (ampere's native API has no such row)."""
    from analysis_fakes import rows_for, standard_rows

    rng = np.random.default_rng(5)
    rows = {}
    for rt in ("ampere", "tokio"):
        wall = 0.5 if rt == "ampere" else 1.0
        r = [row for row in standard_rows(rt) if row[4] not in ("mutex", "task_spawn")]
        r += rows_for(rt, "micro", 1, "mutex", "", 1000, [12_000 * wall * np.exp(rng.normal(0, 0.02, 10)) for _ in range(3)],
                      cpu_share=3.0 if rt == "ampere" else 0.5)
        for workers, speed in ((1, 1.0), (2, 0.7 if rt == "ampere" else 1.0)) if schema == 2 else ():
            r += rows_for(rt, "micro", 4, "task_spawn", "", 1000,
                          [20_000_000 * speed * np.exp(rng.normal(0, 0.02, 10)) for _ in range(3)], workers=workers,
                          cpu_share=1.5)
        for workers in (1, 2) if tokio_only_row else ():
            r += rows_for(rt, "io", 0, "io_spawn", "", 1000,
                          [90_000 * np.exp(rng.normal(0, 0.02, 10)) for _ in range(3)], workers=workers)
            if rt == "tokio":  # an io row ampere's native API does not run
                r += rows_for(rt, "io", 0, "io_mutex_contended", "tasks=4", 1000,
                              [9_000 * np.exp(rng.normal(0, 0.02, 10)) for _ in range(3)], workers=workers)
        rows[rt] = r
    data = tmp_path / "data"
    write_run(data, rows=rows, schema=schema)
    return data


def test_cpu_plot_sets_wall_against_cpu_and_the_words_name_the_costly_win(tmp_path):
    _, cmp = comparison(spinning_run(tmp_path))
    fig = overview.cpu_plot(cmp)
    texts = assert_readable(fig)
    assert texts["titles"] == ["wall time: Tokio ÷ ampere of ns/op", "CPU time: Tokio ÷ ampere of CPU ns/op"]
    assert "wall time against CPU time" in texts["suptitle"]
    lines = words.cpu_sentences(cmp)
    costly = next(line for line in lines if "cost more CPU per operation than Tokio spends" in line)
    assert costly.startswith("1 wall-time win(s) of ampere") and "mutex (ampere 2.0" in costly
    assert "cores busy 3.00 vs 0.50" in costly
    table = tables.cpu_table(cmp)
    mutex = table.set_index("Benchmark").loc["mutex"]
    assert mutex["Verdict"] == "win" and mutex["CPU verdict"] == "loss" and re.search(r"costs (2\.9\d|3\.0\d)× the CPU of Tokio", mutex["Note"])
    assert any("costs more CPU" not in line and "CPU time per operation" in line for line in words.headline_sentences(cmp))


def test_a_schema_1_run_says_cpu_time_was_not_recorded(tmp_path):
    _, cmp = comparison(spinning_run(tmp_path, schema=1))
    fig = overview.cpu_plot(cmp)
    assert_readable(fig)
    assert "CPU time not recorded in this run (schema 1)" in all_text(fig)
    assert words.cpu_sentences(cmp)[0].startswith("CPU time per operation was not recorded in this run (schema 1)")
    header, _ = analysis.render(cmp, "table"), None
    assert "CPU time: not recorded in this run" in header and "CPU ratio" not in header


def test_forest_plot_marks_rows_that_are_not_like_for_like(two_runtime_run, monkeypatch):
    from analysis import fairness

    data, _ = two_runtime_run
    monkeypatch.setattr(fairness, "like_for_like", lambda name, readme=None: name != "oneshot")
    _, cmp = comparison(data)
    fig = overview.forest_plot(cmp)
    texts = assert_readable(fig)
    assert "≠ not like for like: the two sides' semantics differ (fairness table)" in texts["legend"]
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert "oneshot ≠" in labels and "mutex" in labels
    markers = {line.get_marker() for line in fig.axes[0].get_lines() if len(line.get_xdata()) == 1}
    assert overview.UNLIKE_MARKER in markers and "o" in markers
    lines = words.headline_sentences(cmp)
    like = next(i for i, line in enumerate(lines) if "like-for-like benchmarks" in line)
    every = next(i for i, line in enumerate(lines) if "(All rows, including those" in line)
    assert like < every  # like-for-like first, all rows second


def test_scaling_figures_table_and_sentences(tmp_path):
    _, cmp = comparison(spinning_run(tmp_path))
    fig = scaling.scaling_grid(cmp)
    texts = assert_readable(fig)
    assert texts["titles"] == ["task_spawn"] and "worker threads" in texts["xlabels"][0]
    assert {"ampere wall time", "Tokio CPU time"} <= set(texts["legend"])
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["1", "2"]
    ratios = scaling.ratio_grid(cmp)
    texts = assert_readable(ratios)
    assert "CPU-time ratio" in texts["legend"] and any("tie band" in t for t in texts["legend"])
    table = tables.scaling_table(cmp)
    assert table["Workers"].tolist() == [1, 2] and table["Verdict"].tolist() == ["tie", "win"]
    rows = tables.swept(cmp.benchmarks)
    sentence = words.scaling_sentence(rows, "tokio", "ampere")
    assert re.fullmatch(r"task_spawn, 1 → 2 workers: ampere 2\d\.\d µs → 1\d\.\d µs per op \(1\.4\d× faster\); "
                        r"Tokio 2\d\.\d µs → \d\d\.\d µs per op \(flat\)\. ampere against Tokio: tie at 1, win at 2\.",
                        sentence), sentence


def test_scaling_of_a_row_only_the_baseline_ran_says_so(tmp_path):
    """A swept row only one side has (as Tokio's io_mutex_contended, which ampere's native API
    does not run): the ratio panel has no point but draws, with a note; the sentence says who did
    not run it."""
    _, cmp = comparison(spinning_run(tmp_path, tokio_only_row=True))
    fig = scaling.ratio_grid(cmp)
    assert_readable(fig)
    assert "no ratio: not run by both ampere and Tokio" in all_text(fig)
    assert_readable(scaling.scaling_grid(cmp))
    rows = tables.swept(cmp.benchmarks)
    sentence = words.scaling_sentence(rows[rows["benchmark"] == "io_mutex_contended"], "tokio", "ampere")
    assert sentence.endswith("Not run by ampere: no comparison.") and "nan" not in sentence, sentence
    both = words.scaling_sentence(rows[rows["benchmark"] == "task_spawn"], "tokio", "ampere")
    assert "ampere against Tokio: " in both


def test_scaling_figures_without_a_sweep_say_so(two_runtime_run):
    data, _ = two_runtime_run
    _, cmp = comparison(data)
    for builder in (scaling.scaling_grid, scaling.ratio_grid):
        fig = builder(cmp)
        assert_readable(fig)
        assert "no worker sweep" in all_text(fig)
    assert tables.scaling_table(cmp).empty


def test_variant_sentence_names_the_settings(two_runtime_run):
    data, _ = two_runtime_run
    _, cmp = comparison(data)
    sentence = words.variant_sentence(cmp, {"spin_before_park_ns": 0})
    assert sentence.startswith(f"ampere (spin_before_park_ns = 0): {cmp.summary['counts']['win']} wins")
    assert "on the geometric mean" in sentence


# -- history ----------------------------------------------------------------------------------

def test_history_flags_a_regression_between_consecutive_runs(tmp_path):
    data = tmp_path / "data"
    write_run(data, "20261122T100000Z-lab1", seed=1)
    write_run(data, "20261123T100000Z-lab1", speed={"mutex": 2.0}, seed=2,
              info=run_json("20261123T100000Z-lab1", git={"commit": "fedcba9876", "dirty": True}))
    write_run(data, "20261124T100000Z-lab1", seed=3, complete=False)
    found = history.history_data(data, "tokio", "ampere", 0.05, 0.95, profile="full")
    assert list(found.runs["run_id"]) == ["20261122T100000Z-lab1", "20261123T100000Z-lab1"]
    assert list(found.runs["run_label"]) == ["2026-11-22 10:00\nabc1234", "2026-11-23 10:00\nfedcba9+"]
    assert found.left_out.to_dict("records") == [{"run_id": "20261124T100000Z-lab1", "reason": "not complete (incomplete)"}]
    assert "20261124T100000Z-lab1 left out: not complete (incomplete)" in words.history_sentences(found, "full")
    assert list(found.regressions["benchmark"]) == ["mutex"]
    assert found.regressions.iloc[0]["ratio"] < 1 / 1.05
    mutex = found.ratios[found.ratios["benchmark"] == "mutex"].sort_values("position")
    assert mutex.iloc[1]["ratio"] < mutex.iloc[0]["ratio"] / 1.5  # ampere got slower, ratio fell
    fig = history_figures.history_plot(found, "tokio", "ampere", 0.05, 0.95)
    texts = assert_readable(fig)
    assert "ampere slower than in the previous run (diff)" in texts["legend"]
    table = tables.regressions_table(found, "ampere")
    assert list(table["Benchmark"]) == ["mutex"] and table.iloc[0]["ampere in the later run"].endswith("× slower")


def test_history_of_one_run_and_other_profiles(tmp_path):
    data = tmp_path / "data"
    write_run(data, "20261122T100000Z-lab1")
    write_run(data, "20261123T100000Z-lab1", info=run_json("20261123T100000Z-lab1", profile="quick"))
    found = history.history_data(data, "tokio", "ampere", 0.05, 0.95, profile="full", report_dir=tmp_path / "reports")
    assert list(found.runs["run_id"]) == ["20261122T100000Z-lab1"]
    assert found.regressions.empty
    assert found.left_out.to_dict("records") == [
        {"run_id": "20261123T100000Z-lab1", "reason": "profile quick, not full (other sizes)"}]
    assert words.history_sentences(found, "full")[0].startswith("Only one complete run of the full profile")
    assert (tmp_path / "reports" / "20261122T100000Z-lab1" / "comparison.json").is_file()  # cached per run
    assert_readable(history_figures.history_plot(found, "tokio", "ampere", 0.05, 0.95))


def test_history_of_one_runtime_runs_and_of_nothing(tokio_only_run, tmp_path):
    data, _ = tokio_only_run
    found = history.history_data(data, "tokio", "ampere", 0.05, 0.95)
    assert len(found.runs) == 1 and found.regressions.empty
    assert history.never_compared(found)[:2] == ["floor_cas_store", "floor_fetch_add"]
    fig = history_figures.history_plot(found, "tokio", "ampere", 0.05, 0.95)
    assert_readable(fig)
    assert "no complete run has both runtimes" in all_text(fig)
    empty = history.history_data(tmp_path / "nothing", "tokio", "ampere", 0.05, 0.95)
    assert empty.runs.empty and empty.ratios.empty
    assert_readable(history_figures.history_plot(empty, "tokio", "ampere", 0.05, 0.95))


# -- words and tables -------------------------------------------------------------------------

def test_counts_sentence_agrees_in_number():
    part = {"counts": {"win": 2, "loss": 0, "tie": 0, "inconclusive": 0}, "n_compared": 3, "n_like_for_like": 2,
            "n_benchmarks": 4, "all_counts": {"win": 3, "loss": 0}, "not_like_for_like": ["oneshot"]}
    one = words.counts_sentence(part, "ampere", "tokio")
    assert "1 more compared row is not like for like" in one
    assert "1 more has data for only one runtime and is not compared" in one
    part.update(n_compared=4, n_like_for_like=2, n_benchmarks=6, not_like_for_like=["oneshot", "echo_f64 n=1"])
    two = words.counts_sentence(part, "ampere", "tokio")
    assert "2 more compared rows are not like for like" in two
    assert "2 more have data for only one runtime and are not compared" in two


def test_headline_in_words(two_runtime_run):
    data, _ = two_runtime_run
    _, cmp = comparison(data)
    lines = words.headline_sentences(cmp)
    s = cmp.summary
    lo, hi = s["like_for_like_geomean_ratio_ci"]
    n = f"{s['like_for_like_geomean_n']} like-for-like"  # the headline geometric mean
    assert lines[0].startswith(f"Of {s['n_like_for_like']} like-for-like benchmarks, ampere wins "
                               f"{s['counts']['win']}, Tokio wins {s['counts']['loss']}")
    assert f"{s['n_compared'] - s['n_like_for_like']} more compared rows are not like for like" in lines[0]
    assert "oneshot, echo_f64 n=1, echo_f64 n=10" in lines[0]
    ratio = s["like_for_like_geomean_ratio"]
    if ratio >= 1:
        expected = f"ampere is {ratio:.2f}× faster than Tokio on the geometric mean of {n} benchmarks (95% CI {lo:.2f}–{hi:.2f}×)"
    else:
        expected = f"ampere is {1 / ratio:.2f}× slower than Tokio on the geometric mean of {n} benchmarks (95% CI {1 / hi:.2f}–{1 / lo:.2f}×)"
    assert any(line.startswith(expected) for line in lines), lines
    assert any(line.startswith("Tier 0 controls") for line in lines)


def test_ratio_words_turn_the_interval_with_the_ratio():
    assert words.ratio_words(2.0, 1.5, 2.5, "ampere", "tokio") == ("ampere is 2.00× faster than Tokio", 1.5, 2.5)
    text, lo, hi = words.ratio_words(0.5, 0.4, 0.8, "ampere", "tokio")
    assert text == "ampere is 2.00× slower than Tokio" and (lo, hi) == pytest.approx((1.25, 2.5))
    part = {"geomean_n": 3, "geomean_ratio": 1.1, "geomean_ratio_ci": [0.9, 1.3]}
    sentence = words.geomean_sentence(part, "ampere", "tokio", 0.95)
    assert sentence.startswith("ampere is 1.10× faster than Tokio on the geometric mean of 3 benchmarks (95% CI 0.90–1.30×)")
    assert "includes 1×" in sentence
    assert "no geometric mean" in words.geomean_sentence({"geomean_n": 0}, "ampere", "tokio", 0.95)


def test_controls_sentence_tells_differing_harnesses_from_unresolved_ones():
    assert "harnesses agree" in words.controls_sentence({"floor_cas_store": "tie", "floor_fetch_add": "tie"})
    differ = words.controls_sentence({"floor_cas_store": "loss", "floor_fetch_add": "tie"})
    assert "harnesses differ" in differ and "floor_cas_store loss" in differ
    unresolved = words.controls_sentence({"floor_cas_store": "inconclusive", "floor_fetch_add": "tie"})
    assert "not all shown to tie" in unresolved and "differ" not in unresolved
    assert "no Tier 0 control" in words.controls_sentence({})


def test_headline_of_a_one_runtime_run(tokio_only_run):
    data, _ = tokio_only_run
    _, cmp = comparison(data)
    assert words.headline_sentences(cmp) == [
        "This run has data for Tokio only: nothing to compare, the pages describe it alone."]


def test_machine_sentences_warn_about_oversubscription(tmp_path, oversubscribed_meta):
    data = tmp_path / "data"
    write_run(data, meta=oversubscribed_meta)
    run = analysis.load_run("latest", data_dir=data)
    text = "\n".join(words.machine_sentences(artefact.compute(run, "tokio", "ampere", 0.05, 0.95)))
    assert "The machine has 2 logical cores; Tiers 3–4 ran with 4 workers: at 4 workers they oversubscribe" in text
    assert "Test CPU" in text and "Tokio 1.48.0" in text and "zig 0.16.0" in text
    assert "CPU time recorded per iteration (schema 2)" in text
    other = tmp_path / "other"
    write_run(other, info=run_json("20261122T101500Z-lab1", workers=[1, 2, 4, 8]))
    run = analysis.load_run("latest", data_dir=other)
    text = "\n".join(words.machine_sentences(artefact.compute(run, "tokio", "ampere", 0.05, 0.95)))
    assert "The machine has 8 logical cores for 1, 2, 4, 8 workers: no oversubscription" in text


def test_tables_follow_the_cli(two_runtime_run):
    data, _ = two_runtime_run
    run, cmp = comparison(data)
    tier_tables = tables.tier_tables(cmp)
    assert [t for t, _ in tier_tables] == [t for t, _ in tables.groups(cmp.benchmarks)][:5] + ["Echo — batch round trips"]
    first = tier_tables[0][1]
    assert list(first.columns)[:3] == ["Benchmark", "ampere", "Tokio"] and list(first["Benchmark"]) == [
        "floor_cas_store", "floor_fetch_add"]
    assert list(first.columns)[-2:] == ["CPU ratio [CI]", "CPU verdict"]
    html = tables.style_verdicts(tier_tables[1][1]).to_html()
    assert tables.VERDICT_COLORS["win"] in html
    diagnostics = tables.diagnostics_table(cmp)
    assert list(diagnostics.columns) == ["Level", "Where", "Runtime", "Message"]
    machine = tables.machine_display(analysis.machine_table(run))
    assert "same on all" in machine.columns and set(machine["same on all"]) <= {"yes", "no"}


def test_notebook_folders(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert notebook.resolve_folder(tmp_path / "x") == tmp_path / "x"
    (tmp_path / "data").mkdir()
    assert notebook.resolve_folder("data") == (tmp_path / "data").resolve()
    assert notebook.resolve_folder("elsewhere") == notebook.REPO_ROOT / "elsewhere"


def test_md_escape():
    assert fmt.md_escape("a|b_c*") == "a\\|b\\_c\\*"
