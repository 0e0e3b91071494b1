"""The report index `reports/<run_id>/index.html`: the run's summary and a link to every page.

Built from the run's cached comparisons (artefact.RunComparisons), the same numbers the
notebooks show: run, machine, commit, verdict counts and geometric means (like-for-like rows
first, then all rows, then CPU time) for each candidate, the headline in words, and links.
No script, no external resource.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from . import httpsuite, iosuite, machine_load, schema
from .artefact import RunComparisons
from .compare import Comparison
from .words import headline_sentences

DESCRIPTIONS = {
    "overview": "Headline, every ratio with its interval (forest plot), wall time against CPU time, the runtime "
                "variants, per-tier tables, allocations, diagnostics, fairness table, machine and toolchain.",
    "distributions": "Every measured iteration: distributions of time per operation and every iteration in "
                     "measurement order (drift, warm-up, differences between invocations).",
    "echo": "Batch echo suite: avg and p99 batch latency vs batch size, ratios with intervals, payload "
            "size sweep and shared-buffer sweep.",
    "net": "Net suite (TCP over loopback): median and p99 time per round trip with intervals for payload sizes, "
           "connections and connects, tcp_stream throughput in MiB/s, scaling over connections, and every ratio "
           "to the baseline with its interval and verdict in wall and CPU time.",
    "io": "Io suite (one std.Io program on ampere.io, std.Io.Threaded and zio — its io_uring and its epoll build —, "
          "Tokio's twins, and ampere's "
          "native API where it has the row): the matrix "
          "of every runtime (ns/op, CPU ns/op, ratio to the fastest with its interval, the winner per row), one "
          "forest plot per runtime against Tokio, and the price of straight-line code (ampere.io ÷ ampere).",
    "http": "Http suite (std.http.Server on ampere.io, std.Io.Threaded and zio; hyper on Tokio; load from wrk): "
            "requests/s, p99 latency and server CPU per request at every connection count with intervals over "
            "invocations, the failed samples, and one sentence per runtime.",
    "scaling": "The worker sweep: ns/op and CPU ns/op against worker threads for both runtimes, the ratio with "
               "its interval at each count, and how each benchmark scales.",
    "machines": "Every machine of the data folder side by side (host, CPU model, logical cores): each benchmark's "
                "ns/op and ratio with intervals per machine and worker count, and every machine's worker sweep.",
    "history": "Every complete run of the same profile: each benchmark's ratio over time and regressions "
               "between consecutive runs.",
}

INDEX_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 960px; margin: 2em auto;
       padding: 0 1em; color: #222; line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
.sub { color: #666; margin-top: 0; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { text-align: left; padding: 4px 12px 4px 0; border-bottom: 1px solid #eee; vertical-align: top; }
th { color: #555; font-weight: 600; }
.win { color: #2ca02c; font-weight: 600; } .loss { color: #d62728; font-weight: 600; }
.tie { color: #7f7f7f; font-weight: 600; } .inconclusive { color: #b38600; font-weight: 600; }
ul.reports li { margin: 0.6em 0; }
footer { margin-top: 2em; color: #888; font-size: 0.9em; }
"""


@dataclass
class Page:
    name: str
    html: Path
    notebook: Path
    seconds: float


def _ratio(value: Any) -> str:
    return f"{value:.3f}×" if isinstance(value, (int, float)) and math.isfinite(value) else "—"


def _geomean(part: dict[str, Any], prefix: str) -> str:
    low, high = (part.get(f"{prefix}geomean_ratio_ci") or [math.nan, math.nan])[:2]
    return (f"{_ratio(part.get(f'{prefix}geomean_ratio'))} [{_ratio(low)}, {_ratio(high)}] "
            f"over {int(part.get(f'{prefix}geomean_n') or 0)} benchmarks")


def _comparison_rows(cmp: Comparison) -> list[tuple[str, str]]:
    esc = html.escape
    bn, cn = schema.display_name(cmp.baseline), schema.display_name(cmp.candidate)
    s = cmp.summary
    counts = s.get("counts", {})
    verdicts = " · ".join(f'<span class="{v}">{v} {int(counts.get(v, 0))}</span>'
                          for v in ("win", "loss", "tie", "inconclusive"))
    suites = [x for x in schema.SUITES if (cmp.benchmarks["suite"] == x).any()]
    what = ", ".join("tiers 1–4" if x == "micro" else x for x in suites) or "no rows"
    rows = [(f"{esc(cn)}: verdicts ({esc(what)}), like-for-like rows",
             f"{verdicts} of {int(s.get('n_like_for_like', s.get('n_compared', 0)))} like for like "
             f"({int(s.get('n_compared', 0))} compared)"),
            (f"{esc(cn)}: geometric mean {esc(bn)}/{esc(cn)}, like-for-like rows",
             f"{_geomean(s, 'like_for_like_')} (&gt; 1: {esc(cn)} faster)"),
            (f"{esc(cn)}: geometric mean {esc(bn)}/{esc(cn)}, all rows", f"{_geomean(s, '')} (&gt; 1: {esc(cn)} faster)")]
    if cmp.benchmarks["cpu_ratio"].notna().any():
        source = esc(str(s.get("cpu_geomean_source", "per sample")))
        rows.append((f"{esc(cn)}: geometric mean CPU {esc(bn)}/{esc(cn)} ({source}), like-for-like rows",
                     f"{_geomean(s, 'cpu_')} (&gt; 1: {esc(cn)} uses less CPU)"))
    else:
        rows.append((f"{esc(cn)}: CPU time", "not recorded in this run (schema 1)"))
    return rows


