"""Command line: `python -m analysis <command> ...` (argparse).

Commands: compare, runs, diff, bench (analysis/bench.py), build (analysis/build.py) and any optional plug-in module
listed in PLUGIN_MODULES that exists (e.g. `analysis/report.py`).

Adding a subcommand: write a module with
    def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None
that calls `subparsers.add_parser("name", parents=[common], help=...)`, adds its options and
sets `parser.set_defaults(func=run)` where `run(args) -> int` returns the exit code; then list
the module in PLUGIN_MODULES (a missing optional module is skipped silently). `common` gives
the shared `--data-dir` and `--debug` options. Raise `analysis.errors.AnalysisError` for bad
input: main() prints it as one `error:` line and exits 2. Any other exception also becomes
one `error:` line (exit 2) unless `--debug` is given, which shows the traceback.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from typing import Sequence

import pandas as pd

from . import bench, build, schema
from .compare import compare, diff_runs
from .errors import AnalysisError, RunFailed
from .load import load_run, run_history, runs_dir
from .options import add_stat_options
from .render import box_table, render, render_many, use_color

#: Optional subcommand modules, registered when importable (the report engineer adds report.py).
PLUGIN_MODULES: tuple[str, ...] = ("analysis.report", "analysis.bundle", "analysis.ab")
FORMATS = ("table", "json", "csv", "markdown")


def common_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--data-dir", default=None,
                        help="data folder holding runs/ (default: $AMPERE_DATA_DIR or ./data)")
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show Python tracebacks for unexpected errors")
    return common


def _register_compare(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("compare", parents=[common], help="compare runtimes in one run against a baseline",
                       description="Compare each candidate runtime against the baseline in one run.")
    p.add_argument("run", nargs="?", default="latest", help="run id, run folder path, or latest (default)")
    p.add_argument("--format", choices=FORMATS, default="table")
    p.add_argument("--baseline", default="tokio")
    p.add_argument("--candidate", action="append", default=None, metavar="RUNTIME[,RUNTIME...]",
                   help="candidate runtime(s), repeatable or comma-separated; `all` = every runtime of the run "
                        "but the baseline (default: ampere; with --suite io: all)")
    p.add_argument("--suite", choices=schema.SUITES, default=None,
                   help="only this suite's rows (default: every suite of the run)")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                   help="ANSI colours in the table (auto: terminal and no NO_COLOR)")
    add_stat_options(p)
    p.set_defaults(func=cmd_compare)


def candidate_names(spec: list[str] | None, run_runtimes: tuple[str, ...], baseline: str,
                    suite: str | None) -> list[str]:
    """The candidates of `compare`: the named ones (`all`: every runtime of the run but the
    baseline, in schema.KNOWN_RUNTIMES order); without --candidate `ampere`, or `all` for the io suite."""
    names = [n.strip() for item in (spec or ["all" if suite == "io" else "ampere"]) for n in item.split(",") if n.strip()]
    if "all" in names:
        names = sorted((rt for rt in run_runtimes if rt != baseline), key=schema.runtime_rank) or ["all"]
    if not names:
        raise AnalysisError("--candidate: no runtime named")
    return list(dict.fromkeys(names))


def cmd_compare(args: argparse.Namespace) -> int:
    run = load_run(args.run, args.data_dir)
    if args.suite is not None:
        if not (run.data["suite"] == args.suite).any():
            raise AnalysisError(f"{run.path}: no {args.suite} rows (suites in the run: "
                                f"{', '.join(dict.fromkeys(run.data['suite']))})")
        run = run.suite(args.suite)
    candidates = candidate_names(args.candidate, run.runtimes, args.baseline, args.suite)
    missing = [rt for rt in (args.baseline, *candidates) if rt not in run.runtimes]
    if missing:
        what = (f"{args.suite} rows of {' and no '.join(missing)}" if args.suite
                else " and no ".join(f"{rt}.csv" for rt in missing))
        notes = "; ".join(f"{rt} absent: {run.absent[rt]}" for rt in missing if rt in run.absent)
        raise AnalysisError(f"{run.path}: no {what}: nothing to compare "
                            f"(runtimes in the run: {', '.join(run.runtimes)}){'; ' + notes if notes else ''}")
    results = [compare(run, baseline=args.baseline, candidate=c, tie_band=args.tie_band, confidence=args.confidence)
               for c in candidates]
    absent = {rt: why for rt, why in run.absent.items() if rt not in run.runtimes}
    several = len(candidates) > 1 or args.suite == "io" or "all" in ",".join(args.candidate or [])
    sys.stdout.write(render_many(results, args.format, color=use_color(args.color), absent=absent, several=several))
    return 0


def _register_runs(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("runs", parents=[common], help="list run folders",
                       description="List runs with date, host, suites, profile, runtimes, worker counts, schema "
                                   "and status. A run is complete only when every file of it loads: each CSV is "
                                   "read and validated (invalid: the first problem).")
    p.set_defaults(func=cmd_runs)


def cmd_runs(args: argparse.Namespace) -> int:
    history = run_history(args.data_dir)
    if history.empty:
        print(f"no runs in {runs_dir(args.data_dir)}")
        return 0
    rows = []
    for r in history.to_dict("records"):
        r = {k: (None if _missing(v) else v) for k, v in r.items()}
        started = r["started_utc"].strftime("%Y-%m-%d %H:%M:%S UTC") if r["started_utc"] is not None else "—"
        git = "—" if not r["git_commit"] else str(r["git_commit"])[:10] + ("+dirty" if r["git_dirty"] else "")
        status = r["status"] if not r["reason"] else f"{r['status']}: {r['reason']}"
        schema = "—" if r["schema_version"] is None else str(int(r["schema_version"]))
        rows.append([r["run_id"], started, r["host"] or "—", r["suites"] or "—", r["profile"] or "—",
                     r["runtimes"] or "—", r["workers"] or "—", schema, git, status])
    print(box_table(["Run", "Started", "Host", "Suites", "Profile", "Runtimes", "Workers", "Schema", "Git", "Status"],
                    rows, ["l"] * 10))
    return 0


def _missing(value: object) -> bool:
    """None, NaN or NaT (pandas turns None into NaN in string columns)."""
    return value is None or (not isinstance(value, (list, dict, str)) and bool(pd.isna(value)))


def _register_diff(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("diff", parents=[common], help="one runtime across two runs (before/after)",
                       description="Compare one runtime between run A (before) and run B (after). "
                                   "Exit code 1 when any benchmark regressed beyond the tie band.")
    p.add_argument("run_a")
    p.add_argument("run_b")
    p.add_argument("--runtime", default="ampere")
    p.add_argument("--format", choices=FORMATS, default="table")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    add_stat_options(p)
    p.set_defaults(func=cmd_diff)


def cmd_diff(args: argparse.Namespace) -> int:
    result = diff_runs(args.run_a, args.run_b, runtime=args.runtime, tie_band=args.tie_band,
                       confidence=args.confidence, data_dir=args.data_dir)
    sys.stdout.write(render(result, args.format, color=use_color(args.color)))
    regressed = result.benchmarks[result.benchmarks["regressed"]]
    if not regressed.empty:
        names = ", ".join(regressed["label"])
        print(f"regression: {len(regressed)} benchmark(s) slower in B beyond the tie band: {names}", file=sys.stderr)
        return 1
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m analysis",
                                     description="Ampere benchmark lab: run, compare and diff benchmark runs.")
    parser.add_argument("--debug", action="store_true", help="show Python tracebacks for unexpected errors")
    common = common_parser()
    sub = parser.add_subparsers(dest="command", metavar="<command>", required=True)
    _register_compare(sub, common)
    _register_runs(sub, common)
    _register_diff(sub, common)
    bench.register(sub, common)
    build.register(sub, common)
    for name in PLUGIN_MODULES:
        if importlib.util.find_spec(name) is not None:
            importlib.import_module(name).register(sub, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        return int(args.func(args))
    except AnalysisError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except RunFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # the CLI boundary: never a traceback unless asked for
        if debug:
            raise
        print(f"error: unexpected {type(exc).__name__}: {exc} (run with --debug for the traceback)", file=sys.stderr)
        return 2
