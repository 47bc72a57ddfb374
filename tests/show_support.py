"""Memories the ``memtools show`` tests look at: the bundled sample and a long synthetic video."""

from __future__ import annotations

import atexit
import functools
import importlib.util
import shutil
import tempfile
from pathlib import Path

from memtools.builder import BuildConfig, build_video
from memtools.embed import TestEmbedder
from memtools.perception import ReplayVLM
from memtools.schema import (
    Edge,
    EdgeCategory,
    Entity,
    EntityType,
    MacroEvent,
    MicroEvent,
    OcrText,
    SuperEvent,
    Video,
    VideoGraph,
    entity_id,
    event_id,
    macro_id,
    ocr_id,
    super_id,
)
from memtools.speech.whisper import WhisperRecognizer
from memtools.store import Memory

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
CHROMEDRIVER = Path("/usr/bin/chromedriver")
CHROMIUM = next((Path(p) for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser") if Path(p).exists()), None)


@functools.cache
def sample_memory() -> Path:
    """The sample memory, built once per test process (tests only read it)."""
    folder = Path(tempfile.mkdtemp(prefix="memtools-show-sample-"))
    atexit.register(shutil.rmtree, folder, True)
    return build_sample(folder)


def build_sample(folder: Path) -> Path:
    """The quickstart's memory: the generated sample video built from the recorded answers."""
    spec = importlib.util.spec_from_file_location("make_sample_video", EXAMPLES / "make_sample_video.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    video = module.make_sample_video(folder / "sample.mp4")
    with Memory.create(folder / "memory", TestEmbedder(64)) as memory:
        build_video(memory, ReplayVLM(EXAMPLES / "sample" / "responses.jsonl"), video, config=BuildConfig.default(),
                    speech=WhisperRecognizer())  # the sample's narrator, as the recording was made
    return folder / "memory"


WORDS = ("forklift pallet shelf worker crate ladder scanner doorway conveyor trolley box tape label aisle "
         "helmet vest clipboard barrier light window").split()


def long_graph(video_id: str = "long", macros: int = 720, per_macro: int = 8, seconds: float = 60.0) -> VideoGraph:
    """A 12-hour warehouse recording: one macro event a minute, each with a full subgraph
    (``per_macro`` entities and micro-events, two on-screen texts, role and temporal edges)."""
    v = video_id
    supers_n = max(1, macros // 30)
    g = VideoGraph(video=Video(id=v, title="Twelve hours of a warehouse floor", duration=macros * seconds,
                               description="A fixed camera watches a warehouse for a whole shift.",
                               themes=["logistics"], key_entities=["worker", "forklift"]))
    for s in range(supers_n):
        g.supers.append(SuperEvent(id=super_id(v, s), video_id=v, ordinal=s, label=f"Shift hour {s + 1}",
                                   t_start=s * 30 * seconds, t_end=(s + 1) * 30 * seconds,
                                   description="Workers move crates between the aisles " * 3, key_entities=["worker"]))
    for i in range(macros):
        m, t0 = macro_id(v, i), i * seconds
        word = WORDS[i % len(WORDS)]
        g.macros.append(MacroEvent(id=m, video_id=v, super_id=super_id(v, min(i // 30, supers_n - 1)), ordinal=i,
                                   label=f"A worker moves the {word} to aisle {i % 40}", t_start=t0, t_end=t0 + seconds,
                                   summary=f"In minute {i} a worker in a {word} vest carries crates along aisle "
                                           f"{i % 40}, scans their labels and stacks them on a pallet. " * 2,
                                   key_entities=["worker", word, "pallet"]))
        for k in range(1, per_macro + 1):
            g.entities.append(Entity(id=entity_id(m, k), video_id=v, macro_id=m, entity_type=EntityType.OBJECT,
                                     description=f"a {WORDS[(i + k) % len(WORDS)]} with a printed barcode label "
                                                 f"number {i * 10 + k}", attributes={"color": "grey", "size": "large"}))
            g.events.append(MicroEvent(id=event_id(m, k), video_id=v, macro_id=m, t_start=t0 + k, t_end=t0 + k + 5,
                                       subject="worker", object=WORDS[k % len(WORDS)], action=f"lifts item {k}",
                                       description=f"The worker lifts the {WORDS[k % len(WORDS)]} from the shelf "
                                                   "and walks with it to the waiting pallet."))
            g.edges.append(Edge(source=entity_id(m, k), target=event_id(m, k), category=EdgeCategory.ROLE,
                                label="RECEIVES", description="The item is what gets lifted."))
            if k > 1:
                g.edges.append(Edge(source=event_id(m, k - 1), target=event_id(m, k), category=EdgeCategory.TEMPORAL,
                                    label="BEFORE", description="One lift follows the other."))
        for k in (1, 2):
            g.ocr.append(OcrText(id=ocr_id(m, k), video_id=v, macro_id=m, t_start=t0, t_end=t0 + 10,
                                 text=f"AISLE {i % 40}-{k}", description="A sign over the aisle."))
    g.check()
    return g


def write_long_memory(folder: Path, **kwargs) -> Path:
    path = folder / "long-memory"
    shutil.rmtree(path, ignore_errors=True)
    with Memory.create(path, TestEmbedder(16)) as memory:
        memory.write_video(long_graph(**kwargs))
    return path


def page_data(html: str) -> dict:
    """The JSON block a page draws from."""
    import json
    import re

    match = re.search(r'<script id="memtools-data" type="application/json">(.*?)</script>', html, re.S)
    assert match, "no data block in the page"
    return json.loads(match.group(1))


@functools.cache
def long_site() -> Path:
    """The pages of the 12-hour video (no timeline picture), written once per test process."""
    from memtools.show import export_show

    folder = Path(tempfile.mkdtemp(prefix="memtools-show-long-"))
    atexit.register(shutil.rmtree, folder, True)
    with Memory.open(write_long_memory(folder), TestEmbedder(16)) as memory:
        export_show(memory, folder / "site", timeline=False)
    return folder / "site"


def chromium(width: int = 1400, height: int = 1000):
    """Headless Chromium through Debian's chromedriver; selenium-manager never downloads anything."""
    import os

    os.environ.setdefault("SE_OFFLINE", "true")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={width},{height}", "--allow-file-access-from-files"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(30)
    return driver


def console_errors(driver) -> list[dict]:
    return [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]


NO_CHROMIUM = ("needs Debian's chromium and chromium-driver (.ci/run installs them: "
               "apt-get install -y chromium chromium-driver) and selenium (in memtools[dev]; scripts/test-mcp2.sh's "
               "venv has none)")
HAVE_CHROMIUM = CHROMIUM is not None and CHROMEDRIVER.exists() and importlib.util.find_spec("selenium") is not None
