"""``BuildConfig``: how a video is turned into memory, as data with named presets.

    BuildConfig.default()    long videos: tau = 10 min windows, episodes of 20 s - 8 min
    BuildConfig.short()      clips of a few minutes: 2 min windows, episodes of 5 s - 2 min
    BuildConfig.fast()       fewer, smaller frames per call; for cheap drafts and CI
    BuildConfig.preset("short").model_copy(update={"concurrency": 8})

Every field that changes what the model is asked (and so the memory that comes out) is part
of ``fingerprint()``; checkpoints made under another fingerprint are not reused.
"""

from __future__ import annotations

import hashlib
import json

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memtools.errors import ConfigError
from memtools.video import KeyframeConfig

PROMPT_VERSION = 1
"""Bumped whenever a prompt or the response cleaning changes what a build produces."""

# Fields that only change how fast a build runs, not what it produces.
_RUNTIME_FIELDS = frozenset({"concurrency"})


class BuildConfig(BaseModel):
    """Settings of the construction pipeline. Build one from a preset and ``model_copy(update=...)``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    window_sec: float = Field(600.0, gt=0, description="tau: the longest stretch of video one segmentation call sees.")
    frames_per_window: int = Field(40, ge=2, le=256, description="Frames sent with each segmentation window.")
    frames_per_macro: int = Field(16, ge=1, le=256, description="Frames sent with each macro event for extraction.")
    frame_max_side: int = Field(512, ge=64, description="Frames are downscaled so their longer side fits this (px).")
    min_episode_sec: float = Field(20.0, ge=0, description="Shorter episodes are merged into a neighbour.")
    max_episode_sec: float = Field(480.0, gt=0, description="Longer episodes are split into equal parts.")
    aggregate_chunk: int = Field(40, ge=2, description="At most this many macro events go to one aggregation call.")
    max_retries: int = Field(2, ge=0, le=10, description="Extra attempts, with the error, for an unusable answer.")
    concurrency: int = Field(4, ge=1, le=256, description="Model calls in flight at once.")
    keyframes: KeyframeConfig = Field(default_factory=KeyframeConfig.default)

    @model_validator(mode="after")
    def _consistent(self) -> BuildConfig:
        if self.max_episode_sec < self.min_episode_sec:
            raise ValueError(
                f"max_episode_sec ({self.max_episode_sec}) must be at least min_episode_sec ({self.min_episode_sec})"
            )
        if self.min_episode_sec >= self.window_sec:
            raise ValueError(f"min_episode_sec ({self.min_episode_sec}) must be below window_sec ({self.window_sec})")
        return self

    # --- presets ------------------------------------------------------------------------

    @classmethod
    def default(cls) -> BuildConfig:
        """Long videos (the paper's setting): 10-minute windows, 40 frames each."""
        return cls()

    @classmethod
    def short(cls) -> BuildConfig:
        """Clips of a few minutes: 2-minute windows and episodes as short as 5 s."""
        return cls(window_sec=120.0, frames_per_window=32, frames_per_macro=12, min_episode_sec=5.0,
                   max_episode_sec=120.0, keyframes=KeyframeConfig.dense())

    @classmethod
    def fast(cls) -> BuildConfig:
        """Cheap drafts: fewer and smaller frames per call, more calls in flight."""
        return cls(frames_per_window=20, frames_per_macro=8, frame_max_side=384, concurrency=8, max_retries=1)

    @classmethod
    def preset(cls, name: str) -> BuildConfig:
        factory = PRESETS.get(name)
        if factory is None:
            raise ConfigError(f"unknown build preset {name!r}; choose one of {', '.join(sorted(PRESETS))}")
        return factory()

    # --- identity -----------------------------------------------------------------------

    def fingerprint(self) -> str:
        """A short hash of every setting that changes the memory a build produces."""
        data = self.model_dump(mode="json", exclude=set(_RUNTIME_FIELDS))
        data["prompt_version"] = PROMPT_VERSION
        blob = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


PRESETS = {"default": BuildConfig.default, "short": BuildConfig.short, "fast": BuildConfig.fast}
