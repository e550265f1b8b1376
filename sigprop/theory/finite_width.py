"""Finite-width fluctuations of the NTK diagonal ``G(x,x) = ||df/dW||^2`` (scaling laws).

Papers
------
* Vanilla ReLU nets (He init): Hanin & Nica (ICLR 2020), cited as such in
  001 (Littwin & Wolf 2020, arXiv:2001.10460) Sec. 1-2 and Sec. 5:
  ``E[K^2] / E[K]^2 ~ exp(5 beta)``, ``beta = sum_l 1/n_l`` (= depth/width at
  constant width), "~" meaning up to multiplicative constants
  (``shared/references/theory-code.md`` Sec. 4).
* ResNet: 001 Thm. 5, Eq. (40) (= Eq. 4):
  ``V(G_ii) ~ O((mL)^2 alpha^{2m} (rho^2 - 1) exp(L alpha^m rho))``, ``rho = (1 + 5/n)^{m/2}``;
  Cor. 1, Eq. (41): ``V ~ O(1/n)`` when ``alpha^m L`` is held fixed.
* DenseNet: 001 Thm. 6, Eq. (42) (= Eq. 5): ``V(G_ii) ~ O((exp(5/n) - 1) log(L)^2)``;
  Cor. 2, Eq. (43): ``n = aL`` gives ``O(log(L)^2 / L)``.

``G_ii`` is ``||J(x)||^2`` with ``J = df(x)/dW`` over the weights of Thms. 1-2
(001 Eq. 35); the theorems state the variance itself (not normalized by the
mean).  All curves are defined up to a multiplicative constant, obtained from
data with :func:`fit_constant` (least squares in log space).

Ambiguity of 001: Cor. 1 prints ``alpha = a / L^m``; the introduction ("alpha ~
1/L^{1/m}"), the text before Cor. 1 (exponent ``alpha^m L``) and Fig. 5
(``m = 2, alpha = 0.3/sqrt(L)``) all mean ``alpha = a L^{-1/m}``, which is what
:func:`resnet_alpha_cor1` returns.

Papers cited by prefix: 001 = Littwin, Wolf (2020), arXiv:2001.10460.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "hanin_nica_beta",
    "vanilla_relu_moment_ratio",
    "resnet_variance",
    "resnet_alpha_cor1",
    "resnet_variance_cor1",
    "densenet_variance",
    "densenet_variance_cor2",
    "fit_constant",
    "CLI_COMMANDS",
]


def _f(*xs):
    return tuple(np.asarray(x, dtype=float) for x in xs)


def hanin_nica_beta(depth, width):
    """``beta = sum_{l=1}^{depth} 1/n_l = depth / width`` for constant hidden width (Hanin & Nica)."""
    L, n = _f(depth, width)
    return L / n


def vanilla_relu_moment_ratio(depth, width):
    """Vanilla ReLU ``E[K^2]/E[K]^2 ~ exp(5 beta)`` (Hanin & Nica; 001 Sec. 1, 5), up to a constant."""
    return np.exp(5.0 * hanin_nica_beta(depth, width))


def resnet_variance(depth, width, m, alpha):
    """001 Thm. 5, Eq. (40): ``(mL)^2 alpha^{2m} (rho^2-1) exp(L alpha^m rho)``, ``rho = (1+5/n)^{m/2}``.

    Up to a multiplicative constant; broadcasts over all arguments.
    """
    L, n, m, a = _f(depth, width, m, alpha)
    rho = (1.0 + 5.0 / n) ** (m / 2.0)
    return (m * L) ** 2 * a ** (2 * m) * (rho**2 - 1.0) * np.exp(L * a**m * rho)


def resnet_alpha_cor1(depth, m, a):
    """001 Cor. 1 scaling ``alpha = a L^{-1/m}`` (``alpha^m L = a^m`` fixed; see module note)."""
    L, m, a = _f(depth, m, a)
    return a * L ** (-1.0 / m)


def resnet_variance_cor1(depth, width, m, a):
    """Eq. (40) along Cor. 1's ``alpha = a L^{-1/m}``: independent of L, ``O(1/n)`` (Eq. 41)."""
    return resnet_variance(depth, width, m, resnet_alpha_cor1(depth, m, a))


