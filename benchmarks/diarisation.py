"""Diarisation: who spoke, on synthetic conversations, against two baselines; and its CPU cost.

    python benchmarks/diarisation.py [--conversations 12] [--turns 16] [--threads 2]

Data. No real multi-speaker speech ships offline (PyPI, npm and Debian were searched: speech
corpora are downloaded at run time, e.g. librosa's examples and pyannote's, or not packaged at
all; Debian's mbrola voices, made from real recordings, are not in this mirror). So the
conversations are synthetic: ``memtools.speech.synthetic`` speaks sentences with espeak-ng
voice variants at different pitches and paces, 2 to 4 voices per conversation (drawn from 6),
16 turns each, with 0.3-1.2 s pauses. Synthetic voices are more regular than people, and some
variants are close to each other, so these numbers say the method works, not how well it
works on real recordings.

Each turn is one utterance (the recogniser's segments, as in a build); the systems label them:

- ``one speaker``: every utterance S1 (the DER of saying nothing about speakers);
- ``MFCC means``: 20 MFCCs (log mel + DCT) averaged per utterance, standardised, clustered with
  the same average-linkage clustering at the best threshold for this data (an oracle choice,
  generous to the baseline);
- ``GE2E``: Resemblyzer's voice encoder on numpy (``memtools.speech.voice``), clustered at
  ``THRESHOLD`` (and at a sweep of thresholds, to show where the choice sits).

DER is ``memtools.speech.der`` (NIST, no collar, on the turns' times). Cost: CPU seconds (all
threads) of embedding per hour of speech, with ``--threads`` BLAS threads.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load_average, markdown_table, offline  # noqa: E402

VOICES = (("en-us+m3", 35, 150), ("en-gb-x-rp+f3", 75, 165), ("en-gb-scotland+m7", 55, 135), ("en-us+f5", 90, 175),
          ("en-gb+m1", 25, 140), ("en-us+f2", 60, 185))
WORDS = ["the report", "our budget", "the new office", "this week's schedule", "the client visit", "the test results",
         "the delivery", "the next meeting"]
VERBS = ["I think we should look at", "Could you send me", "We still need to discuss", "Has anyone checked",
         "Let me tell you about", "I am not sure about"]
ENDS = ["before Friday.", "again tomorrow.", "with the whole team.", "as soon as possible.", "after lunch.", "today."]


def sentences(rng: np.random.Generator, n: int) -> list[str]:
    return [f"{VERBS[rng.integers(len(VERBS))]} {WORDS[rng.integers(len(WORDS))]} {ENDS[rng.integers(len(ENDS))]}"
            for _ in range(n)]


def mfcc_means(clips: list[np.ndarray]) -> np.ndarray:
    from memtools.speech.voice import mel_spectrogram

    n = 40
    dct = np.cos(np.pi / n * (np.arange(n)[None, :] + 0.5) * np.arange(20)[:, None])  # DCT-II, 20 coefficients
    rows = np.array([(np.log(mel_spectrogram(c) + 1e-6) @ dct.T).mean(axis=0) for c in clips])
    return (rows - rows.mean(axis=0)) / (rows.std(axis=0) + 1e-9)


GE2E_SWEEP = (0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5)
MFCC_SWEEP = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


def score(encoder, clips: list[np.ndarray], turns, reference, threads: int) -> tuple[dict[str, object], float]:
    """DERs of every system on one recording (utterances ``turns`` cut as ``clips``), and the embedding's CPU time."""
    from threadpoolctl import threadpool_limits

    from memtools.speech.der import diarisation_error_rate
    from memtools.speech.speakers import THRESHOLD, cluster

    def der(labels) -> float:
        return diarisation_error_rate(reference, [(a, b, f"S{n}") for (a, b, _), n in zip(turns, labels, strict=True)])

    with threadpool_limits(threads):
        started = time.process_time()
        vectors = encoder.embed(clips)
        cpu = time.process_time() - started
    mfcc = mfcc_means(clips)
    mfcc /= np.linalg.norm(mfcc, axis=1, keepdims=True)
    labels = cluster(vectors, THRESHOLD)
    return {"one": der([0] * len(turns)), "ge2e": der(labels), "k": len(set(labels.tolist())),
            "ge2e_sweep": {t: der(cluster(vectors, t)) for t in GE2E_SWEEP},
            "mfcc_sweep": {t: der(cluster(mfcc, t)) for t in MFCC_SWEEP}}, cpu


