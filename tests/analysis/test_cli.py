"""CLI: runs, compare in every format, colours and NO_COLOR, diff exit codes, --debug."""

from __future__ import annotations

import io
import json
import os
import pty
import subprocess
import sys

import pandas as pd
import pytest

from analysis.render import ANSI, use_color
from analysis_fakes import REPO, cli_env, run_cli_subprocess, run_json, write_run

REQUIRED_TOP = {"run_id", "baseline", "candidate", "tie_band", "confidence", "benchmarks", "summary"}
REQUIRED_BENCH = {"suite", "tier", "benchmark", "param", "ns_per_op", "ns_per_op_ci", "ratio", "ratio_ci",
                  "p_value", "q_value", "verdict", "bytes_per_op", "allocs_per_op"}
REQUIRED_ECHO = {"avg_ns", "min_ns", "p75_ns", "p99_ns", "max_ns"}
REQUIRED_SCHEMA2 = {"workers", "cpu_ns_per_op", "cpu_ns_per_op_ci", "cpu_ratio", "cpu_ratio_ci", "cpu_verdict",
                    "cores_busy", "like_for_like", "semantics_note"}


def test_runs_lists_every_folder(tmp_path, cli):
    data = tmp_path / "data"
    write_run(data, "20261122T100000Z-lab1")
    folder = write_run(data, "20261122T110000Z-lab2", complete=False)
    (folder / "failed.json").write_text(json.dumps({"step": "invocation", "reason": "exit code 1: boom"}))
    write_run(data, "20261122T120000Z-lab3", complete=False)
    code, out, err = cli("runs", "--data-dir", data)
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith("┌") and "│ Run" in lines[1]
    body = "\n".join(lines)
    assert "20261122T100000Z-lab1" in body and "complete" in body and "micro,echo" in body and "abc1234def" in body
    assert "failed: invocation: exit code 1: boom" in body
    assert "incomplete" in body
    assert body.index("lab1") < body.index("lab2") < body.index("lab3")


def test_runs_validates_every_csv(tmp_path, cli):
    """Regression (issue 11 item 6): a run with a corrupt CSV was listed as complete."""
    data = tmp_path / "data"
    write_run(data, "20261122T100000Z-lab1", info=run_json("20261122T100000Z-lab1", schema_version=2, workers=[1, 2, 4]))
    bad = write_run(data, "20261122T110000Z-lab2")
    (bad / "ampere.csv").write_text((bad / "ampere.csv").read_text().replace(",1000000,", ",lots,", 1))
    code, out, err = cli("runs", "--data-dir", data)
    assert code == 0 and err == ""
    lines = [line for line in out.splitlines() if "lab" in line]
    assert "complete" in lines[0] and "1,2,4" in lines[0] and "│ 2 " in lines[0]
    assert f"invalid: {bad}/ampere.csv:2: ops: not an integer: 'lots'" in lines[1]
    assert "Workers" in out and "Schema" in out


def test_runs_with_no_runs(tmp_path, cli):
    code, out, _ = cli("runs", "--data-dir", tmp_path)
    assert code == 0 and out.startswith("no runs in")


