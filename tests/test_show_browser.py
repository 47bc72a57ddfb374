"""The ``memtools show`` pages in headless Chromium (Debian's chromium + chromium-driver, driven by selenium)."""

from __future__ import annotations

import pytest

from memtools.embed import TestEmbedder
from memtools.show import export_show
from memtools.store import Memory
from show_support import HAVE_CHROMIUM, NO_CHROMIUM, chromium, console_errors, long_site, sample_memory

pytestmark = pytest.mark.skipif(not HAVE_CHROMIUM, reason=NO_CHROMIUM)


@pytest.fixture(scope="module")
def browser():
    driver = chromium()
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("show-browser")
    with Memory.open(sample_memory(), TestEmbedder(64)) as memory:
        export_show(memory, root / "site")
    return root / "site"


def _open(driver, path):
    driver.get(path.as_uri())
    driver.get_log("browser")  # drop anything left from the previous page


def _wait(driver, css: str, timeout: float = 10.0):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(ec.presence_of_element_located((By.CSS_SELECTOR, css)))


def test_pages_load_without_console_errors(browser, site):
    from selenium.webdriver.common.by import By

    for name in ("index.html", "video-sample.html"):
        browser.get((site / name).as_uri())
        _wait(browser, "#app h1")
        assert console_errors(browser) == [], name
    assert "sample" in browser.find_element(By.CSS_SELECTOR, "#app").text
    frames = browser.find_elements(By.CSS_SELECTOR, ".strip img")
    assert frames and all(browser.execute_script("return arguments[0].naturalWidth", f) > 0 for f in frames)


def test_clicking_a_macro_event_shows_its_subgraph(browser, site):
    from selenium.webdriver.common.by import By

    _open(browser, site / "video-sample.html")
    assert not browser.find_elements(By.CSS_SELECTOR, "#macro-detail")
    browser.find_element(By.CSS_SELECTOR, 'rect.macro[data-id="sample/macro_0002"]').click()
    detail = _wait(browser, '#macro-detail[data-id="sample/macro_0002"]')
    text = detail.text
    assert "Red ball knocks over boxes in Warehouse B" in text and "[0:01:20-0:02:10]" in text
    assert "sample/macro_0002/evt_003" in text and '"WAREHOUSE B"' in text
    nodes = detail.find_elements(By.CSS_SELECTOR, ".graph g.node")
    assert len(nodes) == 5 + 5 + 1  # entities, micro-events, on-screen text
    assert len(detail.find_elements(By.CSS_SELECTOR, ".graph path[marker-end]")) == 12  # the typed edges
    rows = detail.find_elements(By.CSS_SELECTOR, "table.nodes tr[id^='node-']")
    assert len(rows) == 11 + 3  # every node shows its id and its times (3 utterances among them)
    assert "speech (3)" in text.lower()
    assert all(r.find_elements(By.CSS_SELECTOR, ".id") and r.find_elements(By.CSS_SELECTOR, ".time") for r in rows)
    assert browser.current_url.endswith("#sample/macro_0002") and console_errors(browser) == []
    browser.find_element(By.CSS_SELECTOR, 'button.macro-link[data-id="sample/macro_0000"]').click()
    assert "Cook prepares vegetables" in _wait(browser, '#macro-detail[data-id="sample/macro_0000"]').text


def test_the_search_box_finds_boxes(browser, site):
    from selenium.webdriver.common.by import By

    _open(browser, site / "video-sample.html")
    browser.find_element(By.ID, "search").send_keys("boxes")
    _wait(browser, "#results li.hit")
    hits = [h.get_attribute("data-id") for h in browser.find_elements(By.CSS_SELECTOR, "#results li.hit")]
    assert "sample/macro_0002/evt_003" in hits and "sample/macro_0002" in hits
    assert not any(h.startswith(("sample/macro_0000", "sample/macro_0001")) for h in hits)
    browser.find_element(By.CSS_SELECTOR, '#results li.hit[data-id="sample/macro_0002/evt_003"]').click()
    row = _wait(browser, 'tr.hit[id="node-sample/macro_0002/evt_003"]')
    assert "falls over" in row.text and console_errors(browser) == []


@pytest.mark.slow
def test_a_long_video_loads_the_details_that_did_not_fit_in_its_page(browser):
    from selenium.webdriver.common.by import By

    _open(browser, long_site() / "video-long.html")
    browser.execute_script("location.hash = 'long/macro_0700'")
    detail = _wait(browser, '#macro-detail[data-id="long/macro_0700"]')
    assert "long/macro_0700/evt_008" in detail.text and "[11:40:08-11:40:13]" in detail.text
    browser.find_element(By.ID, "search").send_keys("number 7005")
    hit = _wait(browser, '#results li.hit[data-id="long/macro_0700/ent_005"]')
    assert "number 7005" in hit.text and console_errors(browser) == []


def test_a_thousand_video_library_pages_and_filters(browser, tmp_path):
    from selenium.webdriver.common.by import By

    from memtools.show.collect import VideoRow
    from memtools.show.page import library_pages

    rows = [VideoRow(f"vid{i:04d}", f"Recording {i}", 60.0 * i, "ready", {"macro": 3}) for i in range(1000)]
    for name, html in library_pages(rows, {r.video_id for r in rows}).items():
        (tmp_path / name).write_text(html, encoding="utf-8")
    _open(browser, tmp_path / "index-3.html")
    assert len(browser.find_elements(By.CSS_SELECTOR, "table.lib tbody tr")) == 100
    assert "vid0200" in browser.find_element(By.CSS_SELECTOR, "table.lib tbody").text
    assert len(browser.find_elements(By.CSS_SELECTOR, ".pager a")) == 9  # the other nine pages
    browser.find_element(By.ID, "search").send_keys("vid0999")
    hit = _wait(browser, '#results li.hit[data-id="vid0999"]')  # found from page 3: the filter spans the library
    hit.click()
    assert browser.current_url.endswith("/video-vid0999.html")
