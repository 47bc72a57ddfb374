"""``videos.sqlite``: the per-video catalog behind ``Manifest.videos`` (memtools.store.catalog.videos).

The manifest keeps library-level fields only; the entries live in SQLite, read as of the manifest's
generation; a memory made before the catalog (its memtools.json lists the videos) is read as it is and
migrated by its first writer; a lost or damaged catalog is found by ``memtools check`` and listed again
from the graph by ``memtools repair``.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memtools.cli import main
from memtools.embed.testing import TestEmbedder
from memtools.errors import IncompatibleMemory, MemoryDamaged
from memtools.schema import SCHEMA_VERSION
from memtools.store import Memory
from memtools.store.catalog import manifest as manifest_module
from memtools.store.catalog.manifest import LEGACY_SCHEMA, VideoEntry, VideoView, read_manifest
from memtools.store.catalog.videos import CATALOG, VideoCatalog
from memtools.testing import kitchen_graph
from memtools.tools import MemoryTools

EMBEDDER = TestEmbedder(64)
SRC = Path(__file__).resolve().parents[1] / "src"


@pytest.fixture()
def memory_path(tmp_path) -> Path:
    path = tmp_path / "memory"
    with Memory.create(path, EMBEDDER) as memory:
        memory.write_videos([kitchen_graph(v) for v in ("kitchen", "k2")])
        memory.set_status("k9", "building")  # listed, not written yet
    return path


def make_legacy(path: Path) -> None:
    """memtools.json as memtools wrote it before videos.sqlite: schema 1, every video's entry in it."""
    data = json.loads((path / "memtools.json").read_text())
    data["videos"] = {vid: entry.model_dump(mode="json") for vid, entry in read_manifest(path).videos.items()}
    data["schema_version"] = LEGACY_SCHEMA
    del data["totals"]
    (path / "memtools.json").write_text(json.dumps(data, indent=2))
    (path / CATALOG).unlink()


def entries(path: Path) -> dict[str, dict]:
    """Each video's entry, less the time it was written (and counts of none: a recount lists every kind)."""
    return {vid: {**e.model_dump(exclude={"updated_at"}), "counts": {k: n for k, n in e.counts.items() if n}}
            for vid, e in read_manifest(path).videos.items()}


def cli(*argv: str, capsys) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def run(code: str, *args: str, fault: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "MEMTOOLS_FAULT_POINT"}
    env["PYTHONPATH"] = str(SRC)
    if fault:
        env["MEMTOOLS_FAULT_POINT"] = fault
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True,
                          timeout=180, env=env)


WRITE = """
    import sys
    from memtools.embed.testing import TestEmbedder
    from memtools.store import Memory
    from memtools.testing import kitchen_graph
    with Memory.open(sys.argv[1], TestEmbedder(64)) as memory:
        if sys.argv[2] == "delete":
            memory.delete_video(sys.argv[3])
        elif sys.argv[2] == "recover":
            memory.finish_indexes()  # a write of nothing: recovers a killed write first
        else:
            memory.write_videos([kitchen_graph(v) for v in sys.argv[3:]])
    print("finished")
"""


# --- the catalog ---------------------------------------------------------------------------


def test_the_manifest_keeps_library_fields_and_the_catalog_every_video(memory_path):
    data = json.loads((memory_path / "memtools.json").read_text())
    assert "videos" not in data and data["schema_version"] == SCHEMA_VERSION
    assert data["totals"]["videos"] == 3 and data["totals"]["ready"] == 2
    listed = read_manifest(memory_path).videos
    assert listed.ids() == ["k2", "k9", "kitchen"] and list(listed) == listed.ids() and len(listed) == 3
    assert "kitchen" in listed and "nope" not in listed and listed.get("nope") is None
    assert listed["k9"].status == "building" and listed["kitchen"].title == "Cooking stir-fry in a small kitchen"
    assert listed.ids("ready") == ["k2", "kitchen"] and [v for v, _ in listed.items("building")] == ["k9"]
    with pytest.raises(TypeError):
        listed["k3"] = VideoEntry()  # type: ignore[index] - read-only: writes go through the write path
    conn = sqlite3.connect(memory_path / CATALOG)
    try:  # a rollback journal, never WAL: outside a transaction the one file is the whole catalog
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    finally:
        conn.close()


