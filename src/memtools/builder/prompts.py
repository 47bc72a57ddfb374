"""The construction prompts, adapted from MEMDREAMER Figs. 7-9, each paired with its answer model.

A prompt function returns a ``Prompt``: the system text, the user text and the response
model whose field descriptions are rendered as the output schema. Frames are attached by the
caller, each labelled with its timestamp. Prompts contain nothing that changes between runs
(no dates, no paths), so identical inputs make identical requests (replay, checkpoints).

A prompt that quotes recognised speech names that part (``Prompt.speech``, the lines exactly as
they stand in the text): a recogniser's words and times vary with the CPU's numerics, so the
request key leaves them out and a replay compares them with a tolerance
(``memtools.perception.replay``). Likewise the names an extraction prompt offers from the memory's
library (``Prompt.vocabulary``, ``memtools.builder.vocabulary``) depend on what the library holds and
on the embedder that chose them: the key leaves them out, so without them the key is the key of the
prompt of a memory without a library, which is byte for byte the same prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from pydantic import BaseModel

from memtools.builder.responses import Aggregation, RootSynthesis, Segmentation, Subgraph, schema_text
from memtools.schema import LABELS, EdgeCategory


@dataclass(frozen=True)
class Prompt:
    system: str
    text: str
    response_model: type[BaseModel]
    speech: str = ""
    """The recognised speech quoted in ``text`` (its lines verbatim), or empty."""
    vocabulary: str = ""
    """The library's names offered in ``text`` (the section verbatim, ``vocabulary_section``), or empty."""

    def with_error(self, error: str) -> Prompt:
        """The same prompt with the last answer's problem appended, for a retry."""
        retry = (f"\n\n[YOUR PREVIOUS ANSWER COULD NOT BE USED]\n{error}\n"
                 "Answer again from scratch: output ONLY the JSON, exactly in the format above.")
        return replace(self, text=self.text + retry)


def hms(seconds: float) -> str:
    """``HH:MM:SS`` (rounded to the second), the clock the prompts speak."""
    total = max(0, int(round(seconds)))
    return f"{total // 3600:02d}:{total % 3600 // 60:02d}:{total % 60:02d}"


def _output_format(model: type[BaseModel]) -> str:
    return ("[OUTPUT FORMAT]\nReturn ONLY one valid JSON object with these keys; raw JSON, no markdown fences, "
            "no commentary:\n" + schema_text(model))


# --- streaming segmentation (Fig. 7) ----------------------------------------------------------

SEGMENT_SYSTEM = "You are an Expert Visual Story Segmenter."


def segmentation_prompt(start: float, end: float, *, at_video_end: bool, min_sec: float, max_sec: float,
                        n_frames: int, transcript: str = "") -> Prompt:
    """Split the window ``[start, end]`` (absolute seconds) into self-contained episodes.

    ``transcript``: what is said in the window, one ``- [HH:MM:SS-HH:MM:SS] text`` line per
    utterance (``speech_lines``); without one the prompt is exactly the frames-only prompt."""
    ending = ("This window reaches the END of the video: the last episode ends with the last frame."
              if at_video_end else
              "The video goes on after the last frame shown. If the last episode is still going on at the last "
              'frame, include it with "complete": false; the next window will start where it starts.')
    text = f"""[YOUR CORE OBJECTIVE]
You see {n_frames} frames sampled in time order from the stretch {hms(start)} - {hms(end)} of a video; each frame \
is preceded by its timestamp. Segment this stretch into "Major Story Episodes".
Each episode MUST be a complete, self-contained logical event, typically lasting between {_sec(min_sec)} and \
{_sec(max_sec)}.

[STRICT SEGMENTATION RULES]
1. WHAT CONSTITUTES AN EPISODE: a full narrative arc for ONE subject or ONE specific phase (e.g. a contestant's \
whole segment, a whole cooking step, one scene in one place). Do not split it.
2. RELY ON PURE VISUAL CUES for a new episode: a major, permanent location or scene change; a new main subject; \
distinct new graphics or captions.
3. ANTI-FRAGMENTATION (DO NOT CUT) when the camera merely changes angle, for brief effects, or while the core \
subject and place stay the same.
4. BOUNDARY PRECISION (NO BLEEDING): an episode's end_time is the last second before the next episode's subject, \
place or graphics appear. Episodes cover {hms(start)} - {hms(end)} in order, without gaps or overlaps.
5. {ending}
{_speech_section(transcript, SEGMENT_SPEECH)}
{_output_format(Segmentation)}"""
    return Prompt(SEGMENT_SYSTEM, text, Segmentation, transcript)


SEGMENT_SPEECH = ("[SPEECH IN THIS STRETCH]\nWhat is said, recognised from the audio, with its time (HH:MM:SS):\n"
                  "{lines}\nUse it together with the frames: a change of topic or speaker in what is said also marks "
                  "a new episode; a conversation that goes on keeps one.")
