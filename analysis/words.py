"""Sentences: what the analysis computed, in words, for the notebooks and the report index.

Nothing here computes a statistic; every number comes from a Comparison (compare.py) or the
run's metadata (artefact.RunComparisons). A ratio below 1 is read as "slower" by 1 / ratio, and
its interval turned the same way.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from . import schema
from .artefact import RunComparisons
from .compare import Comparison
from .fmt import finite, fmt_busy, fmt_ns
from .history import History
from .summary import control_band


def ratio_words(ratio: float, low: float, high: float, candidate: str, baseline: str,
                faster: str = "faster", slower: str = "slower") -> tuple[str, float, float]:
    """('ampere is 1.80× faster than Tokio', low, high) with the interval turned the same way."""
    cn, bn = schema.display_name(candidate), schema.display_name(baseline)
    if not finite(ratio) or ratio <= 0:
        return f"there is no ratio between {cn} and {bn}", math.nan, math.nan
    if ratio >= 1:
        return f"{cn} is {ratio:.2f}× {faster} than {bn}", low, high
    flip = lambda v: 1 / v if finite(v) and v > 0 else math.nan  # noqa: E731
    return f"{cn} is {1 / ratio:.2f}× {slower} than {bn}", flip(high), flip(low)


def geomean_sentence(part: dict[str, Any], candidate: str, baseline: str, confidence: float,
                     scope: str = "", prefix: str = "", what: str = "") -> str:
    """One sentence on a geometric mean of a summary scope (summary.scope_summary).

    `prefix`: "" (wall time, all rows), "like_for_like_" or "cpu_"; `what` names the rows.
    """
    n = int(part.get(f"{prefix}geomean_n") or 0)
    ratio = part.get(f"{prefix}geomean_ratio")
    low, high = (part.get(f"{prefix}geomean_ratio_ci") or [math.nan, math.nan])[:2]
    where = f" {scope}" if scope else ""
    rows = f" {what}" if what else ""
    if n == 0 or not finite(ratio):
        return f"No{rows} benchmark{where} was compared, so there is no geometric mean ratio."
    cpu = "cpu_" in prefix
    words = ("more efficient", "less efficient") if cpu else ("faster", "slower")
    text, lo, hi = ratio_words(ratio, low, high, candidate, baseline, *words)
    if cpu:
        text += " in CPU time per operation"
    plural = "benchmark" if n == 1 else "benchmarks"
    sentence = f"{text} on the geometric mean of {n}{rows} {plural}{where}"
    if finite(lo) and finite(hi):
        sentence += f" ({confidence:.0%} CI {min(lo, hi):.2f}–{max(lo, hi):.2f}×)"
        if finite(low) and finite(high) and low <= 1 <= high:
            sentence += "; the interval includes 1×, so the overall difference is not established"
    return sentence + "."


def counts_sentence(part: dict[str, Any], candidate: str, baseline: str) -> str:
    """Verdict counts of the headline: the like-for-like rows (summary.py), and the compared
    rows left out of it, named."""
    counts = part.get("counts", {})
    k = int(part.get("n_compared") or 0)
    n_like = int(part.get("n_like_for_like", k) or 0)
    total = int(part.get("n_benchmarks") or 0)
    cn, bn = schema.display_name(candidate), schema.display_name(baseline)
    if k == 0:
        return f"None of the {total} benchmarks could be compared (a runtime has no data for them)."
    rows = "like-for-like benchmarks" if n_like < k else "compared benchmarks"
    text = (f"Of {n_like} {rows}, {cn} wins {counts.get('win', 0)}, {bn} wins {counts.get('loss', 0)}, "
            f"{counts.get('tie', 0)} are ties and {counts.get('inconclusive', 0)} are inconclusive")
    if n_like < k:
        every = part.get("all_counts", {})
        left = part.get("not_like_for_like", [])
        more = k - n_like
        rows_are = "row is" if more == 1 else "rows are"
        text += (f"; {more} more compared {rows_are} not like for like and not counted ({', '.join(left)}; "
                 f"all {k} together: {cn} wins {every.get('win', 0)}, {bn} wins {every.get('loss', 0)})")
    if total > k:
        one_only = total - k
        text += (f"; {one_only} more {'has' if one_only == 1 else 'have'} data for only one runtime and "
                 f"{'is' if one_only == 1 else 'are'} not compared")
    return text + "."


def _control_item(name: str, verdict: Any, ratios: dict[str, list[float]]) -> str:
    """`floor_cas_store tie (0.990× [0.968, 1.011], within ±3.3%)`, or without the ratio when unknown."""
    ratio, low, high = (ratios.get(name) or [math.nan] * 3)[:3]
    band = control_band(low, high)
    shown = f" ({ratio:.3f}× [{low:.3f}, {high:.3f}], within ±{band:.1%})" if finite(band) else ""
    return f"{name} {verdict or 'not compared'}{shown}"


def controls_sentence(controls: dict[str, Any], ratios: dict[str, list[float]] | None = None) -> str:
    """The Tier 0 controls in words, each with its ratio, interval and the band the interval fits
    in (`ratios`: summary["control_ratios"]), so a reader sees how closely the harnesses agree."""
    if not controls:
        return "The run has no Tier 0 control benchmarks to check the two harnesses against each other."
    listed = ", ".join(_control_item(name, verdict, ratios or {}) for name, verdict in controls.items())
    if all(v == "tie" for v in controls.values()):
        return f"Tier 0 controls (identical code on both sides) all tie ({listed}): the two harnesses agree."
    if any(v in ("win", "loss") for v in controls.values()):
        return (f"Tier 0 controls (identical code on both sides) are not all ties ({listed}): the two harnesses "
                "differ (timer, loop overhead, build flags), so treat every other row with suspicion.")
    return (f"Tier 0 controls (identical code on both sides) are not all shown to tie ({listed}): their intervals "
            "are too wide for the tie band; more invocations or iterations are needed to confirm the harnesses agree.")


def _suite_scope(suite: str) -> str:
    return {"micro": "in the micro suite (tiers 1–4)", "echo": "in the echo suite (per-op times of whole batches)",
            "net": "in the net suite (TCP over loopback)"}.get(suite, f"in the {suite} suite")


def geomean_sentences(cmp: Comparison) -> list[str]:
    """Geometric means: over the like-for-like rows first, then over all rows, then per suite."""
    s, b, c, conf = cmp.summary, cmp.baseline, cmp.candidate, cmp.confidence
    lines = []
    if int(s.get("n_like_for_like") or 0) < int(s.get("n_compared") or 0):
        lines.append(geomean_sentence(s, c, b, conf, prefix="like_for_like_", what="like-for-like"))
        lines.append(geomean_sentence(s, c, b, conf, what="compared") +
                     " (All rows, including those whose two sides do not have the same semantics.)")
    else:
        lines.append(geomean_sentence(s, c, b, conf) + " (Every compared row is like for like.)")
    with_ratios = {k: v for k, v in s.get("by_suite", {}).items() if v.get("geomean_n")}
    if len(with_ratios) > 1:
        lines += [geomean_sentence(part, c, b, conf, _suite_scope(suite)) for suite, part in with_ratios.items()]
    return lines


def headline_sentences(cmp: Comparison) -> list[str]:
    """The overview's headline in words: counts, geometric means, CPU, controls."""
    if not cmp.compared:
        present = sorted(set(cmp.runtimes["runtime"])) if not cmp.runtimes.empty else []
        who = " and ".join(schema.display_name(r) for r in present) or "no runtime"
        return [f"This run has data for {who} only: nothing to compare, the pages describe it alone."]
    s = cmp.summary
    lines = [counts_sentence(s, cmp.candidate, cmp.baseline)
             + " (Tier 0 controls are a harness check and are not counted.)"]
    lines += geomean_sentences(cmp)
    lines += cpu_sentences(cmp)
    lines.append(controls_sentence(s.get("controls", {}), s.get("control_ratios")))
    return lines


