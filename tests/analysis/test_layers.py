"""The analysis package is layered without cycles (issue 16):

    loading -> statistics -> comparison -> diagnostics -> results -> presentation -> commands

(results: a comparison assembled with its diagnostics and summary, cached per run, across runs;
commands: the CLI, the orchestrator and the report command.)

ORDER lists every module of the package in dependency order. The tests check that
- every module of analysis/ is in ORDER (a new module must be placed in a layer);
- no module imports a package module inside a function (a function-local import hides a cycle);
- every module imports only modules before it in ORDER (so the imports form no cycle);
- in a fresh interpreter, importing the modules one by one in ORDER never loads a module that
  comes later (the import graph really is what the source says), and the package's
  __init__ then imports without loading anything new but its facade's modules.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from analysis_fakes import REPO

PACKAGE = REPO / "analysis"
LAYERS: dict[str, list[str]] = {
    "loading": ["errors", "files", "schema", "bench_csv", "metrics", "span", "http_csv", "load", "fairness", "machine_load"],
    "statistics": ["stats", "ranks", "modes", "coverage"],
    "comparison": ["benchmarks", "span_cpu"],
    "diagnostics": ["sanity", "diagnostics"],
    "results": ["summary", "compare", "artefact", "machines", "history", "net", "iosuite", "httpsuite", "allocations"],
    "presentation": ["fmt", "document", "render", "tables", "words", "figures", "figures.style", "figures.overview",
                     "figures.distributions", "figures.echo", "figures.net", "figures.io", "figures.http", "figures.scaling", "figures.history", "figures.machines",
                     "machines_view", "notebook", "index_page"],
    "commands": ["options", "build", "child", "httpbench", "bench", "bundle", "ab", "report", "cli", "__main__"],
}
ORDER = [name for names in LAYERS.values() for name in names]


def module_path(name: str) -> Path:
    path = PACKAGE.joinpath(*name.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def package_modules() -> set[str]:
    names = set()
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts == ("__init__",):
            continue
        names.add(".".join(parts[:-1]) if parts[-1] == "__init__" else ".".join(parts))
    return names


def imports_of(name: str) -> list[tuple[str, bool]]:
    """(imported package module, at module level?) for every `from .x import ...` of a module."""
    tree = ast.parse(module_path(name).read_text(encoding="utf-8"))
    package = name.split(".")[:-1] if not module_path(name).name == "__init__.py" else name.split(".")
    top_level = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or node.level == 0:
            continue
        base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
        if node.module:
            targets = [".".join([*base, node.module])]
        else:  # from . import a, b: the names are modules
            targets = [".".join([*base, alias.name]) for alias in node.names]
        for target in targets:
            while target and target not in ORDER and "." in target:
                target = target.rsplit(".", 1)[0]  # `from .figures.style import x` -> figures.style
            found.append((target, id(node) in top_level))
    return found


def test_every_module_is_placed_in_a_layer():
    assert package_modules() == set(ORDER)
    assert len(ORDER) == len(set(ORDER))


def test_no_function_local_imports_of_the_package():
    local = {name: [t for t, top in imports_of(name) if not top] for name in ORDER}
    assert not {k: v for k, v in local.items() if v}


def test_every_import_points_down_the_order():
    position = {name: i for i, name in enumerate(ORDER)}
    upward = {}
    for name in ORDER:
        bad = [t for t, _ in imports_of(name) if t in position and position[t] >= position[name]]
        if bad:
            upward[name] = bad
    assert not upward, f"imports of a later (or the same) module: {upward}"


IMPORT_SCRIPT = r"""
import importlib, json, sys, types
order, root = json.loads(sys.argv[1]), sys.argv[2]
package = types.ModuleType("analysis")
package.__path__ = [root]            # the package without running its __init__ (the facade)
sys.modules["analysis"] = package
problems = []
for i, name in enumerate(order):
    importlib.import_module(f"analysis.{name}")
    allowed = set(order[: i + 1])
    loaded = {m.removeprefix("analysis.") for m in sys.modules if m.startswith("analysis.")}
    if loaded - allowed:
        problems.append(f"importing {name} loaded {sorted(loaded - allowed)}")
del sys.modules["analysis"]
before = set(sys.modules)
importlib.import_module("analysis")  # now with its __init__
new = sorted(m for m in set(sys.modules) - before if m.startswith("analysis"))
if new != ["analysis"]:
    problems.append(f"analysis/__init__ loaded more than the facade: {new}")
print(json.dumps(problems))
"""


def test_imports_in_order_in_a_fresh_interpreter():
    done = subprocess.run([sys.executable, "-c", IMPORT_SCRIPT, json.dumps(ORDER), str(PACKAGE)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
