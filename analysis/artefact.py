"""The comparisons of one run, computed once and kept in its report folder.

`python -m analysis report` computes them before any notebook runs and writes
`<report dir>/<run_id>/comparison.json`; every notebook and the index load that file instead
of comparing again. A notebook run on its own (JupyterLab) computes and writes it on first use.

What is in it (`RunComparisons`): the run's run.json, meta.json blocks, runtimes and variants,
the machine table, and one `Comparison` per candidate: the primary candidate (e.g. `ampere`)
first, then every other runtime of the run (e.g. `ampere.nospin`), each against the baseline.

`peers`: ampere.io against each zio build (PEER_PAIRS, the io suite only), the verdicts per io
cell that the io page and the index count (issue 43: a tally of cells comes from verdicts, not
from point estimates against the band).

When it is used: only when its key matches — the run's files (a hash of run.json, every CSV
and meta.json), the analysis code the numbers come from (a hash of those source files and of
the fairness table), baseline, candidates, tie band and confidence. Otherwise it is computed
again and replaced (written atomically). The file is plain JSON (frames as columns with their
dtypes; NaN and infinities as JSON's NaN / Infinity tokens), so a reader can inspect it.

The history page's diffs (one runtime in two consecutive runs, compare.diff_runs) are cached
the same way, one file per pair: `<report dir>/history/<run_a>..<run_b>.<runtime>.json`, used
only while its key matches (the files of both runs, the analysis code, runtime, tie band and
confidence). `cached_comparisons` and `cached_diff` take a run folder and load the run only
when the file must be computed, so a history page whose comparisons are all cached reads no CSV.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import fairness, load, stats
from .compare import Comparison, compare, diff_runs
from .summary import summarize
from .errors import AnalysisError
from .files import write_text_atomic
from .load import Run, machine_table

FILE_NAME = "comparison.json"
FORMAT = 2
#: Folder (under the report dir) of the cached history diffs, and their format.
HISTORY_DIR = "history"
DIFF_FORMAT = 1
#: The modules whose code decides the numbers in the file (a change invalidates it).
SOURCES = ("stats", "ranks", "benchmarks", "diagnostics", "sanity", "summary", "compare", "schema", "load", "bench_csv", "span", "span_cpu",
           "fairness", "artefact", "modes")
FRAMES = ("benchmarks", "runtimes", "invocations", "echo", "diagnostics", "modes")
#: (baseline, candidate) pairs compared directly in the io suite when the run has both: Ampere's
#: std.Io against each build of the peer zio, one build at a time (never the faster per cell).
PEER_PAIRS: tuple[tuple[str, str], ...] = (("zio", "ampere.io"), ("zio.epoll", "ampere.io"))


@dataclass
class RunComparisons:
    """Everything the report pages of one run need, without its raw rows."""

    run_id: str
    run_path: str
    info: dict[str, Any]
    meta: dict[str, dict[str, Any]]
    runtimes: tuple[str, ...]
    variants: dict[str, dict[str, Any]]
    schema_version: int
    machine: pd.DataFrame
    baseline: str
    comparisons: dict[str, Comparison]
    #: "baseline:candidate" -> that pair's comparison restricted to the io suite (PEER_PAIRS)
    peers: dict[str, Comparison] = field(default_factory=dict)

    @property
    def primary(self) -> Comparison:
        """The comparison of the first candidate (the one the report was asked for)."""
        return next(iter(self.comparisons.values()))

    @property
    def constants(self) -> dict[str, Any]:
        return dict(self.info.get("constants") or {})


def candidates_of(run: Run, baseline: str, candidate: str) -> list[str]:
    """`candidate` first, then every other runtime of the run except the baseline."""
    return [candidate] + [rt for rt in run.runtimes if rt not in (baseline, candidate)]


def compute(run: Run, baseline: str, candidate: str, tie_band: float, confidence: float) -> RunComparisons:
    """Compare every candidate of the run with the baseline (see candidates_of)."""
    comparisons = {name: compare(run, baseline, name, tie_band, confidence)
                   for name in candidates_of(run, baseline, candidate)}
    return RunComparisons(run_id=run.run_id, run_path=str(run.path), info=run.info, meta=run.meta,
                          runtimes=run.runtimes, variants=run.variants, schema_version=run.schema_version,
                          machine=machine_table(run), baseline=baseline, comparisons=comparisons,
                          peers=peer_comparisons(run, tie_band, confidence))


def peer_key(baseline: str, candidate: str) -> str:
    return f"{baseline}:{candidate}"


def peer_comparisons(run: Run, tie_band: float, confidence: float) -> dict[str, Comparison]:
    """Every PEER_PAIRS comparison the run has both sides of, on its io rows only."""
    out = {}
    for baseline, candidate in PEER_PAIRS:
        if baseline in run.runtimes and candidate in run.runtimes:
            cmp = compare(run, baseline, candidate, tie_band, confidence)
            io = cmp.benchmarks["suite"] == "io"
            # the same std.Io program on both sides: every io row is like for like (the fairness
            # table's `no:` rows are about Tokio's twins)
            cmp.benchmarks = cmp.benchmarks[io].reset_index(drop=True).assign(like_for_like=True, semantics_note="")
            cmp.summary = summarize(cmp.benchmarks, (baseline, candidate), confidence, True, tie_band)
            cmp.runtimes = cmp.runtimes[cmp.runtimes["suite"] == "io"].reset_index(drop=True)
            cmp.invocations = cmp.invocations[cmp.invocations["suite"] == "io"].reset_index(drop=True)
            cmp.modes = cmp.modes[cmp.modes["suite"] == "io"].reset_index(drop=True)
            cmp.diagnostics = cmp.diagnostics.iloc[0:0]
            out[peer_key(baseline, candidate)] = cmp
    return out


# -- the key --------------------------------------------------------------------------------

def _digest(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for path in paths:
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def run_fingerprint(folder: Path) -> str:
    """Hash of run.json and of every CSV and meta.json of a run folder."""
    files = [p for p in sorted(Path(folder).iterdir()) if p.is_file() and not p.name.startswith(".")
             and (p.name == load.RUN_JSON or p.suffix == ".csv" or p.name.endswith(".meta.json"))]
    return _digest(files)


def code_fingerprint() -> str:
    """Hash of the analysis code the numbers come from and of the fairness table."""
    here = Path(__file__).resolve().parent
    paths = [here / f"{name}.py" for name in SOURCES] + [fairness.default_readme()]
    return _digest([p for p in paths if p.is_file()])


def key_of(run: Run, baseline: str, candidate: str, tie_band: float, confidence: float) -> dict[str, Any]:
    return folder_key(run.path, run.run_id, run.runtimes, baseline, candidate, tie_band, confidence)


def folder_key(folder: Path, run_id: str, runtimes: tuple[str, ...] | list[str], baseline: str, candidate: str,
               tie_band: float, confidence: float) -> dict[str, Any]:
    """The key of a run folder's comparison file, from the folder (no CSV parsed): `run_id`
    and `runtimes` as load_run would give them."""
    candidates = [candidate] + [rt for rt in runtimes if rt not in (baseline, candidate)]
    return {"format": FORMAT, "run_id": run_id, "run": run_fingerprint(Path(folder)), "code": code_fingerprint(),
            "baseline": baseline, "candidates": candidates, "tie_band": float(tie_band),
            "confidence": float(confidence)}


def diff_key(folder_a: Path, folder_b: Path, runtime: str, tie_band: float, confidence: float) -> dict[str, Any]:
    """The key of a cached diff: both runs' files, the analysis code and the settings."""
    return {"format": DIFF_FORMAT, "run_a": run_fingerprint(Path(folder_a)), "run_b": run_fingerprint(Path(folder_b)),
            "code": code_fingerprint(), "runtime": runtime, "tie_band": float(tie_band),
            "confidence": float(confidence)}


