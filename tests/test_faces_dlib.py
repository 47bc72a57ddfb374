"""Faces with the real model (dlib's HOG detector and ResNet descriptor, the ``faces`` extra) on real
photos: Grace Hopper (matplotlib's sample data) and Eileen Collins (scikit-image's astronaut, cropped
into tests/face_photos; both public domain). Detection and descriptors, clustering of augmented
copies, a build with faces, ``memtools repair --faces`` on a memory built without, and deleting a video."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

import cv2
import matplotlib
import numpy as np
import pytest

from build_helpers import dump_memory
from memtools.builder import BuildConfig, build_video
from memtools.builder.testing import ScriptedPerception
from memtools.cli import main
from memtools.embed import TestEmbedder
from memtools.faces import Seen, cluster_faces
from memtools.perception import FunctionVLM
from memtools.store import Memory
from memtools.store.tables.faces import load_faces

pytest.importorskip("dlib")
from memtools.faces import DlibFaces, available  # noqa: E402

pytestmark = pytest.mark.skipif(not available(), reason="needs pip install 'memtools[faces]'")
HOPPER = Path(matplotlib.get_data_path()) / "sample_data" / "grace_hopper.jpg"
ASTRONAUT = Path(__file__).parent / "face_photos" / "astronaut_face.jpg"
W, H = 480, 360


def _rgb(path: Path) -> np.ndarray:
    return np.ascontiguousarray(cv2.imread(str(path))[:, :, ::-1])


@pytest.fixture(scope="module")
def model() -> DlibFaces:
    return DlibFaces()


def _augmented(image: np.ndarray) -> list[np.ndarray]:
    """The same photo flipped, scaled down, darker, brighter, blurred: what keyframes of one person vary by."""
    h, w = image.shape[:2]
    return [image, image[:, ::-1], cv2.resize(image, (w * 2 // 3, h * 2 // 3)),
            np.clip(image * 0.6, 0, 255).astype(np.uint8), np.clip(image * 1.0 + 40, 0, 255).astype(np.uint8),
            cv2.GaussianBlur(image, (5, 5), 0)]


def test_a_real_face_is_found_and_described(model):
    found = model.find(_rgb(HOPPER))
    assert len(found) == 1
    x0, y0, x1, y1 = found[0].box
    assert 150 < x0 < x1 < 400 and 100 < y0 < y1 < 360  # her face, not the uniform
    assert found[0].vector.shape == (128,) and 0.5 < np.linalg.norm(found[0].vector) < 2


def test_augmented_copies_cluster_together_and_two_people_apart(model):
    seen = []
    for person, path in enumerate([HOPPER, ASTRONAUT]):
        for n, image in enumerate(_augmented(_rgb(path))):
            (found,) = model.find(np.ascontiguousarray(image))
            seen.append(Seen(keyframe=f"{person}-{n}", t=float(len(seen)), box=found.box, vector=found.vector,
                             macro_id=f"m{len(seen)}"))  # every copy its own macro event: clustering, not tracking
    faces = cluster_faces(seen)
    assert [[s.keyframe for s in f.sightings] for f in faces] == [[f"0-{n}" for n in range(6)],
                                                                  [f"1-{n}" for n in range(6)]]


def _frames(seconds: float, fps: float = 5.0):
    """Hopper, then the astronaut, then Hopper again, each sliding slowly across a grey canvas."""
    people = [_rgb(HOPPER), _rgb(ASTRONAUT)]
    people = [cv2.resize(p, (p.shape[1] * 300 // p.shape[0], 300)) for p in people]
    for i in range(int(seconds * fps)):
        t = i / fps
        person = people[1] if seconds / 3 <= t < 2 * seconds / 3 else people[0]
        canvas = np.full((H, W, 3), 90, np.uint8)
        x = 10 + (i * 6) % (W - person.shape[1] - 10)
        canvas[30:30 + person.shape[0], x:x + person.shape[1]] = person
        yield np.ascontiguousarray(canvas[:, :, ::-1])  # BGR for OpenCV


@pytest.fixture(scope="module")
def video(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("faces") / "people.mp4"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 5.0, (W, H))
    for frame in _frames(18.0):
        writer.write(frame)
    writer.release()
    return path


def _build(memory_path: Path, video: Path, **options) -> None:
    with Memory.create(memory_path, TestEmbedder(64)) as memory:
        build_video(memory, FunctionVLM(ScriptedPerception(episode_sec=6)), video, config=BuildConfig.short(),
                    **options)


def _face_clusters(memory_path) -> list[tuple[str, str]]:
    """The face clusters the library layer's people table holds (docs/people.md)."""
    with contextlib.closing(sqlite3.connect(memory_path / "library.sqlite")) as conn:
        return sorted(conn.execute("SELECT video_id, label FROM clusters WHERE kind = 'face'").fetchall())


def _who(faces) -> list[tuple[str, list[float]]]:
    return [(f.label, sorted({round(s.t) for s in f.sightings})) for f in faces]


@pytest.mark.slow
def test_a_build_with_faces_clusters_the_two_people(tmp_path, video, monkeypatch):
    (tmp_path / "scripted_backend.py").write_text(
        "from memtools.builder.testing import ScriptedPerception\nfrom memtools.perception import FunctionVLM\n"
        "def make():\n    return FunctionVLM(ScriptedPerception(episode_sec=6))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["build", str(video), "--memory", str(tmp_path / "memory"), "--vlm", "python:scripted_backend:make",
                 "--embedder", "test:64", "--preset", "short", "--speech", "none", "--faces", "-q"]) == 0
    faces = load_faces(tmp_path / "memory", "people")
    assert [f.label for f in faces] == ["F1", "F2"], _who(faces)
    assert all(s.t < 6 or s.t >= 12 for s in faces[0].sightings) and faces[0].sightings[-1].t >= 12  # Hopper twice
    assert all(6 <= s.t < 12 for s in faces[1].sightings)  # the astronaut between
    assert len(faces[0].centroid) == 128 and faces[0].seconds > faces[1].seconds > 0
    assert _face_clusters(tmp_path / "memory") == [("people", "F1"), ("people", "F2")]
    with Memory.open(tmp_path / "memory", TestEmbedder(64)) as memory, memory.reading() as graph:
        stored = graph.video_graph("people")
    assert stored is not None
    keyframes = {k.id: k for k in stored.keyframes}
    for s in faces[0].sightings:  # each sighting names a stored keyframe of its time and macro event
        assert keyframes[s.keyframe].t == s.t and keyframes[s.keyframe].macro_id == s.macro_id


@pytest.mark.slow
def test_an_old_memory_gains_faces_on_repair_and_loses_nothing_and_delete_forgets_them(tmp_path, video, capsys):
    memory_path = tmp_path / "memory"
    _build(memory_path, video)  # built without faces
    before = dump_memory(memory_path)
    assert not (memory_path / "faces").exists()
    assert main(["repair", "--faces", "--memory", str(memory_path)]) == 0
    assert "people: 2 face(s) in " in capsys.readouterr().out
    assert dump_memory(memory_path) == before  # the graph, vectors and keyframes as they were
    data = json.loads((memory_path / "faces" / "people.json").read_text())
    assert data["video_id"] == "people" and [f["label"] for f in data["faces"]] == ["F1", "F2"]
    assert main(["check", "--memory", str(memory_path)]) == 0  # faces/ is no leftover
    assert _face_clusters(memory_path) == [("people", "F1"), ("people", "F2")]  # the library's people place them
    with Memory.open(memory_path, TestEmbedder(64)) as memory:
        assert memory.delete_video("people")
    assert not (memory_path / "faces" / "people.json").exists()
