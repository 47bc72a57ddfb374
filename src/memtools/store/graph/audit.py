"""Whole-video reads of the graph, for the integrity check, repair and migration: every video,
node ids and counts per video, keyframe paths, and one video read back as it was written.
``KuzuGraph`` mixes this in; it supplies ``_run`` and ``_tables``."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from memtools.schema import Edge, EdgeCategory, Node, NodeKind, VideoGraph
from memtools.store.graph.schema import TABLES, _decode

if TYPE_CHECKING:
    from memtools.store.graph.schema import _Table


class WholeVideoReads:
    """Reads over whole videos (scans: not for the tools' hot paths)."""

    if TYPE_CHECKING:
        def _run(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]: ...

        def _tables(self) -> list[_Table]: ...

    def video_ids(self) -> list[str]:
        """Every video the graph holds."""
        return sorted(row[0] for row in self._run("MATCH (v:Video) RETURN v.id"))

    def ids_by_video(self, kinds: Iterable[NodeKind]) -> dict[str, set[str]]:
        """Node ids of these kinds, grouped by video."""
        found: dict[str, set[str]] = defaultdict(set)
        present = {t.kind for t in self._tables()}
        for kind in kinds:
            if kind not in present:
                continue
            for node_id, video_id in self._run(f"MATCH (n:{TABLES[kind].name}) RETURN n.id, n.video_id"):
                found[video_id].add(node_id)
        return found

    def counts_by_video(self) -> dict[str, dict[str, int]]:
        """Per video, nodes per kind and non-hierarchy edges (the manifest's ``counts``)."""
        counts: dict[str, dict[str, int]] = defaultdict(dict)
        for table in self._tables():
            if table.kind is NodeKind.VIDEO:
                continue
            for vid, n in self._run(f"MATCH (n:{table.name}) RETURN n.video_id, count(n)"):
                counts[vid][table.kind.value] = int(n)
        for vid, n in self._run("MATCH (a)-[r:Rel]->(b) WHERE r.category <> 'hierarchy' RETURN a.video_id, count(r)"):
            counts[vid]["edges"] = int(n)
        return counts

    def counts_of(self, video_ids: Sequence[str]) -> dict[str, dict[str, int]]:
        """``counts_by_video`` of these videos only, with the video node as ``video`` (recovery
        checks what a killed write left: it looks up nothing beyond the write's videos)."""
        vids = list(video_ids)
        counts: dict[str, dict[str, int]] = defaultdict(dict)
        for table in self._tables():
            rows = self._run(f"MATCH (n:{table.name}) WHERE n.video_id IN $vids RETURN n.video_id, count(n)",
                             {"vids": vids})
            for vid, n in rows:
                counts[vid][table.kind.value] = int(n)
        for vid, n in self.typed_edges_of(vids, "a.video_id, count(r)"):
            counts[vid]["edges"] = counts[vid].get("edges", 0) + int(n)
        return {vid: {k: n for k, n in c.items() if n} for vid, c in counts.items() if any(c.values())}

    def typed_edges_of(self, video_ids: Sequence[str], returns: str) -> list[list[Any]]:
        """``RETURN returns`` over the typed (non-hierarchy) edges leaving these videos' nodes, one query per
        source table: kuzu 0.11.3 drops edges from an unlabeled ``MATCH (a)-[r:Rel]->(b) WHERE a.video_id IN
        $vids`` (an OcrText -> Entity edge, in 196 of 200 reads of one video), while the labeled form and the
        ``=`` form return them all. Aggregates come per table: the caller sums them."""
        rows: list[list[Any]] = []
        for table in self._tables():
            rows += self._run(f"MATCH (a:{table.name})-[r:Rel]->(b) WHERE a.video_id IN $vids AND "
                              f"r.category <> 'hierarchy' RETURN {returns}", {"vids": list(video_ids)})
        return rows

    def keyframe_paths(self) -> list[tuple[str, str]]:
        """(video id, image path) of every stored keyframe."""
        return [(vid, path) for vid, path in self._run("MATCH (k:Keyframe) RETURN k.video_id, k.path")]

    def video_graph(self, video_id: str) -> VideoGraph | None:
        """One video read back whole, as it was written (None if the graph does not hold it)."""
        return self.video_graphs([video_id]).get(video_id)

    def video_graphs(self, video_ids: Sequence[str]) -> dict[str, VideoGraph]:
        """These videos read back whole, as they were written: one query per table for all of them (a
        replace reads the videos of its batch this way: ``memtools.store.writes.kept``); a video the graph
        does not hold is left out."""
        vids = list(dict.fromkeys(video_ids))
        if not vids:
            return {}
        nodes: dict[str, dict[NodeKind, list[Node]]] = defaultdict(lambda: {kind: [] for kind in TABLES})
        for table in self._tables():
            order = "n.ordinal" if table.kind in (NodeKind.SUPER, NodeKind.MACRO) else "n.id"
            rows = self._run(f"MATCH (n:{table.name}) WHERE n.video_id IN $vids RETURN n.video_id, n "
                             f"ORDER BY n.video_id, {order}", {"vids": vids})
            for vid, row in rows:
                nodes[vid][table.kind].append(_decode(row))
        edges: dict[str, list[Edge]] = defaultdict(list)
        for vid, a, b, c, lab, d in sorted(self.typed_edges_of(
                vids, "a.video_id, a.id, b.id, r.category, r.label, r.description"), key=lambda r: r[:3] + [r[4]]):
            edges[vid].append(Edge(source=a, target=b, category=EdgeCategory(c), label=lab, description=d or ""))
        return {vid: VideoGraph(video=held[NodeKind.VIDEO][0], supers=held[NodeKind.SUPER],
                                macros=held[NodeKind.MACRO], entities=held[NodeKind.ENTITY],
                                events=held[NodeKind.EVENT], ocr=held[NodeKind.OCR], speech=held[NodeKind.SPEECH],
                                keyframes=held[NodeKind.KEYFRAME], edges=edges.get(vid, []))
                for vid in vids if (held := nodes.get(vid)) is not None and held[NodeKind.VIDEO]}
