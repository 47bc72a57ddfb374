"""VAM's frame-age tiers (Table 5): keyframes thin out and shrink as they age, so a stream of
any length keeps its keyframe storage under a cap.

    tier     age            min gap   longest side   JPEG quality
    recent   <= 1 h         1 s       as stored      as stored
    mid      1 h - 24 h     20 s      768 px         70
    long     > 24 h         120 s     512 px         45

The rules follow VAM §B.3. Age is measured from the stream's newest landed second, not from
the wall clock, so the same stream always thins the same way (a resumed live build ends up with
the memory an uninterrupted one would have). The earliest and the latest keyframe are always
kept. In the long tier the first keyframe of each macro event is kept too, so every event keeps
its evidence. Other keyframes keep at most one per ``min_gap`` bucket. Buckets are aligned to
the stream clock, and every tier's gap divides the next one's, so a frame dropped once is never
wanted back. Compression is decided only after the keep set is fixed. When the kept frames
would still pass ``cap_bytes``, every gap is doubled until they fit, and at the end the
event-linked frames lose their protection too.

``plan`` is pure: records in, a plan out (no files). ``memtools.builder.live`` applies it to the
JPEGs, the graph and the lance table in one write, and tests simulate a day-long stream with it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

STORED_QUALITY = 90  # what ``encode_jpeg`` writes keyframes with
MAX_DOUBLINGS = 16  # 2**16 times the long tier's gap is about three months per kept frame


class Tier(BaseModel):
    """One age band of keyframes and how densely and how sharply it keeps them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    max_age_sec: float | None = Field(description="Frames up to this age (s) fall in this tier; None: any older.")
    min_gap_sec: float = Field(gt=0, description="At most one kept frame per bucket of this many seconds.")
    max_side: int | None = Field(default=None, ge=64, description="Longest side (px) once a frame reaches this tier.")
    jpeg_quality: int | None = Field(default=None, ge=10, le=95,
                                     description="JPEG quality once a frame reaches this tier.")


class TierPolicy(BaseModel):
    """The tiers, youngest first, and the storage cap (None: no cap, the tiers alone decide)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tiers: tuple[Tier, ...]
    cap_bytes: int | None = Field(default=None, gt=0)

    @classmethod
    def vam(cls, cap_mb: float | None = None) -> TierPolicy:
        """VAM's Table 5, optionally under a cap of ``cap_mb`` MB of keyframe files."""
        return cls(tiers=(
            Tier(name="recent", max_age_sec=3600.0, min_gap_sec=1.0),
            Tier(name="mid", max_age_sec=86400.0, min_gap_sec=20.0, max_side=768, jpeg_quality=70),
            Tier(name="long", max_age_sec=None, min_gap_sec=120.0, max_side=512, jpeg_quality=45),
        ), cap_bytes=None if cap_mb is None else int(cap_mb * 1_000_000))

    def tier_of(self, age: float) -> int:
        for index, tier in enumerate(self.tiers):
            if tier.max_age_sec is None or age <= tier.max_age_sec:
                return index
        return len(self.tiers) - 1


@dataclass
class StoredFrame:
    """What the policy needs to know of one stored keyframe."""

    t: float
    size: int  # bytes of its file now
    side: int  # longest side in px now
    quality: int = STORED_QUALITY
    macro_id: str | None = None


@dataclass
class Plan:
    """Which frames stay (indexes into the input, in time order) and which to recompress to
    which tier; ``bytes`` is the estimated total afterwards; ``doublings`` of the gaps it took."""

    keep: list[int] = field(default_factory=list)
    shrink: dict[int, Tier] = field(default_factory=dict)
    bytes: int = 0
    doublings: int = 0


def estimate_size(frame: StoredFrame, tier: Tier) -> int:
    """The file size after compressing ``frame`` to ``tier`` (a rough model: bytes grow with the
    pixels and about linearly with JPEG quality in the range keyframes use)."""
    side = min(frame.side, tier.max_side or frame.side)
    quality = min(frame.quality, tier.jpeg_quality or frame.quality)
    scale = (side / max(frame.side, 1)) ** 2 * _quality_weight(quality) / _quality_weight(frame.quality)
    return max(1, int(frame.size * min(1.0, scale)))


