"""The data contract in code: CSV columns (schema 1 and 2), run schemas 1-3, value rules, benchmark order and tiers.

Mirrors data/README.md and runtime/bench/README.md. Everything that depends on the order of
the CSV columns or on the list of benchmarks reads it from here.
"""

from __future__ import annotations

import re
from typing import Final

#: CSV header of schema 2, in the order the programs write it. The loader matches columns by
#: name, so a file with the same columns in another order reads the same.
CSV_COLUMNS: Final[tuple[str, ...]] = (
    "runtime", "invocation", "suite", "tier", "benchmark", "param",
    "iteration", "ops", "elapsed_ns", "cpu_ns", "workers", "alloc_bytes", "alloc_count",
)
#: Columns that schema 2 added (schema 1 files have neither; a schema-2 file has both).
SCHEMA2_COLUMNS: Final[tuple[str, ...]] = ("cpu_ns", "workers")
#: Schema 1 header: schema 2 without the columns it added.
CSV_COLUMNS_V1: Final[tuple[str, ...]] = tuple(c for c in CSV_COLUMNS if c not in SCHEMA2_COLUMNS)
#: Columns parsed as integers (schema 2; a schema-1 file has those of CSV_COLUMNS_V1).
INT_COLUMNS: Final[tuple[str, ...]] = (
    "invocation", "tier", "iteration", "ops", "elapsed_ns", "cpu_ns", "workers", "alloc_bytes", "alloc_count",
)
#: Inclusive lower bound of every integer column.
INT_MIN: Final[dict[str, int]] = {
    "invocation": 0, "tier": 0, "iteration": 0, "ops": 1, "elapsed_ns": 1, "cpu_ns": 0, "workers": 0,
    "alloc_bytes": 0, "alloc_count": 0,
}
#: Most decimal digits of an integer field (int64 holds every 18-digit number).
INT_DIGITS_MAX: Final[int] = 18
#: Schema versions the loader reads (run.json `schema_version`; absent = 1). Schema 3 keeps the
#: CSV columns of schema 2 and adds to run.json `runtimes` entries (name, versions, `absent`).
SCHEMA_VERSIONS: Final[tuple[int, ...]] = (1, 2, 3)
SCHEMA_VERSION: Final[int] = 3
#: Schema of the CSV header the programs write (schema 3 did not change the CSV columns).
CSV_SCHEMA_VERSION: Final[int] = 2
#: One measured row is identified by these columns; a repeated key is a duplicate row.
ROW_KEY: Final[tuple[str, ...]] = ("runtime", "invocation", "benchmark", "param", "workers", "iteration")
#: A benchmark (one comparison) is identified by these columns. `workers` is <NA> in a schema-1
#: run: group with `dropna=False`.
BENCH_KEY: Final[tuple[str, ...]] = ("suite", "tier", "benchmark", "param", "workers")

SUITES: Final[tuple[str, ...]] = ("micro", "echo", "net", "io", "http")
TIER_RANGE: Final[dict[str, tuple[int, int]]] = {"micro": (0, 4), "echo": (0, 0), "net": (0, 0), "io": (0, 0),
                                                 "http": (0, 0)}
#: Micro-suite tiers that run without a runtime (their rows have workers = 0).
NO_RUNTIME_TIERS: Final[tuple[int, ...]] = (0, 1, 2)
#: Worker count of every echo-suite row (the echo topology is a one-worker runtime).
ECHO_WORKERS: Final[int] = 1

#: A runtime or runtime variant: `ampere`, `tokio`, `ampere.nospin` (base runtime before the dot).
RUNTIME_RE: Final = re.compile(r"[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)?")
BENCHMARK_RE: Final = re.compile(r"[a-z][a-z0-9_]*")
PARAM_RE: Final = re.compile(r"(?:(?:n|size|conns|pairs|tasks|producers|consumers|d_ms|load)=[0-9]+)?")
INT_RE: Final = re.compile(r"-?[0-9]+")
RUN_ID_RE: Final = re.compile(r"(?P<stamp>[0-9]{8}T[0-9]{6}Z)-(?P<host>[A-Za-z0-9._-]+)")


