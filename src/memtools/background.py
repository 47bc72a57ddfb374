"""memtools' background threads, ended before the interpreter finalises.

A daemon thread still inside native code when Python shuts down takes the process down with
it: OpenCV and CTranslate2 re-take the GIL in a C++ destructor, where Python's exit of the
thread ends in ``terminate called without an active exception`` (abort, rc 134); a lance read
still in flight when lancedb's own exit hook stops its runtime crashes (SIGSEGV), or its
runtime's threads call back into a finalising interpreter (``Fatal Python error:
PyGILState_Release``). So every background thread of memtools is started here: at exit each is
asked to stop (``EXITING`` is set and its ``stop`` callback called) and joined, before any
``atexit`` hook runs (``threading._register_atexit``, what ``concurrent.futures`` uses; plain
``atexit`` where a Python lacks it). A thread still running after ``JOIN_SEC`` is left to the
interpreter, as before, rather than hanging the exit.
"""

from __future__ import annotations

import atexit
import threading
import time
from collections.abc import Callable
from typing import Any

EXITING = threading.Event()  # set as the interpreter exits: long loops check it and return
JOIN_SEC = 30.0  # at most this long in all, at exit, for the threads to end

_THREADS: dict[threading.Thread, Callable[[], None] | None] = {}
_LOCK = threading.Lock()


def start(target: Callable[..., Any], *args: Any, name: str,
          stop: Callable[[], None] | None = None) -> threading.Thread | None:
    """Run ``target(*args)`` on a daemon thread that exit stops (``stop()``, if given) and joins.
    None if the interpreter is already exiting (nothing is started then)."""
    thread = threading.Thread(target=_run, args=(target, args), name=name, daemon=True)
    with _LOCK:
        if EXITING.is_set():
            return None
        _THREADS[thread] = stop
    thread.start()
    return thread


def _run(target: Callable[..., Any], args: tuple[Any, ...]) -> None:
    try:
        target(*args)
    finally:
        with _LOCK:
            _THREADS.pop(threading.current_thread(), None)


def stop_all(timeout: float = JOIN_SEC) -> None:
    """Ask every background thread to stop and wait for them (up to ``timeout`` in all)."""
    with _LOCK:
        EXITING.set()
        running = list(_THREADS.items())
    for _, stop in running:
        if stop is not None:
            stop()
    deadline = time.monotonic() + timeout
    for thread, _ in running:
        thread.join(max(0.0, deadline - time.monotonic()))


try:  # before non-daemon threads are joined and before every atexit hook (lancedb stops its runtime in one)
    threading._register_atexit(stop_all)  # type: ignore[attr-defined]
except (AttributeError, RuntimeError):  # pragma: no cover - a Python without it
    atexit.register(stop_all)
