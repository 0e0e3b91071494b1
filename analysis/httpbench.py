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
    #: the open-loop measurement (oha at a fixed rate): connections, the rates as percent of the
    #: slowest server's closed-loop capacity (none: not run), seconds per measured run
    open_connections: int = 128
    open_percent: tuple[int, ...] = ()
    open_duration_s: int = 5

    @staticmethod
    def of(constants: dict[str, Any]) -> "HttpSettings":
        return HttpSettings(tuple(constants["http_connections"]), tuple(constants["http_bytes_connections"]),
                            int(constants["http_warmup_s"]), int(constants["http_duration_s"]),
                            int(constants["http_samples"]), int(constants["http_invocations"]),
                            int(constants["http_workers"]), int(constants["http_wrk_threads"]),
                            int(constants.get("http_open_connections", 128)),
                            tuple(int(p) for p in constants.get("http_open_load_percent", ())),
                            int(constants.get("http_open_duration_s", 5)))

    def problems(self) -> list[str]:
        out = []
        if not self.connections and not self.bytes_connections:
            out.append("http_connections and http_bytes_connections are both empty")
        if any(c < 1 for c in self.connections + self.bytes_connections):
            out.append("a connection count must be >= 1")
        for name, value in (("http_duration_s", self.duration_s), ("http_samples", self.samples),
                            ("http_invocations", self.invocations), ("http_open_connections", self.open_connections),
                            ("http_open_duration_s", self.open_duration_s)):
            if value < 1:
                out.append(f"{name} must be >= 1")
        if any(not 1 <= p <= 100 for p in self.open_percent):
            out.append("http_open_load_percent: each a percent from 1 to 100")
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
    bytes: int = 0

    @property
    def bytes_per_request(self) -> float:
        return self.bytes / self.requests if self.requests else 0.0

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
        report = WrkReport(int(doc["requests"]), int(doc["duration_us"]), errors, latency, int(doc.get("bytes", 0)))
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise SampleFailed(f"wrk report line unreadable ({type(exc).__name__}: {exc})") from None
    if report.duration_us <= 0 or report.requests < 0 or min(errors.values()) < 0:
        raise SampleFailed(f"wrk report out of range: {lines[0]}")
    return report


#: The body each route answers with (the smallest response a request may bring back).
BODY_BYTES: dict[str, int] = {"http_plaintext": len("Hello, World!"), "http_bytes": 16384}


def sample_problem(report: WrkReport, benchmark: str | None = None) -> str | None:
    """Why a measured (or warm-up) wrk run fails its sample, None when it is clean: socket errors,
    non-2xx responses, no request, or fewer response bytes per request than the route's body
    (wrk counts headers and body of every response it read)."""
    if benchmark in BODY_BYTES and report.requests and report.bytes_per_request < BODY_BYTES[benchmark]:
        return (f"{report.bytes_per_request:.1f} response bytes per request, fewer than the "
                f"{BODY_BYTES[benchmark]}-byte body of {ROUTES[benchmark]}")
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
    """The process's CPU time in ns: the sum over its threads of /proc/<pid>/task/<tid>/schedstat
    (time on a CPU, ns), or utime + stime of /proc/<pid>/stat (10 ms ticks) where schedstat is
    missing. OSError when the process is gone."""
    try:
        total = 0
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{task}/schedstat", encoding="ascii") as stat:
                    total += int(stat.read().split()[0])
            except FileNotFoundError:  # a thread that exited between listdir and open
                continue
        if total:
            return total
    except (FileNotFoundError, NotADirectoryError, ValueError, IndexError):
        pass
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        return parse_stat_cpu_ticks(stat.read()) * 1_000_000_000 // CLK_TCK


#: How often the server's CPU is read while a load generator runs (linear interpolation between).
CPU_POLL_S = 0.05


