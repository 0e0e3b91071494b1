"""Ampere benchmark lab: load run folders, compare runtimes, diff runs, orchestrate benchmarks.

Public API for notebooks (each returns plain pandas objects to plot):

    run = load_run("latest")                      # Run: .data, .meta, .info, .runtimes, .metrics
    cmp = compare(run)                            # Comparison: .benchmarks, .runtimes, .echo, ...
    machine_table(run); fairness_table(); run_history()
    diff_runs("<run id A>", "<run id B>", runtime="ampere")
    benchmark_history(runtime="ampere")

Layers (each module imports only modules of its own or a lower layer; tests/analysis/
test_layers.py checks it): loading (errors, files, schema, bench_csv, metrics, load,
fairness) -> statistics (stats, ranks) -> comparison (benchmarks, diagnostics, summary, compare,
artefact, history) -> presentation (fmt, document, render, words, tables, figures, notebook, index_page)
-> commands (options, build, child, bench, report, cli). See analysis/README.md.
"""

from .compare import Comparison, compare, diff_runs
from .errors import AnalysisError, DataError
from .fairness import FAIRNESS_COLUMNS, fairness_table, parse_fairness_table
from .history import benchmark_history
from .load import Run, latest_run_path, load_run, machine_table, read_bench_csv, resolve_data_dir, run_history
from .render import render

__all__ = [
    "AnalysisError", "Comparison", "DataError", "FAIRNESS_COLUMNS", "Run", "benchmark_history", "compare",
    "diff_runs", "fairness_table", "latest_run_path", "load_run", "machine_table", "parse_fairness_table",
    "read_bench_csv", "render", "resolve_data_dir", "run_history",
]
