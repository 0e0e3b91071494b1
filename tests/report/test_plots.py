"""analysis.plots: every figure has a title, labelled axes with units and a legend; edge cases
(one runtime, no echo rows, one run in the history) give a figure that says so; sentences and
tables say what the analysis computed."""

from __future__ import annotations

import io
import math
import warnings

import pytest
from matplotlib.figure import Figure

import analysis
from analysis import plots
from report_fakes import RESAMPLES, micro_only  # noqa: I001 (puts tests/analysis on sys.path)
from analysis_fakes import run_json, write_run

UNIT_WORDS = ("ns", "µs", "ms", "B/op", "×", "bytes", "index", "share", "round trips", "date")


def comparison(data, run_id="latest", **kw):
    run = analysis.load_run(run_id, data_dir=data)
    return run, analysis.compare(run, n_resamples=RESAMPLES, **kw)


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
    texts = plots.figure_texts(fig)
    assert texts["suptitle"] or all(texts["titles"]), texts
    assert texts["titles"] and all(t.strip() for t in texts["titles"]), texts
    for label in texts["xlabels"] + texts["ylabels"]:
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
    fig = plots.forest_plot(cmp)
    texts = assert_readable(fig)
    assert "confidence intervals" in texts["titles"][0] and cmp.run_id in texts["titles"][0]
    assert "log scale" in texts["xlabels"][0] and "ampere faster" in texts["xlabels"][0]
    assert any("tie band" in t for t in texts["legend"])
    assert {"win (candidate faster)", "loss (candidate slower)"} <= set(texts["legend"])
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
    assert line.get_color() == plots.VERDICT_COLORS["win"]
    assert ax.get_xscale() == "log"
    low, high = ax.get_xlim()
    assert low < 1 / 1.05 and high > cmp.benchmarks["ratio_ci_high"].max()


def test_forest_plot_of_a_one_runtime_run_says_so(tokio_only_run):
    data, _ = tokio_only_run
    _, cmp = comparison(data)
    fig = plots.forest_plot(cmp)
    assert_readable(fig)
    text = all_text(fig)
    assert "only one runtime in this run" in text
    assert "not compared" in text


def test_alloc_plot_writes_zero_out_and_labels_values(two_runtime_run):
    data, _ = two_runtime_run
    _, cmp = comparison(data)
    fig = plots.alloc_plot(cmp)
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
    fig = plots.alloc_plot(cmp)
    assert_readable(fig)
    assert "no ampere data" in all_text(fig)


# -- distributions ----------------------------------------------------------------------------

@pytest.mark.parametrize("builder", [plots.ecdf_grid, plots.run_sequence_grid])
def test_small_multiples_one_panel_per_benchmark(two_runtime_run, builder):
    data, _ = two_runtime_run
    run, cmp = comparison(data)
    groups = plots.groups(plots.benchmark_rows(run))
    assert [title for title, _ in plots.groups(cmp.benchmarks)] == [title for title, _ in groups]
    assert [title for title, _ in groups] == ["Tier 0 — controls (must tie)", "Tier 1 — sync fast path",
                                              "Tier 2 — channel fast path", "Tier 3 — async, contended",
                                              "Tier 4 — task scheduling", "Echo — echo_f64"]
    title, rows = groups[1]
    fig = builder(run, title, rows, "tokio", "ampere")
    texts = assert_readable(fig)
    assert title in texts["suptitle"]
    assert texts["titles"] == list(rows["label"])
    assert {"ampere", "Tokio"} <= set(texts["legend"])
    if builder is plots.run_sequence_grid:
        assert {"invocation 0", "invocation 1", "invocation 2"} <= set(texts["legend"])
        # 2 runtimes x 3 invocations = 6 lines per panel, each with every measured iteration
        assert all(len(ax.get_lines()) == 6 for ax in fig.axes if ax.get_visible())
        assert all(len(line.get_xdata()) == 10 for line in fig.axes[0].get_lines())


