"""Command-line options shared by several subcommands (compare, diff, bench, report)."""

from __future__ import annotations

import argparse

from . import stats


def positive_float(text: str) -> float:
    """argparse type: a number (its range is checked where it is used, with a one-line error)."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def add_stat_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tie-band", type=positive_float, default=stats.DEFAULT_TIE_BAND,
                        help="ratios within [1/(1+band), 1+band] count as ties (default 0.05)")
    parser.add_argument("--confidence", type=positive_float, default=stats.DEFAULT_CONFIDENCE,
                        help="confidence level of every interval (default 0.95)")
