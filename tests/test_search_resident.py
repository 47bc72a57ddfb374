"""Vector queries answered from the rows held in memory (``memtools.store.tables.resident``) equal what
lance answers itself (issue 10: search at 1,000 h): the same rows, the same scores, for every
filter, with and without the ANN index; a write is seen by the next search; a table over the
budget is searched by lance."""

from __future__ import annotations

import random
import subprocess
import sys
import threading

import pytest

from memtools.embed.testing import TestEmbedder
from memtools.errors import ConfigError
from memtools.importers.captions import Caption, CaptionedVideo, graph_from_captions
from memtools.store import Memory
from memtools.store.base import SearchFilter, SearchQuery
from memtools.store.tables import lance_fold, resident_search
from memtools.store.tables.resident import budget_bytes
from memtools.store.tables.vectors import LanceIndex
from memtools.tools import MemoryTools

WORDS = ("man woman dog cat pan knife onion carrot guitar ball car street kitchen table bowl flour "
         "chops stirs plays throws pours cuts mixes drives runs jumps holds opens").split()
DIM = 64


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 9)))


def videos(n: int, seed: int) -> list[CaptionedVideo]:
    rng = random.Random(seed)
    out = []
    for v in range(n):
        t, caps = 0.0, []
        for _ in range(rng.randint(20, 40)):
            end = t + rng.uniform(4, 30)
            caps.append(Caption(t, end, sentence(rng)))
            t = end
        out.append(CaptionedVideo(f"s{seed}v{v:02d}", caps, duration=t + 10, title=sentence(rng)))
    return out


def make(path, monkeypatch, ann: bool):
    if ann:  # a small table with an IVF-PQ index, as a 1,000 h one has
        monkeypatch.setattr(lance_fold, "ANN_MIN_ROWS", 500)
    with Memory.create(path, TestEmbedder(DIM)) as memory:
        memory.write_videos([graph_from_captions(v) for v in videos(30, 1)])
    return path


def pair(path):
    """The same tables twice: held in memory, and searched by lance alone."""
    held, plain = LanceIndex(path / "vectors", DIM), LanceIndex(path / "vectors", DIM, resident_bytes=0)
    assert held.hold_rows() is not None and plain.hold_rows() is None
    return held, plain


def same_rows(got, want, limit: int, what) -> int:
    """The same rows with the same scores, best first; rows tied at the cut may differ (either is
    right: numpy and lance round the last bits of a cosine differently). Returns the rows compared."""
    got_scores, want_scores = {h.id: h.score for h in got.hits()}, {h.id: h.score for h in want.hits()}
    assert len(got_scores) == len(want_scores), what
    cut = min(want_scores.values(), default=0.0) + 1e-5 if len(want_scores) == limit else -2.0
    for node in set(got_scores) ^ set(want_scores):
        assert {**got_scores, **want_scores}[node] <= cut, (what, node)
    for node in set(got_scores) & set(want_scores):
        assert got_scores[node] == pytest.approx(want_scores[node], abs=1e-5), (what, node)
    assert [h.score for h in got.hits()] == sorted(got_scores.values(), reverse=True)
    return len(want_scores)


FILTERS = {
    "none": SearchFilter(),
    "three videos": SearchFilter(video_ids=("s1v03", "s1v07", "s1v11")),
    "kinds": SearchFilter(kinds=("event", "macro")),
    "window": SearchFilter(video_ids=("s1v02", "s1v05"), start=40.0, end=200.0),
    "as of": SearchFilter(as_of=150.0, kinds=("event", "super", "macro", "video")),
    "unknown video": SearchFilter(video_ids=("nope",)),
}


