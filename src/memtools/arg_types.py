"""Argument types every command shares, so a bad value is an argparse error naming the flag
(``memtools import-captions: error: argument --batch-size: must be a whole number of 1 or more, not 0``),
never a silent fix or a traceback later.

``Parser`` also lets a value that starts with ``-`` follow its flag: ``--video-id -ErPSunMfcs``
(a YouTube id) is read as ``--video-id=-ErPSunMfcs``, not as an unknown option.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Sequence
from pathlib import Path


def _whole_number(text: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number of {least} or more, not {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"must be a whole number of {least} or more, not {value}")
    return value


def positive_int(text: str) -> int:
    """A whole number of 1 or more (``--batch-size``)."""
    return _whole_number(text, 1)


def non_negative_int(text: str) -> int:
    """A whole number of 0 or more (0 usually means none or off)."""
    return _whole_number(text, 0)


def non_empty_text(text: str) -> str:
    """Text with something in it (``--title``, ``--encoding``)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return text


def folder(text: str) -> Path:
    """A folder path; ``""`` is refused (``Path("")`` is the current folder, which nobody means)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must name a folder, not be empty (use . for the current folder)")
    if "://" in text:
        raise argparse.ArgumentTypeError(f"must name a folder, not a URI ({text}); a memory published to object "
                                         "storage is read by `memtools serve --memory s3://...` only")
    return Path(text)


def folder_or_uri(text: str) -> Path | str:
    """A folder path, or an object-storage URI kept as written (``s3://b/p``: ``Path`` would fold its ``//``)."""
    return text.strip() if "://" in text else folder(text)


def positive_seconds(text: str) -> float:
    """A number of seconds above 0 (``--poll-seconds 0.5``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, not {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, not {text}")
    return value


def video_id(text: str) -> str:
    """A video id, checked against the id rule (``memtools.schema.VIDEO_ID_RULE``), never rewritten."""
    from memtools.schema import VIDEO_ID_RULE, video_id_problem

    problem = video_id_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(f"{text!r} {problem}; {VIDEO_ID_RULE}")
    return text


class Parser(argparse.ArgumentParser):
    """memtools' ``argparse.ArgumentParser``; subcommand parsers made by ``add_subparsers`` are of the
    same class, so every command gets both of its habits:

    * ``--flag -value`` reads as ``--flag=-value`` for flags taking one value, when ``-value`` is not
      itself an option: ids may start with ``-``. A value starting with ``--`` still needs the ``=``
      form (``--video-id=--x``): it is more often a mistyped flag.
    * errors name the nearest flag for a mistyped one (``--topk``: did you mean --top-k?), for
      unknown flags and for a required flag that was mistyped alike.
    """

    _seen: tuple[str, ...] = ()

    def parse_known_args(self, args: Sequence[str] | None = None, namespace=None):  # type: ignore[override]
        args = join_dash_values(self, sys.argv[1:] if args is None else args)
        self._seen = tuple(args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str):
        flags = [flag for action in self._actions for flag in action.option_strings]
        hints = []
        for arg in dict.fromkeys(a.split("=", 1)[0] for a in self._seen if a.startswith("--")):
            near = difflib.get_close_matches(arg, flags, n=1, cutoff=0.6) if arg not in flags else []
            if near:
                hints.append(f"{arg}: did you mean {near[0]}?")
        super().error(f"{message} ({'; '.join(hints)})" if hints else message)


def join_dash_values(parser: argparse.ArgumentParser, args: Sequence[str]) -> list[str]:
    """``args`` with each ``--flag -value`` pair of ``parser``'s one-value flags joined as ``--flag=-value``."""
    options = parser._option_string_actions  # noqa: SLF001 - argparse keeps its option table here
    takes_one = {name for name, action in options.items() if action.nargs is None and name.startswith("--")}
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            out.extend(args[i:])
            break
        nxt = args[i + 1] if i + 1 < len(args) else None
        if (arg in takes_one and nxt is not None and nxt.startswith("-") and not nxt.startswith("--")
                and len(nxt) > 1 and nxt not in options and not _is_number(nxt)):
            out.append(f"{arg}={nxt}")
            i += 2
            continue
        out.append(arg)
        i += 1
    return out


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
