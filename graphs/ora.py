"""The memtools ORA graph for ``langgraph dev`` (see langgraph.json next to this file).

Run `langgraph dev --config graphs/langgraph.json` (needs `pip install "langgraph-cli[inmem]"`)
with these environment variables exported (or add `"env": "../.env"` to langgraph.json):
MEMTOOLS_MEMORY (memory folder), MEMTOOLS_MODEL (e.g. ``openai:gpt-4o-mini``) and optionally
MEMTOOLS_BASE_URL, MEMTOOLS_API_KEY_ENV, MEMTOOLS_MAX_ROUNDS. Importing this module reads
nothing; the graph is built when the server first asks for it.
"""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from memtools.agent.deploy import graph_from_env


def make_graph(config: RunnableConfig | None = None):
    """Graph factory for LangGraph Server: the compiled ORA graph, built once per configuration."""
    return graph_from_env()


def __getattr__(name: str):
    if name == "graph":  # `graphs/ora.py:graph` works too, built on first access
        return graph_from_env()
    raise AttributeError(name)
