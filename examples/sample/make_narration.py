"""Make ``narration.opus``: the sample's narrator, spoken once by espeak-ng and committed.

    apt-get install -y espeak-ng          # only to remake the file; nothing else needs espeak
    python examples/sample/make_narration.py

Each sentence of ``NARRATION`` is synthesized (US English voice, 135 words a minute; the
sentences in ``SECOND_VOICE`` by a second, British voice), placed
at its second of the 3-minute sample and the whole track is written as 16 kHz mono Opus
(silence costs almost nothing). ``examples/make_sample_video.py`` muxes it into
``sample.mp4``; ``benchmarks/speech.py`` scores recognition against these sentences.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import av
import numpy as np

HERE = Path(__file__).resolve().parent
OUT = HERE / "narration.opus"
RATE = 16_000
DURATION = 140.0  # the last sentence ends at 2:18; the video goes on in silence

NARRATION = (  # (second of the video, sentence); the scenes are listed in make_sample_video.py
    (4.0, "In the kitchen, the cook chops a green vegetable and puts it into a pot."),
    (44.0, "On the football pitch, the player in red shoots the ball into the goal."),
    (83.0, "Now we are in the warehouse. Watch the red ball roll towards the boxes."),
    (101.0, "The red ball hits the stack of boxes, and the boxes fall over."),
    (112.0, "A worker comes over to look at the fallen boxes."),
    (134.0, "At night, a yellow car drives past the exit sign."),
)
# A second voice (a British woman's, higher) reads these sentences, so the sample has two speakers
# to tell apart (docs/speech.md, "Who spoke"); the first voice reads the rest.
SECOND_VOICE = {44.0, 134.0}
VOICES = {False: ["-v", "en-us", "-s", "135"], True: ["-v", "en-gb-x-rp+f3", "-p", "75", "-s", "125"]}


def speak(text: str, folder: Path, second: bool = False) -> np.ndarray:
    """One sentence as 16 kHz mono float32, synthesized with espeak-ng and resampled with PyAV."""
    wav = folder / "sentence.wav"
    subprocess.run(["espeak-ng", *VOICES[second], "-w", str(wav), text], check=True)
    with av.open(str(wav)) as container:
        resampler = av.AudioResampler(format="flt", layout="mono", rate=RATE)
        parts = [out.to_ndarray().reshape(-1) for frame in container.decode(audio=0)
                 for out in resampler.resample(frame)]
        parts += [out.to_ndarray().reshape(-1) for out in resampler.resample(None)]
    return np.concatenate(parts)


def write_opus(track: np.ndarray, path: Path) -> None:
    with av.open(str(path), "w", format="ogg") as container:
        stream = container.add_stream("libopus", rate=48_000, layout="mono")
        stream.bit_rate = 16_000
        resampler = av.AudioResampler(format="s16", layout="mono", rate=48_000)
        pcm = (np.clip(track, -1, 1) * 32767).astype(np.int16)
        for start in range(0, len(pcm), RATE):
            frame = av.AudioFrame.from_ndarray(pcm[None, start:start + RATE], format="s16", layout="mono")
            frame.sample_rate = RATE
            for out in resampler.resample(frame):
                for packet in stream.encode(out):
                    container.mux(packet)
        for out in resampler.resample(None):
            for packet in stream.encode(out):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)


def main() -> int:
    track = np.zeros(int(DURATION * RATE), np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        for t, text in NARRATION:
            voice = speak(text, Path(tmp), second=t in SECOND_VOICE)
            start = int(t * RATE)
            track[start:start + len(voice)] += voice[:len(track) - start]
            print(f"{t:6.1f}s-{t + len(voice) / RATE:6.1f}s  {text}")
    write_opus(track, OUT)
    print(f"wrote {OUT} ({OUT.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
