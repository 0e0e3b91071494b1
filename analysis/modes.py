"""Modes of a benchmark row: multimodality within and between invocations, and a warm-up step.

Some rows are not one distribution around a centre: on 2 vCPUs a contended lock either forms a
convoy for a whole invocation or does not, so the invocation medians fall into two groups, and
some rows alternate between two levels from iteration to iteration. A geometric mean over such
a mixture describes neither mode. Here, per runtime:

- **between invocations**: Hartigan's dip test (the `diptest` package, tabulated p-values:
  deterministic) on the log invocation medians;
- **within invocations**: the dip test on the log iterations, each divided by its invocation's
  median (so that invocations at different levels do not look like modes);
- a level is **multimodal** when the two groups of the best split (the threshold that minimises
  the within-group sum of squares of the log values, the exact 1-D two-means split) are at least
  MODE_RATIO apart (medians), the smaller holds at least MIN_MODE_VALUES values and
  MIN_MODE_SHARE of them (thousands of echo batches make a dip test significant for a handful of
  slow batches, which is no mode a verdict should be split by), and the dip test's
  p < DIP_ALPHA; or, for a rare mode, the groups are RARE_MODE_RATIO apart and Ashman's D of the two groups
  (sqrt 2 |m1 - m2| / sqrt(s1^2 + s2^2) on the log scale) is at least ASHMAN_D. The dip test has
  little power against a rare mode (3 of 30 invocations 8x apart: p 0.5); Ashman's D measures
  how cleanly two groups separate (a normal sample split in two gives about 2.7); the share
  floor keeps single preempted iterations (2 of 100 at 6x) out. The effect size keeps the flag for modes that
  matter to a ratio (the dip test alone flags clusters of timer ties).
- each mode: its share of the values with the Clopper-Pearson interval (scipy binomtest) and
  its median. A share is estimated to +-5 percentage points at 95% (near 10%) only from about
  140 values; 100 pooled iterations (10 x 10) give about [5%, 18%] for an observed 10%, and 10
  invocation medians give [0.3%, 45%] for 1 in 10: a between-invocation share needs rounds.
- **verdict** of a multimodal row (`mode_verdict`): the baseline's and the candidate's modes
  are matched fast with fast and slow with slow (a side with one mode meets both modes of the
  other), and the candidate's ratio baseline / candidate of the matched medians decides per
  mode with the tie band: "ampere wins in both modes", "mixed: ampere wins in its fast mode
  (10% of invocations), loses in its slow mode (90%)". No interval: a mode's median over a few
  values is a description, not an estimate with a stated coverage.
- **step change** (`step_change`): a warm-up that leaves a level shift in the measured window.
  Per invocation, the log ratio of the median of the first half of the iterations to that of
  the second half; across invocations the Wilcoxon signed-rank test (scipy) of those shifts.
  Flagged when p < STEP_ALPHA and the median shift is at least STEP_MIN (a relative change).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Sequence

import diptest
import numpy as np
import scipy.stats as st

from . import stats

DIP_ALPHA = 0.01
MODE_RATIO = 1.5
ASHMAN_D = 4.0
RARE_MODE_RATIO = 3.0
MIN_MODE_SHARE = 0.05
MIN_MODE_VALUES = 2
STEP_ALPHA = 0.01
STEP_MIN = 0.10
LEVELS = ("invocations", "iterations")


@dataclass(frozen=True)
class Mode:
    """One mode of a level: its share of the values (with a Clopper-Pearson interval) and median."""

    name: str
    n: int
    share: float
    share_low: float
    share_high: float
    median: float


@dataclass(frozen=True)
class Modes:
    """The modes of one level (`invocations` or `iterations`) of one side."""

    level: str
    n: int
    dip_pvalue: float
    multimodal: bool
    modes: tuple[Mode, ...]


def two_means_split(log_values: np.ndarray) -> int:
    """Index i of the sorted values such that [:i] and [i:] minimise the within-group sum of
    squares (the exact two-means split in one dimension); 0 when fewer than 2 values."""
    x = np.sort(np.asarray(log_values, dtype=np.float64))
    n = x.size
    if n < 2:
        return 0
    i = np.arange(1, n)
    csum, csq = np.cumsum(x)[:-1], np.cumsum(x ** 2)[:-1]
    total, total_sq = x.sum(), (x ** 2).sum()
    left = csq - csum ** 2 / i
    right = (total_sq - csq) - (total - csum) ** 2 / (n - i)
    return int(np.argmin(left + right)) + 1


def ashman_d(a: np.ndarray, b: np.ndarray) -> float:
    """sqrt(2) |mean a - mean b| / sqrt(var a + var b) (inf when both groups are constant)."""
    spread = math.sqrt(float(np.var(a, ddof=1) if a.size > 1 else 0.0) + float(np.var(b, ddof=1) if b.size > 1 else 0.0))
    gap = math.sqrt(2.0) * abs(float(a.mean() - b.mean()))
    return gap / spread if spread > 0 else (math.inf if gap > 0 else 0.0)


def dip_pvalue(values: np.ndarray) -> float:
    """Dip test p-value of unimodality (tabulated, deterministic); NaN below 4 values."""
    x = np.asarray(values, dtype=np.float64)
    if x.size < 4 or np.ptp(x) == 0:
        return math.nan
    _, pvalue = diptest.diptest(x)
    return float(pvalue)


def _mode(name: str, values: np.ndarray, total: int, scale: np.ndarray | None = None) -> Mode:
    ci = st.binomtest(values.size, total).proportion_ci(0.95, method="exact")
    shown = values if scale is None else scale
    return Mode(name, int(values.size), values.size / total, float(ci.low), float(ci.high), float(np.median(shown)))


def _split(x: np.ndarray) -> tuple[bool, float, np.ndarray, int]:
    """(multimodal, dip p-value, sort order, cut) of positive values, tested on the log scale."""
    n = x.size
    logs = np.log(x)
    pvalue = dip_pvalue(logs)
    order = np.argsort(logs, kind="stable")
    cut = two_means_split(logs)
    multimodal = False
    if min(cut, n - cut) >= max(MIN_MODE_VALUES, MIN_MODE_SHARE * n):
        fast, slow = x[order[:cut]], x[order[cut:]]
        apart = float(np.median(slow) / np.median(fast))
        dipped = math.isfinite(pvalue) and pvalue < DIP_ALPHA and apart >= MODE_RATIO
        rare = (apart >= RARE_MODE_RATIO and ashman_d(logs[order[:cut]], logs[order[cut:]]) >= ASHMAN_D)
        multimodal = dipped or rare
    return multimodal, pvalue, order, cut


def find_modes(values: np.ndarray, level: str, shown: np.ndarray | None = None) -> Modes:
    """Modes of positive `values` (tested on the log scale). `shown`: the values whose medians
    are reported per mode (the same order as `values`; default `values`)."""
    x = np.asarray(values, dtype=np.float64).ravel()
    shown = x if shown is None else np.asarray(shown, dtype=np.float64).ravel()
    n = x.size
    if n == 0 or (x <= 0).any():
        return Modes(level, n, math.nan, False, ())
    multimodal, pvalue, order, cut = _split(x)
    if not multimodal:
        return Modes(level, n, pvalue, False, (_mode("all", x, n, shown),))
    fast_i, slow_i = order[:cut], order[cut:]
    return Modes(level, n, pvalue, True, (_mode("fast", x[fast_i], n, shown[fast_i]),
                                          _mode("slow", x[slow_i], n, shown[slow_i])))


def _levels(sample: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(invocation medians, iterations relative to their invocation's median, raw iterations)."""
    groups = [np.asarray(g, dtype=np.float64).ravel() for g in sample if len(g) > 0]
    medians = np.array([np.median(g) for g in groups])
    relative = np.concatenate([g / np.median(g) for g in groups]) if groups else np.empty(0)
    return medians, relative, stats.pooled(groups)


