"""Issue 25 item 6: absurd samples are flagged, symbolic link loops are named, and a benchmark
on one side only or outside the schema's list is an error unless the run declares it."""

from __future__ import annotations

import json
import os

import pytest

from analysis import compare, load_run, sanity
from analysis.errors import DataError
from analysis_fakes import run_json, standard_rows, write_run

RUN_ID = "20261122T101500Z-lab1"
YEAR_NS = int(365.25 * 86_400 * 10**9)


def _set(rows: list[list], benchmark: str, invocation: int, iteration: int, **values: int) -> list[list]:
    """Rows with one sample's elapsed_ns (index 8) and / or cpu_ns (index 9) replaced."""
    out = [list(r) for r in rows]
    for row in out:
        if row[4] == benchmark and row[1] == invocation and row[6] == iteration:
            row[8] = values.get("elapsed_ns", row[8])
            row[9] = values.get("cpu_ns", row[9])
    return out


# -- absurd samples ---------------------------------------------------------------------------

def test_a_31_year_sample_is_flagged_against_its_row(tmp_path):
    data = tmp_path / "data"
    ampere = _set(standard_rows("ampere"), "mutex", 1, 4, elapsed_ns=31 * YEAR_NS)
    write_run(data, rows={"ampere": ampere})
    found = compare("latest", data_dir=data).diagnostics
    absurd = found[found["code"] == "absurd_sample"]
    assert absurd[["benchmark", "runtime", "level"]].values.tolist() == [["mutex", "ampere", "warning"]]
    message = absurd.iloc[0]["message"]
    assert "1 absurd sample" in message and "invocation 1 iteration 4: elapsed 31 years" in message


def test_cpu_far_above_elapsed_times_the_cores_is_flagged(tmp_path):
    data = tmp_path / "data"
    tokio = standard_rows("tokio")
    elapsed = next(r[8] for r in tokio if r[4] == "task_spawn" and r[1] == 0 and r[6] == 2)
    tokio = _set(tokio, "task_spawn", 0, 2, cpu_ns=elapsed * 100 + 10**9)  # 8 cores in the fake meta
    write_run(data, rows={"tokio": tokio})
    found = compare("latest", data_dir=data).diagnostics
    absurd = found[found["code"] == "absurd_sample"]
    assert absurd[["benchmark", "runtime"]].values.tolist() == [["task_spawn", "tokio"]]
    assert "invocation 0 iteration 2: cpu" in absurd.iloc[0]["message"]
    assert "more than 8 cores could use" in absurd.iloc[0]["message"]


def test_ordinary_noise_is_not_absurd(tmp_path):
    data = tmp_path / "data"
    # A preempted iteration 50x slower and a CPU time at the bound are real, not absurd.
    ampere = _set(standard_rows("ampere"), "mutex", 0, 0, elapsed_ns=50 * 12_000_000)
    write_run(data, rows={"ampere": ampere})
    assert "absurd_sample" not in set(compare("latest", data_dir=data).diagnostics["code"])
    rows = load_run("latest", data).rows("ampere")
    cpu_at_bound = rows.assign(cpu_ns=rows["elapsed_ns"] * 8 * sanity.CPU_FACTOR)
    time, cpu, _ = sanity.absurd_masks(cpu_at_bound, 8)
    assert not time[1:].any() and not cpu.any()
    long = (cpu_at_bound["elapsed_ns"] >= 10**7).to_numpy()  # the tick slack hides it in short samples
    assert sanity.absurd_masks(cpu_at_bound, 2)[1][long].all()  # the same CPU on 2 cores: absurd
    short = (cpu_at_bound["elapsed_ns"] < 10**6).to_numpy()
    assert short.any() and not sanity.absurd_masks(cpu_at_bound, 2)[1][short].any()


# -- symbolic link loops ----------------------------------------------------------------------

