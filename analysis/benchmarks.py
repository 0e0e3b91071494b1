"""Statistics of every benchmark of two row sets: each side, and the pair (the comparison core).

Two sets of rows ("baseline" and "candidate": two runtimes of one run, or one runtime in two
runs) are grouped by benchmark (schema.BENCH_KEY: suite, tier, benchmark, param, workers) and
give three frames, sorted in display order:
- `benchmarks`: one row per benchmark; side-specific columns are prefixed `baseline_` /
  `candidate_` so that notebooks do not depend on runtime names (BENCHMARK_COLUMNS);
- `runtimes`: one row per benchmark x runtime, long form (RUNTIME_COLUMNS);
- `invocations`: one row per benchmark x runtime x invocation (INVOCATION_COLUMNS).

Per side: the centre of ns/op (stats.median_centre: the geometric mean of the invocation
medians, or the median of one invocation) with its interval, the same for CPU ns/op (cpu_ns /
ops; NaN where not recorded), cores busy (median of cpu_ns / elapsed_ns: 1.0 = one core busy
for the whole iteration), spread, the p99 of ns/op over the measured iterations with its
order-statistic interval, variance between invocations, allocations, and for the echo suite
avg / min / p75 / p99 / max per batch. Per pair: the ratio baseline / candidate of wall time
and of CPU time with intervals and verdicts, the rank-based cross-checks, the ratio of the p99s
of ns/op (no interval), allocation ratios and, for echo, the avg and p99 ratios. p-values are adjusted across the benchmarks of
the comparison (Benjamini-Hochberg q-values). See stats.py and ranks.py for the methods.

Paired rounds (Settings.paired, the default of `compare`): invocation k of every runtime of a run
belongs to round k (the orchestrator runs every runtime once per round), so the wall and CPU
ratios and their intervals come from the per-round log ratios of the invocation medians over
the rounds both sides have; a round that lacks a side is dropped (`rounds_dropped`, named in
`verdict_reason`). The default is the paired median (stats.paired_median_ratio_ci: the median
per-round ratio with its sign-test interval; the only method measured at >= 93% coverage on
every row, the bimodal ones included, at the default 10 rounds: docs/coverage.md); with 2 to 4
shared rounds (MEDIAN_MIN_ROUNDS) the paired t. The paired t (the ratio of geometric means over
the rounds, stats.paired_ratio_ci: `paired_t_*`, `cpu_paired_t_*`) and the unpaired Welch
interval (`unpaired_*`) stay beside it. With fewer than 2 complete rounds, and in `diff` (two
runs: their invocations are not rounds), the unpaired interval is the ratio's.

Modes (modes.py): per side, whether the invocation medians and the iterations (relative to their
invocation) are multimodal, and a warm-up step change (`multimodal_invocations`,
`multimodal_iterations`, `step_shift`, `step_pvalue`, `step_change` in `runtimes`); a row where
either side is multimodal gets a `modes` sentence ("ampere wins in both modes (invocations)",
"mixed: ...") in `benchmarks`, and every mode is a row of the fourth frame `modes`
(MODE_COLUMNS: benchmark, runtime, level, mode, share with its interval, median).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pandas as pd
import scipy.stats as st

from . import modes as modes_
from . import ranks, schema, stats

KEY: tuple[str, ...] = schema.BENCH_KEY
IDENT_COLUMNS = ["suite", "tier", "benchmark", "param", "workers", "label"]
#: p99 of ns/op over the measured iterations of all invocations (every benchmark; the net page
#: reads it as the p99 round-trip time), with its order-statistic interval.
P99_FIELDS = ["p99_ns_per_op", "p99_ci_low", "p99_ci_high", "p99_ci_widest"]
ECHO_FIELDS = ["avg_ns", "avg_ns_ci_low", "avg_ns_ci_high", "min_ns", "p75_ns", "p99_ns", "p99_ns_ci_low",
               "p99_ns_ci_high", "p99_ns_ci_widest", "max_ns"]
RUNTIME_COLUMNS = IDENT_COLUMNS + [
    "runtime", "role", "n", "n_invocations", "ops",
    "median_ns_per_op", "ci_low", "ci_high", "ci_method", "ci_coverage", "ci_widest",
    "mean_ns_per_op", "min_ns_per_op", "max_ns_per_op", "iqr_ns_per_op", "rcv", *P99_FIELDS,
    "var_between", "var_within", "share_between", "invocation_f_pvalue",
    "cpu_ns_per_op", "cpu_ci_low", "cpu_ci_high", "cores_busy",
    "bytes_per_op", "allocs_per_op", "alloc_varies", "invocation_medians",
    "multimodal_invocations", "multimodal_iterations", "step_shift", "step_pvalue", "step_change",
] + ECHO_FIELDS
SIDE_FIELDS = ["n", "n_invocations", "median_ns_per_op", "ci_low", "ci_high", "ci_widest", "rcv", "share_between",
               *P99_FIELDS,
               "cpu_ns_per_op", "cpu_ci_low", "cpu_ci_high", "cores_busy",
               "bytes_per_op", "allocs_per_op", "alloc_varies",
               "round_logs", "cpu_round_logs", "within_log_se", "cpu_within_log_se",
               ] + [f for f in ECHO_FIELDS if f != "p99_ns_ci_widest"]
PAIR_COLUMNS = [
    "ratio", "ratio_ci_low", "ratio_ci_high", "log_ratio", "log_ratio_ci_low", "log_ratio_ci_high", "log_ratio_se",
    "ratio_method", "paired_rounds", "rounds_dropped", "unpaired_ratio", "unpaired_ratio_ci_low",
    "unpaired_ratio_ci_high", "unpaired_verdict", "paired_t_ratio", "paired_t_ratio_ci_low", "paired_t_ratio_ci_high",
    "paired_t_log_ratio_se", "paired_t_verdict", "hl_ratio", "hl_ci_low", "hl_ci_high", "p_value", "q_value", "cliffs_delta",
    "verdict", "verdict_reason",
    "cpu_ratio", "cpu_ratio_ci_low", "cpu_ratio_ci_high", "cpu_log_ratio_se", "cpu_ratio_method", "cpu_verdict",
    "cpu_verdict_reason", "cpu_unpaired_ratio_ci_low", "cpu_unpaired_ratio_ci_high", "cpu_unpaired_verdict",
    "cpu_paired_t_ratio", "cpu_paired_t_ratio_ci_low", "cpu_paired_t_ratio_ci_high", "cpu_paired_t_log_ratio_se",
    "cpu_paired_t_verdict", "modes",
    "p99_per_op_ratio", "bytes_ratio", "allocs_ratio", "avg_ratio", "avg_ratio_ci_low", "avg_ratio_ci_high", "p99_ratio",
]
BENCHMARK_COLUMNS = (IDENT_COLUMNS + ["compared", "headline", "like_for_like", "semantics_note"]
                     + [f"baseline_{f}" for f in SIDE_FIELDS]
                     + [f"candidate_{f}" for f in SIDE_FIELDS] + PAIR_COLUMNS)
INVOCATION_COLUMNS = IDENT_COLUMNS + ["runtime", "invocation", "n", "median_ns_per_op", "mean_ns_per_op",
                                      "min_ns_per_op", "max_ns_per_op", "median_cpu_ns_per_op",
                                      "kendall_tau", "kendall_pvalue", "kendall_qvalue", "first_is_outlier"]
MODE_COLUMNS = IDENT_COLUMNS + ["runtime", "level", "multimodal", "dip_pvalue", "mode", "n", "share", "share_ci_low",
                                "share_ci_high", "median_ns_per_op"]
VERDICTS = ("win", "loss", "tie", "inconclusive")
#: A first iteration is flagged when it lies outside the range of the other iterations and
#: further from their median than OUTLIER_MADS robust SDs (normal-consistent MAD) and than
#: OUTLIER_RELATIVE of that median (a floor for very quiet benchmarks, where MAD is tiny).
OUTLIER_MADS = 5.0
OUTLIER_RELATIVE = 0.10


@dataclass(frozen=True)
class Settings:
    """What every interval and verdict of a comparison depends on."""

    tie_band: float = stats.DEFAULT_TIE_BAND
    confidence: float = stats.DEFAULT_CONFIDENCE
    #: ratios from paired rounds (one run) or unpaired (two runs: `diff`)
    paired: bool = True


#: benchmark name -> (like for like, the semantic difference that remains; "" when none).
Semantics = Callable[[str], tuple[bool, str]]


def same_semantics(benchmark: str) -> tuple[bool, str]:
    """The Semantics of a comparison of one runtime with itself (`diff`): always like for like."""
    return True, ""


def is_headline(ident: dict[str, Any], num_workers: int | None) -> bool:
    """Whether a row counts in the headline: every row except Tier 3-4 and io rows of a worker
    sweep at another count than the run's num_workers (BENCHMARKS.md: NUM_WORKERS is the headline)."""
    workers = ident["workers"]
    swept = ident["suite"] == "io" or (ident["suite"] == "micro" and ident["tier"] in schema.OVERSUBSCRIBED_TIERS)
    if not swept or workers is None:
        return True
    return num_workers is None or workers == num_workers


