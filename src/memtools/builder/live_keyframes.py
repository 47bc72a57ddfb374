"""Keyframes of a live build: chosen per landed window, then thinned and shrunk by age.

The keyframe rules run afresh over each landed window's candidate frames, so which frames a
window keeps depends only on that window, not on where an interrupted build resumed. Each
keyframe gets an id number once (``n``) and keeps it while it is kept, because agents copy
keyframe ids from one tool call into the next.

Thinning (``memtools.builder.frame_tiers``) happens at each landing. Files that leave are
deleted only after the memory write that stops listing them, so readers never meet a listed
keyframe without its file. A frame shrunk for an older tier is written to a new file
(``000083.400.mid.jpg``), never over the old one, so a resumed build shrinks from the same bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from memtools.builder.checkpoint import atomic_write_bytes
from memtools.builder.frame_tiers import STORED_QUALITY, StoredFrame, Tier, TierPolicy, plan
from memtools.builder.keyframes import StoredKeyframe, keyframe_file_name
from memtools.builder.live_frames import Candidate
from memtools.video import Frame, KeyframeConfig, KeyframeSelector, decode_jpeg, encode_jpeg

MAX_PASSES = 4  # plans made on measured sizes until the cap holds


class LiveKeyframe(BaseModel):
    """A stored keyframe of a live build, with what the tiers need to know of its file."""

    n: int
    t: float
    path: str  # relative to the memory folder
    size: int
    side: int
    quality: int = STORED_QUALITY

    def stored(self) -> StoredKeyframe:
        return StoredKeyframe(t=self.t, path=self.path, n=self.n)


def select_window(candidates: Sequence[Candidate], config: KeyframeConfig, frames_dir: Path, root: Path,
                  first_n: int) -> list[LiveKeyframe]:
    """Run the keyframe rules over one window's candidates; write the keyframes' files."""
    frames = [Frame(t=c.t, index=c.index, image=decode_jpeg(c.jpeg)) for c in candidates]
    by_t = {c.t: c for c in candidates}
    out: list[LiveKeyframe] = []
    for n, frame in enumerate(KeyframeSelector(config).select(frames), first_n):
        data = by_t[frame.t].jpeg
        target = frames_dir / keyframe_file_name(frame.t)
        atomic_write_bytes(target, data)
        out.append(LiveKeyframe(n=n, t=frame.t, path=target.relative_to(root).as_posix(), size=len(data),
                                side=max(frame.image.shape[:2])))
    return out


@dataclass
class Thinned:
    """The keyframes kept, and files to delete once the memory no longer lists them."""

    kept: list[LiveKeyframe]
    leaving: list[str] = field(default_factory=list)
    doublings: int = 0

    @property
    def bytes(self) -> int:
        return sum(k.size for k in self.kept)


def thin(root: Path, frames: Sequence[LiveKeyframe], now: float, policy: TierPolicy,
         macro_at: Callable[[float], str | None]) -> Thinned:
    """Apply the tiers at stream time ``now``: drop, shrink, and plan again on the measured sizes
    while the cap does not hold."""
    result = Thinned(list(frames))
    for _ in range(MAX_PASSES):
        records = [StoredFrame(t=k.t, size=k.size, side=k.side, quality=k.quality, macro_id=macro_at(k.t))
                   for k in result.kept]
        decided = plan(records, now, policy)
        keep = set(decided.keep)
        kept: list[LiveKeyframe] = []
        for index, frame in enumerate(result.kept):
            if index not in keep:
                result.leaving.append(frame.path)
                continue
            tier = decided.shrink.get(index)
            if tier is not None:
                result.leaving.append(frame.path)
                frame = shrink(root, frame, tier)
            kept.append(frame)
        result.kept, result.doublings = kept, decided.doublings
        if policy.cap_bytes is None or result.bytes <= policy.cap_bytes or not (decided.shrink or len(keep) <
                                                                                  len(records)):
            break
    listed = {k.path for k in result.kept}
    result.leaving = sorted(set(result.leaving) - listed)
    return result


def shrink(root: Path, frame: LiveKeyframe, tier: Tier) -> LiveKeyframe:
    """The frame recompressed for ``tier``, in a file of its own."""
    source = root / frame.path
    target = source.parent / f"{keyframe_file_name(frame.t)[:-4]}.{tier.name}.jpg"
    if target.is_file():  # an interrupted landing made it already, from the same bytes
        data = target.read_bytes()
    else:
        image = decode_jpeg(source.read_bytes())
        data = encode_jpeg(image, max_side=min(frame.side, tier.max_side or frame.side),
                           quality=min(frame.quality, tier.jpeg_quality or frame.quality))
        atomic_write_bytes(target, data)
    side = max(decode_jpeg(data).shape[:2])
    return frame.model_copy(update={"path": target.relative_to(root).as_posix(), "size": len(data), "side": side,
                                    "quality": min(frame.quality, tier.jpeg_quality or frame.quality)})


def sweep(frames_dir: Path, root: Path, listed: set[str]) -> int:
    """Delete the files of ``frames_dir`` the memory does not list; returns how many."""
    removed = 0
    if frames_dir.is_dir():
        for path in frames_dir.iterdir():
            if path.is_file() and path.relative_to(root).as_posix() not in listed:
                path.unlink(missing_ok=True)
                removed += 1
    return removed
