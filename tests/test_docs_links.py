"""Every relative link in README.md and docs/ leads to a file that exists, and to a heading of
it where the link names one (mkdocs checks docs/ again with its own anchors; it never reads the
README, whose links GitHub and PyPI show)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

import pytest

from docs_support import REPO, github_anchors, links, markdown_pages

_EXTERNAL = ("http://", "https://", "mailto:")


def broken_links(page: Path, root: Path = REPO) -> list[str]:
    """What is wrong with each relative link of ``page`` (a page under ``root``), one line each."""
    problems = []
    for line, target in links(page):
        if target.startswith(_EXTERNAL):
            continue
        path_part, _, anchor = target.partition("#")
        dest = (page.parent / unquote(path_part)).resolve() if path_part else page
        where = f"{page.relative_to(root)}:{line}: {target}"
        if not dest.exists():
            problems.append(f"{where}: no such file")
        elif root not in dest.parents and dest != root:
            problems.append(f"{where}: points outside the repository")
        elif anchor and dest.suffix == ".md" and anchor not in github_anchors(dest):
            problems.append(f"{where}: {dest.name} has no heading with the anchor #{anchor}")
    return problems


@pytest.mark.parametrize("page", markdown_pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(page):
    problems = broken_links(page)
    assert not problems, "broken links:\n" + "\n".join(problems)


def test_the_checker_sees_a_broken_file_and_a_broken_anchor(tmp_path):
    (tmp_path / "b.md").write_text("# Graph engines: which one\n\n## Graph engines: which one\n", encoding="utf-8")
    page = tmp_path / "a.md"
    page.write_text(
        "[ok](b.md#graph-engines-which-one) [ok too](b.md#graph-engines-which-one-1) `[code](nowhere.md)`\n"
        "[gone](missing.md) [bad anchor](b.md#graph-engines) ![pic](b.md) [self](#nothing-here)\n"
        "```\n[in a block](nowhere.md)\n```\n",
        encoding="utf-8",
    )
    found = [(line, target) for line, target in links(page)]
    assert found == [(1, "b.md#graph-engines-which-one"), (1, "b.md#graph-engines-which-one-1"),
                     (2, "missing.md"), (2, "b.md#graph-engines"), (2, "b.md"), (2, "#nothing-here")]
    assert github_anchors(tmp_path / "b.md") == {"graph-engines-which-one", "graph-engines-which-one-1"}
    assert broken_links(page, root=tmp_path) == [
        "a.md:2: missing.md: no such file",
        "a.md:2: b.md#graph-engines: b.md has no heading with the anchor #graph-engines",
        "a.md:2: #nothing-here: a.md has no heading with the anchor #nothing-here",
    ]


def test_the_readme_links_every_docs_page_through_the_index():
    index = (REPO / "docs" / "index.md").read_text(encoding="utf-8")
    pages = {p.name for p in (REPO / "docs").glob("*.md")} - {"index.md"}
    unlisted = sorted(name for name in pages if f"]({name})" not in index)
    assert not unlisted, f"docs/index.md does not list: {unlisted}"
    assert "](docs/index.md)" in (REPO / "README.md").read_text(encoding="utf-8")
