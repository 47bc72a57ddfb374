"""Destructive write tools ask the user first (issue 48, item 2; ``memtools.mcp.confirm``): through the client where it
can answer (an input-required multi round-trip result at 2026-07-28, ``elicitation/create`` at 2025-11-25), and
otherwise they answer an error saying what to ask and to call again with ``confirm: true``. The real server
in-process, through the SDK's own client in each connection mode (``mcp_support.MODES``), and over streamable HTTP.
"""

from __future__ import annotations

import pytest
from mcp.types import ElicitResult, TextContent

from mcp_support import MODES, Client, http_server, mcp_command, with_keyframes
from memtools.changes.log import ChangeLog
from memtools.changes.tool_specs import WRITE_TOOL_SPECS
from memtools.embed.images import TestImageEmbedder
from memtools.embed.testing import TestEmbedder
from memtools.mcp.confirm import ANSWER_KEY
from memtools.mcp.sdk import SDK_MAJOR
from memtools.mcp.server import build_server
from memtools.store import Memory
from memtools.tools import TOOL_SPECS
from people_support import save, talk, voice

ASKS_FIRST = {
    "forget_video": {"video_id": "kitchen"},
    "merge_entities": {"entity_id": "kitchen/entity_004", "other_id": "kitchen/entity_005"},
    "split_entity": {"entity_id": "kitchen/entity_001", "mention_ids": ["kitchen/macro_0002/ent_001"]},
    "forget_person": {"target": "kitchen/S1"},
    "undo_change": {"change_id": "c0001"},
}
FORGET_QUESTION = ("Forget video kitchen ('Cooking stir-fry in a small kitchen', 3 macro events, 7 entities, "
                   "12 keyframes)? Its graph, vectors, keyframes, voices and faces are removed from the memory; "
                   "undo_change can bring it back.")


@pytest.fixture
def memory_path(tmp_path):
    """The kitchen video with keyframes, speakers S1 and S2 and their voice centroids (every tool can run)."""
    path = tmp_path / "mem"
    with Memory.create(path, TestEmbedder(64), image_embedder=TestImageEmbedder()) as memory:
        save(path, "kitchen", {"S1": voice(1), "S2": voice(2)})
        memory.write_video(with_keyframes(talk("kitchen"), path))
    return path


class User:
    """An elicitation callback (both SDKs): records each question and gives one answer."""

    def __init__(self, action: str = "accept", content: dict | None = None) -> None:
        self.action, self.content = action, content
        self.asked: list[str] = []

    async def __call__(self, context, params) -> ElicitResult:
        self.asked.append(params.message)
        schema = params.requested_schema if SDK_MAJOR == 2 else params.requestedSchema
        assert schema["properties"]["confirm"]["type"] == "boolean"
        return ElicitResult(action=self.action, content=self.content)


def text(result) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, TextContent))


def kind(result) -> str | None:
    return (result.meta or {}).get("memtools/errorKind")


def changes(path) -> list[str]:
    return [f"{c.id} {c.action}" for c in ChangeLog(path).entries(100)]


def videos(path) -> list[str]:
    with Memory.open(path) as memory:
        return sorted(memory.manifest.videos)


async def test_the_destructive_tools_publish_a_confirm_argument(memory_path):
    assert {n for n, s in WRITE_TOOL_SPECS.items() if s.confirm is not None} == set(ASKS_FIRST)
    assert not any(s.confirm for s in TOOL_SPECS.values())
    async with Client(build_server(memory_path, allow_writes=True)) as client:
        for tool in (await client.list_tools()).tools:
            prop = tool.input_schema["properties"].get("confirm")
            if tool.name in ASKS_FIRST:
                assert prop["type"] == "boolean" and prop["default"] is False, tool.name
                assert "user has agreed" in prop["description"]
                assert tool.input_schema["additionalProperties"] is False
            else:
                assert prop is None, tool.name


