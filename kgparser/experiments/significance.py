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


def _arrays(correct_a, correct_b, words, words_b=None) -> tuple[np.ndarray, ...]:
    a = np.asarray(correct_a, dtype=np.float64)
    b = np.asarray(correct_b, dtype=np.float64)
    n = np.asarray(words, dtype=np.float64)
    n_b = n if words_b is None else np.asarray(words_b, dtype=np.float64)
    if not (a.shape == b.shape == n.shape == n_b.shape) or a.ndim != 1:
        raise ValueError(f"per-sentence arrays must have one shared length, got {a.shape}, {b.shape}, {n.shape}, "
                         f"{n_b.shape}")
    if not len(n) or n.sum() <= 0 or n_b.sum() <= 0:
        raise ValueError("no words to compare")
    return a, b, n, n_b


def _differences(sum_a, total_a, sum_b, total_b, shared: bool) -> np.ndarray:
    """``sum_b / total_b - sum_a / total_a`` per sample (``shared``: the totals
    are the same words); NaN where a total is 0."""
    if shared:
        return (sum_b - sum_a) / total_a
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((total_a > 0) & (total_b > 0), sum_b / total_b - sum_a / total_a, np.nan)


def _count_extreme(deltas: np.ndarray, threshold: float | np.ndarray) -> tuple[int, int]:
    """(samples at least as extreme as ``threshold``, samples with a defined difference)."""
    defined = ~np.isnan(deltas)
    return int(np.count_nonzero(np.abs(deltas[defined]) >= threshold - 1e-12)), int(np.count_nonzero(defined))


def paired_bootstrap(correct_a, correct_b, words, samples: int = 10_000, seed: int = 12345,
                     chunk: int = 1000, words_b=None) -> PairedResult:
    """Two-sided paired bootstrap test of ``sum(b)/sum(words_b) - sum(a)/sum(words)``
    (``words_b`` defaults to ``words``: both systems scored over the same words;
    give it for a ratio whose denominator is the system's own, such as the
    precision of its non-projective arcs; samples whose denominator is 0 are
    left out)."""
    a, b, n, n_b = _arrays(correct_a, correct_b, words, words_b)
    shared = words_b is None
    observed = _differences(a.sum(), n.sum(), b.sum(), n_b.sum(), shared)
    rng = np.random.default_rng(seed)
    size = len(n)
    extreme = defined = 0
    for start in range(0, samples, chunk):
        count = min(chunk, samples - start)
        drawn = rng.integers(0, size, size=(count, size))
        total_a = n[drawn].sum(axis=1)
        total_b = total_a if shared else n_b[drawn].sum(axis=1)
        deltas = _differences(a[drawn].sum(axis=1), total_a, b[drawn].sum(axis=1), total_b, shared)
        hits, valid = _count_extreme(deltas - observed, abs(observed))
        extreme, defined = extreme + hits, defined + valid
    return PairedResult(a.sum() / n.sum(), b.sum() / n_b.sum(), (extreme + 1) / (defined + 1), samples, "bootstrap")


def paired_randomization(correct_a, correct_b, words, samples: int = 10_000, seed: int = 12345,
                         chunk: int = 1000, words_b=None) -> PairedResult:
    """Two-sided approximate randomization test (sentence-level swaps of the
    two systems' outputs; ``words_b`` as for :func:`paired_bootstrap`)."""
    a, b, n, n_b = _arrays(correct_a, correct_b, words, words_b)
    shared = words_b is None
    observed = _differences(a.sum(), n.sum(), b.sum(), n_b.sum(), shared)
    rng = np.random.default_rng(seed)
    extreme = defined = 0
    for start in range(0, samples, chunk):
        count = min(chunk, samples - start)
        swapped = rng.integers(0, 2, size=(count, len(n))).astype(np.float64)
        moved, moved_total = swapped @ (b - a), swapped @ (n_b - n)
        total_a = n.sum() + moved_total
        total_b = total_a if shared else n_b.sum() - moved_total
        deltas = _differences(a.sum() + moved, total_a, b.sum() - moved, total_b, shared)
        hits, valid = _count_extreme(deltas, abs(observed))
        extreme, defined = extreme + hits, defined + valid
    return PairedResult(a.sum() / n.sum(), b.sum() / n_b.sum(), (extreme + 1) / (defined + 1), samples,
                        "randomization")


TESTS = {"bootstrap": paired_bootstrap, "randomization": paired_randomization}


def paired_test(name: str, correct_a, correct_b, words, samples: int = 10_000, seed: int = 12345,
                words_b=None) -> PairedResult:
    return TESTS[name](correct_a, correct_b, words, samples=samples, seed=seed, words_b=words_b)
