"""Comparison of two runtimes in one run (`compare`) and of one runtime across runs (`diff_runs`).

Both reduce to benchmarks.analyse (statistics of every benchmark, each side and the pair),
then diagnostics.diagnose (records of reasons not to trust a number) and summary.summarize
(counts, geometric means, totals). The result is a `Comparison`:
- `benchmarks`: one row per benchmark (benchmarks.BENCHMARK_COLUMNS), side-specific columns
  prefixed `baseline_` / `candidate_`;
- `runtimes`: one row per benchmark x runtime (long form);
- `invocations`: one row per benchmark x runtime x invocation;
- `echo`: the echo table (one row per echo benchmark x runtime, ECHO_COLUMNS);
- `diagnostics`: one record per diagnostic (diagnostics.DIAGNOSTIC_COLUMNS);
- `modes`: one row per mode of each level of each side (benchmarks.MODE_COLUMNS; modes.py);
- `summary`: a dict (summary.py).
Every frame is tidy enough to plot directly. A comparison is computed once per run for the
reports and cached (analysis/artefact.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from . import fairness, machine_load, schema, stats
from .benchmarks import MODE_COLUMNS, Settings, analyse
from .span_cpu import add_span_cpu
from .diagnostics import diagnose
from .errors import AnalysisError
from .load import Run, load_run
from .summary import summarize

ECHO_COLUMNS = ["suite", "tier", "benchmark", "param", "workers", "label", "runtime", "role", "n",
                "avg_ns", "avg_ns_ci_low", "avg_ns_ci_high", "min_ns", "p75_ns", "p99_ns",
                "p99_ns_ci_low", "p99_ns_ci_high", "p99_ns_ci_widest", "max_ns",
                "avg_ratio", "avg_ratio_ci_low", "avg_ratio_ci_high", "p99_ratio"]


@dataclass
class Comparison:
    """Result of `compare` / `diff_runs`. `compared` is False when one side has no data at all.

    `run_id`: the run (or `A..B` for a diff); `extra`: the diff's runtime and run ids.
    """

    run_id: str
    baseline: str
    candidate: str
    tie_band: float
    confidence: float
    benchmarks: pd.DataFrame
    runtimes: pd.DataFrame
    invocations: pd.DataFrame
    echo: pd.DataFrame
    diagnostics: pd.DataFrame
    summary: dict[str, Any]
    compared: bool
    extra: dict[str, Any] = field(default_factory=dict)
    modes: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=MODE_COLUMNS))


def _settings(tie_band: float, confidence: float, paired: bool = True) -> Settings:
    if tie_band < 0:
        raise AnalysisError(f"--tie-band must be >= 0, got {tie_band}")
    if not 0 < confidence < 1:
        raise AnalysisError(f"--confidence must be between 0 and 1, got {confidence}")
    return Settings(tie_band=tie_band, confidence=confidence, paired=paired)


def fairness_semantics(benchmark: str, run_id: str | None = None) -> tuple[bool, str]:
    """Like for like, and the difference that remains, from the fairness table of
    runtime/bench/README.md (fairness.like_for_like / fairness.semantics_note); for a run
    recorded before the benchmark became like for like, not, with the difference it measured
    (fairness.earlier_semantics)."""
    like, note = fairness.like_for_like(benchmark), fairness.semantics_note(benchmark)
    if like and run_id is not None:
        earlier = fairness.earlier_semantics(benchmark, run_id)
        if earlier is not None:
            return False, earlier
    return like, note


def _num_workers(constants: dict[str, Any]) -> int | None:
    value = constants.get("num_workers")
    return value if isinstance(value, int) else None


def compare(run: Run | str = "latest", baseline: str = "tokio", candidate: str = "ampere",
            tie_band: float = stats.DEFAULT_TIE_BAND, confidence: float = stats.DEFAULT_CONFIDENCE,
            data_dir: str | None = None) -> Comparison:
    """Compare `candidate` against `baseline` in one run (a Run, a run id, a path or `latest`).

    Only the suites both runtimes ran are compared (in a schema-3 run Tokio runs the io suite,
    which ampere's native program has no rows of). With only one of the two runtimes in the run
    it describes that runtime instead: no ratios,
    every verdict is None and `verdict_reason` says why (the `compare` command refuses such a
    run; the notebooks describe it). Like for like per benchmark: the fairness table.
    """
    if not isinstance(run, Run):
        run = load_run(run, data_dir)
    if baseline == candidate:
        raise AnalysisError(f"baseline and candidate are both {baseline!r}")
    settings = _settings(tie_band, confidence)
    present = [rt for rt in (baseline, candidate) if rt in run.runtimes]
    if not present:
        raise AnalysisError(f"run {run.run_id} has no {baseline} or {candidate} data (runtimes: {', '.join(run.runtimes)})")
    names = (baseline, candidate)
    compared = len(present) == 2
    rows_b, rows_c = run.rows(baseline), run.rows(candidate)
    if compared:  # schema 3: a suite only one of the two ran (tokio's io rows against ampere) is not theirs
        shared = set(rows_b["suite"]) & set(rows_c["suite"])
        rows_b, rows_c = rows_b[rows_b["suite"].isin(shared)], rows_c[rows_c["suite"].isin(shared)]
    benchmarks, runtimes, invocations, modes = analyse(rows_b, rows_c, names, settings,
                                                _num_workers(run.constants),
                                                lambda benchmark: fairness_semantics(benchmark, run.run_id))
    if not compared:
        missing = candidate if baseline in present else baseline
        benchmarks["verdict_reason"] = f"not compared: run has no {missing} data (describing {present[0]} only)"
    spans = {rt: run.spans[run.spans["runtime"] == rt] for rt in names}
    with_metrics = {rt: frozenset(int(k) for k in run.metrics.loc[run.metrics["runtime"] == rt, "invocation"])
                    for rt in names} if not run.metrics.empty else {}
    benchmarks = add_span_cpu(benchmarks, spans, {baseline: rows_b, candidate: rows_c}, names, confidence, tie_band,
                              with_metrics)
    diagnostics = diagnose(benchmarks, runtimes, invocations, {baseline: rows_b, candidate: rows_c},
                           {rt: run.meta.get(rt) for rt in present}, run.constants, compared)
    return Comparison(run_id=run.run_id, baseline=baseline, candidate=candidate, tie_band=tie_band,
                      confidence=confidence, benchmarks=benchmarks, runtimes=runtimes, invocations=invocations,
                      echo=echo_table(benchmarks, runtimes), diagnostics=diagnostics,
                      summary=summarize(benchmarks, names, confidence, compared, tie_band), compared=compared, modes=modes,
                      extra={"machine_load": [machine_load.run_sentence(run.info, run.run_id)]})


def implied_workers(rows: pd.DataFrame, num_workers: int | None) -> pd.DataFrame:
    """Rows of a schema-1 run with the worker count the contract implies where none was recorded:
    0 for micro Tiers 0-2 (no runtime), 1 for echo, the run's num_workers otherwise. Only for
    matching a schema-1 run's rows with a schema-2 run's in `diff_runs`."""
    if not rows["workers"].isna().any():
        return rows
    micro = rows["suite"] == "micro"
    implied = np.where(micro & rows["tier"].isin(schema.NO_RUNTIME_TIERS), 0,
                       np.where(rows["suite"] == "echo", schema.ECHO_WORKERS, num_workers if num_workers else -1))
    filled = rows["workers"].fillna(pd.Series(implied, index=rows.index)).astype("Int64")
    return rows.assign(workers=filled.where(filled >= 0, pd.NA))


def diff_runs(a: Run | str, b: Run | str, runtime: str = "ampere", tie_band: float = stats.DEFAULT_TIE_BAND,
              confidence: float = stats.DEFAULT_CONFIDENCE, data_dir: str | None = None) -> Comparison:
    """Same runtime in two runs: ratio = median(A) / median(B), > 1 means B is faster.

    Verdicts are from B's side: `win` = B faster beyond the band (improvement), `loss` = B
    slower beyond the band (regression; `regressed` column). Sides are labelled "A" and "B";
    `extra` holds the runtime and the run ids.
    """
    run_a = a if isinstance(a, Run) else load_run(a, data_dir)
    run_b = b if isinstance(b, Run) else load_run(b, data_dir)
    for run in (run_a, run_b):
        if runtime not in run.runtimes:
            raise AnalysisError(f"run {run.run_id} has no {runtime} data (runtimes: {', '.join(run.runtimes)})")
    settings = _settings(tie_band, confidence, paired=False)  # two runs: invocation k of each is no round
    names = ("A", "B")
    rows_a, rows_b = run_a.rows(runtime), run_b.rows(runtime)
    if rows_a["workers"].isna().all() != rows_b["workers"].isna().all():  # schema 1 against schema 2
        rows_a = implied_workers(rows_a, _num_workers(run_a.constants))
        rows_b = implied_workers(rows_b, _num_workers(run_b.constants))
    benchmarks, runtimes, invocations, modes = analyse(rows_a, rows_b, names, settings, _num_workers(run_b.constants))
    benchmarks["regressed"] = benchmarks["verdict"] == "loss"
    benchmarks = add_span_cpu(benchmarks, {}, {"A": rows_a, "B": rows_b}, names, confidence, tie_band)
    diagnostics = diagnose(benchmarks, runtimes, invocations, {"A": rows_a, "B": rows_b},
                           {"A": run_a.meta.get(runtime), "B": run_b.meta.get(runtime)}, run_b.constants, True)
    return Comparison(run_id=f"{run_a.run_id}..{run_b.run_id}", baseline="A", candidate="B", tie_band=tie_band,
                      confidence=confidence, benchmarks=benchmarks, runtimes=runtimes, invocations=invocations,
                      echo=echo_table(benchmarks, runtimes), diagnostics=diagnostics,
                      summary=summarize(benchmarks, names, confidence, True, tie_band, paired=False), compared=True,
                      extra={"runtime": runtime, "run_a": run_a.run_id, "run_b": run_b.run_id,
                             "machine_load": [machine_load.run_sentence(r.info, r.run_id) for r in (run_a, run_b)]},
                      modes=modes)


def echo_table(benchmarks: pd.DataFrame, runtimes: pd.DataFrame) -> pd.DataFrame:
    """Echo suite per batch: one row per echo benchmark x runtime (ns per whole batch).

    `avg_ratio` (with its interval) and `p99_ratio` are baseline / this runtime, like every
    ratio here (> 1: faster than the baseline); they are 1 on the baseline's own rows and NaN
    where there is nothing to compare. The candidate's row comes first within a benchmark.
    """
    sides = {(r["label"], r["role"]): r for r in runtimes[runtimes["suite"] == "echo"].to_dict("records")}
    records = []
    for pair in benchmarks[benchmarks["suite"] == "echo"].to_dict("records"):
        for role in ("candidate", "baseline"):
            row = sides.get((pair["label"], role))
            if row is None:
                continue
            record = {c: row[c] for c in ECHO_COLUMNS if c in row}
            if role == "candidate":
                record.update({c: pair[c] for c in ("avg_ratio", "avg_ratio_ci_low", "avg_ratio_ci_high", "p99_ratio")})
            elif pair["compared"]:
                record.update(avg_ratio=1.0, avg_ratio_ci_low=1.0, avg_ratio_ci_high=1.0, p99_ratio=1.0)
            records.append(record)
    frame = pd.DataFrame.from_records(records, columns=ECHO_COLUMNS)
    frame["workers"] = frame["workers"].astype("Int64")
    return frame