@pytest.mark.parametrize("mode", MODES)
async def test_a_client_that_cannot_answer_is_told_what_to_ask_and_nothing_changes(memory_path, mode):
    async with Client(build_server(memory_path, allow_writes=True), mode=mode) as client:
        note = await client.call_tool("add_note", {"about": "kitchen@125", "text": "the cook is Tom"})
        assert not note.is_error, text(note)  # only adds: never asked
        for name, arguments in ASKS_FIRST.items():
            result = await client.call_tool(name, arguments)
            assert result.is_error and kind(result) == "needs-confirmation", (name, text(result))
            assert f"call {name} again with the same arguments and confirm: true" in text(result)
            assert "Nothing was changed." in text(result)
        said = {n: text(await client.call_tool(n, a)) for n, a in ASKS_FIRST.items()}
        assert f'Ask the user: "{FORGET_QUESTION}"' in said["forget_video"]
        assert "Merge entity kitchen/entity_005 ('Lodge') into kitchen/entity_004 ('" in said["merge_entities"]
        assert "Split 1 mention(s) (kitchen/macro_0002/ent_001) off entity kitchen/entity_001 ('a cook" \
            in said["split_entity"]
        assert "of kitchen/S1: 1 cluster(s) in 1 video(s)? The transcript keeps its text. This cannot be undone." \
            in said["forget_person"]
        assert "Undo change c0001: note of video kitchen, '" in said["undo_change"]
        purge = await client.call_tool("forget_video", {"video_id": "kitchen", "purge": True})  # the same spec
        assert kind(purge) == "needs-confirmation" and "for good?" in text(purge), text(purge)
        assert "nothing is kept: this cannot be undone." in text(purge)
        assert changes(memory_path) == ["c0001 note"] and videos(memory_path) == ["kitchen"]

        merged = await client.call_tool("merge_entities", {**ASKS_FIRST["merge_entities"], "confirm": True})
        assert not merged.is_error and merged.structured_content["change_id"] == "c0002", text(merged)
        forgot = await client.call_tool("forget_video", {"video_id": "kitchen", "confirm": True})
        assert not forgot.is_error and "forgot video kitchen" in text(forgot), text(forgot)
        assert videos(memory_path) == []
        kept = await client.call_tool("forget_video", {"video_id": "kitchen", "confirm": False})
        assert kind(kept) == "not-found"  # confirm: false is no answer: the question finds nothing to forget


@pytest.mark.parametrize("mode", MODES)
async def test_the_user_is_asked_and_their_answer_decides(memory_path, mode):
    user = User()
    async with Client(build_server(memory_path, allow_writes=True), mode=mode, elicitation_callback=user) as client:
        for action, content in [("accept", {"confirm": False}), ("decline", None), ("cancel", None)]:
            user.action, user.content = action, content
            result = await client.call_tool("forget_video", {"video_id": "kitchen"})
            assert result.is_error and kind(result) == "declined", (action, text(result))
            assert "nothing was changed. Do not call it again unless the user asks." in text(result)
            assert videos(memory_path) == ["kitchen"] and changes(memory_path) == []
        assert user.asked == [FORGET_QUESTION] * 3

        user.action, user.content = "accept", {"confirm": True}
        result = await client.call_tool("forget_video", {"video_id": "kitchen"})
        assert not result.is_error and result.structured_content["action"] == "forget", text(result)
        assert videos(memory_path) == [] and changes(memory_path) == ["c0001 forget"]
        back = await client.call_tool("undo_change", {"change_id": "c0001"})
        assert not back.is_error and videos(memory_path) == ["kitchen"], text(back)
        assert user.asked[4].startswith("Undo change c0001: forget of video kitchen, 'forgot video kitchen")


@pytest.mark.parametrize("mode", MODES)
async def test_the_arguments_are_checked_before_anyone_is_asked(memory_path, mode):
    user = User("accept", {"confirm": True})
    async with Client(build_server(memory_path, allow_writes=True), mode=mode, elicitation_callback=user) as client:
        for arguments, error, says in [
            ({"video_id": "nope"}, "not-found", "no video 'nope' in this memory; list_videos gives the ids"),
            ({"video_id": "kitchen", "confirm": "yes"}, "bad-arguments", 'confirm: expected true or false, got "yes"'),
            ({"video_id": "kitchen", "confirm": 1}, "bad-arguments", "confirm: expected true or false, got 1"),
            ({"video_id": "kitchen", "force": True}, "bad-arguments", "force"),
            ({}, "bad-arguments", "video_id"),
        ]:
            result = await client.call_tool("forget_video", arguments)
            assert result.is_error and kind(result) == error and says in text(result), (arguments, text(result))
        missing = await client.call_tool("undo_change", {"change_id": "c0042"})
        assert kind(missing) == "not-found" and "no change 'c0042'" in text(missing)
        assert user.asked == [] and videos(memory_path) == ["kitchen"]

        agreed = await client.call_tool("forget_video", {"video_id": "kitchen", "confirm": True})
        assert not agreed.is_error and user.asked == [], text(agreed)  # the model asked: the server does not