def test_compare_json_follows_the_contract(data_dir, cli):
    code, out, err = cli("compare", "--format", "json", "--data-dir", data_dir)
    assert code == 0, err
    doc = json.loads(out)
    assert REQUIRED_TOP <= set(doc)
    assert (doc["baseline"], doc["candidate"], doc["tie_band"], doc["confidence"]) == ("tokio", "ampere", 0.05, 0.95)
    assert len(doc["benchmarks"]) == 9
    for entry in doc["benchmarks"]:
        assert REQUIRED_BENCH | REQUIRED_SCHEMA2 <= set(entry), (REQUIRED_BENCH | REQUIRED_SCHEMA2) - set(entry)
        assert set(entry["cpu_ns_per_op"]) == {"ampere", "tokio"} and entry["cpu_verdict"] in {"win", "loss", "tie", "inconclusive"}
        assert entry["cores_busy"]["ampere"] == pytest.approx(1.0)  # the fakes record cpu_ns = elapsed_ns
        assert entry["verdict"] in {"win", "loss", "tie", "inconclusive"}
        assert set(entry["ns_per_op"]) == {"ampere", "tokio"}
        assert all(len(v) == 2 for v in entry["ns_per_op_ci"].values()) and len(entry["ratio_ci"]) == 2
        assert entry["ratio"] == pytest.approx(entry["ns_per_op"]["tokio"] / entry["ns_per_op"]["ampere"])
        if entry["suite"] == "echo":
            assert REQUIRED_ECHO <= set(entry)
            assert set(entry["p99_ns"]) == {"ampere", "tokio"}
    summary = doc["summary"]
    assert set(summary["counts"]) == {"win", "loss", "tie", "inconclusive"}
    assert summary["geomean_ratio"] > 0 and len(summary["geomean_ratio_ci"]) == 2
    assert set(summary["total_bytes_per_op"]) == {"ampere", "tokio"} and set(summary["total_allocs_per_op"]) == {"ampere", "tokio"}
    assert summary["cpu_geomean_ratio"] > 0 and len(summary["cpu_geomean_ratio_ci"]) == 2


def test_compare_json_of_a_schema_1_run_has_nulls_not_zeros(tmp_path, cli):
    data = tmp_path / "data"
    write_run(data, schema=1)
    code, out, err = cli("compare", "--format", "json", "--data-dir", data)
    assert code == 0, err
    doc = json.loads(out)
    for entry in doc["benchmarks"]:
        assert entry["workers"] is None and entry["cpu_ratio"] is None and entry["cpu_verdict"] is None
        assert entry["cpu_ns_per_op"] == {"ampere": None, "tokio": None} and entry["cpu_ratio_ci"] == [None, None]
    assert doc["summary"]["cpu_geomean_ratio"] is None


def test_compare_exits_non_zero_when_a_runtime_csv_is_missing(tmp_path, cli):
    """Issue 11 item 6: a run without tokio.csv used to print a one-sided table and exit 0."""
    data = tmp_path / "data"
    folder = write_run(data, runtimes=("ampere",))
    code, out, err = cli("compare", "--data-dir", data)
    assert code == 2 and out == ""
    assert err == (f"error: {folder}: no tokio.csv: nothing to compare (runtimes in the run: ampere)\n")
    code, _, err = cli("compare", "--data-dir", data, "--baseline", "other", "--candidate", "more")
    assert code == 2 and "no other.csv and no more.csv" in err


def test_compare_table_groups_and_summary(data_dir, cli):
    code, out, _ = cli("compare", "--data-dir", data_dir)
    assert code == 0
    order = ["Tier 0 — controls", "Tier 1", "Tier 2", "Tier 3", "Tier 4", "Echo — batch round trips",
             "Echo per batch", "micro (tiers 1-4): like-for-like rows: ampere wins", "geometric mean ratio"]
    positions = [out.index(marker) for marker in order]
    assert positions == sorted(positions)
    header = next(line for line in out.splitlines() if "Benchmark" in line)
    for column in ("ampere", "Tokio", "B/op ampere", "B/op Tokio", "Tokio/ampere [95% CI]", "Verdict", "Winner"):
        assert column in header
    assert "ampere +2.0x" in out and "\x1b[" not in out  # captured stdout is not a terminal


def test_compare_csv_and_markdown(data_dir, cli):
    code, out, _ = cli("compare", "--format", "csv", "--data-dir", data_dir)
    frame = pd.read_csv(io.StringIO(out), keep_default_na=False, na_values=[""])
    assert code == 0 and len(frame) == 9 and {"ratio", "ratio_ci_low", "verdict", "q_value"} <= set(frame.columns)
    code, out, _ = cli("compare", "--format", "markdown", "--data-dir", data_dir)
    assert code == 0
    assert out.count("| Benchmark |") == 7  # one table per tier (0-4), echo, echo per batch
    assert "### Tier 0 — controls (must tie)" in out and "### Echo per batch" in out and "### Summary" in out


