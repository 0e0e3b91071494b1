"""`python -m analysis ab` (analysis/ab.py): alternating invocations of fake bench programs, the
rotated order, the paired ratios and verdicts, the CSV, and one-line errors for bad input."""

from __future__ import annotations

import os

import pandas as pd
import pytest

from analysis import ab
from analysis.cli import main
from analysis_fakes import install_fake_bench

ARGS = ["--args=--suite micro --workers 1,2"]


@pytest.fixture
def programs(tmp_path, monkeypatch):
    for key in [k for k in os.environ if k.startswith("FAKE_")]:
        monkeypatch.delenv(key)
    return install_fake_bench(tmp_path, "ampere"), install_fake_bench(tmp_path, "tokio")


def test_ab_compares_rows_with_paired_ratios_and_verdicts(programs, tmp_path, monkeypatch, capsys):
    fast, slow = programs
    monkeypatch.setenv("FAKE_SPEED_tokio", "2.0")  # every op takes twice as long
    out = tmp_path / "ab.csv"
    assert main(["ab", f"base={fast}", f"new={slow}", "--rounds", "3", "--csv", str(out), *ARGS]) == 0
    printed = capsys.readouterr().out
    assert "round 0/3 (warm-up, discarded)" in printed and "round 3/3" in printed
    frame = pd.read_csv(out, keep_default_na=False)
    assert list(frame["benchmark"]) == ["floor_cas_store", "mutex", "mutex_contended", "mutex_contended"]
    assert list(frame["workers"]) == [0, 0, 1, 2]
    assert set(frame["new_verdict"]) == {"loss"}  # new is slower than base on every row
    ratios = frame["base/new"].str.split(" ").str[0].astype(float)
    assert ratios.between(0.45, 0.55).all()
    assert (frame["new_ns_per_op"] / frame["base_ns_per_op"]).between(1.8, 2.2).all()


def test_rounds_rotate_the_order_and_round_zero_is_discarded(programs, tmp_path, monkeypatch):
    fast, slow = programs
    log = tmp_path / "log.txt"
    monkeypatch.setenv("FAKE_LOG", str(log))
    assert main(["ab", f"a={fast}", f"b={slow}", "--rounds", "2", *ARGS]) == 0
    order = [line.split()[:2] for line in log.read_text().splitlines()]
    assert order == [["ampere", "0"], ["tokio", "0"], ["tokio", "1"], ["ampere", "1"], ["ampere", "2"], ["tokio", "2"]]


def test_options_before_the_programs_and_cpu_time(programs, tmp_path, capsys):
    fast, slow = programs
    out = tmp_path / "cpu.csv"
    assert main(["ab", "--rounds", "2", "--cpu", "--csv", str(out), f"a={fast}", f"b={slow}", *ARGS]) == 0
    assert out.is_file() and "round 2/2" in capsys.readouterr().out


def test_a_failing_program_is_one_line_naming_it_and_the_round(programs, monkeypatch, capsys):
    fast, slow = programs
    monkeypatch.setenv("FAKE_MODE_tokio", "fail")
    assert main(["ab", f"a={fast}", f"b={slow}", "--rounds", "2", *ARGS]) == 1
    err = capsys.readouterr().err.strip()
    assert err == "error: ab: b (round 0): exit code 1: error: mutex: counter reached 999, expected 1000"


@pytest.mark.parametrize("argv, message", [
    (["a={fast}", "b={slow}", "--args=--suite micro --csv x.csv"], "--args: --csv is given by ab itself"),
    (["a={fast}", "b={slow}", "--args=--invocation=3"], "--args: --invocation is given by ab itself"),
    (["a={fast}", "b={slow}", "--args=--filter 'mutex"], "--args: No closing quotation"),
    (["a={fast}", "a={slow}", "--args=--suite micro"], "the name 'a' is given twice"),
    (["a={fast}", "--args=--suite micro"], "give at least two programs"),
    (["a={fast}", "b=/no/such/program", "--args=--suite micro"], "b: /no/such/program: not an executable file"),
    (["a={fast}", "=x", "--args=--suite micro"], "'=x': expected NAME=PROGRAM"),
    (["a={fast}", "b={slow}", "--rounds", "1", "--args=--suite micro"], "--rounds 1: at least 2 measured rounds"),
    (["a={fast}", "b={slow}", "--confidence", "1.5", "--args=--suite micro"], "--confidence 1.5: must be in (0, 1)"),
    (["a={fast}", "b={slow}", "--args=--suite micro --filter nothing_matches"], "no benchmark row ran"),
])
def test_bad_input_is_one_line_and_exit_2(programs, capsys, argv, message):
    fast, slow = programs
    argv = [a.format(fast=fast, slow=slow) for a in argv]
    assert main(["ab", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ab: ") and message in err and "\n" not in err


def test_an_existing_csv_is_never_overwritten(programs, tmp_path, capsys):
    fast, slow = programs
    out = tmp_path / "there.csv"
    out.write_text("keep\n")
    assert main(["ab", f"a={fast}", f"b={slow}", "--csv", str(out), *ARGS]) == 2
    assert "exists (results are never overwritten)" in capsys.readouterr().err
    assert out.read_text() == "keep\n"


def test_round_order_rotates_by_one():
    progs = [ab.Program(n, ab.Path(n)) for n in "abc"]
    assert [[p.name for p in ab.round_order(progs, k)] for k in range(4)] == [
        ["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"], ["a", "b", "c"]]