def table(results: list[dict[str, object]], true_k: list[int]) -> str:
    from memtools.speech.speakers import THRESHOLD

    def mean(key: str, t: float | None = None) -> float:
        return float(np.mean([r[key][t] if t is not None else r[key] for r in results]))  # type: ignore[index]

    best = min(MFCC_SWEEP, key=lambda t: mean("mfcc_sweep", t))
    hits = sum(r["k"] == k for r, k in zip(results, true_k, strict=True))
    rows = [["every utterance one speaker", f"{mean('one'):.3f}", ""],
            [f"MFCC means, best threshold ({best}, an oracle choice)", f"{mean('mfcc_sweep', best):.3f}", ""],
            [f"GE2E, threshold {THRESHOLD}", f"{mean('ge2e'):.3f}",
             f"right number of speakers in {hits}/{len(results)}"]]
    sweep = ", ".join(f"{t}: {mean('ge2e_sweep', t):.3f}" for t in GE2E_SWEEP)
    return markdown_table(["system", "DER", "note"], rows) + f"\n\nGE2E threshold sweep (DER): {sweep}"


def real_sample(path: Path | None) -> tuple[np.ndarray, list, list] | None:
    """pyannote.audio's sample (real two-speaker speech, 30 s, MIT-licensed package): audio, STM utterances, RTTM turns.

    ``path``: the pyannote.audio wheel (``pip download pyannote.audio --no-deps``) or its ``sample`` folder;
    default: the installed pyannote.audio's (found without importing it)."""
    import importlib.util
    import io
    import wave
    import zipfile

    files: dict[str, bytes] = {}
    names = ("sample.wav", "sample.stm", "sample.rttm")
    if path is None:
        try:
            spec = importlib.util.find_spec("pyannote.audio")
        except ModuleNotFoundError:
            spec = None
        if spec is None or not spec.submodule_search_locations:
            return None
        path = Path(next(iter(spec.submodule_search_locations))) / "sample"
    if path.is_file():
        with zipfile.ZipFile(path) as z:
            files = {n: z.read(f"pyannote/audio/sample/{n}") for n in names}
    else:
        files = {n: (path / n).read_bytes() for n in names}
    with wave.open(io.BytesIO(files["sample.wav"])) as w:
        audio = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32768
    turns = [(float(f[3]), float(f[4]), f[2]) for f in (ln.split() for ln in files["sample.stm"].decode().splitlines())]
    reference = [(float(f[3]), float(f[3]) + float(f[4]), f[7])
                 for f in (ln.split() for ln in files["sample.rttm"].decode().splitlines())]
    return audio, turns, reference


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--conversations", type=int, default=12)
    ap.add_argument("--turns", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--real", type=Path, default=None,
                    help="pyannote.audio's wheel or sample folder (default: the installed package's, if any)")
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    offline()
    from memtools.speech.synthetic import RATE, conversation, espeak_available
    from memtools.speech.voice import VoiceEncoder

    encoder = VoiceEncoder()
    print(f"load {load_average()}")
    real = real_sample(args.real)
    if real is not None:
        audio, turns, reference = real
        clips = [audio[int(a * RATE):int(b * RATE)] for a, b, _ in turns]
        result, _ = score(encoder, clips, turns, reference, args.threads)
        print("\n# Real speech: pyannote.audio's sample (30 s, 2 speakers, 13 utterances from its STM, DER against "
              "its RTTM)\n")
        print(table([result], [2]))
    else:
        print("\n(no real sample: pip download pyannote.audio --no-deps and pass --real WHEEL)")
    if not espeak_available():
        raise SystemExit("the synthetic conversations need espeak-ng: apt-get install espeak-ng")
    rng = np.random.default_rng(11)
    results, true_k = [], []
    cpu = speech_sec = 0.0
    for _ in range(args.conversations):
        k = int(rng.integers(2, 5))
        voices = tuple(VOICES[i] for i in rng.choice(len(VOICES), size=k, replace=False))
        order = [int(i) for i in rng.integers(0, k, size=args.turns)]
        order[:k] = list(range(k))  # every voice speaks
        rng.shuffle(order)
        audio, turns = conversation(order, sentences(rng, args.turns), voices=voices, gap=float(rng.uniform(0.3, 1.2)))
        clips = [audio[int(a * RATE):int(b * RATE)] for a, b, _ in turns]
        speech_sec += sum(len(c) for c in clips) / RATE
        result, seconds = score(encoder, clips, turns, turns, args.threads)
        cpu += seconds
        results.append(result)
        true_k.append(k)
    print(f"\n# Synthetic: {args.conversations} conversations of {args.turns} turns, 2-4 espeak-ng voices each "
          f"({speech_sec / 60:.1f} min of speech)\n")
    print(table(results, true_k))
    print(f"\nEmbedding cost: {cpu / speech_sec * 3600:.0f} CPU seconds per hour of speech "
          f"({args.threads} BLAS threads; {cpu:.1f} s for {speech_sec:.0f} s)")


if __name__ == "__main__":
    main()
