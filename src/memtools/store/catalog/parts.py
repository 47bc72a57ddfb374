"""``MemoryParts``: an open memory as the integrity code sees it (check, repair, the per-read guard
and the write journal's recovery). ``Memory`` is one; depending on this contract instead of on
``Memory`` keeps ``memtools.store`` free of import circles (``tests/test_store_imports.py``)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from memtools.embed.base import Embedder
    from memtools.embed.images import ImageEmbedder
    from memtools.store.base import GraphStore
    from memtools.store.catalog.manifest import Manifest
    from memtools.store.catalog.videos import VideoTotals


class MemoryParts(Protocol):
    """An open memory as ``memtools check``, ``memtools repair`` and the per-read guard see it: its
    folder, its manifest, graph handles and the lance tables. ``Memory`` is one; the checks depend on
    this contract, never on ``Memory`` itself, so ``memtools.store`` has no import circle."""

    path: Path
    manifest: Manifest

    def reading(self, *, guard: bool = True) -> AbstractContextManager[GraphStore]:
        """The graph, open read-only for the block (``guard=False``: even when a part is missing)."""

    def _writing(self, *, guard: bool = True) -> AbstractContextManager[GraphStore]:
        """The graph, open read-write under the memory's write lock."""

    def refresh(self) -> None: ...

    def _embed_rows(self, rows: list[dict], cache: dict[str, object]) -> None:
        """Set each row's ``vector`` from its ``text`` with the memory's embedder."""

    @property
    def vectors_unchecked(self) -> Any:
        """The lance tables (``memtools.store.tables.vectors.LanceIndex``), without the guard."""

    @property
    def entities(self) -> Any:
        """The lance ``entities`` table (``memtools.store.tables.entity_index.EntityIndex``)."""

    @property
    def keyframes(self) -> Any:
        """The lance ``keyframes`` table, or None in a memory without keyframe vectors."""

    @property
    def embedder(self) -> Embedder: ...

    @property
    def image_embedder(self) -> ImageEmbedder | None: ...

    def frames_dir(self, video_id: str) -> Path:
        """The folder of one video's keyframe files."""

    def _commit_manifest(self, manifest: Manifest, totals: VideoTotals | None = None) -> None:
        """Write the manifest of a finished write (with the table versions readers pin and ``totals``,
        the catalog's sums after it)."""
