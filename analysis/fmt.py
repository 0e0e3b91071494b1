"""Number formatting shared by the CLI tables, the notebooks and the generated documents.

Durations in ns with 3 significant digits and a unit (12.3 ns, 4.56 µs, 7.89 ms, 1.23 s),
amounts per op (0, 0.13, 21.0, 1,064), ratios with 3 decimals and their intervals; a value
that is missing (None, NaN, infinite where a number is expected) is written "—".
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np


def finite(value: Any) -> bool:
    """A real number that is not NaN or infinite (bools and None are not)."""
    if value is None or isinstance(value, bool):
        return False
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def _sig3(value: float) -> str:
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def fmt_ns(value: Any) -> str:
    """A duration in ns with 3 significant digits and a unit: 12.3 ns, 4.56 µs, 7.89 ms, 1.23 s."""
    if not finite(value):
        return "—"
    value = float(value)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(value) >= scale:
            return f"{_sig3(value / scale)} {unit}"
    return f"{_sig3(value)} ns"


def fmt_amount(value: Any) -> str:
    """Bytes or allocations per op: 0, 0.13, 21.0, 1,064."""
    if not finite(value):
        return "—"
    value = float(value)
    if value == 0:
        return "0"
    if value.is_integer():
        return f"{value:,.0f}"
    return _sig3(value)


def fmt_ratio(value: Any) -> str:
    return f"{float(value):.3f}" if finite(value) else "—"


def fmt_ratio_ci(ratio: Any, low: Any, high: Any) -> str:
    """`1.234x [1.100, 1.400]`, `1.234x [no CI]` or `—`."""
    if not finite(ratio):
        return "—"
    if not (finite(low) and finite(high)):
        return f"{float(ratio):.3f}x [no CI]"
    return f"{float(ratio):.3f}x [{float(low):.3f}, {float(high):.3f}]"


def fmt_busy(value: Any) -> str:
    """Cores busy (CPU time / wall time): `1.93` cores, or `—` when not recorded."""
    return f"{float(value):.2f}" if finite(value) else "—"


def fmt_bytes(value: float) -> str:
    for scale, unit in ((2**20, "MiB"), (2**10, "KiB")):
        if value >= scale:
            return f"{value / scale:g} {unit}"
    return f"{value:g} B"


def time_unit(values: Sequence[float] | np.ndarray) -> tuple[float, str]:
    """(divisor, unit) so that the largest finite value reads between 1 and 1000."""
    arr = np.asarray(values, dtype=np.float64)
    arr = arr[np.isfinite(arr)]
    top = float(np.max(np.abs(arr))) if arr.size else 0.0
    for scale, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "µs")):
        if top >= scale:
            return scale, unit
    return 1.0, "ns"


def md_escape(text: Any) -> str:
    """Escape the characters markdown would interpret in table cells and lists."""
    out = str(text)
    for char in ("\\", "|", "*", "_", "`", "<", ">", "[", "]"):
        out = out.replace(char, "\\" + char)
    return out
