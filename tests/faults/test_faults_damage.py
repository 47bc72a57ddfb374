"""Issue 22: every part of a memory folder lost or damaged in turn. ``memtools check`` names the damage in
one clear line, reads refuse with the memtools error that names ``memtools repair``, ``repair`` mends what
the other parts hold (or refuses and changes nothing), and no output carries the engines' own text."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fault_helpers import EMBEDDER, VIDEOS, check, cli, mem, searchable, template  # noqa: F401 - fixtures

from mcp_support import jpeg
from memtools.embed.images import TestImageEmbedder
from memtools.embed.testing import TestEmbedder
from memtools.errors import EmbeddingError, StoreError, ToolError
from memtools.schema import Keyframe, keyframe_id
from memtools.store import Memory
from memtools.store.catalog.manifest import read_manifest, write_manifest
from memtools.testing import kitchen_graph
from memtools.tools import MemoryTools

ENGINE_TEXT = ("LanceError", "lance error", "/rustc/", ".rs:", "Traceback", "Reading past the end",
               "Runtime exception", "Cannot read checkpoint", "WARN")


def plain(*texts: str) -> None:
    for text in texts:
        for phrase in ENGINE_TEXT:
            assert phrase not in text, f"engine text {phrase!r} reached the user: {text}"


def run_all(mem: Path, capsys, *argv: str) -> tuple[int, str, str]:
    code, out, err = cli(*argv, "--memory", str(mem), capsys=capsys)
    plain(out, err)
    return code, out, err


def tree(path: Path) -> dict[str, str]:
    """Every file of a memory folder and its content's hash."""
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob("*")) if p.is_file() and p.name != "memtools.lock"}


def index_folder(mem: Path, column: str) -> Path:
    with Memory.open(mem, EMBEDDER) as memory:
        ix = next(ix for ix in memory.vectors_unchecked.nodes().list_indices() if tuple(ix.columns) == (column,))
    return mem / "vectors" / "nodes.lance" / "_indices" / str(ix.index_uuid)


def test_lost_index_folder_is_found_refused_and_rebuilt(mem, capsys):
    shutil.rmtree(mem / "vectors" / "nodes.lance" / "_indices")
    code, out, _ = run_all(mem, capsys, "check")
    assert code == 1 and "vectors/nodes.lance/_indices is missing" in out
    assert out.count("[vectors]") == 1, "one line for the lost folder, not one per index"
    code, _, err = run_all(mem, capsys, "tool", "search_nodes", "--query", "pan fire")
    assert code == 1 and "nodes.lance/_indices is missing" in err and "memtools repair --memory" in err
    code, out, _ = run_all(mem, capsys, "repair")
    assert code == 0 and "rebuilt the indexes of the nodes table" in out
    assert run_all(mem, capsys, "check")[0] == 0
    assert searchable(mem) == set(VIDEOS)


def test_lost_full_text_index_files_are_found_before_lance_warns(mem, capsys):
    shutil.rmtree(index_folder(mem, "text"))
    code, out, _ = run_all(mem, capsys, "check")
    assert code == 1 and "nodes table: the files of the full-text index are missing" in out
    # a fresh process, as a user runs it, without the log level memtools sets for lance
    env = {k: v for k, v in os.environ.items() if k != "LANCEDB_LOG"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2] / "src")
    code = "import sys; from memtools.cli import main; sys.exit(main(sys.argv[1:]))"
    argv = ["tool", "search_nodes", "--memory", str(mem), "--query", "pan fire"]
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120, env=env)
    plain(done.stdout, done.stderr)
    assert done.returncode == 1 and "the files of the full-text index of the vector table are missing" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert run_all(mem, capsys, "repair")[0] == 0
    assert run_all(mem, capsys, "check")[0] == 0 and searchable(mem) == set(VIDEOS)


def test_lost_entities_table_is_damage_not_an_old_memory(mem, capsys):
    shutil.rmtree(mem / "vectors" / "entities.lance")
    code, out, _ = run_all(mem, capsys, "check")
    assert code == 1 and "vectors/entities.lance is missing (the entity profiles of 2 video(s) are lost)" in out
    with Memory.open(mem, EMBEDDER) as memory, pytest.raises(ToolError, match="entities.lance is missing") as caught:
        MemoryTools(memory).search_entities("cook")
    assert "memtools repair --memory" in str(caught.value) and "written before" not in str(caught.value)
    code, out, _ = run_all(mem, capsys, "repair")
    assert code == 0 and "rebuilt the entities table aside from the graph (10 entity profiles" in out
    assert "nodes table" not in out, "the intact nodes table is left alone"
    assert run_all(mem, capsys, "check")[0] == 0
    with Memory.open(mem, EMBEDDER) as memory:
        tools = MemoryTools(memory)
        assert {e.video_id for v in VIDEOS for e in tools.search_entities("cook", top_k=10, video_id=v).entities} == \
            set(VIDEOS)
        assert {e.videos for e in tools.search_entities("cook", top_k=10).entities} == {2}  # linked across both