def densenet_variance(depth, width):
    """001 Thm. 6, Eq. (42): ``(exp(5/n) - 1) log(L)^2``, up to a multiplicative constant."""
    L, n = _f(depth, width)
    return (np.exp(5.0 / n) - 1.0) * np.log(L) ** 2


def densenet_variance_cor2(depth, a):
    """001 Cor. 2: Eq. (42) with ``n = a L``, ``~ 5 log(L)^2 / (a L)`` (Eq. 43)."""
    L, a = _f(depth, a)
    return densenet_variance(L, a * L)


def fit_constant(curve, measured, axis=-1):
    """Multiplicative constant ``C`` minimizing ``sum (log measured - log(C curve))^2`` along ``axis``.

    ``C = exp(mean(log measured - log curve))``; arrays broadcast, the fit is
    over ``axis`` (returns an array with that axis removed).
    """
    curve, measured = np.broadcast_arrays(*_f(curve, measured))
    if np.any(curve <= 0) or np.any(measured <= 0):
        raise ValueError("curve and measured must be positive")
    return np.exp(np.mean(np.log(measured) - np.log(curve), axis=axis))


# -------------------------------------------------------------------- CLI


def _cli_scaling(depth, width, m, alpha, a, a_dense):
    L = np.asarray(depth, dtype=float)
    return {
        "depth": list(depth),
        "width": width,
        "m": m,
        "beta": hanin_nica_beta(L, width).tolist(),
        "vanilla_exp5beta": vanilla_relu_moment_ratio(L, width).tolist(),
        "resnet_eq40_fixed_alpha": resnet_variance(L, width, m, alpha).tolist(),
        "resnet_cor1_alpha": resnet_alpha_cor1(L, m, a).tolist(),
        "resnet_eq40_cor1": resnet_variance_cor1(L, width, m, a).tolist(),
        "densenet_eq42": densenet_variance(L, width).tolist(),
        "densenet_cor2_n=aL": densenet_variance_cor2(L, a_dense).tolist(),
        "note": "each curve is defined up to a multiplicative constant (fit with fit_constant)",
    }


def _cli_fit(curve, measured):
    return {"constant": float(fit_constant(curve, measured))}


CLI_COMMANDS = [
    {
        "name": "finite-width-scaling",
        "help": "predicted Var(G_ii) / moment-ratio curves vs depth: vanilla exp(5 beta), 001 Eq. 40/41, Eq. 42/43",
        "params": {
            "depth": {"type": int, "default": [2, 4, 8, 16, 32], "help": "depths L", "list": True},
            "width": {"type": int, "default": 32, "help": "width n", "list": False},
            "m": {"type": int, "default": 2, "help": "ResNet branch depth", "list": False},
            "alpha": {"type": float, "default": 0.3, "help": "fixed ResNet alpha", "list": False},
            "a": {
                "type": float,
                "default": 0.3,
                "help": "Cor. 1 constant: alpha = a L^{-1/m}",
                "list": False,
            },
            "a_dense": {
                "type": float,
                "default": 10.0,
                "help": "Cor. 2 constant: n = a L",
                "list": False,
            },
        },
        "fn": _cli_scaling,
    },
    {
        "name": "fit-constant",
        "help": "least-squares (log space) multiplicative constant of a curve",
        "params": {
            "curve": {
                "type": float,
                "default": [1.0, 2.0, 4.0],
                "help": "predicted values",
                "list": True,
            },
            "measured": {
                "type": float,
                "default": [2.1, 3.9, 8.2],
                "help": "measured values",
                "list": True,
            },
        },
        "fn": _cli_fit,
    },
]
