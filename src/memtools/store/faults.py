"""Fault injection for the crash tests (``tests/faults``): ``MEMTOOLS_FAULT_POINT=name:n`` kills
this process with SIGKILL the ``n``-th time the write path passes the point ``name`` (n defaults
to 1). The variable is read once, at import; unset (always, outside those tests) a point costs
one comparison."""

from __future__ import annotations

import os
import signal

_SPEC = os.environ.get("MEMTOOLS_FAULT_POINT")
_NAME, _, _NTH = (_SPEC or "").partition(":")
_passed = 0


def fault_point(name: str) -> None:
    """Die here (SIGKILL, no cleanup) when ``MEMTOOLS_FAULT_POINT`` names this point and pass."""
    global _passed
    if _SPEC is None or name != _NAME:
        return
    _passed += 1
    if _passed == int(_NTH or 1):
        os.kill(os.getpid(), signal.SIGKILL)
