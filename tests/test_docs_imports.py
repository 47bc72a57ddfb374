"""Every `from memtools... import X` (and `import memtools...`) shown in a Python code block of
the README or the docs imports: the public names a reader copies exist. Only the import
statements run, never the rest of a block."""

from __future__ import annotations

import ast

import pytest

from docs_support import REPO, markdown_pages, python_blocks


def memtools_imports(source: str) -> list[str]:
    """The memtools import statements of one code block (top-level ``await`` allowed), as code."""
    tree = compile(source, "<doc block>", "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "memtools" and not node.level:
            found.append(ast.unparse(node))
        elif isinstance(node, ast.Import) and any(a.name.split(".")[0] == "memtools" for a in node.names):
            found.append(ast.unparse(node))
    return found


PAGES_WITH_PYTHON = [p for p in markdown_pages() if python_blocks(p)]


@pytest.mark.parametrize("page", PAGES_WITH_PYTHON, ids=lambda p: str(p.relative_to(REPO)))
def test_every_shown_memtools_import_works(page):
    failures = []
    for source in python_blocks(page):
        for statement in memtools_imports(source):
            try:
                exec(statement, {})
            except ImportError as e:
                failures.append(f"{statement}: {e}")
    assert not failures, f"{page.relative_to(REPO)} shows imports that fail:\n" + "\n".join(failures)


def test_the_readme_shows_the_front_ends_imports():
    shown = [s for block in python_blocks(REPO / "README.md") for s in memtools_imports(block)]
    assert "from memtools.tools import MemoryTools" in shown
    assert any("build_ora_graph" in s for s in shown)


def test_a_missing_name_is_caught():
    (statement,) = memtools_imports("x = 1\nfrom memtools.store import NoSuchThing\nawait go()\n")
    with pytest.raises(ImportError):
        exec(statement, {})
