"""Benchmark runs of the ORA loop on LVBench-style multiple-choice files.

The question file has one JSON object per line and video::

    {"key": "<video key>", "qa": [{"uid": "...", "question": "stem\\n(A) ...\\n(B) ...",
                                   "answer": "B", "question_type": ["reasoning", ...]}, ...]}

Each question becomes a graph input of question stem, options and the video's scope, and
nothing else: the gold answer stays in the runner and is written only into the trajectory
file, after the run. (The MEMDREAMER reference runner passes the gold letter as the
"options" of every reasoner prompt; we do not.) One trajectory JSON per question makes a
run resumable: questions whose file exists are skipped and counted from their file.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memtools.agent.parsing import ReplyError, normalize_answer, split_options
from memtools.agent.state import ORAInput
from memtools.agent.trajectory import trajectory
from memtools.errors import ConfigError, ImportFormatError

log = logging.getLogger(__name__)
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class Question:
    uid: str
    video_key: str
    question: str  # the stem, options removed
    options: dict[str, str]
    gold: str
    types: tuple[str, ...] = ()

    def graph_input(self, video_id: str) -> ORAInput:
        """What the agent is given: question, options, scope. Never the gold answer."""
        return ORAInput(question=self.question, options=dict(self.options), scope=[video_id])

    def is_correct(self, answer: str | None) -> bool:
        if answer is None:
            return False
        try:
            gold = normalize_answer(self.gold, self.options)
        except ReplyError:
            gold = self.gold.strip()
        return answer.strip() == gold


def load_questions(path: str | os.PathLike) -> list[Question]:
    """Questions of an LVBench-layout JSONL file, in file order."""
    out: list[Question] = []
    seen: set[tuple[str, str]] = set()
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                key = str(row["key"])
                items = row["qa"]
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise ImportFormatError(f"{path}:{n}: expected an object with 'key' and 'qa' ({exc})") from exc
            for i, qa in enumerate(items):
                try:
                    stem, options = split_options(str(qa["question"]))
                    uid = str(qa.get("uid", f"{key}-{i}"))
                    gold = str(qa["answer"])
                except (KeyError, TypeError) as exc:
                    raise ImportFormatError(f"{path}:{n}: qa[{i}] needs 'question' and 'answer' ({exc})") from exc
                if (key, uid) in seen:
                    raise ImportFormatError(f"{path}:{n}: duplicate uid {uid!r} for video {key!r}")
                seen.add((key, uid))
                types = qa.get("question_type") or []
                types = [types] if isinstance(types, str) else [str(t) for t in types]
                out.append(Question(uid=uid, video_key=key, question=stem, options=options, gold=gold,
                                    types=tuple(types)))
    return out


def _safe(name: str) -> str:
    return _UNSAFE.sub("_", name).strip("._") or "_"


def trajectory_path(out_dir: Path, q: Question) -> Path:
    return Path(out_dir) / "trajectories" / _safe(q.video_key) / f"{_safe(q.uid)}.json"


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)


@dataclass
class EvalRun:
    """What ``run_eval`` did: per-question records (from this run and resumed files) and problems."""

    records: list[dict[str, Any]] = field(default_factory=list)
    resumed: int = 0
    errors: dict[str, str] = field(default_factory=dict)  # uid -> error; no file written, a rerun retries
    skipped: dict[str, str] = field(default_factory=dict)  # uid -> why (e.g. video not in the memory)

    def summary(self) -> dict[str, Any]:
        return summarize(self.records) | {"resumed": self.resumed, "errors": len(self.errors),
                                           "skipped": len(self.skipped)}


def summarize(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Accuracy over all evaluated questions (no answer counts as wrong) and per question type."""
    records = list(records)
    per_type: dict[str, dict[str, Any]] = {}
    for r in records:
        for t in r.get("question_type") or []:
            bucket = per_type.setdefault(t, {"n": 0, "correct": 0})
            bucket["n"] += 1
            bucket["correct"] += bool(r.get("correct"))
    for bucket in per_type.values():
        bucket["accuracy"] = bucket["correct"] / bucket["n"]
    correct = sum(bool(r.get("correct")) for r in records)
    status = [r.get("status") for r in records]
    return {"n": len(records), "correct": correct, "accuracy": correct / len(records) if records else 0.0,
            "answered": status.count("answered"), "forced": status.count("forced"),
            "no_answer": status.count("no_answer"),
            "mean_rounds": sum(r.get("rounds", 0) for r in records) / len(records) if records else 0.0,
            "per_type": dict(sorted(per_type.items()))}


def run_eval(graph: Any, questions: list[Question], out_dir: str | os.PathLike, *, video_ids: Iterable[str],
             video_map: dict[str, str] | None = None, concurrency: int = 4,
             on_done: Callable[[dict[str, Any]], None] | None = None) -> EvalRun:
    """Run every question without a trajectory file yet, ``concurrency`` at a time.

    ``video_ids`` are the memory's videos; a question's ``key`` maps to one through
    ``video_map`` (default: the same id). ``on_done`` sees each new record as it lands.
    """
    out = Path(out_dir)
    known = set(video_ids)
    video_map = video_map or {}
    run = EvalRun()
    todo: list[tuple[Question, str]] = []
    for q in questions:
        path = trajectory_path(out, q)
        if path.exists():
            run.records.append(json.loads(path.read_text(encoding="utf-8")))
            run.resumed += 1
            continue
        video_id = video_map.get(q.video_key, q.video_key)
        if video_id not in known:
            run.skipped[q.uid] = f"video {video_id!r} is not in the memory"
            continue
        todo.append((q, video_id))

    def one(q: Question, video_id: str) -> dict[str, Any]:
        started = time.monotonic()
        state = graph.invoke(q.graph_input(video_id))
        record = {"uid": q.uid, "video_key": q.video_key, "video_id": video_id,
                  "question_type": list(q.types), **trajectory(state),
                  "elapsed_s": round(time.monotonic() - started, 3)}
        record["gold"] = q.gold  # recorded after the run, for scoring only
        record["correct"] = q.is_correct(state.get("answer"))
        _write_json(trajectory_path(out, q), record)
        return record

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        futures = {pool.submit(one, q, v): q for q, v in todo}
        for future in as_completed(futures):
            q = futures[future]
            try:
                record = future.result()
            except ConfigError:  # the model cannot be used at all: every other question would fail the same way
                pool.shutdown(wait=True, cancel_futures=True)
                raise
            except Exception as exc:  # one failed question must not sink the run; a rerun retries it
                log.warning("question %s failed: %s", q.uid, exc)
                run.errors[q.uid] = f"{type(exc).__name__}: {exc}"
                continue
            run.records.append(record)
            if on_done:
                on_done(record)
    order: dict[tuple[Any, Any], int] = {(q.video_key, q.uid): i for i, q in enumerate(questions)}
    run.records.sort(key=lambda r: order.get((r.get("video_key"), r.get("uid")), len(order)))
    _write_json(out / "summary.json", {**run.summary(), "errors_by_uid": run.errors, "skipped_by_uid": run.skipped})
    return run