def is_multimodal(sample: Sequence[np.ndarray]) -> bool:
    """Whether side_modes would flag either level of `sample` (without describing the modes)."""
    return any(x.size > 0 and not (x <= 0).any() and _split(x)[0] for x in _levels(sample)[:2])


def side_modes(sample: Sequence[np.ndarray]) -> dict[str, Modes]:
    """Both levels of one side: invocation medians and iterations relative to their invocation
    (the modes of iterations report medians of the raw ns/op)."""
    medians, relative, raw = _levels(sample)
    return {"invocations": find_modes(medians, "invocations"),
            "iterations": find_modes(relative, "iterations", raw)}


def _word(ratio: float, tie_band: float) -> str:
    log = math.log(ratio)
    band = math.log1p(tie_band)
    return "wins" if log > band else "loses" if log < -band else "ties"


def mode_verdict(base: Modes, cand: Modes, candidate: str, tie_band: float = stats.DEFAULT_TIE_BAND) -> str | None:
    """A sentence for a level where either side is multimodal; None when neither is.

    Modes are matched fast with fast and slow with slow; a one-mode side meets both modes of the
    other. Per matched pair the ratio baseline median / candidate median decides with the tie
    band (no interval)."""
    if not (base.multimodal or cand.multimodal) or not base.modes or not cand.modes:
        return None
    names = ("fast", "slow")
    pick = {s: (lambda m, i: m.modes[i] if len(m.modes) == 2 else m.modes[0]) for s in ("b", "c")}
    words = [_word(pick["b"](base, i).median / pick["c"](cand, i).median, tie_band) for i in range(2)]
    unit = "invocations" if cand.level == "invocations" else "iterations"
    owner = cand if cand.multimodal else base
    whose = "its" if cand.multimodal else "the baseline's"
    if words[0] == words[1]:
        return f"{candidate} {words[0]} in both modes ({unit})"
    parts = [f"{w} in {whose} {name} mode ({owner.modes[i].share:.0%} of {unit})"
             for i, (w, name) in enumerate(zip(words, names))]
    return f"mixed: {candidate} " + ", ".join(parts)


@dataclass(frozen=True)
class StepChange:
    """Level shift between the first and the second half of the invocations' iterations."""

    shift: float
    pvalue: float
    flagged: bool


def step_change(sample: Sequence[np.ndarray]) -> StepChange:
    """Median over invocations of median(first half) / median(second half) - 1, with the
    Wilcoxon signed-rank p-value of the per-invocation log shifts (NaN with fewer than 6
    invocations of at least 4 iterations)."""
    shifts = []
    for g in sample:
        x = np.asarray(g, dtype=np.float64).ravel()
        if x.size >= 4 and (x > 0).all():
            half = x.size // 2
            shifts.append(math.log(np.median(x[:half]) / np.median(x[x.size - half:])))
    if len(shifts) < 6 or not np.any(shifts):
        return StepChange(math.nan, math.nan, False)
    d = np.array(shifts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pvalue = float(st.wilcoxon(d).pvalue)
    shift = math.expm1(float(np.median(d)))
    return StepChange(shift, pvalue, bool(pvalue < STEP_ALPHA and abs(shift) >= STEP_MIN))
