"""What every notebook does first: find the run, load it and its cached comparisons, set up the
figures, and show notes (never stderr text, which the report's browser test treats as an error).

    page = notebook.open_page(data_dir, run_id, report_dir, baseline, candidate, tie_band, confidence)
    page.run            # load.Run: the raw rows (the distributions page plots them)
    page.comparisons    # artefact.RunComparisons: the run's comparisons, computed once per run
    page.notes          # runs skipped on the way to `latest`, as sentences

`python -m analysis report` computes the comparisons before the notebooks run, so every page
loads the same file; a notebook opened in JupyterLab computes and writes it on first use.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import artefact
from .artefact import RunComparisons
from .fmt import md_escape
from .load import Run, load_run, run_history

REPO_ROOT = Path(__file__).resolve().parent.parent


def resolve_folder(folder: str | os.PathLike[str]) -> Path:
    """A folder a notebook parameter names (data_dir, report_dir), as an absolute path.

    Absolute paths are kept. A relative path is taken from the current directory when it exists
    there, else from the repository root: `make lab` starts kernels in notebooks/, papermill in
    the folder the report command chooses, and both must find `data` and `reports`.
    """
    path = Path(folder)
    if path.is_absolute():
        return path
    if path.exists():
        return path.resolve()
    return (REPO_ROOT / path).resolve()


def setup_matplotlib() -> None:
    """One look for every notebook figure (sizes readable in the HTML report).

    In IPython it also turns on the inline backend, which registers the PNG display of
    `Figure` objects: without it a figure would be shown as its text repr.
    """
    import matplotlib
    from IPython import get_ipython

    shell = get_ipython()
    if shell is not None:
        shell.run_line_magic("matplotlib", "inline")
        shell.run_line_magic("config", "InlineBackend.figure_formats = ['png']")
        # every figure lays itself out (constrained layout): no second draw for a tight bounding box
        shell.run_line_magic("config", "InlineBackend.print_figure_kwargs = {'bbox_inches': None}")
    matplotlib.rcParams.update({
        "figure.dpi": 100, "savefig.dpi": 100, "font.size": 10, "axes.titlesize": 11,
        "axes.titleweight": "bold", "figure.titlesize": 13, "figure.titleweight": "bold",
        "axes.grid": True, "grid.alpha": 0.3, "legend.fontsize": 9, "legend.framealpha": 0.9,
    })


def show_markdown(text: str) -> None:
    from IPython.display import Markdown, display

    display(Markdown(text))


def bullets(lines: list[str], escape: bool = False) -> str:
    return "\n".join(f"- {md_escape(line) if escape else line}" for line in lines)


def show_warnings_as_notes() -> None:
    """Show Python warnings (matplotlib, pandas) as visible notes in the cell, not on stderr."""
    def showwarning(message: Any, category: type, filename: str, lineno: int, file: Any = None,
                    line: Any = None) -> None:
        show_markdown(f"**Note:** {category.__name__}: {md_escape(message)}")

    warnings.showwarning = showwarning


@dataclass
class Page:
    run: Run
    comparisons: RunComparisons
    notes: list[str] = field(default_factory=list)


def resolve_run(data_dir: Path, run_id: str) -> tuple[str | Path, list[str]]:
    """The run to load and notes on the folders skipped: `latest` is the newest complete run
    (run_history records, so skipped folders become notes instead of stderr warnings)."""
    if run_id != "latest":
        return run_id, []
    history = run_history(data_dir, validate=False)
    complete = history[history["status"] == "complete"]
    if complete.empty:
        return run_id, []  # load_run raises its one-line error
    newest = complete.iloc[-1]
    newer = history.iloc[history.index.get_loc(complete.index[-1]) + 1:]
    notes = [f"{r.run_id} skipped: {r.status}" + (f" ({r.reason})" if isinstance(r.reason, str) else "")
             for r in newer.itertuples()]
    return Path(newest["path"]), notes


def open_page(data_dir: str | os.PathLike[str], run_id: str, report_dir: str | os.PathLike[str], baseline: str,
              candidate: str, tie_band: float, confidence: float) -> Page:
    """Load the run and its comparisons (cached in `<report_dir>/<run_id>/`, see artefact.py)."""
    data = resolve_folder(data_dir)
    spec, notes = resolve_run(data, run_id)
    run = load_run(spec, data_dir=data)
    result = artefact.comparisons(run, resolve_folder(report_dir), baseline, candidate, tie_band, confidence)
    return Page(run=run, comparisons=result, notes=notes)