def _sample(rows: pd.DataFrame, column: str) -> list[np.ndarray]:
    """Values of `column` per invocation (sorted by invocation, then iteration)."""
    ordered = rows.sort_values(["invocation", "iteration"])
    return [g[column].to_numpy(dtype=np.float64) for _, g in ordered.groupby("invocation", sort=True)]


def _by_round(rows: pd.DataFrame, column: str) -> dict[int, np.ndarray]:
    """Values of `column` per invocation (= round), keyed by the invocation number."""
    ordered = rows.sort_values(["invocation", "iteration"])
    return {int(k): g[column].to_numpy(dtype=np.float64) for k, g in ordered.groupby("invocation", sort=True)}


def _recorded(values: np.ndarray) -> bool:
    return values.size > 0 and bool(np.isfinite(values).all())


# -- one side ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Side:
    """One runtime's statistics of one benchmark: the record and the centres the pair needs."""

    record: dict[str, Any]
    wall: stats.Centre
    cpu: stats.Centre | None
    avg: stats.Centre | None
    values: np.ndarray
    #: invocation (round) -> ns/op of its iterations; the same for CPU ns/op (None: not recorded)
    wall_rounds: dict[int, np.ndarray]
    cpu_rounds: dict[int, np.ndarray] | None
    modes: dict[str, modes_.Modes]


