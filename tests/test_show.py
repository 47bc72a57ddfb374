"""``memtools show``: the timeline picture, the pages' data and their size bounds (no browser here)."""

from __future__ import annotations

import json
import re

import cv2
import numpy as np
import pytest

from memtools.cli import main
from memtools.embed import TestEmbedder
from memtools.show import export_show
from memtools.show.collect import VideoRow
from memtools.show.page import PAGE_SIZE, library_pages
from memtools.store import Memory
from show_support import long_site, page_data, sample_memory

TWO_MB = 2 * 1024 * 1024


@pytest.fixture(scope="module")
def sample_site(tmp_path_factory):
    root = tmp_path_factory.mktemp("show-sample")
    memory = sample_memory()
    out = root / "site"
    assert main(["show", "--memory", str(memory), "--out", str(out), "--quiet"]) == 0
    return memory, out


def test_the_timeline_picture_is_a_sizeable_non_blank_png(sample_site):
    _, out = sample_site
    image = cv2.imread(str(out / "timeline-sample.png"), cv2.IMREAD_COLOR)
    assert image is not None, "not a readable PNG"
    h, w = image.shape[:2]
    assert w >= 1000 and h >= 400
    pixels = image.reshape(-1, 3)
    assert pixels.std() > 30  # not one flat colour
    assert len(np.unique(pixels[::7], axis=0)) > 200  # bands, labels and keyframes, not a blank canvas
    assert (pixels.min(axis=1) < 250).mean() > 0.15  # a good share of the canvas is drawn on


def test_the_video_page_holds_the_whole_hierarchy_and_needs_no_network(sample_site):
    _, out = sample_site
    html = (out / "video-sample.html").read_text(encoding="utf-8")
    data = page_data(html)
    assert data["kind"] == "video" and data["view"]["video"]["id"] == "sample"
    macros = [m["id"] for m in data["view"]["macros"]]
    assert macros == [f"sample/macro_000{i}" for i in range(4)]
    assert [s["id"] for s in data["view"]["supers"]] == ["sample/super_00", "sample/super_01"]
    sub = data["subgraphs"]["sample/macro_0002"]
    assert any(e["id"] == "sample/macro_0002/evt_003" and e["t0"] == 100.0 for e in sub["events"])
    assert ["sample/macro_0002/evt_002", "sample/macro_0002/evt_003", "CAUSES", "temporal",
            "The impact of the ball knocks the boxes over."] in sub["edges"]
    assert not data["parts"]["files"]  # a small video fits in its page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html) and 'rel="stylesheet"' not in html
    for _, name in data["view"]["strip"] + sub["keyframes"]:  # keyframes are relative files next to the page
        assert (out / data["frames_base"] / name).stat().st_size > 500
    index = page_data((out / "index.html").read_text(encoding="utf-8"))
    assert index["rows"][0]["id"] == "sample" and index["rows"][0]["href"] == "video-sample.html"


def test_library_index_pages_a_thousand_videos():
    rows = [VideoRow(f"vid{i:04d}", f"Video number {i}", 600.0 + i, "ready", {"macro": 12}) for i in range(1000)]
    linked = {r.video_id for r in rows[:500]}
    pages = library_pages(rows, linked)
    assert list(pages)[:3] == ["index.html", "index-2.html", "index-3.html"] and len(pages) == 1000 // PAGE_SIZE
    for n, html in enumerate(pages.values(), 1):
        data = page_data(html)
        assert data["page"] == n and len(data["rows"]) == PAGE_SIZE and len(data["all"]) == 1000
        assert len(html.encode()) < 400_000
    last = page_data(pages["index-10.html"])
    assert last["rows"][-1]["id"] == "vid0999" and last["rows"][-1]["href"] == ""  # no page written for it
    assert page_data(pages["index.html"])["rows"][0]["href"] == "video-vid0000.html"


@pytest.mark.slow
def test_a_twelve_hour_video_page_stays_under_two_megabytes():
    site = long_site()
    page = site / "video-long.html"
    assert page.stat().st_size <= TWO_MB
    data = page_data(page.read_text(encoding="utf-8"))
    assert len(data["view"]["macros"]) == 720
    inline, files, where = set(data["subgraphs"]), data["parts"]["files"], data["parts"]["of"]
    assert files and inline and not inline & set(where)  # some inline, the rest in parts, none twice
    seen = set(inline)
    for n, name in enumerate(files):
        text = (site / name).read_text(encoding="utf-8")
        assert text.startswith(f"window.memtoolsPart({n}, ") and len(text.encode()) <= 1_100_000
        part = json.loads(text[len(f"window.memtoolsPart({n}, "):].rstrip().rstrip(");"))
        assert all(where[m] == n for m in part)
        seen |= set(part)
    assert seen == {m["id"] for m in data["view"]["macros"]}  # nothing was dropped to fit


def test_an_unknown_video_is_a_clear_error_and_writes_nothing(sample_site, tmp_path, capsys):
    memory, _ = sample_site
    assert main(["show", "--memory", str(memory), "--video", "nope", "--out", str(tmp_path / "o"), "-q"]) == 1
    err = capsys.readouterr().err
    assert "no video 'nope'" in err and "sample" in err
    assert not any((tmp_path / "o").glob("*.html"))


def test_an_empty_memory_gets_an_index_that_says_so(tmp_path):
    with Memory.create(tmp_path / "m", TestEmbedder(16)) as memory:
        report = export_show(memory, tmp_path / "site")
    data = page_data(report.index.read_text(encoding="utf-8"))
    assert data["total"] == 0 and data["rows"] == [] and not report.pages


def test_a_video_with_speech_gets_a_speech_density_row(tmp_path):
    from memtools.show.collect import video_view
    from memtools.show.timeline import draw_timeline
    from memtools.testing import kitchen_graph, with_speech
    from memtools.tools import MemoryTools

    path = tmp_path / "m"
    with Memory.create(path, TestEmbedder(16)) as memory:
        memory.write_video(with_speech(kitchen_graph()))
        memory.write_video(kitchen_graph("silent"))
        tools = MemoryTools(memory)
        spoken, silent = video_view(tools, "kitchen"), video_view(tools, "silent")
        assert spoken["speech"] and all(a <= b for a, b in spoken["speech"]) and silent["speech"] == []
        heights = {}
        for name, view in (("spoken", spoken), ("silent", silent)):
            draw_timeline(view, tmp_path / f"{name}.png", memory_path=path)
            heights[name] = cv2.imread(str(tmp_path / f"{name}.png")).shape[0]
    assert heights["spoken"] == heights["silent"] + 60  # one more row of 0.6 in at 100 dpi
