"""`python -m analysis bench`: the benchmark orchestrator (what `make bench` and `zig build compare` run).

Steps
1. `--build` (optional): the one build recipe, analysis/build.py, for the base runtimes of the
   selected variants. A failure stops here with one line naming the step (no run folder yet: a
   build is not part of a run).
2. Create `data/runs/<run_id>/` (`YYYYmmddTHHMMSSZ-<host>`, UTC); it is an error if it
   exists, and an existing folder is never written to.
3. Warm-up: one invocation of every selected variant, in the run's order, with the run's
   arguments; its output is discarded (logs kept as `logs/<variant>.warmup.*`). It takes the
   machine from cold (page cache, CPU frequency, fresh memory pages, the host's scheduler) to
   the state every measured invocation then finds, instead of letting the first measured
   invocation pay for it (on fresh machines the first process was up to 2.5x slower on the
   1 MiB echo rows). One per variant, not one in all, so that each binary and each variant's
   configuration has run once before measuring. Recorded in run.json `warmup`.
4. The measured invocations, alternating over all selected variants in rounds whose order
   rotates (ampere 0, ampere.nospin 0, tokio 0, ampere.nospin 1, tokio 1, ampere 1, ...), so that
   drift hits every variant alike and none is always first. Each gets
   `--variant V --invocation K --csv <staging> --meta <staging>` plus the forwarded --suite,
   --quick, --filter, --workers and --set; a program whose `--help` lists `--metrics` (today
   ampere_bench, so every ampere variant) also gets `--metrics <staging>` in its odd measured
   invocations (`records_metrics`: their snapshots would enter the whole-invocation CPU of the
   others), not in the warm-up (`.staging/<variant>.<K>.metrics.jsonl`). Each runs under a
   watchdog (`--timeout` seconds) in its own process group with a parent-death signal
   (analysis/child.py): it dies with the orchestrator, even under `kill -9`. stderr is read line by line as it comes: `# start` /
   `# done` lines become progress lines on our stdout, other lines are echoed to our stderr,
   and everything the program printed is kept in `logs/<variant>.<K>.{stdout,stderr}.txt`. On
   expiry the whole process group is killed and the benchmark of the last `# start` line
   without its `# done` is named.
5. Validate every invocation's CSV (schema 2, invocation column K, runtime column V, every
   requested worker count on each Tier 3-4 benchmark) and meta with the loader, merge each
   variant's CSVs into `<variant>.csv` (temporary name + rename), validate the merged file,
   copy invocation 0's meta to `<variant>.meta.json` (a different meta in a later invocation
   is recorded as a warning), concatenate each variant's metrics files in invocation order
   into `<variant>.metrics.jsonl` (temporary name + rename; validated with analysis/metrics.py
   after each invocation and merged; a program that wrote none is fine), concatenate each
   variant's span files (`<staging>.span.csv`, written by the programs beside their CSV) into
   `<variant>.span.csv` (validated against the merged CSV, analysis/span.py; none, with a
   warning, when only some invocations wrote one), remove the staging folder and write
   `run.json` last (`metrics_files` says which variants have one).
Any failure writes `failed.json` (step, runtime, invocation, benchmark, reason), removes the
staging folder and any merged file, prints one `error:` line and exits 1; no run.json is
written. Ctrl-C (SIGINT) and SIGTERM do the same with reason "interrupted" and exit 130 / 143.

Defaults per profile: the variants (DEFAULT_VARIANTS, from runtime/bench/variants.json; the io
suite's IO_DEFAULT_VARIANTS for `--suite io`, added to the full profile's `--suite all`), the
invocation count (DEFAULT_INVOCATIONS) and the worker sweep (default_workers).

The io programs (`ampere.io`, `zig.threaded`, `zio`, `zio.epoll`: analysis/build.py IO_PROGRAMS) are
runtimes of their own, each its own binary, always run with `--suite io`. One that cannot run —
`ampere.io` until build.AMPERE_IO_BUILT, another whose binary is missing (the reason the build
recorded in zig-out/io-absent.json) — is left out of the invocations and recorded in run.json
`runtimes` with `absent: "<reason>"` (schema 3); the run still completes. ampere_bench and
tokio_bench run the io suite too (`--suite io`, and within `--suite all`): ampere_bench the rows
its native state-machine API has (runtime/bench/io_native.zig), so every ampere variant
(`ampere`, `ampere.nospin`) has io rows; check_suite refuses a program without any (IO_CAPABLE).
Constants recorded in run.json: `runtime/bench/constants.json`'s profile plus the --set
overrides, computed here (the programs embed the same file at build time; if the file is newer
than a binary, run.json gets a warning that the binary may embed older sizes).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import queue
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

from . import child, httpbench, machine_load, schema
from .build import AMPERE_IO_ABSENT, AMPERE_IO_BUILT, BINARIES, IO_PROGRAMS, REPO_ROOT, RUNTIMES, build, io_absent
from .compare import compare
from .errors import AnalysisError, DataError, RunFailed
from .files import atomic_writer, write_json_atomic
from .http_csv import http_path, match_rows, read_http_csv, write_http_csv
from .load import read_bench_csv, read_json_object, runs_dir, validate_meta_json
from .metrics import SUFFIX as METRICS_SUFFIX
from .metrics import metrics_path, read_metrics_file
from .span import SUFFIX as SPAN_SUFFIX
from .span import check_against_rows as check_spans
from .span import read_span_file, span_path
from .options import add_stat_options
from .render import render_table, use_color

#: Process invocations per variant when --invocations is not given. The full value is what the
#: interval-coverage simulation of the statistics tests assumes (it imports this constant);
#: BENCHMARKS.md: never fewer than MIN_PUBLISHED_INVOCATIONS for a published run.
DEFAULT_INVOCATIONS: dict[str, int] = {"full": 10, "quick": 2}
MIN_PUBLISHED_INVOCATIONS = 5
#: Variants run when --runtimes is not given (names from runtime/bench/variants.json, and the io
#: programs of analysis/build.py, which run the io suite only).
DEFAULT_VARIANTS: dict[str, tuple[str, ...]] = {"full": ("ampere", "ampere.nospin", "tokio"),
                                                "quick": ("ampere", "tokio")}
#: Added to the full profile's default for `--suite all` (make report), and the default of
#: `--suite io`: Ampere's native API (ampere_bench's io rows), the std.Io implementations (absent
#: ones are recorded, not run) and Tokio.
IO_DEFAULT_VARIANTS: tuple[str, ...] = ("ampere", "ampere.io", "zig.threaded", "zio", "zio.epoll", "tokio",
                                         "tokio.joinset", "tokio.tracker")
#: The programs with io rows: the io programs, ampere_bench (the rows its native API has,
#: runtime/bench/io_native.zig) and tokio_bench.
IO_CAPABLE: tuple[str, ...] = (*IO_PROGRAMS, "ampere", "tokio")
#: Tokio variants whose settings change only the io twins (how they collect a group of tasks:
#: variants.json `io_group`): they run the io suite only, like the io programs.
IO_ONLY_VARIANTS: tuple[str, ...] = ("tokio.joinset", "tokio.tracker")
#: The suites a program runs, each in a process of its own under `--suite all` (issue 43: no
#: suite runs at the end of a process that ran the others; every side starts each suite fresh).
PROGRAM_SUITES: tuple[str, ...] = ("micro", "echo", "net", "io")
#: The io programs that record Ampere's runtime metrics (`--metrics`): the ampere.io build.
IO_METRICS_PROGRAMS: frozenset[str] = frozenset({"ampere.io"})
#: Worker counts of Tiers 3-4 when --workers is not given; the full profile adds the machine's
#: logical core count when it is larger than the last of these.
WORKER_SWEEP: dict[str, tuple[int, ...]] = {"full": (1, 2, 4), "quick": (1, 4)}
VARIANTS_FILE = Path("runtime/bench/variants.json")
CONSTANTS_FILE = Path("runtime/bench/constants.json")
STAGING = ".staging"
SUITE_CHOICES = (*schema.SUITES, "all")
PROGRESS_RE = re.compile(r"# (start|done)((?: [a-z_]+=\S*)*)\s*")
WARMUP_NOTE = ("one discarded invocation of every variant, in the run's order and with the run's arguments, "
               "before invocation 0: it brings the machine from cold to the state the measured invocations find")


# -- variants ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Variant:
    """A named runtime configuration of runtime/bench/variants.json."""
    name: str
    runtime: str
    settings: dict[str, Any]
    description: str = ""

    def record(self) -> dict[str, Any]:
        return {"runtime": self.runtime, "settings": dict(self.settings)}


def load_variants(root: Path) -> dict[str, Variant]:
    """Every variant of runtime/bench/variants.json, validated (DataError on a bad file)."""
    path = root / VARIANTS_FILE
    doc = read_json_object(path)
    entries = doc.get("variants")
    if not isinstance(entries, dict) or not entries:
        raise DataError(path, 'expected {"variants": {NAME: {"runtime": ..., "settings": {...}}, ...}}')
    out: dict[str, Variant] = {}
    for name, entry in entries.items():
        if not schema.RUNTIME_RE.fullmatch(name):
            raise DataError(path, f"variant name {name!r} does not match {schema.RUNTIME_RE.pattern}")
        if not isinstance(entry, dict):
            raise DataError(path, f"variant {name!r}: expected an object")
        runtime, settings = entry.get("runtime"), entry.get("settings", {})
        if runtime != schema.base_runtime(name) or runtime not in RUNTIMES:
            raise DataError(path, f'variant {name!r}: "runtime" must be "{schema.base_runtime(name)}" '
                            f"(the part before the dot, one of {', '.join(RUNTIMES)}), got {runtime!r}")
        if not isinstance(settings, dict):
            raise DataError(path, f'variant {name!r}: "settings" must be an object')
        out[name] = Variant(name, runtime, dict(settings), str(entry.get("description", "")))
    return out


# -- options ----------------------------------------------------------------------------------

@dataclass
class BenchOptions:
    """What to run. None fields take the profile's default (see the resolved properties)."""
    suite: str = "all"
    quick: bool = False
    invocations: int | None = None
    filters: list[str] = field(default_factory=list)
    workers: tuple[int, ...] | None = None
    sets: list[str] = field(default_factory=list)
    timeout_s: float = 600.0
    data_dir: str | None = None
    runtimes: tuple[str, ...] | None = None
    binaries: dict[str, Path] = field(default_factory=dict)
    variant_binaries: dict[str, Path] = field(default_factory=dict)
    build: bool = False
    warmup: bool = True
    root: Path = REPO_ROOT
    command_line: list[str] = field(default_factory=list)

    @property
    def profile(self) -> str:
        return "quick" if self.quick else "full"

    @property
    def invocation_count(self) -> int:
        return self.invocations if self.invocations is not None else DEFAULT_INVOCATIONS[self.profile]

    @property
    def variant_names(self) -> tuple[str, ...]:
        if self.runtimes is not None:
            return self.runtimes
        if self.suite == "io":
            return IO_DEFAULT_VARIANTS
        if self.suite == "http":
            return httpbench.HTTP_DEFAULT_VARIANTS
        if self.suite == "all" and self.profile == "full":
            return tuple(dict.fromkeys(DEFAULT_VARIANTS["full"] + IO_DEFAULT_VARIANTS))
        return DEFAULT_VARIANTS[self.profile]

    @property
    def worker_counts(self) -> tuple[int, ...]:
        return self.workers if self.workers is not None else default_workers(self.profile, os.cpu_count() or 1)

    @property
    def base_runtimes(self) -> tuple[str, ...]:
        """The programs the variants run on: their base runtime, or the io program itself."""
        return tuple(dict.fromkeys(program_of(v) for v in self.variant_names))

    def binary(self, base: str) -> Path:
        return Path(self.binaries.get(base) or self.root / BINARIES[base])

    def binary_for(self, variant: str) -> Path:
        """The program that runs `variant`: its own (`--binary VARIANT=PATH`, an A/B of two
        builds) or its base runtime's."""
        own = self.variant_binaries.get(variant)
        return Path(own) if own else self.binary(program_of(variant))

    def distinct_binaries(self) -> dict[str, Path]:
        """Every program this run uses, by the name it is recorded under: the base runtimes'
        (and the io programs'), and the variants' own."""
        out = {base: self.binary(base) for base in self.base_runtimes
               if any(v not in self.variant_binaries and program_of(v) == base for v in self.variant_names)}
        out.update({v: Path(p) for v, p in self.variant_binaries.items() if v in self.variant_names})
        return out

    def suite_for(self, variant: str) -> str:
        """`--suite` of a variant's program: the io programs (and the io-only Tokio variants) run
        only the io suite."""
        return "io" if variant in IO_PROGRAMS or variant in IO_ONLY_VARIANTS else self.suite

    @property
    def splits_suites(self) -> bool:
        """Whether each suite runs as a process of its own (`--suite all`)."""
        return self.suite == "all"

    @property
    def runs_programs(self) -> bool:
        """Whether the benchmark programs run (every suite but http, which only serves)."""
        return self.suite != "http"

    @property
    def runs_http(self) -> bool:
        """Whether the http suite runs: `--suite http`, and the full profile's `--suite all`."""
        return self.suite == "http" or (self.suite == "all" and self.profile == "full")

    def http_runtimes(self, variants: tuple[str, ...]) -> tuple[str, ...]:
        """The variants with an http server (the std.Io implementations and tokio)."""
        return tuple(v for v in variants if v in httpbench.HTTP_SERVERS)

    @property
    def program_sets(self) -> list[str]:
        """The --set overrides the programs get (the http_* keys are the orchestrator's)."""
        return [item for item in self.sets if not item.startswith("http_")]