def test_color_rules(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_color("auto", Tty()) and not use_color("auto", io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_color("auto", Tty())
    assert use_color("always", io.StringIO()) and not use_color("never", Tty())


def _run_on_terminal(args: list[str], env: dict[str, str]) -> str:
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "analysis", *args], cwd=REPO, env=env, stdout=slave,
                            stderr=subprocess.PIPE)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=120)
    os.close(master)
    return b"".join(chunks).decode("utf-8", "replace")


def test_colours_on_a_terminal_and_no_color(data_dir):
    args = ["compare", "--data-dir", str(data_dir)]
    coloured = _run_on_terminal(args, cli_env())
    assert ANSI["win"] + "win" in coloured and ANSI["loss"] + "loss" in coloured and ANSI["tie"] + "tie" in coloured
    plain = _run_on_terminal(args, cli_env(NO_COLOR="1"))
    assert "\x1b[" not in plain and "win" in plain


def test_diff_exit_codes(tmp_path, cli):
    data = tmp_path / "data"
    write_run(data, "20261122T100000Z-lab1", seed=1)
    write_run(data, "20261122T110000Z-lab1", seed=2, speed={"mutex": 2.0})   # B slower on mutex
    write_run(data, "20261122T120000Z-lab1", seed=3, speed={"mutex": 0.5})   # B faster on mutex
    code, out, err = cli("diff", "20261122T100000Z-lab1", "20261122T110000Z-lab1", "--data-dir", data)
    assert code == 1 and "regression: 1 benchmark(s) slower in B beyond the tie band: mutex" in err
    assert "A = 20261122T100000Z-lab1, B = 20261122T110000Z-lab1" in out
    code, _, err = cli("diff", "20261122T100000Z-lab1", "20261122T120000Z-lab1", "--data-dir", data)
    assert code == 0 and err == ""
    code, out, _ = cli("diff", "20261122T100000Z-lab1", "20261122T100000Z-lab1", "--format", "json",
                       "--data-dir", data, "--runtime", "tokio")
    doc = json.loads(out)
    assert code == 0 and doc["runtime"] == "tokio" and not any(b["regressed"] for b in doc["benchmarks"])


def test_diff_wider_band_hides_the_regression(tmp_path, cli):
    data = tmp_path / "data"
    write_run(data, "20261122T100000Z-lab1", seed=1)
    write_run(data, "20261122T110000Z-lab1", seed=2, speed={"mutex": 1.3})
    code, _, _ = cli("diff", "20261122T100000Z-lab1", "20261122T110000Z-lab1", "--data-dir", data)
    assert code == 1
    code, _, _ = cli("diff", "20261122T100000Z-lab1", "20261122T110000Z-lab1", "--data-dir", data,
                     "--tie-band", "0.5")
    assert code == 0


def test_unexpected_error_is_one_line_unless_debug(data_dir, monkeypatch, cli):
    import sys

    def boom(*args, **kwargs):
        raise ZeroDivisionError("synthetic")

    monkeypatch.setattr(sys.modules["analysis.cli"], "compare", boom)
    code, out, err = cli("compare", "--data-dir", data_dir)
    assert code == 2 and err == "error: unexpected ZeroDivisionError: synthetic (run with --debug for the traceback)\n"
    with pytest.raises(ZeroDivisionError):
        cli("compare", "--debug", "--data-dir", data_dir)


def test_help_lists_commands_and_plugin_slot(cli):
    from analysis.cli import PLUGIN_MODULES

    assert "analysis.report" in PLUGIN_MODULES
    done = run_cli_subprocess("--help")
    assert done.returncode == 0 and all(c in done.stdout for c in ("compare", "runs", "diff", "bench"))
