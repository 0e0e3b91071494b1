"""Coverage of the analysis' 95% intervals under a two-level lognormal model, by simulation (the
real rounds and the bimodal model: scripts/interval_coverage.py, analysis/coverage.py).

    .venv/bin/python scripts/lognormal_coverage.py [--datasets 4000] [--invocations K] [--iterations N]

Model (what a benchmark run looks like to the analysis): for invocation i and iteration j,
log x_ij = mu + b_i + e_ij with b_i ~ N(0, s * sigma^2) between invocations and
e_ij ~ N(0, (1 - s) * sigma^2) within; s is the between-invocation share of the variance.
Both runtimes are drawn from the same model with different mu, so the true ratio of medians is
exp(mu_b - mu_c) and the true ratio of means the same (equal sigma). For each share s the
script draws `datasets` pairs of samples and counts how often each interval contains the true
value:
- ratio of medians (`stats.ratio_ci`, the verdict's interval),
- ratio of means (the echo avg ratio),
- one side's median (the `ns/op [CI]` of the tables; true median exp(mu)),
- one side's mean (the echo avg interval; true mean exp(mu + sigma^2 / 2)).
Defaults: the orchestrator's default invocation count (analysis.bench.DEFAULT_INVOCATIONS
["full"]) and the full profile's iterations (runtime/bench/constants.json). Seeded: the same
arguments give the same table. tests/analysis/test_coverage.py runs it and requires >= 93%.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from analysis import bench, stats  # noqa: E402

SHARES = (0.0, 0.2, 0.4, 0.6, 0.8)
SIGMA = 0.1
SEED = 20261123
INTERVALS = ("ratio of medians", "ratio of means", "median", "mean")


def default_invocations() -> int:
    return int(bench.DEFAULT_INVOCATIONS["full"])


def default_iterations() -> int:
    constants = json.loads((ROOT / "runtime" / "bench" / "constants.json").read_text(encoding="utf-8"))
    return int(constants["profiles"]["full"]["iterations"])


def draw(rng: np.random.Generator, mu: float, share: float, invocations: int, iterations: int) -> list[np.ndarray]:
    between = rng.normal(0.0, SIGMA * math.sqrt(share), invocations)
    within = rng.normal(0.0, SIGMA * math.sqrt(1.0 - share), (invocations, iterations))
    return list(np.exp(mu + between[:, None] + within))


def covered(low: float, high: float, truth: float) -> bool:
    return bool(low <= truth <= high)


def coverage(share: float, invocations: int, iterations: int, datasets: int, confidence: float = 0.95,
             seed: int = SEED) -> dict[str, float]:
    """Share of `datasets` simulated pairs whose interval contains the true value, per interval."""
    rng = np.random.default_rng([seed, int(round(share * 1000)), invocations, iterations])
    mu_b, mu_c = math.log(2000.0), math.log(1000.0)
    hits = dict.fromkeys(INTERVALS, 0)
    for _ in range(datasets):
        b = draw(rng, mu_b, share, invocations, iterations)
        c = draw(rng, mu_c, share, invocations, iterations)
        med = stats.ratio_ci(b, c, "median", confidence)
        avg = stats.ratio_ci(b, c, "mean", confidence)
        side_med = stats.median_centre(c, confidence)
        side_avg = stats.mean_centre(c, confidence)
        hits["ratio of medians"] += covered(med.low, med.high, 2.0)
        hits["ratio of means"] += covered(avg.low, avg.high, 2.0)
        hits["median"] += covered(side_med.low, side_med.high, 1000.0)
        hits["mean"] += covered(side_avg.low, side_avg.high, 1000.0 * math.exp(SIGMA ** 2 / 2))
    return {name: hits[name] / datasets for name in INTERVALS}


def table(invocations: int, iterations: int, datasets: int) -> dict[float, dict[str, float]]:
    return {share: coverage(share, invocations, iterations, datasets) for share in SHARES}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=4000, help="simulated runs per share (default 4000)")
    parser.add_argument("--invocations", type=int, default=None, help="default: DEFAULT_INVOCATIONS['full']")
    parser.add_argument("--iterations", type=int, default=None, help="default: the full profile's iterations")
    args = parser.parse_args()
    k = args.invocations or default_invocations()
    n = args.iterations or default_iterations()
    print(f"coverage of 95% intervals, {k} invocations x {n} iterations per runtime, {args.datasets} datasets per share")
    print("| between-invocation share | " + " | ".join(INTERVALS) + " |")
    print("|---|" + "--:|" * len(INTERVALS))
    for share, row in table(k, n, args.datasets).items():
        print(f"| {share:.0%} | " + " | ".join(f"{row[name]:.1%}" for name in INTERVALS) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