def program_of(variant: str) -> str:
    """The program a variant runs on: an io program (`zig.threaded`, `zio`, `ampere.io`) is its
    own; any other variant runs on its base runtime's program (`ampere.nospin` -> `ampere`)."""
    return variant if variant in IO_PROGRAMS else schema.base_runtime(variant)


def io_variants() -> dict[str, "Variant"]:
    """The io programs as variants of their own (no settings; not in variants.json)."""
    return {name: Variant(name, name, {}, f"the io program on {name}") for name in IO_PROGRAMS}


def default_workers(profile: str, logical_cores: int) -> tuple[int, ...]:
    """The profile's sweep; the full profile adds the logical core count when it is larger."""
    sweep = WORKER_SWEEP[profile]
    if profile == "full" and logical_cores > sweep[-1]:
        return (*sweep, logical_cores)
    return sweep


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("bench", parents=[common], help="run the benchmark programs and record a run folder",
                       description="Run the runtime variants' benchmark programs alternately under a watchdog, "
                                   "after a discarded warm-up invocation of each, and record data/runs/<run_id>/.")
    p.add_argument("--suite", choices=SUITE_CHOICES, default="all")
    p.add_argument("--quick", action="store_true", help="quick profile of constants.json (tests, smoke runs)")
    p.add_argument("--invocations", type=int, default=None,
                   help=f"measured invocations per variant (default: full {DEFAULT_INVOCATIONS['full']}, "
                        f"quick {DEFAULT_INVOCATIONS['quick']})")
    p.add_argument("--filter", action="append", default=[], metavar="SUBSTR",
                   help="only benchmarks whose name contains SUBSTR (repeatable)")
    p.add_argument("--workers", default=None, metavar="N[,N...]",
                   help="worker counts of Tiers 3-4 (default: full 1,2,4 and the logical core count if larger; "
                        "quick 1,4)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override one constant")
    p.add_argument("--timeout", type=float, default=600.0, help="watchdog seconds per invocation (default 600)")
    p.add_argument("--runtimes", default=None, metavar="VARIANT[,VARIANT...]",
                   help="variants of runtime/bench/variants.json (default: full "
                        f"{','.join(DEFAULT_VARIANTS['full'])}; quick {','.join(DEFAULT_VARIANTS['quick'])})")
    p.add_argument("--no-warmup", action="store_true", help="skip the discarded warm-up invocations")
    p.add_argument("--ampere-bin", default=None, help=f"default {BINARIES['ampere']}")
    p.add_argument("--tokio-bin", default=None, help=f"default {BINARIES['tokio']}")
    p.add_argument("--binary", action="append", default=[], metavar="VARIANT=PATH",
                   help="run VARIANT from the program at PATH instead of its runtime's (repeatable; "
                        "an A/B of two builds: --runtimes ampere,ampere.ab --binary ampere.ab=OLD)")
    p.add_argument("--build", action="store_true", help="build the programs first (python -m analysis build)")
    p.add_argument("--compare", action="store_true", help="print the compare table of the new run")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    add_stat_options(p)
    p.set_defaults(func=cmd_bench)


