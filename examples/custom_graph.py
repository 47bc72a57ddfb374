"""Use the memtools tools in your own LangGraph graph: a plain ReAct loop with ``ToolNode``.

    python examples/custom_graph.py
        offline: a small sample memory (a kitchen video) and a scripted model
    python examples/custom_graph.py --memory my-memory --model openai:gpt-4o-mini "What happens to the pan?"
        a real memory and any OpenAI-compatible model (--base-url http://localhost:8000/v1 for a local one)

The graph is yours; memtools only supplies the tools (``as_langchain_tools``). Tool errors
(an unknown id, a bad time window) come back as error ToolMessages the model can act on.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from memtools.langchain import as_langchain_tools
from memtools.store import Memory

SYSTEM = ("You answer questions about videos using a video memory. Start with get_summary or search_nodes, open "
          "the promising macro event with get_subgraph, then answer in one or two sentences citing times.")


def build_graph(model, tools):
    """agent -> tools -> agent ... until the model stops calling tools."""
    llm = model.bind_tools(tools)

    def agent(state: MessagesState):
        return {"messages": [llm.invoke([SystemMessage(SYSTEM), *state["messages"]])]}

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("tools", ToolNode(tools))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)  # -> "tools" or END
    g.add_edge("tools", "agent")
    return g.compile()


def sample_memory(folder: Path) -> Memory:
    """A tiny memory of a cooking video, with the test embedder (no model download)."""
    from memtools.embed import TestEmbedder
    from memtools.testing import kitchen_graph

    memory = Memory.create(folder, TestEmbedder(64))
    memory.write_video(kitchen_graph())
    return memory


def scripted_model():
    """A stand-in for a chat model: replays the calls a real model would make here."""
    from memtools.agent.testing import ScriptedChatModel, tool_call

    return ScriptedChatModel(responses=[
        tool_call("search_nodes", query="the pan catches fire", top_k=5),
        tool_call("get_subgraph", macro_id="kitchen/macro_0002"),
        AIMessage(content="The oil overheats and the pan catches fire at 0:04:05; the cook smothers it by putting "
                          "a metal lid on the pan at 0:04:22 (kitchen/macro_0002/evt_002)."),
    ])


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("question", nargs="?", default="How does the cook put out the pan fire?")
    p.add_argument("--memory", type=Path, help="memory folder (default: a temporary sample memory)")
    p.add_argument("--model", help="e.g. openai:gpt-4o-mini (default: a scripted offline model)")
    p.add_argument("--base-url", help="OpenAI-compatible API root")
    args = p.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        memory = Memory.open(args.memory) if args.memory else sample_memory(Path(tmp) / "memory")
        if args.model:
            from memtools.agent import chat_model_from_spec

            model = chat_model_from_spec(args.model, base_url=args.base_url)
        else:
            model = scripted_model()
        with memory:
            graph = build_graph(model, as_langchain_tools(memory))
            result = graph.invoke({"messages": [HumanMessage(args.question)]})
        for message in result["messages"]:
            message.pretty_print()


if __name__ == "__main__":
    main()
