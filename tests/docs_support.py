"""Reading the project's Markdown pages for the docs tests: which pages, their links outside code,
their headings' anchors as GitHub writes them, and their Python code blocks."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_FENCE = re.compile(r"^\s*(```|~~~)\s*([\w+-]*)")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
# [text](target) and ![alt](target), with an optional "title"
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def markdown_pages() -> list[Path]:
    """Every page a reader is sent to: the README, docs/ and the other folders' READMEs."""
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    pages += [p for p in (REPO / "mcp_server" / "README.md", REPO / "benchmarks" / "README.md") if p.exists()]
    return pages


def _prose_and_blocks(text: str) -> tuple[list[tuple[int, str]], list[tuple[str, str]]]:
    """(lineno, line) of the text outside fenced code, and (language, source) of each fenced block."""
    prose: list[tuple[int, str]] = []
    blocks: list[tuple[str, str]] = []
    fence: str | None = None
    lang, body = "", []
    for n, line in enumerate(text.splitlines(), 1):
        m = _FENCE.match(line)
        if fence is None and m:
            fence, lang, body = m.group(1), m.group(2).lower(), []
        elif fence is not None and line.strip().startswith(fence):
            blocks.append((lang, "\n".join(body)))
            fence = None
        elif fence is not None:
            body.append(line)
        else:
            prose.append((n, line))
    return prose, blocks


def links(page: Path) -> Iterator[tuple[int, str]]:
    """(line number, target) of every Markdown link and image outside code."""
    prose, _ = _prose_and_blocks(page.read_text(encoding="utf-8"))
    for n, line in prose:
        for m in _LINK.finditer(_CODE_SPAN.sub("", line)):
            yield n, m.group(1)


def github_anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the page's headings: lower case, punctuation dropped, spaces made
    '-', and -1, -2, ... after a repeated one."""
    prose, _ = _prose_and_blocks(page.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    anchors: set[str] = set()
    for _, line in prose:
        m = _HEADING.match(line)
        if not m:
            continue
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(2))  # a link's text only
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def python_blocks(page: Path) -> list[str]:
    """The source of every ```python block of the page."""
    _, blocks = _prose_and_blocks(page.read_text(encoding="utf-8"))
    return [source for lang, source in blocks if lang in ("python", "py", "pycon")]


def fenced_blocks(page: Path) -> list[tuple[int, str, str, str]]:
    """(line of the opening fence, language, source dedented, the last non-blank line before the fence) of every
    fenced block of the page."""
    import textwrap

    found: list[tuple[int, str, str, str]] = []
    fence: str | None = None
    lang, body, start, before = "", [], 0, ""
    last = ""
    for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        m = _FENCE.match(line)
        if fence is None and m:
            fence, lang, body, start, before = m.group(1), m.group(2).lower(), [], n, last
        elif fence is not None and line.strip().startswith(fence):
            found.append((start, lang, textwrap.dedent("\n".join(body)), before))
            fence, last = None, line.strip()
        elif fence is not None:
            body.append(line)
        elif line.strip():
            last = line.strip()
    return found