def parse_workers(text: str) -> tuple[int, ...]:
    items = text.split(",")
    if not all(re.fullmatch(r"[0-9]+", i) and int(i) >= 1 for i in items):
        raise AnalysisError(f"--workers {text!r}: expected comma-separated positive integers, e.g. 1,2,4")
    counts = tuple(int(i) for i in items)
    if len(set(counts)) != len(counts):
        raise AnalysisError(f"--workers {text!r}: a worker count appears twice")
    return counts


def parse_runtimes(text: str, known: dict[str, Variant]) -> tuple[str, ...]:
    names = tuple(r.strip() for r in text.split(",") if r.strip())
    unknown = [r for r in names if r not in known]
    if not names or unknown or len(set(names)) != len(names):
        what = f"unknown variant {unknown[0]!r}" if unknown else "expected distinct names"
        raise AnalysisError(f"--runtimes {text!r}: {what}; variants of {VARIANTS_FILE}: {', '.join(known)}")
    return names


def parse_variant_binaries(items: list[str], known: dict[str, Variant]) -> dict[str, Path]:
    """`--binary VARIANT=PATH` options: each a known variant, once, with an executable PATH."""
    out: dict[str, Path] = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise AnalysisError(f"--binary {item!r}: expected VARIANT=PATH")
        if name not in known:
            raise AnalysisError(f"--binary {item!r}: unknown variant {name!r}; variants of {VARIANTS_FILE}: "
                                f"{', '.join(known)}")
        if name in out:
            raise AnalysisError(f"--binary {item!r}: variant {name!r} given twice")
        if not os.access(path, os.X_OK) or not Path(path).is_file():
            raise AnalysisError(f"--binary {item!r}: {path} is not an executable file")
        out[name] = Path(path)
    return out


def options_from_args(args: argparse.Namespace) -> BenchOptions:
    variants = {**load_variants(REPO_ROOT), **io_variants()}
    runtimes = parse_runtimes(args.runtimes, variants) if args.runtimes is not None else None
    if args.invocations is not None and args.invocations < 1:
        raise AnalysisError(f"--invocations must be >= 1, got {args.invocations}")
    if args.timeout <= 0:
        raise AnalysisError(f"--timeout must be > 0, got {args.timeout}")
    given = {"ampere": args.ampere_bin, "tokio": args.tokio_bin}
    options = BenchOptions(suite=args.suite, quick=args.quick, invocations=args.invocations,
                           filters=list(args.filter), sets=list(args.set), timeout_s=args.timeout,
                           data_dir=args.data_dir, runtimes=runtimes,
                           workers=parse_workers(args.workers) if args.workers is not None else None,
                           binaries={rt: Path(p) for rt, p in given.items() if p}, build=args.build,
                           variant_binaries=parse_variant_binaries(args.binary, variants),
                           warmup=not args.no_warmup,
                           command_line=[sys.executable, "-m", "analysis", *sys.argv[1:]])
    missing = [v for v in options.variant_names if v not in variants]
    if missing:
        raise AnalysisError(f"default variant {missing[0]!r} is not in {VARIANTS_FILE}; name the variants with --runtimes")
    unused = [v for v in options.variant_binaries if v not in options.variant_names]
    if unused:
        raise AnalysisError(f"--binary {unused[0]}=...: variant {unused[0]!r} is not among the runtimes of this run")
    return options


def cmd_bench(args: argparse.Namespace) -> int:
    options = options_from_args(args)
    run_dir = run_bench(options)
    if args.compare:
        result = compare(run_dir, tie_band=args.tie_band, confidence=args.confidence)
        sys.stdout.write("\n" + render_table(result, color=use_color(args.color)))
    return 0


# -- constants --------------------------------------------------------------------------------

def load_profile(root: Path, profile: str) -> dict[str, Any]:
    path = root / CONSTANTS_FILE
    doc = read_json_object(path)
    profiles = doc.get("profiles")
    if not isinstance(profiles, dict) or not isinstance(profiles.get(profile), dict):
        raise DataError(path, f'no profile "{profile}" under "profiles"')
    http = doc.get("http_profiles", {}).get(profile, {})
    if not isinstance(http, dict) or not all(k.startswith("http_") for k in http):
        raise DataError(path, f'"http_profiles": "{profile}" must be an object of http_* keys')
    return {**profiles[profile], **http}


def _parse_value(text: str, like: Any) -> Any:
    if isinstance(like, list):
        items = text.split(",")
        if not all(re.fullmatch(r"[0-9]+", i) for i in items):
            raise ValueError("expected comma-separated non-negative integers")
        return [int(i) for i in items]
    if not re.fullmatch(r"[0-9]+", text):
        raise ValueError("expected a non-negative integer")
    return int(text)


def effective_constants(profile: dict[str, Any], sets: list[str]) -> tuple[dict, dict]:
    """(effective constants, overrides) after --set KEY=VALUE..."""
    overrides: dict[str, Any] = {}
    for item in sets:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise AnalysisError(f"--set {item!r}: expected KEY=VALUE")
        if key not in profile or key.startswith("_"):
            raise AnalysisError(f"--set {item!r}: unknown constant {key!r}")
        try:
            overrides[key] = _parse_value(value, profile[key])
        except ValueError as exc:
            raise AnalysisError(f"--set {item!r}: {exc}") from None
    return {**profile, **overrides}, overrides


