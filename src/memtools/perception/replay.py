"""Recorded perception: ``RecordingVLM`` writes what a real model answered, ``ReplayVLM``
serves it back, keyed by ``request_key``. Tests and the bundled sample build memories
from recordings without a model.

The file is JSON Lines, one answered request per line::

    {"key": "…", "model": "…", "text": "…", "usage": {"prompt_tokens": 812, "completion_tokens": 95},
     "finish_reason": "stop", "preview": "4 frames 0:00:00-0:00:30 | Segment this window …",
     "frames": "<sha256 of the frames>", "speech": "- [00:01:23-00:01:30] Now we are in the warehouse."}

A key recorded twice is served from its last line, so re-recording appends.

Recognised speech and replay. A build with speech quotes the transcript in its prompts, and a
local recogniser's transcript depends on the CPU: faster-whisper (CTranslate2) picks its kernels
by instruction set (``CT2_FORCE_CPU_ISA``), and the sample's narration comes out as "a yellow
car drives" on one machine and "a yellow card rhymes" on another, with utterance ends a tenth
of a second apart. A key over the whole prompt would then replay only on the CPU it was
recorded on. So the speech is no part of the key: the prompt marks it
(``PerceptionRequest.speech``), ``request_key`` hashes a placeholder in its place, the
recording keeps the speech each answer was given for, and ``ReplayVLM`` compares the two by
word error rate (jiwer, on lower-cased words without times). Small differences are what a
recogniser's numerics do and are served (and listed in ``speech_differences``); beyond
``max_wer`` of the recorded words (and more than ``SLACK_WORDS`` words) the recording was made
for other speech, and the replay refuses. This keeps replay useful for one's own recordings,
unlike a sample that ships its transcript: what is replayed is still the build a user runs.
Recordings made before the speech was left out (their keys hash the whole prompt) are still
served where the speech matches exactly.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from memtools.errors import ConfigError, PerceptionError
from memtools.perception.base import (
    VLM,
    BaseVLM,
    PerceptionRequest,
    PerceptionResponse,
    Usage,
    frames_key,
    request_key,
    request_preview,
)

log = logging.getLogger(__name__)

MAX_WER = 0.5
"""The share of the recorded speech's words that may differ before a replay refuses an answer."""
SLACK_WORDS = 3
"""Differences of up to this many words are always accepted (one short sentence can lose half its words)."""
JIWER_HINT = "comparing recognised speech with a recording needs jiwer: pip install jiwer (part of memtools[dev])"


class ReplayMiss(PerceptionError):
    """A replay was asked something its recording holds no answer for; asking again cannot help."""


@dataclass(frozen=True)
class SpeechDifference:
    """A replayed answer that was recorded for slightly different recognised speech."""

    preview: str
    wer: float
    recorded: str
    requested: str


@dataclass(frozen=True)
class _Record:
    response: PerceptionResponse
    speech: str | None
    frames: str | None
    preview: str


