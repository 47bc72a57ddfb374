"""Diarisation error rate: how much of the speech time is given to the wrong speaker, missed, or invented.

    der = diarisation_error_rate(reference, hypothesis)     # each: [(t_start, t_end, speaker), ...]

The NIST definition (as ``pyannote.metrics.DiarizationErrorRate`` without a forgiveness collar):
(missed speech + false alarm + speaker confusion) / reference speech time, counted on a 10 ms
grid. Hypothesis labels are mapped one-to-one onto reference speakers so as to maximise the time
they agree (every mapping is tried up to 7 labels a side; above that, the largest overlaps are
paired greedily). Overlapping speech counts each speaker, as NIST does.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

Turn = tuple[float, float, str]
STEP = 0.01


def _grid(turns: Sequence[Turn], labels: list[str], frames: int, step: float) -> np.ndarray:
    grid = np.zeros((len(labels), frames), dtype=bool)
    for start, end, who in turns:
        grid[labels.index(who), int(round(start / step)):int(round(end / step))] = True
    return grid


def _best_mapping(overlap: np.ndarray) -> float:
    """The most agreeing time any one-to-one mapping of hypothesis onto reference labels gives."""
    n_ref, n_hyp = overlap.shape
    if min(n_ref, n_hyp) == 0:
        return 0.0
    if max(n_ref, n_hyp) <= 7:
        if n_hyp <= n_ref:
            return max(sum(overlap[r, h] for h, r in enumerate(p)) for p in itertools.permutations(range(n_ref), n_hyp))
        return max(sum(overlap[r, h] for r, h in enumerate(p)) for p in itertools.permutations(range(n_hyp), n_ref))
    total, used_r, used_h = 0.0, set(), set()
    for flat in np.argsort(-overlap, axis=None):
        r, h = divmod(int(flat), n_hyp)
        if r not in used_r and h not in used_h:
            total += overlap[r, h]
            used_r.add(r)
            used_h.add(h)
    return total


def diarisation_error_rate(reference: Sequence[Turn], hypothesis: Sequence[Turn], *, step: float = STEP) -> float:
    """DER of ``hypothesis`` against ``reference`` (0 is perfect; it can pass 1 when much is invented)."""
    end = max([t[1] for t in reference] + [t[1] for t in hypothesis] + [0.0])
    frames = int(round(end / step)) + 1
    ref_labels = sorted({t[2] for t in reference})
    hyp_labels = sorted({t[2] for t in hypothesis})
    ref = _grid(reference, ref_labels, frames, step)
    hyp = _grid(hypothesis, hyp_labels, frames, step)
    ref_count, hyp_count = ref.sum(axis=0), hyp.sum(axis=0)
    total = float(ref_count.sum())
    if total == 0:
        return 0.0 if hyp_count.sum() == 0 else float("inf")
    overlap = (ref[:, None, :] & hyp[None, :, :]).sum(axis=2).astype(float)
    correct = _best_mapping(overlap)
    # NIST: per frame, errors = max(ref, hyp) - correct; summed this is sum(max) - mapped agreement
    return float((np.maximum(ref_count, hyp_count).sum() - correct) / total)
