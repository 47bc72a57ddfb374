"""Speech recognisers behind one small protocol (``Recognizer``), one module per backend.

    from memtools.speech import make_recognizer
    recognizer = make_recognizer("local")                       # faster-whisper tiny.en, offline
    recognizer = make_recognizer("openai", model="whisper-1", base_url="http://localhost:8000/v1")
    recognizer = make_recognizer("subtitles", path="talk.srt")

Backends: ``WhisperRecognizer`` (local faster-whisper, ``memtools[speech]``),
``OpenAIRecognizer`` (any ``/audio/transcriptions`` server), ``SubtitleRecognizer`` (SRT /
WebVTT cues) and ``FunctionRecognizer`` (tests, custom code).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memtools.errors import ConfigError

if TYPE_CHECKING:  # at run time these come from __getattr__: the base pulls in the audio readers (cv2)
    from memtools.speech.base import FunctionRecognizer, Recognizer, Utterance, Word, render_transcript

BACKENDS = ("local", "openai", "subtitles")


def make_recognizer(backend: str, **options: Any) -> Recognizer:
    """A recogniser by backend name; ``options`` go to its constructor."""
    if backend == "local":
        from memtools.speech.whisper import WhisperRecognizer

        return WhisperRecognizer(**options)
    if backend == "openai":
        from memtools.speech.openai import OpenAIRecognizer

        return OpenAIRecognizer(**options)
    if backend == "subtitles":
        from memtools.speech.subtitles import SubtitleRecognizer

        return SubtitleRecognizer(**options)
    raise ConfigError(f"unknown speech backend {backend!r}; choose one of {', '.join(BACKENDS)}")


def __getattr__(name: str):  # the backends import their dependencies only when asked for
    if name in ("FunctionRecognizer", "Recognizer", "Utterance", "Word", "render_transcript"):
        from memtools.speech import base

        return getattr(base, name)
    if name == "WhisperRecognizer":
        from memtools.speech.whisper import WhisperRecognizer

        return WhisperRecognizer
    if name == "OpenAIRecognizer":
        from memtools.speech.openai import OpenAIRecognizer

        return OpenAIRecognizer
    if name == "SubtitleRecognizer":
        from memtools.speech.subtitles import SubtitleRecognizer

        return SubtitleRecognizer
    raise AttributeError(name)


__all__ = ["BACKENDS", "FunctionRecognizer", "OpenAIRecognizer", "Recognizer", "SubtitleRecognizer", "Utterance",
           "WhisperRecognizer", "Word", "make_recognizer", "render_transcript"]