def describe_side(rows: pd.DataFrame, confidence: float) -> Side:
    """Per-runtime statistics of one benchmark (one row of `runtimes`)."""
    sample = _sample(rows, "ns_per_op")
    values = stats.pooled(sample)
    wall = stats.median_centre(sample, confidence)
    comps = stats.variance_components(sample)
    per_row_bytes = (rows["alloc_bytes"] / rows["ops"]).to_numpy(dtype=np.float64)
    per_row_allocs = (rows["alloc_count"] / rows["ops"]).to_numpy(dtype=np.float64)
    q1, q3 = np.quantile(values, [0.25, 0.75])
    record: dict[str, Any] = {
        "n": int(values.size), "n_invocations": len(sample), "ops": int(rows["ops"].median()),
        "median_ns_per_op": wall.estimate, "ci_low": wall.low, "ci_high": wall.high, "ci_method": wall.method,
        "ci_coverage": wall.coverage, "ci_widest": wall.widest, "mean_ns_per_op": float(values.mean()),
        "min_ns_per_op": float(values.min()), "max_ns_per_op": float(values.max()),
        "iqr_ns_per_op": float(q3 - q1), "rcv": stats.robust_cv(values), **describe_p99(values, confidence),
        "var_between": comps.between, "var_within": comps.within, "share_between": comps.share_between,
        "invocation_f_pvalue": comps.f_pvalue,
        "bytes_per_op": float(per_row_bytes.mean()), "allocs_per_op": float(per_row_allocs.mean()),
        "alloc_varies": bool(np.ptp(per_row_bytes) > 0 or np.ptp(per_row_allocs) > 0),
        "invocation_medians": [float(np.median(a)) for a in sample],
    }
    cpu = _describe_cpu(rows, confidence, record)
    cpu_rounds = _by_round(rows.assign(cpu_per_op=rows["cpu_ns"] / rows["ops"]), "cpu_per_op") if cpu else None
    wall_rounds = _by_round(rows, "ns_per_op")
    record.update(round_logs=round_logs(wall_rounds), cpu_round_logs=round_logs(cpu_rounds or {}),
                  within_log_se=stats.within_log_se(sample),
                  cpu_within_log_se=stats.within_log_se(list(cpu_rounds.values())) if cpu_rounds else math.nan)
    record.update(dict.fromkeys(ECHO_FIELDS, math.nan))
    avg = None
    if (rows["suite"] == "echo").all():
        batches = _sample(rows, "elapsed_ns")
        avg = stats.mean_centre(batches, confidence)
        record.update(describe_batches(stats.pooled(batches), avg, confidence))
    levels = modes_.side_modes(sample)
    step = modes_.step_change(sample)
    record.update(multimodal_invocations=levels["invocations"].multimodal,
                  multimodal_iterations=levels["iterations"].multimodal,
                  step_shift=step.shift, step_pvalue=step.pvalue, step_change=step.flagged)
    return Side(record, wall, cpu, avg, values, wall_rounds, cpu_rounds, levels)


