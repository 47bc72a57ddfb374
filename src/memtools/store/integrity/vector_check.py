"""``memtools check`` for the lance ``nodes`` and ``entities`` tables.

``nodes``: readable, vectors as wide as the manifest's embedder says, no row without a vector, one
row per searchable node of the graph and none of a video the memory does not hold, and every index
with its files. ``entities``: present wherever a ready video has entities (the manifest counts them),
readable, as wide as ``nodes``, rows for each such video and none for others, its index whole.
Everything found here is derivable from the graph, so ``memtools repair`` rebuilds it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from memtools.store.catalog.manifest import Manifest
from memtools.store.catalog.parts import MemoryParts
from memtools.store.integrity.lance_check import index_problems, table_folder, vector_dim
from memtools.store.problems import Problem, Report, unreadable
from memtools.store.resources import raise_if_exhausted


def entity_videos(manifest: Manifest) -> list[str]:
    """Ready videos whose graph holds entities: each has rows in the ``entities`` table."""
    return sorted(v for v, e in manifest.videos.items() if e.status == "ready" and e.counts.get("entity", 0) > 0)


def dim_problem(manifest: Manifest, dim: int) -> Problem | None:
    """The table's vectors and the manifest's embedder disagree (repair decides which is right)."""
    info = manifest.embedder
    if dim == info.dim:
        return None
    return Problem("vectors", f"the vector table holds {dim}-dimensional vectors but the manifest says the "
                   f"embedder {info.name} makes {info.dim}", True)


def check_nodes(memory: MemoryParts, manifest: Manifest, ready: list[str], graph_ids: dict[str, set[str]] | None,
                report: Report) -> None:
    index = memory.vectors_unchecked
    index.refresh()
    try:
        table = index.nodes()
        dim = vector_dim(table)
        rows = table.search().select(["id", "video_id"]).limit(None).to_arrow()
        nulls = table.count_rows("vector IS NULL")
        broken_indexes = index_problems(table, "nodes", rows.num_rows, table_folder(index, "nodes"))
    except Exception as exc:  # lance raises OSError/ValueError/RuntimeError/pyarrow errors on damaged files
        raise_if_exhausted(exc, "checking the vector table")
        report.parts["vectors"] = "UNREADABLE"
        text = unreadable("the vector table cannot be read (a data file is missing or damaged)", exc)
        report.problems.append(Problem("vectors", text, True))
        return
    report.parts["vectors"] = f"{rows.num_rows} row(s), dim {dim}"
    wrong_dim = dim_problem(manifest, dim)
    if wrong_dim is not None:
        report.problems.append(wrong_dim)
    if nulls:
        report.problems.append(Problem("vectors", f"{nulls} row(s) have no vector", True))
    report.problems += [Problem("vectors", line, True, index_only=True) for line in broken_indexes]
    ids, vids = rows.column("id").to_pylist(), rows.column("video_id").to_pylist()
    twice = [i for i, n in Counter(ids).items() if n > 1]
    if twice:
        report.problems.append(Problem("vectors", f"{len(twice)} node(s) have more than one row, e.g. {twice[0]}",
                                       True))
    in_lance: dict[str, set[str]] = defaultdict(set)
    for node_id, vid in zip(ids, vids, strict=True):
        in_lance[vid].add(node_id)
    for vid in sorted(set(in_lance) - set(ready)):
        report.problems.append(Problem("vectors", f"{len(in_lance[vid])} row(s) of video {vid!r}, which is not a "
                                       "ready video of this memory", True, vid))
    if graph_ids is None:
        return  # no graph to compare the rows with
    for vid in ready:
        want, have = graph_ids.get(vid), in_lance.get(vid, set())
        if want is None:
            continue  # a video the graph lost: reported with the graph
        if want - have:
            lacking = sorted(want - have)
            report.problems.append(Problem("vectors", f"{vid}: {len(lacking)} searchable node(s) have no vector "
                                           f"row, e.g. {lacking[0]}", True, vid))
        if have - want:
            extra = sorted(have - want)
            report.problems.append(Problem("vectors", f"{vid}: {len(extra)} row(s) name nodes the graph does not "
                                           f"hold, e.g. {extra[0]}", True, vid))


def check_entities(memory: MemoryParts, manifest: Manifest, ready: list[str], report: Report) -> None:
    want = entity_videos(manifest)
    entities: Any = memory.entities
    try:
        table = entities.table()
        if table is None:
            report.parts["entities"] = "missing" if want else "none (no video has entities)"
            if want:
                report.problems.append(Problem(
                    "entities", f"the entities table is missing: the entity profiles of {len(want)} video(s) are "
                    "lost (search_entities and get_entity_timeline need them)", True))
            return
        dim = vector_dim(table)
        rows = table.search().select(["id", "video_id"]).limit(None).to_arrow()
        broken_indexes = index_problems(table, "entities", rows.num_rows, table_folder(entities.lance, "entities"))
    except Exception as exc:
        raise_if_exhausted(exc, "checking the entities table")
        report.parts["entities"] = "UNREADABLE"
        text = unreadable("the entities table cannot be read (a data file is missing or damaged)", exc)
        report.problems.append(Problem("entities", text, True))
        return
    per_video = Counter(rows.column("video_id").to_pylist())
    report.parts["entities"] = f"{rows.num_rows} profile(s) of {len(per_video)} video(s)"
    if dim != manifest.embedder.dim:
        report.problems.append(Problem("entities", f"the entities table holds {dim}-dimensional vectors but the "
                                       f"manifest says the embedder {manifest.embedder.name} makes "
                                       f"{manifest.embedder.dim}", True))
    report.problems += [Problem("entities", line, True, index_only=True) for line in broken_indexes]
    lacking = [vid for vid in want if not per_video.get(vid)]
    if lacking:
        report.problems.append(Problem("entities", f"{len(lacking)} video(s) have no entity profiles, e.g. "
                                       f"{lacking[0]}", True, lacking[0] if len(lacking) == 1 else ""))
    for vid in sorted(set(per_video) - set(ready)):
        report.problems.append(Problem("entities", f"{per_video[vid]} entity profile(s) of video {vid!r}, which is "
                                       "not a ready video of this memory", True, vid))
