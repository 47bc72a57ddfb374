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
from pathlib import Path
from typing import IO, Any

from memtools.errors import ImportFormatError
from memtools.importers.caption_checks import CaptionedVideo, ImportNotes, dense_video
from memtools.importers.lone_surrogates import checkable, first_lone

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
    the last value counted, so one endless token stops the read instead of filling memory. A lone
    UTF-16 surrogate escape (``lone_surrogates``) ends what the parser is given, just before it."""

    def __init__(self, handle: IO[bytes], path: Path) -> None:
        self.handle, self.path = handle, path
        self.offset = 0  # bytes handed to the parser
        self.since_value = 0
        self.first = True
        self.lines = 0  # line ends handed to the parser
        self.line_start = 0  # where the last line handed to the parser starts
        self.pending = b""  # read, not yet checked for surrogates
        self.lone: tuple[bytes, int, int, int] | None = None  # the escape, its byte, line and column

    def read(self, size: int = -1) -> bytes:
        if size == 0 or self.lone is not None:  # ijson's probe for bytes or text; or the parser stops here
            return b""
        buffer = self.pending
        while True:
            data = self.handle.read(size if size > 0 else BUF_SIZE)
            if self.first:
                self.first = False
                data = self._skip_bom(data)
            buffer += data
            end = checkable(buffer, final=not data)
            if end or not data:
                break
            if len(buffer) > MAX_TOKEN_BYTES:  # only backslashes, on and on
                raise _TooBig(f"one value runs over {MAX_TOKEN_BYTES >> 20} MB")
        lone = first_lone(buffer, end)
        if lone is not None:
            end, escape = lone
            newline = buffer.rfind(b"\n", 0, end)
            line_start = self.offset + newline + 1 if newline >= 0 else self.line_start
            self.lone = (escape, self.offset + end, self.lines + buffer.count(b"\n", 0, end) + 1,
                         self.offset + end - line_start + 1)
        data, self.pending = buffer[:end], buffer[end:]
        newline = data.rfind(b"\n")
        if newline >= 0:
            self.lines += data.count(b"\n")
            self.line_start = self.offset + newline + 1
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
                self.offset = self.line_start = len(bom)
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
            if self.source.lone is not None:
                raise self.lone_surrogate("") from None
            return None
        except _TooBig as exc:
            raise self.error(str(exc)) from None
        except ijson.JSONError as exc:
            raise self.broken(exc) from None
        except UnicodeDecodeError as exc:
            raise self.not_utf8(exc) from None
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

    def lone_surrogate(self, field: str) -> ImportFormatError:
        """The parser was given the bytes before a lone surrogate half (``_Source.lone``): say where it is."""
        assert self.source.lone is not None
        escape, at, line, column = self.source.lone
        inside = (f"in video {self.video!r}" if self.video is not None
                  else f"after video {self.last!r}" if self.last is not None else "in or before its first video")
        return ImportFormatError(
            f"{self.source.path} is refused {inside}{f', {field}' if field else ''} (line {line:,}, column "
            f"{column:,}; byte {at:,}): {escape.decode()} is half of a UTF-16 surrogate pair, alone, so it is no "
            "character (a character beyond U+FFFF is written as two escapes, e.g. \\ud83d\\ude00): fix or remove "
            "that text and import again")

    def not_utf8(self, exc: UnicodeDecodeError) -> ImportFormatError:
        return self.error(f"a string holds bytes that are not UTF-8 ({exc.reason}; an encoded surrogate such as "
                          "ED A0 80 is not UTF-8 either); JSON is UTF-8: save the file as UTF-8 and import again")

    def broken(self, exc: Exception) -> ImportFormatError:
        if self.source.lone is not None:  # the parser stopped where the bytes it was given ended
            return self.lone_surrogate("")
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
        builds every video, so it holds the per-event work to a few comparisons). A key that appears
        twice in one object is refused: JSON readers keep one of the two without a word."""
        if event != "start_map" and event != "start_array":
            return value
        ijson = _ijson()
        top: Any = {} if event == "start_map" else []
        stack = [top]
        labels: list[str | int] = []  # where each container below ``top`` sits in its parent
        key: str | None = None  # the key whose value comes next (None: a key comes next)
        source, depth = self.source, self.depth
        try:
            for event, value in self.events:
                source.since_value = 0
                if event == "map_key":
                    key = value
                    if len(key) > MAX_STRING_CHARS:
                        raise self.error(f"a key of {len(key):,} characters (at most {MAX_STRING_CHARS:,})")
                    continue
                if event == "end_map" or event == "end_array":
                    depth -= 1
                    stack.pop()
                    if not stack:
                        self.depth = depth
                        return top
                    labels.pop()
                    key = None
                    continue
                container = stack[-1]
                if type(container) is dict and key in container:
                    raise self.error(f"the key {key!r}{_inside(labels)} appears twice; JSON readers keep one of "
                                     "the two without a word, so memtools takes neither: keep the right one and "
                                     "import again")
                if event == "start_map" or event == "start_array":
                    depth += 1
                    if depth > MAX_DEPTH:
                        raise self.error(f"it nests deeper than {MAX_DEPTH} levels (the layout needs 5)")
                    value = {} if event == "start_map" else []
                    labels.append(len(container) if type(container) is list else key or "")
                    stack.append(value)
                elif type(value) is str and len(value) > MAX_STRING_CHARS:
                    raise self.error(f"a string of {len(value):,} characters (at most {MAX_STRING_CHARS:,})")
                if type(container) is dict:
                    container[key] = value
                else:
                    container.append(value)
                if event == "start_map":
                    key = None
        except _TooBig as exc:
            raise self.error(str(exc)) from None
        except ijson.JSONError as exc:
            if source.lone is not None:
                raise self.lone_surrogate(_field(stack[-1], labels, key)) from None
            raise self.broken(exc) from None
        except UnicodeDecodeError as exc:
            raise self.not_utf8(exc) from None
        except (ValueError, OverflowError) as exc:
            raise self.error(f"a number cannot be read ({exc})") from None
        raise self.error("it ends too early")