EXTRACT_SPEECH = ("[SPEECH IN THIS CLIP]\nWhat is said, recognised from the audio; each utterance has an id and its "
                  "time in seconds from the start of the clip:\n{lines}\nUse what is said in the summary and the "
                  "descriptions (names spoken aloud may be used as names). Add edges with the utterance ids where "
                  "you are confident: Entity -> utterance: SAYS (the entity speaks it); utterance -> Entity or "
                  "Event: ABOUT (what it talks about).")


def _speech_section(lines: str, template: str) -> str:
    return f"\n{template.format(lines=lines)}\n" if lines else ""


def speech_lines(utterances, *, origin: float = 0.0, ids: Sequence[str] | None = None, clip_clock: bool = False) -> str:
    """Utterances as prompt lines: ``[HH:MM:SS-HH:MM:SS]`` on the video clock, or whole clip seconds."""
    lines = []
    for n, u in enumerate(utterances):
        when = (f"[{max(0, u.t_start - origin):.0f}-{max(0, u.t_end - origin):.0f}]" if clip_clock
                else f"[{hms(u.t_start)}-{hms(u.t_end)}]")
        who = f" ({u.speaker})" if u.speaker else ""
        lines.append(f"- {ids[n] + ' ' if ids else ''}{when}{who} {u.text}")
    return "\n".join(lines)


def _sec(seconds: float) -> str:
    if seconds >= 120:
        return f"{seconds / 60:g} minutes"
    return f"{seconds:g} seconds"


# --- downward subgraph extraction (Fig. 8) ---------------------------------------------------------

EXTRACT_SYSTEM = "You are a video knowledge-graph annotator."


def _labels(category: EdgeCategory) -> str:
    return ", ".join(sorted(LABELS[category]))


def extraction_prompt(title: str, duration: float, *, n_frames: int, transcript: str = "",
                      names: LibraryNames | None = None) -> Prompt:
    """Describe one macro event (a clip of ``duration`` seconds) as a subgraph; times are clip-local.

    ``transcript``: the clip's utterances with ids (``speech_lines(..., ids=..., clip_clock=True)``).
    ``names``: what the memory's library already calls the things and actions that fit this clip
    (``memtools.builder.vocabulary``); without any, the prompt is exactly the prompt without a library."""
    vocabulary = vocabulary_section(names)
    text = f"""You see {n_frames} frames sampled in time order from a video clip titled "{title}". The clip lasts \
{duration:.0f} seconds; each frame is preceded by its time in seconds FROM THE START OF THE CLIP (t=0 is the \
clip's first frame). Output a single JSON object describing the clip's subgraph: entities, micro-events, \
on-screen text, and the edges among them.

[TASK]
1. micro_events - every meaningful action, transition or salient happening, with time_range [start_sec, end_sec] \
in clip seconds. subject/object must be specific enough to match one entity; action is the precise motion; \
description is the retrieval payload: the full happening, with its cause when there is one. Do NOT create a \
micro_event for static on-screen graphics.
2. entities - every PERSON, OBJECT, LOCATION or GROUP that takes part in or appears alongside those events, \
anchored (visual_grounding.primary_time_sec) to the moment it is most clearly visible. name is the real name only \
if explicitly shown on screen (caption, sign, jersey); never invent names - use null.
3. ocr_texts - on-screen text, verbatim; one node for text that persists, spanning its time_range.
4. edges - directed, labelled relations, using the ids you gave above:
   - Entity -> Event: PERFORMS (the entity does it), RECEIVES (it is done to the entity), USES_TOOL; \
Event -> Entity: HAPPENS_IN (the place); CONTEXT_FOR (background that explains an event)
   - Event -> Event: {_labels(EdgeCategory.TEMPORAL)} (CAUSES when the first event directly makes the second happen)
   - Entity <-> Entity: LOCATED_IN, NEXT_TO, ATTACHED_TO, PART_OF, IS_SAME_AS
   - on-screen text -> Entity: ANNOTATES (a sign or caption that labels the entity)
   Each edge needs a one-sentence description. Emit only relations you are confident about.
{_speech_section(transcript, EXTRACT_SPEECH)}{vocabulary}
{_output_format(Subgraph)}"""
    return Prompt(EXTRACT_SYSTEM, text, Subgraph, transcript, vocabulary)


@dataclass(frozen=True)
class LibraryNames:
    """Names the memory's library already uses, most fitting first: activity labels, and
    ``(entity_type, name)`` pairs (type ``PERSON``, ``OBJECT``, ``LOCATION`` or ``GROUP``)."""

    activities: Sequence[str] = ()
    entities: Sequence[tuple[str, str]] = ()


NAME_SEPARATOR = "; "
EXTRACT_VOCABULARY = ("[NAMES THIS LIBRARY ALREADY USES]\nOther videos in this memory already use these names. When "
                      "something in this clip is the same thing or action, reuse its name word for word (as an "
                      "entity's description, or its name when that is a real name; as a micro-event's action); "
                      "otherwise name it in your own words.\n{lines}")


