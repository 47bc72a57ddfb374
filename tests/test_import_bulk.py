"""Bulk import: the same memory as one video at a time, and a kill -9 mid import resumes to a complete memory."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from memtools.cli import main
from memtools.embed import embedder_from_spec
from memtools.importers.captions import graphs_from_files
from memtools.store import Memory
from memtools.store.integrity.checker import check
from memtools.tools import MemoryTools

ACTIONS = ["chops the onions", "heats the oil in a pan", "adds garlic", "stirs the sauce", "pours water",
           "cuts the bread", "washes the tomatoes", "fries the eggs", "serves the soup", "cleans the table"]


def dense_captions(path, videos: int, captions: int = 5, unique: bool = False):
    """A dense-caption JSON (ActivityNet layout); texts repeat across videos, like real captions do
    (``unique``: each video's own words, so no two search hits tie whatever the row order)."""
    data = {}
    for v in range(videos):
        steps = [(10.0 * c + v % 3, 10.0 * c + 8 + v % 3) for c in range(captions)]
        where = f" at station {v}" if unique else ""
        data[f"clip{v:03d}"] = {"duration": 10.0 * captions + 5, "timestamps": steps,
                                "sentences": [f"The cook {ACTIONS[(v + c) % len(ACTIONS)]}{where}."
                                              for c in range(captions)]}
    path.write_text(json.dumps(data))
    return path


def tool_outputs(path) -> dict[str, str]:
    """What an agent can see: every navigation tool on every video, relations, searches."""
    out = {}
    with Memory.open(path, embedder_from_spec("test:32")) as memory:
        tools = MemoryTools(memory)
        out["list"] = tools.list_videos(limit=200).render()
        for vid in memory.video_ids():
            summary = tools.get_summary(vid)
            out[f"summary {vid}"] = summary.render()
            for sup in summary.supers:
                macros = tools.get_macro_events(super_id=sup.id)
                out[f"macros {sup.id}"] = macros.render()
                for macro in macros.macros:
                    sub = tools.get_subgraph(macro.id)
                    out[f"sub {macro.id}"] = sub.render()
                    out[f"rel {sub.events[-1].id}"] = tools.get_relations(sub.events[-1].id).render()
            out[f"time {vid}"] = tools.search_by_time(0, 30, video_id=vid).render()
        for query in ("onions", "oil in a pan", "serves the soup"):
            out[f"search {query}"] = tools.search_nodes(query, top_k=8).render()
        out["rows"] = str(memory.vectors.count())
    return out


def test_bulk_import_yields_the_same_memory_as_one_by_one(tmp_path):
    source = dense_captions(tmp_path / "dense.json", videos=9, captions=8)  # two episodes each
    bulk = tmp_path / "bulk"
    assert main(["import-captions", str(source), "--memory", str(bulk), "--embedder", "test:32",
                 "--batch-size", "4", "--no-progress"]) == 0
    single = tmp_path / "single"
    with Memory.create(single, embedder_from_spec("test:32")) as memory:
        for graph in graphs_from_files([source]):
            memory.write_video(graph)
    expected = tool_outputs(single)
    assert len(expected) > 30  # the comparison covers every video's episodes
    assert tool_outputs(bulk) == expected
    assert not (bulk / "work" / ".imports").exists()  # a finished import leaves no ledger


def test_a_ledger_skips_landed_videos_and_reimport_replaces(tmp_path, capsys):
    source = dense_captions(tmp_path / "dense.json", videos=6)
    memory_path = tmp_path / "m"
    args = ["import-captions", str(source), "--memory", str(memory_path), "--embedder", "test:32", "--no-progress"]
    assert main(args) == 0
    from memtools.importers.bulk import ImportLedger, import_key

    with Memory.open(memory_path, embedder_from_spec("test:32")) as memory:
        ledger = ImportLedger(memory, import_key([source], kind="captions", video_id=None, title=None))
        ledger.start()  # as if a run had been killed after landing two videos
        ledger.add(["clip000", "clip001"])
    capsys.readouterr()
    assert main(args) == 0
    assert "2 already written by the interrupted run" in capsys.readouterr().out
    assert not ledger.path.exists()
    assert main(args) == 0  # no ledger: every video is replaced, none skipped
    assert "already written" not in capsys.readouterr().out
    with Memory.open(memory_path, embedder_from_spec("test:32")) as memory:
        assert check(memory).ok
        assert memory.vectors.count() == 6 * (3 + 5)  # video + super + macro + 5 events, once each


@pytest.mark.slow
def test_kill_9_mid_import_then_rerun_gives_the_complete_memory(tmp_path):
    source = dense_captions(tmp_path / "dense.json", videos=40, captions=3, unique=True)
    memory_path = tmp_path / "killed"
    command = [sys.executable, "-c", "import sys; from memtools.cli import main; sys.exit(main())",
               "import-captions", str(source), "--memory", str(memory_path), "--embedder", "test:32",
               "--batch-size", "1", "--no-progress"]
    ledgers = memory_path / "work" / ".imports"
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            files = list(ledgers.glob("*.jsonl")) if ledgers.is_dir() else []
            if files and len(files[0].read_text().splitlines()) >= 3:
                break
            time.sleep(0.02)
        assert proc.poll() is None, "the import finished before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    with Memory.open(memory_path, embedder_from_spec("test:32")) as memory:
        landed = len(memory.video_ids())
    assert 3 <= landed < 40
    rerun = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    assert "already written by the interrupted run" in rerun.stdout

    straight = tmp_path / "straight"
    assert main(["import-captions", str(source), "--memory", str(straight), "--embedder", "test:32",
                 "--no-progress"]) == 0
    with Memory.open(memory_path, embedder_from_spec("test:32")) as memory:
        report = check(memory)
        assert report.ok, report.render()
        assert len(memory.video_ids()) == 40
        assert memory.vectors.count() == 40 * (1 + 1 + 1 + 3)  # no row twice
    assert tool_outputs(memory_path) == tool_outputs(straight)


def test_a_bulk_import_embeds_each_distinct_text_once_and_keeps_no_vectors_between_batches(tmp_path):
    """Captions repeat inside a video (micro-event, macro summary) and here across videos too: each
    batch embeds its distinct texts once, and a later batch takes the vector the memory holds for a text
    an earlier one wrote (one text, one vector: memtools.store.writes.held_vectors), read from the table,
    not kept in the process between batches (vectors kept for them held ~100 MiB of a large import)."""
    from memtools.embed.testing import TestEmbedder
    from memtools.importers.bulk import bulk_write

    class Counting(TestEmbedder):
        def __init__(self) -> None:
            super().__init__(32)
            self.calls: list[list[str]] = []

        def embed_documents(self, texts):
            self.calls.append(list(texts))
            return super().embed_documents(texts)

    source = dense_captions(tmp_path / "captions.json", 8)
    embedder = Counting()
    with Memory.create(tmp_path / "memory", embedder) as memory:
        bulk_write(memory, graphs_from_files([source]), batch_size=4, show_progress=False)
        assert memory.manifest.video_totals().ready == 8
    texts = [t for call in embedder.calls for t in call]
    assert all(len(set(call)) == len(call) for call in embedder.calls)
    # clip000's first caption, and clip006's and clip007's in the second batch: embedded once, in the first
    assert texts.count("The cook chops the onions") == 1
    assert len(embedder.calls) >= 2  # the second batch embedded its own new texts
