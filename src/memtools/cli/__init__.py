"""The ``memtools`` command line. Each subcommand lives in its own module with a
``register(subparsers)`` function that adds its parser and sets ``func``.

``--memory DIR`` may come before or after the subcommand, or from ``$MEMTOOLS_MEMORY``.
Every failure a user can fix is one line on stderr (exit 1; 2 for usage errors).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import ctypes
import importlib
import logging
import os
import sys
import threading
from typing import NoReturn

from memtools.arg_types import Parser, folder_or_uri
from memtools.cli.common import MEMORY_ENV, chosen_parser, resolve_memory
from memtools.errors import MemtoolsError, ToolError

# Module names under memtools.cli, in the order ``memtools --help`` lists them.
COMMANDS = ("info", "importing", "tool", "build", "serve", "publish", "ask", "evaluate", "memdreamer", "check", "show",
            "migrate", "changes", "exporting", "retention")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("memtools")
    except PackageNotFoundError:  # pragma: no cover - a bare checkout
        return "0"


def parser() -> argparse.ArgumentParser:
    root = Parser(  # reads --video-id -ErPSunMfcs as a value, suggests near flags (arg_types.py)
        prog="memtools",
        description="Long-term graph memory of videos for LLM agents: build it, inspect it, serve it as tools.",
    )
    root.add_argument("-v", "--verbose", action="store_true", help="log progress details to stderr")
    root.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    root.add_argument("--memory", "-m", type=folder_or_uri, default=None, metavar="DIR",
                      help=f"memory folder, for any command (or after it); default ${MEMORY_ENV}")
    sub = root.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"memtools.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"memtools.cli.{name}":
                continue
            raise
        module.register(sub)
    _describe(sub)
    return root


def _describe(sub: argparse._SubParsersAction) -> None:
    """Every subcommand's ``--help`` opens with a description (its one-line help when it has none)."""
    helps = {action.dest: action.help for action in sub._choices_actions}  # noqa: SLF001 - argparse keeps them here
    for name, command in sub.choices.items():
        text = helps.get(name) or ""
        if not command.description and text:
            command.description = text[0].upper() + text[1:] + "."


def _fewer_malloc_arenas() -> None:
    """Cap glibc's malloc arenas at two (unless ``MALLOC_ARENA_MAX`` says otherwise). By default
    every thread may get its own 64 MiB arena; lance's and kuzu's worker threads then keep
    hundreds of MiB of fragmented free memory during a long import."""
    if sys.platform.startswith("linux") and "MALLOC_ARENA_MAX" not in os.environ:
        try:
            ctypes.CDLL("libc.so.6").mallopt(-8, 2)  # -8: M_ARENA_MAX
        except (OSError, AttributeError):  # not glibc
            pass


FAST_EXIT = frozenset({"tool"})
"""One-shot commands that read: the ``memtools`` command ends them without the interpreter's teardown."""


def main(argv: list[str] | None = None) -> int:
    """Run one ``memtools`` command line (``argv``: the arguments, default ``sys.argv[1:]``); its exit status."""
    return _main(argv)[0]


def console() -> NoReturn:
    """The ``memtools`` command. After a ``FAST_EXIT`` command the process ends as Python's own exit
    would, less the teardown of every module and object, which does nothing a caller can see and
    took ~80 ms of a cold ``memtools tool get_summary`` (0.45 s) and ~230 ms of a cold search (1.15 s)
    (benchmarks/cold_start.py): the threads Python joins at exit are joined (memtools' background
    threads are stopped with them, ``memtools.background``), every ``atexit`` hook runs (logging's
    flush, lancedb's stop of its runtime), stdout and stderr are flushed, then ``os._exit``. The
    memory is closed by then: the command's ``with`` blocks ended inside ``main``."""
    code, command = _main(None)
    shutdown = getattr(threading, "_shutdown", None)  # CPython's exit joins threads through it
    if command in FAST_EXIT and shutdown is not None:
        shutdown()
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # a closed pipe (head): nothing more to say
                stream.flush()
        os._exit(code)
    sys.exit(code)


def _main(argv: list[str] | None) -> tuple[int, str | None]:
    """``main``'s work: (exit status, the command run, if it was parsed)."""
    _fewer_malloc_arenas()
    root = parser()
    args, extras = root.parse_known_args(argv)
    return _run(root, args, extras), args.command


def _run(root: argparse.ArgumentParser, args: argparse.Namespace, extras: list[str]) -> int:
    if extras:  # as parse_args does, but from the subcommand that read them (it names the nearest flag)
        chosen_parser(root, args).error(f"unrecognized arguments: {' '.join(extras)}")
    problem = resolve_memory(args) if getattr(args, "func", None) else None
    if not problem and isinstance(getattr(args, "memory", None), str) and args.command != "serve":
        problem = (f"--memory {args.memory} is a published memory, which only `memtools serve` reads; give "
                   f"{args.command} the memory folder")
    if problem:
        print(f"memtools {args.command}: error: {problem}", file=sys.stderr)
        return 2
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
    except OSError as exc:  # a target that is a file, a missing parent, no permission, a full disk
        where = f": {exc.filename}" if exc.filename else ""
        print(f"memtools {args.command}: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"memtools {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    console()
