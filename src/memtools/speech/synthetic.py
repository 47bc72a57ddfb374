"""Synthetic conversations for the diarisation tests and benchmark: espeak-ng voices taking turns.

    if espeak_available():
        audio, turns = conversation(["en-us+m3", "en-gb-x-rp+f3"], SENTENCES, gap=0.4)

These voices are synthetic (espeak-ng's formant synthesiser with voice variants, pitches and
speeds), not people: they are closer to each other than real voices and each is more regular.
Scores on them say the clustering works, not how well it works on real recordings. Nothing is
downloaded: espeak-ng is a Debian package (``apt-get install espeak-ng``), only needed to make audio.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import wave
from collections.abc import Sequence
from pathlib import Path

import numpy as np

RATE = 16_000
# (espeak-ng voice, pitch 0-99, words a minute): four voices apart in timbre, pitch and pace
VOICES: tuple[tuple[str, int, int], ...] = (("en-us+m3", 35, 150), ("en-gb-x-rp+f3", 75, 165),
                                            ("en-gb-scotland+m7", 55, 135), ("en-us+f5", 90, 175))
SENTENCES = (
    "The meeting starts at nine in the main hall.", "Could you pass me the report from last week?",
    "I think the budget needs another review.", "We should leave before the traffic gets worse.",
    "The results look better than we expected.", "Let me check the numbers again tonight.",
    "Has anyone seen the keys to the storage room?", "The train was twenty minutes late this morning.",
)


def espeak_available() -> bool:
    return shutil.which("espeak-ng") is not None


def speak(text: str, voice: tuple[str, int, int]) -> np.ndarray:
    """One sentence as 16 kHz mono float32 (espeak-ng writes 22.05 kHz; resampled linearly)."""
    name, pitch, speed = voice
    with tempfile.TemporaryDirectory() as folder:
        wav = Path(folder) / "s.wav"
        subprocess.run(["espeak-ng", "-v", name, "-p", str(pitch), "-s", str(speed), "-w", str(wav), text],
                       check=True, capture_output=True)
        with wave.open(str(wav)) as w:
            rate = w.getframerate()
            x = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32768
    n = int(len(x) * RATE / rate)
    return np.interp(np.linspace(0, len(x) - 1, n), np.arange(len(x)), x).astype(np.float32)


def conversation(order: Sequence[int], sentences: Sequence[str] = SENTENCES, *, voices=VOICES, gap: float = 0.5,
                 lead: float = 0.5) -> tuple[np.ndarray, list[tuple[float, float, str]]]:
    """Sentences spoken in turn by ``voices[order[i]]``: the audio and the true turns (start, end, "V<n>")."""
    parts: list[np.ndarray] = [np.zeros(int(lead * RATE), np.float32)]
    turns = []
    t = lead
    for i, who in enumerate(order):
        clip = speak(sentences[i % len(sentences)], voices[who])
        nonzero = np.flatnonzero(np.abs(clip) > 1e-3)  # trim espeak's silent ends so turns are tight
        clip = clip[nonzero[0]:nonzero[-1] + 1] if len(nonzero) else clip
        turns.append((round(t, 3), round(t + len(clip) / RATE, 3), f"V{who + 1}"))
        parts += [clip, np.zeros(int(gap * RATE), np.float32)]
        t += len(clip) / RATE + gap
    return np.concatenate(parts), turns
