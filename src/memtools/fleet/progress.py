"""Progress of a whole fleet: videos done / in flight / failed, model calls and tokens so far.

The counts come from the driver (which submits the videos and writes their bundles); calls
and tokens come from the endpoint's slots (``memtools.fleet.limits``), which every model
request of every worker passes through, so they grow while videos are still in flight.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Protocol, TextIO

from memtools.builder.progress import clock
from memtools.fleet.limits import SlotStats


@dataclass(frozen=True)
class FleetSnapshot:
    total: int
    done: int
    skipped: int
    in_flight: int
    failed: int
    calls: int
    tokens: int
    elapsed: float

    def render(self) -> str:
        waiting = self.total - self.done - self.skipped - self.in_flight - self.failed
        line = (f"fleet: {self.done + self.skipped}/{self.total} videos done ({self.skipped} unchanged), "
                f"{self.in_flight} in flight, {waiting} waiting, {self.failed} failed | "
                f"{self.calls} model calls, {self.tokens:,} tokens | {clock(self.elapsed)}")
        return line


class FleetSink(Protocol):
    def show(self, snapshot: FleetSnapshot) -> None: ...


class TextFleetProgress:
    """One line per change of the video counts, and at most every ``interval`` seconds otherwise."""

    def __init__(self, stream: TextIO | None = None, *, interval: float = 10.0) -> None:
        self.stream = stream or sys.stderr
        self.interval = interval
        self._last = -float("inf")
        self._counts: tuple[int, ...] | None = None

    def show(self, snapshot: FleetSnapshot) -> None:
        counts = (snapshot.done, snapshot.skipped, snapshot.in_flight, snapshot.failed)
        now = time.monotonic()
        if counts == self._counts and now - self._last < self.interval:
            return
        self._counts, self._last = counts, now
        self.stream.write(snapshot.render() + "\n")
        self.stream.flush()


class FleetProgress:
    """The driver's counters; ``push`` hands a snapshot to the sink."""

    def __init__(self, total: int, sink: FleetSink | None = None) -> None:
        self.total, self.sink = total, sink
        self.done = self.skipped = self.in_flight = self.failed = 0
        self.stats = SlotStats()
        self._started = time.monotonic()

    def snapshot(self) -> FleetSnapshot:
        return FleetSnapshot(self.total, self.done, self.skipped, self.in_flight, self.failed, self.stats.calls,
                             self.stats.tokens, time.monotonic() - self._started)

    def push(self, stats: SlotStats | None = None) -> None:
        if stats is not None:
            self.stats = stats
        if self.sink is not None:
            self.sink.show(self.snapshot())
