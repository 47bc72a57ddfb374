"""What the server tells a model: the ``instructions`` sent at connection, and the ORA answering prompt.

The prompt adapts MEMDREAMER's agentic retrieval prompt (Fig. 10) to tool calling: the
client's model calls the tools itself, so the JSON output format and the round bookkeeping
become advice (keep a running list of facts and ids, do not repeat searches).
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable
from typing import Annotated, Any, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from memtools.tools.invoke import describe_errors

INSTRUCTIONS = """\
memtools is a long-term memory of videos, stored as a hierarchical graph per video:
root (title, description, themes) -> super events (narrative phases) -> macro events (self-contained
episodes) -> subgraph (entities, micro-events with times, on-screen text, typed edges such as PERFORMS,
CAUSES, LOCATED_IN). Times are seconds from the start of the video, shown as [H:MM:SS-H:MM:SS]. Ids are
readable (kitchen/macro_0002/evt_001): copy them from one result into the next call.

Drill down from the top:
- list_videos when the memory may hold several videos; get_summary(video_id) for the overview and the
  super events; get_super_events / get_macro_events(super_id) to open a phase; get_subgraph(macro_id) for
  who did what, when, and the on-screen text.
- Or jump in: search_nodes(query) with a descriptive statement ('a cook covers a burning pan with a lid',
  not a question), then get_subgraph on the macro event of the best hit.
- The question names a time: search_by_time(start_sec, end_sec).
- Many videos of one life (a home camera, daily vlogs): videos with a recording time print it (ISO 8601
  with its zone). A question across days: get_summary(video_id='day/2026-11-20') or 'week/2026-W47' for
  what was recorded then; search_by_time(start_time='2026-11-20T14:00+01:00', end_time='16:00') for the
  episodes of a clock window across every video, in clock order; list_videos(recorded_from='2026-11-16',
  recorded_to='2026-11-22') for the videos of those days; as_of_time for what had happened by an instant.
- What someone said: get_transcript(video_id, start_sec, end_sec), or search_nodes(query,
  node_types=['speech']). Lines name their speaker (a subtitle's name, or S1, S2, ... for voices told
  apart by sound); one speaker's lines: get_transcript(..., speaker='S2'). Who a voice is, across videos:
  get_relations(node_id) on an utterance names its person ('lib/person_0001'), and
  get_entity_timeline(entity_id='lib/person_0001') follows that person through every video.
- Why / what caused it / what happened next: get_relations(node_id) on an event or macro event.
- A visual detail the text lacks (colour, count, a sign): inspect_frames(video_id, start_sec, end_sec).
- What something looks like, when the time is unknown ('a red van'): search_frames(query), if the memory
  was built with an image embedder.
Macro labels and summaries are short: open the subgraph before answering who-did-what. Errors say what to
call instead; "memory is being updated" means retry in a few seconds. The prompt answer_video_question
holds the full answering strategy.
Micro-events whose text starts "User note:" are notes a person added (who someone is, what something
was): they are the user's own statements, so prefer them over what the model that built the memory saw.
"""

WRITE_INSTRUCTIONS = """
This server also lets you change the memory for the user (each change is recorded and can be undone):
- add_note(about, text) when the user tells you something worth remembering about a moment
  ('kitchen@2:05'), an entity ('kitchen/entity_003') or a whole video: use their words;
- rename_entity, merge_entities (a duplicate), split_entity (two things taken for one) to correct entities;
- forget_video removes a video: ask the user first;
- every result names a change id: undo_change(change_id) undoes it, list_changes shows the log.
Change the memory only when the user asks you to or clearly states a fact to remember.
"""

_STRATEGY = """\
Answer this question about {scope} with the memtools tools.

Question: {question}

How the memory is organised: a root per video (title, description, themes, key entities) -> super events
(narrative phases with time ranges) -> macro events (episodes inside a phase) -> a subgraph per macro event
(entities, micro-events with times, on-screen text and typed edges). Only the overview is cheap; details
are NOT in it: you must drill down with tools.

Work in rounds of Observation -> Reason -> Action:
- Observation: read the last tool result.
- Reason: what does the question ask, what do you already know, what is missing? Keep a short running list
  of useful facts, ids (super, macro, node ids), time ranges and the searches you already made; old tool
  results need not be re-read.
- Action: call the one tool that best fills the gap, or answer.