class ReplayVLM(BaseVLM):
    """Answers only requests recorded in ``path``; anything else raises ``ReplayMiss`` (a
    ``PerceptionError``). Recognised speech is compared, not matched: see the module docstring."""

    def __init__(self, path: str | Path, *, max_wer: float = MAX_WER) -> None:
        super().__init__()
        self.path = Path(path)
        self.max_wer = max_wer
        self.speech_differences: list[SpeechDifference] = []
        if not self.path.is_file():
            raise ConfigError(
                f"no perception recording at {self.path}; make one by building with a real model"
                f" and --record {self.path}"
            )
        self._records: dict[str, _Record] = {}
        with self.path.open(encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    self._records[record["key"]] = _Record(
                        response=PerceptionResponse(
                            text=record["text"],
                            usage=Usage(**record.get("usage", {})),
                            model=record.get("model", ""),
                            finish_reason=record.get("finish_reason"),
                        ),
                        speech=record.get("speech"),
                        frames=record.get("frames"),
                        preview=str(record.get("preview", "")),
                    )
                except (ValueError, KeyError, TypeError) as exc:
                    raise ConfigError(f"{self.path}:{number} is not a perception record: {exc}") from exc
        self._lock = threading.Lock()
        self.model_name = f"replay:{self.path.name}"

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, request: object) -> bool:
        return isinstance(request, PerceptionRequest) and self._find(request) is not None

    def _find(self, request: PerceptionRequest) -> _Record | None:
        record = self._records.get(request_key(request))
        if record is None and request.speech:  # a recording made while the key still hashed the speech
            record = self._records.get(request_key(request, with_speech=True))
        return record

    async def _complete(self, request: PerceptionRequest) -> PerceptionResponse:
        record = self._find(request)
        if record is None:
            raise ReplayMiss(self._miss(request))
        if request.speech and record.speech is not None and record.speech != request.speech:
            self._compare_speech(request, record)
        return record.response

    def _compare_speech(self, request: PerceptionRequest, record: _Record) -> None:
        assert record.speech is not None
        wer, errors, words = speech_wer(record.speech, request.speech)
        preview = request_preview(request)
        if errors > SLACK_WORDS and wer > self.max_wer:
            raise ReplayMiss(
                f"{self.path} answered this request ({preview}) for other speech: {errors} of the {words} recorded "
                f"words differ (word error rate {wer:.0%}, more than the {self.max_wer:.0%} a recogniser's numerics "
                f"explain), so the recording was made for another video's audio or another recogniser.\n"
                f"  recorded: {_excerpt(record.speech)}\n  now:      {_excerpt(request.speech)}\n"
                f"{_WHAT_TO_DO.format(path=self.path)}")
        with self._lock:
            self.speech_differences.append(SpeechDifference(preview, wer, record.speech, request.speech))
        log.info("replaying %s, recorded for slightly different speech (word error rate %.0f%%)", preview, 100 * wer)

    def _miss(self, request: PerceptionRequest) -> str:
        key = request_key(request)
        shown = frames_key(request) if request.frames else None
        same_frames = [r for r in self._records.values() if shown is not None and r.frames == shown]
        if same_frames:
            why = ("The recording answered these very frames for another prompt: the build's prompts differ from "
                   "the recorded build's (another memtools version, or other build settings such as --preset or "
                   "--config).")
        elif shown is not None and any(r.frames for r in self._records.values()):
            why = ("No recorded request shows these frames: the recording was made for another video, or with other "
                   "frame settings (--preset, --config), or the earlier answers of this build differ.")
        else:
            why = "The prompts, frames or output schema differ from the build that was recorded."
        return (f"{self.path} holds no answer for request {key[:12]} ({request_preview(request)}; asked of "
                f"{request.system!r}); it holds {len(self._records)} answers. {why}\n"
                + _WHAT_TO_DO.format(path=self.path))


_WHAT_TO_DO = (
    "A replay serves only recorded answers, so running the build again, with or without --fresh, asks the same "
    "question. What you can do: build with a real model instead of --replay (--vlm openai:MODEL, or "
    "--vlm local:MODEL), adding --record FILE to keep its answers for later replays. If {path} is the bundled "
    "sample's recording and your checkout is unchanged, this is a bug in memtools: please report it to the "
    "maintainers with this message, the memtools version (python -c 'import memtools; "
    "print(memtools.__version__)') and your CPU (lscpu).")


def speech_wer(reference: str, hypothesis: str) -> tuple[float, int, int]:
    """Word error rate of ``hypothesis`` against ``reference`` (lower-cased words; times in
    brackets and punctuation left out), the number of word errors and of reference words."""
    try:
        import jiwer
    except ImportError as exc:
        raise ConfigError(JIWER_HINT) from exc
    ref, hyp = _words(reference), _words(hypothesis)
    if not ref:
        return (0.0 if not hyp else 1.0), len(hyp), 0
    out = jiwer.process_words(" ".join(ref), " ".join(hyp) or "")
    errors = out.substitutions + out.deletions + out.insertions
    return errors / len(ref), errors, len(ref)


def _words(text: str) -> list[str]:
    return re.sub(r"[^a-z0-9' ]", " ", re.sub(r"\[[^\]]*\]", " ", text.lower())).split()


def _excerpt(speech: str, width: int = 160) -> str:
    text = " ".join(speech.split())
    return text if len(text) <= width else text[: width - 3] + "..."


class RecordingVLM(BaseVLM):
    """Calls ``inner`` and appends every answer to ``path`` (one line each, flushed at once;
    safe with concurrent calls in threads and tasks)."""

    def __init__(self, inner: VLM, path: str | Path) -> None:
        super().__init__()
        self.inner = inner
        self.path = Path(path)
        self.model_name = getattr(inner, "model_name", "") or type(inner).__name__
        self._lock = threading.Lock()

    async def _complete(self, request: PerceptionRequest) -> PerceptionResponse:
        response = await self.inner.complete(request)
        record = {
            "key": request_key(request),
            "model": response.model,
            "text": response.text,
            "usage": response.usage.model_dump(),
            "finish_reason": response.finish_reason,
            "preview": request_preview(request),
            "frames": frames_key(request),
            **({"speech": request.speech} if request.speech else {}),
        }
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as f:
                f.write(line)
                f.flush()
        return response
