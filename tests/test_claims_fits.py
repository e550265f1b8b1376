"""The shared claim helpers against simulation: the decay fit recovers a known rate with an
honest standard error, and the equivalence test passes a deviation at its margin no more often
than its level."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sigprop.claims import z_equivalent
from sigprop.claims.fits import decay_rate, fit_window


def _decays(r, n_inst, depth=30, noise=0.1, seed=0):
    """Instantiations of a metric that decays by ``r`` per layer from the output, with
    multiplicative log-normal noise per instantiation and layer."""
    rng = np.random.default_rng(seed)
    layers = np.arange(1, depth + 1)
    mean = r ** (depth - layers)
    return layers, mean * np.exp(rng.normal(-(noise**2) / 2, noise, (n_inst, depth)))


def test_the_decay_fit_recovers_the_rate_and_its_se_covers_it():
    r_true, hits, n_sim = 0.9, 0, 60
    for seed in range(n_sim):
        layers, v = _decays(r_true, 40, seed=seed)
        use = fit_window(layers, 30, 2)
        r, se = decay_rate(v, layers, use, n_boot=100, seed=seed)
        assert abs(r - r_true) < 0.01
        hits += abs(r - r_true) <= 2 * se
    assert hits / n_sim >= 0.85  # a 2-SE interval covers the rate ~95 % of the time


def test_the_fit_window_keeps_layers_away_from_the_output():
    layers = np.arange(1, 11)
    assert fit_window(layers, 10, 3).tolist() == [True] * 7 + [False] * 3
    assert fit_window(layers, 10, 3, min_layer=2).tolist() == [False] + [True] * 6 + [False] * 3


def test_one_instantiation_has_no_se():
    layers, v = _decays(0.8, 1)
    r, se = decay_rate(v, layers, fit_window(layers, 30, 1))
    assert math.isfinite(r) and math.isnan(se)


@pytest.mark.parametrize("k", [2.0, 3.0])
def test_equivalence_at_its_margin_passes_at_most_at_its_level(k):
    rng = np.random.default_rng(1)
    margin, se = 0.1, 0.03
    n = 20000
    at_margin = [z_equivalent(d, se, margin, k)[0] for d in rng.normal(margin, se, n)]
    rate = at_margin.count("pass") / n
    level = 0.5 * math.erfc(k / math.sqrt(2))
    assert rate <= level + 3 * math.sqrt(level / n)
    inside = [z_equivalent(d, 0.005, margin, k)[0] for d in rng.normal(0.0, 0.005, 2000)]
    assert inside.count("pass") == 2000  # a precise zero deviation passes
    outside = [z_equivalent(d, 0.005, margin, k)[0] for d in rng.normal(0.3, 0.005, 2000)]
    assert outside.count("fail") == 2000
    noisy = [z_equivalent(d, 0.2, margin, k)[0] for d in rng.normal(0.0, 0.2, 2000)]
    assert "pass" not in noisy  # noise never passes


def test_equivalence_without_an_se_or_a_margin_is_inconclusive():
    assert z_equivalent(0.0, float("nan"), 0.1, 2)[0] == "inconclusive"
    assert z_equivalent(0.0, 0.01, 0.0, 2)[0] == "inconclusive"
    v, test, det = z_equivalent(0.01, 0.01, 0.1, 2)
    assert v == "pass" and det == pytest.approx(0.02) and "0.1" in test