def round_logs(rounds: dict[int, np.ndarray]) -> list[list[float]]:
    """[[round, log of the round's median], ...] in round order (rounds whose median is not > 0
    left out): what the summaries' geometric means are built over (stats.rounds_geometric_mean_ci;
    a list of pairs so that the comparison file's JSON keeps it)."""
    out = []
    for k in sorted(rounds):
        median = float(np.median(rounds[k])) if len(rounds[k]) else math.nan
        if median > 0:
            out.append([int(k), math.log(median)])
    return out


def describe_p99(values: np.ndarray, confidence: float) -> dict[str, Any]:
    """p99 of ns/op over the pooled measured iterations: the inverted-CDF quantile (an observed
    value, x_(ceil(0.99 n))) with its order-statistic interval; with fewer than a few hundred
    iterations the upper end is the maximum and `p99_ci_widest` is True."""
    p99 = stats.quantile_ci(values, 0.99, confidence, method="inverted_cdf")
    return {"p99_ns_per_op": p99.estimate, "p99_ci_low": p99.low, "p99_ci_high": p99.high,
            "p99_ci_widest": p99.widest}


def _describe_cpu(rows: pd.DataFrame, confidence: float, record: dict[str, Any]) -> stats.Centre | None:
    """CPU ns/op with its interval and cores busy into `record`; None when not recorded."""
    cpu_ns = rows["cpu_ns"].to_numpy(dtype=np.float64)
    if not _recorded(cpu_ns):
        record.update(cpu_ns_per_op=math.nan, cpu_ci_low=math.nan, cpu_ci_high=math.nan, cores_busy=math.nan)
        return None
    centre = stats.median_centre(_sample(rows.assign(cpu_per_op=cpu_ns / rows["ops"].to_numpy()), "cpu_per_op"),
                                 confidence)
    busy = float(np.median(cpu_ns / rows["elapsed_ns"].to_numpy(dtype=np.float64)))
    record.update(cpu_ns_per_op=centre.estimate, cpu_ci_low=centre.low, cpu_ci_high=centre.high, cores_busy=busy)
    return centre


def describe_batches(batches: np.ndarray, avg: stats.Centre, confidence: float) -> dict[str, Any]:
    """Echo statistics per batch (elapsed_ns of a whole batch, not per op).

    avg with its interval (stats.mean_centre); p75 and p99 are the inverted-CDF quantiles (an
    observed batch time, x_(ceil(q n))); p99 gets its order-statistic interval.
    """
    p75 = stats.quantile_ci(batches, 0.75, confidence, method="inverted_cdf")
    p99 = stats.quantile_ci(batches, 0.99, confidence, method="inverted_cdf")
    return {"avg_ns": avg.estimate, "avg_ns_ci_low": avg.low, "avg_ns_ci_high": avg.high,
            "min_ns": float(batches.min()), "p75_ns": p75.estimate, "p99_ns": p99.estimate,
            "p99_ns_ci_low": p99.low, "p99_ns_ci_high": p99.high, "p99_ns_ci_widest": p99.widest,
            "max_ns": float(batches.max())}


