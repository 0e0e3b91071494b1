"""The http suite's orchestration: a server per runtime, `wrk` per sample (BENCHMARKS.md, "Http suite").

Unlike the other suites, no program of ours measures here: the orchestrator starts a server
(runtime/bench/http_server.zig built per std.Io implementation, or `tokio_bench http-server`:
hyper on Tokio), points `wrk` at it, and turns wrk's report into rows.

One *invocation* of a runtime = one server process serving every case in order
(`http_plaintext` at each of `http_connections`, then `http_bytes` at each of
`http_bytes_connections`), each case `http_samples` samples; one sample = a discarded warm-up
wrk run of `http_warmup_s` seconds on fresh connections, then the measured wrk run of
`http_duration_s` seconds. Invocations rotate through the runtimes every round, like the
program invocations of the other suites (in `--suite all` they come after those).

Per measured run the orchestrator records wrk's completed requests, its measured duration and
latency percentiles (p50/p90/p99/p99.9, from the `done()` callback of a Lua script, WRK_SCRIPT:
`--latency` prints no p99.9) and the server process's CPU time over the run (utime + stime of
/proc/<pid>/stat, 10 ms ticks). Server and wrk run on separate CPUs where the machine has two
or more (`taskset`: the server on the first half, wrk on the rest; `cpu_split`), and the server
gets as many workers as it has CPUs (`http_workers`, 0 = that).

Faults: a sample with socket errors (connect, read, write, timeout) or non-2xx responses, a
server that exits or stops answering mid-sample, or wrk failing, ends that sample as *failed*:
one `error:` line naming the runtime, the case and the connection count, a record in run.json
`http.failed_samples`, no row; the server is stopped (killed if it does not exit) and a fresh
one serves the remaining cases. At each server's exit its request count (`requests N`) is
checked against wrk's (`check_request_count`): at least every request wrk completed (warm-ups
included) and at most one more per connection of each wrk run (wrk drops the responses in
flight when its time is up). A server that fails the check has its rows dropped and the
failure recorded.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, TextIO

from . import child, machine_load, schema
from .build import BINARIES, HTTP_SERVER_BINARIES

#: The http servers: the Zig program per std.Io implementation, and tokio_bench's subcommand.
HTTP_SERVERS: dict[str, list[str]] = {
    **{name: [str(path)] for name, path in HTTP_SERVER_BINARIES.items()},
    "tokio": [str(BINARIES["tokio"]), "http-server"],
}
HTTP_DEFAULT_VARIANTS: tuple[str, ...] = ("ampere.io", "zig.threaded", "zio", "tokio")
ROUTES: dict[str, str] = {"http_plaintext": "/plaintext", "http_bytes": "/bytes/16384"}
WRK_MARK = "WRK_JSON "
#: wrk's done() callback: one line of JSON after the marker (latency in microseconds).
WRK_SCRIPT = """done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests": %d, "duration_us": %d, "bytes": %d, ' ..
    '"errors": {"connect": %d, "read": %d, "write": %d, "status": %d, "timeout": %d}, ' ..
    '"latency_us": {"p50": %d, "p90": %d, "p99": %d, "p999": %d, "max": %d}}\\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9),
    latency.max))
end
"""
SERVER_START_S = 10.0
SERVER_STOP_S = 10.0
CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class SampleFailed(Exception):
    """A sample that produced no row (the reason is the message)."""


# -- settings ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class HttpSettings:
    """The http_* constants of runtime/bench/constants.json's `http_profiles` (plus --set)."""
    connections: tuple[int, ...]
    bytes_connections: tuple[int, ...]
    warmup_s: int
    duration_s: int
    samples: int
    invocations: int
    workers: int
    wrk_threads: int

    @staticmethod
    def of(constants: dict[str, Any]) -> "HttpSettings":
        return HttpSettings(tuple(constants["http_connections"]), tuple(constants["http_bytes_connections"]),
                            int(constants["http_warmup_s"]), int(constants["http_duration_s"]),
                            int(constants["http_samples"]), int(constants["http_invocations"]),
                            int(constants["http_workers"]), int(constants["http_wrk_threads"]))

    def problems(self) -> list[str]:
        out = []
        if not self.connections and not self.bytes_connections:
            out.append("http_connections and http_bytes_connections are both empty")
        if any(c < 1 for c in self.connections + self.bytes_connections):
            out.append("a connection count must be >= 1")
        for name, value in (("http_duration_s", self.duration_s), ("http_samples", self.samples),
                            ("http_invocations", self.invocations)):
            if value < 1:
                out.append(f"{name} must be >= 1")
        return out