def cpu_recorded(cmp: Comparison) -> bool:
    """Whether the run recorded CPU time (schema 2) for any row of either side."""
    return bool(cmp.runtimes["cpu_ns_per_op"].notna().any())


def costly_wins(cmp: Comparison) -> pd.DataFrame:
    """Headline rows that the candidate wins in wall time but loses in CPU time per op."""
    b = cmp.benchmarks
    return b[b["headline"].astype(bool) & (b["verdict"] == "win") & (b["cpu_verdict"] == "loss")]


def _costly_clause(r: dict[str, Any], cn: str, bn: str) -> str:
    return (f"{r['label']} ({cn} {r['ratio']:.2f}× faster in wall time but {1 / r['cpu_ratio']:.2f}× the CPU per op "
            f"of {bn}; cores busy {fmt_busy(r['candidate_cores_busy'])} vs {fmt_busy(r['baseline_cores_busy'])})")


def cpu_sentences(cmp: Comparison) -> list[str]:
    """CPU time per operation in words: not recorded, its geometric mean, and which wall-time
    wins cost more CPU than the baseline spends (spinning instead of sleeping shows up here)."""
    bn, cn = schema.display_name(cmp.baseline), schema.display_name(cmp.candidate)
    if not cmp.compared:
        return []
    if not cpu_recorded(cmp):
        return ["CPU time per operation was not recorded in this run (schema 1), so it cannot say whether a "
                "wall-time win costs more CPU."]
    s = cmp.summary
    some = int(s.get("n_like_for_like", 0) or 0) < int(s.get("n_compared", 0) or 0)
    what = "like-for-like" if some else ""
    lines = [geomean_sentence(s, cmp.candidate, cmp.baseline, cmp.confidence, prefix="cpu_", what=what)]
    if s.get("cpu_geomean_source") in ("whole invocation", "mixed"):
        lines[0] = lines[0].rstrip(".") + (" — CPU over the whole invocation (every thread, from the first measured "
                                           "iteration's start to the last one's end, the gaps between iterations "
                                           "included).")
        lines.append(geomean_sentence(s, cmp.candidate, cmp.baseline, cmp.confidence, prefix="per_sample_cpu_",
                                      what=what).rstrip(".") + " counting only the CPU inside the timed samples.")
    else:
        lines.append("The CPU over the whole invocation (gaps between iterations included) was not recorded in this "
                     "run: CPU spent outside the timed samples (a worker spinning after the last join) is not seen.")
    costly = costly_wins(cmp)
    if costly.empty:
        lines.append(f"No wall-time win of {cn} costs more CPU per operation than {bn} spends.")
    else:
        clauses = "; ".join(_costly_clause(r, cn, bn) for r in costly.to_dict("records"))
        lines.append(f"{len(costly)} wall-time win(s) of {cn} cost more CPU per operation than {bn} spends: "
                     f"{clauses}.")
    return lines


