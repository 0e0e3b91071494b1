"""`python -m analysis ab`: an A/B of benchmark programs, by alternating invocations.

    python -m analysis ab base=PROGRAM new=PROGRAM [more=PROGRAM ...] --args='ARGUMENTS'
                          [--rounds 10] [--cpu] [--tie-band 0.05] [--confidence 0.95]
                          [--timeout-s 600] [--csv OUT.csv]

The question a change to the runtime asks — is the new build faster than the old on these
rows? — on one machine, without a full run: every program gets the same arguments (`--args`,
one string split as a shell would: the bench programs' command line, `--suite io --filter
io_fan_in --workers 1,2`, ...) plus
`--invocation K --csv <temporary>`, once per round. Round 0 is a warm-up and is discarded;
rounds 1..N are measured, the programs' order rotated by one per round (as the orchestrator
does), so that a slow phase of the machine — on the 2-vCPU VM whole minutes run 1.5x slower —
falls on every program alike instead of on whichever ran second.

Per benchmark row (suite, benchmark, param, workers), each program's invocation median of
ns/op (wall, or CPU with `--cpu`) is one summary per round. The table gives the median of those
per program and, for every program after the first, the ratio first ÷ program as the median
per-round ratio with its distribution-free interval (stats.paired_median_ratio_ci: rounds are
paired, since the programs of a round ran back to back), its verdict against the tie band
(`win`: the program is faster than the first; ratios > 1 say so), and the programs whose invocation medians split
into two modes (modes.find_modes: a bimodal row's median says little; look at its spread).
`--csv` writes the same table as CSV (atomically; an existing file is an error).

Against `python -m analysis bench --runtimes ampere,ampere.ab --binary ampere.ab=PROGRAM` (a
full run folder, the report's pages, ampere_bench builds only): no run folder and no variant
to declare, any bench program (the io programs' builds too), any number of them, one table.

Errors are one line: a program that is missing or not executable, a name used twice, fewer
than 2 rounds, a program that fails or outlives `--timeout-s` (its last stderr line, the round),
or a CSV that does not validate (bench_csv's file, line and problem).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shlex
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from . import modes, schema, stats
from .bench_csv import read_bench_csv
from .errors import AnalysisError, RunFailed
from .files import atomic_writer

NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,31}")
KEY = ["suite", "benchmark", "param", "workers"]


@dataclass(frozen=True)
class Program:
    name: str
    path: Path


def parse_programs(items: Sequence[str]) -> list[Program]:
    """`name=path` items: at least two, names unique, each path an executable file."""
    out: list[Program] = []
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not NAME_RE.fullmatch(name) or not path:
            raise AnalysisError(f"ab: {item!r}: expected NAME=PROGRAM (NAME: a letter, then letters, digits, . _ -)")
        if any(p.name == name for p in out):
            raise AnalysisError(f"ab: the name {name!r} is given twice")
        program = Path(path)
        if not program.is_file() or not os.access(program, os.X_OK):
            raise AnalysisError(f"ab: {name}: {path}: not an executable file")
        out.append(Program(name, program))
    if len(out) < 2:
        raise AnalysisError("ab: give at least two programs (NAME=PROGRAM NAME=PROGRAM ...)")
    return out


def round_order(programs: Sequence[Program], k: int) -> list[Program]:
    """Round k's order: the list rotated left by k."""
    shift = k % len(programs)
    return list(programs[shift:]) + list(programs[:shift])


def invoke(program: Program, args: Sequence[str], k: int, folder: Path, timeout_s: float) -> pd.DataFrame:
    """One invocation of `program`: its validated rows."""
    csv = folder / f"{program.name}.{k}.csv"
    command = [str(program.path), *args, "--invocation", str(k), "--csv", str(csv)]
    try:
        done = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True, errors="replace", timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise RunFailed(f"ab: {program.name} (round {k}): no exit after {timeout_s:g} s") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise RunFailed(f"ab: {program.name} (round {k}): exit code {done.returncode}: {last}")
    if not csv.is_file():
        raise RunFailed(f"ab: {program.name} (round {k}): wrote no CSV (are the arguments a bench program's?)")
    return read_bench_csv(csv)


def summaries(rows: pd.DataFrame, cpu: bool) -> pd.Series:
    """Per benchmark row, the invocation's median ns/op (wall or CPU)."""
    if cpu and "cpu_ns" not in rows.columns:
        raise AnalysisError("ab: --cpu: the programs record no cpu_ns (a schema-1 program)")
    frame = rows.copy()
    if "workers" not in frame.columns:
        frame["workers"] = 0
    frame["ns_per_op"] = frame["cpu_ns" if cpu else "elapsed_ns"] / frame["ops"]
    return frame.groupby(KEY, sort=False)["ns_per_op"].median()


