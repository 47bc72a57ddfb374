"""Keyframe selection: small gates, one loop.

Each rule is one class with one per-frame method, ``accept(frame, kept)``, that says
whether a sampled frame may become a keyframe given the most recent keyframes (newest
last). The rules follow VAM's frame filtering (blur by Laplacian variance, static frames by
mean grayscale difference, near-duplicates by structural similarity); their thresholds are
data, in ``KeyframeConfig`` and its presets.

``KeyframeSelector`` owns everything else: measuring each frame once (``AnalyzedFrame``),
the buffer of recent keyframes, counting why frames were dropped, forcing a keyframe when
none was kept for ``max_gap_sec`` (the sharpest frame dropped in the later half of that
gap), and never returning nothing for a non-empty input (the sharpest frame if every frame
was gated).
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import cv2
import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from memtools.video.sampling import Frame

# --- measuring a frame once ---------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class AnalyzedFrame:
    """A frame with what the gates look at, computed once by the selector."""

    frame: Frame
    sharpness: float
    """Variance of the Laplacian of the grayscale frame, at most ``analysis_side`` px."""
    thumbnail: np.ndarray = field(repr=False)
    """Grayscale ``float32`` square thumbnail, values 0-255."""

    @property
    def t(self) -> float:
        return self.frame.t


def analyze(frame: Frame, *, analysis_side: int = 640, thumbnail_size: int = 64) -> AnalyzedFrame:
    """Measure a frame. Sharpness is taken at a bounded size, so a threshold means the
    same for a 4K and a 480p video."""
    image = frame.image
    gray = image if image.ndim == 2 else cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
    longest = max(gray.shape[:2])
    if longest > analysis_side:
        scale = analysis_side / longest
        gray = cv2.resize(gray, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    sharpness = float(cv2.Laplacian(gray, cv2.CV_64F).var())
    thumb = cv2.resize(gray, (thumbnail_size, thumbnail_size), interpolation=cv2.INTER_AREA)
    return AnalyzedFrame(frame=frame, sharpness=sharpness, thumbnail=thumb.astype(np.float32))


def mean_abs_diff(a: np.ndarray, b: np.ndarray) -> float:
    """Mean absolute difference of two equally sized grayscale images (0-255)."""
    return float(np.mean(np.abs(a - b)))


_C1 = (0.01 * 255) ** 2
_C2 = (0.03 * 255) ** 2


def ssim(a: np.ndarray, b: np.ndarray) -> float:
    """Mean structural similarity (Wang et al. 2004, Gaussian window) of two grayscale
    ``float32`` images of the same size; 1.0 means identical."""

    def blur(x: np.ndarray) -> np.ndarray:
        return cv2.GaussianBlur(x, (7, 7), 1.5)

    mu_a, mu_b = blur(a), blur(b)
    var_a = blur(a * a) - mu_a * mu_a
    var_b = blur(b * b) - mu_b * mu_b
    cov = blur(a * b) - mu_a * mu_b
    num = (2 * mu_a * mu_b + _C1) * (2 * cov + _C2)
    den = (mu_a * mu_a + mu_b * mu_b + _C1) * (var_a + var_b + _C2)
    return float(np.mean(num / den))


# --- the gates ----------------------------------------------------------------------------


@runtime_checkable
class KeyframeGate(Protocol):
    """One keyframe rule. ``kept`` holds the most recent keyframes, newest last."""

    name: str

    def accept(self, frame: AnalyzedFrame, kept: Sequence[AnalyzedFrame]) -> bool: ...


class BlurGate:
    """Drop blurry frames: variance of the Laplacian below ``min_laplacian_var``."""

    name = "blur"

    def __init__(self, min_laplacian_var: float) -> None:
        self.min_laplacian_var = min_laplacian_var

    def accept(self, frame: AnalyzedFrame, kept: Sequence[AnalyzedFrame]) -> bool:
        return frame.sharpness >= self.min_laplacian_var


class StaticGate:
    """Drop frames that barely differ from the last keyframe (mean grayscale difference
    below ``min_mean_diff`` on a 0-255 scale)."""

    name = "static"

    def __init__(self, min_mean_diff: float) -> None:
        self.min_mean_diff = min_mean_diff

    def accept(self, frame: AnalyzedFrame, kept: Sequence[AnalyzedFrame]) -> bool:
        return not kept or mean_abs_diff(frame.thumbnail, kept[-1].thumbnail) >= self.min_mean_diff


class DuplicateGate:
    """Drop near-duplicates: SSIM above ``max_similarity`` with any of the last ``window``
    keyframes (catches a scene that cuts away and back)."""

    name = "duplicate"

    def __init__(self, max_similarity: float, window: int = 8) -> None:
        self.max_similarity = max_similarity
        self.window = window

    def accept(self, frame: AnalyzedFrame, kept: Sequence[AnalyzedFrame]) -> bool:
        recent = list(kept)[-self.window :]
        return all(ssim(frame.thumbnail, k.thumbnail) <= self.max_similarity for k in recent)


# --- thresholds as data ---------------------------------------------------------------------


class KeyframeConfig(BaseModel):
    """How frames are sampled and which become keyframes. ``None`` turns a rule off."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    sample_every_sec: float = Field(2.0, gt=0, description="Sample at least one frame per this many seconds.")
    min_laplacian_var: float | None = Field(20.0, ge=0, description="BlurGate threshold (sharpness).")
    min_mean_diff: float | None = Field(5.0, ge=0, description="StaticGate threshold, 0-255 grayscale.")
    max_similarity: float | None = Field(0.92, le=1, description="DuplicateGate threshold (SSIM).")
    duplicate_window: int = Field(8, ge=1, description="How many recent keyframes DuplicateGate compares with.")
    max_gap_sec: float | None = Field(30.0, gt=0, description="Force a keyframe after this long without one.")
    analysis_side: int = Field(640, ge=16, description="Longest side (px) at which sharpness is measured.")
    thumbnail_size: int = Field(64, ge=8, description="Side (px) of the thumbnails compared by the other gates.")

    @classmethod
    def default(cls) -> KeyframeConfig:
        """Balanced: VAM's blur and SSIM thresholds, a gentler static gate, a keyframe at
        least every 30 s."""
        return cls()

    @classmethod
    def vam(cls) -> KeyframeConfig:
        """The VAM paper's defaults (Table 4): 0.5 fps, tau_blur 20, tau_diff 20, tau_ssim 0.92."""
        return cls(min_laplacian_var=20.0, min_mean_diff=20.0, max_similarity=0.92, max_gap_sec=None)

    @classmethod
    def dense(cls) -> KeyframeConfig:
        """For short or fast-moving videos: 1 fps, permissive gates, a keyframe every 10 s."""
        return cls(
            sample_every_sec=1.0, min_laplacian_var=10.0, min_mean_diff=2.0, max_similarity=0.97, max_gap_sec=10.0
        )

    @classmethod
    def all_frames(cls) -> KeyframeConfig:
        """No gates: every sampled frame is a keyframe."""
        return cls(min_laplacian_var=None, min_mean_diff=None, max_similarity=None, max_gap_sec=None)

    def gates(self) -> list[KeyframeGate]:
        """The gates this config turns on, cheapest first."""
        gates: list[KeyframeGate] = []
        if self.min_laplacian_var is not None:
            gates.append(BlurGate(self.min_laplacian_var))
        if self.min_mean_diff is not None:
            gates.append(StaticGate(self.min_mean_diff))
        if self.max_similarity is not None:
            gates.append(DuplicateGate(self.max_similarity, self.duplicate_window))
        return gates


