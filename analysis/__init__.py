"""Ampere benchmark lab: load run folders, compare runtimes, diff runs, orchestrate benchmarks.

Public API for notebooks (each returns plain pandas objects to plot):

    run = load_run("latest")                      # Run: .data, .meta, .info, .runtimes
    cmp = compare(run)                            # Comparison: .benchmarks, .runtimes, ...
    echo_table(cmp); machine_table(run); fairness_table(); run_history()
    diff_runs("<run id A>", "<run id B>", runtime="ampere")
    benchmark_history(runtime="ampere")

See analysis/README.md for the statistics and the CLI (`python -m analysis --help`).
"""

from .compare import (Comparison, benchmark_history, compare, diff_runs, echo_table)
from .errors import AnalysisError, DataError
from .fairness import FAIRNESS_COLUMNS, fairness_table, parse_fairness_table
from .load import (Run, latest_run_path, load_run, machine_table, read_bench_csv, resolve_data_dir,
                   run_history)
from .render import render

__all__ = [
    "AnalysisError", "Comparison", "DataError", "FAIRNESS_COLUMNS", "Run", "benchmark_history", "compare",
    "diff_runs", "echo_table", "fairness_table", "latest_run_path", "load_run", "machine_table",
    "parse_fairness_table", "read_bench_csv", "render", "resolve_data_dir", "run_history",
]