def test_readers_at_an_older_generation_see_the_batch_before_it(tmp_path):
    one, two, three = (VideoEntry(title=t, counts={"macro": n}) for t, n in (("a", 1), ("b", 2), ("c", 3)))
    catalog = VideoCatalog.create(tmp_path, {"a": one, "b": two}, 1)
    changed = one.model_copy(update={"title": "a, written again"})
    catalog.apply({"a": changed, "c": three}, ["b"], 2)
    before, after = VideoView(catalog, 1), VideoView(catalog, 2)
    assert dict(before.items()) == {"a": one, "b": two} and len(before) == 2 and "c" not in before
    assert dict(after.items()) == {"a": changed, "c": three} and len(after) == 2 and "b" not in after
    assert before.ids("ready") == ["a", "b"] and after["a"].title == "a, written again"
    catalog.apply({"a": one}, [], 2)  # a roll-forward of the same write: already there, changes nothing
    assert dict(VideoView(catalog, 2).items()) == {"a": changed, "c": three}
    assert catalog.totals() == catalog.recount() and catalog.totals().rows == (1 + 1) + (1 + 3)


def test_iterating_reads_every_entry_once_in_id_order(tmp_path):
    many = {f"v{i:05d}": VideoEntry(title=str(i), status="ready" if i % 3 else "failed") for i in range(4500)}
    view = VideoView(VideoCatalog.create(tmp_path, many, 1), 1)  # more than two pages of reads
    assert [vid for vid, _ in view.items()] == list(view) == sorted(many) and len(view) == 4500
    assert [vid for vid, _ in view.items("failed")] == view.ids("failed") == [f"v{i:05d}" for i in range(0, 4500, 3)]
    assert [e.title for e in view.values()] == [str(i) for i in range(4500)]


def test_the_kept_sums_follow_every_kind_of_write(memory_path):
    with Memory.open(memory_path, EMBEDDER) as memory:
        memory.write_video(kitchen_graph("k3"))
        memory.set_status("kitchen", "building")  # a rebuild: its rows stay until the new version lands
        memory.delete_video("k2")
        memory.set_status("k4", "failed")
        memory.finish_indexes()
    manifest = read_manifest(memory_path)
    counted = manifest.catalog.recount()
    assert manifest.totals == counted == manifest.catalog.totals()
    assert counted.videos == 4 and counted.ready == 1 and counted.in_graph == 2
    with Memory.open(memory_path, EMBEDDER) as memory:
        assert memory.vectors_unchecked.count() == counted.rows


def test_a_write_batch_never_reads_every_video(memory_path, monkeypatch):
    def every(*_args, **_kwargs):
        raise AssertionError("a write read the entry of every video")

    from memtools.store.graph.cypher import KuzuGraph

    for name in ("items", "ids", "count", "recount"):
        monkeypatch.setattr(VideoCatalog, name, every)
    monkeypatch.setattr(KuzuGraph, "video_ids", every)
    with Memory.open(memory_path, EMBEDDER) as memory:
        memory.write_video(kitchen_graph("k3"))
        memory.write_video(kitchen_graph("kitchen"))
        memory.delete_video("k2")
        memory.set_status("k4", "building")
    monkeypatch.undo()
    assert read_manifest(memory_path).videos.ids() == ["k3", "k4", "k9", "kitchen"]


# --- memories made before the catalog ---------------------------------------------------------


