"""The lance tables as readers see them: a read never creates ``vectors/`` and a read lance cannot
answer is ``MemoryDamaged`` in plain words (``memtools.store.engines`` opens them this way)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memtools.errors import MemoryDamaged, StoreError
from memtools.store.integrity.checker import NODES_TABLE
from memtools.store.problems import unreadable
from memtools.store.resources import raise_if_exhausted
from memtools.store.tables.vectors import LanceIndex


class GuardedIndex(LanceIndex):
    """The lance tables, except that a read never creates ``vectors/`` (a missing folder stays missing)
    and a read that lance cannot answer becomes ``MemoryDamaged`` in plain words (lance's own text,
    with its Rust paths, goes to the debug log)."""

    def __init__(self, path: Path | str, dim: int, memory_path: Path | None = None) -> None:
        super().__init__(path, dim)
        self.memory_path = memory_path or Path(path).parent

    def nodes(self, create: bool = False):
        if not create and self._nodes is None and not self.remote and not (Path(self.path) / NODES_TABLE).is_dir():
            return None
        return super().nodes(create)

    def count(self) -> int:
        return self._guarded(super().count)

    def search(self, *args, **kwargs):
        return self._guarded(super().search, *args, **kwargs)

    def search_columns(self, *args, **kwargs):
        return self._guarded(super().search_columns, *args, **kwargs)

    def complete(self, *args, **kwargs):
        return self._guarded(super().complete, *args, **kwargs)

    def video_profiles(self):
        return self._guarded(super().video_profiles)

    def _guarded(self, read, *args, **kwargs) -> Any:
        try:
            return read(*args, **kwargs)
        except (StoreError, OSError, ValueError, RuntimeError) as exc:  # lance failed reading its own files
            raise_if_exhausted(exc, "reading the vector table")
            memory = self.memory_path
            unreadable("a read of the vector table failed", exc)
            raise MemoryDamaged(f"the vector table of the memory at {memory} cannot be read (a data or index file "
                                f"is missing or damaged); the user should run `memtools check --memory {memory}`, "
                                f"then `memtools repair --memory {memory}`") from exc
