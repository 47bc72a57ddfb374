"""The code blocks of README.md and docs/ that tests/test_docs_run.py runs: which blocks, their commands, what
they show, and the marks that say what is not run and why.

A block runs when it is a ```bash (sh, shell) or ```python block, or a text block written as a console
transcript (its first line starts with ``$ ``: each ``$`` line is a command, the lines up to the next one its
shown output, compared loosely by ``shown_output_problems``). An HTML comment on the line before the block's
fence changes that; the reader of the page never sees it::

    <!-- docs-run: skip (needs a hosted model) -->                    the block is not run
    <!-- docs-run: skip-line "--speech openai" (needs a hosted recogniser) -->   nor its lines holding that text
    <!-- docs-run: needs voice-weights -->                            run only where that is installed (NEEDS)
    <!-- docs-run: setup "export TOKEN=secret" -->                    a shell line (or Python) run first
    <!-- docs-run: exits 1 "memtools check" -->                       that command must end with that status

Several items may share one comment. Some commands never run anywhere (``SKIPPED_COMMANDS``: Claude Code's CLI,
installs, the test suite itself): they need no mark.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from docs_support import REPO, fenced_blocks, markdown_pages

SHELL_LANGS = {"bash", "sh", "shell", "console"}
PYTHON_LANGS = {"python", "py"}
NEEDS = {
    "voice-weights": "the voice encoder's weights (scripts/install-dev.sh installs them)",
    "faces": "the faces extra (dlib), which .ci/run installs",
    "mcp2": "mcp 2.x's Client (the dev install has mcp 1.x; scripts/test-mcp2.sh runs the MCP tests on 2.x)",
}
SKIPPED_COMMANDS = (
    (re.compile(r"^claude\b"), "needs Claude Code's CLI"),
    (re.compile(r"\bpip install\b"), "installs packages"),
    (re.compile(r"^python3? -m venv\b"), "creates and installs a virtual environment (the quickstart it ends with "
                                         "runs once per test session: tests/conftest.py)"),
    (re.compile(r"\bpython -m pytest\b"), "the test suite itself"),
    (re.compile(r"^uvx\b"), "needs uv and a built wheel (scripts/check-release.sh runs the wheel with uvx)"),
)
_DIRECTIVE = re.compile(r"<!--\s*docs-run:\s*(.*?)\s*-->")
_ITEM = re.compile(r'\s*(?:(skip)\s+\(([^)]+)\)|(skip-line)\s+"([^"]+)"\s+\(([^)]+)\)|(needs)\s+([\w-]+)'
                   r'|(setup)\s+"([^"]+)"|(exits)\s+(\d+)\s+"([^"]+)")\s*(?:;|$)')


@dataclass
class Command:
    text: str                 # one logical line (continuations joined), as the page shows it
    shown: list[str] = field(default_factory=list)  # a console transcript's output lines under it
    skipped: str = ""         # why it is not run ("" when it runs)
    status: int = 0           # the exit status it must end with


@dataclass
class Block:
    page: Path
    line: int                 # the opening fence's line
    kind: str                 # "shell", "python" or "console"
    source: str
    skip: str = ""            # why the whole block is not run
    skip_lines: list[tuple[str, str]] = field(default_factory=list)
    needs: list[str] = field(default_factory=list)
    setup: list[str] = field(default_factory=list)
    exits: list[tuple[str, int]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # marks that cannot be read

    @property
    def where(self) -> str:
        page = self.page.relative_to(REPO) if self.page.is_relative_to(REPO) else self.page
        return f"{page}:{self.line}"

    def commands(self) -> list[Command]:
        """The block's commands (shell and console; a Python block is one command), each with why it is skipped."""
        if self.kind == "python":
            return [Command(self.source, skipped=self.skip)]
        out: list[Command] = []
        if self.kind == "console":
            for line in self.source.splitlines():
                if line.startswith("$ "):
                    out.append(Command(line[2:].strip()))
                elif out and line.strip():
                    out[-1].shown.append(line.rstrip())
        else:
            pending = ""
            for line in self.source.splitlines():
                if not pending and (not line.strip() or line.lstrip().startswith("#")):
                    continue
                pending += line.rstrip()
                if pending.endswith("\\"):
                    pending = pending[:-1].rstrip() + " "
                    continue
                out.append(Command(pending.strip()))
                pending = ""
        for c in out:
            c.skipped = self.skip or next((why for text, why in self.skip_lines if text in c.text), "") or next(
                (why for rule, why in SKIPPED_COMMANDS if rule.search(_code(c.text))), "")
            c.status = next((status for text, status in self.exits if text in c.text), 0)
        return out