def test_a_legacy_memory_is_read_as_it_is_while_a_writer_holds_it_and_migrated_on_open(memory_path, capsys):
    from memtools.store.file_lock import try_lock, unlock

    listed = entries(memory_path)
    make_legacy(memory_path)
    raw = (memory_path / "memtools.json").read_bytes()
    with open(memory_path / "memtools.lock", "a+") as held:  # a writer has it: readers leave the list alone
        assert try_lock(held)
        try:
            with Memory.open(memory_path, EMBEDDER) as memory:
                tools = MemoryTools(memory)
                assert [v.video_id for v in tools.list_videos().videos] == ["k2", "k9", "kitchen"]
                assert {h.video_id for h in tools.search_nodes("the pan catches fire", top_k=20).hits} == \
                    {"kitchen", "k2"}
        finally:
            unlock(held)
    assert (memory_path / "memtools.json").read_bytes() == raw and not (memory_path / CATALOG).exists()

    with Memory.open(memory_path, EMBEDDER) as memory:  # free: opening it moves the list into the catalog
        assert not memory.manifest.legacy
        assert [v.video_id for v in MemoryTools(memory).list_videos().videos] == ["k2", "k9", "kitchen"]
    data = json.loads((memory_path / "memtools.json").read_text())
    assert "videos" not in data and data["schema_version"] == SCHEMA_VERSION
    assert entries(memory_path) == listed
    with Memory.open(memory_path, EMBEDDER) as memory:
        memory.write_video(kitchen_graph("k3"))
    after = entries(memory_path)
    assert {vid: after[vid] for vid in listed} == listed and "k3" in after
    code, out, _ = cli("check", "--memory", str(memory_path), capsys=capsys)
    assert code == 0 and f"{CATALOG}, 4 video(s)" in out


def test_an_older_memtools_refuses_a_migrated_memory(memory_path, monkeypatch):
    manifest = read_manifest(memory_path)
    monkeypatch.setattr(manifest_module, "SCHEMA_VERSION", LEGACY_SCHEMA)  # what memtools before the catalog reads
    with pytest.raises(IncompatibleMemory, match=r"schema version 2, but this memtools reads up to version 1; "
                                                 r"upgrade memtools"):
        manifest.check_compatible(memory_path, None, None)


def test_a_migration_killed_between_catalog_and_manifest_is_finished_by_the_next_writer(memory_path, capsys):
    listed = entries(memory_path)
    make_legacy(memory_path)
    done = run(WRITE, str(memory_path), "write", "k3", fault="migrate-catalog-written:1")
    assert done.returncode == -9 and "finished" not in done.stdout, done.stderr
    assert "videos" in json.loads((memory_path / "memtools.json").read_text())  # still the legacy list
    assert (memory_path / CATALOG).is_file()
    assert entries(memory_path) == listed  # a reader meanwhile: the legacy list, whole
    assert cli("check", "--memory", str(memory_path), capsys=capsys)[0] == 0
    assert run(WRITE, str(memory_path), "write", "k3").returncode == 0
    assert "videos" not in json.loads((memory_path / "memtools.json").read_text())
    after = entries(memory_path)
    assert {vid: after[vid] for vid in listed} == listed and "k3" in after
    assert cli("check", "--memory", str(memory_path), capsys=capsys)[0] == 0


# --- kill -9 at the catalog step ----------------------------------------------------------------


@pytest.mark.parametrize("op, videos", [("write", ["k3", "kitchen"]), ("delete", ["k2"])])
def test_a_reader_beside_a_writer_killed_after_the_catalog_sees_the_batch_before_it(memory_path, capsys, op,
                                                                                   videos):
    before = read_manifest(memory_path)
    listed = {vid: e.model_dump() for vid, e in before.videos.items()}
    done = run(WRITE, str(memory_path), op, *videos, fault="catalog-written:1")
    assert done.returncode == -9 and "finished" not in done.stdout, done.stderr
    manifest = read_manifest(memory_path)
    assert manifest.generation == before.generation and manifest.catalog.generation() == before.generation + 1
    assert {vid: e.model_dump() for vid, e in manifest.videos.items()} == listed  # none of the batch yet
    with Memory.open(memory_path, EMBEDDER, recover=False) as memory:  # a reader that cannot write: the last generation
        assert [v.video_id for v in MemoryTools(memory).list_videos().videos] == sorted(listed)
    assert run(WRITE, str(memory_path), "recover").returncode == 0  # the next writer rolls the write forward
    after = read_manifest(memory_path).videos
    if op == "delete":
        assert "k2" not in after and not (memory_path / "frames" / "k2").exists()
    else:
        assert "k3" in after
        with sqlite3.connect(memory_path / CATALOG) as conn:  # kitchen rewritten by the rolled-forward write
            assert conn.execute("SELECT gen FROM videos WHERE id = 'kitchen'").fetchone()[0] == before.generation + 1
    code, out, _ = cli("check", "--memory", str(memory_path), capsys=capsys)
    assert code == 0, out


