"""The MEMDREAMER Observation-Reason-Action loop as LangGraph nodes.

    from memtools.agent import build_ora_graph
    graph = build_ora_graph(Memory.open("my-memory"), chat_model)
    out = graph.invoke({"question": "Why does the pan catch fire?", "options": {"A": ..., "B": ...}})
    out["answer"], out["trace"]

Every node (``observe``, ``reason``, ``act``, ``answer``) is importable for custom wiring;
they read the tools, model and settings from ``runtime.context`` (``ORAContext``).
"""

from memtools.agent.graph import build_ora_graph, ora_state_graph
from memtools.agent.nodes import act, answer, observe, reason, route_after_observe, route_after_reason
from memtools.agent.parsing import ReplyError, split_options
from memtools.agent.state import Clue, Exploration, ORAContext, ORAInput, ORAOutput, ORAState, ToolCall
from memtools.agent.trajectory import format_trace, trajectory
from memtools.chat_models import chat_model_from_spec

__all__ = [
    "Clue", "Exploration", "ORAContext", "ORAInput", "ORAOutput", "ORAState", "ReplyError", "ToolCall", "act",
    "answer", "build_ora_graph", "chat_model_from_spec", "format_trace", "observe", "ora_state_graph", "reason",
    "route_after_observe", "route_after_reason", "split_options", "trajectory",
]
