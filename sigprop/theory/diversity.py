"""Gradient diversity and its width/depth bounds.

Paper: 004, Chen, Wang, Zhao, Papailiopoulos, Koutris 2018, "The Effect of Network Width on
the Performance of Large-batch Training", arXiv:1806.03791.

* Def. 1: ``Delta_S(w) = sum_i ||grad f_i||^2 / ||sum_i grad f_i||^2``  -> :func:`diversity`
* Sec. 3 (from Yin et al. 2018, Lemma 1): ``B_S(w) = n Delta_S(w)``      -> :func:`batch_size_bound`
* Thm. 1 (2-layer linear net, width K, input dim d): ``B_S >= Theta(nKd)/Theta(Kn + dn + Kd)``
  with arbitrary constant probability; the order expression without the
  unspecified constants                                               -> :func:`two_layer_linear_order`
* Thm. 2 (2-layer net with odd, bounded, monotone activation):
  ``E[n sum ||grad f_i||^2] / E[||sum grad f_i||^2] >= Omega(K d^2 / (K d + K + d))``
  (expectation over the second-layer weights)                          -> :func:`two_layer_nonlinear_order`
* Thm. 6 (Appendix C; exact expectations for a multilayer linear net with
  N(0, 1) weights, teacher and inputs, loss ``f_i = (W x_i - W* x_i)^2 / 2``):
  ``E||grad f_i||^2 = L prod_{l<L} K_l (K_l + 2) (1 + prod_{1<=l<L} K_l/(K_l+2))`` (Thm. 8)
  and, for ``i != j``, ``E<grad f_i, grad f_j> = prod_{l<L} K_l (K_l+2) (sum_{phi=0}^{L-1}
  (L-phi)/(K_phi - 1) prod_{l<=phi} (K_l-1)/(K_l+2) + L/K_0 prod_{l<L} K_l/(K_l+2))``
                            -> :func:`linear_sq_norm_expectation`, :func:`linear_inner_expectation`,
                               :func:`linear_expected_ratio` (the left side of Thm. 3, Eq. 4.1)
* Thm. 3, Eq. (4.1): ``rho >= L / (sum_{phi=1}^{L-1} (L-phi)/(K_phi - 1) + 2L/(d-1))``
                                                                      -> :func:`linear_lower_bound`
* Sec. 4 after Thm. 3, equal hidden widths K:
  ``rho >= 1 / ((L-1)/(2(K-1)) + 2/(d-1)) = Theta(dK/(dL + K))``     -> :func:`linear_equal_width_lower_bound`

Conventions: ``widths = (K_0, K_1, ..., K_{L-1})`` with ``K_0 = d`` the input
dimension, ``K_L = 1`` (scalar output) implicit, so ``L = len(widths)``; width
arrays may carry leading batch axes ``(..., L)`` and every other argument
broadcasts against them.

Notes on the text of 004 (what was implemented):

* Eq. (4.1) is printed with ``(L-phi)/K_{phi-1}``.  The paper's own equal-width
  specialization right below it, ``(L-1)/(2(K-1))``, and the derivation from
  Thm. 6 (drop ``prod (K_l-1)/(K_l+2) <= 1``, bound the phi = 0 and ``L/K_0``
  terms by ``2L/(d-1)``, lower the numerator ``1 + prod`` to 1) both give
  ``(L-phi)/(K_phi - 1)``: the printed subscript is a typesetting slip of
  ``K_\\phi - 1``.  :func:`linear_lower_bound` implements that reading by default;
  ``reading="printed"`` gives the literal text, which is NOT implied by Thm. 6
  (for d much larger than the hidden widths it can exceed the exact ratio; the
  tests show a case).
* Thm. 10's final statement has ``prod (K_l+2)/(K_l-1)`` (inverted) and a
  dangling upper limit ``a-1``; Thms. 6 and 9 have ``(K_l-1)/(K_l+2)`` and
  ``sum_{phi=0}^{L-1} (L-phi)``, which is what follows from Thm. 9 and what the
  Monte Carlo tests confirm.  Implemented: Thm. 6.
* Thm. 3's ``rho`` (not the dropout keep rate) is the ratio of expectations at
  ``n -> infinity``; :func:`linear_expected_ratio` gives it at finite ``n`` too:
  ``n A / (A + (n-1) C)``.
* Thms. 1-2 are Theta/Omega statements with unspecified constants; the order
  functions return the expressions with all constants set to 1.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "diversity",
    "batch_size_bound",
    "linear_sq_norm_expectation",
    "linear_inner_expectation",
    "linear_expected_ratio",
    "linear_lower_bound",
    "linear_equal_width_lower_bound",
    "two_layer_linear_order",
    "two_layer_nonlinear_order",
]


def _out(x):
    x = np.asarray(x, dtype=float)
    return x[()] if x.ndim == 0 else x


# ----------------------------------------------------------------- Def. 1


def diversity(per_example_grads):
    """Gradient diversity Delta_S(w) of 004 Def. 1.

    ``per_example_grads``: array of shape ``(..., n, P)`` (numpy or torch), the
    flattened gradients of the n per-example losses; leading axes are batches of
    independent data sets / models.  Returns ``sum_i ||g_i||^2 / ||sum_i g_i||^2``
    with shape ``(...)`` (same library as the input).
    """
    g = per_example_grads
    if hasattr(g, "detach"):  # torch
        num = (g * g).sum(dim=(-2, -1))
        s = g.sum(dim=-2)
        return num / (s * s).sum(dim=-1)
    g = np.asarray(g, dtype=float)
    num = np.einsum("...ip,...ip->...", g, g)
    s = g.sum(axis=-2)
    return _out(num / np.einsum("...p,...p->...", s, s))


def batch_size_bound(n, diversity):
    """B_S(w) = n Delta_S(w), 004 Sec. 3 (Yin et al. 2018; Lemma 1 of 004)."""
    return _out(np.asarray(n, dtype=float) * np.asarray(diversity, dtype=float))


# ----------------------------------------------------------------- multilayer linear nets (Thm. 6, 3)


def _widths(widths):
    K = np.asarray(widths, dtype=float)
    if K.ndim == 0:
        raise ValueError("widths = (K_0 = d, K_1, ..., K_{L-1}) needs a last axis")
    if np.any(K < 2):
        raise ValueError("004 Thm. 3/6 assume K_l >= 2 for l = 0..L-1")
    return K


def linear_sq_norm_expectation(widths):
    """E||grad f_i||^2 of a linear net with N(0,1) weights, teacher and input; 004 Thm. 8 (= Thm. 6 / n^2 M).

    ``L prod_{l=0}^{L-1} K_l(K_l+2) (1 + prod_{l=1}^{L-1} K_l/(K_l+2))``.
    """
    K = _widths(widths)
    L = K.shape[-1]
    P = np.prod(K * (K + 2), axis=-1)
    return _out(L * P * (1.0 + np.prod(K[..., 1:] / (K[..., 1:] + 2), axis=-1)))


def linear_inner_expectation(widths):
    """E<grad f_i, grad f_j> (i != j) of the same net; 004 Thm. 6 (second line, divided by n(n-1)).

    ``prod K_l(K_l+2) [sum_{phi=0}^{L-1} (L-phi)/(K_phi-1) prod_{l=0}^{phi} (K_l-1)/(K_l+2)
    + L/K_0 prod_{l=0}^{L-1} K_l/(K_l+2)]``.
    """
    K = _widths(widths)
    L = K.shape[-1]
    P = np.prod(K * (K + 2), axis=-1)
    cum = np.cumprod((K - 1) / (K + 2), axis=-1)
    phi = np.arange(L)
    s = np.sum((L - phi) / (K - 1) * cum, axis=-1)
    return _out(P * (s + L / K[..., 0] * np.prod(K / (K + 2), axis=-1)))


def linear_expected_ratio(widths, n=np.inf):
    """rho = E[n sum_i ||grad f_i||^2] / E[||sum_i grad f_i||^2], the left side of 004 Thm. 3 (Eq. 4.1).

    From Thm. 6: ``n A / (A + (n-1) C)`` with ``A`` = :func:`linear_sq_norm_expectation`,
    ``C`` = :func:`linear_inner_expectation`; ``n = inf`` gives ``A / C``.
    """
    A = np.asarray(linear_sq_norm_expectation(widths))
    C = np.asarray(linear_inner_expectation(widths))
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore"):
        val = n * A / (A + (n - 1.0) * C)
    return _out(np.where(np.isinf(n), A / C, val))


def linear_lower_bound(widths, reading="intended"):
    """Lower bound of 004 Thm. 3, Eq. (4.1), for widths ``(K_0 = d, K_1, ..., K_{L-1})``.

    ``reading="intended"``: ``L / (sum_{phi=1}^{L-1} (L-phi)/(K_phi - 1) + 2L/(d-1))``
    (consistent with the equal-width form in the text and implied by Thm. 6);
    ``reading="printed"``: ``L / (sum_{phi=1}^{L-1} (L-phi)/K_{phi-1} + 2L/(d-1))``
    as typeset.  See the module docstring.
    """
    K = _widths(widths)
    L = K.shape[-1]
    d = K[..., 0]
    phi = np.arange(1, L)
    if reading == "intended":
        s = np.sum((L - phi) / (K[..., 1:] - 1), axis=-1)
    elif reading == "printed":
        s = np.sum((L - phi) / K[..., :-1], axis=-1)
    else:
        raise ValueError("reading must be 'intended' or 'printed'")
    return _out(L / (s + 2.0 * L / (d - 1)))


def linear_equal_width_lower_bound(d, K, L):
    """Equal hidden widths K (004, text after Thm. 3): ``1 / ((L-1)/(2(K-1)) + 2/(d-1))``.

    Broadcasts over ``d, K, L``; equals :func:`linear_lower_bound` with widths
    ``(d, K, ..., K)``.  Increasing in K, decreasing in L, below ``(d-1)/2``.
    """
    d, K, L = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (d, K, L)))
    return _out(1.0 / ((L - 1) / (2 * (K - 1)) + 2.0 / (d - 1)))


# ----------------------------------------------------------------- two-layer nets (Thms. 1, 2)


def two_layer_linear_order(n, K, d):
    """Order of the batch-size bound of 004 Thm. 1: ``n K d / (K n + d n + K d)`` (constants set to 1).

    Thm. 1: ``B_S >= Theta(nKd) / Theta(Kn + dn + Kd)`` with arbitrary constant
    probability; for large n this is ``Kd/(K+d)``.
    """
    n, K, d = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (n, K, d)))
    with np.errstate(invalid="ignore"):
        val = n * K * d / (K * n + d * n + K * d)
    return _out(np.where(np.isinf(n), K * d / (K + d), val))


def two_layer_nonlinear_order(K, d):
    """Order of the lower bound of 004 Thm. 2: ``K d^2 / (K d + K + d)`` (constants set to 1)."""
    K, d = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (K, d)))
    return _out(K * d**2 / (K * d + K + d))


# ----------------------------------------------------------------- CLI


def _cli_linear(d, width, depth, n):
    K = np.asarray(width, dtype=float)[:, None]
    Ls = np.asarray(depth, dtype=int)
    res = {"d": d, "width": list(width), "depth": list(depth), "n": n if np.isfinite(n) else "inf"}
    ratio = np.empty((K.shape[0], Ls.size))
    for j, L in enumerate(Ls):
        w = np.concatenate(
            [np.full((K.shape[0], 1), float(d)), np.repeat(K, L - 1, axis=1)], axis=1
        )
        ratio[:, j] = linear_expected_ratio(w, n)
    res["expected_ratio_thm6"] = ratio.tolist()
    res["lower_bound_eq4_1"] = np.asarray(
        linear_equal_width_lower_bound(d, K, Ls[None, :])
    ).tolist()
    res["rows"], res["columns"] = "width", "depth"
    return res


def _cli_two_layer(n, d, width):
    K = np.asarray(width, dtype=float)
    return {
        "n": n,
        "d": d,
        "width": list(width),
        "thm1_order_nKd_over_Kn_dn_Kd": np.asarray(two_layer_linear_order(n, K, d)).tolist(),
        "thm2_order_Kd2_over_Kd_K_d": np.asarray(two_layer_nonlinear_order(K, d)).tolist(),
    }


def _cli_bs(n, diversity_value):
    return {
        "n": n,
        "diversity": diversity_value,
        "batch_size_bound": float(batch_size_bound(n, diversity_value)),
    }


CLI_COMMANDS = [
    {
        "name": "diversity-linear",
        "fn": _cli_linear,
        "help": "multilayer linear nets: exact E-ratio (004 Thm. 6) and lower bound Eq. 4.1 (Thm. 3) "
        "vs hidden width and depth",
        "params": {
            "d": {"type": int, "default": 10, "help": "input dimension K_0"},
            "width": {
                "type": int,
                "default": [4, 16, 64, 256],
                "list": True,
                "help": "hidden widths",
            },
            "depth": {"type": int, "default": [2, 4, 8], "list": True, "help": "depths L"},
            "n": {
                "type": float,
                "default": float("inf"),
                "help": "number of data points (inf allowed)",
            },
        },
    },
    {
        "name": "diversity-two-layer",
        "fn": _cli_two_layer,
        "help": "order expressions of 004 Thm. 1 (linear) and Thm. 2 (nonlinear) for 2-layer nets",
        "params": {
            "n": {"type": float, "default": 1000.0, "help": "number of data points"},
            "d": {"type": int, "default": 10, "help": "input dimension"},
            "width": {
                "type": int,
                "default": [4, 16, 64, 256],
                "list": True,
                "help": "hidden widths",
            },
        },
    },
    {
        "name": "batch-size-bound",
        "fn": _cli_bs,
        "help": "B_S = n Delta_S (004 Sec. 3, Yin et al.)",
        "params": {
            "n": {"type": int, "default": 1000, "help": "number of data points"},
            "diversity_value": {
                "type": float,
                "default": 0.01,
                "help": "gradient diversity Delta_S",
            },
        },
    },
]
