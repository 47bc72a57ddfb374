"""Cross-video voice identity: how far apart the voice clusters of one speaker in two videos are,
against those of two different speakers; the threshold ``memtools.store.library.people`` links at.

    python benchmarks/voice_identity.py [--utterances 4] [--trials 3]

Data. Synthetic voices (espeak-ng variants, the six of ``benchmarks/diarisation.py``, stated as such:
no real multi-speaker speech ships offline, see that benchmark), and the bundled sample's two
narrators (``examples/sample/narration.opus``) when PyAV can read it. A "video cluster" is what a
build keeps: the unit centroid of a speaker's utterances' GE2E vectors (``voices/<video>.json``).
For every voice, ``--trials`` clusters of ``--utterances`` different sentences each are made (as if
from different videos); same-speaker pairs are clusters of one voice, different-speaker pairs
clusters of two. The table gives the cosine ranges and the errors at each candidate threshold.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import markdown_table  # noqa: E402
from diarisation import VOICES, sentences  # noqa: E402


def centroid(vectors: np.ndarray) -> np.ndarray:
    c = vectors.mean(axis=0)
    return c / max(float(np.linalg.norm(c)), 1e-12)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--utterances", type=int, default=4)
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    from memtools.speech.synthetic import espeak_available, speak
    from memtools.speech.voice import VoiceEncoder

    if not espeak_available():
        print("espeak-ng is not installed (apt-get install espeak-ng); nothing to measure")
        return 1
    encoder = VoiceEncoder()
    rng = np.random.default_rng(7)
    clusters: list[tuple[int, np.ndarray]] = []
    for v, voice in enumerate(VOICES):
        for _ in range(args.trials):
            clips = [speak(s, voice) for s in sentences(rng, args.utterances)]
            clusters.append((v, centroid(encoder.embed(clips))))
    same, apart = [], []
    for (va, a), (vb, b) in itertools.combinations(clusters, 2):
        (same if va == vb else apart).append(float(a @ b))
    same_a, apart_a = np.array(same), np.array(apart)
    print(f"{len(VOICES)} synthetic voices, {args.trials} clusters of {args.utterances} utterances each")
    print(markdown_table(["pairs", "n", "min", "p5", "median", "p95", "max"], [
        [name, len(x), f"{x.min():.3f}", f"{np.percentile(x, 5):.3f}", f"{np.median(x):.3f}",
         f"{np.percentile(x, 95):.3f}", f"{x.max():.3f}"] for name, x in (("same voice", same_a),
                                                                          ("different voices", apart_a))]))
    rows = []
    for threshold in (0.75, 0.8, 0.85, 0.88, 0.9, 0.92, 0.95):
        rows.append([threshold, f"{(same_a < threshold).mean():.3f}", f"{(apart_a >= threshold).mean():.3f}"])
    print(markdown_table(["threshold", "same voice missed", "different voices linked"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
