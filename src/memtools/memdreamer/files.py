"""Finding and reading the files of one MEMDREAMER video folder (formats/memdreamer.md §1.1).

The graph file is required (``ImportFormatError`` without it); every other file is optional
and its absence or damage is noted in the video's report.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from memtools.errors import ImportFormatError
from memtools.memdreamer import values as val
from memtools.memdreamer.report import VideoReport
from memtools.memdreamer.subgraph import node_count

PHASE_DIRS = ("phase4", "phase3")  # run.py reads phase4/, precompute_embeddings.py phase3/
GRAPH_FILES = ("hierarchical_graph_final.json", "hierarchical_graph.json")
PHASE2_DIR = "phase2_topdown"
SUBGRAPH_FILE = "step5_subgraph.json"
UNIFICATION_FILE = Path("intermediate") / "step2p5_entity_unification.json"
EMBEDDINGS_FILE = "embeddings.json"


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ImportFormatError(f"cannot read {path}: {exc}") from exc


def embeddings_dim(path: Path) -> int | None:
    """The length of the first vector in embeddings.json, read from its first MiB only (files are huge)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(1 << 20).decode("utf-8", "replace")
    except OSError:
        return None
    match = re.search(r'"[^"]*"\s*:\s*\[([^\[\]]*)\]', head)
    if not match:
        return None
    body = match.group(1).strip()
    return body.count(",") + 1 if body else 0


def is_video_folder(folder: Path) -> bool:
    return (folder / PHASE2_DIR).is_dir() or any((folder / p / g).is_file() for p in PHASE_DIRS for g in GRAPH_FILES)


class VideoFiles:
    """The files of ``<root>/<video_key>/``; problems with optional ones go into ``report``."""

    def __init__(self, folder: Path, report: VideoReport) -> None:
        self.folder, self.report = folder, report

    def graph(self) -> tuple[Path, dict[str, Any]]:
        """``phase4/hierarchical_graph_final.json``, falling back to ``hierarchical_graph.json`` and ``phase3/``."""
        for phase in PHASE_DIRS:
            for name in GRAPH_FILES:
                path = self.folder / phase / name
                if path.is_file():
                    if phase != PHASE_DIRS[0]:
                        self.report.note(f"graph read from {phase}/ (no {PHASE_DIRS[0]}/)")
                    data = read_json(path)
                    if not isinstance(data, dict):
                        raise ImportFormatError(f"{path} is not a JSON object")
                    return path, data
        raise ImportFormatError(f"no {PHASE_DIRS[0]}/{GRAPH_FILES[0]} (or {GRAPH_FILES[1]}) in {self.folder}")

    def subgraph_files(self) -> list[Path]:
        """One subgraph per ``episode_*`` folder, nested or flat, in sorted order (as the reference)."""
        phase2 = self.folder / PHASE2_DIR
        if not phase2.is_dir():
            self.report.note(f"no {PHASE2_DIR}/ folder: macro events have no subgraphs")
            return []
        files, empty = [], 0
        for episode in sorted(phase2.glob("episode_*")):
            if not episode.is_dir():
                continue
            candidates = [episode / episode.name / SUBGRAPH_FILE, episode / SUBGRAPH_FILE,
                          *sorted(episode.glob(f"*/{SUBGRAPH_FILE}"))]
            found = next((c for c in candidates if c.is_file()), None)
            if found is None:
                empty += 1
            else:
                files.append(found)
        if empty:
            self.report.note(f"{empty} episode folder(s) without {SUBGRAPH_FILE} (skipped, as the reference does)")
        return files

    def subgraphs_by_slot(self) -> dict[int, tuple[Path, dict[str, Any]]]:
        """``{slot_id: (file, subgraph)}``; subgraphs without a slot, or a second one for a slot, are dropped."""
        by_slot: dict[int, tuple[Path, dict[str, Any]]] = {}
        for path in self.subgraph_files():
            try:
                data = read_json(path)
            except ImportFormatError as exc:
                self.report.drop("unreadable subgraph file")
                self.report.note(str(exc))
                continue
            if not isinstance(data, dict):
                self.report.drop("subgraph file that is not a JSON object")
                continue
            slot = val.integer(data.get("slot_id"))
            if slot is None or slot < 0:
                self.report.drop("node in a subgraph without slot_id (no macro event)", node_count(data))
            elif slot in by_slot:
                self.report.drop("node in a second subgraph for the same slot", node_count(data))
            else:
                by_slot[slot] = (path, data)
        return by_slot

    def aliases(self, phase: Path) -> dict[str, list[str]]:
        """``{lower-cased name: [canonical, variants...]}`` from the entity unification file."""
        path = phase / UNIFICATION_FILE
        if not path.is_file():
            self.report.note(f"no {UNIFICATION_FILE.as_posix()}: entities get no aliases")
            return {}
        try:
            data = read_json(path)
        except ImportFormatError as exc:
            self.report.note(f"entity unification ignored: {exc}")
            return {}
        groups: dict[str, list[str]] = {}
        mappings = data.get("entity_mappings") if isinstance(data, dict) else data
        for item in mappings if isinstance(mappings, list) else []:
            if isinstance(item, dict):
                group = val.strings([item.get("canonical_name"), *val.strings(item.get("variants"))])
                for name in group:
                    groups.setdefault(name.lower(), group)
        return groups

    def check_embeddings(self) -> None:
        """Note an ``embeddings.json`` and its dimension; its vectors are never loaded."""
        path = self.folder / EMBEDDINGS_FILE
        if path.is_file():
            dim = self.report.source_embedding_dim = embeddings_dim(path)
            self.report.note(f"{EMBEDDINGS_FILE} ({dim if dim is not None else 'unknown'}-d) not used: "
                             "memtools embeds every node with the memory's own embedder")
