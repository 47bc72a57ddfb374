"""Speaker embeddings on numpy: Resemblyzer's GE2E voice encoder (3-layer LSTM, 256 units, 40 mel bands).

    encoder = VoiceEncoder()                         # reads the weights (see voice_weights); ConfigError if absent
    vectors = encoder.embed([samples_a, samples_b])  # 16 kHz mono float32 -> (2, 256), unit length, >= 0

The same computation as ``resemblyzer.VoiceEncoder.embed_utterance`` (tests compare against its
output): the volume is raised to -30 dBFS, the clip is cut into 1.6 s partials (160 frames of
10 ms, 1.3 partials a second), each partial's power mel spectrogram (25 ms Hann windows,
Slaney mel filters, as ``librosa.feature.melspectrogram``) goes through the LSTM, and the
utterance's vector is the normalised mean of its partials' vectors. Resemblyzer also trims
long silences with webrtcvad; here an energy gate does it (``trim_silence``: 30 ms windows
more than 30 dB below the clip's loudest, smoothed and widened as Resemblyzer does), since a
recogniser's segments often run on into seconds of silence, which would pull the vector away
from the voice. All partials of all clips run through the LSTM as one batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memtools.errors import ConfigError
from memtools.speech.voice_weights import INSTALL_HINT, read_torch_checkpoint, weights_path

RATE = 16_000
N_FFT = 400  # 25 ms
HOP = 160  # 10 ms
N_MELS = 40
PARTIAL_FRAMES = 160  # 1.6 s
PARTIALS_PER_SEC = 1.3
MIN_COVERAGE = 0.75
TARGET_DBFS = -30.0
LAYERS = 3
DIM = 256


def _hz_to_mel(f: np.ndarray) -> np.ndarray:  # Slaney's scale: linear to 1 kHz, logarithmic above
    f = np.asarray(f, dtype=np.float64)
    mel = f / (200.0 / 3)
    log = f >= 1000.0
    return np.where(log, 15.0 + np.log(np.maximum(f, 1e-10) / 1000.0) / (np.log(6.4) / 27.0), mel)


def _mel_to_hz(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float64)
    return np.where(m >= 15.0, 1000.0 * np.exp((np.log(6.4) / 27.0) * (m - 15.0)), m * (200.0 / 3))


def mel_filters(sr: int = RATE, n_fft: int = N_FFT, n_mels: int = N_MELS) -> np.ndarray:
    """Slaney-normalised triangular mel filters, (n_mels, 1 + n_fft // 2), as ``librosa.filters.mel``'s defaults."""
    freqs = np.linspace(0, sr / 2, 1 + n_fft // 2)
    edges = _mel_to_hz(np.linspace(_hz_to_mel(np.array(0.0)), _hz_to_mel(np.array(sr / 2.0)), n_mels + 2))
    widths = np.diff(edges)
    ramps = edges[:, None] - freqs[None, :]
    lower = -ramps[:-2] / widths[:-1, None]
    upper = ramps[2:] / widths[1:, None]
    weights = np.maximum(0, np.minimum(lower, upper))
    weights *= (2.0 / (edges[2:] - edges[:-2]))[:, None]
    return weights.astype(np.float32)


_FILTERS = mel_filters()
_WINDOW = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(N_FFT) / N_FFT)).astype(np.float32)  # periodic Hann


