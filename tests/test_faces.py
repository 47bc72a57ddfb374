"""Faces without dlib: tracking and clustering on given descriptors (the model seam faked), the
``faces/<video>.json`` contract, the clear error without the faces extra, and a default build that
never imports dlib. The real model's tests are in test_faces_dlib.py."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

from memtools.cli import main
from memtools.faces import Seen, cluster_faces, track
from memtools.faces import models as face_models
from memtools.linkage import average_linkage
from memtools.store.tables.faces import FOLDER, Face, Sighting, load_faces, remove_faces, save_faces
from replica_support import bucket_fixture, s3_endpoint_fixture  # noqa: F401 - fixtures
from synthetic_video import story_frames, write_video

RNG = np.random.default_rng(7)
PEOPLE = [RNG.normal(0, 0.09, 128) for _ in range(3)]  # dlib-like: people ~1.0 apart, one person within ~0.3


def _near(person: int, spread: float = 0.012) -> np.ndarray:
    return PEOPLE[person] + RNG.normal(0, spread, 128)


def _seen(person: int, t: float, box=(100, 100, 180, 180), macro: str | None = "m1") -> Seen:
    return Seen(keyframe=f"kf-{t:g}", t=t, box=box, vector=_near(person), macro_id=macro)


def test_people_are_far_apart_and_one_person_close():
    d_same = np.linalg.norm(_near(0) - _near(0))
    d_other = np.linalg.norm(_near(0) - _near(1))
    assert d_same < 0.35 < 0.8 < d_other


def test_a_face_on_consecutive_keyframes_of_a_macro_event_is_one_track():
    seen = [_seen(0, 0.0), _seen(0, 2.0, box=(104, 102, 184, 182)), _seen(0, 4.0, box=(300, 50, 380, 130)),
            _seen(0, 6.0, macro="m2")]  # moved far (still the same descriptor): one track; another macro: a new one
    assert track(seen) == [[0, 1, 2], [3]]


def test_two_faces_on_one_keyframe_stay_two_tracks_and_two_clusters():
    seen = [_seen(0, 0.0), _seen(1, 0.0, box=(300, 100, 380, 180)),
            _seen(0, 2.0), _seen(1, 2.0, box=(300, 100, 380, 180))]
    assert sorted(track(seen)) == [[0, 2], [1, 3]]
    faces = cluster_faces(seen)
    assert [f.label for f in faces] == ["F1", "F2"] and [len(f.sightings) for f in faces] == [2, 2]


def test_clusters_join_one_person_across_macro_events_and_keep_people_apart():
    order = [0, 1, 0, 2, 1, 0, 2, 0]
    seen = [_seen(p, float(2 * i), macro=f"m{i}") for i, p in enumerate(order)]
    faces = cluster_faces(seen, step=2.0)
    assert [f.label for f in faces] == ["F1", "F2", "F3"]
    assert [[s.t for s in f.sightings] for f in faces] == [[0.0, 4.0, 10.0, 14.0], [2.0, 8.0], [6.0, 12.0]]
    assert faces[0].seconds == 8.0  # four single-sighting tracks, each one keyframe gap
    assert np.linalg.norm(np.array(faces[0].centroid) - PEOPLE[0]) < 0.1  # the raw mean, not unit length
    assert faces[0].sightings[0].keyframe == "kf-0" and faces[0].sightings[0].box == [100, 100, 180, 180]


def test_two_people_seen_together_never_merge_even_when_alike():
    twin = PEOPLE[0] + RNG.normal(0, 0.02, 128)  # closer than the threshold to person 0
    seen = [_seen(0, 0.0), Seen("kf-0", 0.0, (300, 100, 380, 180), twin, "m1")]
    assert len(cluster_faces(seen)) == 2


def test_average_linkage_stops_at_the_threshold_and_honours_cannot_links():
    dist = np.array([[0, 0.2, 0.9], [0.2, 0, 0.8], [0.9, 0.8, 0]])
    assert len(set(average_linkage(dist, 0.5))) == 2
    dist[0, 1] = dist[1, 0] = np.inf
    assert len(set(average_linkage(dist, 0.5))) == 3


def test_faces_round_trip_and_forget(tmp_path):
    faces = [Face(label="F1", centroid=[0.1] * 128, seconds=4.0,
                  sightings=[Sighting(t=2.0, keyframe="talk:kf:1", box=[1, 2, 30, 40], macro_id="talk:m:0")])]
    save_faces(tmp_path, "talk", faces)
    data = json.loads((tmp_path / FOLDER / "talk.json").read_text())
    assert data["video_id"] == "talk" and data["faces"][0]["sightings"][0]["box"] == [1, 2, 30, 40]
    assert load_faces(tmp_path, "talk") == faces
    assert load_faces(tmp_path, "other") == []
    (tmp_path / FOLDER / "talk.json").write_text("{not json")
    assert load_faces(tmp_path, "talk") == []  # damaged: only the clusters are lost
    remove_faces(tmp_path, "talk")
    assert not (tmp_path / FOLDER / "talk.json").exists()


def test_without_the_faces_extra_the_flags_say_what_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(face_models, "available", lambda: False)
    assert main(["repair", "--faces", "--memory", str(tmp_path / "none")]) != 0
    err = capsys.readouterr().err
    assert "pip install 'memtools[faces]'" in err and "Traceback" not in err
    video = write_video(tmp_path / "v.mp4", story_frames())
    assert main(["build", str(video), "--faces", "--memory", str(tmp_path / "m"), "--replay", str(video)]) != 0
    assert "memtools[faces]" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


BUILD = """
import sys
from pathlib import Path
sys.path.insert(0, {tests!r})
from replica_support import bucket_fixture, s3_endpoint_fixture  # noqa: F401 - fixtures
from synthetic_video import story_frames, write_video
from memtools.builder import BuildConfig, build_video
from memtools.builder.testing import ScriptedPerception
from memtools.embed import TestEmbedder
from memtools.perception import FunctionVLM
from memtools.store import Memory
video = write_video(Path({tmp!r}) / "story.mp4", story_frames())
with Memory.create(Path({tmp!r}) / "memory", TestEmbedder(64)) as memory:
    build_video(memory, FunctionVLM(ScriptedPerception(episode_sec=4)), video, config=BuildConfig.short())