@dataclass
class GeneratorRun:
    """One load-generator process: its exit, output, CPU and the server's CPU over its run."""
    returncode: int
    stdout: str
    stderr: str
    started: float
    ended: float
    generator_cpu_ns: int
    #: (monotonic s, server CPU ns) readings from its start to its exit
    server_cpu: list[tuple[float, int]]

    def server_cpu_between(self, start: float, end: float) -> int | None:
        """The server's CPU ns over [start, end] (monotonic s), interpolated between readings."""
        points = self.server_cpu
        if len(points) < 2:
            return None

        def at(t: float) -> float:
            t = min(max(t, points[0][0]), points[-1][0])
            for (t0, c0), (t1, c1) in zip(points, points[1:]):
                if t <= t1:
                    return c0 + (c1 - c0) * ((t - t0) / (t1 - t0) if t1 > t0 else 1.0)
            return float(points[-1][1])
        return int(round(at(end) - at(start)))


def run_generator(cmd: list[str], server_pid: int, timeout_s: float) -> GeneratorRun:
    """Run a load generator to its exit, reading the server's CPU every CPU_POLL_S and the
    generator's own CPU (its rusage from wait4). SampleFailed when it cannot start or times out;
    OSError reading a server that is gone is recorded as no reading."""
    import tempfile
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        try:
            proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, text=True)
        except OSError as exc:
            raise SampleFailed(f"cannot start {cmd[0]}: {exc.strerror}") from None
        started = time.monotonic()
        readings: list[tuple[float, int]] = []
        while True:
            try:
                readings.append((time.monotonic(), process_cpu_ns(server_pid)))
            except OSError:
                pass
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid == proc.pid:
                ended = time.monotonic()
                try:
                    readings.append((ended, process_cpu_ns(server_pid)))
                except OSError:
                    pass
                proc.returncode = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() - started > timeout_s:
                proc.kill()
                proc.wait()
                raise SampleFailed(f"{Path(cmd[0]).name} did not finish within {timeout_s:g} s")
            time.sleep(CPU_POLL_S)
        out.seek(0)
        err.seek(0)
        return GeneratorRun(proc.returncode, out.read(), err.read(), started, ended,
                            int((usage.ru_utime + usage.ru_stime) * 1e9), readings)


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

    def peak_rss_bytes(self) -> int | None:
        """The server's peak resident set so far (/proc/<pid>/status VmHWM), None when gone."""
        try:
            with open(f"/proc/{self.pid}/status", encoding="ascii") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            return None
        return None

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
    generator_cpu_ns: int = 0
    #: the row's param (default `conns=N`; the open-loop rows `load=P`)
    param: str = ""


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
    #: the open-loop load generator (None: not installed, the open loop does not run)
    oha: str | None = None
    #: (runtime, invocation) -> the largest peak resident set of its servers (VmHWM)
    peak_rss: dict[tuple[str, int], int] = field(default_factory=dict)


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


