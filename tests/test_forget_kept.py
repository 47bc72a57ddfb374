"""Forgetting a video keeps its voices, faces and checkpoints in the change log's own place (``changes/<id>/``):
an undo brings them back whole, and ``forget_person`` reaches them there (issue 47). Checked on the raw files:
no copy of a forgotten person's centroid is left anywhere under the memory folder."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from memtools.changes import forget_person, forget_video, undo_change
from memtools.embed.testing import TestEmbedder
from memtools.store import Memory
from memtools.store.tables.faces import Face, faces_path, save_faces
from memtools.store.tables.voices import load_voices, voices_path
from people_support import near, people, save, talk, voice


def face(n: int) -> np.ndarray:
    return np.random.default_rng(2000 + n).normal(size=128) * 0.1


def library(path: Path) -> Memory:
    """mon: S1 (voice 1, only there), S2 (voice 2, also tue/S1), face F1; tue: S1; mon's build checkpoints."""
    memory = Memory.create(path, TestEmbedder(32))
    save(path, "mon", {"S1": voice(1), "S2": voice(2)})
    save(path, "tue", {"S1": near(2, 5)})
    save_faces(path, "mon", [Face(label="F1", centroid=[float(x) for x in face(1)], seconds=3.0)])
    for vid in ("mon", "tue"):
        memory.write_video(talk(vid))
    speakers = memory.work_dir("mon") / "speakers"
    speakers.mkdir(parents=True)
    (speakers / "done.json").write_text(json.dumps({"centroids": {"S1": [float(x) for x in voice(1)],
                                                                  "S2": [float(x) for x in voice(2)]}}))
    (memory.work_dir("mon") / "speech").mkdir()
    (memory.work_dir("mon") / "speech" / "0.json").write_text('{"text": "Slice the onions thin."}')
    return memory


def holders(folder: Path, vector: np.ndarray) -> list[str]:
    """The files under ``folder`` holding ``vector``: as JSON numbers, or as float32 / float64 bytes."""
    text = [repr(float(x)).encode() for x in vector[:4]]
    raw = [vector.astype("<f4").tobytes()[:16], vector.astype("<f8").tobytes()[:32]]
    found = []
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            if all(t in data for t in text) or any(r in data for r in raw):
                found.append(str(path.relative_to(folder)))
    return found


def test_undo_of_a_forget_brings_voices_faces_and_checkpoints_back(tmp_path):
    with library(tmp_path / "m") as memory:
        voices, faces = voices_path(memory.path, "mon").read_bytes(), faces_path(memory.path, "mon").read_bytes()
        linked = people(memory.path)
        done = (memory.work_dir("mon") / "speakers" / "done.json").read_text()
        forgot = forget_video(memory, "mon")
        assert not memory.work_dir("mon").exists()  # nothing of it left in work/
        assert not voices_path(memory.path, "mon").exists() and not faces_path(memory.path, "mon").exists()
        undo_change(memory, forgot.change_id)
        assert voices_path(memory.path, "mon").read_bytes() == voices
        assert faces_path(memory.path, "mon").read_bytes() == faces
        assert (memory.work_dir("mon") / "speakers" / "done.json").read_text() == done
        assert people(memory.path) == linked  # matched across the library again, same person ids
        assert holders(memory.path, voice(1)) == ["voices/mon.json", "work/mon/speakers/done.json"]  # one copy


def test_forget_person_reaches_a_forgotten_videos_kept_copy(tmp_path):
    with library(tmp_path / "m") as memory:
        linked = people(memory.path)
        forgot = forget_video(memory, "mon")
        assert holders(memory.path, voice(2))  # kept for an undo, in the change log's place
        assert not any(h.startswith("work/") for h in holders(memory.path, voice(2)))
        forget_person(memory, linked[("tue", "S1")])  # voice 2: tue/S1 and the forgotten mon/S2
        forget_person(memory, linked[("mon", "S1")])  # voice 1: only in the forgotten video
        assert holders(memory.path, voice(2)) == [] and holders(memory.path, near(2, 5)) == []
        assert holders(memory.path, voice(1)) == []
        undo_change(memory, forgot.change_id)  # the video comes back without the vectors forgotten meanwhile
        assert load_voices(memory.path, "mon") == []
        assert holders(memory.path, face(1)) == ["faces/mon.json"]
        assert holders(memory.path, voice(1)) == [] and holders(memory.path, voice(2)) == []


def test_forget_person_names_a_cluster_of_a_forgotten_video(tmp_path):
    with library(tmp_path / "m") as memory:
        forget_video(memory, "mon")
        forget_person(memory, "mon/F1")
        assert holders(memory.path, face(1)) == []
        assert holders(memory.path, voice(1))  # the other clusters are kept still