def _keyframed(path: Path, source: Path | None = None) -> Path:
    """One video with three keyframe images (and, given ``source``, its source video file)."""
    graph = kitchen_graph()
    if source is not None:
        graph.video = graph.video.model_copy(update={"source_path": str(source)})
    macro = graph.macros[0]
    with Memory.create(path, EMBEDDER, image_embedder=TestImageEmbedder()) as memory:
        (path / "frames" / "kitchen").mkdir(parents=True)
        for n, t in enumerate((0.5, 1.0, 1.5), 1):
            rel = f"frames/kitchen/kf_{n:04d}.jpg"
            (path / rel).write_bytes(jpeg(n))
            graph.keyframes.append(Keyframe(id=keyframe_id("kitchen", n), video_id="kitchen", t=t, path=rel,
                                            macro_id=macro.id))
        memory.write_video(graph)
    return path


def _corrupt(path: Path) -> None:
    first = path / "frames" / "kitchen" / "kf_0001.jpg"
    first.write_bytes(first.read_bytes()[: first.stat().st_size // 2])  # cut short: libjpeg would pad it grey
    (path / "frames" / "kitchen" / "kf_0002.jpg").write_bytes(b"not an image at all")


def test_corrupt_keyframe_images_are_reported_and_not_papered_over(tmp_path, capsys):
    path = _keyframed(tmp_path / "memory")
    _corrupt(path)
    code, out, _ = run_all(path, capsys, "check")
    assert code == 1 and "kitchen: 2 keyframe image(s) corrupt (they do not decode as images)" in out
    assert "cannot be rebuilt: inspect_frames falls back to the source video" in out
    before = tree(path)
    code, out, _ = run_all(path, capsys, "repair")
    assert code == 1 and "Still damaged" in out and "keyframe image(s) corrupt" in out
    assert tree(path) == before


def test_corrupt_keyframe_images_come_back_from_the_source_video(tmp_path, capsys):
    from synthetic_video import scene, write_video

    source = write_video(tmp_path / "kitchen.mp4", [scene(i // 5) for i in range(30)], fps=10.0)
    path = _keyframed(tmp_path / "memory", source)
    _corrupt(path)
    code, out, _ = run_all(path, capsys, "check")
    assert code == 1 and "memtools repair rebuilds it" in out
    code, out, _ = run_all(path, capsys, "repair")
    assert code == 0 and "extracted 2 keyframe image(s) of 'kitchen' again from its source video" in out
    assert run_all(path, capsys, "check")[0] == 0
    with Memory.open(path, EMBEDDER) as memory:
        assert memory.keyframes is not None and memory.keyframes.count("kitchen") == 3


def test_manifest_dimension_is_mended_from_the_embedder_and_the_vectors(mem, capsys):
    manifest = read_manifest(mem)
    manifest.embedder.dim = 999
    write_manifest(mem, manifest)
    code, out, _ = run_all(mem, capsys, "check")
    assert code == 1 and "the vector table holds 64-dimensional vectors but the manifest says the embedder " \
        "test:hash-64 makes 999" in out
    code, _, err = run_all(mem, capsys, "tool", "search_nodes", "--query", "fire")
    assert code == 1 and "memtools repair --memory" in err and "reshape" not in err
    code, out, _ = run_all(mem, capsys, "repair")
    assert code == 0 and "corrected the manifest: the embedder test:hash-64 makes 64-dimensional vectors" in out
    assert read_manifest(mem).embedder.dim == 64 and searchable(mem) == set(VIDEOS)


def test_repair_refuses_when_nothing_agrees_and_changes_nothing(mem, capsys):
    manifest = read_manifest(mem)
    manifest.embedder.name, manifest.embedder.dim = "test:hash-16", 999  # the embedder makes 16, the rows hold 64
    write_manifest(mem, manifest)
    before = tree(mem)
    code, out, _ = run_all(mem, capsys, "repair")
    assert code == 1 and "Repair refused: the manifest says the embedder test:hash-16 makes 999-dimensional " \
        "vectors, the vector table holds 64-dimensional ones and the embedder makes 16" in out
    assert "Nothing was changed." in out
    assert tree(mem) == before, "a refused repair leaves every file as it was"


class FailingEmbedder(TestEmbedder):
    """The memory's own embedder (same name and width) that fails once the repair embeds its rows."""

    def embed_documents(self, texts):
        raise EmbeddingError("the embedding server went away")


@pytest.mark.parametrize("damage", ["whole", "one video"])
def test_a_repair_that_fails_puts_the_memory_back_as_it_was(mem, capsys, damage):
    if damage == "whole":
        shutil.rmtree(mem / "vectors" / "nodes.lance")
    else:
        with Memory.open(mem, EMBEDDER) as memory:
            memory.vectors_unchecked.nodes().delete("id = 'k2/macro_0001'")
    before, report = tree(mem), check(mem, capsys)
    from memtools.store.integrity.repair import repair

    with Memory.open(mem, FailingEmbedder(64)) as memory, \
            pytest.raises(StoreError, match="could not finish and put the memory back as it was") as caught:
        repair(memory)
    plain(str(caught.value))
    assert "the embedding server went away" in str(caught.value)
    after = tree(mem)
    assert not [p for p in after if "_repair.lance" in p or ".replaced" in p], "no half-built table is left"
    assert after["memtools.json"] == before["memtools.json"]
    assert check(mem, capsys) == report, "the same damage, no more, no less"
    with Memory.open(mem, EMBEDDER) as memory:
        rows = memory.vectors_unchecked.nodes()
        assert (rows is None) == (damage == "whole") and (rows is None or rows.count_rows() == 37)
    assert run_all(mem, capsys, "repair")[0] == 0 and searchable(mem) == set(VIDEOS)


def test_truncated_graph_is_named_and_left_alone(mem, capsys):
    graph = mem / "graph.kuzu"
    os.truncate(graph, graph.stat().st_size // 3)
    code, out, _ = run_all(mem, capsys, "check")
    assert code == 1 and "graph.kuzu cannot be read (the file is damaged or truncated)" in out
    code, _, err = run_all(mem, capsys, "tool", "get_summary", "--video-id", "kitchen")
    assert code == 1 and "its file is damaged or truncated" in err and "memtools check --memory" in err
    before = tree(mem)
    code, out, _ = run_all(mem, capsys, "repair")
    assert code == 1 and "--forget-lost" in out and tree(mem) == before
    code, out, _ = run_all(mem, capsys, "repair", "--forget-lost")
    assert code == 0 and "moved the unreadable graph.kuzu aside to graph.kuzu.damaged" in out
    assert hashlib.sha256((mem / "graph.kuzu.damaged").read_bytes()).hexdigest() == before["graph.kuzu"]
    assert run_all(mem, capsys, "check")[0] == 0


LADYBUG = """
import os, sys
from pathlib import Path
from memtools.cli import main
from memtools.embed.testing import TestEmbedder
from memtools.store import Memory
from memtools.testing import kitchen_graph
path = Path(sys.argv[1])
with Memory.create(path, TestEmbedder(64), graph_engine="ladybug") as memory:
    memory.write_video(kitchen_graph())
graph = path / "graph.lbug"
os.truncate(graph, graph.stat().st_size // 3)
for argv in (["check"], ["tool", "get_summary", "--video-id", "kitchen"], ["repair"]):
    print("exit", main([*argv, "--memory", str(path)]), flush=True)
"""


def test_truncated_ladybug_graph_is_named_too(tmp_path):
    if importlib.util.find_spec("ladybug") is None:  # not imported here: kuzu and ladybug exclude each other
        pytest.skip("ladybug is not installed")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    done = subprocess.run([sys.executable, "-c", LADYBUG, str(tmp_path / "memory")], capture_output=True, text=True,
                          timeout=180, env=env)
    plain(done.stdout, done.stderr)
    assert done.stdout.count("exit 1") == 3, done.stdout + done.stderr
    assert "graph.lbug cannot be read (the file is damaged or truncated)" in done.stdout
    assert "its file is damaged or truncated" in done.stderr


def test_failed_builds_are_listed_with_what_to_do(mem, capsys):
    with Memory.open(mem, EMBEDDER) as memory:
        memory.set_status("broken", "failed")
    code, out, err = run_all(mem, capsys, "check")
    assert code == 1 and "video 'broken' failed to build" in out, err
    assert "rerun `memtools build` for it" in out and "memtools repair --forget-lost" in out
    assert run_all(mem, capsys, "repair")[0] == 1
    code, out, _ = run_all(mem, capsys, "repair", "--forget-lost")
    assert code == 0 and "dropped video 'broken', whose build had failed" in out
    assert "broken" not in read_manifest(mem).videos and searchable(mem) == set(VIDEOS)


def test_lost_data_file_of_the_entities_table_reads_in_plain_words(mem, capsys):
    for data in (mem / "vectors" / "entities.lance" / "data").iterdir():
        data.unlink()
    code, _, err = run_all(mem, capsys, "tool", "get_entity_timeline", "--name", "cook")
    assert code == 1 and "entity lookup failed (the storage engine could not read or write its files" in err
    assert "memtools check" in err
    code, out, _ = run_all(mem, capsys, "check")
    assert code == 1 and "the entities table cannot be read (a data file is missing or damaged)" in out
    assert run_all(mem, capsys, "repair")[0] == 0
    code, out, _ = run_all(mem, capsys, "tool", "get_entity_timeline", "--name", "cook")
    assert code == 0 and "cook" in out
