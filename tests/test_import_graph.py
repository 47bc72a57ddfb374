"""The import graph of ``memtools``, read from the source with ``ast`` (nothing is imported):
no circles, and the front ends reach the engines only through ``memtools.store``'s contract.

An edge is an ``import`` anywhere in a module (also inside a function: a lazy import still
ties the two modules together), except under ``if TYPE_CHECKING:`` (annotations only, never
run). ``from pkg import name`` points at ``pkg.name`` when that is a module, else at ``pkg``.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import memtools

SRC = Path(memtools.__file__).parent
ENGINES = ("kuzu", "lancedb", "lance", "pyarrow", "ladybug")
"""Third-party storage engines: only ``memtools.store`` modules may import them."""
FRONT_ENDS = ("memtools.cli", "memtools.mcp", "memtools.langchain", "memtools.agent")


def module_name(path: Path) -> str:
    parts = ["memtools", *path.relative_to(SRC).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _type_checking_only(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return skipped


def imported_names(name: str, *, with_type_checking: bool = False) -> set[str]:
    """Every module name ``name`` imports (dotted, as written; relative imports resolved)."""
    path = modules()[name]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    skipped = set() if with_type_checking else _type_checking_only(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            out.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules() else base
                       for alias in node.names)
    return out


def _own_module(name: str) -> str | None:
    """The memtools module a dotted import name refers to (its longest existing prefix), if any."""
    while name and name not in modules():
        name = name.rpartition(".")[0]
    return name or None


def graph() -> dict[str, set[str]]:
    edges = {}
    for name in modules():
        targets = {_own_module(t) for t in imported_names(name) if t.split(".")[0] == "memtools"}
        edges[name] = {t for t in targets if t is not None and t != name}
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(edges[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def engine_modules() -> set[str]:
    """``memtools.store`` modules that import a storage engine themselves (also lazily or for types)."""
    return {name for name in modules() if name.startswith("memtools.store.")
            and any(t.split(".")[0] in ENGINES for t in imported_names(name, with_type_checking=True))}


def is_front_end(name: str) -> bool:
    return any(name == f or name.startswith(f + ".") for f in FRONT_ENDS)


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_lazy_and_relative_imports():
    edges = graph()
    assert "memtools.mcp" in edges["memtools.cli.serve"]  # imported inside run()
    assert "memtools.store.memory" in edges["memtools.store"]
    assert len(edges) == len(modules()) > 100


def test_no_import_circles():
    assert cycles(graph()) == []


def test_the_mcp_server_does_not_import_the_cli():
    assert not [(name, t) for name, targets in graph().items() if name.startswith("memtools.mcp")
                for t in targets if t.startswith("memtools.cli")]


def test_engine_modules_are_found():
    assert {"memtools.store.graph.cypher", "memtools.store.tables.vectors"} <= engine_modules()


def test_front_ends_do_not_touch_the_engines():
    engines = engine_modules()
    bad = []
    for name in modules():
        if not is_front_end(name):
            continue
        for target in imported_names(name, with_type_checking=True):
            if target.split(".")[0] in ENGINES or _own_module(target) in engines:
                bad.append(f"{name} imports {target}")
    assert bad == [], "front ends use memtools.store's Memory / contract, not the engines"
