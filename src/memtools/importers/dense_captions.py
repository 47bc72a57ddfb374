"""Dense-caption JSON (ActivityNet Captions / YouCook2 layout), read as a stream::

    {video_id: {"duration": 241.6, "timestamps": [[s, e], ...], "sentences": ["...", ...]}}

or the same mapping under a top-level ``"database"`` key. ``ijson``'s event parser hands over
the file a token at a time and this module builds one video at a time from the events, so a
file of any size is imported in bounded memory and writing starts at once. The building is
bounded too: nesting deeper than ``MAX_DEPTH``, a string longer than ``MAX_STRING_CHARS`` or
any single token (a string, a number, a run of spaces) over ``MAX_TOKEN_BYTES`` is refused as
soon as it is met, naming the file, the byte and the video. A UTF-8 byte-order mark is skipped;
UTF-16 and UTF-32 files are refused (JSON is UTF-8).

``scan_dense_captions`` reads the whole file once without keeping it, so a broken file is
refused before anything is written and progress can show a total.

JSON has no NaN or Infinity (RFC 8259), although Python's ``json.dump`` writes them: such a
file is refused with the video it was found in and a way out. Values of the wrong type (a
sentence that is a number or a list, a time that is a string) are rejected per caption and
counted in ``ImportNotes``; they are never turned into text or numbers.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import IO, Any

from memtools.errors import ImportFormatError
from memtools.importers.caption_checks import (
    BAD_DURATION,
    BAD_TIMES,
    NOT_TEXT,
    TITLE_NOT_TEXT,
    Caption,
    CaptionedVideo,
    ImportNotes,
)

LAYOUT_HELP = "each entry needs duration, timestamps [[start, end], ...] and sentences [...]"
MAX_DEPTH = 32
"""JSON nesting allowed (the layout needs 5: {"database": {video: {"timestamps": [[s, e]]}}})."""
MAX_STRING_CHARS = 1_000_000
"""The longest string (a caption, a title, a key) read."""
MAX_TOKEN_BYTES = 4 << 20
"""The most bytes read without the parser handing over a value (a string or number being read)."""
BUF_SIZE = 64 << 10

_BOMS = {b"\xef\xbb\xbf": None, b"\xff\xfe\x00\x00": "UTF-32", b"\x00\x00\xfe\xff": "UTF-32",
         b"\xff\xfe": "UTF-16", b"\xfe\xff": "UTF-16"}


def _ijson():
    try:
        import ijson
    except ImportError as exc:  # pragma: no cover - a dependency of memtools
        raise ImportFormatError("reading caption JSON needs the ijson package: pip install ijson") from exc
    return ijson


class _TooBig(Exception):
    pass


class _Source:
    """The file as ijson reads it: a UTF-8 BOM skipped, UTF-16/32 refused, and the bytes read since
    the last value counted, so one endless token stops the read instead of filling memory."""

    def __init__(self, handle: IO[bytes], path: Path) -> None:
        self.handle, self.path = handle, path
        self.offset = 0  # bytes handed to the parser
        self.since_value = 0
        self.first = True

    def read(self, size: int = -1) -> bytes:
        if size == 0:  # ijson's probe for bytes or text
            return b""
        data = self.handle.read(size if size > 0 else BUF_SIZE)
        if self.first:
            self.first = False
            data = self._skip_bom(data)
        self.offset += len(data)
        self.since_value += len(data)
        if self.since_value > MAX_TOKEN_BYTES + 2 * BUF_SIZE:
            raise _TooBig(f"one value runs over {MAX_TOKEN_BYTES >> 20} MB")
        return data

    def _skip_bom(self, data: bytes) -> bytes:
        for bom, encoding in _BOMS.items():
            if data.startswith(bom):
                if encoding:
                    raise ImportFormatError(f"{self.path} is {encoding} text (it starts with a {encoding} byte-order "
                                            "mark); JSON is UTF-8: save it as UTF-8 and import again")
                self.offset += len(bom)
                return data[len(bom):]
        return data


class _Events:
    """ijson's token events with the nesting depth tracked and every limit checked as they come."""

    def __init__(self, source: _Source) -> None:
        self.source = source
        self.events = _ijson().basic_parse(source, use_float=True, buf_size=BUF_SIZE)
        self.depth = 0
        self.video: str | None = None  # the video being read, for error messages
        self.last: str | None = None  # the last video read whole

    def next(self) -> tuple[str, Any]:
        item = self.next_or_end()
        if item is None:
            raise self.error("it ends too early")
        return item

    def next_or_end(self) -> tuple[str, Any] | None:
        """The next event, None at the end of the file."""
        ijson = _ijson()
        try:
            event, value = next(self.events)
        except StopIteration:
            return None
        except _TooBig as exc:
            raise self.error(str(exc)) from None
        except ijson.JSONError as exc:
            raise self.broken(exc) from None
        except (ValueError, OverflowError) as exc:  # a number Python cannot hold
            raise self.error(f"a number cannot be read ({exc})") from None
        self.source.since_value = 0
        if event in ("start_map", "start_array"):
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise self.error(f"it nests deeper than {MAX_DEPTH} levels (the layout needs 5)")
        elif event in ("end_map", "end_array"):
            self.depth -= 1
        elif isinstance(value, str) and len(value) > MAX_STRING_CHARS:
            raise self.error(f"a string of {len(value):,} characters (at most {MAX_STRING_CHARS:,})")
        return event, value

    def where(self) -> str:
        inside = (f"in video {self.video!r}" if self.video is not None
                  else f"after video {self.last!r}" if self.last is not None else "in or before its first video")
        return f"{inside} (near byte {self.source.offset:,})"

    def error(self, what: str) -> ImportFormatError:
        return ImportFormatError(f"{self.source.path} is refused {self.where()}: {what}")

    def broken(self, exc: Exception) -> ImportFormatError:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        hint = ""
        if any(word in str(exc) for word in ("NaN", "Infinity", "invalid char")):
            hint = (" JSON has no NaN or Infinity (Python's json.dump writes them): write null or drop those "
                    "captions, or re-save with json.dump(..., allow_nan=False) to find them.")
        video = f"video {self.video!r}" if self.video is not None else None
        where = (f"in {video}" if video else f"after video {self.last!r}" if self.last is not None
                 else "in or before its first video")
        return ImportFormatError(f"{self.source.path} is not valid JSON {where} (near byte "
                                 f"{self.source.offset:,}): {text}.{hint}")

    def drain(self) -> None:
        """Read the rest of the file (nothing kept), so trailing garbage or a cut is still found."""
        while self.next_or_end() is not None:
            pass

    def value(self, event: str, value: Any) -> Any:
        """The whole value that starts with this event (the checks of ``next``, inlined: this loop
        builds every video, so it holds the per-event work to a few comparisons)."""
        if event != "start_map" and event != "start_array":
            return value
        ijson = _ijson()
        top: Any = {} if event == "start_map" else []
        stack = [top]
        key = ""
        source, depth = self.source, self.depth
        try:
            for event, value in self.events:
                source.since_value = 0
                if event == "map_key":
                    key = value
                    if len(key) > MAX_STRING_CHARS:
                        raise self.error(f"a key of {len(key):,} characters (at most {MAX_STRING_CHARS:,})")
                    continue
                container = stack[-1]
                if event == "end_map" or event == "end_array":
                    depth -= 1
                    stack.pop()
                    if not stack:
                        self.depth = depth
                        return top
                    continue
                if event == "start_map" or event == "start_array":
                    depth += 1
                    if depth > MAX_DEPTH:
                        raise self.error(f"it nests deeper than {MAX_DEPTH} levels (the layout needs 5)")
                    value = {} if event == "start_map" else []
                    stack.append(value)
                elif type(value) is str and len(value) > MAX_STRING_CHARS:
                    raise self.error(f"a string of {len(value):,} characters (at most {MAX_STRING_CHARS:,})")
                if type(container) is dict:
                    container[key] = value
                else:
                    container.append(value)
        except _TooBig as exc:
            raise self.error(str(exc)) from None
        except ijson.JSONError as exc:
            raise self.broken(exc) from None
        except (ValueError, OverflowError) as exc:
            raise self.error(f"a number cannot be read ({exc})") from None
        raise self.error("it ends too early")


