"""The reads that count and walk a video's typed edges see every edge, on both engines.

kuzu 0.11.3 drops the OcrText -> Entity edge from an unlabeled ``MATCH (a)-[r:Rel]->(b) WHERE a.video_id
IN $vids`` (196 of 200 reads of one built video); recovery verifies a killed write with such counts
(``counts_of``), so a committed write was taken for a torn one and rolled back. The reads now go one
source table at a time (``WholeVideoReads.typed_edges_of``). Each engine is read in its own process
(kuzu and ladybug cannot load in one)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from test_wallclock import ENGINES, build, make_video

READ = """
import json, sys
from memtools.embed.testing import TestEmbedder
from memtools.store import Memory
with Memory.open(sys.argv[1], TestEmbedder(16)) as memory, memory.reading() as graph:
    (vid,) = graph.video_ids()
    every = sorted(tuple(r) for r in graph._run(
        "MATCH (a)-[r:Rel]->(b) WHERE a.video_id = $vid AND r.category <> 'hierarchy' RETURN a.id, b.id, r.label",
        {"vid": vid}))
    reads = [{"walk": sorted(graph.video_edges([vid])), "count": graph.counts_of([vid])[vid]["edges"]}
             for _ in range(20)]
    print(json.dumps({"every": every, "reads": reads, "listed": memory.manifest.videos[vid].counts["edges"]}))
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_counts_and_walks_of_a_built_video_hold_every_typed_edge(tmp_path, engine):
    build(tmp_path / "mem", str(make_video(tmp_path / "garden.mp4")), "--graph-engine", engine)
    src = str(Path(__file__).resolve().parents[1] / "src")
    done = subprocess.run([sys.executable, "-c", READ, str(tmp_path / "mem")], capture_output=True, text=True,
                          check=True, env={**os.environ, "PYTHONPATH": src})
    seen = json.loads(done.stdout)
    every = [list(edge) for edge in seen["every"]]  # the `=` form returns them all
    assert any("/ocr_" in a for a, _, _ in every)  # the edge the unlabeled IN form dropped is there
    for read in seen["reads"]:
        assert read["walk"] == every
        assert read["count"] == len(every) == seen["listed"]