print("dlib" in sys.modules, any(m.startswith("face_recognition") for m in sys.modules))
"""


def test_a_default_build_never_imports_dlib_nor_writes_faces(tmp_path):
    from pathlib import Path

    code = BUILD.format(tests=str(Path(__file__).parent), tmp=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]
    assert (tmp_path / "memory").is_dir() and not (tmp_path / "memory" / FOLDER).exists()


def test_a_published_replica_leaves_the_faces_behind(tmp_path, bucket):
    from memtools.embed import TestEmbedder
    from memtools.replica import publish
    from memtools.store import Memory
    from memtools.testing import kitchen_graph
    from replica_support import keys

    with Memory.create(tmp_path / "memory", TestEmbedder(64)) as memory:
        memory.write_videos([kitchen_graph("kitchen")])
    save_faces(tmp_path / "memory", "kitchen", [Face(label="F1", centroid=[0.1] * 128)])
    name, client = bucket
    publish(tmp_path / "memory", f"s3://{name}/lib")
    published = keys(client, name, "lib/")
    assert any(k.endswith("/files/memtools.json") for k in published)
    assert not [k for k in published if "/faces/" in k or "faces" in k.rsplit("/", 1)[-1]]
    assert (tmp_path / "memory" / FOLDER / "kitchen.json").is_file()  # kept here


def test_fleet_and_live_builds_refuse_faces_and_say_what_to_run(tmp_path, capsys):
    videos = tmp_path / "videos.txt"
    videos.write_text("a.mp4\n")
    for how in (["--from-list", str(videos)], ["--follow", str(tmp_path)]):
        assert main(["build", *how, "--faces", "--memory", str(tmp_path / "m"), "--replay", str(videos)]) != 0
        err = capsys.readouterr().err
        assert "memtools repair --faces --memory" in err and "Traceback" not in err
    assert not (tmp_path / "m").exists()