def cases(settings: HttpSettings) -> list[tuple[str, int]]:
    """(benchmark, connections) in run order."""
    return ([("http_plaintext", c) for c in settings.connections]
            + [("http_bytes", c) for c in settings.bytes_connections])


def cpu_split(cpus: list[int]) -> tuple[list[int], list[int]] | None:
    """(server CPUs, wrk CPUs): the first half (at least one) and the rest; None with one CPU."""
    if len(cpus) < 2:
        return None
    half = max(1, len(cpus) // 2)
    return cpus[:half], cpus[half:]


def available_cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))


def taskset_prefix(cpus: list[int] | None) -> list[str]:
    return ["taskset", "-c", ",".join(map(str, cpus))] if cpus else []


# -- wrk --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class WrkReport:
    requests: int
    duration_us: int
    errors: dict[str, int]
    latency_us: dict[str, int]

    @property
    def socket_errors(self) -> int:
        return sum(v for k, v in self.errors.items() if k != "status")

    @property
    def non_2xx(self) -> int:
        return self.errors.get("status", 0)


def parse_wrk_output(text: str) -> WrkReport:
    """The report of WRK_SCRIPT's done() line in wrk's stdout; SampleFailed without a valid one."""
    lines = [line[len(WRK_MARK):] for line in text.splitlines() if line.startswith(WRK_MARK)]
    if len(lines) != 1:
        raise SampleFailed(f"wrk printed {len(lines)} report lines (expected 1 from its done() callback)")
    try:
        doc = json.loads(lines[0])
        errors = {k: int(doc["errors"][k]) for k in ("connect", "read", "write", "status", "timeout")}
        latency = {k: int(doc["latency_us"][k]) for k in ("p50", "p90", "p99", "p999", "max")}
        report = WrkReport(int(doc["requests"]), int(doc["duration_us"]), errors, latency)
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise SampleFailed(f"wrk report line unreadable ({type(exc).__name__}: {exc})") from None
    if report.duration_us <= 0 or report.requests < 0 or min(errors.values()) < 0:
        raise SampleFailed(f"wrk report out of range: {lines[0]}")
    return report


def sample_problem(report: WrkReport) -> str | None:
    """Why a measured (or warm-up) wrk run fails its sample, None when it is clean."""
    if report.socket_errors:
        kinds = ", ".join(f"{k} {v}" for k, v in report.errors.items() if k != "status" and v)
        return f"socket errors ({kinds})"
    if report.non_2xx:
        return f"{report.non_2xx} non-2xx responses"
    if report.requests == 0:
        return "no request completed"
    return None


def check_request_count(served: int, wrk_total: int, connections_total: int) -> str | None:
    """The server's count against wrk's: wrk_total <= served <= wrk_total + connections_total."""
    if served < wrk_total:
        return f"the server counted {served} requests, fewer than the {wrk_total} wrk completed"
    if served > wrk_total + connections_total:
        return (f"the server counted {served} requests, more than wrk's {wrk_total} plus one in flight per "
                f"connection ({connections_total})")
    return None


def wrk_version(wrk: str) -> str | None:
    """`wrk -v` -> '4.1.0' (it prints `wrk 4.1.0 [epoll] ...` and exits 1)."""
    try:
        done = subprocess.run([wrk, "-v"], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"wrk\s+(\S+)", done.stdout + done.stderr)
    return match[1] if match else None


def wrk_command(wrk: str, script: Path, port: int, path: str, connections: int, threads: int, seconds: int,
                cpus: list[int] | None) -> list[str]:
    return [*taskset_prefix(cpus), wrk, "-t", str(min(threads, connections)), "-c", str(connections),
            "-d", f"{seconds}s", "--timeout", "2s", "-s", str(script), f"http://127.0.0.1:{port}{path}"]


# -- the server process -----------------------------------------------------------------------

def parse_stat_cpu_ticks(text: str) -> int:
    """utime + stime (fields 14 and 15) of a /proc/<pid>/stat line, in clock ticks."""
    rest = text[text.rindex(")") + 2:].split()  # the command name may hold spaces
    return int(rest[11]) + int(rest[12])


def process_cpu_ns(pid: int) -> int:
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        return parse_stat_cpu_ticks(stat.read()) * 1_000_000_000 // CLK_TCK


