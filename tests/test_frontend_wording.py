"""One wording per error: the model reads the same text from MCP, LangChain and the ORA loop
(and the CLI prints the same message), because all of them call ``ToolSpec.invoke``.

The CLI parses its string values leniently (``--top-k 5`` is fine in a shell) and names flags
(``--top-k``), so it is compared on the errors the tools themselves raise."""

from __future__ import annotations

import pytest
from mcp.types import TextContent

from agent_helpers import QUESTION, kitchen_memory
from mcp_support import Client
from memtools.agent import build_ora_graph
from memtools.agent.testing import ScriptedChatModel, tool_call
from memtools.cli import main
from memtools.langchain import as_langchain_tools
from memtools.mcp import build_server
from memtools.tools import TOOL_SPECS, MemoryTools

CASES = [
    ("get_subgraph", {"macro_id": "kitchen/macro_0099"}, "does not exist"),  # a wrong id
    ("search_nodes", {"query": "the lid", "top_k": "5"}, 'top_k must be an integer, not "5" (a string)'),
    ("search_by_time", {"start_sec": 50, "end_sec": 10}, "end_sec greater than start_sec"),  # checked by the core
]


@pytest.fixture(scope="module")
def memory(tmp_path_factory):
    mem = kitchen_memory(tmp_path_factory.mktemp("wording") / "mem")
    yield mem
    mem.close()


@pytest.mark.parametrize(("name", "args", "words"), CASES)
async def test_the_same_error_text_in_every_front_end(memory, name, args, words, capsys):
    expected = TOOL_SPECS[name].invoke(MemoryTools(memory), {**args, "video_id": "kitchen"}
                                       if "video_id" in TOOL_SPECS[name].args.model_fields else args)
    assert not expected.ok and words in expected.text and expected.text.startswith(f"Tool error from {name}: ")

    lc = {t.name: t for t in as_langchain_tools(memory)}[name]
    message = lc.invoke({"name": name, "args": args, "id": "c1", "type": "tool_call"})
    assert message.status == "error" and message.content == expected.text

    async with Client(build_server(memory), mode="legacy") as client:
        result = await client.call_tool(name, args)
    assert result.is_error and [b.text for b in result.content if isinstance(b, TextContent)] == [expected.text]

    if "top_k" not in args:  # not an argument-type error, which the shell's lenient parsing would accept
        flags = [part for key, value in args.items() for part in (f"--{key.replace('_', '-')}", str(value))]
        assert main(["tool", name, "--memory", str(memory.path), *flags]) == 1
        assert capsys.readouterr().err.strip() == f"memtools tool {name}: error: {expected.message}"

    model = ScriptedChatModel(responses=[tool_call(name, useful_info="trying", **args),
                                         tool_call("answer", useful_info="done", answer="B")])
    out = build_ora_graph(memory, model).invoke({"question": QUESTION, "scope": ["kitchen"]})
    if expected.message.startswith("top_k"):  # an argument error: caught when the reply is read, and re-asked
        reason = out["trace"][0]
        assert reason["errors"] == [f"bad arguments for {name}: {expected.message}"]
        assert expected.message in str(model.prompts[1][-1].content)  # the retry tells the model the same
        return
    act = next(step for step in out["trace"] if step["kind"] == "act")
    assert act["ok"] is False and act["observation"] == expected.text