def describe_invocations(rows: pd.DataFrame) -> list[dict[str, Any]]:
    """Per-invocation medians and the drift / warm-up checks (Kendall tau, first-iteration outlier)."""
    out = []
    for invocation, group in rows.sort_values(["invocation", "iteration"]).groupby("invocation", sort=True):
        values = group["ns_per_op"].to_numpy(dtype=np.float64)
        cpu = (group["cpu_ns"] / group["ops"]).to_numpy(dtype=np.float64)
        tau = pvalue = math.nan
        outlier = False
        if values.size >= schema.MIN_SAMPLES:
            if np.ptp(values) > 0:
                res = st.kendalltau(group["iteration"].to_numpy(), values)
                tau, pvalue = float(res.statistic), float(res.pvalue)
            rest = values[1:]
            centre = float(np.median(rest))
            spread = max(OUTLIER_MADS * float(st.median_abs_deviation(rest, scale="normal")),
                         OUTLIER_RELATIVE * centre)
            outside = values[0] > rest.max() or values[0] < rest.min()
            outlier = bool(outside and abs(values[0] - centre) > spread)
        out.append({"invocation": int(invocation), "n": int(values.size),
                    "median_ns_per_op": float(np.median(values)), "mean_ns_per_op": float(values.mean()),
                    "min_ns_per_op": float(values.min()), "max_ns_per_op": float(values.max()),
                    "median_cpu_ns_per_op": float(np.median(cpu)) if _recorded(cpu) else math.nan,
                    "kendall_tau": tau, "kendall_pvalue": pvalue, "first_is_outlier": outlier})
    return out


# -- two sides --------------------------------------------------------------------------------

def _safe_ratio(numerator: float, denominator: float) -> float:
    if denominator == 0:
        return math.nan if numerator == 0 else math.inf
    return numerator / denominator


def verdict_reason(verdict: str, rci: stats.RatioCI, tie_band: float) -> str:
    hi_edge, lo_edge = 1 + tie_band, 1 / (1 + tie_band)
    if not (math.isfinite(rci.log_low) and math.isfinite(rci.log_high)):
        return rci.method if rci.method.startswith("no ") else f"no interval ({rci.method})"
    ci = f"CI [{rci.low:.3f}, {rci.high:.3f}]"
    return {
        "win": f"{ci} wholly above {hi_edge:.3f}",
        "loss": f"{ci} wholly below {lo_edge:.3f}",
        "tie": f"{ci} inside the tie band [{lo_edge:.3f}, {hi_edge:.3f}]",
        "inconclusive": f"{ci} crosses an edge of the tie band [{lo_edge:.3f}, {hi_edge:.3f}]",
    }[verdict]


@dataclass(frozen=True)
class Rounds:
    """The rounds two sides share and how many rounds only one side has."""

    shared: list[int]
    dropped: int


def shared_rounds(base: dict[int, np.ndarray], cand: dict[int, np.ndarray]) -> Rounds:
    """Rounds (invocation numbers) both sides have, in order; the others are dropped."""
    shared = sorted(set(base) & set(cand))
    return Rounds(shared, len(set(base) ^ set(cand)))


#: The paired median needs this many rounds: its order-statistic interval is [min, max] below 6
#: rounds at 95%, covering 93.8% at 5 rounds but 87.5% at 4 and 75% at 3; with fewer rounds the
#: paired t is the ratio's (its method says why).
MEDIAN_MIN_ROUNDS = 5


def _round_summaries(base: dict[int, np.ndarray], cand: dict[int, np.ndarray], rounds: Rounds
                     ) -> tuple[np.ndarray, np.ndarray, float]:
    """Invocation medians of both sides over the shared rounds, and the within-invocation SE."""
    b = [base[k] for k in rounds.shared]
    c = [cand[k] for k in rounds.shared]
    within = math.hypot(stats.within_log_se(b), stats.within_log_se(c))
    return np.array([np.median(a) for a in b]), np.array([np.median(a) for a in c]), within


@dataclass(frozen=True)
class Chosen:
    """The ratio a verdict uses, the rounds behind it, and the paired t beside it (None: unpaired)."""

    rci: stats.RatioCI
    rounds: Rounds
    paired_t: stats.RatioCI | None