class Server:
    """One server process: started, asked for its port, stopped through its stdin."""

    def __init__(self, command: list[str], stderr_log: Path) -> None:
        self.command = command
        self.stderr_log = stderr_log
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self._stdout = b""

    def start(self, timeout_s: float = SERVER_START_S) -> None:
        with open(self.stderr_log, "ab") as err:
            try:
                self.proc = child.spawn(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
            except OSError as exc:
                raise SampleFailed(f"cannot start {self.command[0]}: {exc.strerror}") from None
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout_s
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._stdout:
            remaining = deadline - time.monotonic()
            ready, _, _ = select.select([fd], [], [], max(0.0, min(remaining, 0.25)))
            if ready:
                chunk = os.read(fd, 4096)
                if not chunk:
                    break
                self._stdout += chunk
            elif remaining <= 0 or self.proc.poll() is not None:
                break
        match = re.match(rb"listening (\d+)\n", self._stdout)
        if not match:
            self.kill()
            raise SampleFailed(f"the server did not say `listening <port>` within {timeout_s:g} s "
                               f"({self.exit_note() or 'no output'}; see {self.stderr_log.name})")
        self.port = int(match[1])

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def exit_note(self) -> str:
        if self.proc is None or self.proc.poll() is None:
            return ""
        code = self.proc.returncode
        return f"killed by signal {-code}" if code < 0 else f"exited with code {code}"

    def stop(self, timeout_s: float = SERVER_STOP_S) -> int:
        """Closes stdin, waits for exit 0 and `requests N`; returns N (SampleFailed otherwise)."""
        assert self.proc is not None
        try:
            out, _ = self.proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            raise SampleFailed(f"the server did not exit within {timeout_s:g} s of its stdin closing; killed") from None
        text = (self._stdout + (out or b"")).decode("utf-8", "replace")
        if self.proc.returncode != 0:
            raise SampleFailed(f"the server {self.exit_note()} at stop (see {self.stderr_log.name})")
        match = re.search(r"^requests (\d+)$", text, re.M)
        if not match:
            raise SampleFailed("the server exited without its `requests N` line")
        return int(match[1])

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            child.kill_group(self.proc)
        if self.proc is not None:
            try:
                self.proc.communicate(timeout=5)
            except (subprocess.TimeoutExpired, ValueError, OSError):
                pass


# -- samples ----------------------------------------------------------------------------------

@dataclass
class Sample:
    benchmark: str
    connections: int
    iteration: int
    report: WrkReport
    cpu_ns: int


@dataclass
class ServerRun:
    """What one server process served (for the request-count check)."""
    wrk_requests: int = 0
    wrk_connections: int = 0
    samples: list[Sample] = field(default_factory=list)


@dataclass
class HttpContext:
    """Everything a run of the http suite needs besides the runtimes."""
    root: Path
    folder: Path
    settings: HttpSettings
    wrk: str
    script: Path
    server_cpus: list[int] | None
    wrk_cpus: list[int] | None
    workers: int
    wrk_threads: int
    timeout_s: float
    out: TextIO = sys.stdout
    err: TextIO = sys.stderr
    failures: list[dict[str, Any]] = field(default_factory=list)
    #: runtime -> the server's command without options (default: HTTP_SERVERS under `root`)
    servers: dict[str, list[str]] = field(default_factory=dict)
    command: Callable[[str, int, Path | None], list[str]] | None = None


def default_servers(root: Path, tokio_binary: Path | None = None) -> dict[str, list[str]]:
    """HTTP_SERVERS with absolute paths; tokio's program may be another build (`--tokio-bin`)."""
    out = {rt: [str(root / cmd[0]), *cmd[1:]] for rt, cmd in HTTP_SERVERS.items()}
    if tokio_binary is not None:
        out["tokio"] = [str(tokio_binary), *HTTP_SERVERS["tokio"][1:]]
    return out


def server_command(ctx: HttpContext, runtime: str, meta: Path | None) -> list[str]:
    if ctx.command is not None:
        return ctx.command(runtime, ctx.workers, meta)
    base = ctx.servers.get(runtime) or default_servers(ctx.root)[runtime]
    cmd = [*taskset_prefix(ctx.server_cpus), *base, "--port", "0", "--workers", str(ctx.workers)]
    return cmd + (["--meta", str(meta)] if meta is not None else [])


def run_wrk(ctx: HttpContext, server: Server, benchmark: str, connections: int, seconds: int) -> tuple[WrkReport, int]:
    """One wrk run; (its report, the server's CPU ns over it). SampleFailed on any problem."""
    cmd = wrk_command(ctx.wrk, ctx.script, server.port, ROUTES[benchmark], connections, ctx.wrk_threads, seconds,
                      ctx.wrk_cpus)
    try:
        cpu_before = process_cpu_ns(server.pid)
    except OSError:
        raise SampleFailed(f"the server is gone before the run ({server.exit_note() or 'no /proc entry'})") from None
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 30, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise SampleFailed(f"wrk did not finish within {seconds + 30} s") from None
    except OSError as exc:
        raise SampleFailed(f"cannot start wrk: {exc.strerror}") from None
    try:
        cpu_after = process_cpu_ns(server.pid)
    except OSError:
        cpu_after = None
    if not server.alive():
        raise SampleFailed(f"the server {server.exit_note()} during the run")
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise SampleFailed(f"wrk exit code {done.returncode}: {tail}")
    report = parse_wrk_output(done.stdout)
    problem = sample_problem(report)
    if problem:
        raise SampleFailed(problem)
    assert cpu_after is not None
    return report, cpu_after - cpu_before


def serve_invocation(ctx: HttpContext, runtime: str, invocation: int, meta: Path | None,
                     log: Path) -> list[Sample]:
    """Every case on one runtime: its server (a fresh one after a failed sample), warm-up and
    measured wrk runs; returns the samples of the servers that passed the request-count check."""
    kept: list[Sample] = []
    todo = [(bench, conns, i) for bench, conns in cases(ctx.settings) for i in range(ctx.settings.samples)]
    tag = f"[{runtime} http #{invocation}]"
    while todo:
        server = Server(server_command(ctx, runtime, meta), log)
        meta = None  # written by the first server of the run only
        served = ServerRun()
        try:
            server.start()
        except SampleFailed as exc:
            bench, conns, i = todo.pop(0)
            _fail(ctx, tag, runtime, invocation, bench, conns, i, str(exc))
            continue
        failed = False
        while todo and not failed:
            bench, conns, i = todo.pop(0)
            print(f"{tag} {bench} conns={conns} sample {i} ...", file=ctx.out, flush=True)
            try:
                if ctx.settings.warmup_s > 0:
                    warm, _ = run_wrk(ctx, server, bench, conns, ctx.settings.warmup_s)
                    served.wrk_requests += warm.requests
                    served.wrk_connections += conns
                report, cpu_ns = run_wrk(ctx, server, bench, conns, ctx.settings.duration_s)
            except SampleFailed as exc:
                _fail(ctx, tag, runtime, invocation, bench, conns, i, str(exc))
                failed = True
                break
            served.wrk_requests += report.requests
            served.wrk_connections += conns
            served.samples.append(Sample(bench, conns, i, report, cpu_ns))
            rate = report.requests / (report.duration_us / 1e6)
            print(f"{tag} {bench} conns={conns} sample {i} done: {rate:,.0f} requests/s, "
                  f"p99 {report.latency_us['p99'] / 1000:.3g} ms", file=ctx.out, flush=True)
        if failed:
            server.kill()
            kept += served.samples  # clean samples before the failure; this server's count is not checked
            continue
        try:
            count = server.stop()
            problem = check_request_count(count, served.wrk_requests, served.wrk_connections)
        except SampleFailed as exc:
            problem = str(exc)
        if problem:
            _fail(ctx, tag, runtime, invocation, None, None, None, f"request count: {problem}; "
                  f"its {len(served.samples)} samples dropped")
            continue
        kept += served.samples
    return kept


def _fail(ctx: HttpContext, tag: str, runtime: str, invocation: int, bench: str | None, conns: int | None,
          iteration: int | None, reason: str) -> None:
    where = f"{runtime} invocation {invocation}" + (f", {bench} at {conns} connections, sample {iteration}"
                                                    if bench else "")
    print(f"error: http sample failed ({where}): {reason}", file=ctx.err, flush=True)
    ctx.failures.append({"runtime": runtime, "invocation": invocation, "benchmark": bench,
                         "connections": conns, "iteration": iteration, "reason": reason})


def rows_of(runtime: str, invocation: int, workers: int, samples: list[Sample]) -> tuple[list[dict], list[dict]]:
    """(`<runtime>.csv` rows, `<runtime>.http.csv` rows) of one invocation's samples."""
    rows, latency = [], []
    for s in samples:
        param = f"conns={s.connections}"
        rows.append({"runtime": runtime, "invocation": invocation, "suite": "http", "tier": 0,
                     "benchmark": s.benchmark, "param": param, "iteration": s.iteration, "ops": s.report.requests,
                     "elapsed_ns": s.report.duration_us * 1000, "cpu_ns": s.cpu_ns, "workers": workers,
                     "alloc_bytes": 0, "alloc_count": 0})
        lat = s.report.latency_us
        latency.append({"invocation": invocation, "benchmark": s.benchmark, "param": param, "iteration": s.iteration,
                        "p50_ns": lat["p50"] * 1000, "p90_ns": lat["p90"] * 1000, "p99_ns": lat["p99"] * 1000,
                        "p999_ns": lat["p999"] * 1000, "errors": s.report.socket_errors,
                        "non_2xx": s.report.non_2xx})
    return rows, latency


@dataclass
class HttpResult:
    rows: dict[str, list[dict]]
    latency: dict[str, list[dict]]
    metas: dict[str, Path]
    order: list[dict[str, Any]]
    record: dict[str, Any]


def context(root: Path, folder: Path, constants: dict[str, Any], timeout_s: float,
            wrk: str | None = None, servers: dict[str, list[str]] | None = None) -> HttpContext:
    settings = HttpSettings.of(constants)
    wrk_path = wrk or shutil.which("wrk")
    if wrk_path is None:
        raise FileNotFoundError("wrk")
    split = cpu_split(available_cpus())
    server_cpus, wrk_cpus = split if split else (None, None)
    if shutil.which("taskset") is None:
        server_cpus = wrk_cpus = None
    workers = settings.workers or (len(server_cpus) if server_cpus else 1)
    wrk_threads = settings.wrk_threads or (len(wrk_cpus) if wrk_cpus else 1)
    script = folder / ".staging" / "wrk_report.lua"
    script.parent.mkdir(exist_ok=True)
    script.write_text(WRK_SCRIPT, encoding="utf-8")
    return HttpContext(root, folder, settings, wrk_path, script, server_cpus, wrk_cpus, workers, wrk_threads,
                       timeout_s, out=sys.stdout, err=sys.stderr, servers=dict(servers or default_servers(root)))


def run_http(ctx: HttpContext, runtimes: tuple[str, ...], rotate: Callable[[tuple[str, ...], int], tuple[str, ...]]) -> HttpResult:
    """Every invocation of every runtime, rounds rotated; the rows and the run.json record."""
    rows: dict[str, list[dict]] = {rt: [] for rt in runtimes}
    latency: dict[str, list[dict]] = {rt: [] for rt in runtimes}
    metas: dict[str, Path] = {}
    order: list[dict[str, Any]] = []
    logs = ctx.folder / "logs"
    logs.mkdir(exist_ok=True)
    for k in range(ctx.settings.invocations):
        for rt in rotate(runtimes, k):
            meta = None
            if rt not in metas:
                meta = ctx.folder / ".staging" / f"{rt}.http.meta.json"
                metas[rt] = meta
            started, before, children = time.monotonic(), machine_load.snapshot(), machine_load.children_cpu_s()
            samples = serve_invocation(ctx, rt, k, meta, logs / f"{rt}.http.{k}.stderr.txt")
            # measured: the servers' and the load generator's CPU (children reaped during the invocation)
            load = machine_load.between(before, machine_load.snapshot(), machine_load.children_cpu_s() - children)
            order.append({"runtime": rt, "invocation": k, "suite": "http",
                          "elapsed_s": round(time.monotonic() - started, 3), "load": load})
            r, l = rows_of(rt, k, ctx.workers, samples)
            rows[rt] += r
            latency[rt] += l
    record = {
        "load_generator": {"name": "wrk", "version": wrk_version(ctx.wrk), "path": ctx.wrk,
                           "threads": ctx.wrk_threads, "script": "done() callback: requests, errors by kind, "
                           "latency p50/p90/p99/p99.9 (analysis/httpbench.py WRK_SCRIPT)"},
        "cpu_pinning": ({"tool": "taskset", "server_cpus": ctx.server_cpus, "wrk_cpus": ctx.wrk_cpus}
                        if ctx.server_cpus else None),
        "server_workers": ctx.workers,
        "settings": {"connections": list(ctx.settings.connections),
                     "bytes_connections": list(ctx.settings.bytes_connections),
                     "warmup_s": ctx.settings.warmup_s, "duration_s": ctx.settings.duration_s,
                     "samples": ctx.settings.samples, "invocations": ctx.settings.invocations},
        "invocation_order": order,
        "failed_samples": ctx.failures,
    }
    return HttpResult(rows, latency, {rt: p for rt, p in metas.items() if p.is_file()}, order, record)


def http_binary(root: Path, runtime: str, tokio_binary: Path | None = None) -> Path:
    """The program of a runtime's server (tokio: tokio_bench, or the run's `--tokio-bin`)."""
    return Path(default_servers(root, tokio_binary)[runtime][0])
