"""Diagnostics: reasons not to trust a number, as structured records (never text to parse back).

`diagnose` turns the frames of a comparison (benchmarks.analyse) and the two sides' metadata
into a frame of records (DIAGNOSTIC_COLUMNS: level, code, the benchmark key, runtime, message);
the CLI, the JSON document and the notebooks all show these records. Each check returns rows
(level `warning` or `info`):
- few_samples: fewer than schema.MIN_SAMPLES values on a side (a 95% median CI is then
  [min, max] at best, and the interval is flagged `widest`);
- quantisation: few distinct timings (< half of the values distinct), or every elapsed_ns a
  multiple of 1000 (a microsecond clock) — per-op times are then multiples of a step;
- drift: within an invocation, Kendall tau of elapsed vs iteration with p < 0.01 and a
  Benjamini-Hochberg q < 0.05 across all invocations compared (a trend: warm-up or thermal
  drift left in the samples), or a first iteration outside the range of the rest and more than
  max(OUTLIER_MADS robust SDs, OUTLIER_RELATIVE x median) away from their median;
- step_change: a level shift between the first and the second half of the iterations, the same
  way in most invocations (modes.step_change: Wilcoxon signed-rank p < 0.01 over the invocations
  and a median shift of at least 10%): a warm-up that the measured window still contains;
- multimodal: a side whose invocation medians or iterations fall into modes (modes.py); the
  row's `modes` sentence then says per mode who wins (one geometric mean describes neither);
- rounds_dropped: rounds (invocation k) that only one side has, left out of the paired ratio;
- machine / build_mode: the two sides' meta.json machine blocks differ, or a side's
  build_mode does not look like a release build;
- oversubscribed: fewer logical cores than num_workers, so Tier 3-4 timings may be bimodal;
- control_not_tie: a Tier 0 control is a win or loss (the two harnesses differ) or
  inconclusive (the measurement cannot resolve the tie band);
- absurd_sample: a sample that cannot be right against its row or the machine (31 years;
  more CPU than the cores could give), analysis/sanity.py;
- missing_meta, not_compared, alloc_varies, invocation_effect (informational).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from . import sanity, schema

DIAGNOSTIC_COLUMNS = ["level", "code", "suite", "tier", "benchmark", "param", "workers", "runtime", "message"]
#: Drift test: Kendall tau of elapsed vs iteration within an invocation is flagged when its
#: p-value is below DRIFT_ALPHA, its Benjamini-Hochberg q-value across all invocations of the
#: comparison is below DRIFT_FDR (without the FDR step ~1% of invocations would be flagged by
#: chance), and |tau| is at least DRIFT_TAU_MIN: with 500 echo batches a negligible trend
#: (|tau| ~ 0.1) has p ~ 1e-4, so significance alone would flag nearly every echo row.
DRIFT_ALPHA = 0.01
DRIFT_FDR = 0.05
DRIFT_TAU_MIN = 0.3
#: Share of variance between invocations above which (with F-test p < DRIFT_ALPHA) we say so.
INVOCATION_SHARE_NOTE = 0.5


def check_modes(benchmarks: pd.DataFrame, sides: pd.DataFrame) -> list[dict[str, Any]]:
    """step_change and multimodal per side; rounds_dropped per row."""
    out = []
    for row in sides.to_dict("records"):
        if row.get("step_change") is True:
            out.append(_row("warning", "step_change",
                            f"the first half of the iterations is {row['step_shift']:+.0%} off the second half "
                            f"(Wilcoxon p {row['step_pvalue']:.1g} over the invocations): warm-up left in the "
                            "measured window", _ident(row), row["runtime"]))
        levels = [lv for lv in ("invocations", "iterations") if row.get(f"multimodal_{lv}") is True]
        if levels:
            out.append(_row("warning", "multimodal",
                            f"multimodal {' and '.join(levels)}: the centre is a mixture, see the modes",
                            _ident(row), row["runtime"]))
    for row in benchmarks.to_dict("records"):
        dropped = row.get("rounds_dropped")
        if isinstance(dropped, (int, float)) and dropped > 0:
            out.append(_row("info", "rounds_dropped", f"{int(dropped)} round(s) with one side only left out of "
                            "the paired ratio", _ident(row)))
    return out


def _row(level: str, code: str, message: str, ident: dict[str, Any] | None = None,
         runtime: str | None = None) -> dict[str, Any]:
    ident = ident or {}
    return {"level": level, "code": code, "suite": ident.get("suite"), "tier": ident.get("tier"),
            "benchmark": ident.get("benchmark"), "param": ident.get("param"), "workers": ident.get("workers"),
            "runtime": runtime, "message": message}


def _workers(value: Any) -> int | None:
    return None if pd.isna(value) else int(value)


def _ident(row: Any) -> dict[str, Any]:
    return {"suite": row["suite"], "tier": int(row["tier"]), "benchmark": row["benchmark"], "param": row["param"],
            "workers": _workers(row["workers"])}


def check_samples(sides: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for row in sides.to_dict("records"):
        if row["n"] < schema.MIN_SAMPLES:
            out.append(_row("warning", "few_samples",
                            f"only {row['n']} samples (< {schema.MIN_SAMPLES}); median CI is [min, max] "
                            f"with coverage {row['ci_coverage']:.0%}" if row["ci_widest"] else
                            f"only {row['n']} samples (< {schema.MIN_SAMPLES})", _ident(row), row["runtime"]))
        elif row["ci_widest"]:
            out.append(_row("warning", "few_samples",
                            f"median CI is [min, max] (coverage {row['ci_coverage']:.1%}, below the requested level)",
                            _ident(row), row["runtime"]))
    return out


def check_quantisation(label: str, rows: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for key, group in rows.groupby(list(schema.BENCH_KEY), sort=False, dropna=False):
        elapsed = group["elapsed_ns"].to_numpy()
        if elapsed.size < schema.MIN_SAMPLES:
            continue
        ident = dict(zip(schema.BENCH_KEY, key))
        ident.update(tier=int(ident["tier"]), workers=_workers(ident["workers"]))
        distinct = np.unique(elapsed).size
        if distinct * 2 < elapsed.size:
            out.append(_row("warning", "quantisation",
                            f"timer quantisation: only {distinct} distinct timings in {elapsed.size} samples",
                            ident, label))
        elif bool((elapsed % 1000 == 0).all()):
            out.append(_row("warning", "quantisation",
                            "timer quantisation: every elapsed_ns is a multiple of 1000 (microsecond clock?)",
                            ident, label))
    return out


def check_drift(invocations: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    if invocations.empty:
        return out
    for (suite, tier, name, param, workers, runtime), group in invocations.groupby(
            [*schema.BENCH_KEY, "runtime"], sort=False, dropna=False):
        ident = {"suite": suite, "tier": int(tier), "benchmark": name, "param": param, "workers": _workers(workers)}
        trend = group[(group["kendall_pvalue"] < DRIFT_ALPHA) & (group["kendall_qvalue"] < DRIFT_FDR)
                      & (group["kendall_tau"].abs() >= DRIFT_TAU_MIN)]
        if not trend.empty:
            parts = ", ".join(f"#{int(r.invocation)} (tau {r.kendall_tau:+.2f}, p {r.kendall_pvalue:.1g})"
                              for r in trend.itertuples())
            out.append(_row("warning", "drift", f"trend across iterations in invocation {parts}: "
                            "warm-up or drift left in the samples", ident, runtime))
        first = group[group["first_is_outlier"].astype(bool)]
        if not first.empty:
            which = ", ".join(f"#{int(i)}" for i in first["invocation"])
            out.append(_row("warning", "drift", f"first iteration is an outlier in invocation {which}: "
                            "warm-up left in the samples?", ident, runtime))
    return out


def _looks_release(build_mode: Any) -> bool:
    return isinstance(build_mode, str) and "release" in build_mode.lower()


#: target_cpu values that mean "no CPU-specific code generation".
GENERIC_CPUS = {"generic", "x86_64", "x86-64", "baseline"}


def check_meta(metas: dict[str, dict[str, Any] | None]) -> list[dict[str, Any]]:
    out = []
    present = {label: meta for label, meta in metas.items() if meta is not None}
    for label in metas:
        if label not in present:
            out.append(_row("warning", "missing_meta", f"no meta.json: machine and build mode unknown", runtime=label))
    for label, meta in present.items():
        if not _looks_release(meta.get("build_mode")):
            out.append(_row("warning", "build_mode",
                            f"build_mode is {meta.get('build_mode')!r}, not a release build", runtime=label))
    generic = {label: meta.get("target_cpu") for label, meta in present.items()
               if str(meta.get("target_cpu", "")).lower() in GENERIC_CPUS}
    if generic and len(generic) < len(present):
        others = ", ".join(f"{label}: {meta.get('target_cpu')!r}" for label, meta in present.items() if label not in generic)
        for label, cpu in generic.items():
            out.append(_row("warning", "target_cpu",
                            f"built for a generic CPU ({cpu!r}) while the other side targets a specific one ({others})",
                            runtime=label))
    if len(present) == 2:
        (la, ma), (lb, mb) = present.items()
        a, b = ma.get("machine") or {}, mb.get("machine") or {}
        differ = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        if differ:
            detail = "; ".join(f"{k}: {a.get(k)!r} vs {b.get(k)!r}" for k in differ)
            out.append(_row("warning", "machine", f"{la} and {lb} ran on different machines ({detail})"))
    return out


def check_oversubscribed(metas: dict[str, dict[str, Any] | None], constants: dict[str, Any],
                         benchmarks: pd.DataFrame) -> list[dict[str, Any]]:
    """Tier 3-4 rows that ran more workers than the machine has logical cores (per worker count)."""
    cores = [m.get("machine", {}).get("logical_cores") for m in metas.values() if m]
    cores = [c for c in cores if isinstance(c, int)]
    tiers = benchmarks[(benchmarks["suite"] == "micro") & benchmarks["tier"].isin(schema.OVERSUBSCRIBED_TIERS)]
    if not cores or tiers.empty:
        return []
    recorded = sorted({int(w) for w in tiers["workers"].dropna()})
    default = constants.get("num_workers")
    counts = recorded or ([default] if isinstance(default, int) else [])
    over = [w for w in counts if w > min(cores)]
    if not over:
        return []
    listed = ", ".join(map(str, over))
    return [_row("warning", "oversubscribed",
                 f"machine has {min(cores)} logical cores < {listed} workers: those Tier 3-4 rows oversubscribe "
                 "the CPU and their timings may be bimodal")]


def check_controls(benchmarks: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    controls = benchmarks[(benchmarks["suite"] == "micro") & (benchmarks["tier"] == 0) & benchmarks["compared"]]
    for row in controls.to_dict("records"):
        if row["verdict"] in ("win", "loss"):
            out.append(_row("warning", "control_not_tie",
                            f"control is a {row['verdict']}, not a tie ({row['verdict_reason']}): the two harnesses "
                            "differ (timer, loop overhead, build flags) and every other row is suspect", _ident(row)))
        elif row["verdict"] == "inconclusive":
            out.append(_row("warning", "control_not_tie",
                            f"control not shown to tie ({row['verdict_reason']}): the measurement cannot resolve "
                            "the tie band here; more invocations or iterations are needed", _ident(row)))
    return out


def check_info(benchmarks: pd.DataFrame, sides: pd.DataFrame, compared: bool) -> list[dict[str, Any]]:
    out = []
    if compared:
        for row in benchmarks[~benchmarks["compared"].astype(bool)].to_dict("records"):
            out.append(_row("info", "not_compared", row["verdict_reason"], _ident(row)))
    for row in sides.to_dict("records"):
        if row["alloc_varies"]:
            out.append(_row("info", "alloc_varies", "allocation differs between iterations", _ident(row), row["runtime"]))
        share, pvalue = row["share_between"], row["invocation_f_pvalue"]
        if np.isfinite(share) and share > INVOCATION_SHARE_NOTE and pvalue < DRIFT_ALPHA:
            out.append(_row("info", "invocation_effect",
                            f"{share:.0%} of the variance is between invocations (F test p {pvalue:.1g})",
                            _ident(row), row["runtime"]))
    return out


def diagnose(benchmarks: pd.DataFrame, runtimes: pd.DataFrame, invocations: pd.DataFrame,
             sources: dict[str, pd.DataFrame], metas: dict[str, dict[str, Any] | None],
             constants: dict[str, Any], compared: bool) -> pd.DataFrame:
    """All diagnostics of a comparison, warnings first, then in benchmark order.

    `sources`: each side's rows by its label; `metas`: each side's meta.json (None: missing).
    """
    rows: list[dict[str, Any]] = []
    rows += check_meta(metas)
    rows += check_oversubscribed(metas, constants, benchmarks)
    rows += check_controls(benchmarks)
    rows += check_samples(runtimes)
    for label, frame in sources.items():
        rows += check_quantisation(label, frame)
        rows += sanity.check_absurd(label, frame, metas.get(label))
    rows += check_drift(invocations)
    rows += check_modes(benchmarks, runtimes)
    rows += check_info(benchmarks, runtimes, compared)
    frame = pd.DataFrame.from_records(rows, columns=DIAGNOSTIC_COLUMNS)
    frame["workers"] = frame["workers"].astype("Int64")
    if frame.empty:
        return frame
    frame["_level"] = (frame["level"] != "warning").astype(int)
    frame["_order"] = [schema.bench_sort_key(s, int(t), b, p, w) if isinstance(b, str) else ()
                       for s, t, b, p, w in zip(frame["suite"], frame["tier"].fillna(0), frame["benchmark"],
                                                frame["param"], frame["workers"])]
    frame = frame.sort_values(["_level", "_order"], kind="stable").drop(columns=["_level", "_order"])
    return frame.reset_index(drop=True)