def run_wrk(ctx: HttpContext, server: Server, benchmark: str, connections: int, seconds: int
            ) -> tuple[WrkReport, int, int]:
    """One wrk run; (its report, the server's CPU ns over its measured window, wrk's own CPU ns).

    The window is wrk's measured duration ending at its exit (wrk stops measuring, prints and
    exits within milliseconds), the server's CPU read every CPU_POLL_S in ns (schedstat) and
    interpolated at its ends: connection set-up before it is not counted. SampleFailed on any
    problem."""
    cmd = wrk_command(ctx.wrk, ctx.script, server.port, ROUTES[benchmark], connections, ctx.wrk_threads, seconds,
                      ctx.wrk_cpus)
    if not server.alive():
        raise SampleFailed(f"the server is gone before the run ({server.exit_note() or 'no /proc entry'})")
    done = run_generator(cmd, server.pid, seconds + 30)
    if not server.alive():
        raise SampleFailed(f"the server {server.exit_note()} during the run")
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise SampleFailed(f"wrk exit code {done.returncode}: {tail}")
    report = parse_wrk_output(done.stdout)
    problem = sample_problem(report, benchmark)
    if problem:
        raise SampleFailed(problem)
    window = min(report.duration_us / 1e6, done.ended - done.started)
    cpu = done.server_cpu_between(done.ended - window, done.ended)
    if cpu is None:
        raise SampleFailed("the server's CPU could not be read during the run")
    return report, cpu, done.generator_cpu_ns


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
                    warm, _, _ = run_wrk(ctx, server, bench, conns, ctx.settings.warmup_s)
                    served.wrk_requests += warm.requests
                    served.wrk_connections += conns
                report, cpu_ns, wrk_cpu_ns = run_wrk(ctx, server, bench, conns, ctx.settings.duration_s)
            except SampleFailed as exc:
                _fail(ctx, tag, runtime, invocation, bench, conns, i, str(exc))
                failed = True
                break
            served.wrk_requests += report.requests
            served.wrk_connections += conns
            served.samples.append(Sample(bench, conns, i, report, cpu_ns, wrk_cpu_ns))
            rate = report.requests / (report.duration_us / 1e6)
            print(f"{tag} {bench} conns={conns} sample {i} done: {rate:,.0f} requests/s, "
                  f"p99 {report.latency_us['p99'] / 1000:.3g} ms", file=ctx.out, flush=True)
        if failed:
            server.kill()
            kept += served.samples  # clean samples before the failure; this server's count is not checked
            continue
        rss = server.peak_rss_bytes()
        if rss is not None:
            ctx.peak_rss[(runtime, invocation)] = max(rss, ctx.peak_rss.get((runtime, invocation), 0))
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
        param = s.param or f"conns={s.connections}"
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


# -- the open loop ----------------------------------------------------------------------------

OHA_TIMEOUT_EXTRA_S = 30


def oha_path() -> str | None:
    """oha on PATH, or where `cargo install` puts it (scripts/bootstrap.sh installs it)."""
    found = shutil.which("oha")
    if found:
        return found
    home = Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo")) / "bin" / "oha"
    return str(home) if os.access(home, os.X_OK) else None


def oha_version(oha: str) -> str | None:
    try:
        done = subprocess.run([oha, "--version"], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"oha\s+(\S+)", done.stdout + done.stderr)
    return match[1] if match else None


def oha_command(oha: str, port: int, connections: int, rate: float, seconds: int, cpus: list[int] | None) -> list[str]:
    """A constant-rate run: `rate` requests/s over `connections` for `seconds`, latency corrected
    for coordinated omission (each request's latency from when it was due, not when it was sent)."""
    return [*taskset_prefix(cpus), oha, "-z", f"{seconds}s", "-c", str(connections), "-q", f"{rate:.0f}",
            "--latency-correction", "--no-tui", "--output-format", "json", f"http://127.0.0.1:{port}/plaintext"]


DEADLINE_ABORT = "aborted due to deadline"


def parse_oha_output(text: str) -> WrkReport:
    """oha's JSON report as a WrkReport (latency in µs; requests = 2xx responses; errors: every
    error kind but the requests still in flight when the time was up; bytes = body bytes)."""
    try:
        doc = json.loads(text)
        summary, percentiles = doc["summary"], doc["latencyPercentiles"]
        codes = {int(k): int(v) for k, v in (doc.get("statusCodeDistribution") or {}).items()}
        errors = {k: int(v) for k, v in (doc.get("errorDistribution") or {}).items() if k != DEADLINE_ABORT}
        ok = sum(v for k, v in codes.items() if 200 <= k < 300)
        non_2xx = sum(v for k, v in codes.items() if not 200 <= k < 300)
        latency = {name: int(round(float(percentiles[key]) * 1e6)) for name, key in
                   (("p50", "p50"), ("p90", "p90"), ("p99", "p99"), ("p999", "p99.9"))}
        latency["max"] = int(round(float(summary["slowest"]) * 1e6))
        report = WrkReport(ok, int(round(float(summary["total"]) * 1e6)),
                           {"connect": 0, "read": sum(errors.values()), "write": 0, "status": non_2xx, "timeout": 0},
                           latency, int(summary.get("totalData") or 0))
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise SampleFailed(f"oha report unreadable ({type(exc).__name__}: {exc})") from None
    if report.duration_us <= 0:
        raise SampleFailed("oha report out of range: no duration")
    return report


