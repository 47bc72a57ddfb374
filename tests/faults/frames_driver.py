"""Run by ``test_faults_frames.py`` in a fresh process per graph engine (kuzu and ladybug cannot
load in one process): write the two versions of a synthetic video, build one into a memory
(the killed run: with ``MEMTOOLS_FAULT_POINT``), and describe memories as JSON.

    python frames_driver.py videos FOLDER                  # v1.mp4 and v2.mp4: other scenes, lengths
    python frames_driver.py build MEMORY VIDEO ENGINE      # build VIDEO as video "clip"
    python frames_driver.py delete MEMORY                  # delete video "clip"
    python frames_driver.py recover PLAN.json OUT.json     # per memory: recover, describe, build again
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the synthetic videos

VIDEO = "clip"


def videos(folder: Path) -> None:
    """Two versions of one recording: other scenes and another length, so another keyframe set."""
    from synthetic_video import scene, write_video

    fps = 5
    write_video(folder / "v1.mp4", [scene(i // (8 * fps)) for i in range(32 * fps)], fps=fps)
    write_video(folder / "v2.mp4", [scene(50 + i // (6 * fps)) for i in range(42 * fps)], fps=fps)


def config():
    from memtools.builder import BuildConfig

    return BuildConfig.short().model_copy(update={"window_sec": 30.0, "frames_per_window": 6,
                                                  "frames_per_macro": 2, "concurrency": 2})


def _open(memory: str, engine: str | None = None):
    from memtools.embed import TestEmbedder, TestImageEmbedder
    from memtools.store import Memory

    return Memory.create(memory, TestEmbedder(64), image_embedder=TestImageEmbedder(), graph_engine=engine)


def build(memory: str, video: str, engine: str | None = None) -> None:
    from memtools.builder import build_video
    from memtools.builder.testing import scripted_vlm

    with _open(memory, engine) as mem:
        build_video(mem, scripted_vlm(episode_sec=10), video, video_id=VIDEO, config=config())


def check(memory: str) -> tuple[int, str]:
    from memtools.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(["check", "--memory", memory])
    return code, out.getvalue()


def describe(memory: str) -> dict:
    """Each part of the video "clip" (graph, lance rows, manifest, frame files), for comparison
    with the old and the new version; the next writer recovers a killed write first."""
    from memtools.schema import NodeKind
    from memtools.store.catalog.manifest import read_manifest
    from memtools.store.integrity.frame_files import image_damage
    from memtools.store.writes.frame_swap import SWAP

    root = Path(memory)
    with _open(memory) as mem:
        mem.finish_indexes()  # a write of nothing: recovers a killed write
        with mem.reading() as g:
            ids = g.ids_by_video(list(NodeKind)).get(VIDEO, set())
            listed = sorted(k.path for k in g.keyframes(VIDEO, 0.0, math.inf))
        nodes = mem.vectors_unchecked.nodes()
        node_rows = sorted((r["id"], r["text"]) for r in nodes.search().select(["id", "text"]).limit(None)
                           .to_arrow().to_pylist() if r["id"].split("/")[0] == VIDEO)
        keyframes = mem.keyframes.table() if mem.keyframes is not None else None
        keyframe_rows = sorted(r["path"] for r in keyframes.search().select(["path", "video_id"]).limit(None)
                               .to_arrow().to_pylist() if r["video_id"] == VIDEO) if keyframes is not None else []
    entry = read_manifest(root).videos.get(VIDEO)
    files = sorted((root / "frames" / VIDEO).iterdir()) if (root / "frames" / VIDEO).is_dir() else []
    code, report = check(memory)
    return {"graph": {"ids": sorted(ids), "keyframes": listed},
            "rows": {"nodes": node_rows, "keyframes": keyframe_rows},
            "manifest": {"counts": entry.counts, "keyframe_vectors": entry.keyframe_vectors} if entry else None,
            "frames": {f.relative_to(root).as_posix(): hashlib.sha256(f.read_bytes()).hexdigest() for f in files},
            "undecodable": [f.name for f in files if image_damage(f) is not None],
            "status": entry.status if entry else None, "aside_left": (root / SWAP).exists(),
            "check": code, "report": report[-1500:]}


def recover(plan_file: str, out_file: str) -> None:
    results = []
    for case in json.loads(Path(plan_file).read_text()):
        try:
            halfway = describe(case["memory"])
        except Exception as exc:  # a refusal to read is a finding, reported by the test
            halfway = {"error": f"{type(exc).__name__}: {exc}"}
        try:
            build(case["memory"], case["video"])
            after = describe(case["memory"])
        except Exception as exc:
            after = {"error": f"{type(exc).__name__}: {exc}"}
        results.append({**case, "halfway": halfway, "after": after})
    Path(out_file).write_text(json.dumps(results))


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    if command == "videos":
        videos(Path(args[0]))
    elif command == "build":
        build(*args)
    elif command == "delete":
        with _open(args[0]) as mem:
            mem.delete_video(VIDEO)
    elif command == "describe":
        print(json.dumps(describe(args[0])))
    elif command == "recover":
        recover(*args)
