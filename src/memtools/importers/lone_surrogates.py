"""Lone UTF-16 surrogates in JSON text, found in the raw bytes before the parser reads them.

JSON writes a character beyond the Basic Multilingual Plane as two escapes, a high surrogate and
a low one (``"\\ud83d\\ude00"``, as Python's ``json.dump`` does). Either half alone
(``"\\ud800"``) is no character. ijson's C backend turns a lone high half into ``?``, joins it
with the escape after it into a character that was never written, or fails with a decoding error;
its Python backend keeps it in the string, where it cannot be stored as UTF-8. So the caption
reader checks the bytes first (``checkable`` and ``first_lone``, a buffer at a time) and hands the
parser only the bytes before the first lone half, so the error can name the video and the field
the parser was in.
"""

from __future__ import annotations

import re

_HIGH = rb"\\u[dD][89abAB][0-9a-fA-F]{2}"
_LOW = rb"\\u[dD][c-fC-F][0-9a-fA-F]{2}"
_CANDIDATE = re.compile(rb"\\u[dD](?:[89abAB][0-9a-fA-F]{2}(?!%s)|[c-fC-F][0-9a-fA-F]{2}(?<!%s%s))"
                        % (_LOW, _HIGH, _LOW))
"""A high half not followed by a low one, or a low half not after a high one (read as if no backslash
before them were escaped: exact unless the text holds ``\\\\``)."""
_SURROGATE = re.compile(rb"\\u([dD][89a-fA-F][0-9a-fA-F]{2})")
_LOW_AT = re.compile(_LOW)
_HIGH_AT = re.compile(_HIGH)
HOLD = 12
"""Bytes kept back from each buffer until the next: an escape pair is 12 bytes."""
BACKSLASH = 0x5C


def checkable(buffer: bytes, final: bool) -> int:
    """How much of ``buffer`` can be checked (and parsed) now: all of it at the end of the file; else all
    but the last ``HOLD`` bytes, never cutting an escape, a pair of them or a run of backslashes (whose
    length says what it escapes), so a buffer never starts with the low half of a pair."""
    if final:
        return len(buffer)
    end = max(0, len(buffer) - HOLD)
    high = _HIGH_AT.search(buffer, max(0, end - HOLD + 1), end + 6)
    if high is not None and high.start() < end:  # its low half would start in the next buffer
        end = high.start()
    else:
        escape = buffer.find(b"\\", max(0, end - 5), end)
        if escape >= 0:
            end = escape
    while end > 0 and buffer[end - 1] == BACKSLASH:
        end -= 1
    return end


def first_lone(buffer: bytes, end: int) -> tuple[int, bytes] | None:
    """The first lone half that starts before ``end`` (``checkable``) in ``buffer``: where, and its escape
    (``b"\\ud800"``); None when there is none."""
    found = _CANDIDATE.search(buffer)
    if found is None or found.start() >= end:
        return None
    if b"\\\\" not in buffer:  # no escaped backslash: every \u is an escape, and the search was exact
        return found.start(), found[0]
    paired = -1
    for match in _SURROGATE.finditer(buffer, 0, end + 6):
        at = match.start()
        if at >= end:
            break
        before = at
        while before > 0 and buffer[before - 1] == BACKSLASH:
            before -= 1
        if (at - before) % 2:  # "\\ud800": an escaped backslash, then plain text
            continue
        if int(match[1], 16) >= 0xDC00:  # a low half: fine only right after a high one
            if at != paired:
                return at, match[0]
        elif _LOW_AT.match(buffer, match.end()):
            paired = match.end()
        else:
            return at, match[0]
    return None
