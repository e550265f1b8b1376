"""Gaussian expectations for the mean-field maps, vectorized with numpy.

Paper: ``../shared/seeds/000_5d2937d81257f527.txt`` (Huang et al., "Mean field theory
for deep dropout networks"), Section 3.  Every mean-field quantity there is a
Gaussian integral of one of two shapes:

* Eq. (2), Eq. (5) and Eq. (10): ``int Dz f(sqrt(q) z)``, i.e. E_{z~N(0,1)}[f(sqrt(q) z)];
* Eq. (3) and the chi_2 of the text after Eq. (6):
  ``int Dz1 Dz2 f(u1) g(u2)`` with ``u1 = sqrt(q1) z1`` and
  ``u2 = sqrt(q2) (c z1 + sqrt(1 - c^2) z2)``.

Two rules are provided for each shape, both vectorized over broadcastable arrays
of ``q`` (and ``q1, q2, c``): the elements broadcast to a common shape, the nodes
live on a trailing axis and are summed away, and the result has the broadcast
shape (a 0-d array for scalar inputs).

``gauss_hermite_1d`` / ``gauss_hermite_2d``
    Plain (tensor-product) Gauss--Hermite with the probabilists' weight
    exp(-z^2/2).  Exact for polynomials up to degree ``2 deg - 1`` and excellent
    for small ``q``, but the integrand ``f(sqrt(q) z)`` of a saturating activation
    varies on the scale ``1/sqrt(q)`` in ``z`` (tanh has poles at
    ``z = i pi / (2 sqrt(q))``) while the Gauss--Hermite nodes near the origin are
    spaced ``~ pi / sqrt(2 deg)`` and most nodes sit far out in the Gaussian
    tail.  Measured relative errors for erf against the closed forms of
    :mod:`sigprop.theory.activations`, ``E[phi^2] / E[phi'^2]``:

    ======  ==============  ==============  ==============
    q       deg = 120       deg = 300       deg = 1500
    ======  ==============  ==============  ==============
    2       7e-14 / 4e-12   < 1e-14         < 1e-13
    5       4e-7 / 2e-5     1e-15 / 7e-13   < 1e-13
    10      1e-4 / 6e-3     8e-9 / 9e-7     < 1e-13
    50      3e-2 / 6e-1     2e-3 / 1e-1     2e-9 / 7e-7
    ======  ==============  ==============  ==============

    So Gauss--Hermite reaches 1e-6 at the default ``deg`` (300 in 1-D, 120 per
    axis in 2-D) only for ``q <~ 10`` (1-D) and ``q <~ 4`` (2-D); ``q ~ 50`` would
    need ~1500 nodes per axis, i.e. 2e6 nodes in 2-D.  It is kept as the
    reference rule of the contract and for cross-checks.

``gauss_expect_1d`` / ``gauss_expect_2d`` (the default everywhere in ``sigprop.theory``)
    Gaussian-weighted trapezoid rule on a uniform grid ("sinc" quadrature): nodes
    ``z_j = (j + 1/2) h`` on ``[-Z, Z]`` (``Z = 9``, Gaussian tail < 1e-18; no node
    at ``z = 0``), weights proportional to ``exp(-z_j^2 / 2)`` normalised to sum
    to 1, tensor product in 2-D.  For an integrand analytic in the strip
    ``|Im z| < d`` the error decays like ``exp(-2 pi d / h)``; with
    ``d ~ 1/sqrt(q)`` the spacing is chosen per element as
    ``h = min(0.4, 0.35 / sqrt(q_max))`` (rounded down to a ladder of grid sizes,
    ratio 1.15, so that elements can be batched), i.e. ``~ 50 sqrt(q)`` nodes
    per axis: 46 for q <= 0.5, 124 at q = 5, 376 at q = 50.  Measured relative
    errors: erf (1-D and 2-D, all ``c`` in [-1, 1], q <= 100) < 1e-14; tanh
    against adaptive ``scipy.integrate.quad``: ``E[tanh^2]`` <= 1e-10,
    ``E[tanh'^2]`` < 5e-9 for q <= 100 (see ``tests/test_theory_quadrature.py``).
    The grid is capped at ``2 * MAX_HALF_NODES = 520`` nodes per axis, so
    beyond ``q ~ 100`` the accuracy degrades gracefully (erf' at q = 200: 2e-9).

    Because the 2-D rule at ``c = 1`` and ``q1 = q2`` collapses exactly onto the
    1-D rule with the same nodes (the ``z2`` weights sum to one), quadrature
    versions of Eq. (3) and Eq. (2) agree to rounding at ``c = 1``; the c-map of
    :mod:`sigprop.theory.meanfield` relies on this to keep ``c = 1`` an exact
    fixed point at ``rho = 1``.

Kinks.  Both rules assume a smooth integrand.  For activations with kinks or
jumps (relu, hard_tanh, and the derivative of elu; the derivatives of relu
and hard_tanh are step functions) convergence is only algebraic: a kink on a
grid costs ``O(h^2)`` and a jump ``O(h)`` (1-D Gauss--Hermite is similar).  For
relu the 1-D rules are exact anyway by the symmetry ``relu(u)^2 + relu(-u)^2 = u^2``
(both rules are symmetric and have no node at the kink ``z = 0``), but 2-D
values have up to ~1e-3 absolute error (relative to ``sqrt(q1 q2)``) at the
default spacing, and step-function integrands (``E[phi'(u1) phi'(u2)]`` of
relu/hard_tanh, ``E[phi'^2]`` of hard_tanh) 1e-3..1e-2.  This is why
:mod:`sigprop.theory.activations` uses closed forms wherever they are known;
for elu only the 1-D ones exist, so its 2-D maps (c-map, chi_2) carry these
quadrature errors (hard_tanh has semi-analytic 2-D forms there).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.special import roots_hermitenorm

__all__ = [
    "GH_DEG_1D",
    "GH_DEG_2D",
    "MAX_HALF_NODES",
    "gauss_hermite_1d",
    "gauss_hermite_2d",
    "gauss_expect_1d",
    "gauss_expect_2d",
    "grid_spacing",
]

GH_DEG_1D = 300
GH_DEG_2D = 120

# Uniform-grid rule parameters (see module docstring).
Z_MAX = 9.0  # half-width of the grid in units of the standard normal
H_MAX = 0.4  # largest spacing (q <~ 0.8); a Gaussian alone needs h <~ 0.6 for 1e-12
H_C = 0.35  # h = H_C / sqrt(q) for large q (tanh has poles at distance pi/(2 sqrt q))
MAX_HALF_NODES = 260  # grid cap: 2 * 260 = 520 nodes per axis (full accuracy to q ~ 100)

# Ladder of half-sizes m (grid of 2m nodes, h = Z_MAX / m): geometric, ratio ~1.15.
_LADDER = np.unique(
    np.minimum(np.ceil(23.0 * 1.15 ** np.arange(40)).astype(int), MAX_HALF_NODES)
)

# Work arrays are processed in chunks of at most this many elements x nodes.
_CHUNK = 1 << 21


def _as_float(x) -> np.ndarray:
    return np.asarray(x, dtype=float)


def _check_q(*qs: np.ndarray) -> None:
    for q in qs:
        if np.any(q < 0):
            raise ValueError("variances q must be non-negative")


# --------------------------------------------------------------------------
# Gauss--Hermite
# --------------------------------------------------------------------------


@lru_cache(maxsize=None)
def _gh_rule(deg: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes/weights of deg-point Gauss--Hermite for the N(0,1) measure."""
    if deg < 1:
        raise ValueError("deg must be >= 1")
    x, w = roots_hermitenorm(int(deg))
    w = w / w.sum()
    x.setflags(write=False)
    w.setflags(write=False)
    return x, w


