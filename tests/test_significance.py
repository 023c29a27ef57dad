"""Paired significance tests of the experiment reports
(kgparser/experiments/significance.py): no false alarm on identical systems,
p-values against the exact bootstrap and randomization distributions, and
exhaustive enumeration, with shared and with each side's own denominators."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from kgparser.experiments.significance import paired_bootstrap, paired_randomization


def _synthetic_differences(n: int = 1000, better: int = 50, worse: int = 30):
    """One word per sentence; B is right and A wrong on ``better`` sentences, the reverse on ``worse``."""
    a = np.ones(n)
    b = np.ones(n)
    b[:better] = 1
    a[:better] = 0
    a[better:better + worse] = 1
    b[better:better + worse] = 0
    return a, b, np.ones(n)


def test_identical_systems_are_never_significant():
    a = np.array([3, 5, 2, 7, 1])
    words = np.array([4, 6, 5, 9, 2])
    for test in (paired_bootstrap, paired_randomization):
        result = test(a, a, words, samples=500)
        assert result.p_value == 1.0 and result.delta == 0.0


def test_large_difference_has_the_smallest_p_value():
    a, b, words = _synthetic_differences(better=200, worse=0)
    for test in (paired_bootstrap, paired_randomization):
        result = test(a, b, words, samples=2000)
        assert result.p_value == pytest.approx(1 / 2001)
        assert result.delta == pytest.approx(0.2)


def _exact_randomization_p(better: int, worse: int) -> float:
    """Swapping decides each discordant sentence's sign by a fair coin: the difference
    in words is 2K - m with K ~ Binomial(m, 1/2), m = better + worse."""
    m, observed = better + worse, abs(better - worse)
    return sum(math.comb(m, k) for k in range(m + 1) if abs(2 * k - m) >= observed) / 2 ** m


def _exact_bootstrap_p(n: int, better: int, worse: int) -> float:
    """A resample draws n sentences; each adds +1 (B right, A wrong), -1 or 0 to the
    difference in words, so the difference's distribution is a power of that step."""
    step = np.array([worse / n, 1 - (better + worse) / n, better / n])  # values -1, 0, +1
    distribution = np.array([1.0])
    for _ in range(n):
        distribution = np.convolve(distribution, step)
    values = np.arange(-n, n + 1)
    observed = better - worse
    return float(distribution[np.abs(values - observed) >= observed].sum())


def test_p_values_match_the_exact_distributions():
    """B - A = +20 words of 1000 (50 sentences better, 30 worse): the Monte Carlo
    p-values agree with the exact ones (about 0.034 and 0.029)."""
    a, b, words = _synthetic_differences()
    randomization = paired_randomization(a, b, words, samples=10_000, seed=1)
    bootstrap = paired_bootstrap(a, b, words, samples=10_000, seed=1)
    assert randomization.p_value == pytest.approx(_exact_randomization_p(50, 30), abs=0.006)
    assert bootstrap.p_value == pytest.approx(_exact_bootstrap_p(1000, 50, 30), abs=0.006)
    assert (bootstrap.score_a, bootstrap.score_b) == (pytest.approx(0.95), pytest.approx(0.97))
    assert randomization.delta == pytest.approx(0.02)


def test_randomization_matches_exhaustive_enumeration():
    rng = np.random.default_rng(3)
    words = rng.integers(1, 20, size=12)
    a = rng.binomial(words, 0.7)
    b = rng.binomial(words, 0.8)
    observed = abs((b - a).sum())
    extreme = sum(abs(sum(s * d for s, d in zip(signs, b - a))) >= observed
                  for signs in itertools.product((1, -1), repeat=12))
    exact = extreme / 2 ** 12
    assert paired_randomization(a, b, words, samples=20_000, seed=5).p_value == pytest.approx(exact, abs=0.01)


def test_randomization_of_own_denominators_matches_exhaustive_enumeration():
    """A precision (each side's own denominator): swapping a sentence swaps its
    numerator and its denominator; the p-value is that of all 2^12 swaps."""
    rng = np.random.default_rng(4)
    predicted_a, predicted_b = rng.integers(0, 6, size=12), rng.integers(1, 6, size=12)
    right_a, right_b = rng.binomial(predicted_a, 0.3), rng.binomial(predicted_b, 0.6)
    observed = abs(right_b.sum() / predicted_b.sum() - right_a.sum() / predicted_a.sum())
    extreme = 0
    for swaps in itertools.product((False, True), repeat=12):
        swap = np.array(swaps)
        a, b = np.where(swap, right_b, right_a), np.where(swap, right_a, right_b)
        n_a, n_b = np.where(swap, predicted_b, predicted_a), np.where(swap, predicted_a, predicted_b)
        extreme += abs(b.sum() / n_b.sum() - a.sum() / n_a.sum()) >= observed - 1e-12
    result = paired_randomization(right_a, right_b, predicted_a, samples=20_000, seed=5, words_b=predicted_b)
    assert result.p_value == pytest.approx(extreme / 2 ** 12, abs=0.01)
    assert result.delta == pytest.approx(right_b.sum() / predicted_b.sum() - right_a.sum() / predicted_a.sum())


def test_own_denominators_equal_to_the_shared_ones_change_nothing():
    a, b, words = _synthetic_differences()
    for test in (paired_bootstrap, paired_randomization):
        assert test(a, b, words, samples=2000, words_b=words) == test(a, b, words, samples=2000)


def test_bootstrap_samples_without_a_denominator_are_left_out():
    """Only sentence 0 has predicted arcs on side B: a resample without it has no
    precision for B and is not counted, so the p-value is over the others."""
    right_a, predicted_a = np.array([1, 1, 0, 0]), np.array([2, 2, 0, 0])
    right_b, predicted_b = np.array([2, 0, 0, 0]), np.array([2, 0, 0, 0])
    result = paired_bootstrap(right_a, right_b, predicted_a, samples=4000, seed=2, words_b=predicted_b)
    assert (result.score_a, result.score_b) == (0.5, 1.0)
    # a resample holds sentence 0 with probability 1 - (3/4)^4; then B's precision is 1 and
    # A's 0.5, so no resample is extreme and p = 1 / (defined resamples + 1), not 1 / 4001
    assert result.p_value == pytest.approx(1 / (4000 * (1 - 0.75 ** 4) + 1), rel=0.05)
    with pytest.raises(ValueError):
        paired_bootstrap(right_a, right_b, predicted_a, words_b=np.zeros(4))


def test_mismatched_inputs_are_rejected():
    with pytest.raises(ValueError):
        paired_bootstrap([1, 2], [1, 2, 3], [2, 2])
