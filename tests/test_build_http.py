"""The whole construction pipeline over the HTTP backend: a real generated video, ``OpenAIVLM``
talking to a respx-faked chat-completions server that misbehaves at the transport level
(429 + Retry-After, 500, timeout) and in what it answers (fenced JSON with chatter, truncated
JSON, a hallucinated id, out-of-range times, an unknown label, a wrong schema). The build
must finish, and the memory must hold only what survives repair, with the repairs reported."""

from __future__ import annotations

import json
import re
from collections import Counter

import httpx
import pytest
import respx

from build_helpers import scenes_video
from memtools.builder import AnswerError, BuildConfig, build_video, parse_answer
from memtools.builder.prompts import AGGREGATE_SYSTEM, EXTRACT_SYSTEM, SEGMENT_SYSTEM, hms
from memtools.builder.responses import Aggregation
from memtools.builder.testing import ScriptedPerception
from memtools.embed import TestEmbedder
from memtools.perception import OpenAIVLM, PerceptionRequest, RetryPolicy
from memtools.store import Memory
from memtools.tools import MemoryTools

BASE = "http://vlm.test/v1"
PROMPT_TOKENS, COMPLETION_TOKENS = 100, 10
RETRY_MARK = "[YOUR PREVIOUS ANSWER COULD NOT BE USED]"
_CLIP = re.compile(r'clip titled "(.*?)"\.')

# 80 s in four 20 s scenes; one segmentation window covers it all, so the macro events are
# known in advance: macro_000k is the episode starting at 20k seconds.
CONFIG = BuildConfig.short().model_copy(update={"frames_per_window": 8, "frames_per_macro": 3, "concurrency": 4})
TITLES = [f"Scene at {hms(20 * k)}" for k in range(4)]
HALLUCINATED, UNKNOWN_LABEL = TITLES[0], TITLES[3]  # extraction answers with a bad edge
OUT_OF_RANGE, TRUNCATED = TITLES[1], TITLES[2]
WRONG_SCHEMA = json.dumps({"summary": "Four scenes.", "phases": [{"name": "all", "macros": ["macro_0000"]}]})


def completion(text: str, finish_reason: str = "stop") -> httpx.Response:
    return httpx.Response(200, json={
        "id": "chatcmpl-1", "model": "served-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": PROMPT_TOKENS, "completion_tokens": COMPLETION_TOKENS},
    })


class FakeServer:
    """Answers chat-completion requests by what their prompt asks, misbehaving on cue."""

    def __init__(self) -> None:
        self.script = ScriptedPerception(episode_sec=20, per_super=2)
        self.attempts: Counter[str] = Counter()  # HTTP requests per prompt kind / clip
        self.prompts: list[tuple[str, str]] = []  # (system, prompt) of every request, in order

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        system = body["messages"][0]["content"]
        prompt = body["messages"][-1]["content"][-1]["text"]
        self.prompts.append((system, prompt))
        asked = PerceptionRequest(prompt=prompt, system=system)
        if system == SEGMENT_SYSTEM:
            self.attempts["segment"] += 1
            if self.attempts["segment"] == 1:
                return httpx.Response(429, json={"error": {"message": "rate limited"}}, headers={"Retry-After": "1"})
            return completion("Sure! Here are the episodes I found:\n```json\n" + self.script.segment(asked)
                              + "\n```\nLet me know if you need anything else.")
        if system == EXTRACT_SYSTEM:
            title = _CLIP.search(prompt).group(1)
            self.attempts[title] += 1
            first = self.attempts[title] == 1
            if first and title == HALLUCINATED:
                return httpx.Response(500, json={"error": {"message": "internal error"}})
            if first and title == OUT_OF_RANGE:
                raise httpx.ReadTimeout("the model is thinking", request=request)
            return self.extract(title, asked)
        if system == AGGREGATE_SYSTEM:
            self.attempts["aggregate"] += 1
            if RETRY_MARK not in prompt:
                return completion(WRONG_SCHEMA)
            return completion(self.script.aggregate(asked))
        return httpx.Response(400, json={"error": {"message": f"unexpected system prompt {system!r}"}})

    def extract(self, title: str, asked: PerceptionRequest) -> httpx.Response:
        good = self.script.extract(asked)
        data = json.loads(good)
        if title == HALLUCINATED:
            data["edges"].append({"source_id": "en9", "target_id": "ev1", "relation_label": "RECEIVES",
                                  "description": "ghost edge from an entity that does not exist"})
        elif title == OUT_OF_RANGE:  # clip-local seconds far before and after the 20 s clip
            data["micro_events"][0]["time_range"] = [-5, 12]
            data["micro_events"][1]["time_range"] = [12, 300]
            data["ocr_texts"][0]["time_range"] = [0, 500]
            data["entities"][0]["visual_grounding"]["primary_time_sec"] = 400  # four times clipped
        elif title == UNKNOWN_LABEL:
            data["edges"].append({"source_id": "en1", "target_id": "en2", "relation_label": "FRIENDS_WITH",
                                  "description": "friends edge with a label outside the schema"})
        elif title == TRUNCATED:  # cut off inside the third edge (ev1 -CAUSES-> ev2)
            text = json.dumps(data)
            cut = text.index('"source_id": "ev1"') + len('"source_id": "ev1", "tar')
            return completion(text[:cut], finish_reason="length")
        return completion(json.dumps(data))


