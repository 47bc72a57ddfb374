"""``memtools.store`` has no import circle: every module of the package, with the imports it makes
at module level, inside functions and for type checkers (``if TYPE_CHECKING:``), forms a graph
without cycles. Integrity checks read the storage contract (``store/base.py``) and small readers,
never ``Memory``, so ``memory -> integrity -> memory`` cannot come back."""

from __future__ import annotations

import ast
from pathlib import Path

import memtools.store

STORE = Path(memtools.store.__file__).parent
PACKAGE = "memtools.store"


def _imports(path: Path) -> set[str]:
    """The ``memtools.store`` modules ``path`` imports anywhere in its text (the package itself excluded)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == PACKAGE:  # from memtools.store import integrity, engines
                found.update(f"{PACKAGE}.{alias.name}" for alias in node.names
                             if (STORE / f"{alias.name}.py").is_file())
            elif node.module.startswith(PACKAGE + "."):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith(PACKAGE + "."))
    return {name.split(".")[2] for name in found}


def _graph() -> dict[str, set[str]]:
    modules = {p.stem for p in STORE.glob("*.py") if p.stem != "__init__"}
    return {m: _imports(STORE / f"{m}.py") & modules - {m} for m in sorted(modules)}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` (as a path that ends where it starts), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for imported in sorted(graph[module]):
            if state.get(imported) == 1:
                return [*path[path.index(imported):], imported]
            if imported not in state and (found := visit(imported)):
                return found
        path.pop()
        state[module] = 2
        return None

    for module in graph:
        if module not in state and (found := visit(module)):
            return found
    return None


def test_the_reader_sees_every_kind_of_import():
    graph = _graph()
    assert "integrity" in graph["memory"]  # module level
    assert "graph_engines" in graph["integrity"]  # inside a function
    assert "base" in graph["lance_filter"]


def test_the_cycle_finder_finds_a_circle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_store_modules_import_each_other_without_a_circle():
    circle = _cycle(_graph())
    assert circle is None, "import circle in memtools.store: " + " -> ".join(circle or [])
