"""``memtools ask``: answer one question over a memory with the ORA loop and show how."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from memtools.cli.common import add_memory_arg, open_memory
from memtools.errors import ConfigError
from memtools.rerank.arguments import add_reranker_arg


def add_model_args(p: argparse.ArgumentParser) -> None:
    """Options shared by ``ask`` and ``eval``: the reasoning model and the loop's budget."""
    p.add_argument("--model", required=True, metavar="SPEC",
                   help="reasoning model, e.g. openai:gpt-4o-mini (any OpenAI-compatible server with --base-url)")
    p.add_argument("--base-url", default=None, metavar="URL", help="OpenAI-compatible API root, e.g. http://localhost:8000/v1")
    p.add_argument("--api-key-env", default=None, metavar="VAR", help="environment variable with the API key "
                   "(default OPENAI_API_KEY; not needed for a local --base-url)")
    p.add_argument("--max-rounds", type=int, default=12, metavar="N", help="tool calls before an answer is forced (12)")
    p.add_argument("--top-k", type=int, default=10, metavar="K", help="search hits when the model does not say (10)")
    p.add_argument("--protocol", choices=("auto", "tools", "json"), default="auto",
                   help="native tool calling, the JSON reply protocol, or auto (tools when the model has them)")
    p.add_argument("--images", action="store_true", help="offer inspect_frames and show frames to a multimodal model")


def build_graph(args: argparse.Namespace, memory, model=None):
    """The ORA graph for parsed ``ask``/``eval`` options (``model`` overrides ``--model``)."""
    from memtools.agent import build_ora_graph, chat_model_from_spec

    if args.max_rounds < 1:
        raise ConfigError("--max-rounds must be at least 1")
    if model is None:
        model = chat_model_from_spec(args.model, base_url=args.base_url, api_key_env=args.api_key_env)
    return build_ora_graph(memory, model, max_rounds=args.max_rounds, top_k=args.top_k, protocol=args.protocol,
                           images=args.images)


def parse_option(text: str) -> tuple[str, str]:
    letter, sep, value = text.partition("=")
    letter = letter.strip().strip("()").upper()
    if not sep or len(letter) != 1 or not letter.isalpha() or not value.strip():
        raise argparse.ArgumentTypeError(f"expected LETTER=TEXT, e.g. A='a metal lid'; got {text!r}")
    return letter, value.strip()


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ask", help="answer a question over a memory with the ORA agent",
                       description="Answer a question by navigating the memory with the Observation-Reason-Action "
                                   "loop; prints the answer and a trace of the rounds.")
    add_memory_arg(p)
    p.add_argument("question", help="the question; options may be inside it as lines '(A) ...'")
    p.add_argument("--option", "-o", action="append", type=parse_option, default=[], metavar="A=TEXT",
                   help="a multiple-choice option (repeat for B, C, ...)")
    p.add_argument("--video", action="append", default=[], metavar="VIDEO_ID",
                   help="restrict the question to this video (repeatable; default: the whole memory)")
    add_model_args(p)
    add_reranker_arg(p)
    p.add_argument("--json", action="store_true", help="print the full trajectory as JSON")
    p.add_argument("--trace", type=Path, default=None, metavar="FILE.html",
                   help="also draw the run as a self-contained HTML page: each round's call, result and clue, "
                        "the nodes visited on the timeline, the answer and the ids it cites")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from memtools.agent import format_trace, split_options, trajectory
    from memtools.agent.trajectory import format_tokens

    question, options = args.question, dict(args.option)
    if not options:
        question, options = split_options(question)
    from memtools.chat_models import reaching_model

    with open_memory(args.memory) as memory:
        graph = build_graph(args, memory)
        with reaching_model(args.model, args.base_url):
            state = graph.invoke({"question": question, "options": options, "scope": list(args.video)})
        if args.trace is not None:
            from memtools.show.trace import write_trace
            from memtools.tools import MemoryTools

            print(f"Trace: {write_trace(args.trace, trajectory(state), MemoryTools(memory))}", file=sys.stderr)
    if args.json:
        json.dump(trajectory(state), sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0 if state.get("answer") is not None else 1
    print(format_trace(state))
    print(f"Tokens of this question: {format_tokens(trajectory(state)['tokens'])}")
    answer = state.get("answer")
    if answer is None:
        print("No answer: the model gave none, even when forced.", file=sys.stderr)
        return 1
    text = f" ({state['options'][answer]})" if answer in (state.get("options") or {}) else ""
    print(f"\nAnswer: {answer}{text}")
    return 0
