"""The timeline MCP App in headless Chromium, inside a small MCP Apps host (``tests/app_host``) over the real server
and the sample memory: the handshake, the tool's result in, the app's ``tools/call`` out and its answer shown.

``MEMTOOLS_WRITE_SCREENSHOTS=1`` writes the screenshots the docs show (docs/mcp-app.png, docs/mcp-app-dark.png);
otherwise the committed ones must exist.
"""

from __future__ import annotations

import os

import cv2
import numpy as np
import pytest

from app_host.harness import AppHost
from show_support import HAVE_CHROMIUM, NO_CHROMIUM, ROOT, chromium, console_errors, sample_memory

pytestmark = pytest.mark.skipif(not HAVE_CHROMIUM, reason=NO_CHROMIUM)
DOCS = ROOT / "docs"
WRITE = os.environ.get("MEMTOOLS_WRITE_SCREENSHOTS") == "1"
LOADING = [  # what the app asks for after a get_summary of the sample (by name): a few frames, its macro events
    {"name": "inspect_frames", "arguments": {"video_id": "sample", "start_sec": 0, "end_sec": 180, "max_frames": 8}},
    {"name": "search_by_time", "arguments": {"video_id": "sample", "start_sec": 0, "end_sec": 180}}]


@pytest.fixture(scope="module")
def browser():
    driver = chromium(1000, 900)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def host():
    with AppHost(sample_memory()) as h:
        yield h


def _until(driver, script: str, timeout: float = 30.0):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(lambda d: d.execute_script(script))


def open_app(browser, host, tool: str, arguments: dict, theme: str | None = "light"):
    """Load the host page for ``tool``'s result and wait in the app's frame until it has loaded what it asks for."""
    from selenium.webdriver.common.by import By

    browser.switch_to.default_content()
    browser.get(host.launch(tool, arguments, theme))
    browser.get_log("browser")  # drop what an earlier page left
    frame = _until(browser, "return document.getElementById('view')")
    browser.switch_to.frame(frame)
    _until(browser, "return document.documentElement.getAttribute('data-loaded')")
    return browser.find_element(By.CSS_SELECTOR, "#videos")


def host_calls(browser) -> list[dict]:
    browser.switch_to.default_content()
    calls = browser.execute_script("return memtoolsHost.calls")
    browser.switch_to.frame(browser.find_element("id", "view"))
    return calls


def click_and_wait(browser, css: str, macro_id: str):
    from selenium.webdriver.common.by import By

    browser.find_element(By.CSS_SELECTOR, css).click()
    _until(browser, f"var a = document.getElementById('answer'); return a.getAttribute('data-id') === '{macro_id}'"
                    " && a.querySelector('h3')")
    return browser.find_element(By.ID, "answer").text


def screenshot(browser, name: str) -> np.ndarray:
    """The app's frame as the host shows it; written to the docs when asked."""
    browser.switch_to.default_content()
    png = browser.find_element("id", "view").screenshot_as_png
    browser.switch_to.frame(browser.find_element("id", "view"))
    if WRITE:
        (DOCS / name).write_bytes(png)
    assert (DOCS / name).is_file(), f"docs/{name} is missing: run this test with MEMTOOLS_WRITE_SCREENSHOTS=1"
    return cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_COLOR)