class Sleeps:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    return scenes_video(tmp_path_factory.mktemp("video") / "clip.mp4", seconds=80)


def test_build_over_a_misbehaving_http_server(tmp_path, video):
    server = FakeServer()
    router = respx.Router(base_url=BASE, assert_all_called=True)
    route = router.post("/chat/completions").mock(side_effect=server)
    sleeps = Sleeps()
    vlm = OpenAIVLM("test-model", base_url=BASE, transport=httpx.MockTransport(router.async_handler),
                    retry=RetryPolicy(max_attempts=3, backoff_base=0.01, jitter=0.0), sleep=sleeps)

    with Memory.create(tmp_path / "memory", TestEmbedder(64)) as memory:
        report = build_video(memory, vlm, video, config=CONFIG)
        tools = MemoryTools(memory)

        # --- the build finished and the memory is navigable -------------------------------
        assert [(v.video_id, v.status) for v in tools.list_videos().videos] == [("clip", "ready")]
        assert tools.get_summary("clip").title == "Balls knocking over boxes"
        supers = tools.get_super_events("clip").supers
        macros = [m for s in supers for m in tools.get_macro_events(super_id=s.id).macros]
        assert [m.label for m in macros] == TITLES
        assert [(m.t_start, m.t_end) for m in macros] == [(pytest.approx(20 * k), pytest.approx(20 * k + 20))
                                                          for k in range(4)]
        subs = {m.label: tools.get_subgraph(m.id) for m in macros}

        # --- no dangling edges, no edge the model made up, every time inside its macro event --
        all_edges = []
        for macro in macros:
            sub = subs[macro.label]
            nodes = {n.id for n in [*sub.entities, *sub.events, *sub.ocr]}
            assert {e.source for e in sub.edges} | {e.target for e in sub.edges} <= nodes
            for node in [*sub.entities, *sub.events, *sub.ocr]:
                rel = tools.get_relations(node.id)
                for edge in [*rel.outgoing, *rel.incoming]:
                    all_edges.append(edge)
                    other = edge.target if edge.source == node.id else edge.source
                    tools.get_relations(other)  # raises ToolError if the other end does not exist
            for node in [*sub.events, *sub.ocr]:
                assert macro.t_start <= node.t_start <= node.t_end <= macro.t_end
        for sup in supers:
            for edge in [*tools.get_relations(sup.id).outgoing, *tools.get_relations(sup.id).incoming]:
                tools.get_relations(edge.source), tools.get_relations(edge.target)
        assert all_edges
        assert not [e for e in all_edges if "ghost" in e.description or "friends" in e.description]

        def labels(title: str) -> Counter[str]:
            return Counter(e.label for e in subs[title].edges)

        full = Counter({"PERFORMS": 2, "CAUSES": 1, "ANNOTATES": 1})
        assert labels(HALLUCINATED) == full  # the en9 -RECEIVES-> ev1 edge was dropped
        assert labels(UNKNOWN_LABEL) == full  # the FRIENDS_WITH edge was dropped
        assert labels(OUT_OF_RANGE) == full
        assert labels(TRUNCATED) == Counter({"PERFORMS": 2})  # the cut-off edges are gone...
        assert len(subs[TRUNCATED].entities) == 2 and len(subs[TRUNCATED].events) == 2  # ...the rest kept
        clipped = subs[OUT_OF_RANGE]
        assert clipped.events[0].t_start == pytest.approx(20.0) and clipped.events[-1].t_end == pytest.approx(40.0)
        assert (clipped.ocr[0].t_start, clipped.ocr[0].t_end) == (pytest.approx(20.0), pytest.approx(40.0))

        report_file = json.loads((memory.work_dir("clip") / "report.json").read_text())

    # --- the build report (as written in the work dir) records every repair and drop ------
    assert report_file["counts"] == report.counts and report.counts["macro"] == 4
    issues = [(i["stage"], i["step"], i["severity"], i["detail"]) for i in report_file["issues"]]

    def found(stage: str, step: str, severity: str, text: str) -> bool:
        return any(i[:3] == (stage, step, severity) and text in i[3] for i in issues)

    assert found("segment", "window_000", "repaired", "removed markdown fences")
    assert found("extract", "macro_0000", "dropped", "no node 'en9'")
    assert found("extract", "macro_0001", "repaired", "clipped 4 time(s) that fell outside the macro event")
    assert found("extract", "macro_0002", "repaired", "hit the output token limit")
    assert found("extract", "macro_0002", "repaired", "closed a truncated JSON answer")
    assert found("extract", "macro_0002", "dropped", "dropped edges[2]")  # the half-written edge
    assert found("extract", "macro_0003", "dropped", "FRIENDS_WITH")
    assert found("extract", "macro_0003", "dropped", "unknown relation label")
    assert found("aggregate", "chunk_00", "repaired", "attempt 1 unusable: the JSON does not match the schema")
    assert not [i for i in issues if i[2] == "fallback"]

    # --- the aggregation retry told the model what was wrong -----------------------------------
    with pytest.raises(AnswerError) as wrong:
        parse_answer(WRONG_SCHEMA, Aggregation)
    assert "super_events" in str(wrong.value)
    aggregation = [p for s, p in server.prompts if s == AGGREGATE_SYSTEM]
    assert len(aggregation) == 2
    assert RETRY_MARK not in aggregation[0]
    assert aggregation[1].startswith(aggregation[0])
    assert f"{RETRY_MARK}\n{wrong.value}\n" in aggregation[1]

    # --- usage: HTTP attempts, answered calls, pipeline retries, transport backoff -----------
    http_requests = 2 + (4 + 2) + 2  # segment (429 + ok), 4 clips + 500 + timeout, aggregate (wrong + ok)
    answered = http_requests - 3  # the 429, the 500 and the timeout are no answers
    assert route.call_count == len(server.prompts) == http_requests
    assert server.attempts == Counter({"segment": 2, HALLUCINATED: 2, OUT_OF_RANGE: 2, TRUNCATED: 1,
                                       UNKNOWN_LABEL: 1, "aggregate": 2})
    assert vlm.usage.calls == report.usage.calls == answered
    assert vlm.usage.prompt_tokens == report.usage.input_tokens == answered * PROMPT_TOKENS
    assert vlm.usage.completion_tokens == report.usage.output_tokens == answered * COMPLETION_TOKENS
    assert report.usage.retries == 1 and report.usage.cached_calls == 0  # only the wrong schema was re-asked
    assert report_file["usage"] == report.usage.model_dump()
    assert sorted(sleeps.waits) == [0.01, 0.01, 1.0]  # backoff after the 500 and the timeout; Retry-After: 1