def _code(command: str) -> str:
    """A shell command without its trailing comment (a '#' after a space, outside quotes)."""
    quote = ""
    for i, ch in enumerate(command):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and i and command[i - 1].isspace():
            return command[:i].rstrip()
    return command


def _read_marks(block: Block, before: str) -> None:
    m = _DIRECTIVE.fullmatch(before)
    if not m:
        return
    text, at = m.group(1), 0
    while at < len(text):
        item = _ITEM.match(text, at)
        if not item or item.end() == at:
            block.problems.append(f"cannot read the docs-run mark at {text[at:].strip()!r}")
            break
        g = item.groups()
        if g[0]:
            block.skip = g[1].strip()
        elif g[2]:
            block.skip_lines.append((g[3], g[4].strip()))
        elif g[5]:
            block.needs.append(g[6])
            if g[6] not in NEEDS:
                block.problems.append(f"unknown need {g[6]!r} (known: {', '.join(NEEDS)})")
        elif g[7]:
            block.setup.append(g[8])
        else:
            block.exits.append((g[11], int(g[10])))
        at = item.end()
    for kind, text in [("skip-line", t) for t, _ in block.skip_lines] + [("exits", t) for t, _ in block.exits]:
        if text not in block.source:
            block.problems.append(f"{kind} {text!r} matches no line of the block")


def runnable_blocks(page: Path) -> list[Block]:
    """The page's blocks that run (or would, but for their marks)."""
    blocks = []
    for line, lang, source, before in fenced_blocks(page):
        first = next((ln for ln in source.splitlines() if ln.strip()), "")
        if lang in PYTHON_LANGS:
            kind = "python"
        elif lang in SHELL_LANGS and not first.startswith("$ "):
            kind = "shell"
        elif lang in SHELL_LANGS | {"", "text"} and first.startswith("$ "):
            kind = "console"
        else:
            continue
        block = Block(page, line, kind, source)
        _read_marks(block, before)
        blocks.append(block)
    return blocks


def pages_with_blocks() -> list[Path]:
    return [p for p in markdown_pages() if runnable_blocks(p)]


# --- shown output -------------------------------------------------------------------------------------------


def _pattern(shown: str) -> re.Pattern[str]:
    """A shown line as a pattern: '...' and a placeholder such as ``<the error's first line>`` stand for anything,
    a decimal number for any number (scores, seconds and sizes vary from machine to machine), runs of spaces for
    any spaces."""
    parts = []
    for piece in re.split(r"(\.\.\.|<[\w' ]+ [\w' ]+>|\d+\.\d+|\s+)", shown.strip()):
        if piece == "..." or re.fullmatch(r"<[\w' ]+ [\w' ]+>", piece):
            parts.append(".*")
        elif re.fullmatch(r"\d+\.\d+", piece):
            parts.append(r"\d+(?:\.\d+)?")
        elif piece.isspace():
            parts.append(r"\s+")
        else:
            parts.append(re.escape(piece))
    return re.compile("".join(parts))


def shown_output_problems(shown: list[str], actual: str) -> list[str]:
    """The shown lines (all but '...') the actual output lacks, in order: each must match a whole line of it,
    after the one the previous shown line matched."""
    lines = [ln.strip() for ln in actual.splitlines()]
    at, missing = 0, []
    for want in shown:
        if want.strip() in ("", "..."):
            continue
        pattern = _pattern(want)
        hit = next((i for i in range(at, len(lines)) if pattern.fullmatch(lines[i])), None)
        if hit is None:
            missing.append(want.strip())
        else:
            at = hit + 1
    return missing