def test_a_catalog_transaction_cut_by_a_kill_is_rolled_back_for_readers(memory_path):
    listed = entries(memory_path)
    done = run("""
        import os, signal, sqlite3, sys
        conn = sqlite3.connect(sys.argv[1], isolation_level=None)
        conn.execute("PRAGMA cache_size=1")  # spill pages into the file: the journal becomes hot
        conn.execute("BEGIN IMMEDIATE")
        for i in range(3000):
            conn.execute("INSERT INTO videos SELECT 'x' || ? || id, title, duration, status, updated_at, counts, "
                         "keyframe_vectors, gen, rows, ready, in_graph, entity_videos, ready_frames FROM videos "
                         "WHERE id = 'kitchen'", (i,))
        os.kill(os.getpid(), signal.SIGKILL)
    """, str(memory_path / CATALOG))
    assert done.returncode == -9, done.stderr
    assert (memory_path / f"{CATALOG}-journal").exists()
    assert entries(memory_path) == listed  # the read-only reader had SQLite roll the cut transaction back


# --- check and repair -----------------------------------------------------------------------


def _plain(text: str) -> None:
    assert "sqlite" not in text.lower().replace(CATALOG, "") and "Traceback" not in text, text


def test_a_missing_catalog_is_damage_that_repair_lists_again_from_the_graph(memory_path, capsys):
    listed = entries(memory_path)
    (memory_path / CATALOG).unlink()
    code, out, _ = cli("check", "--memory", str(memory_path), capsys=capsys)
    assert code == 1 and f"{CATALOG} (the list of videos) is missing" in out and "memtools repair" in out
    _plain(out)
    code, out, err = cli("tool", "list_videos", "--memory", str(memory_path), capsys=capsys)
    assert code == 1 and "list of videos" in err and "is missing" in err and "memtools repair --memory" in err
    _plain(err)
    with Memory.open(memory_path, EMBEDDER) as memory, pytest.raises(MemoryDamaged, match="refusing to write"):
        memory.write_video(kitchen_graph("k3"))
    code, out, _ = cli("repair", "--memory", str(memory_path), capsys=capsys)
    assert code == 0 and f"listed 2 video(s) again from the graph in a new {CATALOG}" in out, out
    assert cli("check", "--memory", str(memory_path), capsys=capsys)[0] == 0
    del listed["k9"]  # being built: the graph does not hold it yet
    assert entries(memory_path) == listed


def test_a_damaged_catalog_is_moved_aside_and_listed_again(memory_path, capsys):
    listed = entries(memory_path)
    (memory_path / CATALOG).write_bytes(b"this is not a database " * 200)
    code, out, _ = cli("check", "--memory", str(memory_path), capsys=capsys)
    assert code == 1 and f"{CATALOG} (the list of videos) cannot be read (the file is damaged)" in out
    _plain(out)
    code, _, err = cli("tool", "get_summary", "--memory", str(memory_path), "--video-id", "kitchen",
                       capsys=capsys)
    assert code == 1 and "its list of videos" in err and "memtools repair --memory" in err
    _plain(err)
    code, out, _ = cli("repair", "--memory", str(memory_path), capsys=capsys)
    assert code == 0 and f"moved the unreadable {CATALOG} aside to {CATALOG}.damaged" in out, out
    assert cli("check", "--memory", str(memory_path), capsys=capsys)[0] == 0
    assert (memory_path / f"{CATALOG}.damaged").is_file()
    del listed["k9"]
    assert entries(memory_path) == listed


def test_sums_in_the_manifest_that_drifted_are_found_and_counted_again(memory_path, capsys):
    data = json.loads((memory_path / "memtools.json").read_text())
    data["totals"]["rows"] += 5
    (memory_path / "memtools.json").write_text(json.dumps(data))
    code, out, _ = cli("check", "--memory", str(memory_path), capsys=capsys)
    assert code == 1 and f"the manifest's sums over the videos differ from {CATALOG}" in out, out
    with Memory.open(memory_path, EMBEDDER) as memory, pytest.raises(MemoryDamaged, match="memtools repair"):
        MemoryTools(memory).search_nodes("the pan catches fire")
    assert cli("repair", "--memory", str(memory_path), capsys=capsys)[0] == 0
    assert cli("check", "--memory", str(memory_path), capsys=capsys)[0] == 0
    manifest = read_manifest(memory_path)
    assert manifest.totals == manifest.catalog.recount()