def mel_spectrogram(samples: np.ndarray) -> np.ndarray:
    """Power mel spectrogram, (frames, 40): centred 25 ms frames every 10 ms, zero padded at both ends."""
    padded = np.pad(np.asarray(samples, dtype=np.float32), N_FFT // 2)
    count = 1 + (len(padded) - N_FFT) // HOP
    frames = np.lib.stride_tricks.as_strided(padded, shape=(count, N_FFT), strides=(padded.strides[0] * HOP,
                                                                                     padded.strides[0]))
    power = np.abs(np.fft.rfft(frames * _WINDOW, axis=1)) ** 2
    return (power @ _FILTERS.T).astype(np.float32)


def normalize_volume(samples: np.ndarray) -> np.ndarray:
    """Raise (never lower) the clip's loudness to -30 dBFS, as Resemblyzer's preprocessing does."""
    samples = np.asarray(samples, dtype=np.float32)
    rms = float(np.sqrt(np.mean((samples.astype(np.float64) * 32767) ** 2))) if len(samples) else 0.0
    if rms <= 0:
        return samples
    change = TARGET_DBFS - 20 * np.log10(rms / 32767)
    return samples if change < 0 else (samples * 10 ** (change / 20)).astype(np.float32)


VAD_WINDOW = 480  # 30 ms
VAD_FLOOR_DB = -30.0
VAD_SMOOTH = 8  # windows averaged (Resemblyzer's vad_moving_average_width)
VAD_KEEP = 6  # silent windows kept next to speech (Resemblyzer's vad_max_silence_length)


def trim_silence(samples: np.ndarray) -> np.ndarray:
    """The clip without its long silences: 30 ms windows quieter than the loudest by more than 30 dB are
    dropped, unless within 6 windows of speech (a clip with no loud window is returned whole)."""
    n = len(samples) // VAD_WINDOW
    if n < 2:
        return samples
    windows = samples[:n * VAD_WINDOW].reshape(n, VAD_WINDOW).astype(np.float64)
    level = 10 * np.log10(np.mean(windows ** 2, axis=1) + 1e-12)
    loud = (level > level.max() + VAD_FLOOR_DB).astype(np.float64)
    smooth = np.convolve(loud, np.ones(VAD_SMOOTH) / VAD_SMOOTH, mode="same") >= 0.5
    keep = np.convolve(smooth.astype(np.float64), np.ones(2 * VAD_KEEP + 1), mode="same") > 0
    if not keep.any():
        return samples
    return windows[keep].reshape(-1).astype(np.float32)


def partial_slices(n_samples: int) -> list[slice]:
    """Where the 1.6 s partials of a clip start and end, in mel frames (Resemblyzer's compute_partial_slices)."""
    n_frames = int(np.ceil((n_samples + 1) / HOP))
    step = int(np.round((RATE / PARTIALS_PER_SEC) / HOP))
    slices = [slice(i, i + PARTIAL_FRAMES) for i in range(0, max(1, n_frames - PARTIAL_FRAMES + step + 1), step)]
    last = slices[-1]
    coverage = (n_samples - last.start * HOP) / ((last.stop - last.start) * HOP)
    if coverage < MIN_COVERAGE and len(slices) > 1:
        slices = slices[:-1]
    return slices


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


class VoiceEncoder:
    """GE2E speaker encoder on numpy; ``path`` defaults to ``voice_weights.weights_path()``."""

    name = "resemblyzer-ge2e"

    def __init__(self, path: str | Path | None = None) -> None:
        found = Path(path) if path is not None else weights_path()
        if found is None or not found.is_file():
            raise ConfigError(INSTALL_HINT if found is None else f"no voice encoder weights at {found}; {INSTALL_HINT}")
        state = read_torch_checkpoint(found)
        state = state.get("model_state", state) if isinstance(state, dict) else state
        try:
            self.layers = [(state[f"lstm.weight_ih_l{n}"].T.copy(), state[f"lstm.weight_hh_l{n}"].T.copy(),
                            state[f"lstm.bias_ih_l{n}"] + state[f"lstm.bias_hh_l{n}"]) for n in range(LAYERS)]
            self.linear = (state["linear.weight"].T.copy(), state["linear.bias"])
        except (KeyError, TypeError) as exc:
            raise ConfigError(f"{found} is not Resemblyzer's voice encoder (missing {exc}); {INSTALL_HINT}") from exc
        self.path = found

    def forward(self, mels: np.ndarray) -> np.ndarray:
        """(batch, frames, 40) mel spectrograms -> (batch, 256) unit vectors of the last hidden state."""
        x = np.asarray(mels, dtype=np.float32)
        batch, steps, _ = x.shape
        h = np.zeros((batch, DIM), np.float32)
        for w_ih, w_hh, bias in self.layers:
            gates_in = x @ w_ih + bias  # (batch, steps, 4 * DIM): the input part of every step at once
            h = np.zeros((batch, DIM), np.float32)
            c = np.zeros((batch, DIM), np.float32)
            out = np.empty((batch, steps, DIM), np.float32)
            for t in range(steps):
                g = gates_in[:, t] + h @ w_hh
                i, f, cell, o = _sigmoid(g[:, :DIM]), _sigmoid(g[:, DIM:2 * DIM]), np.tanh(g[:, 2 * DIM:3 * DIM]), \
                    _sigmoid(g[:, 3 * DIM:])
                c = f * c + i * cell
                h = o * np.tanh(c)
                out[:, t] = h
            x = out
        weight, bias = self.linear
        raw = np.maximum(h @ weight + bias, 0.0)
        return raw / np.maximum(np.linalg.norm(raw, axis=1, keepdims=True), 1e-12)

    def embed(self, clips: Sequence[np.ndarray], *, batch: int = 64) -> np.ndarray:
        """One unit vector per clip of 16 kHz mono samples, (len(clips), 256)."""
        partials: list[np.ndarray] = []
        owner: list[int] = []
        for n, clip in enumerate(clips):
            samples = trim_silence(normalize_volume(clip))
            slices = partial_slices(len(samples))
            need = slices[-1].stop * HOP
            if need >= len(samples):
                samples = np.pad(samples, (0, need - len(samples)))
            mel = mel_spectrogram(samples)
            partials += [mel[s] for s in slices]
            owner += [n] * len(slices)
        if not partials:
            return np.zeros((0, DIM), np.float32)
        vectors = np.concatenate([self.forward(np.stack(partials[i:i + batch]))
                                  for i in range(0, len(partials), batch)])
        sums = np.zeros((len(clips), DIM), np.float64)
        np.add.at(sums, np.array(owner), vectors)
        return (sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)).astype(np.float32)