def capacities(rows: dict[str, list[dict]], connections: int | None = None) -> dict[str, float]:
    """Each runtime's closed-loop capacity on GET /plaintext: the median over invocations of its
    requests/s, the best of its connection counts."""
    out = {}
    for runtime, mine in rows.items():
        by_conns: dict[str, list[float]] = {}
        for r in mine:
            if r["benchmark"] == "http_plaintext":
                by_conns.setdefault(r["param"], []).append(r["ops"] / (r["elapsed_ns"] / 1e9))
        medians = [sorted(v)[len(v) // 2] for v in by_conns.values() if v]
        if medians:
            out[runtime] = max(medians)
    return out


def run_open(ctx: HttpContext, server: Server, rate: float, seconds: int) -> tuple[WrkReport, int, int]:
    """One oha run at `rate`; (its report, the server's CPU ns over the run, oha's CPU ns)."""
    assert ctx.oha is not None
    cmd = oha_command(ctx.oha, server.port, ctx.settings.open_connections, rate, seconds, ctx.wrk_cpus)
    done = run_generator(cmd, server.pid, seconds + OHA_TIMEOUT_EXTRA_S)
    if not server.alive():
        raise SampleFailed(f"the server {server.exit_note()} during the open-loop run")
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise SampleFailed(f"oha exit code {done.returncode}: {tail}")
    report = parse_oha_output(done.stdout)
    problem = sample_problem(report)
    if problem:
        raise SampleFailed(problem)
    cpu = done.server_cpu_between(done.started, done.ended)
    if cpu is None:
        raise SampleFailed("the server's CPU could not be read during the open-loop run")
    return report, cpu, done.generator_cpu_ns


def serve_open_invocation(ctx: HttpContext, runtime: str, invocation: int, rates: dict[int, float],
                          log: Path) -> list[Sample]:
    """One server of `runtime` under every open-loop rate in turn (a warm-up second at the rate,
    then the measured run); a failed run is recorded and the others go on."""
    tag = f"[{runtime} http open #{invocation}]"
    server = Server(server_command(ctx, runtime, None), log)
    try:
        server.start()
    except SampleFailed as exc:
        _fail(ctx, tag, runtime, invocation, schema.HTTP_OPEN_LOOP, ctx.settings.open_connections, None, str(exc))
        return []
    out = []
    try:
        for percent, rate in rates.items():
            print(f"{tag} {rate:,.0f} requests/s ({percent}% of the slowest capacity) ...", file=ctx.out, flush=True)
            try:
                if ctx.settings.warmup_s > 0:
                    run_open(ctx, server, rate, ctx.settings.warmup_s)
                report, cpu_ns, gen_cpu_ns = run_open(ctx, server, rate, ctx.settings.open_duration_s)
            except SampleFailed as exc:
                _fail(ctx, tag, runtime, invocation, schema.HTTP_OPEN_LOOP, ctx.settings.open_connections, percent,
                      str(exc))
                if not server.alive():
                    break
                continue
            out.append(Sample(schema.HTTP_OPEN_LOOP, ctx.settings.open_connections, 0, report, cpu_ns, gen_cpu_ns,
                              param=f"load={percent}"))
            print(f"{tag} load={percent} done: p50 {report.latency_us['p50'] / 1000:.3g} ms, p99 "
                  f"{report.latency_us['p99'] / 1000:.3g} ms, p99.9 {report.latency_us['p999'] / 1000:.3g} ms",
                  file=ctx.out, flush=True)
    finally:
        server.kill()
    return out


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
                       timeout_s, out=sys.stdout, err=sys.stderr, servers=dict(servers or default_servers(root)),
                       oha=oha_path() if settings.open_percent else None)


def run_http(ctx: HttpContext, runtimes: tuple[str, ...], rotate: Callable[[tuple[str, ...], int], tuple[str, ...]]) -> HttpResult:
    """Every invocation of every runtime, rounds rotated; the rows and the run.json record."""
    rows: dict[str, list[dict]] = {rt: [] for rt in runtimes}
    latency: dict[str, list[dict]] = {rt: [] for rt in runtimes}
    metas: dict[str, Path] = {}
    order: list[dict[str, Any]] = []
    extras: list[dict[str, Any]] = []
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
                          "elapsed_s": round(time.monotonic() - started, 3), "load": load,
                          "peak_rss_bytes": ctx.peak_rss.get((rt, k))})
            r, l = rows_of(rt, k, ctx.workers, samples)
            rows[rt] += r
            latency[rt] += l
            extras += _sample_extras(rt, k, samples)
    open_record = _open_loop(ctx, runtimes, rotate, rows, latency, extras, logs)
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
        "samples": extras,
        "open_loop": open_record,
        "server_cpu": "the server's CPU (every thread, schedstat ns) over each sample's measured window: wrk's "
                      "measured duration ending at its exit, read every 50 ms and interpolated at the ends",
    }
    return HttpResult(rows, latency, {rt: p for rt, p in metas.items() if p.is_file()}, order, record)


