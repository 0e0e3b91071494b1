"""The data contract in code: CSV columns, value rules, benchmark order and tiers.

Mirrors data/README.md and runtime/bench/README.md. Everything that depends on the order of
the CSV columns or on the list of benchmarks reads it from here.
"""

from __future__ import annotations

import re
from typing import Final

#: CSV header, in the exact order the contract requires.
CSV_COLUMNS: Final[tuple[str, ...]] = (
    "runtime", "invocation", "suite", "tier", "benchmark", "param",
    "iteration", "ops", "elapsed_ns", "alloc_bytes", "alloc_count",
)
INT_COLUMNS: Final[tuple[str, ...]] = (
    "invocation", "tier", "iteration", "ops", "elapsed_ns", "alloc_bytes", "alloc_count",
)
#: Inclusive lower bound of every integer column.
INT_MIN: Final[dict[str, int]] = {
    "invocation": 0, "tier": 0, "iteration": 0, "ops": 1, "elapsed_ns": 1,
    "alloc_bytes": 0, "alloc_count": 0,
}
#: One measured row is identified by these columns; a repeated key is a duplicate row.
ROW_KEY: Final[tuple[str, ...]] = ("runtime", "invocation", "benchmark", "param", "iteration")
#: A benchmark (one comparison) is identified by these columns.
BENCH_KEY: Final[tuple[str, ...]] = ("suite", "tier", "benchmark", "param")

SUITES: Final[tuple[str, ...]] = ("micro", "echo")
TIER_RANGE: Final[dict[str, tuple[int, int]]] = {"micro": (0, 4), "echo": (0, 0)}

RUNTIME_RE: Final = re.compile(r"[a-z][a-z0-9_]*")
BENCHMARK_RE: Final = re.compile(r"[a-z][a-z0-9_]*")
PARAM_RE: Final = re.compile(r"(?:(?:n|size)=[0-9]+)?")
INT_RE: Final = re.compile(r"-?[0-9]+")
RUN_ID_RE: Final = re.compile(r"(?P<stamp>[0-9]{8}T[0-9]{6}Z)-(?P<host>[A-Za-z0-9._-]+)")

#: Canonical order of the micro suite, per runtime/bench/README.md.
MICRO_ORDER: Final[tuple[str, ...]] = (
    "floor_cas_store", "floor_fetch_add",
    "mutex", "rwlock_read", "rwlock_write", "semaphore", "oncecell_get", "oncecell_set",
    "notify", "barrier",
    "channel_send", "channel_recv", "channel_roundtrip", "oneshot", "broadcast", "watch",
    "watch_rc", "broadcast_rc",
    "channel_mpmc", "channel_mpsc", "mutex_contended", "rwlock_contended", "semaphore_contended",
    "task_spawn", "task_spawn_batch", "blocking_spawn", "yield_many", "ping_pong", "chained_spawn",
)
ECHO_ORDER: Final[tuple[str, ...]] = (
    "echo_f64", "echo_string_1mib", "echo_bytes_1mib", "echo_bytes_sweep", "echo_shared_sweep",
)

GROUP_TITLES: Final[dict[str, str]] = {
    "micro-0": "Tier 0 — controls (must tie)",
    "micro-1": "Tier 1 — sync fast path",
    "micro-2": "Tier 2 — channel fast path",
    "micro-3": "Tier 3 — async, contended",
    "micro-4": "Tier 4 — task scheduling",
    "echo-0": "Echo — batch round trips",
}

#: Tiers whose timings become bimodal when the machine has fewer cores than num_workers.
OVERSUBSCRIBED_TIERS: Final[tuple[int, ...]] = (3, 4)
#: Below this many samples per runtime the diagnostics warn (and a 95% median CI is [min, max]).
MIN_SAMPLES: Final[int] = 6

DISPLAY_NAMES: Final[dict[str, str]] = {"tokio": "Tokio", "ampere": "ampere"}


def display_name(runtime: str) -> str:
    """Name of a runtime as the tables print it (the seeds wrote `Tokio` capitalised)."""
    return DISPLAY_NAMES.get(runtime, runtime)


def group_key(suite: str, tier: int) -> str:
    return f"{suite}-{tier}"


def group_title(suite: str, tier: int) -> str:
    return GROUP_TITLES.get(group_key(suite, tier), f"{suite} tier {tier}")


def param_sort_value(param: str) -> int:
    """Numeric value of `n=10` / `size=4096`, -1 for the empty param."""
    if not param:
        return -1
    return int(param.split("=", 1)[1])


def bench_sort_key(suite: str, tier: int, benchmark: str, param: str) -> tuple:
    """Sort key: micro before echo, tier, canonical order (unknown names last), param value."""
    suite_rank = SUITES.index(suite) if suite in SUITES else len(SUITES)
    order = MICRO_ORDER if suite == "micro" else ECHO_ORDER
    name_rank = order.index(benchmark) if benchmark in order else len(order)
    return (suite_rank, tier, name_rank, benchmark, param.split("=", 1)[0], param_sort_value(param))


def bench_label(benchmark: str, param: str) -> str:
    return f"{benchmark} {param}" if param else benchmark