def _entries(path: Path) -> Iterator[tuple[str, Any]]:
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed in finally, across yields
    except OSError as exc:
        raise ImportFormatError(f"cannot read caption JSON {path}: {exc.strerror or exc}") from exc
    try:
        events = _Events(_Source(handle, path))
        first = events.next_or_end()
        if first is None or first[0] != "start_map":
            raise ImportFormatError(f"{path}: expected a JSON object {{video_id: {{duration, timestamps, "
                                    "sentences}}}}")
        event, key = events.next()
        if event == "map_key" and key == "database":
            inner = events.next()
            if inner[0] == "start_map":  # {"database": {video: ...}}
                event, key = events.next()
            else:  # a video called "database"
                yield key, _whole(events, key, inner)
                event, key = events.next()
        while event != "end_map":
            yield key, _whole(events, key, events.next())
            event, key = events.next()
        events.drain()
    finally:
        handle.close()


def _whole(events: _Events, key: str, first: tuple[str, Any]) -> Any:
    events.video = key
    entry = events.value(*first)
    events.video, events.last = None, key
    return entry


def _video(path: Path, key: str, entry: Any, notes: ImportNotes) -> CaptionedVideo:
    """One video, its values type-checked: a sentence that is not text or a timestamp that is not two
    numbers is left out (noted with its index), never converted."""
    def malformed(why: str) -> ImportFormatError:
        return ImportFormatError(f"{path}: video {key!r} is malformed ({why}); {LAYOUT_HELP}")

    if not isinstance(entry, dict):
        raise malformed(f"it is {_kind(entry)}, not an object")
    missing = [k for k in ("timestamps", "sentences") if k not in entry]
    if missing:
        raise malformed(f"no {' or '.join(missing)}")
    stamps, sentences = entry["timestamps"], entry["sentences"]
    for name, value in (("timestamps", stamps), ("sentences", sentences)):
        if not isinstance(value, list):
            raise malformed(f"{name} is {_kind(value)}, not a list")
    if len(stamps) != len(sentences):
        raise malformed(f"{len(stamps)} timestamps but {len(sentences)} sentences")
    captions = []
    for n, (stamp, sentence) in enumerate(zip(stamps, sentences, strict=True), 1):
        where = f"{path}, video {key}, caption {n}"
        if not isinstance(sentence, str):
            notes.add(NOT_TEXT, f"{where}: {_kind(sentence)}")
        elif not (isinstance(stamp, list) and len(stamp) == 2 and all(_is_number(t) for t in stamp)):
            notes.add(BAD_TIMES, f"{where}: {_short(stamp)}")
        else:
            captions.append(Caption(float(stamp[0]), float(stamp[1]), sentence, n))
    duration = entry.get("duration")
    if duration is None:
        duration = 0.0
    elif not _is_number(duration):
        notes.add(BAD_DURATION, f"{path}, video {key}: {_short(duration)}")
        duration = 0.0
    title = entry.get("title")
    if title is not None and not isinstance(title, str):
        notes.add(TITLE_NOT_TEXT, f"{path}, video {key}: {_kind(title)}")
        title = None
    return CaptionedVideo(video_id=key, captions=captions, duration=float(duration), title=(title or "").strip() or key)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | Decimal) and not isinstance(value, bool)


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return f"a list {_short(value)}"
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    return f"text {_short(value)}" if isinstance(value, str) else f"the number {value:g}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def read_dense_captions(path: Path, notes: ImportNotes | None = None) -> Iterator[CaptionedVideo]:
    """Videos of a dense-caption JSON file, in file order, one at a time (values of the wrong type
    left out and counted in ``notes``). Ids are the file's keys, unchanged."""
    notes = notes if notes is not None else ImportNotes()
    for key, entry in _entries(Path(path)):
        yield _video(path, key, entry, notes)


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
