"""Tables and sentences of the machines page (analysis.machines.Machines in, display frames and
plain sentences out; figures in figures/machines.py)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from . import schema
from .fmt import finite, fmt_ns, fmt_ratio_ci
from .machines import Machines, on_every_machine, ordered
from .tables import VERDICT_COLORS


def machines_table(data: Machines) -> pd.DataFrame:
    """One row per machine: what it is and which run represents it."""
    m = data.machines
    return pd.DataFrame({
        "Machine": m["machine"], "CPU model": m["cpu_model"], "Logical cores": m["logical_cores"],
        "Memory": [f"{v:.0f} GiB" if finite(v) else "—" for v in m["memory_gib"]],
        "OS": m["os"], "Binaries built for": m["target_cpu"], "Run": m["run_id"],
        "Schema": m["schema_version"], "Worker counts (Tiers 3–4)": m["workers"],
        "Invocations": m["invocations"], "Other runs of it": m["other_runs"]})


def _side(value: Any, low: Any, high: Any) -> str:
    if not finite(value):
        return "—"
    if not (finite(low) and finite(high)):
        return f"{fmt_ns(value)} [no CI]"
    return f"{fmt_ns(value)} [{fmt_ns(low)}, {fmt_ns(high)}]"


def side_by_side(data: Machines, suite: str, common_only: bool = False) -> pd.DataFrame:
    """One row per benchmark (and worker count) of `suite`; per machine (column group): the
    candidate's and the baseline's ns/op with intervals, the ratio with its interval and the
    verdict. `common_only`: only rows every machine ran."""
    machines = list(data.machines["machine"])
    rows = data.rows[data.rows["suite"] == suite] if len(data.rows) else data.rows
    if common_only:
        rows = on_every_machine(rows, machines)
    rows = ordered(rows)
    bn, cn = schema.display_name(data.baseline), schema.display_name(data.candidate)
    table: dict[tuple[str, str], list[str]] = {("", "Benchmark"): []}
    for m in machines:
        for field in (f"{cn} ns/op", f"{bn} ns/op", f"{bn} ÷ {cn}", "Verdict"):
            table[(m, field)] = []
    if rows.empty:
        return pd.DataFrame({k: pd.Series(dtype=object) for k in table}, columns=pd.MultiIndex.from_tuples(list(table)))
    for label, group in rows.groupby("label", sort=False):
        table[("", "Benchmark")].append(str(label))
        by_machine = {r["machine"]: r for r in group.to_dict("records")}
        for m in machines:
            r = by_machine.get(m)
            cells = (["not run", "", "", ""] if r is None else
                     [_side(r["candidate_median_ns_per_op"], r["candidate_ci_low"], r["candidate_ci_high"]),
                      _side(r["baseline_median_ns_per_op"], r["baseline_ci_low"], r["baseline_ci_high"]),
                      fmt_ratio_ci(r["ratio"], r["ratio_ci_low"], r["ratio_ci_high"]),
                      (r["verdict"] if isinstance(r["verdict"], str) else "—")
                      + (" (oversubscribed)" if r["oversubscribed"] else "")])
            for field, cell in zip((f"{cn} ns/op", f"{bn} ns/op", f"{bn} ÷ {cn}", "Verdict"), cells):
                table[(m, field)].append(cell)
    return pd.DataFrame(table, columns=pd.MultiIndex.from_tuples(list(table)))


def style_side_by_side(frame: pd.DataFrame) -> Any:
    """A Styler colouring every machine's verdict column."""
    def colour(value: Any) -> str:
        hue = VERDICT_COLORS.get(str(value).split(" ")[0])
        return f"color: {hue}; font-weight: bold" if hue else ""

    verdicts = [c for c in frame.columns if c[1] == "Verdict"]
    styler = frame.style.hide(axis="index")
    return styler.map(colour, subset=verdicts) if verdicts else styler


def machine_sentences(data: Machines) -> list[str]:
    """Which machines are present (plainly), and what limits comparing them."""
    m = data.machines
    if m.empty:
        return ["No machine: no complete run of this profile with the baseline and the candidate."]
    names = "; ".join(f"{r.machine}, {r.arch}, run {r.run_id}" for r in m.itertuples())
    lines = [f"{len(m)} machine{'s' if len(m) != 1 else ''} in the data folder: {names}."]
    if len(m) == 1:
        lines.append("Only one machine: a run from another one (`python -m analysis bundle`, README \"Measuring "
                     "a large machine\") appears here beside it once it is in data/runs/.")
    hosts = m.groupby("hostname")["machine"].nunique()
    for host in hosts[hosts > 1].index:
        lines.append(f"Host name {host!r} is on {int(hosts[host])} machines (different CPU models or core counts): "
                     f"they are kept apart.")
    for r in m[m["schema_version"] == 1].itertuples():
        lines.append(f"{r.machine}: schema-1 run (no CPU time, no worker counts recorded): its Tier 3–4 rows are "
                     f"at the run's num_workers, as the contract implies.")
    targets = {t for t in m["target_cpu"] if isinstance(t, str)}
    if len(targets) > 1:
        lines.append("The binaries were built for different CPUs (" + ", ".join(sorted(targets)) + "): ns/op "
                     "across machines compare machine and build together; the ratio within a machine is like for like.")
    if data.constants_differ:
        lines.append("Constants that differ between the machines' runs (the rows they size are not the same work): "
                     + ", ".join(sorted(data.constants_differ)) + ".")
    return lines
