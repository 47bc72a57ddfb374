"""Bulk import: many videos per write, embeddings shared across batches, resumable after a kill.

``bulk_write`` writes video graphs (a list, or a stream that keeps memory bounded) into a memory:

* many videos per atomic step (``Memory.write_videos``: one kuzu transaction and one lance
  append per batch, indexes folded in once per batch rather than once per video);
* every distinct text of a batch is embedded once, in large length-sorted calls (captions repeat
  across a video's micro-event, macro summary and super description). No vectors are kept from
  one batch to the next: texts that repeat across videos are rare (30 of 24,125 in ActivityNet's
  val_1), and such a cache held ~100 MiB of a 50 MB import's peak (docs/scaling.md, tenth round);
* resumable: an import keeps a ledger ``work/.imports/<key>.jsonl`` of the videos it has
  landed (``key`` names the source files and settings). A killed import leaves that ledger;
  running the same import again skips the videos it lists — each landed in one atomic step,
  so it is complete — and writes the rest. A finished import deletes its ledger, so the
  next run of the same command replaces the videos again (the usual re-import semantics).
* one run at a time: a run holds ``work/.import-turns/<key>.lock`` (``import_turn``). The same import started while
  another run of it is going (a closed terminal, an overlapping cron job, a retried tool call) says
  so and waits; when the other run finished meanwhile (``<key>.finished`` is newer than the wait),
  it joins that result and writes nothing; when the other run died, it resumes from the ledger.
* progress: a tqdm bar with videos/s and captions/s (micro-events), on stderr.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence, Sized
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from memtools.costs import Tally, record
from memtools.schema import VideoGraph
from memtools.store import Memory
from memtools.store.faults import fault_point
from memtools.store.file_lock import lock_waiting, unlock
from memtools.store.tables import lance_fold
from memtools.store.writes.batch import INDEX_EVERY_NODES

LEDGER_DIR = ".imports"
TURNS_DIR = ".import-turns"  # one lock file per import (never removed: a waiter may hold it open) and its last result


def import_key(sources: Iterable[str | os.PathLike], **settings: object) -> str:
    """A stable name for one import: its source files (path, size, mtime) and its settings."""
    parts = []
    for source in sources:
        path = Path(source).resolve()
        stat = path.stat() if path.exists() else None
        parts.append([str(path), stat.st_size if stat else None, stat.st_mtime_ns if stat else None])
    blob = json.dumps([parts, sorted((k, str(v)) for k, v in settings.items())])
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


class ImportLedger:
    """The videos an unfinished import has landed (one JSON line per written batch)."""

    def __init__(self, memory: Memory, key: str) -> None:
        self.path = memory.path / "work" / LEDGER_DIR / f"{key}.jsonl"

    def landed(self) -> set[str]:
        if not self.path.is_file():
            return set()
        done: set[str] = set()
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                done.update(json.loads(line))
            except ValueError:
                continue  # a line cut short by a kill: those videos are simply written again
        return done

    def start(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.touch()

    def add(self, video_ids: Sequence[str]) -> None:
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(list(video_ids)) + "\n")
            out.flush()
            os.fsync(out.fileno())

    def finish(self) -> None:
        self.path.unlink(missing_ok=True)
        try:
            self.path.parent.rmdir()
        except OSError:
            pass  # other imports are still unfinished


@dataclass
class Turn:
    """An import's turn to write: ``joined`` is the record of a run of the same import that finished
    while this one waited (this run then has nothing left to write), else None."""

    waited: float
    joined: dict | None = None


@contextmanager
def import_turn(memory: Memory, key: str, *, say: Callable[[str], None] | None = None,
                poll: float = 0.2) -> Iterator[Turn]:
    """Hold the turn of import ``key`` on ``memory`` for the block: one run of an import at a time.
    A run that finds another holding it calls ``say`` once and waits (interrupt it to stop waiting)."""
    folder = memory.path / "work" / TURNS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    lock_path, finished = folder / f"{key}.lock", folder / f"{key}.finished"
    started = time.time()
    with open(lock_path, "a+", encoding="utf-8") as handle:
        waited = lock_waiting(handle, None if say is None else lambda: say(
            f"another run of this same import is writing to {memory.path} ({_holder(lock_path)}); waiting for it "
            "to finish (interrupt to stop waiting: nothing is lost)"), poll)
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(json.dumps({"pid": os.getpid(), "since": time.time()}))
            handle.flush()
            turn = Turn(waited=time.time() - started if waited else 0.0)
            if waited:
                record = _read_json(finished)
                if record is not None and float(record.get("at", 0)) >= started:
                    turn.joined = record
            if turn.joined is None:
                finished.unlink(missing_ok=True)  # an earlier run's: this run's result will be its own
            yield turn
        finally:
            unlock(handle)


def finished_turn(memory: Memory, key: str, written: int) -> None:
    """Record that import ``key`` finished, for a run of it that waited meanwhile (``import_turn``)."""
    folder = memory.path / "work" / TURNS_DIR
    if folder.is_dir():
        (folder / f"{key}.finished").write_text(json.dumps({"at": time.time(), "written": written,
                                                            "pid": os.getpid()}))


def _holder(lock_path: Path) -> str:
    record = _read_json(lock_path) or {}
    since = record.get("since")
    started = time.strftime("%H:%M:%S", time.localtime(float(since))) if isinstance(since, (int, float)) else "?"
    return f"process {record.get('pid', '?')}, started {started}"


def _read_json(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


@dataclass
class BulkResult:
    written: int
    skipped: int  # landed by an earlier, killed run of the same import
    seconds: float


def bulk_write(memory: Memory, graphs: Iterable[VideoGraph], *, key: str | None = None, batch_size: int = 200,
               show_progress: bool = True, stream: TextIO | None = None, total: int | None = None,
               on_batch: Callable[[Sequence[VideoGraph]], None] | None = None) -> BulkResult:
    """Write ``graphs`` (any iterable: a stream keeps memory bounded) ``batch_size`` videos per atomic
    step; with ``key``, skip the videos a killed run of the same import had landed. ``total`` (videos)
    sizes the progress bar when ``graphs`` has no length."""
    start = time.monotonic()
    ledger = ImportLedger(memory, key) if key else None
    landed = ledger.landed() if ledger else set()
    if ledger:
        ledger.start()
    if total is None and isinstance(graphs, Sized):
        total = len(graphs)
    bar = _bar(total, show_progress, stream or sys.stderr)
    counts = {"written": 0, "skipped": 0, "captions": 0}
    before = _embedding_usage(memory)

    pending = {"nodes": 0, "indexed": False, "folds": 0}

    def flush(batch: list[VideoGraph]) -> None:
        # the first batch builds the indexes; new rows are folded in once ANN_MIN_ROWS nodes are written,
        # then every INDEX_EVERY_NODES and at the end. The vector index is trained at the first fold past
        # ANN_MIN_ROWS rows and later folds add to it: the earlier that fold, the fewer rows the
        # training assigns and shuffles (its memory follows them; docs/scaling.md, ninth round)
        memory.write_videos(batch, batch_size=len(batch), index=not pending["indexed"])
        pending["indexed"] = True
        pending["nodes"] += sum(len(g.entities) + len(g.events) + len(g.ocr) + len(g.macros) for g in batch)
        if pending["nodes"] >= (INDEX_EVERY_NODES if pending["folds"] else lance_fold.ANN_MIN_ROWS):
            done = counts["written"] + counts["skipped"] + len(batch)
            memory.finish_indexes(release=True, share_written=done / total if total else None)
            pending["nodes"] = 0
            pending["folds"] += 1
        fault_point("batch-landed")
        if ledger:
            ledger.add([g.video_id for g in batch])
            fault_point("ledger-added")
        if on_batch is not None:
            on_batch(batch)
        counts["written"] += len(batch)
        counts["captions"] += sum(len(g.events) for g in batch)
        if bar is not None:
            elapsed = max(time.monotonic() - start, 1e-9)
            bar.set_postfix_str(f"{counts['captions'] / elapsed:.0f} captions/s", refresh=False)
            bar.update(len(batch))

    try:
        batch: list[VideoGraph] = []
        for graph in graphs:
            if graph.video_id in landed:
                counts["skipped"] += 1
                if bar is not None:
                    bar.update(1)
                continue
            batch.append(graph)
            if len(batch) >= max(1, batch_size):
                flush(batch)
                batch = []
        if batch:
            flush(batch)
        if pending["nodes"]:
            memory.finish_indexes(release=True)
    finally:
        if bar is not None:
            bar.close()
    if ledger:
        ledger.finish()
    _record_embedding_usage(memory, before)
    return BulkResult(written=counts["written"], skipped=counts["skipped"], seconds=time.monotonic() - start)


def _embedding_usage(memory: Memory) -> Tally | None:
    """The embedder's token tally when it is a paid API (``OpenAIEmbedder.usage``), else None."""
    usage = getattr(memory.embedder, "usage", None)
    return Tally(usage.calls, usage.tokens_in, usage.tokens_out, usage.estimated) if isinstance(usage, Tally) else None


def _record_embedding_usage(memory: Memory, before: Tally | None) -> None:
    after = _embedding_usage(memory)
    if after is None or after.calls == (before.calls if before else 0):
        return
    spent_in = after.tokens_in - (before.tokens_in if before else 0)
    record(memory.path, "embed", memory.embedder.name, None if after.estimated else {"prompt_tokens": spent_in},
           prompt_text="x" * (spent_in * 4))


def _bar(total: int | None, show: bool, stream: TextIO):
    if not show:
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="video", desc="importing", file=stream, mininterval=1.0, dynamic_ncols=True)