# --- the loop -------------------------------------------------------------------------------


@dataclass
class KeyframeStats:
    """What happened to the frames a selector saw. ``forced`` keyframes are also in ``kept``."""

    seen: int = 0
    kept: int = 0
    forced: int = 0
    rejected: Counter[str] = field(default_factory=Counter)


class KeyframeSelector:
    """Runs the gates over frames in time order and yields the keyframes as they are found."""

    def __init__(self, config: KeyframeConfig | None = None, *, gates: Sequence[KeyframeGate] | None = None) -> None:
        self.config = config or KeyframeConfig.default()
        self.gates: list[KeyframeGate] = list(gates) if gates is not None else self.config.gates()
        self.stats = KeyframeStats()

    def select(self, frames: Iterable[Frame]) -> Iterator[Frame]:
        cfg, gap = self.config, self.config.max_gap_sec
        kept: deque[AnalyzedFrame] = deque(maxlen=cfg.duplicate_window)
        stand_in: AnalyzedFrame | None = None  # sharpest frame dropped in the later half of a gap
        sharpest: AnalyzedFrame | None = None  # sharpest frame of all, while nothing is kept
        since: float | None = None  # time of the last keyframe, or of the first frame
        for frame in frames:
            current = analyze(frame, analysis_side=cfg.analysis_side, thumbnail_size=cfg.thumbnail_size)
            self.stats.seen += 1
            since = current.t if since is None else since
            refused_by = next((g.name for g in self.gates if not g.accept(current, kept)), None)
            if refused_by is not None:
                self.stats.rejected[refused_by] += 1
                if not kept:
                    sharpest = _sharper(sharpest, current)
                if gap is None:
                    continue
                if current.t - since >= gap / 2:  # a stand-in from early in the gap would not fill it
                    stand_in = _sharper(stand_in, current)
                if current.t - since < gap or stand_in is None:
                    continue
                current, self.stats.forced = stand_in, self.stats.forced + 1
            kept.append(current)
            stand_in, since = None, current.t
            self.stats.kept += 1
            yield current.frame
        if not kept and sharpest is not None:
            self.stats.kept += 1
            self.stats.forced += 1
            yield sharpest.frame


def _sharper(best: AnalyzedFrame | None, frame: AnalyzedFrame) -> AnalyzedFrame:
    return frame if best is None or frame.sharpness > best.sharpness else best


def select_keyframes(frames: Iterable[Frame], config: KeyframeConfig | None = None) -> list[Frame]:
    """The keyframes among ``frames`` (in time order) under ``config`` (default preset).

    At least one keyframe for a non-empty input."""
    return list(KeyframeSelector(config).select(frames))