def chosen_ratio(unpaired: stats.RatioCI, base_rounds: dict[int, np.ndarray] | None,
                 cand_rounds: dict[int, np.ndarray] | None, settings: Settings) -> Chosen:
    """The ratio a verdict uses: the paired median over the shared rounds when settings.paired
    and at least MEDIAN_MIN_ROUNDS rounds are shared; the paired t with 2 to 4 shared rounds;
    else the unpaired one (its method says why)."""
    if not settings.paired or base_rounds is None or cand_rounds is None:
        return Chosen(unpaired, Rounds([], 0), None)
    rounds = shared_rounds(base_rounds, cand_rounds)
    if len(rounds.shared) < 2:
        why = f"unpaired: {len(rounds.shared)} complete round(s)"
        return Chosen(dataclasses.replace(unpaired, method=f"{unpaired.method} ({why})"), rounds, None)
    b, c, within = _round_summaries(base_rounds, cand_rounds, rounds)
    paired_t = stats.paired_ratio_ci(b, c, settings.confidence, within)
    if len(rounds.shared) >= MEDIAN_MIN_ROUNDS:
        paired = stats.paired_median_ratio_ci(b, c, settings.confidence, within)
    else:
        paired = dataclasses.replace(paired_t, method=f"{paired_t.method} (fewer than {MEDIAN_MIN_ROUNDS} rounds "
                                                      "for the paired median)")
    if not math.isfinite(paired.log_se):  # the unpaired interval (or its reason, which names the side)
        if math.isfinite(unpaired.log_se):
            return Chosen(dataclasses.replace(unpaired, method=f"{unpaired.method} (unpaired: {paired.method})"),
                          rounds, paired_t)
        return Chosen(unpaired, rounds, paired_t)
    if rounds.dropped:
        paired = dataclasses.replace(paired, method=f"{paired.method}; {rounds.dropped} round(s) with one side only "
                                                    "dropped")
    return Chosen(paired, rounds, paired_t)


def compare_sides(base: Side, cand: Side, names: tuple[str, str], settings: Settings) -> dict[str, Any]:
    """Pairwise statistics of one benchmark (p-values are adjusted later, across benchmarks)."""
    band, conf = settings.tie_band, settings.confidence
    unpaired = stats.ratio_of(base.wall, cand.wall, conf, names)
    chosen = chosen_ratio(unpaired, base.wall_rounds, cand.wall_rounds, settings)
    rci, rounds = chosen.rci, chosen.rounds
    verdict = stats.verdict(rci.log_low, rci.log_high, band)
    hl = ranks.hodges_lehmann(base.values, cand.values, conf)
    rank = ranks.rank_test(base.values, cand.values)
    reason = verdict_reason(verdict, rci, band)
    if rounds.dropped:
        reason += f"; {rounds.dropped} round(s) with one side only dropped"
    out: dict[str, Any] = {
        "ratio": rci.ratio, "ratio_ci_low": rci.low, "ratio_ci_high": rci.high, "log_ratio": rci.log_ratio,
        "log_ratio_ci_low": rci.log_low, "log_ratio_ci_high": rci.log_high, "log_ratio_se": rci.log_se,
        "ratio_method": rci.method, "paired_rounds": len(rounds.shared) if rci.method.startswith("paired") else 0,
        "rounds_dropped": rounds.dropped, "unpaired_ratio": unpaired.ratio, "unpaired_ratio_ci_low": unpaired.low,
        "unpaired_ratio_ci_high": unpaired.high,
        "unpaired_verdict": stats.verdict(unpaired.log_low, unpaired.log_high, band),
        **_paired_t_fields("", chosen.paired_t, band),
        "hl_ratio": hl.ratio, "hl_ci_low": hl.low, "hl_ci_high": hl.high,
        "p_value": rank.p_value, "cliffs_delta": rank.cliffs_delta, "verdict": verdict,
        "verdict_reason": reason,
    }
    out.update(_cpu_pair(base, cand, names, settings))
    sentences = [modes_.mode_verdict(base.modes[level], cand.modes[level], names[1], band) for level in modes_.LEVELS]
    out["modes"] = "; ".join(x for x in sentences if x) or None
    b, c = base.record, cand.record
    out["p99_per_op_ratio"] = _safe_ratio(b["p99_ns_per_op"], c["p99_ns_per_op"])
    out["bytes_ratio"] = _safe_ratio(b["bytes_per_op"], c["bytes_per_op"])
    out["allocs_ratio"] = _safe_ratio(b["allocs_per_op"], c["allocs_per_op"])
    out.update(dict.fromkeys(["avg_ratio", "avg_ratio_ci_low", "avg_ratio_ci_high", "p99_ratio"], math.nan))
    if base.avg is not None and cand.avg is not None:
        avg = stats.ratio_of(base.avg, cand.avg, conf, names)
        out.update(avg_ratio=avg.ratio, avg_ratio_ci_low=avg.low, avg_ratio_ci_high=avg.high,
                   p99_ratio=_safe_ratio(b["p99_ns"], c["p99_ns"]))
    return out