def index_html(rc: RunComparisons, pages: Sequence[Page], command: str, run_folder: str,
               http: pd.DataFrame | None = None) -> str:
    """The run's index page: summary in words and figures, links to every report (relative);
    `http` is the run's httpsuite.summary (None or empty: no http section)."""
    esc = html.escape
    info = rc.info
    meta = next((m for m in rc.meta.values() if isinstance(m, dict)), {})
    machine = meta.get("machine") or {}
    git = info.get("git") or {}
    commit = str(git.get("commit") or "—")[:12] + (" (uncommitted changes)" if git.get("dirty") else "")
    cmp = rc.primary
    bn = schema.display_name(rc.baseline)
    candidates = ", ".join(schema.display_name(c) for c in rc.comparisons)
    load = machine_load.run_sentence(rc.info)
    rows = [
        ("Machine load", f'<span class="{"loss" if load.startswith("DISTURBED") else "tie"}">{esc(load)}</span>'),
        ("Run", esc(rc.run_id)),
        ("Started / ended (UTC)", f"{esc(str(info.get('started_utc', '—')))} / {esc(str(info.get('ended_utc', '—')))}"),
        ("Profile, suites", f"{esc(str(info.get('profile', '—')))}, {esc(', '.join(info.get('suites', [])))}"),
        ("Machine", esc(f"{machine.get('cpu_model', 'unknown CPU')}, {machine.get('logical_cores', '?')} logical cores, "
                        f"{machine.get('os', 'unknown OS')}, kernel {machine.get('kernel', '?')}")),
        ("Git commit", esc(commit)),
        ("Compared", f"{esc(candidates)} (candidates) each against {esc(bn)} (baseline), tie band "
                     f"±{cmp.tie_band:.0%}, {cmp.confidence:.0%} intervals"),
    ]
    for comparison in rc.comparisons.values():
        if comparison.compared:
            rows += _comparison_rows(comparison)
    table = "\n".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows)
    sentences = "\n".join(f"<li>{esc(s)}</li>" for s in headline_sentences(cmp))
    io_section = _io_section(rc)
    http_section = _http_section(rc, http)
    links = "\n".join(
        f'<li><a href="{esc(p.html.name)}"><strong>{esc(p.name)}</strong></a> — {esc(DESCRIPTIONS.get(p.name, ""))} '
        f'<br><small>executed notebook: <a href="{esc(p.notebook.name)}">{esc(p.notebook.name)}</a> '
        f'({p.seconds:.0f} s)</small></li>' for p in pages)
    generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>Ampere vs Tokio — run {esc(rc.run_id)}</title>
<style>{INDEX_CSS}</style>
</head>
<body>
<h1>Ampere vs Tokio — benchmark reports</h1>
<p class="sub">run {esc(rc.run_id)}</p>
<table>
{table}
</table>
<h2>In words ({esc(schema.display_name(cmp.candidate))} against {esc(bn)})</h2>
<ul>
{sentences}
</ul>
{io_section}
{http_section}
<h2>Reports</h2>
<ul class="reports">
{links}
</ul>
<footer>Generated {generated} by <code>{esc(command)}</code>. Ratios are {esc(bn)} ÷ candidate of the time
(or CPU time) per operation; every number comes from the run folder {esc(run_folder)}.</footer>
</body>
</html>
"""


def _io_section(rc: RunComparisons) -> str:
    """"Io suite" in words: one sentence per runtime (iosuite.runtime_sentences), or nothing
    when the run has no io rows and records no absent io side."""
    absent = iosuite.absent_sides(rc.info)
    if not iosuite.has_io(rc.comparisons) and not absent:
        return ""
    table = iosuite.matrix(iosuite.sides(rc.comparisons), rc.primary.tie_band)
    lines = iosuite.runtime_sentences(table, rc.comparisons, absent, rc.baseline, rc.primary.tie_band)
    lines += iosuite.peer_sentences(rc.peers)
    items = "\n".join(f"<li>{html.escape(s)}</li>" for s in lines)
    return f"<h2>Io suite: where each runtime stands</h2>\n<ul>\n{items}\n</ul>"


def _http_section(rc: RunComparisons, table: pd.DataFrame | None) -> str:
    """"Http suite" in words: the settings and one sentence per runtime
    (httpsuite.runtime_sentences), or nothing when the run has no http rows."""
    if table is None or table.empty:
        return ""
    lines = httpsuite.runtime_sentences(table, httpsuite.absent_sides(rc.info, table))
    items = "\n".join(f"<li>{html.escape(s)}</li>" for s in lines)
    return (f"<h2>Http suite under wrk: where each runtime stands</h2>\n"
            f"<p>{html.escape(httpsuite.settings_sentence(rc.info))}</p>\n<ul>\n{items}\n</ul>")
