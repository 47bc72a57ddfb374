"""The retention policy applied by a running server (``memtools serve`` on a memory folder): once at start, then
once a day (``memtools.changes.retention``).

A daemon thread reads the policy each time (``retention.json``, else the ``--config`` file's ``retention_days``;
set or changed while the server runs, it is followed from the next run), applies it under the writers' lock
like every write, as the ``mcp`` front end's "retention policy", and says what it purged on stderr. A run that
fails (the memory busy for a long write, a damaged policy file) is said on stderr and tried again an hour later.
A memory folder this process may not write is left alone.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from typing import TYPE_CHECKING

from memtools.errors import MemtoolsError

if TYPE_CHECKING:
    from memtools.changes.retention import Outcome
    from memtools.store import Memory

log = logging.getLogger(__name__)

DAY = 24 * 3600.0
RETRY = 3600.0
WHO = "retention policy"


class DailyRetention:
    """Applies the memory's retention policy every ``every`` seconds, the first time at once (``start``)."""

    def __init__(self, memory: Memory, config_file: str | os.PathLike | None = None, *, every: float = DAY,
                 retry: float = RETRY) -> None:
        self.memory = memory
        self.config_file = config_file
        self.every = every
        self.retry = retry
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> DailyRetention:
        if os.access(self.memory.path, os.W_OK):
            self._thread = threading.Thread(target=self._loop, name="memtools-retention", daemon=True)
            self._thread.start()
        return self

    def close(self) -> None:
        """Stop; a run under way ends first (a purge is never left to a closed memory)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _loop(self) -> None:
        wait = 0.0
        while not self._stop.wait(wait):
            wait = self.every if self.run_once() is not None else self.retry

    def run_once(self) -> Outcome | None:
        """Apply the policy now; what it did, or None when it failed (said on stderr)."""
        from memtools.changes.purge_steps import PURGES_DIR
        from memtools.changes.retention import apply
        from memtools.tools.caller import Caller, acting_as

        try:
            with acting_as(Caller("mcp", WHO, may_write=True)):
                outcome = apply(self.memory, config_file=self.config_file)
        except MemtoolsError as exc:
            _say(f"could not apply the retention policy of {self.memory.path} ({exc}); trying again in "
                 f"{self.retry / 3600:g} h")
            return None
        except Exception:  # noqa: BLE001 - the thread must outlive anything one run meets
            log.exception("the retention policy of %s failed; trying again in %g h", self.memory.path,
                          self.retry / 3600)
            return None
        if outcome.receipt is not None:
            receipt = outcome.receipt
            _say(f"purged {len(outcome.due)} video(s) older than {outcome.policy.keep_days} day(s) from "
                 f"{self.memory.path}: {', '.join(d.video_id for d in outcome.due)} (change {receipt['change_id']}; "
                 f"receipt {self.memory.path / PURGES_DIR / (receipt['change_id'] + '.json')})")
        if outcome.reads_dropped:
            _say(f"dropped {outcome.reads_dropped} line(s) older than {outcome.policy.keep_days} day(s) from the "
                 f"reads audit log of {self.memory.path}")
        return outcome


def _say(text: str) -> None:
    print(f"memtools retention: {text}", file=sys.stderr, flush=True)


__all__ = ["DAY", "DailyRetention"]
