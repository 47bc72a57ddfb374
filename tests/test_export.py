"""``memtools export`` / ``import-export`` (memtools.archive): a memory exported and imported into a new one
answers ``get_summary``, ``search_nodes`` and ``get_entity_timeline`` exactly as before; people's names,
clusters and library ids are carried, biometric vectors only when asked; bad archives are refused with
nothing written. These run on kuzu in this process; tests/test_export_engines.py crosses the engines."""

from __future__ import annotations

import json
import sqlite3
import zipfile
from pathlib import Path

import cv2
import numpy as np
import pytest

from memtools.archive import FORMAT_VERSION, export_memory, import_export
from memtools.archive import import_ as importing
from memtools.cli import main
from memtools.embed.testing import TestEmbedder
from memtools.errors import ConfigError, ImportFormatError, ToolError
from memtools.schema import Keyframe, VideoGraph
from memtools.store import Memory
from memtools.store.writes.frame_swap import import_root
from memtools.tools import MemoryTools
from people_support import near, people, save, talk, voice

QUERIES = ("onion", "smoking oil in the pan", "who covers the pan with a lid", "cook", "knife")
NAMES = ("onion", "Ada", "pan")
LINES = [("S1", 10.0, 14.0, "Slice the onions thin."), ("S2", 130.0, 134.0, "The oil is smoking."),
         ("Ada", 200.0, 204.0, "I will stir it now."), ("S1", 250.0, 255.0, "Cover the pan with the lid.")]
NOT_PORTABLE: frozenset[str] = frozenset()
"""Fields of the tool results an import may change (docs/export.md, "What is not carried"): none of these three."""


def graph_of(video_id: str, recorded_at: str | None = None, frames: int = 0) -> VideoGraph:
    graph = talk(video_id, LINES)
    graph.video.recorded_at = recorded_at
    graph.keyframes = [Keyframe(id=f"{video_id}/kf_{i:04d}", video_id=video_id, t=float(10 * i),
                                path=f"frames/{video_id}/{10 * i:08.2f}.jpg", macro_id=graph.macros[0].id)
                       for i in range(frames)]
    return graph


def build(path: Path, *, frames: int = 0, engine: str | None = None) -> Path:
    """Two talks: S1 is one voice in both (linked by vector), Ada a named speaker in both (linked by name)."""
    with Memory.create(path, TestEmbedder(64), graph_engine=engine) as memory:
        save(memory.path, "talk-a", {"S1": voice(1), "S2": voice(2)})
        save(memory.path, "talk-b", {"S1": near(1, 5), "S2": voice(3)})
        graphs = [graph_of("talk-a", "2026-11-20T13:03:00+01:00", frames), graph_of("talk-b", None, frames)]
        staged = {}
        for g in graphs:
            for k in g.keyframes:
                file = import_root(memory.path) / k.path
                file.parent.mkdir(parents=True, exist_ok=True)
                file.write_bytes(cv2.imencode(".jpg", np.full((8, 8, 3), 40 * len(staged), np.uint8))[1].tobytes())
                staged[g.video_id] = import_root(memory.path)
        memory.write_videos(graphs, staged_frames=staged)
    return path


def answers(path: Path, embedder=None, queries=QUERIES, names=NAMES,
            lib_ids=("lib/entity_0001", "lib/entity_0002", "lib/person_0001", "lib/person_0002")) -> dict:
    """The tool answers the acceptance compares, as plain data (``NOT_PORTABLE`` fields left out).
    ``embedder``: default the test embedder; "manifest": the one the memory names."""
    with Memory.open(path, None if embedder == "manifest" else embedder or TestEmbedder(64)) as memory:
        tools = MemoryTools(memory)
        out: dict = {}
        for vid in memory.video_ids():
            out[f"summary {vid}"] = tools.get_summary(vid).model_dump(mode="json")
        for q in queries:
            out[f"search {q}"] = tools.search_nodes(q, top_k=8).model_dump(mode="json")
            out[f"search speech {q}"] = tools.search_nodes(q, top_k=3, node_types=["speech"]).model_dump(mode="json")
        for name in names:
            out[f"timeline {name}"] = _answer(lambda n=name: tools.get_entity_timeline(name=n))
        for lib in lib_ids:
            out[f"timeline {lib}"] = _answer(lambda i=lib: tools.get_entity_timeline(entity_id=i))
    return _strip(out)


