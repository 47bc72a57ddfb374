"""What ``memtools check`` reports: ``Problem`` (one thing wrong, and whether repair can derive it
again) and ``Report`` (every part's state and the problems). Its own module so that the checks of
each part (``integrity``, ``keyframe_check``) share it without importing each other."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger("memtools.store.integrity.checker")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a memory. ``repairable``: ``memtools repair`` can derive it again."""

    part: str  # manifest | graph | vectors | entities | keyframes | navigation | frames | videos | files
    text: str
    repairable: bool
    video_id: str = ""
    restore: str = ""  # for what repair cannot derive: how the user gets it back
    index_only: bool = False  # only a table's indexes are lost: repair builds them again, rows stay


@dataclass
class Report:
    """What ``check`` found: one line per part, then the problems with their fix."""

    path: Path
    problems: list[Problem] = field(default_factory=list)
    parts: dict[str, str] = field(default_factory=dict)
    pending: str = ""  # what a killed writer left for the next writer to finish (nothing was compared)

    @property
    def ok(self) -> bool:
        return not self.problems and not self.pending

    def render(self) -> str:
        lines = [f"Memory {self.path}"]
        if self.pending:
            lines.append(f"  left by a killed write: {self.pending}")
            lines.append(f"RECOVERY PENDING: a process writing here was killed mid-write; a writer must finish or undo "
                         f"that write before the parts can be compared (nothing is lost): run `memtools recover "
                         f"--memory {self.path}`, then check again.")
            return "\n".join(lines)
        lines += [f"  {name:<14}{state}" for name, state in self.parts.items()]
        if self.ok:
            lines.append("OK: the manifest, the graph and the vectors agree.")
            return "\n".join(lines)
        lines.append(f"Problems ({len(self.problems)}):")
        for p in self.problems:
            how = "memtools repair rebuilds it" if p.repairable else f"cannot be rebuilt: {p.restore}"
            lines.append(f"  - [{p.part}] {p.text} ({how})")
        fixable = sum(p.repairable for p in self.problems)
        if fixable:
            lines.append(f"DAMAGED: run `memtools repair --memory {self.path}` "
                         f"(fixes {fixable} of {len(self.problems)} problem(s)).")
        else:
            lines.append("DAMAGED: nothing here can be rebuilt from the other parts; see each problem.")
        return "\n".join(lines)


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (its type when it has none), at most 300 characters."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]


def unreadable(what: str, exc: BaseException) -> str:
    """``what`` ("the vector table cannot be read"), in plain words for the user; the engine's own
    text (lance's Rust paths, kuzu's messages) goes to the debug log with its traceback."""
    log.debug("%s: %s", what, exc, exc_info=exc)
    return what
