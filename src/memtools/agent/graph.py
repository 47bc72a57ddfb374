"""Wiring the ORA nodes into a LangGraph ``StateGraph``::

    START -> observe -> reason -> act -> observe -> ... -> answer -> END
                  \\________(budget spent)________________/^

``build_ora_graph(memory, model)`` compiles it with a default ``ORAContext``; a run may pass its
own (``graph.invoke(input, context=ORAContext(...))``) to use another memory, model or budget.
No checkpointer is compiled in: pass one to ``ora_state_graph().compile(checkpointer=...)`` if
you want persistence, or let ``langgraph dev`` supply its own.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from memtools.agent.nodes import act, answer, observe, reason, route_after_observe, route_after_reason
from memtools.agent.state import ORAContext, ORAInput, ORAOutput, ORAState
from memtools.store import Memory
from memtools.tools import MemoryTools


def _with_default(fn: Callable[..., Any], default: ORAContext | None) -> Callable[..., Any]:
    """``fn`` with ``runtime.context`` filled in from ``default`` when the run passed none."""
    if default is None:
        return fn

    @functools.wraps(fn)
    def run(state: ORAState, runtime: Runtime[ORAContext]) -> Any:
        if runtime.context is None:
            runtime = runtime.override(context=default)
        return fn(state, runtime)

    return run


def ora_state_graph(default: ORAContext | None = None) -> StateGraph[ORAState, ORAContext, ORAInput, ORAOutput]:
    """The uncompiled ORA graph, for adding nodes or compiling with a checkpointer."""
    g = StateGraph(ORAState, context_schema=ORAContext, input_schema=ORAInput, output_schema=ORAOutput)
    g.add_node("observe", _with_default(observe, default))
    g.add_node("reason", _with_default(reason, default))
    g.add_node("act", _with_default(act, default))
    g.add_node("answer", _with_default(answer, default))
    g.add_edge(START, "observe")
    g.add_conditional_edges("observe", _with_default(route_after_observe, default), ["reason", "answer"])
    g.add_conditional_edges("reason", route_after_reason, ["act", "answer"])
    g.add_edge("act", "observe")
    g.add_edge("answer", END)
    return g


def build_ora_graph(memory: Memory | MemoryTools, model: Any, max_rounds: int = 12, top_k: int = 10,
                    **settings: Any):
    """The compiled ORA graph over ``memory`` with any LangChain chat ``model``.

    ``settings`` are the other ``ORAContext`` fields (``protocol``, ``max_retries``, ``images``,
    ...). Invoke with ``{"question": ..., "options": {"A": ...}, "scope": [video_id]}``.
    """
    tools = memory if isinstance(memory, MemoryTools) else MemoryTools(memory)
    context = ORAContext(tools=tools, model=model, max_rounds=max_rounds, top_k=top_k, **settings)
    return ora_state_graph(context).compile(name="memtools-ora")