def gauss_hermite_1d(f, q, deg: int = GH_DEG_1D) -> np.ndarray:
    """E_{z ~ N(0,1)}[f(sqrt(q) z)] by ``deg``-point Gauss--Hermite.

    The Gaussian integral ``int Dz f(sqrt(q) z)`` of Eq. (2) / Eq. (10) of
    ``000_5d2937d81257f527.txt``.  ``q`` is any array (broadcast elementwise);
    ``f`` must be a vectorized numpy callable.  See the module docstring for
    the accuracy of the default degree.
    """
    q = _as_float(q)
    _check_q(q)
    x, w = _gh_rule(deg)
    out = np.empty(q.shape)
    flat_q, flat_out = q.reshape(-1), out.reshape(-1)
    step = max(1, _CHUNK // x.size)
    for s in range(0, flat_q.size, step):
        u = np.sqrt(flat_q[s : s + step])[:, None] * x
        flat_out[s : s + step] = f(u) @ w
    return out


def gauss_hermite_2d(f, g, q1, q2, c, deg: int = GH_DEG_2D) -> np.ndarray:
    """E[f(u1) g(u2)] by tensor-product Gauss--Hermite (``deg`` nodes per axis).

    ``u1 = sqrt(q1) z1`` and ``u2 = sqrt(q2) (c z1 + sqrt(1 - c^2) z2)`` with
    independent standard normal ``z1, z2``: the double integral of Eq. (3) of
    ``000_5d2937d81257f527.txt`` (and of chi_2 after Eq. (6)).  ``q1, q2, c``
    broadcast together; ``c`` is clipped to [-1, 1].
    """
    q1, q2, c = np.broadcast_arrays(_as_float(q1), _as_float(q2), _as_float(c))
    _check_q(q1, q2)
    x, w = _gh_rule(deg)
    shape = q1.shape
    q1, q2, c = q1.reshape(-1), q2.reshape(-1), np.clip(c.reshape(-1), -1.0, 1.0)
    out = np.empty(q1.size)
    step = max(1, _CHUNK // (x.size * x.size))
    for s in range(0, q1.size, step):
        sl = slice(s, s + step)
        out[sl] = _product_rule(f, g, q1[sl], q2[sl], c[sl], x, w)
    return out.reshape(shape)


def _product_rule(f, g, q1, q2, c, x, w) -> np.ndarray:
    """sum_ij w_i w_j f(u1_i) g(u2_ij) for 1-D arrays of elements q1, q2, c."""
    s = np.sqrt(np.maximum(0.0, 1.0 - c * c))
    r1 = np.sqrt(q1)[:, None]
    r2 = np.sqrt(q2)[:, None, None]
    fu = f(r1 * x)  # (K, n)
    u2 = r2 * (c[:, None, None] * x[None, :, None] + s[:, None, None] * x[None, None, :])
    inner = g(u2) @ w  # (K, n): E over z2 for each z1 node
    return (fu * inner) @ w


# --------------------------------------------------------------------------
# Uniform-grid (trapezoid / sinc) rule, adaptive in q
# --------------------------------------------------------------------------


def grid_spacing(q) -> np.ndarray:
    """Target spacing ``h(q) = min(H_MAX, H_C / sqrt(q))`` of the uniform-grid rule."""
    q = _as_float(q)
    with np.errstate(divide="ignore"):
        return np.minimum(H_MAX, H_C / np.sqrt(q))


def _level(q: np.ndarray, scale: float = 1.0, max_half_nodes: int | None = None) -> np.ndarray:
    """Index into the ladder of grid sizes for each element of q (q = inf -> cap).

    ``scale``: width (in units of u) of the narrowest feature of the integrand
    relative to tanh's (e.g. 2 for the logistic sigmoid, whose poles are twice as
    far from the real axis); the spacing is that of ``q / scale^2``.
    ``max_half_nodes``: a lower cap than ``MAX_HALF_NODES`` (for kinked integrands,
    whose O(h^2) error does not justify the largest grids)."""
    m_req = np.ceil(Z_MAX / grid_spacing(np.asarray(q) / scale**2))
    top = _LADDER.size - 1
    if max_half_nodes is not None:
        top = max(0, int(np.searchsorted(_LADDER, max_half_nodes, side="right")) - 1)
    return np.minimum(np.searchsorted(_LADDER, m_req), top)


@lru_cache(maxsize=None)
def _trap_rule(m: int) -> tuple[np.ndarray, np.ndarray]:
    h = Z_MAX / m
    z = (np.arange(-m, m) + 0.5) * h
    w = np.exp(-0.5 * z * z)
    w /= w.sum()
    z.setflags(write=False)
    w.setflags(write=False)
    return z, w


def gauss_expect_1d(f, q, h=None, scale: float = 1.0, max_half_nodes=None) -> np.ndarray:
    """E_{z ~ N(0,1)}[f(sqrt(q) z)] by the adaptive Gaussian trapezoid rule.

    Same integral as :func:`gauss_hermite_1d` (``int Dz f(sqrt(q) z)``, Eqs. 2, 5,
    10 of ``000_5d2937d81257f527.txt``) but accurate to ~1e-9 relative for tanh /
    erf up to q ~ 100 (module docstring).  ``h``: optional fixed spacing
    overriding the per-element choice (used by the convergence tests);
    ``scale``, ``max_half_nodes``: see :func:`_level` (the same values must be
    used in :func:`gauss_expect_2d` for the c = 1 consistency).
    """
    q = _as_float(q)
    _check_q(q)
    out = np.empty(q.shape)
    flat_q, flat_out = q.reshape(-1), out.reshape(-1)
    if h is not None:
        levels = {None: np.arange(flat_q.size)}
    else:
        lev = _level(flat_q, scale, max_half_nodes)
        levels = {k: np.flatnonzero(lev == k) for k in np.unique(lev)}
    for k, idx in levels.items():
        m = int(_LADDER[k]) if k is not None else int(np.ceil(Z_MAX / h))
        z, w = _trap_rule(m)
        step = max(1, _CHUNK // z.size)
        for s in range(0, idx.size, step):
            ii = idx[s : s + step]
            flat_out[ii] = f(np.sqrt(flat_q[ii])[:, None] * z) @ w
    return out


def gauss_expect_2d(f, g, q1, q2, c, h=None, scale: float = 1.0,
                    max_half_nodes=None) -> np.ndarray:
    """E[f(u1) g(u2)], ``u1 = sqrt(q1) z1``, ``u2 = sqrt(q2)(c z1 + sqrt(1-c^2) z2)``.

    Adaptive tensor-product Gaussian trapezoid rule (module docstring), spacing
    chosen from ``max(q1, q2)``; the double integral of Eq. (3) and of chi_2 (text
    after Eq. 6) of ``000_5d2937d81257f527.txt``.  Inputs broadcast; ``c`` is
    clipped to [-1, 1].  At ``c = 1, q1 = q2`` it equals :func:`gauss_expect_1d`
    of ``f * g`` to rounding.
    """
    q1, q2, c = np.broadcast_arrays(_as_float(q1), _as_float(q2), _as_float(c))
    _check_q(q1, q2)
    shape = q1.shape
    q1, q2, c = q1.reshape(-1), q2.reshape(-1), np.clip(c.reshape(-1), -1.0, 1.0)
    out = np.empty(q1.size)
    if h is not None:
        levels = {None: np.arange(q1.size)}
    else:
        lev = _level(np.maximum(q1, q2), scale, max_half_nodes)
        levels = {k: np.flatnonzero(lev == k) for k in np.unique(lev)}
    for k, idx in levels.items():
        m = int(_LADDER[k]) if k is not None else int(np.ceil(Z_MAX / h))
        z, w = _trap_rule(m)
        step = max(1, _CHUNK // (z.size * z.size))
        for s in range(0, idx.size, step):
            ii = idx[s : s + step]
            out[ii] = _product_rule(f, g, q1[ii], q2[ii], c[ii], z, w)
    return out.reshape(shape)
