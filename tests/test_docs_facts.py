"""What README.md and docs/ state about the code, checked against the code: how many tools a client gets, what
``--allow-writes`` turns on, every ``memtools.x.y`` name, every repository file, every ``memtools COMMAND`` they
cite, the packages of docs/architecture.md, and the version flags of every way of starting the server."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from docs_blocks import _code
from docs_support import REPO, fenced_blocks, markdown_pages
from memtools.embed import TestEmbedder
from memtools.embed.images import TestImageEmbedder
from memtools.store import Memory
from memtools.testing import kitchen_graph
from memtools.tools import TOOL_SPECS

PAGES = {p: p.read_text(encoding="utf-8") for p in markdown_pages()}
NUMBERS = {w: n for n, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve thirteen "
                                      "fourteen fifteen sixteen seventeen eighteen nineteen twenty".split())}
_COUNT = re.compile(r"(?<!of the )\b(\d+|" + "|".join(NUMBERS) + r")\s+(?:read-only\s+|read\s+|LangChain\s+|MCP\s+)?"
                    r"tools\b", re.I)
_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def _where(page, text: str, at: int) -> str:
    return f"{page.relative_to(REPO)}:{text.count(chr(10), 0, at) + 1}"


def _listed(memory_path, allow_writes: bool = False) -> set[str]:
    from memtools.mcp import build_server

    return {t.name for t in asyncio.run(build_server(memory_path, allow_writes=allow_writes).list_tools())}


@pytest.fixture(scope="module")
def memories(tmp_path_factory):
    """The kitchen video in a memory without an image embedder and in one with (the test image embedder)."""
    root = tmp_path_factory.mktemp("facts")
    with Memory.create(root / "text", TestEmbedder(32)) as m:
        m.write_video(kitchen_graph())
    with Memory.create(root / "images", TestEmbedder(32), image_embedder=TestImageEmbedder()) as m:
        m.write_video(kitchen_graph())
    return root / "text", root / "images"


def test_every_count_of_tools_is_what_a_client_gets(memories):
    """N tools: what the MCP server lists on a memory without an image embedder; the catalogue's count (with
    search_frames) only where the line says so (an image embedder, search_frames, as_langchain_tools, the specs)."""
    text_only, with_images = map(_listed, memories)
    assert len(with_images) == len(TOOL_SPECS) and text_only == set(TOOL_SPECS) - {"search_frames"}
    from memtools.langchain import as_langchain_tools

    with Memory.open(memories[0]) as m:
        assert len(as_langchain_tools(m)) == len(TOOL_SPECS)
    wrong = []
    for page, text in PAGES.items():
        lines = text.splitlines()
        for m in _COUNT.finditer(text):
            n = int(m.group(1)) if m.group(1).isdigit() else NUMBERS[m.group(1).lower()]
            line = lines[text.count("\n", 0, m.start())]
            qualified = re.search(r"image embedder|search_frames|as_langchain_tools|specs", line)
            if n != len(text_only) and not (n == len(TOOL_SPECS) and qualified):
                wrong.append(f"{_where(page, text, m.start())}: {m.group(0)!r} (a client gets {len(text_only)}, "
                             f"{len(with_images)} with an image embedder)")
    assert not wrong, "\n".join(wrong)


def test_every_list_of_what_allow_writes_serves_is_whole(memories):
    """A paragraph that names --allow-writes and lists write tools lists all the server adds; `serve --help` too."""
    from memtools.mcp.jobs import JOB_TOOLS

    writes = sorted(_listed(memories[0], allow_writes=True) - _listed(memories[0]))
    assert "forget_person" in writes and "list_changes" in writes
    wrong = []
    for page, text in PAGES.items():
        for paragraph in re.split(r"\n\s*\n", text):
            if "--allow-writes" not in paragraph:
                continue
            named = set(re.findall(r"`(\w+)`", paragraph))
            for group in (writes, JOB_TOOLS):
                if len(named & set(group)) >= 2 and not set(group) <= named:
                    wrong.append(f"{_where(page, text, text.index(paragraph))}: leaves out "
                                 f"{', '.join(sorted(set(group) - named))}")
    assert not wrong, "\n".join(wrong)
    from memtools.cli import parser

    serve = parser()._subparsers._group_actions[0].choices["serve"]  # noqa: SLF001 - argparse keeps them there
    shown = next(a.help for a in serve._actions if "--allow-writes" in a.option_strings)  # noqa: SLF001
    assert all(name in shown for name in [*writes, *JOB_TOOLS]), shown


def _resolves(name: str) -> bool:
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        module_name = ".".join(parts[:i])
        try:
            found = importlib.util.find_spec(module_name) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            continue
        obj = importlib.import_module(module_name)
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def test_every_memtools_name_the_docs_cite_exists():
    """Each `memtools.x.y` (a module, or a name in one) imports; memtools.json and the other files are not names."""
    files = {"json", "lock", "log", "sqlite", "toml", "jsonl", "md", "py", "txt", "kuzu", "lbug"}
    missing = []
    for page, text in PAGES.items():
        for m in re.finditer(r"(?<![\w/.-])memtools(?:\.[A-Za-z_]\w*)+", text):
            name = m.group(0)
            if name.rsplit(".", 1)[1] not in files and not _resolves(name):
                missing.append(f"{_where(page, text, m.start())}: {name}")
    assert not missing, "names the docs cite that do not exist:\n" + "\n".join(missing)


_REPO_PATH = re.compile(r"(?<![\w/.~-])((?:src|tests|scripts|benchmarks|examples|docs|mcp_server|graphs|\.ci|\.github)"
                        r"/[\w./*-]*[\w*])")
_MODULE_PATH = re.compile(r"(?<![\w/.~-])((?:[a-z_]+/)+[a-z_]+\.py)\b")
_TOP_FILE = re.compile(r"(?<![\w/.-])([A-Z][A-Z_-]+\.md)\b")


def test_every_repository_file_the_docs_cite_exists():
    """Paths from the checkout's root (tests/x.py, scripts/...), module files under src/memtools (builder/live.py)
    and top-level pages (DESIGN.md): each exists (a wildcard matches something)."""
    missing = []
    for page, text in PAGES.items():
        modules = (REPO, REPO / "src", REPO / "src/memtools", REPO / "tests")
        for pattern, roots in ((_REPO_PATH, (REPO,)), (_MODULE_PATH, modules), (_TOP_FILE, (REPO, page.parent))):
            for m in pattern.finditer(text):
                path = m.group(1).rstrip(".")
                if not any(list(root.glob(path)) if "*" in path else (root / path).exists() for root in roots):
                    missing.append(f"{_where(page, text, m.start())}: {path}")
    assert not missing, "files the docs cite that are not in the repository:\n" + "\n".join(sorted(set(missing)))


def test_every_memtools_command_the_docs_cite_exists():
    from memtools.cli import parser

    commands = set(parser()._subparsers._group_actions[0].choices)  # noqa: SLF001
    wrong = []
    for page, text in PAGES.items():
        code = [m.group(1) for m in _CODE_SPAN.finditer(text)] + [
            ln for _, lang, source, _ in fenced_blocks(page) if lang in ("bash", "sh", "shell", "console", "", "text")
            for ln in map(_code, source.splitlines())]
        for snippet in code:
            for m in re.finditer(r"(?:^\s*|^\$\s+|&&\s*|\|\s*|;\s*)memtools(?:\s+-v)?\s+([a-z][a-z-]*)\b", snippet):
                if m.group(1) not in commands:
                    wrong.append(f"{page.relative_to(REPO)}: `memtools {m.group(1)}` in {snippet.strip()[:80]!r}")
    assert not wrong, "\n".join(sorted(set(wrong)))


def test_the_architecture_page_names_every_package():
    """Every package folder under src/memtools (a namespace one too) and every top-level module is in the table."""
    text = PAGES[REPO / "docs/architecture.md"]
    table: set[str] = set()
    for row in re.findall(r"^\|([^|\n]*)\|", text, re.M):
        table |= set(re.findall(r"`(\w+)`", row))
    src = REPO / "src/memtools"
    parts = {p.stem for p in src.glob("*.py")} | {p.name for p in src.iterdir()
                                                  if p.is_dir() and any(p.glob("*.py"))}
    parts -= {"__init__", "__main__", "build", "py"}  # memtools.build: the deprecated alias, named below the table
    assert not parts - table, f"docs/architecture.md does not name: {sorted(parts - table)}"


@pytest.mark.parametrize("argv", [["memtools", "serve"], ["memtools-mcp"], [sys.executable, "mcp_server/server.py"]],
                         ids=["memtools serve", "memtools-mcp", "mcp_server/server.py"])
def test_every_way_of_starting_the_server_takes_version_and_verbose(argv):
    """docs/mcp-server.md: every way of starting the server takes --version and -v."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run([*argv, "-v", "--version"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and re.fullmatch(r"memtools(-mcp)? \S+\n", done.stdout), done.stdout + done.stderr
    if argv[0] == "memtools":  # -v after serve, as after memtools, turns on the details; its absence does not undo it
        from memtools.cli import parser

        assert parser().parse_args(["serve", "-v"]).verbose is True
        assert parser().parse_args(["-v", "serve"]).verbose is True
        assert parser().parse_args(["serve"]).verbose is False
