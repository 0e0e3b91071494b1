"""The machine's load while a run measured: recorded per invocation, flagged where disturbed.

A benchmark run shares its machine with whatever else runs there; on the lab's 2-vCPU VM other
engineers compile at the same time (a fresh-clone run measured a median 1-minute load average
of 8.6, peak 57, issue 43), and nothing in the run said so. The orchestrator (bench.py,
httpbench.py) now takes a `Snapshot` of /proc before and after every invocation and records
`between(before, after, own_cpu_s)` in run.json's `invocation_order` (and the http suite's):

- `loadavg_1m`: the 1-minute load average at the invocation's end (/proc/loadavg; it lags by
  about a minute, so it is a context, not the measure);
- `steal_share`: the share of the machine's CPU time the hypervisor stole over the invocation
  (/proc/stat `steal` ÷ all ticks);
- `other_cpu_cores`: the CPU time every *other* process used over the invocation, in cores
  (machine busy ticks — user, nice, system, irq, softirq, steal not counted — minus the CPU of
  the measured process and its children, from wait4's rusage, and of the orchestrator itself),
  averaged over the invocation's wall time: 0 on an idle machine, 1.0 = one core kept busy by
  someone else the whole time;
- `cores`, `elapsed_s`.

`reasons(record)` says why an invocation counts as disturbed: others kept more than
OTHER_CORES_MAX cores busy, or the hypervisor stole more than STEAL_MAX. `run_summary(info)`
counts the disturbed invocations of a run (and their share) and the median and peak load
average; the report's index, `compare` and `diff` print `run_sentence` at the top, and the
history marks runs with a disturbed share above RUN_SHARE_MAX. Runs from before the record have
none: "not recorded".
"""

from __future__ import annotations

import math
import os
import resource
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

#: An invocation is disturbed when other processes kept more than this many cores busy on average.
OTHER_CORES_MAX = 0.25
#: ... or when the hypervisor stole more than this share of the machine's CPU time.
STEAL_MAX = 0.02
#: A run is flagged as disturbed when more than this share of its invocations were.
RUN_SHARE_MAX = 0.10


@dataclass(frozen=True)
class Snapshot:
    """What /proc says at one moment (all CPU figures in clock ticks of the whole machine)."""

    monotonic_s: float
    loadavg_1m: float
    busy_ticks: int
    steal_ticks: int
    total_ticks: int
    own_cpu_s: float


def parse_stat_cpu(text: str) -> tuple[int, int, int]:
    """(busy, steal, total) ticks from /proc/stat's aggregate `cpu` line.

    Fields: user nice system idle iowait irq softirq steal guest guest_nice; guest time is
    already inside user / nice (the kernel adds it there), so it is not added again. Busy =
    user + nice + system + irq + softirq (what processes and the kernel ran; idle, iowait and
    steal are not busy)."""
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            values = [int(v) for v in fields[1:]] + [0] * 10
            user, nice, system, idle, iowait, irq, softirq, steal = values[:8]
            busy = user + nice + system + irq + softirq
            return busy, steal, busy + idle + iowait + steal
    raise ValueError("no aggregate cpu line in /proc/stat")


def snapshot(proc: Path = Path("/proc")) -> Snapshot | None:
    """The machine's state now; None where /proc cannot be read (not Linux)."""
    try:
        loadavg = float((proc / "loadavg").read_text(encoding="ascii").split()[0])
        busy, steal, total = parse_stat_cpu((proc / "stat").read_text(encoding="ascii"))
    except (OSError, ValueError, IndexError):
        return None
    own = resource.getrusage(resource.RUSAGE_SELF)
    return Snapshot(_monotonic(), loadavg, busy, steal, total, own.ru_utime + own.ru_stime)


def _monotonic() -> float:
    import time
    return time.monotonic()


