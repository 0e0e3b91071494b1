"""Across runs: each benchmark's ratio per run, regressions between consecutive runs, and the
per-runtime medians of every run (for trend plots).

`history_data` compares every complete run of a profile (through each run's cached comparison,
artefact.py, when a report folder is given) and diffs consecutive runs of the candidate
(compare.diff_runs; `regressed` = slower in the later run beyond the tie band; each pair's diff
cached under `<report dir>/history/`, artefact.cached_diff). With every file cached, no run's
CSV is read. Runs that
cannot be used are listed in `History.left_out` with the reason, never raised.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import artefact, schema, stats
from .compare import diff_runs
from .errors import AnalysisError
from .load import Run, load_run, run_history
from .machines import IDENTITY_FIELDS, machine_label, run_machine

RATIO_COLUMNS = ["run_id", "run_label", "position", "suite", "tier", "benchmark", "param", "workers", "label",
                 "ratio", "ratio_ci_low", "ratio_ci_high", "verdict", "compared"]
REGRESSION_COLUMNS = ["run_a", "run_b", "position", "suite", "tier", "benchmark", "param", "workers", "label",
                      "ratio", "ratio_ci_low", "ratio_ci_high", "verdict_reason"]
RUN_COLUMNS = ["run_id", "position", "run_label", "started_utc", "git_commit", "git_dirty", "profile", "compared", "machine_load", "disturbed"]
LEFT_OUT_COLUMNS = ["run_id", "reason"]


@dataclass
class History:
    """Ratios per run, regressions between consecutive runs, and the runs left out (why)."""

    runs: pd.DataFrame
    ratios: pd.DataFrame
    regressions: pd.DataFrame
    left_out: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=LEFT_OUT_COLUMNS))


def run_label(run_id: str, started: Any, commit: Any, dirty: Any) -> str:
    stamp = started.strftime("%Y-%m-%d %H:%M") if hasattr(started, "strftime") and not pd.isna(started) else run_id
    has_commit = isinstance(commit, str) and commit != ""
    git = (commit[:7] + ("+" if dirty is True else "")) if has_commit else "no git"
    return f"{stamp}\n{git}"


def _on_machine(history: pd.DataFrame, hostname: str | None, machine: tuple[Any, ...] | None,
                   left_out: list[dict[str, str]]) -> pd.DataFrame:
    """The runs of `history` on the given machine (its identity; else the host name), the others
    left out: another machine's times are not a regression (the machines page compares them).
    Two machines can share a host name (every KVM guest here is `vm`): the identity tells them apart."""
    keep = []
    for r in history.itertuples():
        if machine is not None:
            theirs = run_machine(r.path)
            same = theirs is None or theirs == machine  # a run naming no machine is not known to differ
            label = machine_label(dict(zip(IDENTITY_FIELDS, theirs))) if theirs else ""
        else:
            same = hostname is None or r.host == hostname
            label = f"host {r.host}"
        if not same:
            left_out.append({"run_id": r.run_id, "reason": f"another machine ({label}): see the machines page"})
        keep.append(same)
    return history[keep] if len(history) else history


def _complete_runs(data_dir: str | os.PathLike[str] | None, profile: str | None,
                   left_out: list[dict[str, str]], hostname: str | None = None,
                   machine: tuple[Any, ...] | None = None) -> pd.DataFrame:
    history = _on_machine(run_history(data_dir, validate=False), hostname, machine, left_out)
    for r in history[history["status"] != "complete"].itertuples():
        left_out.append({"run_id": r.run_id, "reason": f"not complete ({r.status})"})
    complete = history[history["status"] == "complete"]
    if profile is not None:
        for r in complete[complete["profile"] != profile].itertuples():
            left_out.append({"run_id": r.run_id, "reason": f"profile {r.profile}, not {profile} (other sizes)"})
        complete = complete[complete["profile"] == profile]
    return complete


def history_data(data_dir: str | os.PathLike[str] | None, baseline: str, candidate: str, tie_band: float,
                 confidence: float, profile: str | None = None, limit: int = 20,
                 report_dir: str | Path | None = None, hostname: str | None = None,
                 machine: tuple[Any, ...] | None = None) -> History:
    """Compare every complete run (of `profile`, newest `limit`) and diff consecutive runs.

    Runs of another profile are left out: their sizes differ, so their times are not
    comparable. `report_dir`: where each run's comparison is cached (artefact.py); without it
    every run is compared here. `machine`: only runs of that machine (run_machine of the page's
    run); else `hostname`: only runs of that host (run.json `hostname`).
    """
    left_out: list[dict[str, str]] = []
    complete = _complete_runs(data_dir, profile, left_out, hostname, machine)
    for r in complete.iloc[:-limit].itertuples() if len(complete) > limit else ():
        left_out.append({"run_id": r.run_id, "reason": f"older than the newest {limit} complete runs"})
    complete = complete.iloc[-limit:]
    runs_rows, ratio_frames, regression_frames = [], [], []
    used: list[tuple[str, Path]] = []
    loaded: dict[Path, Run] = {}  # without a report dir: each run loaded once for both uses
    for item in complete.itertuples():
        try:
            cmp = _comparison(Path(item.path), baseline, candidate, tie_band, confidence, report_dir, loaded)
        except AnalysisError as exc:
            left_out.append({"run_id": item.run_id, "reason": str(exc)})
            continue
        position = len(runs_rows)
        label = run_label(item.run_id, item.started_utc, item.git_commit, item.git_dirty)
        runs_rows.append({"run_id": item.run_id, "position": position, "run_label": label,
                          "started_utc": item.started_utc, "git_commit": item.git_commit, "git_dirty": item.git_dirty,
                          "profile": item.profile, "compared": cmp.compared,
                          "machine_load": (cmp.extra.get("machine_load") or [""])[0],
                          "disturbed": (cmp.extra.get("machine_load") or [""])[0].startswith("DISTURBED")})
        frame = cmp.benchmarks[cmp.benchmarks["headline"].astype(bool)]
        frame = frame[[c for c in RATIO_COLUMNS if c in frame.columns]].copy()
        frame.insert(0, "position", position)
        frame.insert(0, "run_label", label)
        frame.insert(0, "run_id", item.run_id)
        ratio_frames.append(frame)
        used.append((item.run_id, Path(item.path)))
    for position_b, ((id_a, folder_a), (id_b, folder_b)) in enumerate(zip(used, used[1:]), start=1):
        try:
            diff = _diff(folder_a, folder_b, candidate, tie_band, confidence, report_dir, loaded)
        except AnalysisError as exc:
            left_out.append({"run_id": id_b, "reason": f"no diff with {id_a}: {exc}"})
            continue
        bad = diff.benchmarks[diff.benchmarks["regressed"].astype(bool) & diff.benchmarks["headline"].astype(bool)]
        if not bad.empty:
            frame = bad[[c for c in REGRESSION_COLUMNS if c in bad.columns]].copy()
            frame.insert(0, "position", position_b)
            frame.insert(0, "run_b", id_b)
            frame.insert(0, "run_a", id_a)
            regression_frames.append(frame)
    return History(runs=pd.DataFrame.from_records(runs_rows, columns=RUN_COLUMNS),
                   ratios=pd.concat(ratio_frames, ignore_index=True) if ratio_frames
                   else pd.DataFrame(columns=RATIO_COLUMNS),
                   regressions=pd.concat(regression_frames, ignore_index=True) if regression_frames
                   else pd.DataFrame(columns=REGRESSION_COLUMNS),
                   left_out=pd.DataFrame.from_records(left_out, columns=LEFT_OUT_COLUMNS))


def _comparison(folder: Path, baseline: str, candidate: str, tie_band: float, confidence: float,
                report_dir: str | Path | None, loaded: dict[Path, Run]) -> Any:
    if report_dir is None:
        return artefact.compute(_load(folder, loaded), baseline, candidate, tie_band, confidence).primary
    return artefact.cached_comparisons(folder, report_dir, baseline, candidate, tie_band, confidence).primary


def _load(folder: Path, loaded: dict[Path, Run]) -> Run:
    if folder not in loaded:
        loaded[folder] = load_run(folder)
    return loaded[folder]


def _diff(folder_a: Path, folder_b: Path, runtime: str, tie_band: float, confidence: float,
          report_dir: str | Path | None, loaded: dict[Path, Run]) -> Any:
    """The candidate in run A against run B: cached per pair under the report dir when one is given."""
    if report_dir is None:
        return diff_runs(_load(folder_a, loaded), _load(folder_b, loaded), runtime=runtime, tie_band=tie_band,
                         confidence=confidence)
    return artefact.cached_diff(folder_a, folder_b, runtime, tie_band, confidence, report_dir)


def never_compared(history: History) -> list[str]:
    """Labels of benchmarks that no run compared (one runtime only), in display order."""
    ratios = history.ratios
    if ratios.empty:
        return []
    flags = ratios.groupby(["suite", "tier", "benchmark", "param", "workers", "label"], sort=False,
                           dropna=False)["compared"].any().reset_index()
    missing = flags[~flags["compared"].astype(bool)]
    keys = [schema.bench_sort_key(s, int(t), b, p, w) for s, t, b, p, w in
            zip(missing["suite"], missing["tier"], missing["benchmark"], missing["param"], missing["workers"])]
    return [label for _, label in sorted(zip(keys, missing["label"]), key=lambda pair: pair[0])]


HISTORY_COLUMNS = ["run_id", "started_utc", "runtime", "suite", "tier", "benchmark", "param", "workers", "label",
                   "n", "median_ns_per_op", "ci_low", "ci_high", "bytes_per_op", "allocs_per_op"]


def benchmark_history(data_dir: str | None = None, runtime: str | None = None,
                      confidence: float = stats.DEFAULT_CONFIDENCE) -> pd.DataFrame:
    """Median ns/op with its interval (stats.median_centre) per complete run, runtime and benchmark.

    For trend plots across runs. Runs that fail validation are left out (run_history marks them
    invalid).
    """
    records = []
    history = run_history(data_dir)
    for item in history[history["status"] == "complete"].itertuples():
        run = load_run(item.path)
        for key, rows in run.data.groupby(["runtime", *schema.BENCH_KEY], sort=False, dropna=False):
            rt, suite, tier, name, param, workers = key
            if runtime is not None and rt != runtime:
                continue
            sample = [g["ns_per_op"].to_numpy(dtype=np.float64) for _, g in rows.groupby("invocation", sort=True)]
            centre = stats.median_centre(sample, confidence)
            records.append({"run_id": run.run_id, "started_utc": item.started_utc, "runtime": rt,
                            "suite": suite, "tier": int(tier), "benchmark": name, "param": param, "workers": workers,
                            "label": schema.bench_label(name, param), "n": int(len(rows)),
                            "median_ns_per_op": centre.estimate, "ci_low": centre.low, "ci_high": centre.high,
                            "bytes_per_op": float((rows["alloc_bytes"] / rows["ops"]).mean()),
                            "allocs_per_op": float((rows["alloc_count"] / rows["ops"]).mean())})
    frame = pd.DataFrame.from_records(records, columns=HISTORY_COLUMNS)
    frame["workers"] = frame["workers"].astype("Int64")
    return frame