Start with {start}. Then pick the tool from the question's pattern:
- a time ("at 1:20:00", "in the first ten minutes") -> search_by_time(start_sec, end_sec)
- a day, a date or a clock time across videos ("what did I do on Friday afternoon?", "on which days did I
  cook?") -> get_summary(video_id='day/YYYY-MM-DD') or search_by_time(start_time=..., end_time=...) in ISO
  8601, and list_videos(recorded_from=..., recorded_to=...) to see which days hold videos
- a person or object plus an action -> search_nodes(query), then get_subgraph(macro_id) of the best hit
- a cause, an effect, what happened before or after -> get_relations(node_id) on the event or macro event
  (CAUSES, PREVENTS, ENABLES, BEFORE), and follow the chain
- the overall story or the order of phases -> get_super_events, get_macro_events(super_id)
- a visual detail the text lacks (colour, count, text on a sign) -> inspect_frames(video_id, start_sec,
  end_sec) on a short window
- something seen but maybe never described, at an unknown time ("when did the red van appear?") ->
  search_frames(query) (memories built with an image embedder), then get_subgraph of the hit's macro event
- across videos or days ("when did I last cook?", "on how many days did I ...?", "where do I usually ...?")
  -> get_event_chain(activity): every time it happened, in recording order, with days and places; a thing
  or a place across days ("when did I last see my keys?", "what changed in the kitchen?") ->
  get_entity_timeline(name) without video_id: one biography across videos, where each appearance was
Default workflow: search -> identify the macro_id -> get_subgraph for full detail. Macro labels and
summaries are summaries: do not answer who-did-what, counts or exact wording from them alone.

Search queries: write a DESCRIPTIVE STATEMENT, not a question; embeddings match event descriptions.
Good: "a foul is committed, leading to free throws". Bad: "who fouled?". When the question offers answer
options, search with what the options share and stay neutral where they differ.

Do not repeat a search: open macro events you have not explored yet instead. Stop as soon as the evidence
suffices (about a dozen tool calls is a generous budget).

Answer first (the option letter when there are options), then the evidence: the times [H:MM:SS] and ids
you relied on. If the memory does not contain the answer, say so and say what you checked.
"""


def answer_video_question(
    question: Annotated[str, Field(description="The question to answer, with its answer options if it has any.")],
    video_id: Annotated[str | None, Field(description="The video it is about (an id from list_videos); omit it "
                                          "to let the model find the video.")] = None,
) -> str:
    """Answer a question about a video by exploring its memory step by step (the MEMDREAMER ORA strategy)."""
    if video_id:
        scope, start = f"video {video_id!r}", f"get_summary(video_id={video_id!r})"
    else:
        scope, start = "the videos in this memory", "list_videos, then get_summary(video_id=...) of the right video"
    return _STRATEGY.format(scope=scope, question=question.strip(), start=start)


PROMPTS: dict[str, tuple[Callable[..., str], str]] = {
    "answer_video_question": (answer_video_question, "Answer a question about a video"),
}
"""Each prompt's function (its parameters are the prompt's arguments) and title."""


def _arguments_model(fn: Callable[..., str]) -> type[BaseModel]:
    """The prompt's arguments as a closed, strict model (every argument is a string on the wire)."""
    hints = get_type_hints(fn, include_extras=True)
    fields: dict[str, Any] = {
        name: (hints[name], ... if p.default is inspect.Parameter.empty else p.default)
        for name, p in inspect.signature(fn).parameters.items()}
    return create_model(f"{fn.__name__}_arguments", __config__=ConfigDict(extra="forbid", strict=True), **fields)


ARGUMENTS = {name: _arguments_model(fn) for name, (fn, _) in PROMPTS.items()}


def prompt_problem(name: str, arguments: Any) -> str | None:
    """Why ``prompts/get`` with these values cannot be answered (one line for the client), or None."""
    if name not in PROMPTS:
        close = difflib.get_close_matches(name, PROMPTS, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return f"unknown prompt {name!r}{hint}; the prompts are: {', '.join(PROMPTS)}"
    if arguments is not None and not isinstance(arguments, dict):
        return f"the arguments of prompt {name} must be an object of strings"
    try:
        ARGUMENTS[name].model_validate(arguments or {})
    except ValidationError as exc:
        return f"prompt {name}: " + describe_errors(name, ARGUMENTS[name], exc)
    return None


def register_prompts(server: Any) -> None:
    """Add the prompts to the SDK's server; ``prompt_problem`` checks a request before the SDK renders it."""
    for name, (fn, title) in PROMPTS.items():
        server.prompt(name=name, title=title)(fn)
