"""Small layout faults of the pages, measured in headless Chromium: the timeline's edge tick labels fit, a subgraph's
edge labels do not overlap, and the docs site's tables do not break a tool name inside a word."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from memtools.embed import TestEmbedder
from memtools.show import export_show
from memtools.store import Memory
from show_support import HAVE_CHROMIUM, NO_CHROMIUM, ROOT, chromium, console_errors, sample_memory

pytestmark = pytest.mark.skipif(not HAVE_CHROMIUM, reason=NO_CHROMIUM)
BOXES = "return Array.prototype.map.call(document.querySelectorAll(arguments[0]), function (e) {" \
        " var r = e.getBoundingClientRect(); return [e.textContent, r.left, r.top, r.right, r.bottom]; });"


@pytest.fixture(scope="module")
def browser():
    driver = chromium(1000, 900)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("show-layout")
    with Memory.open(sample_memory(), TestEmbedder(64)) as memory:
        export_show(memory, root / "site")
    return root / "site"


def overlapping(boxes: list) -> list:
    return [(a[0], b[0]) for i, a in enumerate(boxes) for b in boxes[i + 1:]
            if a[1] < b[3] and b[1] < a[3] and a[2] < b[4] and b[2] < a[4]]


def test_the_timelines_tick_labels_fit_inside_it(browser, site):
    browser.get((site / "video-sample.html").as_uri())
    frame = browser.execute_script("var r = document.querySelector('svg.tl').getBoundingClientRect();"
                                   "return [r.left, r.right];")
    ticks = [b for b in browser.execute_script(BOXES, "svg.tl text") if b[0].count(":") == 2]
    assert [t[0] for t in ticks][-1] == "0:03:00" and len(ticks) >= 4
    assert all(frame[0] - 0.5 <= t[1] and t[3] <= frame[1] + 0.5 for t in ticks), (frame, ticks)
    assert overlapping(ticks) == []


def test_edge_labels_of_a_subgraph_do_not_overlap(browser, site):
    browser.get((site / "video-sample.html").as_uri())
    for i in range(4):
        macro = f"sample/macro_{i:04d}"
        browser.execute_script("location.hash = arguments[0]", macro)
        browser.implicitly_wait(5)
        browser.find_element("css selector", f'#macro-detail[data-id="{macro}"] .graph')
        labels = browser.execute_script(BOXES, "#macro-detail .graph .elabel")
        nodes = browser.execute_script(BOXES, "#macro-detail .graph g.node rect")
        assert labels and overlapping(labels) == [], macro
        assert [(lab[0], n[0]) for lab in labels for n in nodes if overlapping([lab, n])] == [], macro  # not hidden
    assert console_errors(browser) == []


@pytest.mark.skipif(not os.path.exists(os.path.join(os.path.dirname(sys.executable), "mkdocs")), reason="needs mkdocs")
def test_the_writing_pages_table_keeps_tool_names_whole(browser, tmp_path):
    built = subprocess.run([os.path.join(os.path.dirname(sys.executable), "mkdocs"), "build", "--site-dir",
                            str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True,
                           env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert built.returncode == 0, built.stderr[-2000:]
    for width in (1000, 700):
        browser.set_window_size(width, 900)
        browser.get((tmp_path / "site" / "writing" / "index.html").as_uri())
        split = browser.execute_script(
            "return Array.prototype.filter.call(document.querySelectorAll('.md-typeset table code'), function (c) {"
            " return c.getClientRects().length > c.textContent.split(/\\s+/).length; })"
            ".map(function (c) { return c.textContent; });")
        assert split == [], (width, split)  # a line break only where the code has a space
    browser.set_window_size(1000, 900)
