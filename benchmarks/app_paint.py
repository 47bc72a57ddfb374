"""The timeline MCP App's first paint and bytes, in the test harness (headless Chromium, ``tests/app_host``).

For each tool that links the app, over the sample memory: the host page loads, the app is framed,
handshakes, receives the tool's result and draws. Times are read inside the app's frame from
``performance`` (milliseconds since the frame's navigation started): first contentful paint, the
app's ``memtools-app-drawn`` mark (the first timeline drawn, one frame after) and the moment all
it asked for (frames, macro events) was drawn. Bytes: the app's HTML plus every result it received.
Prints a markdown table (medians of ``--runs``; the first run of each tool is a warm-up, not counted).

    python benchmarks/app_paint.py [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from _common import cpu_model, load_average, markdown_table, offline

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from app_host.harness import AppHost  # noqa: E402
from show_support import chromium, sample_memory  # noqa: E402

LAUNCHES = [("get_summary", {"video_id": "sample"}), ("search_nodes", {"query": "boxes", "top_k": 5}),
            ("get_entity_timeline", {"name": "ball"}), ("search_by_time", {"video_id": "sample", "start_sec": 60,
                                                                           "end_sec": 120})]
TIMES = ("var out = {loaded: performance.now()}; performance.getEntriesByType('paint').forEach(function (e) {"
         " out[e.name] = e.startTime; }); performance.getEntriesByName('memtools-app-drawn').forEach(function (e) {"
         " out.drawn = e.startTime; }); return out;")


def one(driver, host: AppHost, tool: str, arguments: dict) -> dict[str, float]:
    from selenium.webdriver.support.ui import WebDriverWait

    driver.switch_to.default_content()
    driver.get(host.launch(tool, arguments))
    driver.switch_to.frame(WebDriverWait(driver, 30).until(lambda d: d.execute_script(
        "return document.getElementById('view')")))
    loaded = "return document.documentElement.getAttribute('data-loaded') && performance.now()"
    done = WebDriverWait(driver, 60, poll_frequency=0.005).until(lambda d: d.execute_script(loaded))
    times = driver.execute_script(TIMES)
    times["loaded"] = done
    times["bytes"] = sum(n for _, n in host.sent)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    offline()
    driver = chromium(1000, 900)
    rows = []
    try:
        with AppHost(sample_memory()) as host:
            for tool, arguments in LAUNCHES:
                runs = [one(driver, host, tool, arguments) for _ in range(args.runs + 1)][1:]
                med = {k: statistics.median(r[k] for r in runs) for k in ("first-contentful-paint", "drawn", "loaded")}
                rows.append([tool, f"{med['first-contentful-paint']:.0f}", f"{med['drawn']:.0f}",
                             f"{med['loaded']:.0f}", f"{runs[0]['bytes'] / 1024:.0f} KiB"])
    finally:
        driver.quit()
    print(f"MCP App in the harness, sample memory, median of {args.runs} runs; CPU: {cpu_model()}; "
          f"load {load_average()}")
    print(markdown_table(["opened by", "first contentful paint (ms)", "timeline drawn (ms)",
                          "everything drawn (ms, polled)", "transferred"], rows))


if __name__ == "__main__":
    main()
