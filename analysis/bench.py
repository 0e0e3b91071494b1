"""`python -m analysis bench`: the benchmark orchestrator (what `zig build compare` runs).

Steps
1. `--build` (optional): `.venv/bin/python -m ziglang build bench-build` and
   `cargo build --release --manifest-path rust_bench/Cargo.toml`, only for the selected
   runtimes. A failure stops here with one line naming the step (no run folder yet: a build
   is not part of a run).
2. Create `data/runs/<run_id>/` (`YYYYmmddTHHMMSSZ-<host>`, UTC); it is an error if it
   exists, and an existing folder is never written to.
3. Run the invocations alternately (ampere 0, tokio 0, ampere 1, tokio 1, ...). Each gets
   `--invocation K --csv <staging> --meta <staging>` plus the forwarded --suite, --quick,
   --filter, --workers and --set, in its own process group under a watchdog (`--timeout`
   seconds per invocation). stderr is read line by line as it comes: `# start` / `# done`
   lines become progress lines on our stdout, other lines are echoed to our stderr, and
   everything the program printed is kept in `logs/<runtime>.<K>.{stdout,stderr}.txt`. On
   expiry the whole process group is killed and the benchmark of the last `# start` line
   without its `# done` is named.
4. Validate every invocation's CSV (invocation column must be K) and meta with the loader,
   merge each runtime's CSVs into `<runtime>.csv` (temporary name + rename), validate the
   merged file, copy invocation 0's meta to `<runtime>.meta.json` (a different meta in a
   later invocation is recorded as a warning), remove the staging folder and write
   `run.json` last.
Any failure writes `failed.json` (step, runtime, invocation, benchmark, reason), removes the
staging folder, prints one `error:` line and exits 1; no run.json is written.

Constants recorded in run.json: `runtime/bench/constants.json`'s profile plus the --set /
--workers overrides, computed here (the programs embed the same file at build time; if the
file is newer than a binary, run.json gets a warning that the binary may embed older sizes).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

from .errors import AnalysisError, DataError, RunFailed
from .files import write_json_atomic

REPO_ROOT = Path(__file__).resolve().parent.parent
RUNTIMES = ("ampere", "tokio")
DEFAULT_BINARIES = {
    "ampere": Path("zig-out/bin/ampere_bench"),
    "tokio": Path("rust_bench/target/release/tokio_bench"),
}
STAGING = ".staging"
PROGRESS_RE = re.compile(r"# (start|done)((?: [a-z_]+=\S*)*)\s*")


# -- options ----------------------------------------------------------------------------------

@dataclass
class BenchOptions:
    suite: str = "all"
    quick: bool = False
    invocations: int = 3
    filters: list[str] = field(default_factory=list)
    workers: int | None = None
    sets: list[str] = field(default_factory=list)
    timeout_s: float = 600.0
    data_dir: str | None = None
    runtimes: tuple[str, ...] = RUNTIMES
    binaries: dict[str, Path] = field(default_factory=dict)
    build: bool = False
    root: Path = REPO_ROOT
    command_line: list[str] = field(default_factory=list)

    @property
    def profile(self) -> str:
        return "quick" if self.quick else "full"

    @property
    def suites(self) -> list[str]:
        return ["micro", "echo"] if self.suite == "all" else [self.suite]


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    from .cli import add_stat_options

    p = sub.add_parser("bench", parents=[common], help="run the benchmark programs and record a run folder",
                       description="Run ampere_bench and tokio_bench alternately under a watchdog and "
                                   "record data/runs/<run_id>/.")
    p.add_argument("--suite", choices=("micro", "echo", "all"), default="all")
    p.add_argument("--quick", action="store_true", help="quick profile of constants.json (tests, smoke runs)")
    p.add_argument("--invocations", type=int, default=3, help="process invocations per runtime (default 3)")
    p.add_argument("--filter", action="append", default=[], metavar="SUBSTR",
                   help="only benchmarks whose name contains SUBSTR (repeatable)")
    p.add_argument("--workers", type=int, default=None, help="shorthand for --set num_workers=N")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override one constant")
    p.add_argument("--timeout", type=float, default=600.0, help="watchdog seconds per invocation (default 600)")
    p.add_argument("--runtimes", default=",".join(RUNTIMES), help="comma-separated (default ampere,tokio)")
    p.add_argument("--ampere-bin", default=None, help=f"default {DEFAULT_BINARIES['ampere']}")
    p.add_argument("--tokio-bin", default=None, help=f"default {DEFAULT_BINARIES['tokio']}")
    p.add_argument("--build", action="store_true", help="build both programs first")
    p.add_argument("--compare", action="store_true", help="print the compare table of the new run")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    add_stat_options(p)
    p.set_defaults(func=cmd_bench)


def options_from_args(args: argparse.Namespace) -> BenchOptions:
    runtimes = tuple(r.strip() for r in args.runtimes.split(",") if r.strip())
    unknown = [r for r in runtimes if r not in RUNTIMES]
    if not runtimes or unknown or len(set(runtimes)) != len(runtimes):
        raise AnalysisError(f"--runtimes {args.runtimes!r}: expected a comma-separated subset of {', '.join(RUNTIMES)}")
    if args.invocations < 1:
        raise AnalysisError(f"--invocations must be >= 1, got {args.invocations}")
    if args.timeout <= 0:
        raise AnalysisError(f"--timeout must be > 0, got {args.timeout}")
    if args.workers is not None and args.workers < 1:
        raise AnalysisError(f"--workers must be >= 1, got {args.workers}")
    given = {"ampere": args.ampere_bin, "tokio": args.tokio_bin}
    binaries = {rt: Path(given[rt]) if given[rt] else REPO_ROOT / DEFAULT_BINARIES[rt] for rt in runtimes}
    return BenchOptions(suite=args.suite, quick=args.quick, invocations=args.invocations, filters=list(args.filter),
                        workers=args.workers, sets=list(args.set), timeout_s=args.timeout, data_dir=args.data_dir,
                        runtimes=runtimes, binaries=binaries, build=args.build,
                        command_line=[sys.executable, "-m", "analysis", *sys.argv[1:]])


def cmd_bench(args: argparse.Namespace) -> int:
    options = options_from_args(args)
    run_dir = run_bench(options)
    if args.compare:
        from .compare import compare
        from .render import render_table, use_color

        result = compare(run_dir, tie_band=args.tie_band, confidence=args.confidence, n_resamples=args.resamples)
        sys.stdout.write("\n" + render_table(result, color=use_color(args.color)))
    return 0


# -- constants --------------------------------------------------------------------------------

def load_profile(root: Path, profile: str) -> dict[str, Any]:
    path = root / "runtime" / "bench" / "constants.json"
    from .load import read_json_object

    doc = read_json_object(path)
    profiles = doc.get("profiles")
    if not isinstance(profiles, dict) or not isinstance(profiles.get(profile), dict):
        raise DataError(path, f'no profile "{profile}" under "profiles"')
    return dict(profiles[profile])


def _parse_value(text: str, like: Any) -> Any:
    if isinstance(like, list):
        items = text.split(",")
        if not all(re.fullmatch(r"[0-9]+", i) for i in items):
            raise ValueError("expected comma-separated non-negative integers")
        return [int(i) for i in items]
    if not re.fullmatch(r"[0-9]+", text):
        raise ValueError("expected a non-negative integer")
    return int(text)


def effective_constants(profile: dict[str, Any], sets: list[str], workers: int | None) -> tuple[dict, dict]:
    """(effective constants, overrides) after --set KEY=VALUE... and --workers N."""
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
    if workers is not None:
        overrides["num_workers"] = workers
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
    from .load import runs_dir

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


def merge_csvs(parts: list[Path], target: Path) -> None:
    """Concatenate invocation CSVs (one header) into target via a temporary name + rename."""
    header: str | None = None
    tmp = target.with_name(f".{target.name}.tmp")
    with open(tmp, "w", encoding="utf-8", newline="") as out:
        for part in parts:
            lines = part.read_text(encoding="utf-8").splitlines(keepends=True)
            if header is None:
                header = lines[0]
                out.write(header)
            elif lines[0] != header:
                raise DataError(part, "header differs from the first invocation's", 1, "header")
            out.writelines(lines[1:])
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, target)


# -- build ------------------------------------------------------------------------------------

def build_steps(root: Path, runtimes: tuple[str, ...]) -> list[tuple[str, list[str]]]:
    python = root / ".venv" / "bin" / "python"
    steps = []
    if "ampere" in runtimes:
        steps.append(("zig build bench-build", [str(python if python.exists() else sys.executable),
                                                "-m", "ziglang", "build", "bench-build"]))
    if "tokio" in runtimes:
        steps.append(("cargo build --release", ["cargo", "build", "--release", "--manifest-path",
                                                str(root / "rust_bench" / "Cargo.toml")]))
    return steps


def _stderr_fd() -> int | None:
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # replaced stderr (e.g. captured in tests)
        return None


def build(root: Path, runtimes: tuple[str, ...]) -> None:
    for name, cmd in build_steps(root, runtimes):
        print(f"building: {name}", flush=True)
        try:
            # compiler output goes to our stderr (fd 2), keeping stdout for progress and tables
            done = subprocess.run(cmd, cwd=root, stdout=_stderr_fd(), stderr=_stderr_fd())
        except OSError as exc:
            raise RunFailed(f"build step '{name}' failed: {exc.strerror or exc}: {cmd[0]}") from None
        if done.returncode != 0:
            raise RunFailed(f"build step '{name}' failed (exit code {done.returncode})")


# -- one invocation under the watchdog --------------------------------------------------------

class StepFailed(Exception):
    """A failed step of a run; becomes failed.json."""

    def __init__(self, step: str, reason: str, runtime: str | None = None, invocation: int | None = None,
                 benchmark: str | None = None) -> None:
        super().__init__(reason)
        self.step, self.reason = step, reason
        self.runtime, self.invocation, self.benchmark = runtime, invocation, benchmark

    def record(self) -> dict[str, Any]:
        return {"step": self.step, "runtime": self.runtime, "invocation": self.invocation,
                "benchmark": self.benchmark, "reason": self.reason}


def parse_progress(line: str) -> tuple[str, dict[str, str]] | None:
    """`# start suite=micro benchmark=mutex param=` -> ('start', {...}); None for other lines."""
    match = PROGRESS_RE.fullmatch(line.rstrip("\n"))
    if not match:
        return None
    fields = dict(item.split("=", 1) for item in match.group(2).split())
    return match.group(1), fields


def bench_name(fields: dict[str, str]) -> str:
    name = f"{fields.get('suite', '?')}/{fields.get('benchmark', '?')}"
    return f"{name} {fields['param']}" if fields.get("param") else name


def _pump(stream: TextIO, lines: "queue.Queue[str | None]") -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


@dataclass
class Invocation:
    runtime: str
    index: int
    command: list[str]
    csv: Path
    meta: Path
    stdout_log: Path
    stderr_log: Path


def run_invocation(inv: Invocation, timeout_s: float, out: TextIO | None = None, err: TextIO | None = None) -> None:
    """Run one program invocation; raise StepFailed on a non-zero exit or watchdog expiry.

    Progress goes to `out` (default: the current sys.stdout), the program's other stderr lines
    to `err` (default: the current sys.stderr), each line as soon as it arrives.
    """
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    tag = f"[{inv.runtime} #{inv.index}]"
    print(f"{tag} {' '.join(inv.command)}", file=out, flush=True)
    running: dict[str, str] | None = None
    tail: deque[str] = deque(maxlen=20)
    with open(inv.stdout_log, "w", encoding="utf-8") as stdout_log, \
            open(inv.stderr_log, "w", encoding="utf-8") as stderr_log:
        try:
            proc = subprocess.Popen(inv.command, stdout=stdout_log, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                    text=True, bufsize=1, errors="replace", start_new_session=True)
        except OSError as exc:
            raise StepFailed("invocation", f"cannot start {inv.command[0]}: {exc.strerror}", inv.runtime, inv.index) from None
        lines: queue.Queue[str | None] = queue.Queue()
        reader = threading.Thread(target=_pump, args=(proc.stderr, lines), daemon=True)
        reader.start()
        deadline = time.monotonic() + timeout_s
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError
                try:
                    line = lines.get(timeout=min(remaining, 0.25))
                except queue.Empty:
                    continue
                if line is None:
                    break
                stderr_log.write(line)
                stderr_log.flush()
                progress = parse_progress(line)
                if progress is None:
                    tail.append(line.rstrip("\n"))
                    print(f"{tag} {line.rstrip()}", file=err, flush=True)
                    continue
                kind, fields = progress
                if kind == "start":
                    running = fields
                    print(f"{tag} {bench_name(fields)} ...", file=out, flush=True)
                else:
                    running = None
                    print(f"{tag} {bench_name(fields)} done: {_fmt_done(fields)}", file=out, flush=True)
            code = proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except (TimeoutError, subprocess.TimeoutExpired):
            _kill_group(proc)
            what = f"while running {bench_name(running)}" if running else "between benchmarks"
            raise StepFailed("invocation", f"watchdog: no exit after {timeout_s:g} s {what}; process group killed",
                             inv.runtime, inv.index, bench_name(running) if running else None) from None
        except BaseException:
            _kill_group(proc)
            raise
        finally:
            reader.join(timeout=5)
    if code != 0:
        errors = [t for t in tail if t.startswith("error:")]
        detail = (errors[-1] if errors else (tail[-1] if tail else "no message")).strip()
        how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        raise StepFailed("invocation", f"{how}: {detail}", inv.runtime, inv.index,
                         bench_name(running) if running else None)


def _fmt_done(fields: dict[str, str]) -> str:
    from .render import fmt_ns

    value = fields.get("median_ns_per_op")
    try:
        return f"{fmt_ns(float(value))}/op (median)" if value is not None else "ok"
    except ValueError:
        return value


# -- the run ----------------------------------------------------------------------------------

def check_outputs(inv: Invocation) -> None:
    from .load import read_bench_csv, read_json_object, validate_meta_json

    for path, kind in ((inv.csv, "CSV"), (inv.meta, "meta JSON")):
        if not path.is_file():
            raise StepFailed("invocation", f"program exited 0 but wrote no {kind} ({path.name})", inv.runtime, inv.index)
    try:
        rows = read_bench_csv(inv.csv, inv.runtime)
        validate_meta_json(inv.meta, read_json_object(inv.meta), inv.runtime)
    except DataError as exc:
        raise StepFailed("validate", str(exc), inv.runtime, inv.index) from None
    wrong = rows[rows["invocation"] != inv.index]
    if not wrong.empty:
        raise StepFailed("validate", f"{inv.csv.name}: invocation column is {int(wrong['invocation'].iloc[0])}, "
                         f"expected {inv.index}", inv.runtime, inv.index)
    if rows.empty:
        raise StepFailed("validate", f"{inv.csv.name}: no measured rows (did --filter match nothing?)",
                         inv.runtime, inv.index)


def bench_command(options: BenchOptions, runtime: str, index: int, csv: Path, meta: Path) -> list[str]:
    cmd = [str(options.binaries[runtime]), "--suite", options.suite]
    if options.quick:
        cmd.append("--quick")
    for item in options.filters:
        cmd += ["--filter", item]
    if options.workers is not None:
        cmd += ["--workers", str(options.workers)]
    for item in options.sets:
        cmd += ["--set", item]
    return cmd + ["--invocation", str(index), "--csv", str(csv), "--meta", str(meta)]


def plan(options: BenchOptions, folder: Path) -> list[Invocation]:
    staging, logs = folder / STAGING, folder / "logs"
    return [Invocation(rt, k, bench_command(options, rt, k, staging / f"{rt}.{k}.csv", staging / f"{rt}.{k}.meta.json"),
                       staging / f"{rt}.{k}.csv", staging / f"{rt}.{k}.meta.json",
                       logs / f"{rt}.{k}.stdout.txt", logs / f"{rt}.{k}.stderr.txt")
            for k in range(options.invocations) for rt in options.runtimes]


def finish(options: BenchOptions, folder: Path, invocations: list[Invocation]) -> list[str]:
    """Merge, validate and copy meta; returns warnings for run.json."""
    from .load import read_bench_csv, read_json_object

    warnings: list[str] = []
    for rt in options.runtimes:
        mine = [inv for inv in invocations if inv.runtime == rt]
        target = folder / f"{rt}.csv"
        try:
            merge_csvs([inv.csv for inv in mine], target)
            read_bench_csv(target, rt)
        except DataError as exc:
            raise StepFailed("merge", str(exc), rt) from None
        metas = [read_json_object(inv.meta) for inv in mine]
        for inv, meta in zip(mine[1:], metas[1:]):
            if meta != metas[0]:
                differ = sorted(k for k in set(meta) | set(metas[0]) if meta.get(k) != metas[0].get(k))
                warnings.append(f"{rt} meta differs in invocation {inv.index} from invocation 0: {', '.join(differ)}")
        write_json_atomic(folder / f"{rt}.meta.json", metas[0])
    return warnings


def constants_warnings(options: BenchOptions) -> list[str]:
    path = options.root / "runtime" / "bench" / "constants.json"
    out = []
    for rt, binary in options.binaries.items():
        if binary.is_file() and path.is_file() and path.stat().st_mtime > binary.stat().st_mtime:
            out.append(f"{path.name} is newer than {binary}: the {rt} binary may embed older constants (rebuild with --build)")
    return out


def run_bench(options: BenchOptions) -> Path:
    """Run everything; return the complete run folder or raise RunFailed (failed.json written)."""
    profile = load_profile(options.root, options.profile)
    constants, overrides = effective_constants(profile, options.sets, options.workers)
    if options.build:
        build(options.root, options.runtimes)
    started = utc_now()
    run_id, folder = create_run_dir(options.data_dir, started)
    print(f"run {run_id}: {folder}", flush=True)
    invocations = plan(options, folder)
    try:
        missing = [f"{rt}: {path}" for rt, path in options.binaries.items() if not os.access(path, os.X_OK)]
        if missing:
            raise StepFailed("check binaries", f"missing or not executable: {'; '.join(missing)} "
                             "(build them with --build)")
        (folder / STAGING).mkdir()
        (folder / "logs").mkdir()
        for inv in invocations:
            run_invocation(inv, options.timeout_s)
            check_outputs(inv)
        warnings = finish(options, folder, invocations) + constants_warnings(options)
    except StepFailed as failure:
        _record_failure(folder, run_id, started, options, failure)
        parts = []
        if failure.runtime:
            parts.append(failure.runtime if failure.invocation is None
                         else f"{failure.runtime} invocation {failure.invocation}")
        if failure.benchmark:
            parts.append(f"benchmark {failure.benchmark}")
        where = ", ".join(parts)
        raise RunFailed(f"run {run_id} failed at step '{failure.step}'" + (f" ({where})" if where else "")
                        + f": {failure.reason} — see {folder / 'failed.json'}") from None
    except KeyboardInterrupt:
        _record_failure(folder, run_id, started, options, StepFailed("interrupted", "interrupted by the user"))
        raise
    shutil.rmtree(folder / STAGING, ignore_errors=True)
    for message in warnings:
        print(f"warning: {message}", file=sys.stderr, flush=True)
    info = {
        "run_id": run_id, "status": "complete", "suites": options.suites, "profile": options.profile,
        "constants": constants, "overrides": overrides, "constants_source": "runtime/bench/constants.json + overrides",
        "filters": options.filters, "runtimes": list(options.runtimes), "invocations": options.invocations,
        "invocation_order": [{"runtime": inv.runtime, "invocation": inv.index} for inv in invocations],
        "command_line": options.command_line,
        "bench_commands": {inv.runtime: inv.command for inv in invocations if inv.index == 0},
        "binaries": {rt: {"path": str(path), "sha256": sha256_of(path)} for rt, path in options.binaries.items()},
        "git": git_state(options.root), "hostname": socket.gethostname(), "timeout_s": options.timeout_s,
        "started_utc": iso(started), "ended_utc": iso(utc_now()), "warnings": warnings,
    }
    write_json_atomic(folder / "run.json", info)
    print(f"run complete: {folder}", flush=True)
    return folder


def _record_failure(folder: Path, run_id: str, started: datetime, options: BenchOptions, failure: StepFailed) -> None:
    shutil.rmtree(folder / STAGING, ignore_errors=True)
    record = {"run_id": run_id, "status": "failed", **failure.record(), "command_line": options.command_line,
              "started_utc": iso(started), "failed_utc": iso(utc_now())}
    write_json_atomic(folder / "failed.json", record)
