"""``ToolsHost``: what the tool mixins (``SearchTools``, ``EntityTools``, ``TranscriptTools``,
``FrameSearchTools``) use of ``MemoryTools`` (``tools/core.py``), declared for type checkers.

``MemoryTools`` defines every member; at run time this base adds nothing (the declarations are
only seen by type checkers), so the mixins stay separate modules without importing the core.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memtools.store import KuzuGraph, Memory
    from memtools.store.outline import Outline
    from memtools.tools.search import SearchConfig


class ToolsHost:
    """The members of ``MemoryTools`` its mixins call."""

    if TYPE_CHECKING:
        memory: Memory
        search_config: SearchConfig

        def _reading(self) -> AbstractContextManager[KuzuGraph]: ...

        def _video_id(self, video_id: str | None) -> str: ...

        def _check_window(self, start: float, end: float) -> None: ...

        def _time_window(self, start_sec: float, end_sec: float, video_id: str | None,
                         as_of_sec: float | None) -> tuple[str, float | None]: ...

        def _outline(self, video_id: str) -> Outline | None: ...


__all__ = ["ToolsHost"]