def children_cpu_s() -> float:
    """CPU seconds of every child this process has waited for (getrusage RUSAGE_CHILDREN)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def between(before: Snapshot | None, after: Snapshot | None, measured_cpu_s: float,
            cores: int | None = None) -> dict[str, Any] | None:
    """The load record of one invocation (module doc); `measured_cpu_s`: the CPU of the measured
    process(es) over it (their rusage); None without both snapshots."""
    if before is None or after is None:
        return None
    cores = cores or os.cpu_count() or 1
    elapsed = max(after.monotonic_s - before.monotonic_s, 1e-9)
    ticks = max(after.total_ticks - before.total_ticks, 1)
    tick_s = elapsed * cores / ticks  # seconds of one CPU per tick, measured (CLK_TCK on a whole machine)
    busy_s = (after.busy_ticks - before.busy_ticks) * tick_s
    own_s = after.own_cpu_s - before.own_cpu_s
    other = max(0.0, busy_s - measured_cpu_s - own_s) / elapsed
    return {"loadavg_1m": round(after.loadavg_1m, 2),
            "steal_share": round((after.steal_ticks - before.steal_ticks) / ticks, 4),
            "other_cpu_cores": round(other, 3), "measured_cpu_cores": round(measured_cpu_s / elapsed, 3),
            "cores": cores, "elapsed_s": round(elapsed, 3)}


def reasons(record: Mapping[str, Any] | None) -> list[str]:
    """Why an invocation's load record counts as disturbed ([] when it does not or is missing)."""
    if not record:
        return []
    out = []
    other, steal = record.get("other_cpu_cores"), record.get("steal_share")
    if isinstance(other, (int, float)) and other > OTHER_CORES_MAX:
        out.append(f"other processes kept {other:.2f} cores busy")
    if isinstance(steal, (int, float)) and steal > STEAL_MAX:
        out.append(f"the hypervisor stole {steal:.1%} of the CPU time")
    return out


def _records(info: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    entries = list(info.get("invocation_order") or []) + list((info.get("http") or {}).get("invocation_order") or [])
    return [e for e in entries if isinstance(e, Mapping)]


def run_summary(info: Mapping[str, Any]) -> dict[str, Any]:
    """Counts and figures of a run's load records: `recorded` (invocations with a record),
    `disturbed` (of them, with reasons), `share`, the median and peak 1-minute load average and
    other processes' cores, and `flagged` (share above RUN_SHARE_MAX)."""
    entries = _records(info)
    loads = [e["load"] for e in entries if isinstance(e.get("load"), Mapping)]
    if not loads:
        return {"recorded": 0, "of": len(entries), "disturbed": 0, "share": math.nan, "flagged": False}
    disturbed = [e for e in entries if reasons(e.get("load"))]
    averages = [float(x["loadavg_1m"]) for x in loads if isinstance(x.get("loadavg_1m"), (int, float))]
    others = [float(x["other_cpu_cores"]) for x in loads if isinstance(x.get("other_cpu_cores"), (int, float))]
    share = len(disturbed) / len(loads)
    return {"recorded": len(loads), "of": len(entries), "disturbed": len(disturbed), "share": share,
            "loadavg_median": statistics.median(averages) if averages else math.nan,
            "loadavg_max": max(averages) if averages else math.nan,
            "other_cores_median": statistics.median(others) if others else math.nan,
            "other_cores_max": max(others) if others else math.nan,
            "cores": loads[0].get("cores"), "flagged": share > RUN_SHARE_MAX,
            "disturbed_invocations": [{"runtime": e.get("runtime"), "invocation": e.get("invocation"),
                                       "suite": e.get("suite", "http" if "suite" not in e else None),
                                       "reasons": reasons(e.get("load"))} for e in disturbed]}


def run_sentence(info: Mapping[str, Any], run_id: str | None = None) -> str:
    """One sentence on a run's load, for the top of the report, `compare` and `diff`."""
    s = run_summary(info)
    name = f"Run {run_id}" if run_id else "This run"
    if not s["recorded"]:
        return f"{name}: the machine's load was not recorded (a run from before issue 43)."
    text = (f"{name}: {s['disturbed']} of {s['recorded']} invocations disturbed ({s['share']:.0%}: other processes "
            f"kept more than {OTHER_CORES_MAX:g} cores busy, or more than {STEAL_MAX:.0%} of the CPU stolen); "
            f"1-minute load average median {s['loadavg_median']:.2f}, peak {s['loadavg_max']:.2f} on "
            f"{s['cores']} cores; other processes' CPU median {s['other_cores_median']:.2f} cores, "
            f"peak {s['other_cores_max']:.2f}")
    if s["flagged"]:
        text = "DISTURBED — " + text + ": timings moved by the machine's other work; compare within the run only"
    return text + "."
