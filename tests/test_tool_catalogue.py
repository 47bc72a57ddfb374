"""The catalogue is the one place a tool is declared: its ``Args`` model holds the defaults and
bounds (a ``MemoryTools`` method may repeat a default for Python callers, but never another
one), and a tool added to ``TOOL_SPECS`` alone reaches every front end."""

from __future__ import annotations

import inspect
from typing import Literal

import pytest
from mcp.types import TextContent
from pydantic import BaseModel, ConfigDict, Field

from agent_helpers import QUESTION, kitchen_memory
from mcp_support import Client
from memtools.agent import build_ora_graph
from memtools.agent.state import ORAContext
from memtools.agent.testing import ScriptedChatModel, tool_call
from memtools.cli import main
from memtools.langchain import as_langchain_tools
from memtools.mcp import build_server
from memtools.tools import TOOL_SPECS, MemoryTools, ToolSpec


@pytest.mark.parametrize("name", list(TOOL_SPECS))
def test_method_parameters_and_defaults_agree_with_the_args_model(name):
    spec = TOOL_SPECS[name]
    params = {k: p for k, p in inspect.signature(spec.method).parameters.items() if k != "self"}
    fields = spec.args.model_fields
    assert set(params) == set(fields), f"{name}: arguments differ from its Args model"
    for field_name, field in fields.items():
        default = params[field_name].default
        if default is inspect.Parameter.empty:
            continue
        assert not field.is_required(), f"{name}({field_name}=...) has a default its Args model does not have"
        assert default == field.get_default(call_default_factory=True), (
            f"{name}: the method's default for {field_name} ({default!r}) disagrees with {spec.args.__name__}")


class VideoCount(BaseModel):
    status: str
    n: int

    def render(self) -> str:
        return f"{self.n} {self.status} video(s)"


class CountArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    status: Literal["ready", "failed"] = Field(default="ready", description="Count the videos in this state.")


def count_videos(tools: MemoryTools, status: str = "ready") -> VideoCount:
    videos = tools.memory.manifest.videos.values()
    return VideoCount(status=status, n=sum(v.status == status for v in videos))


NEW = ToolSpec("count_videos", "navigation", "How many videos the memory holds in a given state.", CountArgs,
               count_videos)


@pytest.fixture
def memory(tmp_path, monkeypatch):
    monkeypatch.setitem(TOOL_SPECS, NEW.name, NEW)
    mem = kitchen_memory(tmp_path / "mem")
    yield mem
    mem.close()


async def test_a_tool_added_to_the_catalogue_reaches_every_front_end(memory, capsys):
    expected = "2 ready video(s)"  # kitchen and garage
    assert NEW.invoke(MemoryTools(memory), {}).text == expected


    lc = {t.name: t for t in as_langchain_tools(memory)}
    assert lc["count_videos"].invoke({"status": "ready"}) == expected

    async with Client(build_server(memory)) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert listed["count_videos"].input_schema["properties"]["status"]["enum"] == ["ready", "failed"]
        result = await client.call_tool("count_videos", {"status": "ready"})
    assert not result.is_error and [b.text for b in result.content if isinstance(b, TextContent)] == [expected]
    assert result.structured_content == {"status": "ready", "n": 2}

    assert "count_videos" in ORAContext(tools=MemoryTools(memory), model=None).tool_names
    model = ScriptedChatModel(responses=[tool_call("count_videos", useful_info="counting", status="ready"),
                                         tool_call("answer", useful_info="done", answer="B")])
    out = build_ora_graph(memory, model).invoke({"question": QUESTION, "scope": ["kitchen"]})
    act = next(step for step in out["trace"] if step["kind"] == "act")
    assert act["ok"] is True and act["observation"] == expected
    assert "count_videos" in str(model.prompts[0][0].content)  # the model is told about it

    memory.close()  # the CLI opens the folder itself
    assert main(["tool", "count_videos", "--memory", str(memory.path), "--status", "ready"]) == 0
    assert capsys.readouterr().out.strip() == expected
