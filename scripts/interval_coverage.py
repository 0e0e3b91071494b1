"""Coverage of the ratio intervals, measured by resampling rounds of a real run and on a model.

    .venv/bin/python scripts/interval_coverage.py [--run data/supplementary/20261123T152125Z-vm]
        [--reference data/runs/20261126T023315Z-vm] [--draws 1000] [--out docs/coverage.md]

1. Real rounds (analysis.coverage.resampled_coverage): every row (benchmark x worker count,
   wall and CPU) of the 30-invocation run; k = 5, 10, 15 rounds drawn without and with
   replacement, `draws` times; the share of the 95% intervals of each method (--methods, default
   every coverage.METHODS but the slow bootstrap) that contain the whole run's value of the
   estimand of the method used (a rule such as "t unless multimodal" decides per draw).
2. The bimodal Tier 3 rows the 30-invocation run does not have (mutex_contended,
   semaphore_contended at 2 and 4 workers) from the reference run (10 rounds; k = 5 without and
   with replacement, k = 10 with replacement only: 10 of 10 without is the run itself).
   Then the headline (coverage.geomean_coverage): the geometric mean over the wall rows (and
   over the CPU rows) of the 30-invocation run, the same rounds drawn for every row.
   Then the headline's aggregate methods (coverage.AGGREGATE_METHODS: the interval over rounds
   the summaries use since issue 43, a whole-round bootstrap, and the old independent
   combination) on every suite of --reference: per candidate against the baseline, the
   like-for-like headline rows of micro, echo, net and io (k = 5 without and with replacement,
   k = 10 with replacement).
3. Synthetic bimodal rounds (coverage.bimodal_rounds: a rare mode 8x faster in 10% of the
   candidate's invocations, shared drift) and the same model without the rare mode; fresh runs,
   true values from a 200,000-round run of the model.
Writes the tables as markdown to --out (atomically) and prints them. Seeded.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from analysis import coverage, load_run  # noqa: E402
from analysis.benchmarks import is_headline  # noqa: E402
from analysis.compare import fairness_semantics  # noqa: E402

COUNTS = (5, 10, 15)
DEFAULT_METHODS = tuple(m for m in coverage.METHODS if m != "paired bootstrap")
SEED = 20261126
CONTENDED = ("mutex_contended", "semaphore_contended")
PARTS = ("real", "reference", "headline", "aggregates", "model")
AGGREGATE_SUITES = ("micro", "echo", "net", "io")


def row_rounds(run, baseline: str, candidate: str, benchmarks: tuple[str, ...] | None = None):
    """{(label, 'wall'|'cpu'): (baseline rounds, candidate rounds)} over the rounds both sides have."""
    out = {}
    sides = {}
    for rt in (baseline, candidate):
        rows = run.rows(rt)
        rows = rows[rows["suite"] == "micro"]
        if benchmarks:
            rows = rows[rows["benchmark"].isin(benchmarks) & (rows["tier"] >= 3) & rows["workers"].isin([2, 4])]
        rows = rows.assign(cpu_per_op=rows["cpu_ns"] / rows["ops"])
        for (bench, workers), g in rows.groupby(["benchmark", "workers"]):
            for column, what in (("ns_per_op", "wall"), ("cpu_per_op", "cpu")):
                rounds = {int(k): x[column].to_numpy(dtype=float)
                          for k, x in g.sort_values(["invocation", "iteration"]).groupby("invocation")}
                sides.setdefault((f"{bench} w={int(workers)}", what), {})[rt] = rounds
    for key, pair in sides.items():
        if len(pair) == 2:
            shared = sorted(set(pair[baseline]) & set(pair[candidate]))
            out[key] = ([pair[baseline][k] for k in shared], [pair[candidate][k] for k in shared])
    return out


def real_table(rows, counts, draws: int, methods: tuple[str, ...]) -> list[str]:
    """One line per row and k; k >= the row's rounds only with replacement (without: the run)."""
    head = "| row | k | " + " | ".join(f"{m} (w/o, with)" for m in methods) + " |"
    lines = [head, "|---|--:|" + "--:|" * len(methods)]
    for (label, what), (base, cand) in sorted(rows.items()):
        for k in counts:
            if k > len(base):
                continue
            schemes = (True,) if k == len(base) else (False, True)
            cells = {r: coverage.resampled_coverage(base, cand, k, r, draws, SEED, methods=methods) for r in schemes}
            lines.append(f"| {label} {what} ({len(base)} rounds) | {k} | "
                         + " | ".join(f"{_cell(cells, False, m)}, {cells[True][m]:.0%}" for m in methods) + " |")
            print(lines[-1], flush=True)
    return lines


def _cell(cells: dict, replace: bool, method: str) -> str:
    return f"{cells[replace][method]:.0%}" if replace in cells else "—"


def headline_table(rows, draws: int) -> list[str]:
    """Coverage of the headline geometric mean's interval over the wall rows and over the CPU rows."""
    methods = ("paired median", "paired t")
    lines = ["| rows | k | " + " | ".join(f"{m} (w/o, with)" for m in methods) + " |",
             "|---|--:|" + "--:|" * len(methods)]
    for what in ("wall", "cpu"):
        group = [pair for (_, w), pair in sorted(rows.items()) if w == what]
        for k in COUNTS:
            cells = {m: [coverage.geomean_coverage(group, k, r, draws, m, SEED) for r in (False, True)]
                     for m in methods}
            lines.append(f"| geometric mean of the {len(group)} {what} rows | {k} | "
                         + " | ".join(f"{a:.0%}, {b:.0%}" for a, b in cells.values()) + " |")
            print(lines[-1], flush=True)
    return lines


