"""Build a memory without a vision model, from time-stamped text a user already has.

Reads SRT / WebVTT subtitle files and the dense-caption JSON layout of ActivityNet Captions
and YouCook2::

    {video_id: {"duration": 241.6, "timestamps": [[s, e], ...], "sentences": ["...", ...]}}

Each caption becomes a micro-event; consecutive captions are grouped into macro events by
time (``CaptionGrouping``), macro events into super events, and a root per video. Labels and
summaries are extractive (the captions' own words): no model is called. Subtitles are what was
said, so each of their cues is also a Speech node (``get_transcript``), with the speaker a cue
names (``spoken_line``: the same reading as ``memtools build --subtitles``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from itertools import pairwise
from pathlib import Path

from pydantic import BaseModel, Field

from memtools.errors import ImportFormatError
from memtools.importers.caption_checks import (
    BAD_ID,
    DECODED,
    NO_CAPTIONS,
    RENAMED,
    Caption,
    CaptionedVideo,
    ImportNotes,
    clean_captions,
)
from memtools.importers.dense_captions import read_dense_captions
from memtools.schema import (
    VIDEO_ID_RULE,
    Edge,
    EdgeCategory,
    Entity,
    MacroEvent,
    MicroEvent,
    Speech,
    SuperEvent,
    Video,
    VideoGraph,
    entity_id,
    event_id,
    macro_id,
    speech_id,
    super_id,
    video_id_from_filename,
    video_id_problem,
)
from memtools.tools.text import clip


class CaptionGrouping(BaseModel):
    """How captions are folded into macro and super events (data, with a default preset)."""

    macro_max_sec: float = Field(default=90.0, gt=0)
    macro_max_captions: int = Field(default=6, ge=1)
    macro_gap_sec: float = Field(default=30.0, ge=0, description="a silence this long starts a new macro event")
    super_max_macros: int = Field(default=5, ge=1)
    super_max_sec: float = Field(default=900.0, gt=0)


# --- readers ----------------------------------------------------------------------------

_TIME = re.compile(r"(?:(\d+):)?(\d{1,2}):(\d{2})[.,](\d{1,3})")


def _seconds(text: str, where: str) -> float:
    match = _TIME.fullmatch(text.strip())
    if not match:
        raise ImportFormatError(f"{where}: cannot read the time {text.strip()!r} (expected HH:MM:SS,mmm)")
    hours, minutes, seconds, frac = match.groups()
    return int(hours or 0) * 3600 + int(minutes) * 60 + int(seconds) + int(frac.ljust(3, "0")) / 1000


_BOMS = ((b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"), (b"\xef\xbb\xbf", "utf-8-sig"),
         (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))
"""Byte-order marks, longest first: a file that starts with one is read in its encoding."""
FALLBACK_ENCODINGS = ("cp1252", "latin-1")
"""Tried in order when a subtitle file is not UTF-8 and no ``encoding`` was given (latin-1 reads any bytes)."""


def _decode(path: Path, encoding: str | None, notes: ImportNotes | None) -> str:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ImportFormatError(f"cannot read subtitle file {path}: {exc.strerror or exc}") from exc
    if encoding:
        try:
            return data.decode(encoding)
        except LookupError:
            raise ImportFormatError(f"unknown encoding {encoding!r}; use a name such as utf-8, cp1252, latin-1 "
                                    "or utf-16") from None
        except UnicodeDecodeError as exc:
            raise ImportFormatError(f"{path} is not valid {encoding} (byte {exc.start}); pass the file's "
                                    "encoding with --encoding") from None
    for bom, name in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(name)
            except UnicodeDecodeError as exc:
                shown = name.removesuffix("-sig").upper()
                raise ImportFormatError(f"{path} starts with a {shown} byte-order mark but is not valid {shown} "
                                        f"(byte {exc.start}); pass its encoding with --encoding") from None
    if b"\x00" in data:
        raise ImportFormatError(f"{path} holds NUL bytes, which text subtitles never do: UTF-16 without a "
                                "byte-order mark? Pass --encoding utf-16-le (or utf-16-be)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    for fallback in FALLBACK_ENCODINGS:
        try:
            text = data.decode(fallback)
        except UnicodeDecodeError:
            continue
        if notes is not None:
            notes.add(f"{DECODED} {fallback} (pass --encoding to choose)", str(path))
        return text
    raise AssertionError("latin-1 decodes any bytes")  # pragma: no cover


def _cues(path: Path, encoding: str | None, notes: ImportNotes | None) -> Iterator[tuple[float, float, list[str]]]:
    """Each cue of an .srt or .vtt file: start, end and its text lines as written (tags kept)."""
    text = _decode(path, encoding, notes)
    n = 0
    for block in re.split(r"\n\s*\n", text.replace("\r\n", "\n").strip()):
        lines = [ln for ln in block.split("\n") if ln.strip()]
        arrow = next((i for i, ln in enumerate(lines) if "-->" in ln), None)
        if arrow is None:
            continue  # WEBVTT header, NOTE or STYLE blocks, cue numbers alone
        left, right = lines[arrow].split("-->", 1)
        n += 1
        where = f"{path}, cue {n}"
        yield _seconds(left, where), _seconds((right.split() or [""])[0], where), lines[arrow + 1:]


def _untagged(lines: Sequence[str]) -> str:
    return " ".join(re.sub(r"<[^>]+>", "", ln).strip() for ln in lines).strip()


def read_subtitles(path: Path, *, encoding: str | None = None, notes: ImportNotes | None = None) -> list[Caption]:
    """Captions of an .srt or .vtt file (cue settings and tags stripped), in file order and as
    written: ``clean_captions`` repairs and notes what needs it. A cue whose lines change WebVTT
    voice is one caption per voice (``read_voiced_subtitles``), each with its ``voice``."""
    captions = [Caption(start, end, text, voice=who) for start, end, text, who in _voiced(path, encoding, notes)]
    if not captions:
        raise ImportFormatError(f"{path} holds no subtitle cues; is it an SRT or WebVTT file?")
    return captions


_VOICE = re.compile(r"<v(?:\.[^\s>]*)?\s+([^>]+)>")


def _voiced(path: Path, encoding: str | None, notes: ImportNotes | None
            ) -> Iterator[tuple[float, float, str, str | None]]:
    for start, end, lines in _cues(path, encoding, notes):
        runs: list[tuple[str | None, list[str]]] = []
        for line in lines:
            voice = _VOICE.search(line)
            who = " ".join(voice.group(1).split()) if voice else (runs[-1][0] if runs else None)
            if runs and runs[-1][0] == who:
                runs[-1][1].append(line)
            else:
                runs.append((who, [line]))
        if not runs:  # a cue without text: the importer counts it as an empty caption
            yield start, end, "", None
        total = sum(len(r[1]) for r in runs) or 1
        t = start
        for who, part in runs:
            stop = end if part is runs[-1][1] else t + (end - start) * len(part) / total
            yield t, stop, _untagged(part), who
            t = stop


def read_voiced_subtitles(path: Path, *, encoding: str | None = None) -> list[tuple[float, float, str, str | None]]:
    """Cues as (start, end, text, speaker): a WebVTT voice span (``<v Roger Bingham>``) names the
    speaker; a cue whose lines change voice becomes one item per voice, its time shared by line."""
    out = [cue for cue in _voiced(path, encoding, None) if cue[2] or cue[3]]
    if not out:
        raise ImportFormatError(f"{path} holds no subtitle cues; is it an SRT or WebVTT file?")
    return out


_SPEAKER = re.compile(r"^(?:-\s*)?([A-Z][A-Za-z0-9 .'_-]{0,30}):\s+(.+)$")
_BRACKETED = re.compile(r"^(?:-\s*)?\[([A-Z][A-Za-z0-9 .'_-]{0,30})\]:?\s+(.+)$")
_SOUNDS = {"music", "laughter", "laughs", "laughing", "applause", "inaudible", "silence", "noise", "crosstalk",
           "cheering", "cheers", "sighs", "coughs", "background noise", "indistinct", "unintelligible", "singing"}


def spoken_line(text: str, voice: str | None = None) -> tuple[str, str | None]:
    """(what was said, who said it) of one subtitle line: the speaker is its WebVTT voice, else a
    leading ``NAME:`` or ``[NAME]`` (taken off the text; bracketed sound notes such as ``[Music]``
    are not names); None when it names nobody."""
    speaker = voice
    match = _SPEAKER.match(text) or _BRACKETED.match(text)
    if match and not (match.re is _BRACKETED and match.group(1).strip().lower() in _SOUNDS):
        named, text = match.group(1).strip(), match.group(2)
        speaker = speaker or named
    return " ".join(text.split()), speaker


# --- captions -> graph ------------------------------------------------------------------


def _groups(items: Sequence, starts: Sequence[float], ends: Sequence[float], max_n: int, max_sec: float,
            gap: float | None = None) -> list[list[int]]:
    groups: list[list[int]] = []
    for i in range(len(items)):
        if groups:
            current = groups[-1]
            first = current[0]
            fits = (len(current) < max_n and ends[i] - starts[first] <= max_sec
                    and (gap is None or starts[i] - max(ends[j] for j in current) <= gap))
            if fits:
                current.append(i)
                continue
        groups.append([i])
    return groups


def graph_from_captions(video: CaptionedVideo, grouping: CaptionGrouping | None = None) -> VideoGraph:
    """The hierarchical memory of one captioned video."""
    grouping = grouping or CaptionGrouping()
    vid = video.video_id
    caps = sorted((c for c in video.captions if c.text.strip()), key=lambda c: (c.start, c.end))
    duration = max([video.duration, *(c.end for c in caps)] or [0.0])
    clipped = [Caption(max(0.0, min(c.start, duration)), max(0.0, min(max(c.end, c.start), duration)), c.text,
                       voice=c.voice) for c in caps]
    macro_groups = _groups(clipped, [c.start for c in clipped], [c.end for c in clipped],
                           grouping.macro_max_captions, grouping.macro_max_sec, grouping.macro_gap_sec)
    spans = [(min(clipped[i].start for i in g), max(clipped[i].end for i in g)) for g in macro_groups]
    super_groups = _groups(macro_groups, [s for s, _ in spans], [e for _, e in spans],
                           grouping.super_max_macros, grouping.super_max_sec)
    graph = VideoGraph(video=Video(
        id=vid, title=video.title or vid, duration=duration, recorded_at=video.recorded_at,
        description=clip(" ".join(c.text.rstrip(".") + "." for c in clipped[:4]), 600)))
    for s_ord, members in enumerate(super_groups):
        sid = super_id(vid, s_ord)
        first_label = clip(clipped[macro_groups[members[0]][0]].text, 60)
        last_label = clip(clipped[macro_groups[members[-1]][0]].text, 60)
        label = first_label if len(members) == 1 else f"{first_label} … {last_label}"
        graph.supers.append(SuperEvent(
            id=sid, video_id=vid, ordinal=s_ord, label=label, t_start=spans[members[0]][0],
            t_end=max(spans[m][1] for m in members),
            description=clip(" ".join(clipped[macro_groups[m][0]].text.rstrip(".") + "." for m in members), 900)))
        for m_ord in members:
            mid = macro_id(vid, m_ord)
            members_caps = [clipped[i] for i in macro_groups[m_ord]]
            graph.macros.append(MacroEvent(
                id=mid, video_id=vid, super_id=sid, ordinal=m_ord, label=clip(members_caps[0].text, 80),
                t_start=spans[m_ord][0], t_end=spans[m_ord][1],
                summary=clip(" ".join(c.text.rstrip(".") + "." for c in members_caps), 900)))
            previous = None
            for n, cap in enumerate(members_caps, 1):
                eid = event_id(mid, n)
                graph.events.append(MicroEvent(id=eid, video_id=vid, macro_id=mid, t_start=cap.start, t_end=cap.end,
                                               action=clip(cap.text, 200), description=cap.text))
                if video.spoken:  # subtitles: the cue is also the transcript's utterance, as a build makes it
                    said, speaker = spoken_line(cap.text, cap.voice)
                    graph.speech.append(Speech(id=speech_id(mid, n), video_id=vid, macro_id=mid, t_start=cap.start,
                                               t_end=cap.end, text=said or cap.text, speaker=speaker))
                if previous:
                    graph.edges.append(Edge(source=previous, target=eid, category=EdgeCategory.TEMPORAL,
                                            label="BEFORE"))
                previous = eid
    if graph.macros and video.entities:
        first = graph.macros[0].id
        for n, (name, etype) in enumerate(video.entities, 1):
            graph.entities.append(Entity(id=entity_id(first, n), video_id=vid, macro_id=first, entity_type=etype,
                                         description=name))
    for a, b in pairwise(graph.supers):
        graph.edges.append(Edge(source=a.id, target=b.id, category=EdgeCategory.PROGRESSION, label="BEFORE"))
    graph.check()
    return graph


def read_caption_file(path: Path, video_id: str | None = None, title: str | None = None, *,
                      encoding: str | None = None, notes: ImportNotes | None = None) -> Iterator[CaptionedVideo]:
    """Videos from one file, cleaned by ``clean_captions`` (every change counted in ``notes``):
    dense-caption JSON (many videos, read as a stream) or SRT/VTT (one video).

    A JSON file's keys are its video ids, unchanged: a key that is not a valid id (``VIDEO_ID_RULE``)
    is refused for that video and noted. A subtitle file's id is ``video_id``, else made from its
    name by ``video_id_from_filename`` (noted when that differs from the name). A video left with
    no caption is noted and not yielded."""
    path = Path(path)
    notes = notes if notes is not None else ImportNotes()
    suffix = path.suffix.lower()
    if video_id is not None and (problem := video_id_problem(video_id)):
        raise ImportFormatError(f"--video-id {video_id!r} {problem}; {VIDEO_ID_RULE}")
    if suffix == ".json":
        if video_id:
            raise ImportFormatError("--video-id applies to subtitle files; a JSON file names its own videos")
        videos: Iterable[CaptionedVideo] = read_dense_captions(path, notes)
    elif suffix in (".srt", ".vtt"):
        videos = [CaptionedVideo(video_id=video_id or subtitle_video_id(path, notes),
                                 captions=read_subtitles(path, encoding=encoding, notes=notes),
                                 title=title or path.stem, spoken=True)]
    else:
        raise ImportFormatError(f"{path}: unsupported caption file (use .srt, .vtt or dense-caption .json)")
    for video in videos:
        problem = video_id_problem(video.video_id)
        if problem:
            notes.add(BAD_ID, f"{path}: {video.video_id!r} {problem}")
            continue
        video = clean_captions(video, str(path), notes)
        if not video.captions:
            notes.add(NO_CAPTIONS, f"{path}, video {video.video_id}")
            continue
        yield video


def subtitle_video_id(path: Path, notes: ImportNotes | None = None) -> str:
    """The id of a subtitle file given none (``video_id_from_filename``); a change from its name is noted."""
    vid = video_id_from_filename(Path(path).name)
    if not vid:
        raise ImportFormatError(f"{path}: its name holds nothing a video id can use ({VIDEO_ID_RULE}); "
                                "pass --video-id")
    if notes is not None and vid != Path(path).stem:
        notes.add(RENAMED, f"{Path(path).name!r} -> {vid}")
    return vid


def graphs_from_files(paths: Iterable[Path], grouping: CaptionGrouping | None = None,
                      video_id: str | None = None, title: str | None = None, *, encoding: str | None = None,
                      notes: ImportNotes | None = None) -> Iterator[VideoGraph]:
    """One graph per video, as the files are read (a stream: memory stays bounded by one video)."""
    for path in paths:
        for video in read_caption_file(path, video_id, title, encoding=encoding, notes=notes):
            yield graph_from_captions(video, grouping)