def base_runtime(variant: str) -> str:
    """The runtime a variant runs on: the part before the dot (`ampere.nospin` -> `ampere`)."""
    return variant.split(".", 1)[0]


#: Canonical order of the micro suite, per runtime/bench/README.md.
MICRO_ORDER: Final[tuple[str, ...]] = (
    "floor_cas_store", "floor_fetch_add",
    "mutex", "rwlock_read", "rwlock_write", "semaphore", "oncecell_get", "oncecell_set",
    "notify", "barrier",
    "channel_send", "channel_recv", "channel_roundtrip", "oneshot", "oneshot_owned", "broadcast", "watch",
    "watch_rc", "broadcast_rc",
    "channel_mpmc", "channel_mpsc", "mutex_contended", "rwlock_contended", "semaphore_contended",
    "task_spawn", "task_spawn_batch", "blocking_spawn", "yield_many", "ping_pong", "chained_spawn",
)
ECHO_ORDER: Final[tuple[str, ...]] = (
    "echo_f64", "echo_string_1mib", "echo_bytes_1mib", "echo_bytes_sweep", "echo_shared_sweep",
)
NET_ORDER: Final[tuple[str, ...]] = ("tcp_pingpong", "tcp_echo_conns", "tcp_connect", "tcp_stream")
IO_ORDER: Final[tuple[str, ...]] = (
    "io_mutex_contended", "io_queue_pingpong", "io_fan_in", "io_fan_out", "io_spawn", "io_spawn_group",
    "io_sleep", "io_tcp_pingpong", "io_tcp_echo_conns", "io_tcp_connect",
)
#: The http suite's rows: one per wrk sample of a route at a connection count (`conns=N`).
HTTP_ORDER: Final[tuple[str, ...]] = ("http_plaintext", "http_bytes", "http_plaintext_open")
#: The http suite's open-loop rows (a fixed request rate, `load=` percent of the slowest server's
#: capacity): their time per request is the rate, not a result; their latency percentiles are.
HTTP_OPEN_LOOP: Final[str] = "http_plaintext_open"
SUITE_ORDER: Final[dict[str, tuple[str, ...]]] = {"micro": MICRO_ORDER, "echo": ECHO_ORDER, "net": NET_ORDER,
                                                  "io": IO_ORDER, "http": HTTP_ORDER}

GROUP_TITLES: Final[dict[str, str]] = {
    "micro-0": "Tier 0 — controls (must tie)",
    "micro-1": "Tier 1 — sync fast path",
    "micro-2": "Tier 2 — channel fast path",
    "micro-3": "Tier 3 — async, contended",
    "micro-4": "Tier 4 — task scheduling",
    "echo-0": "Echo — batch round trips",
    "net-0": "Net — TCP over loopback",
    "io-0": "Io — one std.Io program on every implementation",
    "http-0": "Http — a plaintext server under wrk",
}

#: Tiers whose timings become bimodal when the machine has fewer cores than num_workers.
OVERSUBSCRIBED_TIERS: Final[tuple[int, ...]] = (3, 4)
#: Below this many samples per runtime the diagnostics warn (and a 95% median CI is [min, max]).
MIN_SAMPLES: Final[int] = 6

DISPLAY_NAMES: Final[dict[str, str]] = {"tokio": "Tokio", "ampere": "ampere"}

#: Every runtime the lab knows (schema 3), in the order tables list them: Ampere's native API and
#: its variant, Ampere's std.Io, Zig's std.Io.Threaded, the peer zio (its default io_uring build
#: and its epoll build), Tokio.
KNOWN_RUNTIMES: Final[tuple[str, ...]] = ("ampere", "ampere.nospin", "ampere.io", "zig.threaded", "zio", "zio.epoll",
                                           "tokio")