def _paired_t_fields(prefix: str, paired_t: stats.RatioCI | None, tie_band: float) -> dict[str, Any]:
    """The paired t (geometric-mean ratio over the rounds, t interval) shown beside the default
    paired median: `{prefix}paired_t_ratio`, `_ci_low`, `_ci_high`, `_log_ratio_se` (what the
    summary's geometric means combine), `_verdict` (NaN / None when the ratio is not paired)."""
    if paired_t is None:
        return {f"{prefix}paired_t_ratio": math.nan, f"{prefix}paired_t_ratio_ci_low": math.nan,
                f"{prefix}paired_t_ratio_ci_high": math.nan, f"{prefix}paired_t_log_ratio_se": math.nan,
                f"{prefix}paired_t_verdict": None}
    return {f"{prefix}paired_t_ratio": paired_t.ratio, f"{prefix}paired_t_ratio_ci_low": paired_t.low,
            f"{prefix}paired_t_ratio_ci_high": paired_t.high, f"{prefix}paired_t_log_ratio_se": paired_t.log_se,
            f"{prefix}paired_t_verdict": stats.verdict(paired_t.log_low, paired_t.log_high, tie_band)}


def _cpu_pair(base: Side, cand: Side, names: tuple[str, str], settings: Settings) -> dict[str, Any]:
    if base.cpu is None or cand.cpu is None:
        missing = " and ".join(n for n, s in zip(names, (base, cand)) if s.cpu is None)
        return {"cpu_ratio": math.nan, "cpu_ratio_ci_low": math.nan, "cpu_ratio_ci_high": math.nan,
                "cpu_log_ratio_se": math.nan, "cpu_ratio_method": None, "cpu_verdict": None,
                **_paired_t_fields("cpu_", None, settings.tie_band),
                "cpu_verdict_reason": f"CPU time not recorded ({missing})",
                "cpu_unpaired_ratio_ci_low": math.nan, "cpu_unpaired_ratio_ci_high": math.nan,
                "cpu_unpaired_verdict": None}
    unpaired = stats.ratio_of(base.cpu, cand.cpu, settings.confidence, names)
    chosen = chosen_ratio(unpaired, base.cpu_rounds, cand.cpu_rounds, settings)
    cci = chosen.rci
    verdict = stats.verdict(cci.log_low, cci.log_high, settings.tie_band)
    return {"cpu_ratio": cci.ratio, "cpu_ratio_ci_low": cci.low, "cpu_ratio_ci_high": cci.high,
            "cpu_log_ratio_se": cci.log_se, "cpu_ratio_method": cci.method, "cpu_verdict": verdict,
            **_paired_t_fields("cpu_", chosen.paired_t, settings.tie_band),
            "cpu_verdict_reason": verdict_reason(verdict, cci, settings.tie_band),
            "cpu_unpaired_ratio_ci_low": unpaired.low, "cpu_unpaired_ratio_ci_high": unpaired.high,
            "cpu_unpaired_verdict": stats.verdict(unpaired.log_low, unpaired.log_high, settings.tie_band)}


# -- every benchmark --------------------------------------------------------------------------

def _label(ident: dict[str, Any], sweep: bool) -> str:
    label = schema.bench_label(ident["benchmark"], ident["param"])
    return f"{label} (w={ident['workers']})" if sweep and ident["workers"] is not None else label


def _key(values: tuple) -> tuple:
    """A benchmark key with an unrecorded worker count (<NA>, NaN) as None, so keys compare equal."""
    suite, tier, benchmark, param, workers = values
    return (suite, int(tier), benchmark, param, None if pd.isna(workers) else int(workers))