def test_small_multiples_of_a_one_runtime_run(tokio_only_run):
    data, _ = tokio_only_run
    run = analysis.load_run("latest", data_dir=data)
    title, rows = plots.groups(plots.benchmark_rows(run))[0]
    for builder in (plots.ecdf_grid, plots.run_sequence_grid):
        texts = assert_readable(builder(run, title, rows))
        assert "Tokio" in texts["legend"] and "ampere" not in texts["legend"]


def test_time_unit_and_bytes():
    assert plots.time_unit([5.0, 900.0]) == (1.0, "ns")
    assert plots.time_unit([1500.0]) == (1e3, "µs")
    assert plots.time_unit([2.5e6, math.nan]) == (1e6, "ms")
    assert [plots.fmt_bytes(v) for v in (8, 1024, 4096, 1 << 20)] == ["8 B", "1 KiB", "4 KiB", "1 MiB"]


# -- echo -------------------------------------------------------------------------------------

def test_echo_batch_plot_and_table(two_runtime_run):
    data, _ = two_runtime_run
    _, cmp = comparison(data)
    assert plots.has_echo(cmp)
    fig = plots.echo_batch_plot(cmp, payload_bytes=4096)
    texts = assert_readable(fig)
    assert texts["titles"] == ["echo_f64: f64 (an 8-byte number)"]
    assert "batch size n" in texts["xlabels"][0] and "µs" in texts["ylabels"][0]
    assert {"ampere avg (with 95% CI)", "Tokio p99 (with 95% CI)"} <= set(texts["legend"])
    table = plots.echo_ratio_table(cmp)
    assert list(table["Param"]) == ["n=1", "n=10"]
    assert table.columns[-3] == "avg ratio Tokio/ampere [CI]"
    assert all(cell.endswith("]") for cell in table["avg ratio Tokio/ampere [CI]"])


def test_echo_figures_without_echo_rows_say_so(tmp_path):
    data = tmp_path / "data"
    write_run(data, rows={rt: micro_only(rt) for rt in ("ampere", "tokio")},
              info=run_json("20261122T101500Z-lab1", suites=["micro"]))
    _, cmp = comparison(data)
    assert not plots.has_echo(cmp)
    assert plots.echo_ratio_table(cmp).empty
    batch = plots.echo_batch_plot(cmp)
    assert_readable(batch)
    assert "no echo batch benchmarks" in all_text(batch)
    sweep = plots.echo_sweep_plot(cmp, "echo_bytes_sweep", batch_n=100)
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
    fig = plots.echo_sweep_plot(cmp, "echo_shared_sweep", batch_n=100, reference="echo_bytes_sweep")
    texts = assert_readable(fig)
    assert "batch n = 100" in texts["titles"][0]
    assert "payload size (bytes" in texts["xlabels"][0]
    assert "Tokio avg, echo_bytes_sweep (copy path)" in texts["legend"]
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["8 B", "16 B", "32 B"]


# -- history ----------------------------------------------------------------------------------

def test_history_flags_a_regression_between_consecutive_runs(tmp_path):
    data = tmp_path / "data"
    write_run(data, "20261122T100000Z-lab1", seed=1)
    write_run(data, "20261123T100000Z-lab1", speed={"mutex": 2.0}, seed=2,
              info=run_json("20261123T100000Z-lab1", git={"commit": "fedcba9876", "dirty": True}))
    write_run(data, "20261124T100000Z-lab1", seed=3, complete=False)
    history = plots.history_data(data, "tokio", "ampere", 0.05, 0.95, profile="full", n_resamples=RESAMPLES)
    assert list(history.runs["run_id"]) == ["20261122T100000Z-lab1", "20261123T100000Z-lab1"]
    assert list(history.runs["run_label"]) == ["2026-11-22 10:00\nabc1234", "2026-11-23 10:00\nfedcba9+"]
    assert any("not complete" in note for note in history.notes)
    assert list(history.regressions["benchmark"]) == ["mutex"]
    assert history.regressions.iloc[0]["ratio"] < 1 / 1.05
    mutex = history.ratios[history.ratios["benchmark"] == "mutex"].sort_values("position")
    assert mutex.iloc[1]["ratio"] < mutex.iloc[0]["ratio"] / 1.5  # ampere got slower, ratio fell
    fig = plots.history_plot(history, "tokio", "ampere", 0.05, 0.95)
    texts = assert_readable(fig)
    assert "ampere slower than in the previous run (diff)" in texts["legend"]
    table = plots.regressions_table(history, "ampere")
    assert list(table["Benchmark"]) == ["mutex"] and table.iloc[0]["ampere in the later run"].endswith("× slower")


