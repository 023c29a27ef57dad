"""Paired significance tests over test sentences, with numpy only.

Both tests compare two systems' outputs on the *same* test sentences.  A
system's score is a ratio of sums over sentences -- correct words / words --
so each system is given as per-sentence ``correct`` counts and the shared
per-sentence word counts ``words``.  With several seeds, the ``correct``
counts of the seeds can be summed per sentence ("pooled": the score is then
the mean accuracy over seeds, and resampling sentences keeps every seed's
analysis of a sentence together).

* :func:`paired_bootstrap` (Efron & Tibshirani 1993; Koehn 2004; as in
  Gómez-Rodríguez & Fernández-González's 2-Planar paper, 10,000 samples):
  draw test sets of the same size from the sentences with replacement; the
  two-sided p-value is the share of samples whose difference departs from the
  observed difference by at least the observed difference (the bootstrap
  distribution, centred, stands in for the null distribution).
* :func:`paired_randomization` (approximate randomization, Noreen 1989; Yeh
  2000): under the null hypothesis the two systems' outputs on a sentence are
  exchangeable, so swap them sentence by sentence with probability 1/2; the
  two-sided p-value is the share of shuffles whose absolute difference is at
  least the observed one.

Both p-values use the (count + 1) / (samples + 1) correction, so they are never
0 and are valid for a finite number of samples.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PairedResult:
    score_a: float
    score_b: float
    p_value: float
    samples: int
    test: str

    @property
    def delta(self) -> float:
        """``score_b - score_a``."""
        return self.score_b - self.score_a

    def significant(self, alpha: float) -> bool:
        return self.p_value < alpha


def _arrays(correct_a, correct_b, words) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a = np.asarray(correct_a, dtype=np.float64)
    b = np.asarray(correct_b, dtype=np.float64)
    n = np.asarray(words, dtype=np.float64)
    if not (a.shape == b.shape == n.shape) or a.ndim != 1:
        raise ValueError(f"per-sentence arrays must have one shared length, got {a.shape}, {b.shape}, {n.shape}")
    if not len(n) or n.sum() <= 0:
        raise ValueError("no words to compare")
    return a, b, n


def paired_bootstrap(correct_a, correct_b, words, samples: int = 10_000, seed: int = 12345,
                     chunk: int = 1000) -> PairedResult:
    """Two-sided paired bootstrap test of ``sum(b)/sum(words) - sum(a)/sum(words)``."""
    a, b, n = _arrays(correct_a, correct_b, words)
    observed = (b.sum() - a.sum()) / n.sum()
    rng = np.random.default_rng(seed)
    size = len(n)
    diff = b - a
    extreme = 0
    for start in range(0, samples, chunk):
        count = min(chunk, samples - start)
        drawn = rng.integers(0, size, size=(count, size))
        deltas = diff[drawn].sum(axis=1) / n[drawn].sum(axis=1)
        extreme += int(np.count_nonzero(np.abs(deltas - observed) >= abs(observed) - 1e-12))
    return PairedResult(a.sum() / n.sum(), b.sum() / n.sum(), (extreme + 1) / (samples + 1), samples, "bootstrap")


def paired_randomization(correct_a, correct_b, words, samples: int = 10_000, seed: int = 12345,
                         chunk: int = 1000) -> PairedResult:
    """Two-sided approximate randomization test (sentence-level swaps)."""
    a, b, n = _arrays(correct_a, correct_b, words)
    total = n.sum()
    diff = b - a
    observed = diff.sum() / total
    rng = np.random.default_rng(seed)
    extreme = 0
    for start in range(0, samples, chunk):
        count = min(chunk, samples - start)
        signs = rng.integers(0, 2, size=(count, len(n))) * 2.0 - 1.0
        deltas = (signs @ diff) / total
        extreme += int(np.count_nonzero(np.abs(deltas) >= abs(observed) - 1e-12))
    return PairedResult(a.sum() / total, b.sum() / total, (extreme + 1) / (samples + 1), samples, "randomization")


TESTS = {"bootstrap": paired_bootstrap, "randomization": paired_randomization}


def paired_test(name: str, correct_a, correct_b, words, samples: int = 10_000, seed: int = 12345) -> PairedResult:
    return TESTS[name](correct_a, correct_b, words, samples=samples, seed=seed)