def run_rounds(programs: Sequence[Program], args: Sequence[str], rounds: int, cpu: bool, timeout_s: float,
               progress: Callable[[str], None] = lambda line: None) -> dict[str, list[pd.Series]]:
    """Round 0 (discarded) and rounds 1..rounds: per program, one summary Series per measured round."""
    per: dict[str, list[pd.Series]] = {p.name: [] for p in programs}
    with tempfile.TemporaryDirectory(prefix="ampere-ab-") as tmp:
        for k in range(rounds + 1):
            for program in round_order(programs, k):
                got = summaries(invoke(program, args, k, Path(tmp), timeout_s), cpu)
                if k > 0:
                    per[program.name].append(got)
            progress(f"==> [ab] round {k}/{rounds}" + (" (warm-up, discarded)" if k == 0 else ""))
    return per


def _fmt_ratio(ci: stats.RatioCI) -> str:
    if math.isnan(ci.low):
        return f"{ci.ratio:.3f}"
    return f"{ci.ratio:.3f} [{ci.low:.3f}, {ci.high:.3f}]"


def table(programs: Sequence[Program], per: dict[str, list[pd.Series]], tie_band: float,
          confidence: float) -> pd.DataFrame:
    """One line per benchmark row that every program ran in every round (see the module doc)."""
    names = [p.name for p in programs]
    base = names[0]
    keys = [k for k in per[base][0].index if all(k in s.index for n in names for s in per[n])]
    keys.sort(key=lambda k: schema.bench_sort_key(k[0], 0, k[1], k[2], k[3]))
    records = []
    for key in keys:
        values = {n: np.array([float(s.loc[key]) for s in per[n]]) for n in names}
        record: dict[str, object] = {"suite": key[0], "benchmark": key[1], "param": key[2], "workers": key[3]}
        for n in names:
            record[f"{n}_ns_per_op"] = float(np.median(values[n]))
        for n in names[1:]:
            ci = stats.paired_median_ratio_ci(values[base], values[n], confidence)
            record[f"{base}/{n}"] = _fmt_ratio(ci)
            record[f"{n}_verdict"] = stats.verdict(ci.log_low, ci.log_high, tie_band)
        record["bimodal"] = ", ".join(n for n in names if modes.find_modes(values[n], "invocations").multimodal)
        records.append(record)
    return pd.DataFrame.from_records(records)


def write_csv(frame: pd.DataFrame, target: Path) -> None:
    if target.exists():
        raise AnalysisError(f"ab: {target}: exists (results are never overwritten)")
    with atomic_writer(target) as out:
        frame.to_csv(out, index=False)


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("ab", parents=[common], help="A/B of bench programs by alternating invocations",
                       description="Run two or more bench programs alternately on the same arguments and compare "
                                   "them row by row: per-round paired ratios with intervals, verdicts, modes.")
    p.add_argument("programs", nargs="+", metavar="NAME=PROGRAM", help="the programs, the first the baseline")
    p.add_argument("--args", required=True, metavar="'ARGUMENTS'",
                   help="the arguments every program gets, as one string (--args='--suite io --filter io_spawn')")
    p.add_argument("--rounds", type=int, default=10, help="measured rounds after the warm-up round (default 10)")
    p.add_argument("--cpu", action="store_true", help="compare CPU time per op instead of wall time")
    p.add_argument("--tie-band", type=float, default=stats.DEFAULT_TIE_BAND, help="verdict tie band (default 0.05)")
    p.add_argument("--confidence", type=float, default=stats.DEFAULT_CONFIDENCE, help="interval level (default 0.95)")
    p.add_argument("--timeout-s", type=float, default=600.0, help="watchdog per invocation (default 600 s)")
    p.add_argument("--csv", help="also write the table here (must not exist)")
    p.set_defaults(func=cmd_ab)


def program_arguments(text: str) -> list[str]:
    """The `--args` string split as a shell would; ab gives --invocation and --csv itself."""
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise AnalysisError(f"ab: --args: {exc}") from None
    given = [w for w in words if w.split("=", 1)[0] in ("--csv", "--invocation")]
    if given:
        raise AnalysisError(f"ab: --args: {given[0].split('=', 1)[0]} is given by ab itself")
    return words


def cmd_ab(args: argparse.Namespace) -> int:
    programs = parse_programs(args.programs)
    program_args = program_arguments(args.args)
    if args.rounds < 2:
        raise AnalysisError(f"ab: --rounds {args.rounds}: at least 2 measured rounds (an interval needs two)")
    if not 0.0 < args.confidence < 1.0:
        raise AnalysisError(f"ab: --confidence {args.confidence}: must be in (0, 1)")
    if args.tie_band < 0:
        raise AnalysisError(f"ab: --tie-band {args.tie_band}: must be >= 0")
    target = Path(args.csv) if args.csv else None
    if target is not None and target.exists():
        raise AnalysisError(f"ab: {target}: exists (results are never overwritten)")
    per = run_rounds(programs, program_args, args.rounds, args.cpu, args.timeout_s,
                     progress=lambda line: print(line, flush=True))
    frame = table(programs, per, args.tie_band, args.confidence)
    if frame.empty:
        raise AnalysisError("ab: no benchmark row ran in every round of every program")
    with pd.option_context("display.width", 250, "display.max_columns", 50, "display.max_rows", 500):
        print(frame.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    if target is not None:
        write_csv(frame, target)
        print(f"==> [ab] {target}")
    return 0
