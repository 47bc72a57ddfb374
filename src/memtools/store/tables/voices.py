"""The voice clusters of each video: ``voices/<video_id>.json`` in the memory folder.

    save_voices(memory.path, "talk", voices)     # written whole (temporary file, then rename)
    load_voices(memory.path, "talk")             # [] for a video without (or a memory from before speakers)

One small JSON file per video, ``{"video_id", "voices": [{"label", "centroid", "utterances",
"seconds"}]}``: the unit centroid of each speaker label's voice vectors (Resemblyzer GE2E, 256
numbers), kept so a library-level matcher can later compare voices across videos without
decoding audio again. The graph keeps who said what (Speech nodes' ``speaker``); this file
only adds the vectors. A memory built before speakers has no ``voices/`` folder and opens as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from memtools.store.tables.per_video import per_video_file, read_rows, write_whole

FOLDER = "voices"


class Voice(BaseModel):
    """One voice cluster of a video: its label, the unit centroid of its utterances' vectors, how much it said."""

    label: str
    centroid: list[float]
    utterances: int = Field(ge=0)
    seconds: float = Field(ge=0)


def voices_path(memory_path: Path, video_id: str) -> Path:
    return per_video_file(memory_path, FOLDER, video_id)


def save_voices(memory_path: Path, video_id: str, voices: Sequence[Voice]) -> None:
    write_whole(voices_path(memory_path, video_id),
                {"video_id": video_id, "voices": [v.model_dump(mode="json") for v in voices]})


def remove_voices(memory_path: Path, video_id: str) -> None:
    """Forget a video's voices (the video was deleted)."""
    voices_path(memory_path, video_id).unlink(missing_ok=True)


def load_voices(memory_path: Path, video_id: str) -> list[Voice]:
    rows = read_rows(voices_path(memory_path, video_id), "voices")
    try:
        return [Voice.model_validate(v) for v in rows or []]
    except ValidationError:
        return []  # a damaged file only loses the vectors; repair --speakers writes it again