def variant_sentence(cmp: Comparison, settings: dict[str, Any]) -> str:
    """One candidate variant against the baseline in one sentence (counts and geometric means)."""
    s = cmp.summary
    cn = schema.display_name(cmp.candidate)
    how = ", ".join(f"{k} = {v}" for k, v in settings.items()) or "default settings"
    if not cmp.compared:
        return f"{cn} ({how}): not compared (one side has no data)."
    counts = s["counts"]
    geo = geomean_sentence(s, cmp.candidate, cmp.baseline, cmp.confidence, prefix="like_for_like_",
                           what="like-for-like").rstrip(".")
    cpu = ""
    if finite(s.get("cpu_geomean_ratio")):
        cpu = "; " + geomean_sentence(s, cmp.candidate, cmp.baseline, cmp.confidence, prefix="cpu_").rstrip(".")
    return (f"{cn} ({how}): {counts['win']} wins, {counts['loss']} losses, {counts['tie']} ties, "
            f"{counts['inconclusive']} inconclusive of {s.get('n_like_for_like', s['n_compared'])} like-for-like "
            f"rows; {geo}{cpu}.")


def _cores(meta: dict[str, dict[str, Any]]) -> int | None:
    cores = [m.get("machine", {}).get("logical_cores") for m in meta.values() if isinstance(m, dict)]
    cores = [c for c in cores if isinstance(c, int)]
    return min(cores) if cores else None