def assert_drawn(image: np.ndarray, dark: bool) -> None:
    """Not blank: many colours (frames, bands, text) on a background of the theme's brightness."""
    h, w = image.shape[:2]
    assert h > 250 and w > 700
    colours = len(np.unique(image.reshape(-1, 3) // 8, axis=0))
    assert colours > 200 and image.std() > 30
    corner = image[2:12, -40:-2].mean()  # the app's own background
    assert (corner < 60) if dark else (corner > 200), corner


def paint_times(browser) -> dict[str, float]:
    return browser.execute_script(
        "var out = {}; performance.getEntriesByType('paint').forEach(function (e) { out[e.name] = e.startTime; });"
        "performance.getEntriesByName('memtools-app-drawn').forEach(function (e) { out.drawn = e.startTime; });"
        "return out;")


def test_a_summary_opens_the_app_and_a_click_calls_get_macro_events(browser, host):
    from selenium.webdriver.common.by import By

    videos = open_app(browser, host, "get_summary", {"video_id": "sample"})
    assert "Four scenes" in videos.text and "0:03:00" in videos.text
    assert len(videos.find_elements(By.CSS_SELECTOR, "rect.super")) == 2
    macros = [m.get_attribute("data-id") for m in videos.find_elements(By.CSS_SELECTOR, "rect.macro")]
    assert macros == [f"sample/macro_{i:04d}" for i in range(4)]
    images = videos.find_elements(By.CSS_SELECTOR, "g.frame image")
    assert len(images) == 8 and all(i.get_attribute("href").startswith("data:image/jpeg;base64,") for i in images)
    assert sorted(host_calls(browser), key=lambda c: c["name"]) == LOADING  # exactly what it needed, nothing more
    answer = click_and_wait(browser, 'rect.macro[data-id="sample/macro_0002"]', "sample/macro_0002")
    assert "Red ball knocks over boxes in Warehouse B" in answer and "[0:01:20-0:02:10]" in answer
    assert "stack of three cardboard boxes" in answer
    assert host_calls(browser)[len(LOADING):] == [
        {"name": "get_macro_events", "arguments": {"macro_ids": ["sample/macro_0002"]}}]
    assert console_errors(browser) == []
    times = paint_times(browser)
    assert times["drawn"] > 0 and times["first-contentful-paint"] > 0  # speed itself: benchmarks/app_paint.py
    print(f"\napp paint in the harness: {times}")
    assert_drawn(screenshot(browser, "mcp-app.png"), dark=False)
    sent = sum(n for _, n in host.sent)
    assert sent < 1_000_000, host.sent  # the app and every result it received, frames included


def test_search_hits_are_marked_in_the_dark(browser, host):
    from selenium.webdriver.common.by import By

    videos = open_app(browser, host, "search_nodes", {"query": "boxes", "top_k": 5}, theme="dark")
    hits = host.launch_data["result"]["structuredContent"]["hits"]
    marks = [m.get_attribute("data-id") for m in videos.find_elements(By.CSS_SELECTOR, "rect.mark")]
    assert sorted(marks) == sorted(h["id"] for h in hits) and len(marks) == 5
    assert "5 hits" in videos.text
    first = hits[0]
    click_and_wait(browser, f'rect.mark[data-id="{first["id"]}"]', first["macro_id"])
    assert host_calls(browser)[-1] == {"name": "get_macro_events", "arguments": {"macro_ids": [first["macro_id"]]}}
    assert console_errors(browser) == []
    assert_drawn(screenshot(browser, "mcp-app-dark.png"), dark=True)


def test_appearances_follow_the_systems_dark_theme_and_the_app_reaches_no_network(browser, host):
    from selenium.webdriver.common.by import By

    dark = [{"name": "prefers-color-scheme", "value": "dark"}]
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": dark})
    try:
        videos = open_app(browser, host, "get_entity_timeline", {"name": "ball"}, theme=None)  # the host sends none
        background = browser.execute_script("return getComputedStyle(document.body).backgroundColor")
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
    assert background == "rgb(21, 24, 28)"
    assert [m.get_attribute("data-id") for m in videos.find_elements(By.CSS_SELECTOR, "rect.mark")] == [
        "sample/macro_0002/ent_001"]
    assert "1 appearance" in videos.text
    blocked = browser.execute_script(
        "return fetch(arguments[0]).then(function () { return 'fetched'; }, function (e) { return 'blocked: ' + e; });",
        host.url.replace("host.html", "launch.json"))
    assert blocked.startswith("blocked"), blocked  # connect-src 'none': the app reaches only the host
    browser.get_log("browser")  # the refused fetch is reported there, as it should be
