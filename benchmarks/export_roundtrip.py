"""Export and import-export on YouCook2 (issue 47, item 5): the first N videos of ``youcook2/val.json``
imported as ``memtools import-captions`` does, exported (``memtools.archive.export_memory``), imported
into a new memory (``import_export``), and the two memories asked the same tool calls: ``get_summary``
of every video, ``search_nodes`` for the videos' step sentences (library-wide and within the video)
and ``get_entity_timeline`` for the library entities and a few names. Prints the timings and how many
answers are equal (compared as structured results, field by field).

    python benchmarks/export_roundtrip.py                       # 120 videos, the default embedder (MiniLM)
    python benchmarks/export_roundtrip.py --videos 20 --embedder test:64 --engine ladybug
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _annotations import read_queries
from _common import cpu_model, markdown_table, offline

ROOT = Path(__file__).resolve().parents[1]


class QueryCache:
    """The memory's embedder, each query embedded once for both memories (document vectors untouched)."""

    def __init__(self, inner) -> None:
        self.inner, self.queries = inner, {}
        self.name, self.dim = inner.name, inner.dim

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        if text not in self.queries:
            self.queries[text] = self.inner.embed_query(text)
        return self.queries[text]


def ask(memory, video_ids: list[str], queries, names: list[str]) -> dict[str, dict]:
    """Every tool answer, keyed by the call; a ToolError is an answer too (its text)."""
    from memtools.errors import ToolError
    from memtools.tools import MemoryTools

    tools = MemoryTools(memory)
    calls = [(f"get_summary {v}", "summary", lambda v=v: tools.get_summary(v)) for v in video_ids]
    for q in queries:
        calls.append((f"search_nodes {q.text}", "search (library)", lambda q=q: tools.search_nodes(q.text, top_k=5)))
        calls.append((f"search_nodes {q.video_id} {q.text}", "search (video)",
                      lambda q=q: tools.search_nodes(q.text, top_k=5, video_id=q.video_id)))
    lib_ids = [f"lib/entity_{n:04d}" for n in range(1, 31)]
    calls += [(f"timeline {i}", "entity timeline", lambda i=i: tools.get_entity_timeline(entity_id=i)) for i in lib_ids]
    calls += [(f"timeline {n}", "entity timeline", lambda n=n: tools.get_entity_timeline(name=n)) for n in names]
    out = {}
    for key, group, call in calls:
        try:
            out[key] = {"group": group, "answer": call().model_dump(mode="json")}
        except ToolError as exc:
            out[key] = {"group": group, "answer": f"ToolError: {exc}"}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--videos", type=int, default=120)
    parser.add_argument("--queries", type=int, default=400, help="step sentences asked (drawn, seed 0)")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--embedder", default=None, help="embedder spec (default: all-MiniLM-L6-v2)")
    parser.add_argument("--engine", default="kuzu", choices=("kuzu", "ladybug"))
    parser.add_argument("--work", type=Path, default=None, help="folder for the memories (default: a temporary one)")
    args = parser.parse_args()
    offline()
    from memtools.archive import export_memory, import_export
    from memtools.embed import default_embedder, embedder_from_spec
    from memtools.importers.captions import graphs_from_files
    from memtools.store import Memory

    source_file = args.data / "youcook2" / "val.json"
    work = args.work or Path(tempfile.mkdtemp(prefix="export-roundtrip-"))
    shutil.rmtree(work / "source", ignore_errors=True)
    shutil.rmtree(work / "copy", ignore_errors=True)
    (work / "memory.zip").unlink(missing_ok=True)
    embedder = QueryCache(embedder_from_spec(args.embedder) if args.embedder else default_embedder())
    seconds: dict[str, float] = {}

    started = time.perf_counter()
    with Memory.create(work / "source", embedder, graph_engine=args.engine) as memory:
        written = memory.write_videos(itertools.islice(graphs_from_files([source_file]), args.videos))
    seconds["build (import-captions)"] = time.perf_counter() - started
    started = time.perf_counter()
    exported = export_memory(work / "source", work / "memory.zip")
    seconds["export"] = time.perf_counter() - started
    started = time.perf_counter()
    imported = import_export(work / "memory.zip", work / "copy", embedder=embedder, graph_engine=args.engine)
    seconds["import-export"] = time.perf_counter() - started

    with Memory.open(work / "source", embedder) as a, Memory.open(work / "copy", embedder) as b:
        ids = a.video_ids()
        queries = [q for q in read_queries(source_file) if q.video_id in set(ids)]
        queries = random.Random(0).sample(queries, min(args.queries, len(queries)))
        names = ["onion", "pan", "oil", "salt", "chicken", "garlic", "knife", "bowl"]
        started = time.perf_counter()
        before = ask(a, ids, queries, names)
        after = ask(b, ids, queries, names)
        seconds["ask both memories"] = time.perf_counter() - started

    groups: dict[str, list[int]] = {}
    unequal = []
    for key, item in before.items():
        same = after.get(key, {}).get("answer") == item["answer"]
        cell = groups.setdefault(item["group"], [0, 0])
        cell[0] += 1
        cell[1] += same
        if not same:
            unequal.append(key)
    print(f"# Export and import-export, {written} YouCook2 videos ({embedder.name}, {args.engine}; {cpu_model()})\n")
    print(markdown_table(["step", "seconds"], [(k, f"{v:.1f}") for k, v in seconds.items()]))
    print()
    print(f"Archive: {exported.bytes / 2**20:.2f} MiB, {exported.texts} text vectors; import embedded "
          f"{imported.embedded} text(s), took {imported.reused} from the archive.\n")
    print(markdown_table(["tool calls", "asked", "equal answers"],
                         [(g, n, f"{same} ({same / n:.1%})") for g, (n, same) in groups.items()]))
    if unequal:
        print("\nUnequal:", json.dumps(unequal[:10]), file=sys.stderr)
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if unequal else 0)


if __name__ == "__main__":
    main()
