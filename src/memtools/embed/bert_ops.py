"""Arithmetic shared by the batch encoder (``bert_numpy``) and the lone-query path (``bert_query``)."""

from __future__ import annotations

import math

import numpy as np

_ERF_POLY = [np.float32(c) for c in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)]


def gelu(x: np.ndarray) -> np.ndarray:
    """Exact (erf) GELU, in place on ``x``: erf to ~1e-7 by Abramowitz & Stegun 7.1.26 (numpy has
    no erf of its own), written with ``out=`` so a batch makes two temporaries, not a dozen."""
    a = np.abs(x) * np.float32(1 / math.sqrt(2))
    t = a * np.float32(0.3275911)
    t += 1.0
    np.reciprocal(t, out=t)
    poly = t * _ERF_POLY[0]
    for c in _ERF_POLY[1:]:
        poly += c
        poly *= t
    np.square(a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    poly *= a  # 1 - erf(|x|/sqrt 2)
    poly -= 1.0
    poly *= -np.sign(x)  # erf(x/sqrt 2)
    poly += 1.0
    poly *= 0.5
    x *= poly
    return x