def machine_sentences(rc: RunComparisons) -> list[str]:
    """Machine, toolchain, variants, worker counts and oversubscription, in words."""
    lines = []
    meta = next((m for m in rc.meta.values() if isinstance(m, dict)), {})
    machine = meta.get("machine") or {}
    if machine:
        memory = machine.get("memory_bytes")
        mem = f", {memory / 2**30:.1f} GiB memory" if isinstance(memory, (int, float)) else ""
        lines.append(f"Machine: {machine.get('cpu_model', 'unknown CPU')}, {machine.get('logical_cores', '?')} logical "
                     f"cores{mem}, {machine.get('os', 'unknown OS')}, kernel {machine.get('kernel', '?')}.")
    else:
        lines.append("Machine: unknown (no meta.json in the run).")
    for rt in rc.runtimes:
        m = rc.meta.get(rt)
        if not m:
            lines.append(f"{schema.display_name(rt)}: no meta.json.")
            continue
        extra = f", Tokio {m['tokio_version']}" if m.get("tokio_version") else ""
        settings = rc.variants.get(rt, {}).get("settings") or {}
        variant = f", settings {', '.join(f'{k} = {v}' for k, v in settings.items())}" if settings else ""
        lines.append(f"{schema.display_name(rt)} {m.get('runtime_version', '?')}: {m.get('compiler', '?')} "
                     f"{m.get('compiler_version', '?')}{extra}, build {m.get('build_mode', '?')}, "
                     f"allocator {m.get('allocator', '?')}{variant}.")
    lines += _worker_sentences(rc)
    info = rc.info
    git = info.get("git") or {}
    commit = str(git.get("commit") or "unknown")[:10] + (" (uncommitted changes)" if git.get("dirty") else "")
    cpu = ("CPU time recorded per iteration (schema 2)" if rc.schema_version >= 2
           else "CPU time and worker counts not recorded (schema 1)")
    lines.append(f"Run {rc.run_id}: profile {info.get('profile', '?')}, suites {', '.join(info.get('suites', []))}, "
                 f"{info.get('invocations', '?')} invocations per runtime, started {info.get('started_utc', '?')}, "
                 f"ended {info.get('ended_utc', '?')}, git commit {commit}; {cpu}.")
    return lines


def _worker_sentences(rc: RunComparisons) -> list[str]:
    cores = _cores(rc.meta)
    counts = [int(w) for w in rc.info.get("workers") or []]
    workers = rc.constants.get("num_workers")
    if not counts and isinstance(workers, int):
        counts = [workers]
    if cores is None or not counts:
        return []
    listed = ", ".join(map(str, counts))
    over = [w for w in counts if w > cores]
    if over:
        return [f"The machine has {cores} logical cores; Tiers 3–4 ran with {listed} workers: at "
                f"{', '.join(map(str, over))} workers they oversubscribe the CPU and their timings may be bimodal "
                "(read them with care)."]
    return [f"The machine has {cores} logical cores for {listed} workers: no oversubscription."]


def scaling_sentence(rows: pd.DataFrame, baseline: str, candidate: str) -> str:
    """How one benchmark scales over worker counts (rows of `benchmarks`, one per count, sorted)."""
    bn, cn = schema.display_name(baseline), schema.display_name(candidate)
    rows = rows.sort_values("workers")
    first, last = rows.iloc[0], rows.iloc[-1]
    w0, w1 = int(first["workers"]), int(last["workers"])
    name = schema.bench_label(first["benchmark"], first["param"])
    parts = []
    for role, who in (("candidate", cn), ("baseline", bn)):
        a, z = first[f"{role}_median_ns_per_op"], last[f"{role}_median_ns_per_op"]
        if finite(a) and finite(z) and a > 0:
            change = z / a
            trend = "flat" if abs(math.log(change)) < math.log(1.1) else (
                f"{change:.2f}× slower" if change > 1 else f"{1 / change:.2f}× faster")
            parts.append(f"{who} {fmt_ns(a)} → {fmt_ns(z)} per op ({trend})")
    ran = {who for role, who in (("candidate", cn), ("baseline", bn))
           if any(finite(v) for v in rows[f"{role}_median_ns_per_op"])}
    if len(ran) < 2:  # a row only one side has (e.g. an io row ampere's native API does not run)
        missing = " and ".join(who for who in (cn, bn) if who not in ran)
        return f"{name}, {w0} → {w1} workers: " + "; ".join(parts) + f". Not run by {missing}: no comparison."
    verdicts = [f"{v if isinstance(v, str) and v else 'not compared'} at {int(w)}"
                for w, v in zip(rows["workers"], rows["verdict"])]
    return (f"{name}, {w0} → {w1} workers: " + "; ".join(parts)
            + f". {cn} against {bn}: " + ", ".join(verdicts) + ".")