#: The runtimes that implement std.Io and run the io program (the io suite's `std.Io` sides).
STD_IO_RUNTIMES: Final[tuple[str, ...]] = ("ampere.io", "zig.threaded", "zio", "zio.epoll")
#: The io rows Ampere's native API runs (ampere_bench `--suite io`, runtime/bench/io_native.zig):
#: an ampere variant that is not a std.Io side has these and no other io rows (the contract, not
#: a one-sided benchmark: data/README.md).
NATIVE_IO_BENCHMARKS: Final[tuple[str, ...]] = (
    "io_queue_pingpong", "io_fan_in", "io_fan_out", "io_spawn", "io_spawn_group", "io_sleep",
)


def runs_benchmark(runtime: str, suite: str, benchmark: str) -> bool:
    """Whether the contract has `runtime` run `benchmark` of `suite` when it runs that suite at
    all: every benchmark, except the io rows Ampere's native API does not have."""
    if suite == "io" and base_runtime(runtime) == "ampere" and runtime not in STD_IO_RUNTIMES:
        return benchmark in NATIVE_IO_BENCHMARKS
    return True
#: The latency file of the http suite beside `<runtime>.csv` (schema 3): its suffix and columns.
HTTP_SUFFIX: Final[str] = ".http.csv"
HTTP_KEY: Final[tuple[str, ...]] = ("invocation", "benchmark", "param", "iteration")
HTTP_COLUMNS: Final[tuple[str, ...]] = (*HTTP_KEY, "p50_ns", "p90_ns", "p99_ns", "p999_ns", "errors", "non_2xx")


def runtime_rank(runtime: str) -> tuple[int, str]:
    """Sort key of a runtime: KNOWN_RUNTIMES order, unknown names after them by name."""
    rank = KNOWN_RUNTIMES.index(runtime) if runtime in KNOWN_RUNTIMES else len(KNOWN_RUNTIMES)
    return (rank, runtime)


def display_name(runtime: str) -> str:
    """Name of a runtime as the tables print it (the seeds wrote `Tokio` capitalised)."""
    return DISPLAY_NAMES.get(runtime, runtime)


def group_key(suite: str, tier: int) -> str:
    return f"{suite}-{tier}"


def group_title(suite: str, tier: int) -> str:
    return GROUP_TITLES.get(group_key(suite, tier), f"{suite} tier {tier}")


def param_sort_value(param: str) -> int:
    """Numeric value of `n=10` / `size=4096` / `d_ms=10`, -1 for the empty param."""
    if not param:
        return -1
    return int(param.split("=", 1)[1])


def bench_sort_key(suite: str, tier: int, benchmark: str, param: str, workers: object = None) -> tuple:
    """Sort key: micro, echo, net, io; tier; canonical order (unknown names last); param value;
    worker count (not recorded = schema 1 first)."""
    suite_rank = SUITES.index(suite) if suite in SUITES else len(SUITES)
    order = SUITE_ORDER.get(suite, ())
    name_rank = order.index(benchmark) if benchmark in order else len(order)
    return (suite_rank, tier, name_rank, benchmark, param.split("=", 1)[0], param_sort_value(param), _count_or_minus_one(workers))


def _count_or_minus_one(workers: object) -> int:
    """A worker count as an int; -1 for None, NaN or <NA> (not recorded)."""
    try:
        return int(workers)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return -1


#: Benchmarks whose Tokio side is not a Tokio type: their label names what stands in, so that
#: no table or figure shows them as Tokio's (Tokio has no MPMC channel).
STAND_INS: Final[dict[str, str]] = {"channel_mpmc": "async-channel", "io_fan_out": "async-channel"}


def bench_label(benchmark: str, param: str) -> str:
    """`name param`, and `(vs async-channel)` for a benchmark whose Tokio side is another crate."""
    label = f"{benchmark} {param}" if param else benchmark
    return f"{label} (vs {STAND_INS[benchmark]})" if benchmark in STAND_INS else label