@pytest.mark.skipif(SDK_MAJOR != 2, reason="input-required results (multi round-trip requests) are protocol "
                                           "2026-07-28, which only mcp 2.x speaks")
async def test_at_2026_07_28_the_question_is_an_input_required_result_bound_to_its_call(memory_path):
    from mcp.types import InputRequiredResult

    user = User()  # declares elicitation; this test answers by hand
    async with Client(build_server(memory_path, allow_writes=True), elicitation_callback=user) as client:
        session = client.session
        arguments = ASKS_FIRST["forget_video"]
        first = await session.call_tool("forget_video", arguments, allow_input_required=True)
        assert isinstance(first, InputRequiredResult) and first.request_state, first
        question = first.input_requests[ANSWER_KEY]
        assert question.method == "elicitation/create" and question.params.message == FORGET_QUESTION
        assert question.params.requested_schema["required"] == ["confirm"]
        assert videos(memory_path) == ["kitchen"] and user.asked == []

        yes = {ANSWER_KEY: ElicitResult(action="accept", content={"confirm": True})}
        unbound = await session.call_tool("forget_video", arguments, input_responses=yes, allow_input_required=True)
        assert isinstance(unbound, InputRequiredResult), unbound  # an answer without the question's state: asked again
        refused = await session.call_tool("forget_video", arguments, input_responses={
            ANSWER_KEY: ElicitResult(action="decline")}, request_state=first.request_state, allow_input_required=True)
        assert refused.is_error and kind(refused) == "declined" and videos(memory_path) == ["kitchen"]
        done = await session.call_tool("forget_video", arguments, input_responses=yes,
                                       request_state=unbound.request_state, allow_input_required=True)
        assert not done.is_error and videos(memory_path) == [], text(done)


@pytest.mark.slow
async def test_over_streamable_http_only_a_2026_07_28_client_is_asked(memory_path):
    """The stateless HTTP endpoint has no way back for a request during a call: at 2025-11-25 (mcp 1.x, and mcp 2.x's
    legacy mode) the answer says what to ask; at 2026-07-28 the question rides the input-required result."""
    user = User("accept", {"confirm": True})
    with http_server(memory_path, extra=("--allow-writes",)) as url:
        for mode in sorted(MODES, key=lambda m: m == "auto"):  # 2025-11-25 first: it changes nothing
            async with Client(url, mode=mode, elicitation_callback=user) as client:
                result = await client.call_tool("forget_video", {"video_id": "kitchen"})
            if mode == "auto":  # mcp 2.x at 2026-07-28
                assert not result.is_error and user.asked == [FORGET_QUESTION], text(result)
                assert videos(memory_path) == []
                break
            assert kind(result) == "needs-confirmation" and user.asked == [], text(result)
            assert videos(memory_path) == ["kitchen"]


@pytest.mark.slow
async def test_over_stdio_the_user_is_asked_at_every_revision(memory_path):
    """stdio has a way back at every revision: 2025-11-25 asks during the call, 2026-07-28 by a round trip."""
    from mcp import StdioServerParameters

    command, args = mcp_command(memory_path, "--allow-writes")
    user = User("accept", {"confirm": True})
    for n, mode in enumerate(MODES):
        async with Client(StdioServerParameters(command=command, args=args), mode=mode,
                          elicitation_callback=user) as client:
            name, arguments = ("forget_video", {"video_id": "kitchen"}) if n == 0 else \
                ("undo_change", {"change_id": "c0001"})
            result = await client.call_tool(name, arguments)
            assert not result.is_error and len(user.asked) == n + 1, (mode, text(result))
    assert videos(memory_path) == (["kitchen"] if len(MODES) == 2 else [])