# -- JSON -------------------------------------------------------------------------------------

def _plain(value: Any) -> Any:
    """A JSON value: pd.NA / None -> None, numpy scalars -> Python, lists recursively."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, np.generic):
        return value.item()
    return value


def frame_to_json(frame: pd.DataFrame) -> dict[str, Any]:
    return {"columns": list(frame.columns), "dtypes": [str(t) for t in frame.dtypes],
            "data": [[_plain(v) for v in frame[c].tolist()] for c in frame.columns]}


def frame_from_json(doc: dict[str, Any]) -> pd.DataFrame:
    columns = {}
    for name, dtype, values in zip(doc["columns"], doc["dtypes"], doc["data"]):
        if dtype == "object":
            series = pd.Series(values, dtype=object)
        elif dtype == "float64":
            series = pd.Series([math.nan if v is None else v for v in values], dtype="float64")
        else:
            series = pd.Series(values, dtype=dtype)
        columns[name] = series
    return pd.DataFrame(columns, columns=doc["columns"])


def comparison_to_json(cmp: Comparison) -> dict[str, Any]:
    return {"run_id": cmp.run_id, "baseline": cmp.baseline, "candidate": cmp.candidate, "tie_band": cmp.tie_band,
            "confidence": cmp.confidence, "compared": cmp.compared, "summary": cmp.summary, "extra": cmp.extra,
            "frames": {name: frame_to_json(getattr(cmp, name)) for name in FRAMES}}


def comparison_from_json(doc: dict[str, Any]) -> Comparison:
    frames = {name: frame_from_json(doc["frames"][name]) for name in FRAMES}
    return Comparison(run_id=doc["run_id"], baseline=doc["baseline"], candidate=doc["candidate"],
                      tie_band=doc["tie_band"], confidence=doc["confidence"], summary=doc["summary"],
                      compared=doc["compared"], extra=doc["extra"], **frames)


def to_json(result: RunComparisons, key: dict[str, Any]) -> str:
    doc = {"key": key, "run_id": result.run_id, "run_path": result.run_path, "info": result.info, "meta": result.meta,
           "runtimes": list(result.runtimes), "variants": result.variants, "schema_version": result.schema_version,
           "machine": frame_to_json(result.machine.reset_index()), "baseline": result.baseline,
           "comparisons": [comparison_to_json(c) for c in result.comparisons.values()],
           "peers": {k: comparison_to_json(c) for k, c in result.peers.items()}}
    return json.dumps(_plain_doc(doc), indent=1) + "\n"


def _plain_doc(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain_doc(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain_doc(v) for v in value]
    return _plain(value)


def from_json(doc: dict[str, Any]) -> RunComparisons:
    comparisons = [comparison_from_json(c) for c in doc["comparisons"]]
    return RunComparisons(run_id=doc["run_id"], run_path=doc["run_path"], info=doc["info"], meta=doc["meta"],
                          runtimes=tuple(doc["runtimes"]), variants=doc["variants"],
                          schema_version=doc["schema_version"],
                          machine=frame_from_json(doc["machine"]).set_index("field"), baseline=doc["baseline"],
                          comparisons={c.candidate: c for c in comparisons},
                          peers={k: comparison_from_json(c) for k, c in doc.get("peers", {}).items()})


# -- cached -----------------------------------------------------------------------------------

def path_for(report_dir: str | Path, run_id: str) -> Path:
    return Path(report_dir) / run_id / FILE_NAME


def read_cached(path: Path, key: dict[str, Any]) -> RunComparisons | None:
    """The file's content if it exists, parses and has this key; else None (compute again)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("key") != key:
        return None
    try:
        return from_json(doc)
    except (KeyError, TypeError, ValueError) as exc:
        raise AnalysisError(f"{path}: unreadable comparison file ({exc}); delete it to compute it again") from None


