"""A memory to purge and a reader of every byte of it, for tests/test_purge_bytes.py.

Run as a child process (kuzu and ladybug cannot share one): ``python purge_support.py ENGINE FOLDER SCENARIO``
prints one JSON object of what it found. ``thu`` holds sentences no other video holds (in its captions, events
and transcript), its keyframe files, build checkpoints, voices and faces, a finished job and lines of the reads
audit; ``mon`` is forgotten (undoably) first, so its copies live in the change log only; ``tue`` stays.

The lance data files are searched as written: the positive control finds the sentences and the vectors' float32
bytes in them before the purge (lance 0.40 writes these string and vector pages uncompressed), so they are not
decoded; ``changes.sqlite``'s compressed copies of videos (zlib) are decompressed and searched too.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import zlib
from contextlib import closing
from pathlib import Path

import numpy as np

from memtools.embed.testing import TestEmbedder
from memtools.store import Memory
from memtools.store.tables.faces import Face, save_faces
from memtools.store.tables.voices import Voice, save_voices
from memtools.testing import kitchen_graph, with_speech

EMBEDDER = TestEmbedder(32)
SECRETS = {
    "thu": ("I look for my keys on the table near the zqxfruit bowl", "Zqxthu hides the spare key under a mat"),
    "mon": ("Monday the zqxmon parcel arrives at the blue door", "Zqxmon signs for the parcel with a green pen"),
}
"""Per video: a transcript line and a caption (macro summary, event description) found nowhere else."""


def voice(n: int) -> list[float]:
    v = np.random.default_rng(3000 + n).normal(size=64)
    return [float(x) for x in v / np.linalg.norm(v)]


def graph(video_id: str):
    g = with_speech(kitchen_graph(video_id))
    for line in g.speech:
        line.speaker = "S1"  # the voice cluster saved for the video
    if video_id in SECRETS:
        said, caption = SECRETS[video_id]
        g.speech[0].text = said
        g.macros[0].summary = caption
        g.events[0].description = caption + " again"
    return g


def build(folder: Path, engine: str) -> None:
    with Memory.create(folder, EMBEDDER, graph_engine=engine) as memory:
        for n, vid in enumerate(("mon", "tue", "thu")):  # before the videos: the library links them as written
            save_voices(folder, vid, [Voice(label="S1", centroid=voice(n), utterances=2, seconds=8.0)])
            save_faces(folder, vid, [Face(label="F1", centroid=voice(10 + n), seconds=3.0)])
        memory.write_videos([graph(v) for v in ("mon", "tue", "thu")])
        for vid in ("mon", "tue", "thu"):
            frames = memory.frames_dir(vid)
            frames.mkdir(parents=True, exist_ok=True)
            (frames / "0001.jpg").write_bytes(b"\xff\xd8 frame of " + vid.encode() + b" zqxframe" + vid.encode())
            work = memory.work_dir(vid) / "speech"
            work.mkdir(parents=True, exist_ok=True)
            (work / "0.json").write_text(json.dumps({"text": SECRETS.get(vid, ("plain",))[0]}))
    (folder / "jobs.json").write_text(json.dumps({"version": 1, "jobs": [
        {"job_id": f"j{vid}", "source": f"/videos/{vid}.mp4", "video_id": vid, "state": "done"}
        for vid in ("mon", "tue", "thu")]}))
    (folder / "reads.jsonl").write_text("".join(json.dumps(
        {"at": "2026-12-05T05:00:00+00:00", "caller": "alice", "tool": "get_summary", "arguments": {"video_id": vid},
         "node_ids": [f"{vid}/macro_0000"]}) + "\n" for vid in ("mon", "tue", "thu")))


def vectors_of(memory: Memory, video_id: str) -> list[bytes]:
    """The float32 bytes of the video's own vectors (of the rows holding its secret sentences: the others' texts
    repeat in other videos) in the lance ``nodes`` table, as the table holds them."""
    rows = memory.vectors_unchecked.nodes().search().where(f"video_id = '{video_id}'").limit(1000).to_list()
    unique = {}
    for row in rows:
        data = np.asarray(row["vector"], dtype="<f4").tobytes()
        if "zqx" in str(row["text"]).lower() and data not in unique.values():
            unique[row["id"]] = data
    return list(unique.values())


def needles(memory: Memory, video_id: str, index: int) -> dict[str, bytes]:
    """What must not be found of a video: its sentences, its vectors (float32 bytes, as lance holds them), its
    voice and face centroids (as JSON numbers and float32 bytes) and its keyframe's marker."""
    said, caption = SECRETS[video_id]
    out = {"said": said.encode(), "caption": caption.encode(), "frame": b"zqxframe" + video_id.encode()}
    out.update({f"vector{i}": v for i, v in enumerate(vectors_of(memory, video_id)[:3])})
    for name, n in (("voice", index), ("face", 10 + index)):
        values = voice(n)
        out[name] = repr(values[0]).encode()
        out[name + "_f4"] = np.asarray(values, dtype="<f4").tobytes()[:16]
    return out


