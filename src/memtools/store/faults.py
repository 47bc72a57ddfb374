"""Fault injection for the crash tests (``tests/faults``, ``benchmarks/crash_random.py``).

* ``MEMTOOLS_FAULT_POINT=name:n`` kills this process with SIGKILL the ``n``-th time the write
  path passes the point ``name`` (n defaults to 1).
* ``MEMTOOLS_FAULT_COMMIT=n:seconds`` kills it ``seconds`` after the ``n``-th graph COMMIT (or
  CHECKPOINT) of the process starts, from another thread, so the kill lands inside the engine's
  own commit or checkpoint, wherever it is by then (0 kills before the call enters the engine).

The variables are read once, at import; unset (always, outside those tests) a point costs one
comparison."""

from __future__ import annotations

import os
import signal
import threading

_SPEC = os.environ.get("MEMTOOLS_FAULT_POINT")
_NAME, _, _NTH = (_SPEC or "").partition(":")
_passed = 0
_COMMIT = os.environ.get("MEMTOOLS_FAULT_COMMIT")
_commits = 0


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def fault_point(name: str) -> None:
    """Die here (SIGKILL, no cleanup) when ``MEMTOOLS_FAULT_POINT`` names this point and pass."""
    global _passed
    if _SPEC is None or name != _NAME:
        return
    _passed += 1
    if _passed == int(_NTH or 1):
        _die()


def commit_starts() -> None:
    """Called as a graph COMMIT or CHECKPOINT starts: under ``MEMTOOLS_FAULT_COMMIT=n:seconds``,
    the n-th call arms a kill that many seconds later (from a timer thread)."""
    global _commits
    if _COMMIT is None:
        return
    _commits += 1
    nth, _, delay = _COMMIT.partition(":")
    if _commits != int(nth or 1):
        return
    if float(delay or 0) <= 0:
        _die()
    timer = threading.Timer(float(delay), _die)
    timer.daemon = True
    timer.start()
