"""``memtools serve --http`` also serves the show pages at ``/`` (read-only), checked with real HTTP GETs."""

from __future__ import annotations

import httpx
import pytest

from mcp_support import http_server
from show_support import HAVE_CHROMIUM, NO_CHROMIUM, chromium, console_errors, page_data, sample_memory


@pytest.fixture(scope="module")
def served():
    with http_server(sample_memory()) as url:
        yield url.removesuffix("/mcp")


def test_the_server_serves_the_library_and_video_pages(served):
    home = httpx.get(f"{served}/", timeout=30)
    assert home.status_code == 200 and home.headers["content-type"].startswith("text/html")
    rows = page_data(home.text)["rows"]
    assert [(r["id"], r["href"]) for r in rows] == [("sample", "video-sample.html")]
    page = httpx.get(f"{served}/video-sample.html", timeout=30)
    assert page.status_code == 200
    data = page_data(page.text)
    assert len(data["view"]["macros"]) == 4 and "sample/macro_0002" in data["subgraphs"]
    name = data["view"]["strip"][0][1]
    frame = httpx.get(f"{served}/{data['frames_base']}{name}", timeout=30)
    assert frame.status_code == 200 and frame.content[:2] == b"\xff\xd8"  # a JPEG
    png = httpx.get(f"{served}/{data['timeline_png']}", timeout=60)
    assert png.status_code == 200 and png.content[:8] == b"\x89PNG\r\n\x1a\n" and len(png.content) > 20_000


def test_the_pages_are_read_only_and_refuse_what_is_not_there(served):
    assert httpx.get(f"{served}/video-nope.html", timeout=30).status_code == 404
    assert httpx.get(f"{served}/frames/sample/..%2Fmemtools.json", timeout=30).status_code == 404
    assert httpx.get(f"{served}/frames/sample/missing.jpg", timeout=30).status_code == 404
    long = "a" * 5000
    for path in (f"frames/sample/{long}.jpg", f"frames/sample/{'a' * 300}.jpg", f"frames/{long}/kf_0001.jpg",
                 f"video-{long}.html", f"timeline-{long}.png", f"video-{long}.parts/1.js",
                 "video-sample%0A.html", "frames/sample/kf_0001.jpg%0A", "frames/sample/kf_0001.jpg%00",
                 "frames/sample/%2E%2E", "index-99999999999999999999999.html", "video-sample.parts/99999999999999.js"):
        got = httpx.get(f"{served}/{path}", timeout=30)
        assert got.status_code == 404, (path[:60], got.status_code, got.text[:200])  # long or odd: not there
    assert httpx.post(f"{served}/", timeout=30).status_code == 405
    assert httpx.get(f"{served}/health", timeout=30).json()["status"] == "ok"  # the server's own routes still work


@pytest.mark.skipif(not HAVE_CHROMIUM, reason=NO_CHROMIUM)
def test_a_browser_walks_from_the_served_library_to_a_subgraph(served):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    driver = chromium()
    try:
        driver.get(f"{served}/")
        driver.find_element(By.CSS_SELECTOR, 'a[href="video-sample.html"]').click()
        WebDriverWait(driver, 20).until(ec.presence_of_element_located((By.CSS_SELECTOR, "rect.macro")))
        driver.find_element(By.CSS_SELECTOR, 'rect.macro[data-id="sample/macro_0001"]').click()
        detail = WebDriverWait(driver, 20).until(ec.presence_of_element_located(
            (By.CSS_SELECTOR, '#macro-detail[data-id="sample/macro_0001"]')))
        assert "HOME 1 - 0 AWAY" in detail.text
        images = driver.find_elements(By.CSS_SELECTOR, "#macro-detail .frames img")
        assert images and all(driver.execute_script("return arguments[0].naturalWidth", i) > 0 for i in images)
        assert console_errors(driver) == []
    finally:
        driver.quit()


def test_a_frame_name_the_file_system_refuses_is_not_there():
    from memtools.show.web import ShowSite
    from memtools.store import Memory
    from memtools.tools import MemoryTools

    with Memory.open(sample_memory()) as memory:
        site = ShowSite(lambda: MemoryTools(memory))
        stored = sorted(memory.frames_dir("sample").iterdir())[0]
        assert site.frame("sample", stored.name) == stored
        assert site.frame("sample", "a" * 5000 + ".jpg") is None  # ENAMETOOLONG from the file system: not there