def _blobs(path: Path) -> list[bytes]:
    """The zlib-compressed values of an SQLite file, decompressed (the change log keeps videos so)."""
    out = []
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
                for row in conn.execute(f"SELECT * FROM {table}"):
                    for value in row:
                        if isinstance(value, bytes):
                            try:
                                out.append(zlib.decompress(value))
                            except zlib.error:
                                pass
    except sqlite3.Error:
        pass
    return out


def holders(folder: Path, wanted: dict[str, bytes]) -> dict[str, list[str]]:
    """For each needle, the files under ``folder`` whose raw bytes (or decompressed blobs) hold it."""
    found: dict[str, list[str]] = {name: [] for name in wanted}
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        data = [path.read_bytes()]
        if path.suffix == ".sqlite":
            data += _blobs(path)
        for name, needle in wanted.items():
            if any(needle in d for d in data):
                found[name].append(path.relative_to(folder).as_posix())
    return found


def _answers(folder: Path) -> dict[str, object]:
    from memtools.tools import MemoryTools

    with Memory.open(folder, EMBEDDER) as memory:
        tools = MemoryTools(memory)
        hits = tools.search_nodes("the pan catches fire", top_k=50).hits
        return {"videos": sorted(memory.video_ids()), "hit_videos": sorted({h.video_id for h in hits}),
                "summary": tools.get_summary("tue").render()[:60]}


def scenario_videos(folder: Path, engine: str) -> dict[str, object]:
    from memtools.changes import forget_video, undo_change
    from memtools.changes.purge import receipts
    from memtools.errors import ToolError

    build(folder, engine)
    out: dict[str, object] = {}
    with Memory.open(folder, EMBEDDER) as memory:
        wanted = {f"{vid}:{k}": v for vid, i in (("mon", 0), ("thu", 2)) for k, v in needles(memory, vid, i).items()}
        forgot = forget_video(memory, "mon")
        out["before"] = holders(folder, wanted)
        out["receipt_thu"] = forget_video(memory, "thu", purge=True).receipt
        out["receipt_mon"] = forget_video(memory, "mon", purge=True).receipt
        try:
            undo_change(memory, forgot.change_id)
        except ToolError as exc:
            out["undo"] = str(exc)
    out["after"] = holders(folder, wanted)
    out["stored"] = receipts(folder)
    out["answers"] = _answers(folder)
    out["files"] = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    with closing(sqlite3.connect(folder / "changes.sqlite")) as conn:
        out["log"] = conn.execute("SELECT seq, action, summary, state, before IS NULL FROM changes").fetchall()
    return out


def scenario_person(folder: Path, engine: str) -> dict[str, object]:
    from memtools.changes import forget_person, forget_video
    from people_support import people

    build(folder, engine)
    wanted = {f"{vid}:{form}": (repr(voice(n)[0]).encode() if form == "json" else
                                np.asarray(voice(n), dtype="<f4").tobytes()[:16])
              for vid, n in (("mon", 0), ("tue", 1)) for form in ("json", "f4")}
    with Memory.open(folder, EMBEDDER) as memory:
        forget_video(memory, "mon")  # mon's voice is kept for an undo, in changes/<id>/
        linked = people(folder)
        out: dict[str, object] = {"before": holders(folder, wanted)}
        out["receipt_mon"] = forget_person(memory, "mon/S1", purge=True).receipt
        out["receipt_tue"] = forget_person(memory, linked[("tue", "S1")], purge=True).receipt
        out["after"] = holders(folder, wanted)
    return out


if __name__ == "__main__":
    engine, where, which = sys.argv[1:4]
    run = {"videos": scenario_videos, "person": scenario_person}[which]
    print(json.dumps(run(Path(where), engine)))