def suite_rounds(run, baseline: str, candidate: str, suite: str):
    """The like-for-like headline rows of one suite (wall time), each as (baseline rounds,
    candidate rounds) over the rounds both sides have, rows with fewer rounds than the most
    left out (the aggregate draws the same rounds from every row)."""
    num_workers = run.constants.get("num_workers")
    sides = {}
    for rt in (baseline, candidate):
        rows = run.rows(rt)
        rows = rows[(rows["suite"] == suite) & ~((rows["suite"] == "micro") & (rows["tier"] == 0))]
        for (tier, bench, param, workers), g in rows.groupby(["tier", "benchmark", "param", "workers"], dropna=False):
            ident = {"suite": suite, "tier": int(tier), "benchmark": bench, "param": param,
                     "workers": None if workers != workers else int(workers)}
            if not is_headline(ident, num_workers) or not fairness_semantics(bench, run.run_id)[0]:
                continue
            rounds = {int(k): x["ns_per_op"].to_numpy(dtype=float)
                      for k, x in g.sort_values(["invocation", "iteration"]).groupby("invocation")}
            sides.setdefault((bench, param, ident["workers"]), {})[rt] = rounds
    out = []
    for pair in sides.values():
        if len(pair) == 2:
            shared = sorted(set(pair[baseline]) & set(pair[candidate]))
            out.append(([pair[baseline][k] for k in shared], [pair[candidate][k] for k in shared]))
    most = max((len(b) for b, _ in out), default=0)
    return [r for r in out if len(r[0]) == most]


def aggregates_table(run, baseline: str, draws: int) -> list[str]:
    """Coverage of the aggregate methods on every suite and candidate of `run`."""
    methods = coverage.AGGREGATE_METHODS
    lines = ["| candidate, suite (rows, rounds) | k | " + " | ".join(f"{m} (w/o, with)" for m in methods) + " |",
             "|---|--:|" + "--:|" * len(methods)]
    for candidate in [rt for rt in run.runtimes if rt != baseline]:
        for suite in AGGREGATE_SUITES:
            rows = suite_rounds(run, baseline, candidate, suite)
            if len(rows) < 2:
                continue
            n = len(rows[0][0])
            for k in (5, n):
                schemes = (True,) if k == n else (False, True)
                cells = {m: {r: coverage.geomean_coverage(rows, k, r, draws, m, SEED) for r in schemes} for m in methods}
                lines.append(f"| {candidate}, {suite} ({len(rows)} rows, {n} rounds) | {k} | "
                             + " | ".join(f"{c[False]:.0%}, {c[True]:.0%}" if False in c else f"—, {c[True]:.0%}"
                                          for m, c in cells.items()) + " |")
                print(lines[-1], flush=True)
    return lines


def model_table(draws: int, methods: tuple[str, ...]) -> list[str]:
    lines = ["| model | k | " + " | ".join(methods) + " |", "|---|--:|" + "--:|" * len(methods)]
    for name, generate in (("bimodal: 10% of candidate invocations 8x faster", coverage.bimodal_rounds()),
                           ("unimodal (same model, no rare mode)", coverage.bimodal_rounds(rare_share=0.0))):
        truths = coverage.model_truths(generate)
        for k in COUNTS:
            cov = coverage.model_coverage(generate, truths, k, draws, SEED, methods=methods)
            lines.append(f"| {name} | {k} | " + " | ".join(f"{cov[m]:.0%}" for m in methods) + " |")
            print(lines[-1], flush=True)
    return lines


def write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", default=str(ROOT / "data/supplementary/20261123T152125Z-vm"))
    parser.add_argument("--reference", default=str(ROOT / "data/runs/20261126T023315Z-vm"))
    parser.add_argument("--draws", type=int, default=1000, help="draws per row, k and scheme (default 1000)")
    parser.add_argument("--out", default=None, help="markdown file to write the tables to")
    parser.add_argument("--baseline", default="tokio")
    parser.add_argument("--candidate", default="ampere")
    parser.add_argument("--parts", default=",".join(PARTS), help="which tables: real,reference,headline,model")
    parser.add_argument("--methods", default=",".join(DEFAULT_METHODS),
                        help=f"comma-separated, of: {', '.join(coverage.METHODS)}")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    methods = tuple(args.methods.split(","))
    unknown = [m for m in methods if m not in coverage.METHODS]
    if unknown:
        parser.error(f"unknown method {unknown[0]!r} (one of {', '.join(coverage.METHODS)})")
    text = [f"Coverage of 95% ratio intervals ({args.draws} draws per cell; cells: without, with replacement)", ""]
    if "real" in parts:
        text += [f"### Resampled rounds of {Path(args.run).name}", ""]
        text += real_table(row_rounds(load_run(args.run), args.baseline, args.candidate), COUNTS, args.draws, methods)
    if "reference" in parts:
        text += ["", f"### Resampled rounds of {Path(args.reference).name} (bimodal Tier 3 rows)", ""]
        text += real_table(row_rounds(load_run(args.reference), args.baseline, args.candidate, CONTENDED), (5, 10),
                           args.draws, methods)
    if "headline" in parts:
        text += ["", f"### The headline geometric mean: resampled rounds of {Path(args.run).name}", ""]
        text += headline_table(row_rounds(load_run(args.run), args.baseline, args.candidate), args.draws)
    if "aggregates" in parts:
        text += ["", f"### The headline's aggregate methods: resampled rounds of {Path(args.reference).name}", ""]
        text += aggregates_table(load_run(args.reference), args.baseline, args.draws)
    if "model" in parts:
        text += ["", "### Synthetic rounds (fresh runs of the model)", ""]
        text += model_table(args.draws, methods)
    if args.out:
        write_atomic(Path(args.out), "\n".join(text) + "\n")
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(main())