def test_history_of_one_run_and_other_profiles(tmp_path):
    data = tmp_path / "data"
    write_run(data, "20261122T100000Z-lab1")
    write_run(data, "20261123T100000Z-lab1", info=run_json("20261123T100000Z-lab1", profile="quick"))
    history = plots.history_data(data, "tokio", "ampere", 0.05, 0.95, profile="full", n_resamples=RESAMPLES)
    assert list(history.runs["run_id"]) == ["20261122T100000Z-lab1"]
    assert history.regressions.empty
    assert any("another profile" in note and "20261123T100000Z-lab1" in note for note in history.notes)
    assert_readable(plots.history_plot(history, "tokio", "ampere", 0.05, 0.95))


def test_history_of_one_runtime_runs_and_of_nothing(tokio_only_run, tmp_path):
    data, _ = tokio_only_run
    history = plots.history_data(data, "tokio", "ampere", 0.05, 0.95, n_resamples=RESAMPLES)
    assert len(history.runs) == 1 and history.regressions.empty
    assert plots.never_compared(history)[:2] == ["floor_cas_store", "floor_fetch_add"]
    fig = plots.history_plot(history, "tokio", "ampere", 0.05, 0.95)
    assert_readable(fig)
    assert "no complete run has both runtimes" in all_text(fig)
    empty = plots.history_data(tmp_path / "nothing", "tokio", "ampere", 0.05, 0.95)
    assert empty.runs.empty and empty.ratios.empty
    assert_readable(plots.history_plot(empty, "tokio", "ampere", 0.05, 0.95))


# -- words and tables -------------------------------------------------------------------------

def test_headline_in_words(two_runtime_run):
    data, _ = two_runtime_run
    _, cmp = comparison(data)
    lines = plots.headline_sentences(cmp)
    s = cmp.summary
    lo, hi = s["geomean_ratio_ci"]
    n = s["geomean_n"]
    assert lines[0].startswith(f"Of {s['n_compared']} compared benchmarks, ampere wins {s['counts']['win']}, "
                               f"Tokio wins {s['counts']['loss']}")
    if s["geomean_ratio"] >= 1:
        expected = f"ampere is {s['geomean_ratio']:.2f}× faster than Tokio on the geometric mean of {n} benchmarks (95% CI {lo:.2f}–{hi:.2f}×)"
    else:
        expected = f"ampere is {1 / s['geomean_ratio']:.2f}× slower than Tokio on the geometric mean of {n} benchmarks (95% CI {1 / hi:.2f}–{1 / lo:.2f}×)"
    assert any(line.startswith(expected) for line in lines), lines
    assert any(line.startswith("Tier 0 controls") for line in lines)


def test_ratio_words_turn_the_interval_with_the_ratio():
    assert plots.ratio_words(2.0, 1.5, 2.5, "ampere", "tokio") == ("ampere is 2.00× faster than Tokio", 1.5, 2.5)
    text, lo, hi = plots.ratio_words(0.5, 0.4, 0.8, "ampere", "tokio")
    assert text == "ampere is 2.00× slower than Tokio" and (lo, hi) == pytest.approx((1.25, 2.5))
    part = {"geomean_n": 3, "geomean_ratio": 1.1, "geomean_ratio_ci": [0.9, 1.3]}
    sentence = plots.geomean_sentence(part, "ampere", "tokio", 0.95)
    assert sentence.startswith("ampere is 1.10× faster than Tokio on the geometric mean of 3 benchmarks (95% CI 0.90–1.30×)")
    assert "includes 1×" in sentence
    assert "no geometric mean" in plots.geomean_sentence({"geomean_n": 0}, "ampere", "tokio", 0.95)


