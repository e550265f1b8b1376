"""Gradient metrics of LINEAR dropout networks without gradient independence.

Paper: 000 (Huang et al. 2019, arXiv:1912.09132, "Mean field theory
for deep dropout networks"), Section 4.1, Eq. (12), its derivation in the
Supplement (Eqs. S1-S13 for ``g_aa``, S14-S25 for ``g_ab``) and the conjectured
chi_1 law Eq. (13).

Setting (000 Eq. 1 with ``phi = identity``): ``z^l = (1/rho) W^l (p^l * z^{l-1}) + b^l``,
``W ~ N(0, sigma_w2/N)``, ``b ~ N(0, sigma_b2)``, keep masks ``p ~ Bernoulli(rho)``
drawn independently per layer and per input, output ``y = z^L``, zero labels and
loss ``E_a = sum_i (z^L_i)^2`` (so ``delta^L = 2 z^L``); the SAME weights are used
forward and backward.  The metrics of Eq. (8) at layer ``l`` (``1 <= l <= L``) are

    g_aa^l = (1/N^2) sum_ij (dE_a/dW^l_ij)^2,
    g_ab^l = |(1/N^2) sum_ij dE_a/dW^l_ij dE_b/dW^l_ij|,
    g~_ab^l = (1/N^2) sum_ij |dE_a/dW^l_ij dE_b/dW^l_ij|     (Section 4.1, last paragraph).

Normalization (checked against the derivation).  ``dE/dW^l_ij = (p^l_j/rho)
z^{l-1}_j delta^l_i`` (Eq. S12) is an O(1) number for ``W ~ N(0, sigma_w2/N)``, so
the ``1/N^2`` of Eq. (8) makes ``g`` the MEAN over the N^2 entries and no factor
of N appears anywhere: the gradient matrix is the outer product
``delta^l (p^l z^{l-1}/rho)^T``, hence exactly
``g_aa^l = (|x^l|^2/N) (|delta^l|^2/N)`` with ``x^l = p^l z^{l-1}/rho``; at large N
``|x^l|^2/N -> q*_aa/rho`` and ``|delta^l|^2/N -> q~_aa^l`` (Eq. S11), which is
how Eq. (S13)/(12) follows from (S11): ``g_aa^l = (q*_aa/rho) q~_aa^l``.  For the
pair, ``x_a.x_b/N -> q*_ab`` (independent masks, ``E[p_a p_b]/rho^2 = 1``) and
``g_ab^l = q*_ab q~_ab^l`` (S24 -> S25).  The prefactors of Eq. (12) are therefore
consistent with the layer-l definition (layer l's weight gradient pairs the
layer-(l-1) activity with the layer-l delta); at ``l = L`` Eq. (12) gives
``g_aa^L = 4 q*^2/rho`` and ``g_ab^L = 4 q*_ab^2``, which is exactly
``(q*/rho)(4 q*)`` and ``q*_ab (4 q*_ab)``.

Fixed points of the linear net (000 Eqs. 2-3 with ``phi = id``):
``q*_aa = sigma_b2 / (1 - sigma_w2/rho)`` (finite only for ``sigma_w2 < rho``) and
``q*_ab = sigma_b2 / (1 - sigma_w2)``; ``chi_1 = sigma_w2/rho`` (Eq. 10) and
``chi_2 = sigma_w2`` (after Eq. 6).

Findings of the tests (tests/test_theory_gradients.py: N = 300, L = 40,
sigma_w2 = 0.5, sigma_b2 = 0.1, 96 networks):

* Eq. (12) for ``g_aa`` matches the simulated mean in level (every layer within
  4 SE, last layers within 2%) and shape (decay 0.5537 +- 0.0012 per layer at
  rho = 0.9 vs chi_1 = 0.5556; 0.5010 +- 0.0009 vs 0.5 at rho = 1).
* At rho = 1 (linear: c* = 1) the pair metrics equal g_aa and Eq. (12) holds.
* At rho = 0.9 the paper's ``g_ab`` (absolute value per network, then mean)
  follows Eq. (12) only in the last ~15 layers, then exceeds it (x5.4 at l = 1)
  and decays at 0.552 +- 0.008 per layer, i.e. chi_1 (0.556), not chi_2 (0.5)
  nor Eq. (12)'s own asymptotic rate (sigma_w2 = 0.5): 000 Fig. 2(b-d) reproduced.
  g~_ab decays at chi_1 on all layers.
* The SIGNED mean of the pair metric agrees with Eq. (12) at every layer within
  4 SE: Eq. (12) is the expectation of the signed inner product (S14-S24 compute
  E[delta_a . delta_b]); its per-network fluctuation decays at chi_1 and grows
  relative to the mean as (chi_1/chi_2)^(L-l)/sqrt(N), so taking |.| per network
  is what produces the chi_1 law of Eq. (13) for g_ab in linear nets.

All functions are vectorized: every argument may be a numpy array; arguments
broadcast against each other.

Papers cited by prefix: 000 = Huang, Xu, Du, Zeng, Zhao (2019), arXiv:1912.09132.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "q_star_linear",
    "q_star_ab_linear",
    "q_tilde_aa",
    "q_tilde_ab",
    "g_aa",
    "g_ab",
    "chi1_law",
    "chi1_linear",
    "chi2_linear",
    "simulate_linear_dropout",
]


def _f(*xs):
    return np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in xs))


def _out(x):
    x = np.asarray(x, dtype=float)
    return x[()] if x.ndim == 0 else x


def _geom(s, k):
    """sum_{j=1}^{k} s^j, vectorized (k = 0 gives 0; s = 1 gives k)."""
    s, k = _f(s, k)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        val = s * (1.0 - s**k) / (1.0 - s)
    return np.where(np.isclose(s, 1.0, rtol=0.0, atol=1e-12), k, val)


def _check(l, L, sigma_w2, sigma_b2, rho):
    if np.any(np.asarray(rho) <= 0) or np.any(np.asarray(rho) > 1):
        raise ValueError("rho is the KEEP rate, 0 < rho <= 1")
    if np.any(np.asarray(sigma_w2) < 0) or np.any(np.asarray(sigma_b2) < 0):
        raise ValueError("sigma_w2, sigma_b2 must be >= 0")
    if l is not None and (np.any(np.asarray(l) > np.asarray(L)) or np.any(np.asarray(l) < 0)):
        raise ValueError("need 0 <= l <= L")


def q_star_linear(sigma_w2, sigma_b2, rho):
    """q*_aa of the linear dropout net, the fixed point of 000 Eq. (2) with phi = id.

    ``q* = sigma_w2/rho q* + sigma_b2`` => ``q* = sigma_b2/(1 - sigma_w2/rho)``;
    ``inf`` for ``sigma_w2 >= rho`` (equals ``meanfield.q_star(..., "linear")``).
    """
    _check(None, None, sigma_w2, sigma_b2, rho)
    sw, sb, rho = _f(sigma_w2, sigma_b2, rho)
    with np.errstate(divide="ignore"):
        return _out(np.where(sw < rho, sb / (1.0 - sw / rho), np.inf))


def q_star_ab_linear(sigma_w2, sigma_b2, rho=1.0):
    """q*_ab of the linear dropout net, the fixed point of 000 Eq. (3) with phi = id.

    ``q_ab = sigma_w2 q_ab + sigma_b2`` (no 1/rho: independent masks) =>
    ``q*_ab = sigma_b2/(1 - sigma_w2)``, independent of rho (``inf`` for sigma_w2 >= 1).
    """
    _check(None, None, sigma_w2, sigma_b2, rho)
    sw, sb, _ = _f(sigma_w2, sigma_b2, rho)
    with np.errstate(divide="ignore"):
        return _out(np.where(sw < 1.0, sb / (1.0 - sw), np.inf))


def chi1_linear(sigma_w2, rho):
    """chi_1 = sigma_w2/rho for phi = id (000 Eq. 10)."""
    sw, rho = _f(sigma_w2, rho)
    return _out(sw / rho)


def chi2_linear(sigma_w2, rho=1.0):
    """chi_2 = sigma_w2 for phi = id (000, text after Eq. 6; E[phi'phi'] = 1)."""
    sw, _ = _f(sigma_w2, rho)
    return _out(sw)


def q_tilde_aa(l, L, sigma_w2, sigma_b2, rho):
    """q~_aa^l = E[(delta^l_i)^2] of 000 Supplement Eq. (S11).

    ``4 q*/rho (sw/rho)^(L-l) [rho + sum_{j=1}^{L-l} (sw/rho)^j]`` (S8-S10 for
    L-l = 0, 1, 2).
    """
    _check(l, L, sigma_w2, sigma_b2, rho)
    l, L, sw, sb, rho = _f(l, L, sigma_w2, sigma_b2, rho)
    k = L - l
    s = sw / rho
    q = q_star_linear(sw, sb, rho)
    return _out(4.0 * q / rho * s**k * (rho + _geom(s, k)))


def q_tilde_ab(l, L, sigma_w2, sigma_b2, rho):
    """q~_ab^l = E[delta^l_{i,a} delta^l_{i,b}] of 000 Supplement Eq. (S24).

    ``4 q*_ab sw^(L-l) [1 + sum_{j=1}^{L-l} (sw/rho^2)^j]`` (S21-S23 for L-l = 0, 1, 2).
    """
    _check(l, L, sigma_w2, sigma_b2, rho)
    l, L, sw, sb, rho = _f(l, L, sigma_w2, sigma_b2, rho)
    k = L - l
    q = q_star_ab_linear(sw, sb, rho)
    return _out(4.0 * q * sw**k * (1.0 + _geom(sw / rho**2, k)))


def g_aa(l, L, sigma_w2, sigma_b2, rho):
    """g_aa^l of 000 Eq. (12), first line (= Supplement Eq. S13).

    ``g_aa^l = 4 (q*_aa/rho)^2 (sigma_w2/rho)^(L-l) [rho + sum_{j=1}^{L-l} (sigma_w2/rho)^j]``
    with ``q*_aa = sigma_b2/(1 - sigma_w2/rho)``; equals ``(q*_aa/rho) q~_aa^l``.
    """
    _check(l, L, sigma_w2, sigma_b2, rho)
    l, L, sw, sb, rho = _f(l, L, sigma_w2, sigma_b2, rho)
    k = L - l
    s = sw / rho
    q = q_star_linear(sw, sb, rho)
    return _out(4.0 * (q / rho) ** 2 * s**k * (rho + _geom(s, k)))


def g_ab(l, L, sigma_w2, sigma_b2, rho):
    """g_ab^l of 000 Eq. (12), second line (= the last, unnumbered equation of Supplement 1.2).

    ``g_ab^l = 4 (q*_ab)^2 sigma_w2^(L-l) [1 + sum_{j=1}^{L-l} (sigma_w2/rho^2)^j]``
    with ``q*_ab = sigma_b2/(1 - sigma_w2)``; equals ``q*_ab q~_ab^l``.  Its per-layer
    decay tends to chi_2 = sigma_w2 (if sigma_w2 < rho^2), not chi_1.
    """
    _check(l, L, sigma_w2, sigma_b2, rho)
    l, L, sw, sb, rho = _f(l, L, sigma_w2, sigma_b2, rho)
    k = L - l
    q = q_star_ab_linear(sw, sb, rho)
    return _out(4.0 * q**2 * sw**k * (1.0 + _geom(sw / rho**2, k)))


def chi1_law(l, L, chi1, g_L):
    """The conjectured law of 000 Eq. (13): ``g^l = g^{l+1} chi_1``, i.e. ``g^l = g_L chi1^(L-l)``.

    Also the gradient-independence solution Eq. (11) when ``chi2`` is passed as ``chi1``.
    """
    l, L, chi1, g_L = _f(l, L, chi1, g_L)
    return _out(g_L * chi1 ** (L - l))


# ------------------------------------------------------------------ simulation


def simulate_linear_dropout(N, L, sigma_w2, sigma_b2, rhos, n_inst, seed=0, chunk=8):
    """Monte Carlo of the metrics of 000 Eq. (8) in random linear dropout nets (torch, CPU).

    ``n_inst`` independent networks (weights, biases, masks), processed ``chunk``
    at a time with batched matrix products; every keep rate in ``rhos`` shares the
    same weights, biases and uniform numbers of the masks (``p = U < rho``), so
    differences between keep rates are not blurred by independent noise.  The
    layer-0 pre-activations of the pair ``(a, b)`` are Gaussian with the fixed
    point covariance ``[[q*, q*_ab], [q*_ab, q*]]`` of the keep rate, so every
    layer is at the fixed point.  Forward and backward use the same weights and
    masks; ``delta^L = 2 z^L``.

    Returns a dict of float64 numpy arrays of shape ``(len(rhos), n_inst, L)``
    (index ``l-1`` for layer ``l``): ``g_aa``, ``g_ab_signed`` (Eq. 8 without
    the absolute value), ``g_ab`` (with it) and ``g_tilde_ab``, all computed
    exactly from the outer-product structure of the weight gradient.
    """
    import torch

    rhos = [float(r) for r in np.atleast_1d(rhos)]
    sw, sb = float(sigma_w2), float(sigma_b2)
    R = len(rhos)
    keys = ("g_aa", "g_ab_signed", "g_tilde_ab")
    out = {k: np.empty((R, n_inst, L)) for k in keys}
    cpu = torch.device("cpu")  # explicitly: never the process's default device
    gen = torch.Generator(device=cpu).manual_seed(int(seed))
    rho_t = torch.tensor(rhos, dtype=torch.float64, device=cpu).view(R, 1, 1)
    qaa = torch.tensor(
        [float(q_star_linear(sw, sb, r)) for r in rhos], dtype=torch.float64, device=cpu
    )
    qab = float(q_star_ab_linear(sw, sb))
    for start in range(0, n_inst, chunk):
        B = min(chunk, n_inst - start)
        # layer-0 pair at the fixed point: z_a = s u1, z_b = s (c u1 + sqrt(1-c^2) u2)
        u = torch.randn(2, B, N, generator=gen, dtype=torch.float64, device=cpu)
        c = (qab / qaa).view(R, 1, 1)
        s = qaa.sqrt().view(R, 1, 1)
        za = s * u[0]
        zb = s * (c * u[0] + (1 - c**2).sqrt() * u[1])
        Ws, masks, xs = [], [], []
        for _ in range(L):
            W = torch.randn(B, N, N, generator=gen, device=cpu) * np.sqrt(sw / N)  # float32 storage
            b = torch.randn(B, N, generator=gen, dtype=torch.float64, device=cpu) * np.sqrt(sb)
            U = torch.rand(2, B, N, generator=gen, dtype=torch.float64, device=cpu)
            pa = (U[0] < rho_t).double() / rho_t  # (R, B, N), p/rho
            pb = (U[1] < rho_t).double() / rho_t
            xa, xb = pa * za, pb * zb
            Wd = W.double()
            za = torch.einsum("bij,rbj->rbi", Wd, xa) + b
            zb = torch.einsum("bij,rbj->rbi", Wd, xb) + b
            Ws.append(W)
            masks.append((pa, pb))
            xs.append((xa, xb))
        da, db = 2.0 * za, 2.0 * zb
        for l in range(L, 0, -1):
            xa, xb = xs[l - 1]
            out["g_aa"][:, start : start + B, l - 1] = (
                ((xa**2).sum(-1) * (da**2).sum(-1)) / N**2
            ).numpy()
            out["g_ab_signed"][:, start : start + B, l - 1] = (
                ((xa * xb).sum(-1) * (da * db).sum(-1)) / N**2
            ).numpy()
            out["g_tilde_ab"][:, start : start + B, l - 1] = (
                ((xa * xb).abs().sum(-1) * (da * db).abs().sum(-1)) / N**2
            ).numpy()
            if l > 1:
                Wd = Ws[l - 1].double()
                pa, pb = masks[l - 1]
                da = pa * torch.einsum("bji,rbj->rbi", Wd, da)
                db = pb * torch.einsum("bji,rbj->rbi", Wd, db)
        del Ws
    out["g_ab"] = np.abs(out["g_ab_signed"])
    return out


# ------------------------------------------------------------------ CLI


def _cli_profile(L, sigma_w2, sigma_b2, rho):
    layers = np.arange(1, int(L) + 1)
    res = {"layer": layers.tolist(), "rho": list(rho), "sigma_w2": sigma_w2, "sigma_b2": sigma_b2}
    r = np.asarray(rho, dtype=float)[:, None]
    gaa = g_aa(layers[None, :], L, sigma_w2, sigma_b2, r)
    gab = g_ab(layers[None, :], L, sigma_w2, sigma_b2, r)
    res["g_aa"] = np.asarray(gaa).tolist()
    res["g_ab"] = np.asarray(gab).tolist()
    res["q_star_aa"] = np.asarray(q_star_linear(sigma_w2, sigma_b2, r[:, 0])).tolist()
    res["q_star_ab"] = float(q_star_ab_linear(sigma_w2, sigma_b2))
    res["chi1"] = np.asarray(chi1_linear(sigma_w2, r[:, 0])).tolist()
    res["chi2"] = float(chi2_linear(sigma_w2))
    # Eq. 13 anchored at the last layer
    res["g_aa_chi1_law"] = np.asarray(
        chi1_law(layers[None, :], L, chi1_linear(sigma_w2, r), gaa[:, -1:])
    ).tolist()
    res["g_ab_chi1_law"] = np.asarray(
        chi1_law(layers[None, :], L, chi1_linear(sigma_w2, r), gab[:, -1:])
    ).tolist()
    return res


def _cli_simulate(N, L, sigma_w2, sigma_b2, rho, n_inst, seed):
    sim = simulate_linear_dropout(N, L, sigma_w2, sigma_b2, rho, n_inst, seed=seed)
    res = {"layer": list(range(1, int(L) + 1)), "rho": list(rho)}
    for k, v in sim.items():
        res[k + "_mean"] = v.mean(axis=1).tolist()
        res[k + "_sem"] = (v.std(axis=1, ddof=1) / np.sqrt(v.shape[1])).tolist()
    return res


CLI_COMMANDS = [
    {
        "name": "linear-gradient-metrics",
        "fn": _cli_profile,
        "help": "g_aa^l, g_ab^l of linear dropout nets without gradient independence (000 Eq. 12) "
        "and the chi_1 law (Eq. 13), per layer",
        "params": {
            "L": {"type": int, "default": 200, "help": "depth"},
            "sigma_w2": {"type": float, "default": 0.5, "help": "weight variance"},
            "sigma_b2": {"type": float, "default": 0.1, "help": "bias variance"},
            "rho": {"type": float, "default": [1.0, 0.9], "list": True, "help": "keep rates"},
        },
    },
    {
        "name": "linear-gradient-simulation",
        "fn": _cli_simulate,
        "help": "Monte Carlo of g_aa, g_ab, g~_ab (000 Eq. 8) in random linear dropout nets",
        "params": {
            "N": {"type": int, "default": 100, "help": "width"},
            "L": {"type": int, "default": 10, "help": "depth"},
            "sigma_w2": {"type": float, "default": 0.5, "help": "weight variance"},
            "sigma_b2": {"type": float, "default": 0.1, "help": "bias variance"},
            "rho": {"type": float, "default": [1.0, 0.9], "list": True, "help": "keep rates"},
            "n_inst": {"type": int, "default": 4, "help": "network instantiations"},
            "seed": {"type": int, "default": 0, "help": "random seed"},
        },
    },
]