def history_sentences(history: History, profile: str | None) -> list[str]:
    """Which runs the history shows, and which it left out and why."""
    runs = history.runs
    if len(runs) == 0:
        lines = ["No complete run to show."]
    elif len(runs) == 1:
        lines = [f"Only one complete run of the {profile} profile so far ({runs.iloc[0]['run_id']}): the plots show "
                 "its single point per benchmark and there is nothing to diff yet."]
    else:
        lines = [f"{len(runs)} complete runs of the {profile} profile, from {runs.iloc[0]['run_id']} to "
                 f"{runs.iloc[-1]['run_id']}."]
    lines += [f"{r.run_id} left out: {r.reason}" for r in history.left_out.itertuples()]
    if "disturbed" in runs and runs["disturbed"].astype(bool).any():
        flagged = runs[runs["disturbed"].astype(bool)]
        lines.insert(0, f"{len(flagged)} of {len(runs)} runs ran on a disturbed machine (machine_load.py: more than "
                        f"10% of their invocations shared the CPU with other work): {', '.join(flagged['run_id'])}; "
                        "a regression into or out of such a run may be the machine's.")
    return lines


# -- the net page -----------------------------------------------------------------------------

def verdict_phrase(verdict: Any, reason: Any, candidate: str, baseline: str, tie_band: float) -> str:
    """The verdict of one row in words (candidate's side)."""
    cn, bn = schema.display_name(candidate), schema.display_name(baseline)
    band = f"±{tie_band:.0%}"
    return {
        "win": f"a win for {cn}",
        "loss": f"a loss for {cn} ({bn} is faster beyond the {band} tie band)",
        "tie": f"a tie (the interval lies inside the {band} tie band)",
        "inconclusive": f"inconclusive (the interval crosses an edge of the {band} tie band)",
    }.get(verdict, f"no verdict ({reason})" if isinstance(reason, str) and reason else "no verdict")


def _interval_words(low: float, high: float, confidence: float) -> str:
    if finite(low) and finite(high):
        return f" ({confidence:.0%} CI {min(low, high):.2f}–{max(low, high):.2f}×)"
    return " (no interval)"


def net_sentence(row: dict[str, Any], own: dict[str, Any] | None, tie_band: float, confidence: float) -> str:
    """One net benchmark of one candidate in words: who is faster (or streams more) by how much,
    with the interval and the verdict, and the two sides' median and p99 (or MiB/s).

    `row`: the candidate's row of net.sides(...); `own`: the baseline's row of the same benchmark
    (None when the baseline has no data for it)."""
    cand, base = row["runtime"], row["against"]
    cn, bn = schema.display_name(cand), schema.display_name(base)
    label = row["label"]
    if own is None or not row["compared"] or not finite(row["ratio"]) or row["ratio"] <= 0:
        reason = row["verdict_reason"] if isinstance(row["verdict_reason"], str) else f"no {bn} data"
        return f"{label}: {cn} is not compared with {bn} ({reason})."
    ratio, low, high = row["ratio"], row["ratio_ci_low"], row["ratio_ci_high"]
    verdict = verdict_phrase(row["verdict"], row["verdict_reason"], cand, base, tie_band)
    if row["benchmark"] in ("tcp_stream",):
        text = (f"{label}: {cn} streams {ratio:.2f}× the throughput of {bn}{_interval_words(low, high, confidence)}, "
                f"{verdict}; {_mib(row['mib_per_s'])} against {_mib(own['mib_per_s'])}")
    else:
        what = "per connection" if row["benchmark"] == "tcp_connect" else "per round trip"
        words, lo, hi = ratio_words(ratio, low, high, cand, base)
        text = (f"{label}: {words} {what}{_interval_words(lo, hi, confidence)}, {verdict}; median "
                f"{fmt_ns(row['median_ns_per_op'])} against {fmt_ns(own['median_ns_per_op'])}, p99 "
                f"{fmt_ns(row['p99_ns_per_op'])} against {fmt_ns(own['p99_ns_per_op'])}")
    if row["verdict"] == "win" and row["cpu_verdict"] == "loss" and finite(row["cpu_ratio"]) and row["cpu_ratio"] > 0:
        text += f", but it spends {1 / row['cpu_ratio']:.2f}× the CPU time per op of {bn}"
    return text + "."


def _mib(value: Any) -> str:
    return f"{float(value):,.0f} MiB/s" if finite(value) else "—"