def test_controls_sentence_tells_differing_harnesses_from_unresolved_ones():
    assert "harnesses agree" in plots.controls_sentence({"floor_cas_store": "tie", "floor_fetch_add": "tie"})
    differ = plots.controls_sentence({"floor_cas_store": "loss", "floor_fetch_add": "tie"})
    assert "harnesses differ" in differ and "floor_cas_store loss" in differ
    unresolved = plots.controls_sentence({"floor_cas_store": "inconclusive", "floor_fetch_add": "tie"})
    assert "not all shown to tie" in unresolved and "differ" not in unresolved
    assert "no Tier 0 control" in plots.controls_sentence({})


def test_headline_of_a_one_runtime_run(tokio_only_run):
    data, _ = tokio_only_run
    _, cmp = comparison(data)
    assert plots.headline_sentences(cmp) == [
        "This run has data for Tokio only: nothing to compare, the pages describe it alone."]


def test_machine_sentences_warn_about_oversubscription(tmp_path, oversubscribed_meta):
    data = tmp_path / "data"
    write_run(data, meta=oversubscribed_meta)
    run = analysis.load_run("latest", data_dir=data)
    text = "\n".join(plots.machine_sentences(run))
    assert "2 logical cores but the runtimes use num_workers = 4" in text and "Tier 3–4 oversubscribe" in text
    assert "Test CPU" in text and "Tokio 1.48.0" in text and "zig 0.15.2" in text
    other = tmp_path / "other"
    write_run(other)
    run = analysis.load_run("latest", data_dir=other)
    assert "8 logical cores for num_workers = 4: no oversubscription" in "\n".join(plots.machine_sentences(run))


def test_tables_follow_the_cli(two_runtime_run):
    data, _ = two_runtime_run
    _, cmp = comparison(data)
    tables = plots.tier_tables(cmp)
    assert [t for t, _ in tables] == [t for t, _ in plots.groups(cmp.benchmarks)][:5] + ["Echo — batch round trips"]
    first = tables[0][1]
    assert list(first.columns)[:3] == ["Benchmark", "ampere", "Tokio"] and list(first["Benchmark"]) == [
        "floor_cas_store", "floor_fetch_add"]
    html = plots.style_verdicts(tables[1][1]).to_html()
    assert plots.VERDICT_COLORS["win"] in html
    diagnostics = plots.diagnostics_table(cmp)
    assert list(diagnostics.columns) == ["Level", "Where", "Runtime", "Message"]
    machine = plots.machine_display(analysis.machine_table(cmp.run))
    assert "same on both" in machine.columns and set(machine["same on both"]) <= {"yes", "no"}


def test_notes_capture_stderr_and_warnings(capsys):
    import sys

    with plots.notes(show=False) as captured:
        print("warning: data/runs/x: incomplete; skipped", file=sys.stderr)
        warnings.warn("something odd", UserWarning)
    assert captured.lines == ["data/runs/x: incomplete; skipped", "UserWarning: something odd"]
    assert capsys.readouterr().err == ""
    assert captured.markdown().startswith("**Notes from the analysis:**")


def test_notebook_data_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert plots.notebook_data_dir(tmp_path / "x") == tmp_path / "x"
    (tmp_path / "data").mkdir()
    assert plots.notebook_data_dir("data") == (tmp_path / "data").resolve()
    assert plots.notebook_data_dir("elsewhere") == plots.repo_root() / "elsewhere"


def test_md_escape():
    assert plots.md_escape("a|b_c*") == "a\\|b\\_c\\*"