def _path(labels: list[str | int]) -> str:
    """``sentences[3]``: where a value sits inside a video's object."""
    return "".join(f"[{label}]" if isinstance(label, int) else f".{label}" for label in labels).lstrip(".")


def _inside(labels: list[str | int]) -> str:
    return f" (inside {_path(labels)})" if labels else ""


def _field(container: Any, labels: list[str | int], key: str | None) -> str:
    """Which string a parse cut short in ``container`` was: an item of a list, the value of ``key``, or a key."""
    if isinstance(container, list):
        return f"the field {_path([*labels, len(container)])}"
    if key is None or key in container:
        return f"a key{_inside(labels)}"
    return f"the field {_path([*labels, key])}"


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
        wrapped = False
        if event == "map_key" and key == "database":
            inner = events.next()
            wrapped = inner[0] == "start_map"
            if wrapped:  # {"database": {video: ...}}
                event, key = events.next()
            else:  # a video called "database"
                yield key, _whole(events, key, inner)
                event, key = events.next()
        while event != "end_map":
            yield key, _whole(events, key, events.next())
            event, key = events.next()
        if wrapped and (after := events.next())[0] != "end_map":
            raise events.error(f"the key {after[1]!r} sits beside \"database\", whose videos were read: put every "
                               "video under \"database\", or none")
        events.drain()
    finally:
        handle.close()


def _whole(events: _Events, key: str, first: tuple[str, Any]) -> Any:
    events.video = key
    entry = events.value(*first)
    events.video, events.last = None, key
    return entry


def read_dense_captions(path: Path, notes: ImportNotes | None = None) -> Iterator[CaptionedVideo]:
    """Videos of a dense-caption JSON file, in file order, one at a time (values of the wrong type
    left out and counted in ``notes``). Ids are the file's keys, unchanged."""
    notes = notes if notes is not None else ImportNotes()
    for key, entry in _entries(Path(path)):
        yield dense_video(path, key, entry, notes)


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
