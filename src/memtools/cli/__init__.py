"""The ``memtools`` command line. Each subcommand lives in its own module with a
``register(subparsers)`` function that adds its parser and sets ``func``."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from memtools.errors import MemtoolsError, ToolError

# Module names under memtools.cli, in the order ``memtools --help`` lists them.
COMMANDS = ("info", "importing", "tool", "build", "serve", "ask", "evaluate", "memdreamer", "show")


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(
        prog="memtools",
        description="Long-term graph memory of videos for LLM agents: build it, inspect it, serve it as tools.",
    )
    root.add_argument("-v", "--verbose", action="store_true", help="log progress details to stderr")
    sub = root.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"memtools.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"memtools.cli.{name}":
                continue
            raise
        module.register(sub)
    return root


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    if not getattr(args, "func", None):
        parser().print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except (MemtoolsError, ToolError) as exc:
        print(f"memtools {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # output piped into head & co.
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print(f"memtools {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
