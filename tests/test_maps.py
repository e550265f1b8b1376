"""One-layer maps measured on random dropout layers (000 Fig. 1) against the theory."""

import numpy as np
import torch

from sigprop.measure.maps import one_layer_maps, probe_inputs
from sigprop.runs import RunSpec, Shard
from sigprop.theory import meanfield
from sigprop.train.engine import initial_state


def test_probe_inputs_have_exact_length_and_correlation():
    h = probe_inputs(np.array([0.5, 3.0]), np.array([0.0, 0.9]), d=50, seed=3)
    q = h.pow(2).mean(1)
    torch.testing.assert_close(q, torch.tensor([0.5, 0.5, 3.0, 3.0], dtype=torch.float64))
    c = (h[0::2] * h[1::2]).mean(1) / (q[0::2] * q[1::2]).sqrt()
    torch.testing.assert_close(c, torch.tensor([0.0, 0.9], dtype=torch.float64), atol=1e-12, rtol=0)


def test_measured_maps_agree_with_eqs_2_to_4_within_the_standard_error():
    runs = tuple(
        RunSpec(
            arch="fc",
            dataset="gaussian",
            width=400,
            depth=1,
            activation="tanh",
            sigma_w2=2.0,
            sigma_b2=0.1,
            keep_rate=0.8,
            precision="float64",
            seed=s,
        )
        for s in range(40)
    )
    shard = Shard("t", runs)
    params, _ = initial_state(shard, (200,), 1, torch.device("cpu"), torch.float64)
    qs, cs = np.array([0.5, 2.0, 6.0]), np.array([0.2, 0.6, 1.0])
    df = one_layer_maps(params, runs, qs, cs)
    g = df.groupby("probe")
    se_q = g.q_out.std() / np.sqrt(g.size())
    se_c = g.c_out.std() / np.sqrt(g.size())
    z_q = (g.q_out.mean() - meanfield.q_map(qs, 2.0, 0.1, 0.8, "tanh")) / se_q
    z_c = (
        g.c_out.mean()
        - np.array([meanfield.c_map(c, q, 2.0, 0.1, 0.8, "tanh") for q, c in zip(qs, cs)])
    ) / se_c
    # 6 comparisons of means over 40 instantiations: |z| <= 4 fails by chance with p < 4e-4
    assert np.abs(z_q).max() < 4 and np.abs(z_c).max() < 4, (z_q, z_c)
    # with dropout, identical inputs decorrelate: c_out < 1 at c_in = 1 (Eq. 3 has no 1/rho)
    assert g.c_out.mean().iloc[-1] < 1 - 4 * se_c.iloc[-1]


def test_layer_correlations_follow_the_iterated_maps():
    """Every hidden layer's measured length and correlation of an input pair against 000 Eqs.
    2-4 iterated from the first layer's inputs (meanfield.trajectory), with dropout."""
    from sigprop.measure.maps import layer_correlations

    sw, sb, rho, depth = 1.6, 0.05, 0.9, 4
    runs = tuple(
        RunSpec(
            arch="fc",
            dataset="gaussian",
            width=1000,
            depth=depth,
            activation="tanh",
            sigma_w2=sw,
            sigma_b2=sb,
            keep_rate=rho,
            precision="float64",
            seed=s,
        )
        for s in range(30)
    )
    shard = Shard("t", runs)
    params, _ = initial_state(shard, (1000,), 1, torch.device("cpu"), torch.float64)
    df = layer_correlations(params, runs, q0=1.0, c0=0.5)
    assert sorted(df.layer.unique()) == list(range(1, depth + 1))
    q_th, c_th = meanfield.trajectory(1.0, 0.5, depth, sw, sb, rho, "tanh")
    g = df.groupby("layer")
    z_q = (g.q.mean() - q_th[1:]) / (g.q.std() / np.sqrt(g.size()))
    z_c = (g.c.mean() - c_th[1:]) / (g.c.std() / np.sqrt(g.size()))
    # 8 comparisons of means over 30 instantiations: |z| <= 4 fails by chance with p < 6e-4
    assert np.abs(z_q).max() < 4 and np.abs(z_c).max() < 4, (z_q.tolist(), z_c.tolist())
    # and the measurement could have seen a wrong map: the maps without dropout differ by >> 4 SE
    _, c_nodrop = meanfield.trajectory(1.0, 0.5, depth, sw, sb, 1.0, "tanh")
    assert (np.abs(g.c.mean() - c_nodrop[1:]) / (g.c.std() / np.sqrt(g.size()))).max() > 8
