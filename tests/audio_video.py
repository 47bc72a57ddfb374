"""Small videos with (or without) a sound track, written with PyAV, for the speech tests.

- ``write_av_video(path, seconds, audio=...)``  MPEG-4 video at 2 fps; ``audio`` is a mono float32
  signal at ``rate`` Hz (any rate: the reader resamples), encoded as AAC (stereo when asked), or None
- ``tone(seconds, hz, rate)``                    a sine wave, so a test can check the pitch after resampling
- ``corrupt_audio(path)``                        overwrites the audio packets (after the first two) with
                                                 noise, leaving the container and the video intact
"""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np


def tone(seconds: float, hz: float = 440.0, rate: int = 44_100, amplitude: float = 0.4) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (amplitude * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def write_av_video(path: Path, seconds: float, *, audio: np.ndarray | None = None, rate: int = 44_100,
                   stereo: bool = False, fps: int = 2) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as out:
        video = out.add_stream("mpeg4", rate=fps)
        video.width, video.height, video.pix_fmt = 64, 48, "yuv420p"
        sound = out.add_stream("aac", rate=rate, layout="stereo" if stereo else "mono") if audio is not None else None
        for i in range(int(seconds * fps)):
            image = np.full((48, 64, 3), (i * 23) % 255, np.uint8)
            for packet in video.encode(av.VideoFrame.from_ndarray(image, format="rgb24")):
                out.mux(packet)
        if sound is not None:
            channels = 2 if stereo else 1
            for start in range(0, len(audio), 1024):
                block = np.repeat(audio[None, start:start + 1024], channels, axis=0)
                frame = av.AudioFrame.from_ndarray(block, format="fltp", layout="stereo" if stereo else "mono")
                frame.sample_rate, frame.pts = rate, start
                for packet in sound.encode(frame):
                    out.mux(packet)
            for packet in sound.encode(None):
                out.mux(packet)
        for packet in video.encode(None):
            out.mux(packet)
    return path


def corrupt_audio(path: Path, seed: int = 0) -> Path:
    with av.open(str(path)) as container:
        spots = [(p.pos, p.size) for p in container.demux(container.streams.audio[0]) if p.size and p.pos is not None]
    data = bytearray(path.read_bytes())
    rng = np.random.default_rng(seed)
    for pos, size in spots[2:]:
        data[pos:pos + size] = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
    path.write_bytes(bytes(data))
    return path
