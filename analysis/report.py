"""`python -m analysis report`: execute the notebooks for one run and render them to HTML.

    python -m analysis report [RUN] [--data-dir D] [--out-dir reports]
                              [--notebooks overview,distributions,echo,net,io,http,scaling,machines,history]

Steps
1. Load and validate the run (`latest` by default) with the analysis loader, and check the
   options (notebook names, kernel, runtimes): a bad run id, a folder that is not a complete
   run or a bad option is a one-line `error:` (exit 2), before any notebook runs.
2. Compare the run once (every candidate against the baseline, artefact.py) into
   `<out>/<run_id>/comparison.json`, or reuse that file when it was made from the same data,
   code and options; print `==> [report] comparison`.
3. For each notebook of notebooks/ (in the order given), print `==> [report] <name>.ipynb`,
   execute it with papermill in a kernel of this interpreter, with the parameters
   data_dir / run_id (pinned to the resolved run, never `latest`) / report_dir (the absolute
   out folder, where the notebook finds comparison.json) / baseline / candidate / tie_band /
   confidence, into `<out>/<run_id>/<name>.ipynb`, then export it with nbconvert to
   `<out>/<run_id>/<name>.html`: code cells hidden, images embedded as data: URIs, and no
   external resource at all (the lab template without require.js, MathJax, mermaid or widget
   scripts), so a report opens offline and can be mailed as one file.
4. Write `<out>/<run_id>/index.html` from the same comparisons: the run's summary (id, date,
   machine, verdict counts, geometric mean ratios in words) and a link to every report; print
   its path as the last line.

Every file is written under a temporary name in the same folder and renamed into place
(papermill writes its progress to a temporary `.ipynb`; it becomes `<name>.ipynb` only when
the notebook finished). A notebook that raises stops the command with one line,
`error: report: notebooks/<name>.ipynb cell <N>: <Error>: <message>`, exit code 1, no
traceback; the partly executed notebook is kept as `<name>.failed.ipynb` for inspection
(cell N is its `[N]` execution count).

Kernel: `ampere-lab` (registered by the bootstrap with `ipykernel install --sys-prefix`) when
it runs this interpreter, else `python3` when that runs this interpreter (jupyter_client starts
a spec whose argv[0] is plain `python` with sys.executable), else `ampere-lab` is registered on
the fly with `--sys-prefix`, so a fresh machine works. The kernel is started with the repository
on PYTHONPATH (the notebooks import `analysis` even when the package is not installed), without
an inherited MPLBACKEND (figures must be inline PNGs), and with its own stdout/stderr going to
`<out>/<run_id>/logs/<name>.kernel.txt` instead of the terminal (an absolute path: papermill
runs the kernel in notebooks/, and a relative one would land in notebooks/reports/).

The Jupyter stack (papermill, nbconvert, nbformat, jupyter_client) takes about 1.7 s to import
and only this command needs it, while the CLI registers this module on every command: the
functions that use it import it (third-party modules only; package modules are imported at the
top, tests/analysis/test_layers.py).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from . import artefact, httpsuite, stats
from .errors import AnalysisError
from .files import file_mode, write_text_atomic
from .index_page import Page, index_html
from .load import load_run, resolve_data_dir
from .options import positive_float

REPO_ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = REPO_ROOT / "notebooks"
NOTEBOOKS: tuple[str, ...] = ("overview", "distributions", "echo", "net", "io", "http", "scaling", "machines", "history")
KERNEL_NAME = "ampere-lab"
KERNEL_DISPLAY_NAME = "Ampere lab (.venv)"
#: Longest a single notebook cell may run before the report gives up (a hang is a failure).
CELL_TIMEOUT_S = 1200
KERNEL_START_TIMEOUT_S = 120
PLAIN_PYTHON_NAMES = {"python", f"python{sys.version_info[0]}", f"python{sys.version_info[0]}.{sys.version_info[1]}"}

#: nbconvert template: JupyterLab look without any script or stylesheet loaded from the network.
TEMPLATE_NAME = "ampere_report.html.j2"
TEMPLATE = r"""{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block extra_css -%}
<style type="text/css">
  body.jp-Notebook { max-width: 1400px; margin: 0 auto; }
  nav.ampere-nav { font-family: system-ui, sans-serif; font-size: 14px; padding: 8px 16px;
                   border-bottom: 1px solid #ddd; }
  .jp-RenderedHTMLCommon table { font-size: 12px; }
  .jp-RenderedImage img { max-width: 100%; height: auto; }
</style>
{%- endblock extra_css -%}
{%- block body_header -%}
{{ super() }}
<nav class="ampere-nav"><a href="index.html">&larr; all reports of this run</a></nav>
{%- endblock body_header -%}
"""


class NotebookFailed(Exception):
    """A notebook raised while executing (or its kernel died); str() is the one-line message."""


# -- small helpers ----------------------------------------------------------------------------

def display_path(path: Path) -> str:
    """`path` relative to the current directory when it is inside it, else absolute."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(Path(path).resolve())


def one_line(text: Any, limit: int = 300) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# -- kernel -----------------------------------------------------------------------------------

def _runs_this_python(argv: Sequence[str]) -> bool:
    """Whether a kernel spec's argv starts this interpreter (or a name jupyter_client maps to it)."""
    if not argv:
        return False
    first = argv[0]
    if first in PLAIN_PYTHON_NAMES:
        return True  # jupyter_client replaces a bare python / python3 with sys.executable
    here = Path(os.path.abspath(sys.executable))
    there = Path(os.path.abspath(first))
    return there == here or (there.parent == here.parent and there.name.startswith("python"))


def pick_kernel(register: bool = True) -> str:
    """Name of a kernel that runs this interpreter (see the module doc for the order)."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    manager = KernelSpecManager()
    for name in (KERNEL_NAME, "python3"):
        try:
            spec = manager.get_kernel_spec(name)
        except NoSuchKernel:
            continue
        if _runs_this_python(spec.argv):
            return name
    if not register:
        raise AnalysisError(f"no Jupyter kernel runs {sys.executable}; register one with "
                            f"`{sys.executable} -m ipykernel install --sys-prefix --name {KERNEL_NAME}`")
    command = [sys.executable, "-m", "ipykernel", "install", "--sys-prefix", "--name", KERNEL_NAME,
               "--display-name", KERNEL_DISPLAY_NAME]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise AnalysisError(f"registering the Jupyter kernel failed ({' '.join(command)}): "
                            f"{one_line(done.stderr or done.stdout)}")
    return KERNEL_NAME


def check_kernel(name: str) -> str:
    """`name` if a kernel spec of that name exists, else a one-line AnalysisError."""
    from jupyter_client.kernelspec import KernelSpecManager

    known = KernelSpecManager().find_kernel_specs()
    if name not in known:
        raise AnalysisError(f"--kernel {name}: no such Jupyter kernel (installed: {', '.join(sorted(known)) or 'none'})")
    return name


def kernel_manager_class(log_path: Path, cwd: Path) -> type:
    """An AsyncKernelManager that starts the kernel in `cwd` with our environment and a log file.

    The kernel's working folder is set here rather than by papermill's `cwd`, which changes the
    working folder of this whole process and so cannot run two notebooks at once.
    """
    from jupyter_client import AsyncKernelManager

    class ReportKernelManager(AsyncKernelManager):  # type: ignore[misc, valid-type]
        async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
            kw["cwd"] = str(cwd)
            env = dict(kw.get("env") or os.environ)
            paths = [str(REPO_ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
            env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
            env.pop("MPLBACKEND", None)  # an inherited Agg backend would drop every figure
            kw["env"] = env
            log_path.parent.mkdir(parents=True, exist_ok=True)
            log = open(log_path, "ab")  # noqa: SIM115 - owned by the kernel process until it exits
            kw["stdout"] = log
            kw["stderr"] = log
            try:
                await super()._async_launch_kernel(kernel_cmd, **kw)
            finally:
                log.close()  # the child holds its own descriptor

    return ReportKernelManager


# -- executing and exporting ------------------------------------------------------------------

def _failed_cell(nb_path: Path) -> str:
    """Execution count of the cell papermill marked running/failed in a partial output ("?")."""
    import nbformat

    try:
        nb = nbformat.read(str(nb_path), as_version=4)
    except Exception:  # noqa: BLE001 - the partial notebook may be unreadable; say "?"
        return "?"
    for index, cell in enumerate(nb.cells):
        status = cell.get("metadata", {}).get("papermill", {}).get("status")
        if status in ("running", "failed"):
            count = cell.get("execution_count")
            return str(count) if count else f"#{index}"
    return "?"


def execute_notebook(source: Path, target: Path, parameters: dict[str, Any], kernel: str, cwd: Path,
                     log_path: Path) -> None:
    """Run `source` with papermill into `target` (atomically); NotebookFailed on any failure."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.stem}.", suffix=".ipynb", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    failed = target.with_name(f"{target.stem}.failed.ipynb")
    try:
        _execute(source, tmp, target, failed, parameters, kernel, cwd, log_path)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()  # still there only when interrupted: never leave a half-written notebook
    with contextlib.suppress(OSError):
        failed.unlink()


def _execute(source: Path, tmp: Path, target: Path, failed: Path, parameters: dict[str, Any],
             kernel: str, cwd: Path, log_path: Path) -> None:
    """papermill into `tmp`, then rename to `target`; on failure `tmp` becomes `failed`."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    shown = display_path(source)
    try:
        papermill.execute_notebook(
            str(source), str(tmp), parameters=parameters, kernel_name=kernel, progress_bar=False, log_output=False,
            start_timeout=KERNEL_START_TIMEOUT_S, execution_timeout=CELL_TIMEOUT_S,
            kernel_manager_class=kernel_manager_class(log_path, cwd))
    except PapermillExecutionError as exc:
        os.replace(tmp, failed)
        cell = exc.exec_count if exc.exec_count is not None else f"#{exc.cell_index}"
        raise NotebookFailed(f"report: {shown} cell {cell}: {exc.ename}: {one_line(exc.evalue)} "
                             f"(executed notebook: {display_path(failed)})") from None
    except Exception as exc:  # kernel died, timed out, missing kernel, unreadable notebook
        if tmp.exists() and tmp.stat().st_size > 0:
            os.replace(tmp, failed)
            where = f"cell {_failed_cell(failed)}: "
        else:
            with contextlib.suppress(OSError):
                tmp.unlink()
            where = ""
        raise NotebookFailed(f"report: {shown} {where}{type(exc).__name__}: {one_line(exc) or 'no message'} "
                             f"(kernel log: {display_path(log_path)})") from None
    os.chmod(tmp, file_mode())
    os.replace(tmp, target)


def html_exporter() -> Any:
    """nbconvert HTMLExporter: code hidden, prompts hidden, parameter cells removed, offline."""
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter
    from nbconvert.preprocessors import TagRemovePreprocessor

    exporter = HTMLExporter(template_name="lab", extra_loaders=[DictLoader({TEMPLATE_NAME: TEMPLATE})],
                            template_file=TEMPLATE_NAME, exclude_input=True, exclude_input_prompt=True,
                            exclude_output_prompt=True, embed_images=True)
    remove = TagRemovePreprocessor(remove_cell_tags={"parameters", "injected-parameters"}, enabled=True)
    exporter.register_preprocessor(remove, enabled=True)
    return exporter


def export_html(notebook: Path, target: Path) -> None:
    import nbformat

    nb = nbformat.read(str(notebook), as_version=4)
    body, _ = html_exporter().from_notebook_node(nb, resources={"metadata": {"name": notebook.stem}})
    write_text_atomic(target, body)


# -- the command ------------------------------------------------------------------------------

def parse_notebooks(text: str, notebook_dir: Path) -> list[str]:
    names = [n.strip().removesuffix(".ipynb") for n in text.split(",") if n.strip()]
    if not names:
        raise AnalysisError("--notebooks: give at least one notebook name")
    if len(set(names)) != len(names):
        raise AnalysisError(f"--notebooks {text!r}: a notebook is listed twice")
    for name in names:
        if not (notebook_dir / f"{name}.ipynb").is_file():
            known = ", ".join(sorted(p.stem for p in notebook_dir.glob("*.ipynb"))) or "none"
            raise AnalysisError(f"--notebooks: no notebook {display_path(notebook_dir / (name + '.ipynb'))} "
                                f"(available: {known})")
    return names


def _notebook_target(run: Any, data_dir: str | Path | None) -> tuple[str, str]:
    """(data_dir, run_id) parameters that make the notebook load exactly this run."""
    folder = Path(run.path).resolve()
    if folder.parent.name == "runs":
        return str(folder.parent.parent), folder.name
    return str(Path(resolve_data_dir(data_dir)).resolve()), str(folder)


def build_report(run_spec: str = "latest", data_dir: str | Path | None = None, out_dir: str | Path = "reports",
                 notebooks: Sequence[str] = NOTEBOOKS, notebook_dir: Path = NOTEBOOK_DIR,
                 baseline: str = "tokio", candidate: str = "ampere", tie_band: float = stats.DEFAULT_TIE_BAND,
                 confidence: float = stats.DEFAULT_CONFIDENCE, kernel: str | None = None,
                 progress: Callable[[str], None] = print, command: str = "python -m analysis report",
                 jobs: int = 1) -> Path:
    """Compare the run once, then execute and export every notebook (`jobs` at a time); returns
    the path of index.html.

    Raises AnalysisError for bad input (run, names, options) and NotebookFailed when a notebook
    fails (no further notebook starts; those running finish).
    """
    if jobs < 1:
        raise AnalysisError(f"--jobs must be >= 1, got {jobs}")
    run = load_run(run_spec, data_dir)
    if baseline == candidate:
        raise AnalysisError(f"baseline and candidate are both {baseline!r}")
    if not {baseline, candidate} & set(run.runtimes):
        raise AnalysisError(f"run {run.run_id} has no {baseline} or {candidate} data "
                            f"(runtimes: {', '.join(run.runtimes)})")
    kernel = check_kernel(kernel) if kernel else pick_kernel()
    out = Path(out_dir).resolve()
    target = out / run.run_id
    progress("==> [report] comparison")
    started = time.monotonic()
    result = artefact.comparisons(run, out, baseline, candidate, tie_band, confidence)
    progress(f"    {display_path(artefact.path_for(out, run.run_id))} ({time.monotonic() - started:.1f} s, "
             f"{', '.join(result.comparisons)} against {baseline})")
    nb_data_dir, nb_run_id = _notebook_target(run, data_dir)
    parameters = {"data_dir": nb_data_dir, "run_id": nb_run_id, "report_dir": str(out), "baseline": baseline,
                  "candidate": candidate, "tie_band": float(tie_band), "confidence": float(confidence)}
    lock = threading.Lock()

    def say(line: str) -> None:
        with lock:  # notebooks run in threads: one whole line at a time
            progress(line)

    def render_page(name: str) -> Page:
        say(f"==> [report] {name}.ipynb")
        started = time.monotonic()
        executed = target / f"{name}.ipynb"
        execute_notebook(Path(notebook_dir) / f"{name}.ipynb", executed, parameters, kernel,
                         cwd=Path(notebook_dir).resolve(), log_path=target / "logs" / f"{name}.kernel.txt")
        page = target / f"{name}.html"
        export_html(executed, page)
        done = Page(name=name, html=page, notebook=executed, seconds=time.monotonic() - started)
        say(f"    {display_path(page)} ({done.seconds:.1f} s)")
        return done

    pages = run_pages(render_page, notebooks, jobs)
    index = target / "index.html"
    http = httpsuite.summary(run, confidence) if httpsuite.has_http(run) else None
    write_text_atomic(index, index_html(result, pages, command, display_path(run.path), http))
    return index


def run_pages(render_page: Callable[[str], Page], names: Sequence[str], jobs: int) -> list[Page]:
    """render_page for every name, `jobs` at a time; pages in the order of `names`.

    Each notebook runs in its own kernel process, so two jobs use two cores. On the first
    failure no further notebook starts; the first failure in `names` order is raised.
    """
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(render_page, name) for name in names]
        for future in concurrent.futures.as_completed(futures):
            if future.exception() is not None:
                for other in futures:
                    other.cancel()
                break
    for future in futures:
        if not future.cancelled() and future.exception() is not None:
            raise future.exception()  # type: ignore[misc]
    return [future.result() for future in futures]


def default_jobs(count: int) -> int:
    """Notebooks at once: one per core, at most one per notebook."""
    return max(1, min(count, os.cpu_count() or 1))


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("report", parents=[common], help="execute the notebooks for a run and render HTML reports",
                       description="Execute notebooks/*.ipynb with papermill for one run and export them to "
                                   "self-contained HTML in <out-dir>/<run_id>/, with an index.html.")
    p.add_argument("run", nargs="?", default="latest", help="run id, run folder path, or latest (default)")
    p.add_argument("--out-dir", default="reports", help="where <run_id>/ is written (default: reports)")
    p.add_argument("--notebooks", default=",".join(NOTEBOOKS),
                   help=f"comma-separated notebook names (default: {','.join(NOTEBOOKS)})")
    p.add_argument("--notebook-dir", default=str(NOTEBOOK_DIR), help="folder of the notebooks (default: notebooks/)")
    p.add_argument("--baseline", default="tokio")
    p.add_argument("--candidate", default="ampere")
    p.add_argument("--tie-band", type=positive_float, default=stats.DEFAULT_TIE_BAND,
                   help="ratios within [1/(1+band), 1+band] count as ties (default 0.05)")
    p.add_argument("--confidence", type=positive_float, default=stats.DEFAULT_CONFIDENCE,
                   help="confidence level of every interval (default 0.95)")
    p.add_argument("--kernel", default=None, help=f"Jupyter kernel name (default: {KERNEL_NAME}, see the docs)")
    p.add_argument("--jobs", type=int, default=None,
                   help="notebooks executed at once (default: one per core, at most one per notebook)")
    p.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    notebook_dir = Path(args.notebook_dir)
    if not notebook_dir.is_dir():
        raise AnalysisError(f"--notebook-dir {args.notebook_dir}: no such folder")
    names = parse_notebooks(args.notebooks, notebook_dir)
    command = "python -m analysis report " + " ".join(sys.argv[2:]) if len(sys.argv) > 2 else "python -m analysis report"
    try:
        index = build_report(args.run, data_dir=args.data_dir, out_dir=args.out_dir, notebooks=names,
                             notebook_dir=notebook_dir, baseline=args.baseline, candidate=args.candidate,
                             tie_band=args.tie_band, confidence=args.confidence, kernel=args.kernel,
                             progress=lambda line: print(line, flush=True), command=command,
                             jobs=args.jobs if args.jobs is not None else default_jobs(len(names)))
    except NotebookFailed as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 1
    print(f"==> [report] index: {len(names)} report(s)", flush=True)
    print(display_path(index), flush=True)
    return 0