def _groups(rows: pd.DataFrame) -> dict[tuple, pd.DataFrame]:
    return {_key(k): g for k, g in rows.groupby(list(KEY), sort=False, dropna=False)}


def _keys(*groups: dict[tuple, pd.DataFrame]) -> list[tuple]:
    keys = {k for g in groups for k in g}
    return sorted(keys, key=lambda k: schema.bench_sort_key(*k))


def _swept(keys: list[tuple]) -> set[tuple]:
    """(suite, tier, benchmark, param) of the benchmarks that ran at more than one worker count."""
    counts: dict[tuple, int] = {}
    for key in keys:
        counts[key[:4]] = counts.get(key[:4], 0) + 1
    return {k for k, count in counts.items() if count > 1}


def mode_records(ident: dict[str, Any], runtime: str, side: Side) -> list[dict[str, Any]]:
    """One record per mode of each level of one side (MODE_COLUMNS)."""
    return [{**ident, "runtime": runtime, "level": level, "multimodal": found.multimodal,
             "dip_pvalue": found.dip_pvalue, "mode": m.name, "n": m.n, "share": m.share, "share_ci_low": m.share_low,
             "share_ci_high": m.share_high, "median_ns_per_op": m.median}
            for level, found in side.modes.items() for m in found.modes]


def analyse(base_rows: pd.DataFrame, cand_rows: pd.DataFrame, names: tuple[str, str], settings: Settings,
            num_workers: int | None = None, semantics: Semantics = same_semantics
            ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(benchmarks, runtimes, invocations, modes) of two row sets; `names` label the two sides.

    `num_workers`: the headline worker count (see is_headline); `semantics`: whether each
    benchmark compares like with like (fairness table), per benchmark name.
    """
    groups = {"baseline": _groups(base_rows), "candidate": _groups(cand_rows)}
    keys = _keys(*groups.values())
    swept = _swept(keys)
    bench_records, side_records, inv_records, mode_rows = [], [], [], []
    for key in keys:
        ident = dict(zip(KEY, key))
        ident["label"] = _label(ident, key[:4] in swept)
        found = {role: groups[role].get(key) for role in ("baseline", "candidate")}
        sides = {role: describe_side(rows, settings.confidence) for role, rows in found.items() if rows is not None}
        like, note = semantics(ident["benchmark"])
        record: dict[str, Any] = {**ident, "compared": len(sides) == 2, "headline": is_headline(ident, num_workers),
                                  "like_for_like": like, "semantics_note": note}
        if len(sides) == 2:
            record.update(compare_sides(sides["baseline"], sides["candidate"], names, settings))
        else:
            missing = names[1] if found["candidate"] is None else names[0]
            record.update(verdict=None, cpu_verdict=None,
                          verdict_reason=f"not compared: no {missing} data for this benchmark")
        for (role, rows), name in zip(found.items(), names):
            side = sides.get(role)
            if side is not None:
                side_records.append({**ident, "runtime": name, "role": role, **side.record})
                inv_records += [{**ident, "runtime": name, **inv} for inv in describe_invocations(rows)]
                mode_rows += mode_records(ident, name, side)
            for f in SIDE_FIELDS:
                record[f"{role}_{f}"] = side.record[f] if side is not None else math.nan
        bench_records.append(record)
    benchmarks = pd.DataFrame.from_records(bench_records, columns=BENCHMARK_COLUMNS)
    benchmarks["q_value"] = stats.bh_qvalues(benchmarks["p_value"].to_numpy(dtype=np.float64))
    runtimes = pd.DataFrame.from_records(side_records, columns=RUNTIME_COLUMNS)
    invocations = pd.DataFrame.from_records(inv_records, columns=INVOCATION_COLUMNS)
    invocations["kendall_qvalue"] = stats.bh_qvalues(invocations["kendall_pvalue"].to_numpy(dtype=np.float64))
    modes = pd.DataFrame.from_records(mode_rows, columns=MODE_COLUMNS)
    for frame in (benchmarks, runtimes, invocations, modes):
        frame["workers"] = frame["workers"].astype("Int64")
    return benchmarks, runtimes, invocations, modes
