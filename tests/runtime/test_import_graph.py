"""The Zig runtime's import graph has no cycles (issue: Runtime <-> Worker <-> context <->
BlockingPool imported each other).

Reads every `@import("x.zig")` of runtime/src and checks the graph is acyclic. Test files
(`*_test.zig`, `*_tests.zig`) may import the package root to use the public API, so their
edges are left out; the root's `test { _ = @import(...) }` block is what pulls them in.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "runtime" / "src"
IMPORT_RE = re.compile(r'@import\("([^"]+\.zig)"\)')


def is_test_file(path: Path) -> bool:
    return path.stem.endswith(("_test", "_tests"))


def import_graph(root: Path) -> dict[Path, list[Path]]:
    graph: dict[Path, list[Path]] = {}
    for path in sorted(root.rglob("*.zig")):
        if is_test_file(path):
            continue
        text = path.read_text(encoding="utf-8")
        targets = [(path.parent / m.group(1)).resolve() for m in IMPORT_RE.finditer(text)]
        graph[path.resolve()] = [t for t in targets if not is_test_file(t)]
    return graph


def find_cycle(graph: dict[Path, list[Path]]) -> list[Path] | None:
    """One cycle of `graph` as a list of nodes (first == last), or None (iterative DFS)."""
    state: dict[Path, int] = {}  # 1 = on the current path, 2 = finished
    for start in graph:
        if state.get(start):
            continue
        path: list[Path] = [start]
        iters = [iter(graph.get(start, []))]
        state[start] = 1
        while iters:
            node = next(iters[-1], None)
            if node is None:
                state[path.pop()] = 2
                iters.pop()
                continue
            if state.get(node) == 1:
                return path[path.index(node):] + [node]
            if not state.get(node):
                state[node] = 1
                path.append(node)
                iters.append(iter(graph.get(node, [])))
    return None


def test_finds_a_planted_cycle() -> None:
    a, b, c = Path("a"), Path("b"), Path("c")
    assert find_cycle({a: [b], b: [c], c: [a]}) == [a, b, c, a]
    assert find_cycle({a: [b, c], b: [c], c: []}) is None


def test_runtime_imports_form_no_cycle() -> None:
    graph = import_graph(SRC)
    if not graph:
        pytest.fail(f"no Zig sources under {SRC}")
    cycle = find_cycle(graph)
    names = " -> ".join(str(p.relative_to(SRC)) for p in cycle) if cycle else ""
    assert cycle is None, f"import cycle: {names}"
