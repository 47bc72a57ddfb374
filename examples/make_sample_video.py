"""Make the bundled sample: a 3-minute synthetic video in four scenes, drawn with OpenCV.

    python examples/make_sample_video.py                # -> examples/sample/sample.mp4

The scenes, 320x180 at 5 fps:

    0:00-0:40  KITCHEN      a cook in a blue apron walks to the counter, chops a green
                            vegetable and drops the pieces into a pot
    0:40-1:20  FOOTBALL     a player in red dribbles and scores; the scoreboard goes from
                            "HOME 0 - 0 AWAY" to "HOME 1 - 0 AWAY"
    1:20-2:10  WAREHOUSE B  a red ball rolls into a stack of three boxes and knocks them
                            over (cause -> effect); a worker in a yellow vest comes to look
    2:10-3:00  NIGHT STREET a yellow car drives past an "EXIT 12" road sign; the street
                            lamp goes out

The narrator's voice (``sample/narration.opus``, spoken once with espeak-ng by
``sample/make_narration.py``) is muxed in as an Opus track, packets copied unchanged.

The file is deterministic and lossless (FFV1 in an MP4 container, no anti-aliased drawing),
so every machine decodes exactly the same pixels and the recorded perception answers in
``examples/sample/responses.jsonl`` (keyed by a hash of the request, frames included)
replay everywhere. (The frames decode from BGRA FFV1, a lossless integer codec, and the JPEGs
come from libjpeg-turbo's exact integer DCT, so they are the same with or without SIMD; the
narrator's recognised words are not, and the replay compares them instead of hashing them.) A lossy codec would not do: two FFmpeg builds may decode an mp4v or
MJPEG stream to slightly different pixels, and then to different JPEG bytes.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import cv2
import numpy as np

WIDTH, HEIGHT, FPS = 320, 180, 5
DURATION = 180
FONT = cv2.FONT_HERSHEY_SIMPLEX
LINE = cv2.LINE_8  # no anti-aliasing: identical pixels on every OpenCV build
DEFAULT_OUT = Path(__file__).resolve().parent / "sample" / "sample.mp4"
NARRATION = Path(__file__).resolve().parent / "sample" / "narration.opus"  # see sample/make_narration.py


def _lerp(a: float, b: float, t0: float, t1: float, t: float) -> float:
    """``a`` before ``t0``, ``b`` after ``t1``, linear in between."""
    if t <= t0:
        return a
    if t >= t1:
        return b
    return a + (b - a) * (t - t0) / (t1 - t0)


def _text(img: np.ndarray, text: str, org: tuple[int, int], scale: float, color, thickness: int = 1) -> None:
    cv2.putText(img, text, org, FONT, scale, color, thickness, LINE)


def _person(img: np.ndarray, x: int, y: int, shirt, *, arm_up: bool = False) -> None:
    """A stick figure standing on ``y`` (feet), ``x`` its centre."""
    cv2.circle(img, (x, y - 52), 8, (150, 180, 220), -1, LINE)  # head
    cv2.rectangle(img, (x - 8, y - 44), (x + 8, y - 18), shirt, -1, LINE)  # torso
    cv2.line(img, (x - 4, y - 18), (x - 6, y), (40, 40, 40), 3, LINE)  # legs
    cv2.line(img, (x + 4, y - 18), (x + 6, y), (40, 40, 40), 3, LINE)
    hand = (x + 16, y - 58) if arm_up else (x + 16, y - 28)
    cv2.line(img, (x + 8, y - 40), hand, (150, 180, 220), 3, LINE)  # arm


def kitchen(t: float) -> np.ndarray:
    img = np.full((HEIGHT, WIDTH, 3), (190, 215, 235), np.uint8)  # warm wall
    cv2.rectangle(img, (0, 150), (WIDTH, HEIGHT), (70, 100, 140), -1, LINE)  # floor
    cv2.rectangle(img, (12, 12), (118, 42), (255, 255, 255), -1, LINE)  # sign
    cv2.rectangle(img, (12, 12), (118, 42), (30, 30, 30), 2, LINE)
    _text(img, "KITCHEN", (20, 35), 0.6, (20, 20, 20), 2)
    cv2.rectangle(img, (200, 105), (310, 150), (40, 80, 120), -1, LINE)  # counter
    cv2.rectangle(img, (270, 82), (302, 105), (60, 60, 60), -1, LINE)  # pot
    cv2.rectangle(img, (212, 99), (250, 105), (120, 180, 210), -1, LINE)  # cutting board
    x = int(_lerp(40, 185, 0, 15, t))
    _person(img, x, 150, (160, 90, 20), arm_up=15 <= t < 35 and int(t * 4) % 2 == 0)  # blue apron
    pieces = 1 if t < 15 else min(6, 1 + int((t - 15) / 4))
    for i in range(pieces):
        px = 220 + 5 * i
        py = 95
        if t >= 35:  # into the pot
            px = int(_lerp(px, 282 + (i % 3) * 5, 35, 38, t))
            py = int(_lerp(py, 88, 35, 38, t))
        cv2.circle(img, (px, py), 6 if pieces == 1 else 3, (60, 170, 60), -1, LINE)
    return img


def football(t: float) -> np.ndarray:
    img = np.full((HEIGHT, WIDTH, 3), (60, 150, 60), np.uint8)  # grass
    cv2.line(img, (160, 40), (160, HEIGHT), (255, 255, 255), 2, LINE)
    cv2.circle(img, (160, 115), 28, (255, 255, 255), 2, LINE)
    cv2.rectangle(img, (296, 80), (318, 150), (255, 255, 255), 2, LINE)  # goal
    cv2.rectangle(img, (80, 4), (240, 32), (20, 20, 20), -1, LINE)  # scoreboard
    score = "HOME 1 - 0 AWAY" if t >= 65 else "HOME 0 - 0 AWAY"
    _text(img, score, (88, 25), 0.5, (0, 220, 255), 1)
    local = t - 40
    px = int(_lerp(30, 230, 0, 20, local))
    jump = int(10 * abs(math.sin((local - 25) * 3))) if local >= 25 else 0
    _person(img, px, 150 - jump, (30, 30, 200), arm_up=local >= 25)  # red shirt
    if local < 20:
        bx, by = px + 14, 146
    else:
        bx, by = int(_lerp(244, 307, 20, 24, local)), int(_lerp(146, 118, 20, 24, local))
    cv2.circle(img, (bx, by), 5, (250, 250, 250), -1, LINE)
    return img


def warehouse(t: float) -> np.ndarray:
    img = np.full((HEIGHT, WIDTH, 3), (150, 150, 150), np.uint8)  # grey wall
    cv2.rectangle(img, (0, 140), (WIDTH, HEIGHT), (80, 80, 80), -1, LINE)  # concrete floor
    cv2.rectangle(img, (10, 10), (150, 38), (0, 140, 255), -1, LINE)  # orange sign
    _text(img, "WAREHOUSE B", (16, 31), 0.55, (0, 0, 0), 2)
    local = t - 80
    # a red ball rolls in from the left and hits the stack at 20 s, then bounces back a little
    if local < 20:
        bx = int(_lerp(-10, 222, 5, 20, local))
    else:
        bx = int(_lerp(222, 190, 20, 23, local))
    cv2.circle(img, (bx, 132), 8, (30, 30, 220), -1, LINE)
    # three boxes: standing until 20 s, falling 20-24 s, lying on the floor after
    fall = _lerp(0.0, 1.0, 20, 24, local)
    for level in range(3):
        base_x, base_y = 230, 140 - 26 * level
        dx = int(fall * (18 + 22 * level))
        dy = int(fall * 26 * level)
        angle = fall * (0.4 + 0.5 * level) * (1 if level % 2 else -1)
        cx, cy = base_x + 14 + dx, base_y - 13 + dy
        corners = [(-14, -13), (14, -13), (14, 13), (-14, 13)]
        pts = np.array([[int(cx + a * math.cos(angle) - b * math.sin(angle)),
                         int(cy + a * math.sin(angle) + b * math.cos(angle))] for a, b in corners], np.int32)
        cv2.fillConvexPoly(img, pts, (50, 110, 170), LINE)
        cv2.polylines(img, [pts], True, (20, 60, 100), 1, LINE)
    if local >= 30:  # a worker in a yellow vest comes to look
        _person(img, int(_lerp(-10, 170, 30, 40, local)), 140, (0, 220, 240))
    return img


def night_street(t: float) -> np.ndarray:
    img = np.full((HEIGHT, WIDTH, 3), (70, 30, 20), np.uint8)  # night sky
    cv2.circle(img, (40, 30), 14, (200, 230, 235), -1, LINE)  # moon
    cv2.rectangle(img, (0, 125), (WIDTH, HEIGHT), (45, 45, 45), -1, LINE)  # road
    for x in range(0, WIDTH, 40):
        cv2.line(img, (x, 152), (x + 20, 152), (200, 200, 200), 2, LINE)
    cv2.rectangle(img, (200, 30), (290, 60), (40, 120, 20), -1, LINE)  # green road sign
    _text(img, "EXIT 12", (210, 52), 0.6, (255, 255, 255), 2)
    cv2.line(img, (245, 60), (245, 125), (120, 120, 120), 2, LINE)
    local = t - 130
    cv2.line(img, (120, 40), (120, 125), (110, 110, 110), 3, LINE)  # street lamp
    lamp_on = local < 35
    cv2.circle(img, (120, 40), 7, (120, 230, 255) if lamp_on else (60, 60, 60), -1, LINE)
    if 5 <= local < 25:  # a yellow car drives left to right
        x = int(_lerp(-60, 340, 5, 25, local))
        cv2.rectangle(img, (x, 128), (x + 56, 146), (0, 210, 240), -1, LINE)
        cv2.rectangle(img, (x + 12, 116), (x + 42, 128), (0, 190, 220), -1, LINE)
        cv2.circle(img, (x + 12, 148), 6, (20, 20, 20), -1, LINE)
        cv2.circle(img, (x + 44, 148), 6, (20, 20, 20), -1, LINE)
    return img


SCENES = ((0, 40, kitchen), (40, 80, football), (80, 130, warehouse), (130, 180, night_street))


def frame_at(t: float) -> np.ndarray:
    for start, end, draw in SCENES:
        if start <= t < end:
            return draw(t)
    return SCENES[-1][2](t)


def make_sample_video(path: str | Path = DEFAULT_OUT, *, fps: int = FPS, duration: int = DURATION,
                      narration: Path | None = NARRATION) -> Path:
    """Write the sample video (lossless FFV1 in MP4, with the narrator's Opus track) and return its path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    silent = path.with_name(f".{path.stem}.silent{path.suffix}") if narration else path
    _write_frames(silent, fps, duration)
    if narration:
        try:
            mux_audio(silent, narration, path)
        finally:
            silent.unlink(missing_ok=True)
    return path


def mux_audio(video: Path, audio: Path, out: Path) -> None:
    """``video``'s stream and ``audio``'s first track, copied packet by packet (nothing re-encoded) into ``out``."""
    import av

    with av.open(str(video)) as vin, av.open(str(audio)) as ain, av.open(str(out), "w", format="mp4") as dst:
        vstream = dst.add_stream_from_template(vin.streams.video[0])
        astream = dst.add_stream_from_template(ain.streams.audio[0])
        for src, stream in ((vin, vstream), (ain, astream)):
            for packet in src.demux(src.streams[0]):
                if packet.dts is None:
                    continue
                packet.stream = stream
                dst.mux(packet)


def _write_frames(path: Path, fps: int, duration: int) -> None:
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"FFV1"), fps, (WIDTH, HEIGHT))
    if not writer.isOpened():
        raise RuntimeError(f"OpenCV cannot write FFV1 video to {path}; install opencv-python-headless >= 4.9")
    try:
        for i in range(duration * fps):
            writer.write(frame_at(i / fps))
    finally:
        writer.release()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", type=Path, default=DEFAULT_OUT, help=f"output file (default {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    path = make_sample_video(args.out)
    print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB, {DURATION} s, {WIDTH}x{HEIGHT} at {FPS} fps)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