def comparisons(run: Run, report_dir: str | Path, baseline: str = "tokio", candidate: str = "ampere",
                tie_band: float = stats.DEFAULT_TIE_BAND, confidence: float = stats.DEFAULT_CONFIDENCE
                ) -> RunComparisons:
    """The run's comparisons from `<report_dir>/<run_id>/comparison.json`, computed and written
    there first when the file is missing or was made from other data, code or settings."""
    key = key_of(run, baseline, candidate, tie_band, confidence)
    path = path_for(report_dir, run.run_id)
    cached = read_cached(path, key)
    if cached is not None:
        return cached
    result = compute(run, baseline, candidate, tie_band, confidence)
    write_text_atomic(path, to_json(result, key))
    return result


def _folder_run_id(folder: Path) -> str:
    """The run id load_run gives a folder: run.json's `run_id`, else the folder's name."""
    try:
        info = json.loads((Path(folder) / load.RUN_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return Path(folder).name
    return str(info.get("run_id") or Path(folder).name) if isinstance(info, dict) else Path(folder).name


def cached_comparisons(folder: str | Path, report_dir: str | Path, baseline: str = "tokio",
                       candidate: str = "ampere", tie_band: float = stats.DEFAULT_TIE_BAND,
                       confidence: float = stats.DEFAULT_CONFIDENCE) -> RunComparisons:
    """`comparisons` of the run in `folder`, loading it only when the cached file does not match."""
    folder = Path(folder)
    run_id = _folder_run_id(folder)
    key = folder_key(folder, run_id, load.runtime_names(folder), baseline, candidate, tie_band, confidence)
    cached = read_cached(path_for(report_dir, run_id), key)
    if cached is not None:
        return cached
    return comparisons(load.load_run(folder), report_dir, baseline, candidate, tie_band, confidence)


def diff_path(report_dir: str | Path, run_a: str, run_b: str, runtime: str) -> Path:
    return Path(report_dir) / HISTORY_DIR / f"{run_a}..{run_b}.{runtime}.json"


def cached_diff(folder_a: str | Path, folder_b: str | Path, runtime: str, tie_band: float, confidence: float,
                report_dir: str | Path) -> Comparison:
    """compare.diff_runs(A, B, runtime) from `<report_dir>/history/<A>..<B>.<runtime>.json`,
    computed (loading both runs) and written atomically there when the file is missing or its
    key (data, code, settings) differs."""
    folder_a, folder_b = Path(folder_a), Path(folder_b)
    key = diff_key(folder_a, folder_b, runtime, tie_band, confidence)
    path = diff_path(report_dir, _folder_run_id(folder_a), _folder_run_id(folder_b), runtime)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        doc = None
    if isinstance(doc, dict) and doc.get("key") == key:
        try:
            return comparison_from_json(doc["comparison"])
        except (KeyError, TypeError, ValueError) as exc:
            raise AnalysisError(f"{path}: unreadable diff file ({exc}); delete it to compute it again") from None
    result = diff_runs(load.load_run(folder_a), load.load_run(folder_b), runtime=runtime, tie_band=tie_band,
                       confidence=confidence)
    write_text_atomic(path, json.dumps(_plain_doc({"key": key, "comparison": comparison_to_json(result)}),
                                       indent=1) + "\n")
    return result