def vocabulary_section(names: LibraryNames | None) -> str:
    """The extraction prompt's section of library names (``""`` when there are none): one line of
    activities, then one line per entity type, names separated by ``; ``."""
    if names is None or not (names.activities or names.entities):
        return ""
    lines = [f"activities: {NAME_SEPARATOR.join(names.activities)}"] if names.activities else []
    types = list(dict.fromkeys(etype for etype, _ in names.entities))
    lines += [f"entities ({etype}): {NAME_SEPARATOR.join(n for t, n in names.entities if t == etype)}"
              for etype in types]
    return f"\n{EXTRACT_VOCABULARY.format(lines=chr(10).join(lines))}\n"


# --- upward hierarchical aggregation (Fig. 9) ------------------------------------------------------

AGGREGATE_SYSTEM = "You are a video narrative analyst."


@dataclass(frozen=True)
class MacroBrief:
    """What the aggregation prompt shows of one macro event."""

    macro_id: str
    label: str
    t_start: float
    t_end: float
    summary: str
    key_entities: Sequence[str]
    event_types: Sequence[str]
    ocr_texts: Sequence[str]

    def render(self) -> str:
        parts = [f"- {self.macro_id} [{hms(self.t_start)}-{hms(self.t_end)}] {self.label}",
                 f"  summary: {self.summary or '(none)'}"]
        if self.key_entities:
            parts.append(f"  key_entities: {', '.join(self.key_entities)}")
        if self.event_types:
            parts.append(f"  event_types: {', '.join(self.event_types)}")
        if self.ocr_texts:
            parts.append(f"  ocr_texts: {' | '.join(self.ocr_texts)}")
        return "\n".join(parts)


def aggregation_prompt(macros: Sequence[MacroBrief], *, with_root: bool, target_supers: tuple[int, int]) -> Prompt:
    """Fold macro events into super events (and the root when ``with_root``)."""
    low, high = target_supers
    root_rule = ("4. root - a video-level summary synthesised from all super events."
                 if with_root else
                 "4. root - null: this is one part of a longer video; the root is written later.")
    text = f"""Below is a chronologically ordered list of macro events (episodes) of a video. Fold them upward \
into super events (narrative phases) and emit a single JSON object.

[TASK]
1. super_events - {low}-{high} super events that partition ALL macro events; each is a contiguous run of macro \
events that share temporal adjacency, scene/topic and a common goal (a boundary fires when any of the three \
breaks). Signals: overlapping key_entities, continuing event_types, on-screen text (a scoreboard that keeps \
counting stays inside a phase; a change of graphics marks a boundary). A singleton is allowed for a \
self-contained episode. Every macro_id appears in exactly one super event.
2. macro_relations - strong logical edges between macro events WITHIN THE SAME super event: \
{_labels(EdgeCategory.MACRO_CAUSAL)} (A directly triggers B / A blocks B / A supplies a prerequisite for B). \
Never BEFORE/AFTER; omit when uncertain.
3. super_relations - LEADS_TO (phase A naturally progresses to B), RESOLVES (B resolves a tension introduced in \
A), CONTRASTS_WITH (sharp reversal in outcome or tone); not restricted to adjacent super events.
{root_rule}

[NAMING]
super_event.label: a noun phrase under 10 words, with the central entity when there is one. key_entities are \
deduplicated and canonical across the whole video: variants of one real-world entity collapse to one name; when \
in doubt keep them separate. root.title under 15 words; root.description 3-5 sentences; root.themes 3-5 tags; \
root.key_entities 5-10 canonical names; root.emotional_tone 2-3 adjectives.

[MACRO EVENTS]
{chr(10).join(m.render() for m in macros)}

{_output_format(Aggregation)}"""
    return Prompt(AGGREGATE_SYSTEM, text, Aggregation)


@dataclass(frozen=True)
class SuperBrief:
    super_id: str
    label: str
    t_start: float
    t_end: float
    description: str
    key_entities: Sequence[str]

    def render(self) -> str:
        line = f"- {self.super_id} [{hms(self.t_start)}-{hms(self.t_end)}] {self.label}\n  {self.description}"
        if self.key_entities:
            line += f"\n  key_entities: {', '.join(self.key_entities)}"
        return line


def root_prompt(supers: Sequence[SuperBrief]) -> Prompt:
    """The root and the super-event relations, from the super events of a chunked build."""
    text = f"""Below are the super events (narrative phases) of a long video, in time order. Write the video-level \
summary and the high-level relations between the phases.

[TASK]
1. super_relations - LEADS_TO (phase A naturally progresses to B), RESOLVES (B resolves a tension introduced in \
A), CONTRASTS_WITH (sharp reversal in outcome or tone); not restricted to adjacent phases; only confident ones.
2. root - title under 15 words, specific; description 3-5 sentences synthesising ALL super events; themes 3-5 \
short tags; key_entities 5-10 canonical names; emotional_tone 2-3 adjectives.

[SUPER EVENTS]
{chr(10).join(s.render() for s in supers)}

{_output_format(RootSynthesis)}"""
    return Prompt(AGGREGATE_SYSTEM, text, RootSynthesis)