@pytest.mark.parametrize("ann", [False, True], ids=["exact", "ann"])
def test_resident_rows_answer_as_lance_does(tmp_path, monkeypatch, ann):
    path = make(tmp_path / "m", monkeypatch, ann)
    held, plain = pair(path)
    assert held._has_ann is ann and plain._has_ann is ann
    embed = TestEmbedder(DIM).embed_query
    rng = random.Random(7)
    compared = 0
    for name, where in FILTERS.items():
        for _ in range(8):
            vector = embed(sentence(rng))
            for limit in (10, 100, 5000):
                query = SearchQuery("vector", limit, vector, filter=where, lite=True)
                got, want = held.search_columns(query), plain.search_columns(query)
                assert held._resident[1] is not None and plain._resident[1] is None
                compared += same_rows(got, want, limit, (name, limit))
    assert compared > 5000
    # full hits (payloads read by row id) are lance's, field for field
    query = SearchQuery("vector", 20, embed("a man chops an onion"), filter=FILTERS["three videos"])
    got = {h.id: h for h in held.search(query)}
    for want in plain.search(query):
        assert got[want.id].score == pytest.approx(want.score, abs=1e-5)
        assert (got[want.id].text, got[want.id].context, got[want.id].kind) == (want.text, want.context, want.kind)


def test_the_search_tool_gives_the_same_hits_either_way(tmp_path, monkeypatch):
    path = make(tmp_path / "m", monkeypatch, ann=False)
    rng = random.Random(3)
    queries = [sentence(rng) for _ in range(25)]

    def run(env: str) -> list:
        monkeypatch.setenv("MEMTOOLS_RESIDENT_MB", env)
        with Memory.open(path, TestEmbedder(DIM)) as memory:
            memory.vectors.warm_up()  # as a server does: a small table's rows are read before the first search
            held = memory.vectors._resident
            assert (held is None or held[1] is None) == (env == "0")
            tools = MemoryTools(memory)
            found = [tools.search_nodes(q, top_k=8, video_id="s1v04" if i % 5 == 0 else None)
                     for i, q in enumerate(queries)]
        # numpy and lance round cosines differently in the last float bits: hits tied to 1e-6 may swap
        return [sorted(((round(h.score, 5), h.id, h.text, tuple(h.members), tuple(h.context)) for h in r.hits),
                       key=lambda t: (-t[0], t[1])) for r in found]

    assert run("0") == run("512")


def test_a_write_is_seen_by_the_next_search(tmp_path, monkeypatch):
    path = make(tmp_path / "m", monkeypatch, ann=False)
    with Memory.open(path, TestEmbedder(DIM)) as memory:
        query = SearchQuery("vector", 50, memory.embedder.embed_query("guitar"), filter=SearchFilter(), lite=True)
        first = memory.vectors.hold_rows()
        before = memory.vectors.search_columns(query)
        late = CaptionedVideo("late", [Caption(0, 10, "guitar guitar guitar guitar")], duration=10, title="late")
        memory.write_videos([graph_from_captions(late)])
        after = memory.vectors.search_columns(query)  # lance answers while the new version is read
        assert "late" not in {h.video_id for h in before.hits()} and after.hits()[0].video_id == "late"
        held = memory.vectors.hold_rows()
        assert held is not None and first is not None and held.version > first.version
        assert memory.vectors.search_columns(query).hits()[0].video_id == "late"
        memory.delete_video("late")
        assert "late" not in {h.video_id for h in memory.vectors.search_columns(query).hits()}