def net_sentences(frame: pd.DataFrame, tie_band: float, confidence: float) -> list[str]:
    """One sentence per net benchmark and candidate (net.sides order); a benchmark that only the
    baseline ran says so."""
    lines = []
    for label, rows in frame.groupby("label", sort=False):
        own = rows[rows["role"] == "baseline"]
        own_row = own.iloc[0].to_dict() if not own.empty else None
        candidates = rows[rows["role"] == "candidate"]
        if candidates.empty and own_row is not None:
            lines.append(f"{label}: only {schema.display_name(own_row['runtime'])} has data (median "
                         f"{fmt_ns(own_row['median_ns_per_op'])}, p99 {fmt_ns(own_row['p99_ns_per_op'])}); "
                         "nothing to compare.")
        for row in candidates.to_dict("records"):
            lines.append(net_sentence(row, own_row, tie_band, confidence))
    return lines


def conns_sentence(rows: pd.DataFrame) -> str:
    """How tcp_echo_conns scales from the fewest to the most connections, per runtime, and the
    verdict of each candidate at each count (rows: net.conns(...), one benchmark)."""
    counts = sorted(int(v) for v in rows["value"].unique())
    parts = []
    for runtime, mine in rows.groupby("runtime", sort=False):
        mine = mine.sort_values("value")
        a, z = mine["median_ns_per_op"].iloc[0], mine["median_ns_per_op"].iloc[-1]
        if len(mine) < 2 or not (finite(a) and finite(z)) or a <= 0:
            continue
        change = z / a
        trend = "flat" if abs(math.log(change)) < math.log(1.1) else (
            f"{change:.2f}× more" if change > 1 else f"{1 / change:.2f}× less")
        parts.append(f"{schema.display_name(runtime)} {fmt_ns(a)} → {fmt_ns(z)} per round trip ({trend})")
    verdicts = []
    for runtime, mine in rows[rows["role"] == "candidate"].groupby("runtime", sort=False):
        listed = ", ".join(f"{v if isinstance(v, str) else 'not compared'} at {int(n)}"
                           for n, v in zip(mine["value"], mine["verdict"]))
        verdicts.append(f"{schema.display_name(runtime)} against {schema.display_name(mine['against'].iloc[0])}: "
                        f"{listed}")
    head = f"tcp_echo_conns, {counts[0]} → {counts[-1]} connections: " if counts else "tcp_echo_conns: "
    return head + ("; ".join(parts) or "one connection count only") + (". " + "; ".join(verdicts) if verdicts else "") + "."


def net_missing_sentence(rc: RunComparisons) -> str:
    """Why the net page has nothing to show: the run recorded no net rows."""
    suites = ", ".join(rc.info.get("suites") or []) or "none listed"
    old = " (a schema-1 run: it predates the net suite)" if rc.schema_version < 2 else ""
    return (f"Run {rc.run_id} has no net rows (its suites: {suites}){old}, so this page has nothing to show; "
            "the net suite is recorded by the bench command with --suite net or --suite all.")


def net_setup_sentence(constants: dict[str, Any], info: dict[str, Any]) -> str:
    """What one iteration of the net suite did in this run (the run's constants), and how many
    values each median and p99 is taken over."""
    def constant(name: str) -> str:
        value = constants.get(name)
        return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else "?"

    stream = constants.get("net_stream_bytes")
    stream_text = f"{stream / 2**20:g} MiB" if isinstance(stream, int) and not isinstance(stream, bool) else "?"
    iterations, invocations = constants.get("iterations"), info.get("invocations")
    values = (f"{iterations * invocations:,} values ({iterations} measured iterations × {invocations} invocations)"
              if isinstance(iterations, int) and isinstance(invocations, int) else "the measured iterations")
    return (f"Per iteration in this run: tcp_pingpong does {constant('net_rounds')} round trips on one connection; "
            f"tcp_echo_conns {constant('net_rounds')} round trips on each of its connections; tcp_connect "
            f"{constant('net_connect_ops')} connections; tcp_stream writes {stream_text} (and reads it back). "
            f"Each runtime's median and p99 of a row are taken over {values}; with fewer than a few hundred "
            "values the upper end of a p99 interval is the largest value observed (marked \"= max\"), and "
            "such an interval covers the true p99 less often than its nominal level.")
