"""What a writer checks before it writes, and what it says when a failed graph write cost edges.

``check_before_write`` refuses (``MemoryDamaged``, naming the damage and ``memtools repair``) a
memory whose parts disagree; ``report_lost_edges`` turns kuzu 0.11.3's loss of edges in a rolled
back COPY into a loud error. Both run inside ``_writing`` (``memtools.store.writes.lock``, ``batch``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from memtools.errors import MemoryDamaged, StoreError
from memtools.store.integrity import checker as integrity
from memtools.store.problems import Problem

if TYPE_CHECKING:
    from memtools.store.base import GraphStore
    from memtools.store.catalog.manifest import Manifest, VideoEntry
    from memtools.store.catalog.parts import MemoryParts


def check_before_write(memory: MemoryParts, graph: GraphStore) -> None:
    """Refuse (``MemoryDamaged``, naming the damage and ``memtools repair``) to write on a memory
    whose parts disagree: the lance rows or the graph's videos differ from the manifest. Cheap (a
    row count, a count of the graph's videos, the manifest's totals: nothing per video), so it runs
    before every write; the videos are compared one by one only when the counts disagree."""
    manifest = memory.manifest
    totals = manifest.video_totals()
    problems: list[Problem] = []
    if _graph_videos(graph) != totals.in_graph:
        problems += _compare_videos(manifest, graph)
    table = memory.vectors_unchecked.nodes()
    if table is not None:
        expected = totals.rows
        try:
            found = table.count_rows()
        except Exception as exc:  # lance raises plain OSError/ValueError on damaged files
            problems.append(Problem("vectors", f"the vector table cannot be read: {exc}", True))
        else:
            if found != expected:
                problems.append(Problem("vectors", f"the vector table holds {found} rows but the manifest lists "
                                        f"{expected} searchable nodes", True))
    if problems:
        raise MemoryDamaged(integrity.damage_message(memory.path, problems, writing=True))


def _graph_videos(graph: GraphStore) -> int:
    rows = graph._run("MATCH (v:Video) RETURN count(v)")  # type: ignore[attr-defined]
    return int(rows[0][0]) if rows else 0


def _compare_videos(manifest: Manifest, graph: GraphStore) -> list[Problem]:
    """The videos listed as ready that the graph lacks, and the graph's videos the manifest does not list."""
    problems = []
    listed = manifest.videos
    ready = set(listed.ids("ready"))
    in_graph = set(graph.video_ids())
    if ready - in_graph:
        lost = sorted(ready - in_graph)
        problems.append(Problem("graph", f"{len(lost)} video(s) listed as ready are not in the graph, e.g. "
                                f"{lost[0]!r}", True))
    extra = sorted(vid for vid in in_graph - ready if vid not in listed)
    if extra:
        problems.append(Problem("manifest", f"the graph holds {len(extra)} video(s) the manifest does not list, "
                                f"e.g. {extra[0]!r}", True))
    return problems


def report_lost_edges(kuzu: GraphStore, listed: Mapping[str, VideoEntry], cause: BaseException) -> None:
    """After a rolled-back graph write, say so loudly if committed videos lost typed edges.

    kuzu 0.11.3 drops existing edges when a transaction that ran ``COPY`` of the edge table is
    rolled back (ladybug keeps them). memtools validates everything before that transaction, so
    only a failing copy itself gets here; the damage must not pass as an ordinary failed write.
    """
    try:
        have = kuzu.counts_by_video()
    except StoreError:
        return  # the graph cannot even be counted; the original error says enough
    lost = {vid: (entry.counts["edges"], have.get(vid, {}).get("edges", 0)) for vid, entry in listed.items()
            if entry.status == "ready" and "edges" in entry.counts
            and have.get(vid, {}).get("edges", 0) < entry.counts["edges"]}
    if not lost:
        return
    n = sum(expected - now for expected, now in lost.values())
    names = ", ".join(sorted(lost)[:5]) + (f" and {len(lost) - 5} more" if len(lost) > 5 else "")
    raise StoreError(
        f"the graph write failed ({cause}) and rolling it back lost {n} typed edge(s) of committed video(s) "
        f"{names} (a kuzu 0.11.3 bug). The memory is damaged: write those videos again (rebuild or re-import "
        "them), and consider the ladybug engine, which keeps them: memtools migrate --engine ladybug") from cause