def _answer(call) -> dict | str:
    """A tool's result as plain data, or the text of the ToolError it raised (an answer too)."""
    try:
        return call().model_dump(mode="json")
    except ToolError as exc:
        return f"ToolError: {exc}"


def _strip(value):
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in NOT_PORTABLE}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("export") / "source", frames=2)


@pytest.fixture(scope="module")
def plain(source, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("archives") / "plain.zip"
    export_memory(source, out)
    return out


@pytest.fixture(scope="module")
def bio(source, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("archives") / "bio.zip"
    export_memory(source, out, with_biometrics=True)
    return out


def test_an_imported_export_answers_the_tools_as_the_memory_did(source, bio, plain, tmp_path):
    report = import_export(bio, tmp_path / "copy")
    assert report.videos == 2 and report.embedded == 0 and report.reused > 40  # the archive's vectors, no model
    before, after = answers(source), answers(tmp_path / "copy")
    assert before.keys() == after.keys()
    for key in before:
        assert after[key] == before[key], key
    assert [p["person_id"] for p in before["timeline lib/person_0001"]["people"]] == ["lib/person_0001"]
    assert before["timeline lib/person_0001"]["people"][0]["videos"] == 2  # one voice, linked across the talks
    assert "2026-11-20" in json.dumps(after["summary talk-a"])  # the recording time came along
    # without biometrics: the same summaries and searches (the people a voice vector alone linked differ)
    import_export(plain, tmp_path / "plain")
    bare = answers(tmp_path / "plain")
    assert {k: v for k, v in bare.items() if not k.startswith("timeline")} == {
        k: v for k, v in before.items() if not k.startswith("timeline")}


def test_names_and_clusters_are_carried_and_vectors_only_with_the_flag(source, plain, bio, tmp_path):
    with zipfile.ZipFile(plain) as z:
        assert not [n for n in z.namelist() if n.startswith(("voices/", "faces/", "frames/"))]
        clusters = [json.loads(line) for line in z.read("library/clusters.jsonl").splitlines()]
    assert {(c["video_id"], c["label"], c["name"]) for c in clusters} >= {("talk-a", "Ada", "Ada"),
                                                                          ("talk-b", "Ada", "Ada")}
    import_export(plain, tmp_path / "plain")
    assert not (tmp_path / "plain" / "voices").exists()
    original, copied = people(source), people(tmp_path / "plain")
    assert copied.keys() == original.keys()
    assert copied[("talk-a", "Ada")] == copied[("talk-b", "Ada")] == original[("talk-a", "Ada")]  # by name
    assert copied[("talk-a", "S1")] == original[("talk-a", "S1")]  # library ids kept
    assert copied[("talk-b", "S1")] != original[("talk-b", "S1")]  # its link was by voice vector alone

    with zipfile.ZipFile(bio) as z:
        assert sorted(n for n in z.namelist() if n.startswith("voices/")) == ["voices/talk-a.json",
                                                                             "voices/talk-b.json"]
    report = import_export(bio, tmp_path / "bio")
    assert people(tmp_path / "bio") == original and report.clusters_differ == 0
    for vid in ("talk-a", "talk-b"):
        assert (json.loads((tmp_path / "bio" / "voices" / f"{vid}.json").read_text())
                == json.loads((source / "voices" / f"{vid}.json").read_text()))


def test_keyframes_come_only_with_the_flag(source, plain, tmp_path):
    import_export(plain, tmp_path / "bare")
    with Memory.open(tmp_path / "bare", TestEmbedder(64)) as memory, memory.reading() as g:
        assert g.keyframe_paths() == []
    assert main(["check", "--memory", str(tmp_path / "bare")]) == 0
    framed = tmp_path / "frames.zip"
    assert main(["export", "--memory", str(source), str(framed), "--with-keyframes"]) == 0
    assert main(["import-export", str(framed), "--memory", str(tmp_path / "framed")]) == 0
    with Memory.open(tmp_path / "framed", TestEmbedder(64)) as memory, memory.reading() as g:
        paths = sorted(p for _, p in g.keyframe_paths())
    assert len(paths) == 4
    for p in paths:
        assert (tmp_path / "framed" / p).read_bytes() == (source / p).read_bytes()
    assert main(["check", "--memory", str(tmp_path / "framed")]) == 0


def test_another_embedder_recomputes_every_embedding_and_says_so(plain, tmp_path, capsys):
    assert main(["import-export", str(plain), "--memory", str(tmp_path / "other"), "--embedder", "test:32"]) == 0
    out = capsys.readouterr().out
    assert "Embeddings recomputed: the archive was embedded by test:hash-64 (dim 64)" in out
    with Memory.open(tmp_path / "other") as memory:
        assert memory.manifest.embedder.dim == 32
        hits = MemoryTools(memory).search_nodes("onion", top_k=3).hits
    assert hits and all(h.video_id in ("talk-a", "talk-b") for h in hits)


def test_a_memory_that_holds_videos_is_refused(plain, tmp_path):
    import_export(plain, tmp_path / "copy")
    with pytest.raises(ConfigError, match="already holds videos"):
        import_export(plain, tmp_path / "copy")
    with pytest.raises(ConfigError, match="exists"):
        export_memory(tmp_path / "copy", plain)


def test_an_interrupted_import_carries_on_when_run_again(source, bio, tmp_path, monkeypatch):
    monkeypatch.setattr(importing, "WRITE_BATCH", 1)

    def stop(done: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        import_export(bio, tmp_path / "copy", progress=stop)
    with Memory.open(tmp_path / "copy", TestEmbedder(64)) as memory:
        assert memory.video_ids() == ["talk-a"]  # one whole video: the write path's atomic step
    report = import_export(bio, tmp_path / "copy")
    assert (report.resumed, report.videos) == (1, 1)
    assert answers(tmp_path / "copy") == answers(source)


# --- bad archives ------------------------------------------------------------------------


def _rewrite(plain: Path, out: Path, change) -> Path:
    """A copy of the archive with ``change(members)`` applied (name -> bytes), its manifest kept unless changed."""
    with zipfile.ZipFile(plain) as z:
        members = {n: z.read(n) for n in z.namelist()}
    change(members)
    with zipfile.ZipFile(out, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return out


def _manifest(members: dict) -> dict:
    return json.loads(members["manifest.json"])


def _set_manifest(members: dict, manifest: dict) -> None:
    members["manifest.json"] = json.dumps(manifest).encode()


def _list(members: dict, name: str) -> None:
    import hashlib

    manifest = _manifest(members)
    manifest["files"][name] = {"bytes": len(members[name]), "sha256": hashlib.sha256(members[name]).hexdigest()}
    _set_manifest(members, manifest)


def _newer(members):
    _set_manifest(members, {**_manifest(members), "format_version": FORMAT_VERSION + 1,
                            "memtools_version": "9.0"})


def _slip(members):
    members["../escape.json"] = b"{}"
    _list(members, "../escape.json")


def _absolute(members):
    members["/etc/escape"] = b"{}"


def _tampered(members):
    members["videos.jsonl"] = members["videos.jsonl"].replace(b"onion", b"oniox", 1)


def _bad_json(members):
    members["catalog.jsonl"] = b'{"video_id": "talk-a", "title": \n'
    _list(members, "catalog.jsonl")


def _bad_row(members):
    members["library/ids.jsonl"] = b'{"video_id": "talk-a", "entity_type": "x", "key": "k", "lib_id": "../x"}\n'
    _list(members, "library/ids.jsonl")


def _bad_vectors(members):
    import io

    buffer = io.BytesIO()
    np.save(buffer, np.full((1, 64), np.nan, dtype=np.float32))
    members["vectors/vectors-0000.npy"] = buffer.getvalue()
    members["vectors/texts-0000.jsonl"] = b'"one"\n'
    _list(members, "vectors/vectors-0000.npy")
    _list(members, "vectors/texts-0000.jsonl")


def _unlisted(members):
    members["voices/talk-a.json"] = b'{"video_id": "talk-a", "voices": []}'


def _size_lie(members):
    manifest = _manifest(members)
    manifest["files"]["videos.jsonl"]["bytes"] = 10 ** 15
    _set_manifest(members, manifest)


def _no_manifest(members):
    del members["manifest.json"]


@pytest.mark.parametrize(("change", "says"), [
    (_newer, "format version 2, made by a newer memtools .9.0.; this one reads versions up to 1: upgrade"),
    (_slip, "'../escape.json' is not a file of this format"),
    (_absolute, "'/etc/escape' is not a file of this format"),
    (_tampered, "does not match its SHA-256"),
    (_bad_json, "catalog.jsonl line 1 is not valid"),
    (_bad_row, "library/ids.jsonl line 1 is not valid: lib_id"),
    (_bad_vectors, "not finite"),
    (_unlisted, "is not listed in manifest.json"),
    (_size_lie, "unpacks to .* bytes, not the 1,000,000,000,000,000"),
    (_no_manifest, "holds no manifest.json"),
])
def test_a_bad_archive_is_refused_and_nothing_is_written(plain, tmp_path, change, says):
    bad = _rewrite(plain, tmp_path / "bad.zip", change)
    with pytest.raises(ImportFormatError, match=says):
        import_export(bad, tmp_path / "copy")
    assert not (tmp_path / "copy").exists()


def test_a_file_that_is_not_a_zip_is_refused(tmp_path, capsys):
    (tmp_path / "notes.zip").write_text("hello")
    assert main(["import-export", str(tmp_path / "notes.zip"), "--memory", str(tmp_path / "copy")]) == 1
    assert "is not a memtools export (not a readable zip file" in capsys.readouterr().err
    assert not (tmp_path / "copy").exists()


def test_the_archive_is_plain_json_and_npy_and_lists_every_file(plain):
    with zipfile.ZipFile(plain) as z:
        manifest = json.loads(z.read("manifest.json"))
        assert manifest["format"] == "memtools-export" and manifest["format_version"] == FORMAT_VERSION
        assert manifest["embedder"] == {"name": "test:hash-64", "dim": 64}
        assert manifest["counts"]["videos"] == 2 and manifest["counts"]["keyframe"] == 4
        assert set(manifest["files"]) == set(z.namelist()) - {"manifest.json"}
        graphs = [VideoGraph.model_validate_json(line) for line in z.read("videos.jsonl").splitlines()]
        assert [g.video_id for g in graphs] == ["talk-a", "talk-b"]
        texts = [json.loads(t) for t in z.read("vectors/texts-0000.jsonl").splitlines()]
        import io

        vectors = np.load(io.BytesIO(z.read("vectors/vectors-0000.npy")), allow_pickle=False)
    assert vectors.shape == (len(texts), 64) and vectors.dtype == np.float32
    assert np.allclose(vectors[texts.index("Slice the onions thin. said by S1")],
                       TestEmbedder(64).embed_documents(["Slice the onions thin. said by S1"])[0])


def test_a_killed_export_leaves_no_archive(source, tmp_path, monkeypatch):
    from memtools.archive import export as exporting

    def boom(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(exporting, "_catalog", boom)
    with pytest.raises(KeyboardInterrupt):
        export_memory(source, tmp_path / "out.zip")
    assert list(tmp_path.iterdir()) == []


def test_library_seeded_ids_survive_in_the_layer(source, plain, tmp_path):
    import_export(plain, tmp_path / "copy")
    read = "SELECT canonical_id, lib_id FROM members ORDER BY 1"
    with sqlite3.connect(source / "library.sqlite") as a, sqlite3.connect(tmp_path / "copy" / "library.sqlite") as b:
        assert a.execute(read).fetchall() == b.execute(read).fetchall()