def _sample_extras(runtime: str, invocation: int, samples: list[Sample]) -> list[dict[str, Any]]:
    """run.json `http.samples`: per sample the load generator's CPU and the response bytes per
    request (checked against the route's body: sample_problem)."""
    return [{"runtime": runtime, "invocation": invocation, "benchmark": s.benchmark,
             "param": s.param or f"conns={s.connections}", "iteration": s.iteration,
             "generator_cpu_ns": s.generator_cpu_ns, "bytes_per_request": round(s.report.bytes_per_request, 1)}
            for s in samples]


def _open_loop(ctx: HttpContext, runtimes: tuple[str, ...], rotate: Callable[[tuple[str, ...], int], tuple[str, ...]],
               rows: dict[str, list[dict]], latency: dict[str, list[dict]], extras: list[dict[str, Any]],
               logs: Path) -> dict[str, Any] | None:
    """The open-loop measurement after the closed-loop invocations: rates at the settings'
    percents of the slowest runtime's closed-loop capacity (`capacities`), every runtime in
    every invocation (rounds rotated); its rows join `rows` / `latency`. The run.json record, or
    why it did not run (None when not asked for)."""
    if not ctx.settings.open_percent:
        return None
    if ctx.oha is None:
        return {"absent": "oha is not installed (scripts/bootstrap.sh installs it: cargo install oha)"}
    capacity = capacities(rows)
    if not capacity:
        return {"absent": "no closed-loop GET /plaintext sample to take the capacity from"}
    slowest = min(capacity, key=capacity.get)
    rates = {p: capacity[slowest] * p / 100 for p in ctx.settings.open_percent}
    order = []
    for k in range(ctx.settings.invocations):
        for rt in rotate(runtimes, k):
            started = time.monotonic()
            samples = serve_open_invocation(ctx, rt, k, rates, logs / f"{rt}.http-open.{k}.stderr.txt")
            order.append({"runtime": rt, "invocation": k, "elapsed_s": round(time.monotonic() - started, 3)})
            r, l = rows_of(rt, k, ctx.workers, samples)
            rows[rt] += r
            latency[rt] += l
            extras += _sample_extras(rt, k, samples)
    return {"generator": {"name": "oha", "version": oha_version(ctx.oha), "path": ctx.oha,
                          "options": "-q RATE --latency-correction (latency from when each request was due)"},
            "connections": ctx.settings.open_connections, "duration_s": ctx.settings.open_duration_s,
            "load_percent": list(ctx.settings.open_percent), "capacity_rps": capacity, "slowest": slowest,
            "rates_rps": {str(p): round(r, 1) for p, r in rates.items()}, "invocation_order": order}


def http_binary(root: Path, runtime: str, tokio_binary: Path | None = None) -> Path:
    """The program of a runtime's server (tokio: tokio_bench, or the run's `--tokio-bin`)."""
    return Path(default_servers(root, tokio_binary)[runtime][0])