def test_a_run_id_that_is_a_symlink_loop_is_named(tmp_path, cli):
    data = tmp_path / "data"
    (data / "runs").mkdir(parents=True)
    os.symlink("20261122T101500Z-a", data / "runs" / "20261122T101500Z-b")
    os.symlink("20261122T101500Z-b", data / "runs" / "20261122T101500Z-a")
    code, _, err = cli("compare", "20261122T101500Z-a", "--data-dir", data)
    assert code == 2 and err.count("\n") == 1
    assert "20261122T101500Z-a: symbolic link loop (it points to '20261122T101500Z-b')" in err
    code, _, err = cli("compare", "latest", "--data-dir", data)  # found while listing the runs
    assert code == 2 and "symbolic link loop" in err


def test_a_data_dir_or_csv_that_is_a_symlink_loop_is_named(tmp_path, cli):
    os.symlink("loop", tmp_path / "loop")
    code, _, err = cli("runs", "--data-dir", tmp_path / "loop")
    assert code == 2 and err == f"error: {tmp_path / 'loop'}: symbolic link loop (it points to 'loop'): following " \
                                "its links never reaches a file or folder\n"
    data = tmp_path / "data"
    folder = write_run(data)
    (folder / "tokio.csv").unlink()
    os.symlink("tokio.csv", folder / "tokio.csv")
    code, _, err = cli("compare", RUN_ID, "--data-dir", data)
    assert code == 2 and f"{folder / 'tokio.csv'}: symbolic link loop" in err
    (folder / "tokio.csv").unlink()
    write_run(tmp_path / "other", rows=None)
    (folder / "run.json").unlink()
    os.symlink("run.json", folder / "run.json")
    with pytest.raises(DataError, match="run.json: symbolic link loop"):
        load_run(folder)


# -- benchmark names --------------------------------------------------------------------------

def test_a_benchmark_on_one_side_only_is_an_error_unless_declared(tmp_path, cli):
    data = tmp_path / "data"
    tokio = [r for r in standard_rows("tokio") if r[4] != "oneshot"]
    folder = write_run(data, rows={"tokio": tokio})
    code, _, err = cli("compare", RUN_ID, "--data-dir", data)
    assert code == 2 and err == (f"error: {folder / 'tokio.csv'}: no rows of micro benchmark 'oneshot', which ampere "
                                 'has: a benchmark on one side only is not compared (a run that means it declares it '
                                 'in run.json "declared_benchmarks")\n')
    (folder / "run.json").write_text(json.dumps(run_json(RUN_ID, declared_benchmarks={"oneshot": "tokio's left out"})))
    assert cli("compare", RUN_ID, "--data-dir", data)[0] == 0


def test_a_benchmark_not_in_the_schema_list_is_an_error_unless_declared(tmp_path, cli):
    data = tmp_path / "data"
    rows = {rt: [[*r[:4], "mutex_new" if r[4] == "mutex" else r[4], *r[5:]] for r in standard_rows(rt)]
            for rt in ("ampere", "tokio")}
    folder = write_run(data, rows=rows)
    line = 1 + next(i for i, r in enumerate(rows["ampere"], start=1) if r[4] == "mutex_new")
    code, _, err = cli("compare", RUN_ID, "--data-dir", data)
    assert code == 2 and err.startswith(f"error: {folder / 'ampere.csv'}:{line}: benchmark: benchmark 'mutex_new' "
                                        "is not in the schema's list of micro benchmarks")
    (folder / "run.json").write_text(json.dumps(run_json(RUN_ID, declared_benchmarks={"mutex_new": "a trial"})))
    assert cli("compare", RUN_ID, "--data-dir", data)[0] == 0
    (folder / "run.json").write_text(json.dumps(run_json(RUN_ID, declared_benchmarks=["mutex_new"])))
    code, _, err = cli("compare", RUN_ID, "--data-dir", data)
    assert code == 2 and 'key "declared_benchmarks" must be an object' in err
