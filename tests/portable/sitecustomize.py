"""Loaded at start-up by a child process whose PYTHONPATH starts here (tests/test_portable.py).

memtools must import and work where the POSIX-only modules below do not exist (Windows). They do
exist here, and other libraries may already have imported them, so the check is on the importer:
an ``import`` of one of them written in a memtools module raises ImportError, as it would on
Windows. The libraries memtools uses take their own Windows branches there; here they keep theirs.
"""

import builtins

POSIX_ONLY = frozenset({"fcntl", "resource", "termios", "pwd", "grp", "posix", "pty", "tty", "crypt", "syslog"})
_real_import = builtins.__import__


def _import(name, globals=None, locals=None, fromlist=(), level=0):
    importer = (globals or {}).get("__name__") or ""
    if level == 0 and name.partition(".")[0] in POSIX_ONLY and importer.partition(".")[0] == "memtools":
        raise ImportError(f"No module named {name!r} ({importer} imports a POSIX-only module)")
    return _real_import(name, globals, locals, fromlist, level)


builtins.__import__ = _import
