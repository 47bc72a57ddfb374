"""``memtools tool NAME --memory DIR --arg value ...``: call any tool from the shell.

Arguments go through ``ToolSpec.parse`` / ``ToolSpec.invoke`` like every other front end, so
errors read the same (with flags spelled ``--top-k``): bad arguments exit 2 before the memory is
opened, model-facing tool errors (unknown id, busy memory) exit 1.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import threading
from pathlib import Path
from typing import get_type_hints

from memtools import background
from memtools.cli.common import accept_signed_numbers, add_memory_arg, open_memory
from memtools.errors import ToolError
from memtools.rerank.arguments import RERANKED_TOOLS, add_reranker_arg
from memtools.store.tables.lance_import import import_lancedb
from memtools.tools import TOOL_SPECS, Frames, MemoryTools, ToolSpec
from memtools.tools.invoke import is_list_field

# Tools that read the lance tables. ``import lancedb`` is most of a cold search (~0.6 s of ~1.2 s,
# benchmarks/cold_start.py); it starts on a thread at once, so it overlaps opening the memory,
# loading the query embedder, embedding the query and opening the graph. Coarse-to-fine search
# also scores the video roots' words with bm25s (~0.15 s to import, scipy included).
VECTOR_TOOLS = frozenset({"search_nodes", "search_graph", "search_entities", "search_frames"})
WORD_TOOLS = frozenset({"search_nodes", "search_graph"})


def _prefetch(modules: tuple[str, ...]) -> threading.Thread | None:
    def run() -> None:
        for name in modules:
            try:
                if name == "lancedb":
                    import_lancedb()  # lancedb without its REST client's import cost
                else:
                    importlib.import_module(name)
            except Exception:  # noqa: BLE001 - the real import reports it
                pass

    return background.start(run, name="memtools-import-lancedb")


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def returns_frames(spec: ToolSpec) -> bool:
    """Whether a tool answers with frames (images), which ``--save-frames`` can write out."""
    result = get_type_hints(spec.method).get("return")
    return isinstance(result, type) and issubclass(result, Frames)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tool", help="call one tool and print its result",
                       description="Call a memory tool from the shell. "
                                   "`memtools tool NAME --help` lists its arguments.")
    add_memory_arg(p)
    tools = p.add_subparsers(dest="tool", metavar="NAME", required=True)
    for spec in TOOL_SPECS.values():
        tp = tools.add_parser(spec.name, help=spec.description.split(". ")[0], description=spec.description)
        accept_signed_numbers(tp)
        add_memory_arg(tp)
        tp.add_argument("--json", action="store_true", help="print the structured result as JSON")
        if spec.name in RERANKED_TOOLS:
            add_reranker_arg(tp)
        if returns_frames(spec):
            tp.add_argument("--save-frames", type=Path, metavar="DIR", help="write the frames as JPEG files here")
        for name, field in spec.args.model_fields.items():
            kwargs: dict = {"dest": name, "help": field.description, "metavar": name.upper()}
            if is_list_field(field.annotation):
                kwargs["nargs"] = "+"
            kwargs["required"] = field.is_required()
            tp.add_argument(flag(name), **kwargs)
        tp.set_defaults(func=run, spec=spec)


def run(args: argparse.Namespace) -> int:
    spec = args.spec
    raw = {name: getattr(args, name) for name in spec.args.model_fields if getattr(args, name) is not None}
    try:
        arguments = spec.parse(raw, strict=False, name_of=flag)  # shell values are strings: parsed, not strict
    except ToolError as exc:
        print(f"memtools tool {spec.name}: error: {exc}", file=sys.stderr)
        return 2
    prefetch = (_prefetch(("lancedb", *(("bm25s", "Stemmer") if spec.name in WORD_TOOLS else ())))
                if spec.name in VECTOR_TOOLS else None)
    try:
        with open_memory(args.memory) as memory:
            outcome = spec.invoke(MemoryTools(memory), arguments)
    finally:
        if prefetch is not None:
            prefetch.join()  # never leave an import half done at exit
    if not outcome.ok:
        print(f"memtools tool {spec.name}: error: {outcome.message}", file=sys.stderr)
        return 1
    result = outcome.result
    print(result.model_dump_json(indent=2) if args.json else outcome.text)
    if isinstance(result, Frames) and getattr(args, "save_frames", None):
        args.save_frames.mkdir(parents=True, exist_ok=True)
        for frame, image in zip(result.frames, result.images, strict=True):
            (args.save_frames / f"{result.video_id}_{frame.t:09.2f}.jpg").write_bytes(image)
    return 0