def test_rows_are_held_from_a_process_s_second_search_on(tmp_path, monkeypatch):
    """A one-shot command (one search) never reads a large table into memory; a longer-lived process
    reads it on a background thread after its second search, and lance answers until then. A small
    table is read at the first search."""
    path = make(tmp_path / "m", monkeypatch, ann=False)
    monkeypatch.setattr(resident_search, "HOLD_AT_ONCE_BYTES", 0)  # as a large table is
    index = LanceIndex(path / "vectors", DIM)
    vector = TestEmbedder(DIM).embed_query("dog")

    def search(v):  # each search has its own query vector, as each call of a tool does
        return index.search_columns(SearchQuery("vector", 20, v.copy(), lite=True))

    first = index.search_columns(SearchQuery("vector", 20, vector, lite=True))  # a library search's stages 1
    again = index.search_columns(SearchQuery("vector", 20, vector, filter=SearchFilter(video_ids=("s1v01",))))  # 2
    assert index._resident is None and index._holding is None  # one search, two stages: still one
    search(TestEmbedder(DIM).embed_query("cat"))
    for thread in [t for t in threading.enumerate() if t.name == "memtools-hold-rows"]:
        thread.join(timeout=30)
    assert index._resident is not None and index._resident[1] is not None
    same_rows(search(vector), first, 20, "held")
    assert len(again) > 0
    monkeypatch.undo()
    small = LanceIndex(path / "vectors", DIM)
    small.search_columns(SearchQuery("vector", 20, vector, lite=True))
    assert small._resident is not None and small._resident[1] is not None


def test_a_table_over_the_budget_is_searched_by_lance(tmp_path, monkeypatch):
    path = make(tmp_path / "m", monkeypatch, ann=False)
    small = LanceIndex(path / "vectors", DIM, resident_bytes=10_000)  # a few rows' worth
    query = SearchQuery("vector", 10, TestEmbedder(DIM).embed_query("dog"), lite=True)
    assert small.hold_rows() is None and len(small.search_columns(query)) == 10


def test_the_budget_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("MEMTOOLS_RESIDENT_MB", "64")
    assert budget_bytes() == 64 << 20
    monkeypatch.setenv("MEMTOOLS_RESIDENT_MB", "0")
    assert budget_bytes() == 0
    for bad in ("lots", "-5", "nan"):
        monkeypatch.setenv("MEMTOOLS_RESIDENT_MB", bad)
        with pytest.raises(ConfigError, match="MEMTOOLS_RESIDENT_MB must be a number of megabytes"):
            budget_bytes()


def test_an_emptied_table_is_held_too(tmp_path, monkeypatch):
    path = make(tmp_path / "m", monkeypatch, ann=False)
    with Memory.open(path, TestEmbedder(DIM)) as memory:
        for vid in list(memory.manifest.videos):
            memory.delete_video(vid)
        query = SearchQuery("vector", 10, memory.embedder.embed_query("dog"), lite=True)
        held = memory.vectors.hold_rows()
        assert held is not None and len(held) == 0 and len(memory.vectors.search_columns(query)) == 0
        assert MemoryTools(memory).search_nodes("dog").hits == []


CHILD = """
import sys, time
from memtools.embed.testing import TestEmbedder
from memtools.store.tables import resident
from memtools.store.tables import resident_search
from memtools.store.base import SearchQuery
from memtools.store.tables.vectors import LanceIndex

resident_search.HOLD_AT_ONCE_BYTES = 0
read = resident.ResidentRows.read

def slow_read(*args, **kwargs):  # still reading when the script ends
    time.sleep(1.0)
    with open(sys.argv[2], "w") as out:  # written only if exit waits for this thread
        out.write(f"stop={kwargs['stop'].is_set()}")
    return read(*args, **kwargs)

resident.ResidentRows.read = slow_read
index = LanceIndex(sys.argv[1], 64)
for text in ("dog", "cat"):
    index.search_columns(SearchQuery("vector", 5, TestEmbedder(64).embed_query(text), lite=True))
print("searched", flush=True)
"""


def test_a_process_exiting_while_rows_are_read_waits_for_the_reader_and_stops_it(tmp_path, monkeypatch):
    """lance aborts a process whose read is still going on as Python shuts down: exit stops the
    background reader at its next batch and waits for it."""
    path = make(tmp_path / "m", monkeypatch, ann=False)
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    marker = tmp_path / "reader.txt"
    done = subprocess.run([sys.executable, str(script), str(path / "vectors"), str(marker)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "searched" and "searches read the table instead" not in done.stderr
    assert marker.read_text(encoding="utf-8") == "stop=True"  # exit waited, and the reader was told to stop
