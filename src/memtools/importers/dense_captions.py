"""Dense-caption JSON (ActivityNet Captions / YouCook2 layout), read as a stream::

    {video_id: {"duration": 241.6, "timestamps": [[s, e], ...], "sentences": ["...", ...]}}

or the same mapping under a top-level ``"database"`` key. ``ijson`` hands over one video at a
time, so a file of any size is imported in bounded memory and writing starts at once.
``scan_dense_captions`` reads the whole file once without keeping it, so a broken file is
refused before anything is written and progress can show a total.

JSON has no NaN or Infinity (RFC 8259), although Python's ``json.dump`` writes them: such a
file is refused with the video it was found in and a way out. Times written as strings or as
huge numbers that read as NaN/infinite are rejected per caption by ``clean_captions``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from memtools.errors import ImportFormatError
from memtools.importers.caption_checks import Caption, CaptionedVideo
from memtools.schema import slugify_video_id

LAYOUT_HELP = "each entry needs duration, timestamps [[start, end], ...] and sentences [...]"


def _ijson():
    try:
        import ijson
    except ImportError as exc:  # pragma: no cover - a dependency of memtools
        raise ImportFormatError("reading caption JSON needs the ijson package: pip install ijson") from exc
    return ijson


def _prefix(handle: IO[bytes], path: Path) -> str:
    """``""`` for ``{video: ...}``, ``"database"`` for ``{"database": {video: ...}}``."""
    ijson = _ijson()
    events = ijson.parse(handle)
    try:
        first = next(events, None)
        if first is None or first[1] != "start_map":
            raise ImportFormatError(f"{path}: expected a JSON object {{video_id: {{duration, timestamps, "
                                    "sentences}}}}")
        second = next(events, None)
        third = next(events, None)
    except ijson.JSONError as exc:
        raise _broken(path, handle, None, exc) from None
    if second and second[1:] == ("map_key", "database") and third and third[1] == "start_map":
        return "database"
    return ""


def _broken(path: Path, handle: IO[bytes], after: str | None, exc: Exception) -> ImportFormatError:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    where = f"after video {after!r}" if after else "in or before its first video"
    hint = ""
    if any(word in str(exc) for word in ("NaN", "Infinity", "invalid char")):
        hint = (" JSON has no NaN or Infinity (Python's json.dump writes them): write null or drop those "
                "captions, or re-save with json.dump(..., allow_nan=False) to find them.")
    return ImportFormatError(f"{path} is not valid JSON {where} (near byte {handle.tell():,}): {text}.{hint}")


def _video(path: Path, key: str, entry: Any) -> CaptionedVideo:
    try:
        stamps, sentences = entry["timestamps"], entry["sentences"]
        if len(stamps) != len(sentences):
            raise ValueError(f"{len(stamps)} timestamps but {len(sentences)} sentences")
        captions = [Caption(_number(s), _number(e), str(t)) for (s, e), t in zip(stamps, sentences, strict=True)]
        duration = _number(entry.get("duration") or 0.0)
    except (KeyError, TypeError, ValueError) as exc:
        raise ImportFormatError(f"{path}: video {key!r} is malformed ({exc}); {LAYOUT_HELP}") from exc
    return CaptionedVideo(video_id=slugify_video_id(str(key)), captions=captions, duration=duration,
                          title=str(entry.get("title") or key))


def _number(value: Any) -> float:
    if isinstance(value, bool):
        raise TypeError(f"a time must be a number, not {value!r}")
    return float(value)


def _entries(path: Path) -> Iterator[tuple[str, Any]]:
    ijson = _ijson()
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed in finally, across yields
    except OSError as exc:
        raise ImportFormatError(f"cannot read caption JSON {path}: {exc.strerror or exc}") from exc
    try:
        prefix = _prefix(handle, path)
        handle.seek(0)
        last = None
        items = ijson.kvitems(handle, prefix, use_float=True)
        while True:
            try:
                item = next(items, None)
            except ijson.JSONError as exc:
                raise _broken(path, handle, last, exc) from None
            if item is None:
                return
            last = item[0]
            yield item
    finally:
        handle.close()


def read_dense_captions(path: Path) -> Iterator[CaptionedVideo]:
    """Videos of a dense-caption JSON file, in file order, one at a time."""
    for key, entry in _entries(Path(path)):
        yield _video(path, key, entry)


@dataclass(frozen=True)
class DenseCaptionCounts:
    videos: int
    captions: int


def scan_dense_captions(path: Path) -> DenseCaptionCounts:
    """Read the whole file once (nothing kept) and count; a broken file fails here, before any write."""
    videos = captions = 0
    for video in read_dense_captions(path):
        videos += 1
        captions += len(video.captions)
    return DenseCaptionCounts(videos, captions)
