"""Regenerates the documents made from the committed reference run.

    .venv/bin/python scripts/reference_docs.py [RUN]

Writes (atomically):
- docs/img/reference-micro-forest.png — the overview's forest plot (analysis.figures.overview)
  restricted to the micro suite, shown in the README;
- runtime/bench/RESULTS.md — the machine, the summary lines, every micro table (the
  `compare --format markdown` tables), the echo suite in the shape of seed 004 (batch average
  and p99 per batch size, ratios, the size sweeps), and when the run has them: wall time against
  CPU time, every runtime variant against the baseline, and the worker-sweep table.

Every number comes from the analysis package; this script only formats.
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from analysis import artefact, load_run, machine_table, notebook, schema, tables, words  # noqa: E402
from analysis.figures import overview  # noqa: E402
from analysis.files import atomic_writer, write_text_atomic  # noqa: E402
from analysis.fmt import fmt_ns  # noqa: E402
from analysis.render import md_table, render  # noqa: E402

FIGURE = ROOT / "docs" / "img" / "reference-micro-forest.png"
RESULTS = ROOT / "runtime" / "bench" / "RESULTS.md"


def forest(comparison) -> None:
    micro = copy.copy(comparison)
    micro.benchmarks = comparison.benchmarks[comparison.benchmarks["suite"] == "micro"].reset_index(drop=True)
    figure = overview.forest_plot(micro)
    with atomic_writer(FIGURE, binary=True) as out:
        figure.savefig(out, dpi=110, format="png")


def micro_markdown(comparison) -> str:
    """The per-tier tables of `compare --format markdown`, without its echo and diagnostics."""
    text = render(comparison, "markdown")
    keep = []
    for block in text.split("\n### ")[1:]:
        title = block.splitlines()[0]
        if title.startswith("Tier"):
            keep.append("### " + block.strip())
    return "\n\n".join(keep)


def echo_markdown(comparison) -> str:
    table = comparison.echo
    wide = table.pivot_table(index=["benchmark", "param"], columns="runtime",
                             values=["avg_ns", "p99_ns"], aggfunc="first")
    ratios = table[table["role"] == "candidate"].set_index(["benchmark", "param"])[["avg_ratio", "avg_ratio_ci_low", "avg_ratio_ci_high", "p99_ratio"]]
    verdicts = comparison.benchmarks.set_index(["benchmark", "param"])["verdict"]
    lines = ["| benchmark | param | ampere avg | Tokio avg | ampere p99 | Tokio p99 | avg ratio Tokio/ampere [95% CI] | p99 ratio | verdict |",
             "|---|---|--:|--:|--:|--:|--:|--:|---|"]
    order = table[table["role"] == "candidate"][["benchmark", "param"]].itertuples(index=False)
    for benchmark, param in order:  # noqa: B007
        row = wide.loc[(benchmark, param)]
        r = ratios.loc[(benchmark, param)]
        lines.append(
            f"| {benchmark} | {param} | {fmt_ns(row[('avg_ns', 'ampere')])} | {fmt_ns(row[('avg_ns', 'tokio')])} "
            f"| {fmt_ns(row[('p99_ns', 'ampere')])} | {fmt_ns(row[('p99_ns', 'tokio')])} "
            f"| {r['avg_ratio']:.2f}× [{r['avg_ratio_ci_low']:.2f}, {r['avg_ratio_ci_high']:.2f}] "
            f"| {r['p99_ratio']:.2f}× | {verdicts.loc[(benchmark, param)]} |")
    return "\n".join(lines)


def machine_markdown(run) -> str:
    table = machine_table(run)
    lines = ["| | " + " | ".join(c for c in table.columns if c != "same") + " |",
             "|---|" + "---|" * (len(table.columns) - 1)]
    for field, row in table.iterrows():
        cells = [str(row[c]) for c in table.columns if c != "same"]
        lines.append(f"| {field} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def frame_markdown(frame: pd.DataFrame) -> str:
    return md_table(list(frame.columns), frame.astype(str).values.tolist(), ["l"] * len(frame.columns))


def extra_sections(rc) -> str:
    """CPU view, variants and worker sweep: only the parts this run recorded."""
    cmp = rc.primary
    parts = []
    if cmp.benchmarks["cpu_ratio"].notna().any():
        lines = "\n".join(f"- {line}" for line in words.cpu_sentences(cmp))
        parts.append(f"## Wall time against CPU time\n\n{lines}\n\n{frame_markdown(tables.cpu_table(cmp))}")
    if len(rc.comparisons) > 1:
        lines = "\n".join(f"- {words.variant_sentence(c, rc.variants.get(c.candidate, {}).get('settings') or {})}"
                           for c in rc.comparisons.values())
        parts.append(f"## Runtime variants against {schema.display_name(rc.baseline)}\n\n{lines}")
    sweep = tables.scaling_table(cmp)
    if not sweep.empty:
        rows = tables.swept(cmp.benchmarks)
        lines = "\n".join(f"- {words.scaling_sentence(g, rc.baseline, cmp.candidate)}"
                           for _, g in rows.groupby(["benchmark", "param"], sort=False))
        parts.append(f"## Worker sweep\n\n{lines}\n\n{frame_markdown(sweep)}")
    return "\n\n".join(parts)


def results_markdown(run, rc) -> str:
    comparison = rc.primary
    info = run.info
    commit = (info.get("git") or {}).get("commit") or "unknown"
    summary = "\n".join(comparison.summary["lines"])
    return f"""# Results of the reference run

Generated by `scripts/reference_docs.py` from the committed run
[`data/runs/{run.run_id}/`](../../data/runs/{run.run_id}/) — do not edit by hand.
Run with `make report` on a fresh clone (profile `{info.get('profile')}`, {info.get('invocations')}
invocations each, alternating {', '.join(run.runtimes)}, git `{commit[:10]}`).
Ratio of a row = Tokio ÷ ampere time per operation as the tables print it: the paired median —
per round (invocation k of both runtimes) the ratio of the two invocation medians, and the median
of those ratios over the rounds, with its sign-test 95% interval (> 1: ampere faster; the
verdict: that interval against the ±5% tie band, log-symmetric). The summary's geometric means
average the rows' ratios of geometric means over the rounds, with a t interval built over the
rounds (each round's mean over the rows), not over the rows: every row of a round shares its
processes (analysis/README.md, docs/coverage.md). What each side times: the fairness table in
[README.md](README.md).

## Machine

{machine_markdown(run)}

The machine has 2 logical cores and Tiers 3–4 run 4 workers: they oversubscribe the CPU, so
their timings can be bimodal (the intervals show it).

## Summary

```
{summary}
```

## Micro suite

{micro_markdown(comparison)}

## Echo suite (per batch, after seed 004)

One sample = one batch of n round trips (runtime with 1 worker, driven from the main thread).
Average and 99th percentile of the batch latency, their ratio Tokio ÷ ampere (> 1: ampere
faster) and the verdict on the median time per round trip.

{echo_markdown(comparison)}

{extra_sections(rc)}
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", nargs="?", default="latest")
    args = parser.parse_args()
    notebook.setup_matplotlib()
    data_dir = str(ROOT / "data")
    run = load_run(args.run, data_dir=data_dir)
    rc = artefact.compute(run, "tokio", "ampere", 0.05, 0.95)
    forest(rc.primary)
    write_text_atomic(RESULTS, results_markdown(run, rc))
    print(FIGURE)
    print(RESULTS)
    return 0


if __name__ == "__main__":
    pd.set_option("display.width", 200)
    sys.exit(main())
