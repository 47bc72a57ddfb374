"""``memtools tool NAME --memory DIR --arg value ...``: call any tool from the shell."""

from __future__ import annotations

import argparse
import sys
import typing
from pathlib import Path

from pydantic import ValidationError

from memtools.cli.common import add_memory_arg, open_memory
from memtools.tools import TOOL_SPECS, Frames, MemoryTools


def _is_list(annotation: object) -> bool:
    if typing.get_origin(annotation) is list:
        return True
    return any(_is_list(arg) for arg in typing.get_args(annotation))


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tool", help="call one tool and print its result",
                       description="Call a memory tool from the shell. `memtools tool NAME --help` lists its arguments.")
    tools = p.add_subparsers(dest="tool", metavar="NAME", required=True)
    for spec in TOOL_SPECS.values():
        tp = tools.add_parser(spec.name, help=spec.description.split(". ")[0], description=spec.description)
        add_memory_arg(tp)
        tp.add_argument("--json", action="store_true", help="print the structured result as JSON")
        if spec.name == "inspect_frames":
            tp.add_argument("--save-frames", type=Path, metavar="DIR", help="write the frames as JPEG files here")
        for name, field in spec.args.model_fields.items():
            flag = "--" + name.replace("_", "-")
            kwargs: dict = {"dest": name, "help": field.description, "metavar": name.upper()}
            if _is_list(field.annotation):
                kwargs["nargs"] = "+"
            kwargs["required"] = field.is_required()
            tp.add_argument(flag, **kwargs)
        tp.set_defaults(func=run, spec=spec)


def run(args: argparse.Namespace) -> int:
    spec = args.spec
    raw = {name: getattr(args, name) for name in spec.args.model_fields if getattr(args, name) is not None}
    try:
        arguments = spec.args.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"--{'.'.join(map(str, e['loc'])).replace('_', '-')}: {e['msg']}" for e in exc.errors())
        print(f"memtools tool {spec.name}: bad arguments: {problems}", file=sys.stderr)
        return 2
    with open_memory(args.memory) as memory:
        result = spec.call(MemoryTools(memory), arguments)
    print(result.model_dump_json(indent=2) if args.json else result.render())
    if isinstance(result, Frames) and getattr(args, "save_frames", None):
        args.save_frames.mkdir(parents=True, exist_ok=True)
        for frame, image in zip(result.frames, result.images):
            (args.save_frames / f"{result.video_id}_{frame.t:09.2f}.jpg").write_bytes(image)
    return 0