def _quality_weight(quality: int) -> float:
    return 0.2 + quality / 100.0


def needs_shrink(frame: StoredFrame, tier: Tier) -> bool:
    return (tier.max_side is not None and frame.side > tier.max_side) or \
        (tier.jpeg_quality is not None and frame.quality > tier.jpeg_quality)


def plan(frames: Sequence[StoredFrame], now: float, policy: TierPolicy,
         estimate: Callable[[StoredFrame, Tier], int] = estimate_size, *, min_doublings: int = 0) -> Plan:
    """The keep set and compression for ``frames`` (in time order) at stream time ``now``.
    ``min_doublings``: start from gaps doubled this often (a long simulation's last answer)."""
    result = Plan()
    for doublings in range(min(min_doublings, MAX_DOUBLINGS), MAX_DOUBLINGS + 1):
        last = doublings == MAX_DOUBLINGS
        result = _plan_once(frames, now, policy, 2 ** doublings, protect_events=not last, estimate=estimate)
        result.doublings = doublings
        if policy.cap_bytes is None or result.bytes <= policy.cap_bytes:
            break
    return result


def _plan_once(frames: Sequence[StoredFrame], now: float, policy: TierPolicy, scale: int, *, protect_events: bool,
               estimate: Callable[[StoredFrame, Tier], int]) -> Plan:
    out = Plan()
    if not frames:
        return out
    taken: set[tuple[int, int]] = set()  # (tier, bucket) already holding a kept frame
    events: set[str] = set()
    last_tier = len(policy.tiers) - 1
    for index, frame in enumerate(frames):
        tier_index = policy.tier_of(max(0.0, now - frame.t))
        tier = policy.tiers[tier_index]
        bucket = (tier_index, math.floor(frame.t / (tier.min_gap_sec * scale)))
        first_of_event = frame.macro_id is not None and frame.macro_id not in events
        if frame.macro_id is not None:
            events.add(frame.macro_id)
        anchor = index in (0, len(frames) - 1)
        linked = protect_events and tier_index == last_tier and first_of_event
        if not (anchor or linked or bucket not in taken):
            continue
        taken.add(bucket)
        out.keep.append(index)
        if needs_shrink(frame, tier):
            out.shrink[index] = tier
            out.bytes += estimate(frame, tier)
        else:
            out.bytes += frame.size
    return out


@dataclass
class SimulatedLanding:
    now: float
    frames: int
    bytes: int
    doublings: int


def simulate(hours: float, policy: TierPolicy, *, every_sec: float = 2.0, frame_bytes: int = 60_000,
             side: int = 768, land_every_sec: float = 600.0, macro_sec: float = 120.0) -> list[SimulatedLanding]:
    """A stream of ``hours`` with a keyframe every ``every_sec`` (``frame_bytes`` each), thinned
    at every landing as a live build does, with compression applied through ``estimate_size``.
    No video is decoded: this is how the tiers are tested and benchmarked over a day or a month."""
    frames: list[StoredFrame] = []
    history: list[SimulatedLanding] = []
    t, now, doublings = 0.0, 0.0, 0
    while now < hours * 3600.0 - 1e-9:
        now = min(now + land_every_sec, hours * 3600.0)
        while t < now:
            frames.append(StoredFrame(t=t, size=frame_bytes, side=side, macro_id=f"macro_{int(t // macro_sec)}"))
            t += every_sec
        decided = plan(frames, now, policy, min_doublings=doublings)
        doublings = decided.doublings
        kept = []
        for index in decided.keep:
            frame, tier = frames[index], decided.shrink.get(index)
            if tier is not None:
                frame = StoredFrame(t=frame.t, size=estimate_size(frame, tier), side=min(frame.side, tier.max_side or
                                    frame.side), quality=min(frame.quality, tier.jpeg_quality or frame.quality),
                                    macro_id=frame.macro_id)
            kept.append(frame)
        frames = kept
        history.append(SimulatedLanding(now, len(frames), sum(f.size for f in frames), decided.doublings))
    return history
