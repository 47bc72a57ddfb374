"""``Outline``: the small top of a video's hierarchy that navigation tools read again and again."""

from __future__ import annotations

from dataclasses import dataclass, field

from memtools.schema import MacroEvent, SuperEvent, Video


@dataclass(frozen=True)
class Outline:
    """A video's root, super events and macro events: small, read often, cached per generation."""

    video: Video
    supers: tuple[SuperEvent, ...]
    macros: tuple[MacroEvent, ...]
    by_id: dict[str, SuperEvent | MacroEvent] = field(repr=False)
