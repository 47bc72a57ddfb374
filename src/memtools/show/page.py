"""HTML pages: one self-contained file per page (inline CSS, JS and data; no network).

A page is ``assets/page.html`` filled with ``assets/show.css``, the scripts (``dom.js``,
``draw.js``, ``pages.js``) and one JSON block the script draws from. File names are relative
to one output folder, so the same pages
work from disk (``memtools show``) and from the server (``memtools serve --http``):

    index.html, index-2.html, ...       the library, PAGE_SIZE videos a page
    video-<id>.html                     one video (at most PAGE_BUDGET bytes)
    video-<id>.parts/<n>.js             subgraphs that did not fit, loaded when opened or searched
    timeline-<id>.png                   the timeline picture
    frames/<id>/<file>.jpg              keyframes
"""

from __future__ import annotations

import json
import logging
from functools import cache
from importlib import resources
from string import Template
from typing import Any

from memtools.show.collect import VideoRow
from memtools.tools.text import clip

log = logging.getLogger(__name__)

PAGE_SIZE = 100
PAGE_BUDGET = 1_900_000  # bytes of a video page; subgraphs beyond it go to part files
PART_BYTES = 1_000_000
MAX_LABEL = 160
MAX_KEY_ENTITIES = 8
SCRIPTS = ("dom.js", "draw.js", "pages.js")  # joined inside one function scope by page.html


@cache
def asset(name: str) -> str:
    return (resources.files("memtools.show") / "assets" / name).read_text(encoding="utf-8")


def to_json(data: Any) -> str:
    """JSON safe inside a <script> block (no '</script>', no line separators JS would choke on)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def html_page(title: str, data: dict[str, Any], placeholder: str = "search") -> str:
    return Template(asset("page.html")).substitute(
        title=_escape(title), placeholder=_escape(placeholder), css=asset("show.css"),
        js="\n".join(asset(name) for name in SCRIPTS),
        data=to_json(data))


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def video_page_name(video_id: str) -> str:
    return f"video-{video_id}.html"


def part_name(video_id: str, n: int) -> str:
    return f"video-{video_id}.parts/{n}.js"


def timeline_name(video_id: str) -> str:
    return f"timeline-{video_id}.png"


def frames_base(video_id: str) -> str:
    return f"frames/{video_id}/"


def index_name(page: int) -> str:
    return "index.html" if page <= 1 else f"index-{page}.html"


def page_outline(view: dict[str, Any]) -> dict[str, Any]:
    """The outline as a page carries it: labels clipped, key entities capped, no file paths."""
    macros = [{**m, "label": clip(m["label"], MAX_LABEL), "key_entities": m["key_entities"][:MAX_KEY_ENTITIES]}
              for m in view["macros"]]
    return {"video": view["video"], "supers": view["supers"], "macros": macros, "strip": view.get("strip", []),
            "entities": view.get("entities", [])}


def video_files(view: dict[str, Any], *, timeline: bool = True, budget: int = PAGE_BUDGET,
                part_bytes: int = PART_BYTES) -> dict[str, str]:
    """The page of one video and its part files: {relative name: text}.

    Subgraphs are inlined in time order until the page would pass ``budget`` bytes; the rest
    go to part files of about ``part_bytes`` each, which the page loads with a <script> tag
    (works from disk as well as over HTTP) when one of their macro events is opened or searched.
    """
    vid = view["video"]["id"]
    data: dict[str, Any] = {
        "kind": "video", "view": page_outline(view), "subgraphs": {}, "parts": {"files": [], "of": {}},
        "index_href": index_name(1), "frames_base": frames_base(vid),
        "timeline_png": timeline_name(vid) if timeline else "",
    }
    title = f"{view['video']['title'] or vid} — memtools"
    used = len(html_page(title, data).encode("utf-8"))
    if used > budget:
        log.warning("the outline of %s alone takes %d bytes, more than the page budget of %d", vid, used, budget)
    chunks: list[dict[str, Any]] = []
    size = 0
    for m in view["macros"]:
        sub = view["subgraphs"].get(m["id"])
        if sub is None:
            continue
        cost = len(to_json({m["id"]: sub}).encode("utf-8")) + 40  # + the part index entry
        if not chunks and used + cost <= budget:
            data["subgraphs"][m["id"]] = sub
            used += cost
            continue
        if not chunks or size + cost > part_bytes:
            chunks.append({})
            size = 0
        chunks[-1][m["id"]] = sub
        size += cost
    files: dict[str, str] = {}
    for n, chunk in enumerate(chunks):
        name = part_name(vid, n)
        data["parts"]["files"].append(name)
        data["parts"]["of"].update({mid: n for mid in chunk})
        files[name] = f"window.memtoolsPart({n}, {to_json(chunk)});\n"
    files[video_page_name(vid)] = html_page(title, data, "search this video")
    return files


def library_pages(rows: list[VideoRow], linked: set[str], *, title: str = "memtools library",
                  page_size: int = PAGE_SIZE) -> dict[str, str]:
    """The library index: ``page_size`` videos a page, each page with a filter over all videos."""
    pages = max(1, -(-len(rows) // page_size))
    hrefs = [index_name(p) for p in range(1, pages + 1)]

    def href(row: VideoRow) -> str:
        return video_page_name(row.video_id) if row.video_id in linked else ""

    every = [[r.video_id, clip(r.title, 120), round(r.duration, 1), href(r)] for r in rows]
    files = {}
    for p in range(1, pages + 1):
        chunk = rows[(p - 1) * page_size: p * page_size]
        data = {"kind": "library", "title": title, "page": p, "pages": hrefs, "total": len(rows),
                "rows": [{**r.as_json(), "href": href(r)} for r in chunk], "all": every}
        files[index_name(p)] = html_page(f"{title} ({p}/{pages})", data, "filter videos")
    return files
