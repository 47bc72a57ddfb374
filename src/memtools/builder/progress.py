"""Build progress: the pipeline updates a ``Progress``; a sink shows it.

``TextProgress`` writes to stderr: on a terminal a tqdm bar per video (stages, model calls,
tokens, elapsed and remaining time), in a log (CI) plain lines drawn by tqdm's meter, at most
one every ``interval`` seconds plus one per stage change, so logs stay readable. Pass
``NullProgress()`` (the default of the Python API) for silence, or
any object with ``show(snapshot)`` and ``close()``.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any, Protocol, TextIO

from memtools.builder.cancel import safe_point
from memtools.costs import PriceTable, Tally

STAGES = ("speech", "speakers", "keyframes", "segment", "extract", "aggregate", "index")


@dataclass
class StageCount:
    done: int = 0
    total: int | None = None
    started: float = field(default_factory=time.monotonic)
    finished: bool = False
    counted_from: int = 0  # the steps done before ``started`` (``Progress.advance(one_off=True)``)


@dataclass(frozen=True)
class Snapshot:
    video_id: str
    video_index: int
    video_count: int
    stages: dict[str, tuple[int, int | None, bool]]
    calls: int
    cached_calls: int
    tokens: int
    eta: float | None
    elapsed: float
    changed_stage: bool
    run_input_tokens: int = 0   # this run so far, every video (``tokens`` is the current video's)
    run_output_tokens: int = 0


class ProgressSink(Protocol):
    def show(self, snapshot: Snapshot) -> None: ...

    def close(self) -> None: ...


class NullProgress:
    def show(self, snapshot: Snapshot) -> None:
        pass

    def close(self) -> None:
        pass


class Progress:
    """Counters of one build run, pushed to a sink after each change."""

    def __init__(self, sink: ProgressSink | None = None, video_count: int = 1) -> None:
        self.sink = sink or NullProgress()
        self.video_count = video_count
        self.video_index = 0
        self.video_id = ""
        self.stages: dict[str, StageCount] = {}
        self.usage = None  # a report.Usage, set per video
        self._started = time.monotonic()
        self._earlier = (0, 0)  # input / output tokens of the run's earlier videos

    def start_video(self, video_id: str, index: int, usage) -> None:
        if self.usage is not None and self.usage is not usage:
            self._earlier = (self._earlier[0] + self.usage.input_tokens, self._earlier[1] + self.usage.output_tokens)
        self.video_id, self.video_index, self.usage = video_id, index, usage
        self.stages = {}
        self._started = time.monotonic()

    def begin(self, stage: str, total: int | None = None) -> None:
        safe_point(stage)  # a cancelled build stops here (memtools.builder.cancel)
        self.stages[stage] = StageCount(total=total)
        self._push(changed=True)

    def add_total(self, stage: str, n: int) -> None:
        count = self.stages.setdefault(stage, StageCount(total=0))
        count.total = (count.total or 0) + n
        self._push()

    def advance(self, stage: str, n: int = 1, *, one_off: bool = False) -> None:
        """``n`` more steps done. ``one_off``: they took a one-off time (the first call also loaded a
        model), so the time left is measured from the steps after them."""
        safe_point(stage)
        count = self.stages.setdefault(stage, StageCount())
        count.done += n
        if one_off:
            count.started, count.counted_from = time.monotonic(), count.done
        self._push()

    def finish(self, stage: str) -> None:
        count = self.stages.setdefault(stage, StageCount())
        count.finished = True
        if count.total is not None:
            count.done = count.total
        self._push(changed=True)

    def refresh(self) -> None:
        self._push()

    def close(self) -> None:
        self.sink.close()

    def _eta(self) -> float | None:
        """Seconds left in the slowest unfinished stage with a known total."""
        now = time.monotonic()
        best = None
        for count in self.stages.values():
            measured = count.done - count.counted_from
            if count.finished or not count.total or measured <= 0 or count.done >= count.total:
                continue
            rate = (now - count.started) / measured
            left = rate * (count.total - count.done)
            best = left if best is None else max(best, left)
        return best

    def _push(self, changed: bool = False) -> None:
        usage = self.usage
        self.sink.show(Snapshot(
            video_id=self.video_id, video_index=self.video_index, video_count=self.video_count,
            stages={name: (c.done, c.total, c.finished) for name, c in self.stages.items()},
            calls=getattr(usage, "calls", 0), cached_calls=getattr(usage, "cached_calls", 0),
            tokens=getattr(usage, "tokens", 0), eta=self._eta(), elapsed=time.monotonic() - self._started,
            changed_stage=changed, run_input_tokens=self._earlier[0] + getattr(usage, "input_tokens", 0),
            run_output_tokens=self._earlier[1] + getattr(usage, "output_tokens", 0),
        ))


def clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def _tokens(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def _stages(s: Snapshot, money: str = "") -> str:
    parts = []
    for name in STAGES:
        if name not in s.stages:
            continue
        done, total, finished = s.stages[name]
        if finished:
            parts.append(f"{name} done")
        elif total is None:
            parts.append(f"{name}…")
        else:
            parts.append(f"{name} {done}/{total}")
    line = " | ".join(parts) + f" | {s.calls} model calls"
    if s.cached_calls:
        line += f" (+{s.cached_calls} reused)"
    return line + f", {_tokens(s.tokens)} tokens" + money


def _prefix(s: Snapshot) -> str:
    return f"[{s.video_index + 1}/{s.video_count} {s.video_id}]"


def _counted(s: Snapshot) -> tuple[int, int | None]:
    """Steps done and known in total, over the stages that have a total."""
    known = [(done, total) for done, total, _ in s.stages.values() if total]
    if not known:
        return 0, None
    return sum(min(d, t) for d, t in known), sum(t for _, t in known)


def render(s: Snapshot, money: str = "") -> str:
    """One progress line, drawn by tqdm's meter: the video, stages, calls, tokens (and the run's
    cost so far, ``money``), time and ETA."""
    from tqdm import tqdm

    done, total = _counted(s)
    line = tqdm.format_meter(done, total or 0, s.elapsed, prefix=f"{_prefix(s)} {_stages(s, money)}",
                             bar_format="{desc} | {elapsed}")
    return line if s.eta is None else f"{line}, ETA {clock(s.eta)}"


class TextProgress:
    """Progress on a text stream: a tqdm bar on a terminal, throttled plain lines otherwise."""

    def __init__(self, stream: TextIO | None = None, *, interval: float = 5.0, tty: bool | None = None,
                 prices: PriceTable | None = None, model: str = "") -> None:
        """``prices`` and ``model``: with a price for the model, every line ends with the run's
        running cost (``, $0.0123 so far``)."""
        self.stream = stream or sys.stderr
        self.prices, self.model = prices, model
        self.tty = self.stream.isatty() if tty is None else tty
        self.interval = 0.1 if self.tty else interval
        self._last = -float("inf")
        self._last_line = ""
        self._bar: Any = None  # the tqdm bar of the video in progress (terminal only)
        self._video: tuple[int, str] | None = None

    def show(self, snapshot: Snapshot) -> None:
        if self.tty:
            self._show_bar(snapshot)
            return
        now = time.monotonic()
        if not snapshot.changed_stage and now - self._last < self.interval:
            return
        line = render(snapshot, self._money(snapshot))
        if line == self._last_line:
            return
        self._last, self._last_line = now, line
        self.stream.write(line + "\n")
        self.stream.flush()

    def _show_bar(self, s: Snapshot) -> None:
        from tqdm import tqdm

        key = (s.video_index, s.video_id)
        if self._bar is None or key != self._video:
            self.close()
            self._video = key
            self._bar = tqdm(total=None, desc=_prefix(s), file=self.stream, unit="step", leave=True,
                             mininterval=self.interval, dynamic_ncols=True,
                             bar_format="{desc} |{bar:20}| {elapsed}<{remaining}")
        done, total = _counted(s)
        bar = self._bar
        bar.total, bar.n = total, done
        bar.set_description_str(f"{_prefix(s)} {_stages(s, self._money(s))}", refresh=False)
        if s.changed_stage:
            bar.refresh()
        else:
            bar.update(0)  # tqdm redraws at most every ``interval`` seconds

    def _money(self, s: Snapshot) -> str:
        if self.prices is None:
            return ""
        cost = self.prices.cost(self.model, Tally(tokens_in=s.run_input_tokens, tokens_out=s.run_output_tokens))
        return "" if cost is None else f", ${cost:.4f} so far"

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
