"""The timeline picture of one video (matplotlib, Agg backend): what happens when, at a glance.

Rows from top to bottom: a keyframe strip, super-event bands, macro events with their
labels (a label is drawn only where it fits), one lane per main entity showing the macro
events it appears in, and speech density when the video has speech.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, BinaryIO

import cv2
import numpy as np

from memtools.tools.text import clip, hms

WIDTH_IN = 14.0
DPI = 100
PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f"]


def _thumb(path: Path, height: int = 72) -> np.ndarray | None:
    image = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if image is None:
        return None
    h, w = image.shape[:2]
    image = cv2.resize(image, (max(1, round(w * height / h)), height), interpolation=cv2.INTER_AREA)
    return cv2.cvtColor(image, cv2.COLOR_BGR2RGB)


def _ticks(duration: float) -> tuple[list[float], list[str]]:
    steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600]
    step = next((s for s in steps if duration / s <= 12), 43200)
    ticks = [float(i * step) for i in range(int(duration // step) + 1)]
    return ticks, [hms(t) for t in ticks]


def draw_timeline(view: dict[str, Any], out: str | os.PathLike | BinaryIO, *, memory_path: str | os.PathLike,
                  speech: list[tuple[float, float]] | None = None) -> Path | BinaryIO:
    """Write the timeline PNG of ``view`` (from ``collect.video_view``) to ``out`` (a path or a
    binary file); returns ``out``.

    ``speech``: (start, end) spans of speech, drawn as a density row; default: the view's own.
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure  # the OO API: no pyplot state, safe in threads

    video, supers, macros = view["video"], view["supers"], view["macros"]
    duration = float(video["duration"] or max([m["t1"] for m in macros] or [1.0])) or 1.0
    lanes = view["entities"]
    speech = speech if speech is not None else view.get("speech")
    rows = [("frames", 1.4)] if view.get("strip") else []
    rows += [("super", 0.8), ("macro", 1.4)] + [("entity", 0.32)] * len(lanes)
    if speech:
        rows.append(("speech", 0.6))
    height = sum(h for _, h in rows) + 1.2
    fig = Figure(figsize=(WIDTH_IN, height), dpi=DPI)
    ax = fig.add_axes((0.13, 0.8 / height, 0.85, 1 - 1.2 / height))
    ax.set_xlim(0, duration)
    total = sum(h for _, h in rows)
    ax.set_ylim(0, total)
    ax.invert_yaxis()
    ax.set_title(clip(f"{video['id']}: {video['title'] or '(untitled)'}", 120), loc="left", fontsize=11)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ticks, labels = _ticks(duration)
    ax.set_xticks(ticks, labels, fontsize=8)
    if duration - ticks[-1] < 0.03 * duration:  # a label at the right edge ends at its tick: none is cut off
        ax.get_xticklabels()[-1].set_horizontalalignment("right")
    ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    px_per_sec = WIDTH_IN * DPI * 0.85 / duration
    y = 0.0
    names, centers = [], []
    lane = 0
    for kind, h in rows:
        top, mid = y + 0.1, y + h / 2
        if kind == "frames":
            names.append("keyframes")
            strip = view["strip"]
            slot = duration / max(len(strip), 1)
            for t, name in strip:
                path = view["frame_paths"].get(name)
                thumb = _thumb(Path(memory_path) / path) if path else None
                if thumb is None:
                    continue
                aspect = thumb.shape[1] / thumb.shape[0]
                w = min(slot * 0.95, (h - 0.2) * aspect * duration / (WIDTH_IN * 0.85))
                x0 = min(max(t - w / 2, 0), duration - w)
                ax.imshow(thumb, extent=(x0, x0 + w, y + h - 0.1, top), aspect="auto", zorder=2)
        elif kind == "super":
            names.append("super events")
            for i, s in enumerate(supers):
                ax.broken_barh([(s["t0"], max(s["t1"] - s["t0"], 1e-6))], (top, h - 0.2),
                               facecolors=PALETTE[i % len(PALETTE)], alpha=0.35, edgecolor="white")
                _label(ax, s["t0"], s["t1"], mid, s["label"], px_per_sec, bold=True)
        elif kind == "macro":
            names.append("macro events")
            color = {s["id"]: PALETTE[i % len(PALETTE)] for i, s in enumerate(supers)}
            for i, m in enumerate(macros):
                off = 0.15 if i % 2 else 0.0  # alternate rows so neighbours stay apart
                ax.broken_barh([(m["t0"], max(m["t1"] - m["t0"], 1e-6))], (top + off, h - 0.35),
                               facecolors=color.get(m["super"], "#888888"), alpha=0.8, edgecolor="white",
                               linewidth=0.8 if len(macros) < 200 else 0)
                _label(ax, m["t0"], m["t1"], top + off + (h - 0.35) / 2, m["label"], px_per_sec, color="white")
        elif kind == "entity":
            entity = lanes[lane]
            lane += 1
            names.append(clip(entity["name"], 22))
            spans = [(m["t0"], max(m["t1"] - m["t0"], 1e-6)) for m in macros if m["id"] in set(entity["macros"])]
            ax.broken_barh(spans, (top + 0.02, h - 0.24), facecolors="#555555")
        elif kind == "speech":
            names.append("speech")
            bins = np.zeros(200)
            for s0, s1 in speech or []:
                a, b = int(200 * s0 / duration), int(200 * s1 / duration)
                bins[max(a, 0):min(max(b, a + 1), 200)] += 1
            xs = np.linspace(0, duration, 201)
            ax.stairs(y + h - 0.1 - (h - 0.2) * bins / max(bins.max(), 1), xs, baseline=y + h - 0.1,
                      fill=True, color="#7a5195")
        centers.append(mid)
        y += h
    ax.set_yticks(centers, names, fontsize=8)
    ax.tick_params(axis="y", length=0)
    if isinstance(out, (str, os.PathLike)):
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="png", dpi=DPI, metadata={"Software": None})
    return out


def _label(ax, t0: float, t1: float, y: float, text: str, px_per_sec: float, *, color: str = "black",
           bold: bool = False) -> None:
    """Draw ``text`` centred in [t0, t1] if at least a few characters fit there."""
    chars = int((t1 - t0) * px_per_sec / 6.5)
    if chars < 4:
        return
    ax.text((t0 + t1) / 2, y, clip(text, chars), ha="center", va="center", fontsize=7.5, color=color,
            fontweight="bold" if bold else "normal", clip_on=True, zorder=3)