# -- files ------------------------------------------------------------------------------------

def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def short_hostname() -> str:
    name = socket.gethostname().split(".")[0]
    return re.sub(r"[^A-Za-z0-9_-]", "-", name) or "host"


def create_run_dir(data_dir: str | None, started: datetime) -> tuple[str, Path]:
    run_id = f"{started.strftime('%Y%m%dT%H%M%SZ')}-{short_hostname()}"
    root = runs_dir(data_dir)
    root.mkdir(parents=True, exist_ok=True)
    folder = root / run_id
    try:
        folder.mkdir()
    except FileExistsError:
        raise RunFailed(f"run folder {folder} already exists; it is never overwritten (wait a second and retry)") from None
    return run_id, folder


def git_state(root: Path) -> dict[str, Any] | None:
    """{'commit', 'dirty'} of the repository (tracked files only), None without git or a repo."""
    git = shutil.which("git")
    if git is None:
        return None
    try:
        commit = subprocess.run([git, "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30)
        status = subprocess.run([git, "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    if commit.returncode != 0 or status.returncode != 0:
        return None
    return {"commit": commit.stdout.strip(), "dirty": bool(status.stdout.strip())}


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as data:
        for block in iter(lambda: data.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def merge_lines(parts: list[Path], target: Path) -> None:
    """Concatenate line files (JSON lines) in order into target, atomically."""
    with atomic_writer(target, binary=True) as out:
        for part in parts:
            data = part.read_bytes()
            if data and not data.endswith(b"\n"):
                raise DataError(part, "truncated last line (no line end)", data.count(b"\n") + 1)
            out.write(data)


def supports_metrics(binary: Path) -> bool:
    """Whether a bench program takes `--metrics PATH`: its `--help` lists the option (an old
    ampere_bench and tokio_bench do not; they then run without it)."""
    try:
        done = subprocess.run([str(binary), "--help"], capture_output=True, text=True, errors="replace",
                              timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and "--metrics" in done.stdout + done.stderr


def merge_csvs(parts: list[Path], target: Path) -> None:
    """Concatenate invocation CSVs (one header) into target, atomically."""
    header: str | None = None
    with atomic_writer(target) as out:
        for part in parts:
            lines = part.read_text(encoding="utf-8").splitlines(keepends=True)
            if header is None:
                header = lines[0]
                out.write(header)
            elif lines[0] != header:
                raise DataError(part, "header differs from the first invocation's", 1, "header")
            out.writelines(lines[1:])


# -- one invocation under the watchdog --------------------------------------------------------

class StepFailed(Exception):
    """A failed step of a run; becomes failed.json."""
    def __init__(self, step: str, reason: str, runtime: str | None = None, invocation: int | None = None,
                 benchmark: str | None = None, signal: str | None = None) -> None:
        super().__init__(reason)
        self.step, self.reason = step, reason
        self.runtime, self.invocation, self.benchmark = runtime, invocation, benchmark
        self.signal = signal

    def record(self) -> dict[str, Any]:
        out = {"step": self.step, "runtime": self.runtime, "invocation": self.invocation,
               "benchmark": self.benchmark, "reason": self.reason}
        if self.signal:
            out["signal"] = self.signal
        return out


def parse_progress(line: str) -> tuple[str, dict[str, str]] | None:
    """`# start suite=micro benchmark=mutex param=` -> ('start', {...}); None for other lines."""
    match = PROGRESS_RE.fullmatch(line.rstrip("\n"))
    if not match:
        return None
    fields = dict(item.split("=", 1) for item in match.group(2).split())
    return match.group(1), fields


def bench_name(fields: dict[str, str]) -> str:
    name = f"{fields.get('suite', '?')}/{fields.get('benchmark', '?')}"
    if fields.get("param"):
        name += f" {fields['param']}"
    if fields.get("workers"):
        name += f" workers={fields['workers']}"
    return name


def _pump(stream: TextIO, lines: "queue.Queue[str | None]") -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


@dataclass
class Invocation:
    runtime: str  # the variant name
    index: int
    command: list[str]
    csv: Path
    meta: Path
    stdout_log: Path
    stderr_log: Path
    warmup: bool = False
    #: where the program writes its runtime metrics (--metrics), None when it is not asked to
    metrics: Path | None = None
    #: progress fields of the benchmark running now (last `# start` without its `# done`)
    running: dict[str, str] | None = None
    elapsed_s: float | None = None
    #: the suite this process runs (`--suite` of its command)
    suite: str = ""
    #: the machine's load over it (machine_load.between), None where /proc cannot be read
    load: dict[str, Any] | None = None
    #: the process's peak resident set (wait4's ru_maxrss), bytes
    peak_rss_bytes: int | None = None

    @property
    def tag(self) -> str:
        return f"[{self.runtime} warm-up]" if self.warmup else f"[{self.runtime} #{self.index}]"

    @property
    def where(self) -> str:
        return f"{self.runtime} warm-up" if self.warmup else f"{self.runtime} invocation {self.index}"


def run_invocation(inv: Invocation, timeout_s: float, out: TextIO | None = None, err: TextIO | None = None) -> None:
    """Run one program invocation; raise StepFailed on a non-zero exit or watchdog expiry.

    Progress goes to `out` (default: the current sys.stdout), the program's other stderr lines
    to `err` (default: the current sys.stderr), each line as soon as it arrives. Any exception
    on our side (Ctrl-C included) kills the program's process group before it propagates.
    """
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    print(f"{inv.tag} {' '.join(inv.command)}", file=out, flush=True)
    tail: deque[str] = deque(maxlen=20)
    before = machine_load.snapshot()
    started = time.monotonic()
    with open(inv.stdout_log, "w", encoding="utf-8") as stdout_log, \
            open(inv.stderr_log, "w", encoding="utf-8") as stderr_log:
        try:
            proc = child.spawn(inv.command, stdout=stdout_log, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                               text=True, bufsize=1, errors="replace")
        except OSError as exc:
            raise StepFailed("invocation", f"cannot start {inv.command[0]}: {exc.strerror}", inv.runtime, inv.index) from None
        lines: queue.Queue[str | None] = queue.Queue()
        reader = threading.Thread(target=_pump, args=(proc.stderr, lines), daemon=True)
        reader.start()
        deadline = started + timeout_s
        peak, started_output = 0, False
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError
                if started_output:  # after the program's first line: exec is done, the address space its own
                    peak = max(peak, vm_hwm_bytes(proc.pid) or 0)
                try:
                    line = lines.get(timeout=min(remaining, 0.25))
                except queue.Empty:
                    continue
                if line is None:
                    break
                started_output = True
                peak = max(peak, vm_hwm_bytes(proc.pid) or 0)
                stderr_log.write(line)
                stderr_log.flush()
                _show(inv, line, tail, out, err)
            code, usage = wait_with_rusage(proc, deadline)
        except (TimeoutError, subprocess.TimeoutExpired):
            child.kill_group(proc)
            running = inv.running
            what = f"while running {bench_name(running)}" if running else "between benchmarks"
            raise StepFailed("invocation", f"watchdog: no exit after {timeout_s:g} s {what}; process group killed",
                             inv.runtime, inv.index, bench_name(running) if running else None) from None
        except BaseException:
            child.kill_group(proc)
            raise
        finally:
            reader.join(timeout=5)
    inv.elapsed_s = round(time.monotonic() - started, 3)
    if usage is not None:
        inv.load = machine_load.between(before, machine_load.snapshot(), usage.ru_utime + usage.ru_stime)
    # wait4's ru_maxrss would carry the forked orchestrator's resident set across exec; VmHWM is
    # the program's own (its address space is new at exec), read at every stderr line and every
    # 0.25 s from its first line on (a peak in the last moments before exit may be missed)
    inv.peak_rss_bytes = peak or None
    if code != 0:
        errors = [t for t in tail if t.startswith("error:")]
        detail = (errors[-1] if errors else (tail[-1] if tail else "no message")).strip()
        how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        raise StepFailed("invocation", f"{how}: {detail}", inv.runtime, inv.index,
                         bench_name(inv.running) if inv.running else None)


def vm_hwm_bytes(pid: int) -> int | None:
    """A live process's peak resident set (/proc/<pid>/status VmHWM), None when unreadable."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def wait_with_rusage(proc: subprocess.Popen, deadline: float) -> tuple[int, Any]:
    """Reap the program with wait4 (its own CPU time and peak resident set, which Popen.wait
    discards), polling until `deadline` (TimeoutError after it). Returns (exit code as Popen
    gives it: negative for a signal, the rusage)."""
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, usage
        if time.monotonic() >= deadline:
            raise TimeoutError
        time.sleep(0.005)


def _show(inv: Invocation, line: str, tail: deque[str], out: TextIO, err: TextIO) -> None:
    """One stderr line of the program: progress to `out`, anything else to `err`."""
    progress = parse_progress(line)
    if progress is None:
        tail.append(line.rstrip("\n"))
        print(f"{inv.tag} {line.rstrip()}", file=err, flush=True)
        return
    kind, fields = progress
    if kind == "start":
        inv.running = fields
        print(f"{inv.tag} {bench_name(fields)} ...", file=out, flush=True)
    else:
        inv.running = None
        print(f"{inv.tag} {bench_name(fields)} done: {_fmt_done(fields)}", file=out, flush=True)


def _fmt_done(fields: dict[str, str]) -> str:
    value = fields.get("median_ns_per_op")
    try:
        return f"{float(value):.4g} ns/op (median)" if value is not None else "ok"
    except ValueError:
        return value or "ok"


# -- the run ----------------------------------------------------------------------------------

def check_outputs(inv: Invocation, workers: tuple[int, ...]) -> None:
    """The invocation's CSV and meta exist and validate, are schema 2, and hold its rows."""
    for path, kind in ((inv.csv, "CSV"), (inv.meta, "meta JSON")):
        if not path.is_file():
            raise StepFailed("invocation", f"program exited 0 but wrote no {kind} ({path.name})", inv.runtime, inv.index)
    try:
        rows = read_bench_csv(inv.csv, inv.runtime)
        validate_meta_json(inv.meta, read_json_object(inv.meta), inv.runtime)
        _check_metrics(inv)
    except DataError as exc:
        raise StepFailed("validate", str(exc), inv.runtime, inv.index) from None
    if rows.attrs["schema_version"] != schema.CSV_SCHEMA_VERSION:
        raise StepFailed("validate", f"{inv.csv.name}: schema-1 header (no cpu_ns, workers): the program predates "
                         "data contract v2; rebuild it (python -m analysis build)", inv.runtime, inv.index)
    wrong = rows[rows["invocation"] != inv.index]
    if not wrong.empty:
        raise StepFailed("validate", f"{inv.csv.name}: invocation column is {int(wrong['invocation'].iloc[0])}, "
                         f"expected {inv.index}", inv.runtime, inv.index)
    if rows.empty:
        raise StepFailed("validate", f"{inv.csv.name}: no measured rows (did --filter match nothing?)",
                         inv.runtime, inv.index)
    _check_sweep(inv, rows, workers)


def _check_metrics(inv: Invocation) -> None:
    """The invocation's metrics file, when it wrote one, validates and is of this invocation."""
    if inv.metrics is None or not inv.metrics.is_file():
        return
    counts = read_metrics_file(inv.metrics, inv.runtime)
    wrong = counts[counts["invocation"] != inv.index]
    if not wrong.empty:
        raise DataError(inv.metrics, f"invocation {int(wrong['invocation'].iloc[0])}, expected {inv.index}", None,
                        "invocation")


def _check_sweep(inv: Invocation, rows: Any, workers: tuple[int, ...]) -> None:
    """Every Tier 3-4 and io benchmark ran at every requested worker count, and at no other."""
    swept = rows[((rows["suite"] == "micro") & (rows["tier"] >= min(schema.OVERSUBSCRIBED_TIERS)))
                 | (rows["suite"] == "io")]
    for (name, param), group in swept.groupby(["benchmark", "param"], sort=False):
        got = sorted(int(w) for w in group["workers"].unique())
        if got != sorted(workers):
            raise StepFailed("validate", f"{inv.csv.name}: {schema.bench_label(name, param)} ran with workers "
                             f"{got}, expected {sorted(workers)} (--workers)", inv.runtime, inv.index)


def bench_command(options: BenchOptions, variant: str, index: int, csv: Path, meta: Path,
                  metrics: Path | None = None, suite: str | None = None) -> list[str]:
    cmd = [str(options.binary_for(variant)), "--variant", variant, "--suite", suite or options.suite_for(variant)]
    if options.quick:
        cmd.append("--quick")
    for item in options.filters:
        cmd += ["--filter", item]
    cmd += ["--workers", ",".join(map(str, options.worker_counts))]
    for item in options.program_sets:
        cmd += ["--set", item]
    cmd += ["--invocation", str(index), "--csv", str(csv), "--meta", str(meta)]
    return cmd + (["--metrics", str(metrics)] if metrics is not None else [])


def _invocation(options: BenchOptions, folder: Path, variant: str, index: int, warmup: bool,
                metrics: bool = False, suite: str | None = None) -> Invocation:
    staging, logs = folder / STAGING, folder / "logs"
    suite = suite or options.suite_for(variant)
    stem = f"{variant}.warmup" if warmup else f"{variant}.{index}"
    if options.splits_suites:
        stem += f".{suite}"
    csv, meta = staging / f"{stem}.csv", staging / f"{stem}.meta.json"
    counts = staging / f"{stem}{METRICS_SUFFIX}" if metrics and not warmup else None
    return Invocation(variant, index, bench_command(options, variant, index, csv, meta, counts, suite), csv, meta,
                      logs / f"{stem}.stdout.txt", logs / f"{stem}.stderr.txt", warmup=warmup, metrics=counts,
                      suite=suite)


def program_suites(options: BenchOptions, variant: str) -> tuple[str, ...]:
    """The suites a variant's invocation runs, one process each: its `--suite` when it is one
    suite; under `--suite all` the suites its program lists (`--list`, with the run's filters),
    in PROGRAM_SUITES order (all of them when the program cannot list)."""
    suite = options.suite_for(variant)
    if suite != "all":
        return (suite,)
    cmd = [str(options.binary_for(variant)), "--variant", variant, "--suite", "all", "--list"]
    cmd += ["--quick"] if options.quick else []
    for item in options.filters:
        cmd += ["--filter", item]
    cmd += ["--workers", ",".join(map(str, options.worker_counts))]
    for item in options.program_sets:
        cmd += ["--set", item]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=60,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return PROGRAM_SUITES
    if done.returncode != 0:
        return PROGRAM_SUITES
    listed = {line.split()[0] for line in done.stdout.splitlines() if line.split()}
    return tuple(s for s in PROGRAM_SUITES if s in listed) or PROGRAM_SUITES


def plan(options: BenchOptions, folder: Path, metrics_variants: tuple[str, ...] = (),
         suites: dict[str, tuple[str, ...]] | None = None) -> list[Invocation]:
    """The measured invocations: for K in 0..n-1, every variant once, the order rotated by K
    (round 0: a b c, round 1: b c a, round 2: c a b), so that no runtime always runs first or
    always after the same neighbour (schema 3); the variants in `metrics_variants` (their
    program takes --metrics) record runtime metrics. Under `--suite all` each suite is a process
    of its own (`suites`: variant -> its suites, program_suites): round K runs each suite in
    PROGRAM_SUITES order, every variant that has it once, rotated by K."""
    if not options.runs_programs:
        return []
    suites = suites or {v: (options.suite_for(v),) for v in options.variant_names}
    order = [s for s in PROGRAM_SUITES if any(s in mine for mine in suites.values())]
    order += [s for mine in suites.values() for s in mine if s not in order]
    out = []
    for k in range(options.invocation_count):
        for suite in order:
            names = tuple(v for v in options.variant_names if suite in suites.get(v, ()))
            out += [_invocation(options, folder, v, k, warmup=False, suite=suite,
                                metrics=v in metrics_variants and records_metrics(k, options.invocation_count))
                    for v in rotated(names, k)]
    return out


def records_metrics(index: int, count: int) -> bool:
    """Whether measured invocation `index` (of `count`) records runtime metrics: the odd ones
    (the only one when there is one). The metrics snapshots run between iterations, outside
    every sample but inside the whole-invocation span (analysis/span.py): about 5.6 µs of CPU per
    echo batch on the 2-vCPU VM, which Tokio's program does not spend. The even invocations keep
    the span free of them; the analysis takes the whole-invocation CPU from the invocations
    without metrics only (span_cpu.py)."""
    return index % 2 == 1 or count == 1


def rotated(names: tuple[str, ...], round_index: int) -> tuple[str, ...]:
    """`names` rotated left by `round_index` (the order of round K of the invocations)."""
    shift = round_index % len(names) if names else 0
    return names[shift:] + names[:shift]


def plan_warmup(options: BenchOptions, folder: Path, suites: dict[str, tuple[str, ...]] | None = None
                ) -> list[Invocation]:
    """The discarded warm-up: one invocation of every variant (each of its suites' processes),
    in order (none with --no-warmup)."""
    if not options.warmup or not options.runs_programs:
        return []
    suites = suites or {v: (options.suite_for(v),) for v in options.variant_names}
    return [_invocation(options, folder, v, 0, warmup=True, suite=s) for v in options.variant_names for s in suites[v]]


def finish(options: BenchOptions, folder: Path, invocations: list[Invocation],
           http: "httpbench.HttpResult | None" = None) -> list[str]:
    """Merge, validate and copy meta (and write the http rows); returns warnings for run.json."""
    warnings: list[str] = []
    for rt in options.variant_names:
        mine = [inv for inv in invocations if inv.runtime == rt]
        target = folder / f"{rt}.csv"
        http_rows = stage_http_rows(folder, rt, http)
        try:
            merge_csvs([inv.csv for inv in mine] + http_rows, target)
            rows = read_bench_csv(target, rt)
            if http_rows:
                write_http_latency(folder, rt, http, rows)
        except DataError as exc:
            raise StepFailed("merge", str(exc), rt) from None
        metas = [read_json_object(inv.meta) for inv in mine]
        if not metas and http is not None and rt in http.metas:
            metas = [read_json_object(http.metas[rt])]
        for inv, meta in zip(mine[1:], metas[1:]):
            if meta != metas[0]:
                differ = sorted(k for k in set(meta) | set(metas[0]) if meta.get(k) != metas[0].get(k))
                warnings.append(f"{rt} meta differs in invocation {inv.index} from invocation 0: {', '.join(differ)}")
        write_json_atomic(folder / f"{rt}.meta.json", metas[0])
        warnings += _merge_metrics(folder, rt, mine)
        warnings += _merge_spans(folder, rt, mine, target)
    return warnings


def _merge_spans(folder: Path, variant: str, mine: list[Invocation], merged_csv: Path) -> list[str]:
    """`<variant>.span.csv` from the invocations' span files (analysis/span.py; written by the
    programs beside their CSV) in invocation order, validated against the merged CSV. None
    when no invocation wrote one; a warning, and none, when only some did (a partial span file
    would not cover the CSV)."""
    parts = [span_path(inv.csv.parent, inv.csv.name.removesuffix(".csv")) for inv in mine]
    present = [p for p in parts if p.is_file()]
    if not present:
        return []
    if len(present) < len(parts):
        without = [str(inv.index) for inv, p in zip(mine, parts) if not p.is_file()]
        return [f"{variant}: invocations {', '.join(without)} wrote no span file; the run has no "
                f"{variant}{SPAN_SUFFIX} (whole-invocation CPU not recorded)"]
    target = span_path(folder, variant)
    try:
        merge_csvs(present, target)
        check_spans(target, read_span_file(target, variant), read_bench_csv(merged_csv, variant))
    except DataError as exc:
        raise StepFailed("merge", str(exc), variant) from None
    return []


def stage_http_rows(folder: Path, runtime: str, http: "httpbench.HttpResult | None") -> list[Path]:
    """The runtime's http rows as one staging CSV (schema 2 header), [] without any."""
    rows = http.rows.get(runtime, []) if http is not None else []
    if not rows:
        return []
    part = folder / STAGING / f"{runtime}.http-rows.csv"
    with atomic_writer(part) as out:
        out.write(",".join(schema.CSV_COLUMNS) + "\n")
        out.writelines(",".join(str(r[c]) for c in schema.CSV_COLUMNS) + "\n" for r in rows)
    return [part]


def write_http_latency(folder: Path, runtime: str, http: "httpbench.HttpResult", rows: Any) -> None:
    """`<runtime>.http.csv` (atomically), validated against the merged CSV's http rows."""
    target = http_path(folder, runtime)
    with atomic_writer(target) as out:
        out.write(write_http_csv(target, http.latency[runtime]))
    match_rows(target, read_http_csv(target, runtime), rows)


def _merge_metrics(folder: Path, variant: str, mine: list[Invocation]) -> list[str]:
    """`<variant>.metrics.jsonl` from the invocations' files in invocation order (none when no
    invocation wrote one); a warning when only some did."""
    asked = [inv for inv in mine if inv.metrics is not None]
    parts = [inv.metrics for inv in asked if inv.metrics.is_file()]
    if not parts:
        return []
    target = metrics_path(folder, variant)
    try:
        merge_lines(parts, target)
        read_metrics_file(target, variant)
    except DataError as exc:
        raise StepFailed("merge", str(exc), variant) from None
    if len(parts) == len(asked):
        return []
    without = [str(inv.index) for inv in asked if not inv.metrics.is_file()]
    return [f"{variant}: invocations {', '.join(without)} wrote no metrics file; {target.name} holds the others"]


def metrics_files(folder: Path, variants: tuple[str, ...]) -> dict[str, str | None]:
    """run.json `metrics_files`: variant -> its metrics file's name, or None without one."""
    return {v: metrics_path(folder, v).name if metrics_path(folder, v).is_file() else None for v in variants}


def constants_warnings(options: BenchOptions) -> list[str]:
    path = options.root / CONSTANTS_FILE
    out = []
    for name, binary in options.distinct_binaries().items():
        if binary.is_file() and path.is_file() and path.stat().st_mtime > binary.stat().st_mtime:
            out.append(f"{path.name} is newer than {binary}: the {name} binary may embed older constants "
                       "(rebuild with --build)")
    if options.profile == "full" and options.invocation_count < MIN_PUBLISHED_INVOCATIONS:
        out.append(f"{options.invocation_count} invocations per variant: fewer than {MIN_PUBLISHED_INVOCATIONS}, "
                   "too few for a published run (BENCHMARKS.md); the intervals may cover less than they claim")
    return out


def suites_present(options: BenchOptions, invocations: list[Invocation], http_ran: bool = False) -> list[str]:
    """The suites asked for: the one named, or for `all` those the programs produced rows of."""
    if options.suite != "all":
        return [options.suite]
    seen: set[str] = {"http"} if http_ran else set()
    for inv in invocations:
        with open(inv.csv, encoding="utf-8") as handle:
            header = handle.readline().rstrip("\r\n").lstrip("\ufeff").split(",")
            column = header.index("suite")
            seen.update(line.split(",")[column] for line in handle)
    return [s for s in schema.SUITES if s in seen]


@dataclass
class _Run:
    """State of a run in progress, for failed.json."""
    run_id: str
    folder: Path
    started: datetime
    current: Invocation | None = None


def absent_sides(options: BenchOptions) -> dict[str, str]:
    """The io programs among the variants that cannot run, with the reason: ampere.io until
    AMPERE_IO_BUILT, another whose binary is missing (the reason the build recorded)."""
    recorded = io_absent(options.root)
    absent: dict[str, str] = {}
    for name in options.variant_names:
        if name not in IO_PROGRAMS:
            continue
        # --suite http runs the io programs' servers only; any other suite runs the io program
        binary = httpbench.http_binary(options.root, name) if not options.runs_programs else options.binary_for(name)
        if name == "ampere.io" and not AMPERE_IO_BUILT:
            absent[name] = AMPERE_IO_ABSENT
        elif not os.access(binary, os.X_OK):
            absent[name] = recorded.get(name) or f"no binary {binary} (python -m analysis build)"
    return absent


def check_suite(options: BenchOptions) -> None:
    """`--suite io` runs on the programs with io rows (IO_CAPABLE): the io programs, ampere_bench
    (every ampere variant: `ampere`, `ampere.nospin`, ...) and tokio_bench; the http suite on the
    runtimes with an http server."""
    if options.suite == "io":
        without = [v for v in options.variant_names if program_of(v) not in IO_CAPABLE]
        if without:
            raise AnalysisError(f"--suite io: {without[0]} has no io rows (the io suite runs on "
                                f"{', '.join(IO_DEFAULT_VARIANTS)} and their variants)")
    if options.suite == "http":
        serverless = [v for v in options.variant_names if v not in httpbench.HTTP_SERVERS]
        if serverless:
            raise AnalysisError(f"--suite http: {serverless[0]} has no http server (the http suite runs on "
                                f"{', '.join(httpbench.HTTP_SERVERS)})")


def run_bench(options: BenchOptions) -> Path:
    """Run everything; return the complete run folder or raise RunFailed (failed.json written)."""
    variants = {**load_variants(options.root), **io_variants()}
    unknown = [v for v in options.variant_names if v not in variants]
    if unknown:
        raise AnalysisError(f"unknown variant {unknown[0]!r}; variants of {VARIANTS_FILE}: {', '.join(variants)}")
    check_suite(options)
    profile = load_profile(options.root, options.profile)
    constants, overrides = effective_constants(profile, options.sets)
    if options.build:
        build(options.root, tuple(dict.fromkeys("io" if p in IO_PROGRAMS else p for p in options.base_runtimes)))
    absent = absent_sides(options)
    present = tuple(v for v in options.variant_names if v not in absent)
    if not present:
        raise AnalysisError(f"no runtime can run: {'; '.join(f'{k}: {v}' for k, v in absent.items())}")
    options = replace(options, runtimes=present)
    started = utc_now()
    run_id, folder = create_run_dir(options.data_dir, started)
    state = _Run(run_id, folder, started)
    print(f"run {run_id}: {folder}", flush=True)
    clock = time.monotonic()
    # the io programs share the command line's usage text; only the ampere.io build takes
    # --metrics (the other implementations have no event counts to give)
    metrics_variants = tuple(v for v in options.variant_names
                             if (v not in IO_PROGRAMS or v in IO_METRICS_PROGRAMS)
                             and supports_metrics(options.binary_for(v)))
    suites = {v: program_suites(options, v) for v in options.variant_names} if options.runs_programs else {}
    warmups, invocations = plan_warmup(options, folder, suites), plan(options, folder, metrics_variants, suites)
    with child.interrupts_raise():
        try:
            _execute(options, state, warmups, invocations)
            http, no_rows, http_warnings = _execute_http(options, state, constants)
            absent.update(no_rows)
            options = replace(options, runtimes=tuple(v for v in options.variant_names if v not in no_rows))
            warnings = finish(options, folder, invocations, http) + constants_warnings(options) + http_warnings
            suites = suites_present(options, invocations, http is not None and any(http.rows.values()))
            with child.signals_deferred():  # complete means complete: run.json is never half-done
                shutil.rmtree(folder / STAGING, ignore_errors=True)
                info = run_info(options, state, variants, constants, overrides, suites, warmups, invocations,
                                warnings, absent)
                if http is not None:
                    info["http"] = http.record
                info["elapsed_s"] = round(time.monotonic() - clock, 1)
                write_json_atomic(folder / "run.json", info)
        except StepFailed as failure:
            with child.signals_deferred():
                _record_failure(options, state, failure)
            raise RunFailed(_failure_line(state, failure)) from None
        except (child.Interrupted, KeyboardInterrupt) as exc:
            with child.signals_deferred():
                stop = exc if isinstance(exc, child.Interrupted) else child.Interrupted(2)
                failure = _interrupted(state, stop)
                _record_failure(options, state, failure)
            raise RunFailed(_failure_line(state, failure, interrupted=stop.name), exit_code=stop.exit_code) from None
    for message in warnings:
        print(f"warning: {message}", file=sys.stderr, flush=True)
    print(f"run complete: {folder} ({info['elapsed_s']:.0f} s)", flush=True)
    return folder


def _execute(options: BenchOptions, state: _Run, warmups: list[Invocation], invocations: list[Invocation]) -> None:
    missing = [f"{name}: {binary}" for name, binary in options.distinct_binaries().items()
               if options.runs_programs and not os.access(binary, os.X_OK)]
    if missing:
        raise StepFailed("check binaries", f"missing or not executable: {'; '.join(missing)} "
                         "(build them with --build or python -m analysis build)")
    (state.folder / STAGING).mkdir()
    (state.folder / "logs").mkdir()
    for inv in warmups:
        state.current = inv
        try:
            run_invocation(inv, options.timeout_s)
        except StepFailed as failure:
            failure.step = "warm-up"
            raise
        inv.csv.unlink(missing_ok=True)
        inv.meta.unlink(missing_ok=True)
    for inv in invocations:
        state.current = inv
        run_invocation(inv, options.timeout_s)
        check_outputs(inv, options.worker_counts)
    state.current = None


def _execute_http(options: BenchOptions, state: _Run,
                  constants: dict[str, Any]) -> tuple["httpbench.HttpResult | None", dict[str, str], list[str]]:
    """The http suite (analysis/httpbench.py) on the run's runtimes with a server: its result,
    the runtimes left without any row (absent, with the reason) and warnings."""
    runtimes = options.http_runtimes(options.variant_names) if options.runs_http else ()
    if not runtimes:
        return None, {}, []
    settings = httpbench.HttpSettings.of(constants)
    if settings.problems():
        raise StepFailed("http", f"http settings: {settings.problems()[0]}")
    tokio = options.binary_for("tokio")
    missing = [f"{rt}: {httpbench.http_binary(options.root, rt, tokio)}" for rt in runtimes
               if not os.access(httpbench.http_binary(options.root, rt, tokio), os.X_OK)]
    if missing:
        raise StepFailed("check binaries", f"http servers missing: {'; '.join(missing)} (python -m analysis build)")
    try:
        ctx = httpbench.context(options.root, state.folder, constants, options.timeout_s,
                                servers=httpbench.default_servers(options.root, tokio))
    except FileNotFoundError:
        if options.suite == "http":
            raise StepFailed("check wrk", "wrk is not installed (scripts/bootstrap.sh installs the Debian package "
                             "wrk)") from None
        return None, {}, ["wrk is not installed: the http suite did not run (scripts/bootstrap.sh installs it)"]
    state.current = None
    result = httpbench.run_http(ctx, runtimes, rotated)
    no_rows = {rt: "every http sample of it failed (run.json http.failed_samples)" for rt in runtimes
               if not result.rows[rt] and not options.runs_programs}
    if len(no_rows) == len(runtimes):
        raise StepFailed("http", f"every http sample failed; first: {ctx.failures[0]['reason'] if ctx.failures else '?'}")
    warnings = ([f"http: {len(ctx.failures)} failed samples or servers (run.json http.failed_samples); first: "
                 f"{ctx.failures[0]['runtime']}: {ctx.failures[0]['reason']}"] if ctx.failures else [])
    return result, no_rows, warnings


def _interrupted(state: _Run, stop: child.Interrupted) -> StepFailed:
    inv = state.current
    return StepFailed("interrupted", "interrupted", inv.runtime if inv else None,
                      inv.index if inv and not inv.warmup else None,
                      bench_name(inv.running) if inv and inv.running else None, signal=stop.name)


def _failure_line(state: _Run, failure: StepFailed, interrupted: str | None = None) -> str:
    inv = state.current
    parts = []
    if failure.runtime:
        parts.append(inv.where if inv is not None and inv.runtime == failure.runtime and failure.step != "merge"
                     else failure.runtime)
    if failure.benchmark:
        parts.append(f"benchmark {failure.benchmark}")
    where = f" ({', '.join(parts)})" if parts else ""
    if interrupted:
        return (f"run {state.run_id} interrupted by {interrupted}{where}; benchmark processes killed, run marked "
                f"failed — see {state.folder / 'failed.json'}")
    return (f"run {state.run_id} failed at step '{failure.step}'{where}: {failure.reason} — "
            f"see {state.folder / 'failed.json'}")


def run_info(options: BenchOptions, state: _Run, variants: dict[str, Variant], constants: dict[str, Any],
             overrides: dict[str, Any], suites: list[str], warmups: list[Invocation],
             invocations: list[Invocation], warnings: list[str], absent: dict[str, str] | None = None) -> dict[str, Any]:
    """The run.json document (data/README.md)."""
    return {
        "schema_version": schema.SCHEMA_VERSION, "run_id": state.run_id, "status": "complete",
        "suites": suites, "profile": options.profile,
        "constants": constants, "overrides": overrides, "constants_source": f"{CONSTANTS_FILE} + overrides",
        "filters": options.filters, "runtimes": runtime_entries(state.folder, options.variant_names, absent),
        "variants": {v: variants[v].record() for v in options.variant_names},
        "workers": list(options.worker_counts), "invocations": options.invocation_count,
        "metrics_files": metrics_files(state.folder, options.variant_names),
        "warmup": ({"what": WARMUP_NOTE, "discarded": True,
                    "invocations": [{"runtime": w.runtime, "elapsed_s": w.elapsed_s} for w in warmups]}
                   if warmups else None),
        "invocation_order": [{"runtime": inv.runtime, "invocation": inv.index, "suite": inv.suite,
                              "elapsed_s": inv.elapsed_s, "load": inv.load, "peak_rss_bytes": inv.peak_rss_bytes}
                             for inv in invocations],
        "invocation_processes": "one per suite" if options.splits_suites else "one",
        "command_line": options.command_line,
        "bench_commands": {inv.runtime: inv.command for inv in reversed(invocations) if inv.index == 0},
        "binaries": {name: {"path": str(binary), "sha256": sha256_of(binary)}
                     for name, binary in options.distinct_binaries().items()},
        "git": git_state(options.root), "hostname": socket.gethostname(), "timeout_s": options.timeout_s,
        "started_utc": iso(state.started), "ended_utc": iso(utc_now()), "warnings": warnings,
    }


#: meta.json fields that say what a runtime is (schema 3 `runtimes[].versions`).
VERSION_FIELDS = ("runtime_version", "compiler", "compiler_version", "tokio_version", "hyper_version", "zio_version",
                  "zio_commit", "build_mode")


def runtime_entries(folder: Path, variants: tuple[str, ...],
                    absent: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """run.json `runtimes` (schema 3): every present variant with the versions its meta.json
    records, then every absent one with its reason."""
    entries = []
    for name in variants:
        meta = read_json_object(folder / f"{name}.meta.json")
        entries.append({"name": name, "versions": {k: meta[k] for k in VERSION_FIELDS if meta.get(k) is not None}})
    for name, reason in (absent or {}).items():
        entries.append({"name": name, "versions": {}, "absent": reason})
    return entries


def _record_failure(options: BenchOptions, state: _Run, failure: StepFailed) -> None:
    """failed.json in place of run.json; staging and merged files removed, logs kept."""
    folder = state.folder
    shutil.rmtree(folder / STAGING, ignore_errors=True)
    for variant in options.variant_names:
        for name in (f"{variant}.csv", f"{variant}.meta.json", metrics_path(folder, variant).name,
                     span_path(folder, variant).name, http_path(folder, variant).name):
            (folder / name).unlink(missing_ok=True)
    record = {"run_id": state.run_id, "status": "failed", **failure.record(), "command_line": options.command_line,
              "started_utc": iso(state.started), "failed_utc": iso(utc_now())}
    if state.current is not None and state.current.warmup:
        record["warmup"] = True
    write_json_atomic(folder / "failed.json", record)
