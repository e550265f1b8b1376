"""Gaussian expectations for the mean-field maps, vectorized with numpy.

Paper: 000 (Huang et al. 2019, arXiv:1912.09132, "Mean field theory
for deep dropout networks"), Section 3.  Every mean-field quantity there is a
Gaussian integral of one of two shapes:

* Eq. (2), Eq. (5) and Eq. (10): ``int Dz f(sqrt(q) z)``, i.e. E_{z~N(0,1)}[f(sqrt(q) z)];
* Eq. (3) and the chi_2 of the text after Eq. (6):
  ``int Dz1 Dz2 f(u1) g(u2)`` with ``u1 = sqrt(q1) z1`` and
  ``u2 = sqrt(q2) (c z1 + sqrt(1 - c^2) z2)``.

Three rules are provided for each shape, all vectorized over broadcastable arrays
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

Kinks.  Both rules above assume a smooth integrand.  For activations with kinks
or jumps (relu, hard_tanh, and the derivative of elu; the derivatives of relu
and hard_tanh are step functions) their convergence is only algebraic: a kink
on a grid costs ``O(h^2)`` and a jump ``O(h)`` (1-D Gauss--Hermite is similar).
For relu the 1-D rules are exact anyway by the symmetry
``relu(u)^2 + relu(-u)^2 = u^2`` (both rules are symmetric and have no node at
the kink ``z = 0``), but 2-D values have up to ~4e-3 absolute error (relative
to ``sqrt(q1 q2)``) at the default spacing, and step-function integrands
(``E[phi'(u1) phi'(u2)]`` of relu/hard_tanh, ``E[phi'^2]`` of hard_tanh)
1e-3..0.6.  Hence a third rule:

``breakpoint_expect_1d`` / ``breakpoint_expect_2d`` (default for activations that declare ``breakpoints``)
    Composite Gauss--Legendre on ``[-Z, Z]`` split wherever the integrand is
    not smooth, so that each piece is smooth and converges exponentially.
    1-D: split at ``z = k / sqrt(q)`` for each breakpoint ``k`` of the
    activation (pre-activation units), plus fixed splits at ``+-2.5`` so that
    no piece is too long for the Gaussian factor.  2-D (``u1 = sqrt(q1) z1``,
    ``u2 = sqrt(q2)(c z1 + s z2)``): iterated; the inner ``z2`` integral is split
    per outer node at ``z2 = (k / sqrt(q2) - c z1) / s``, the outer at
    ``z1 = k / sqrt(q1)`` and at ``z1 = k / (c sqrt(q2))``, around which
    ``E[g(u2) | z1]`` (smooth for ``|c| < 1``) changes on the scale ``s / |c|``.
    Features narrower than the pieces (that ``s / |c|`` as ``c -> +-1``; elu's
    ``e^u`` of width ``1 / sqrt(q)`` in z for large q) get geometrically graded
    split points (ratio >= 4, 3 levels, down to the feature width).
    ``n = 16`` nodes per piece; ~5 pieces in 1-D, ~10-14 x ~10 in 2-D
    (1e4..3e4 nodes per element).  At ``c = +-1`` exactly the 2-D rule is the
    1-D rule of ``f(sqrt(q1) z) g(+-sqrt(q2) z)`` and, for ``q1 = q2, f = g``,
    bit-for-bit the 1-D rule of ``f^2`` (as for the uniform grid, the
    quadrature c-map relies on this).  Measured relative errors
    (``tests/test_theory_quadrature.py``): 1-D relu / hard_tanh / elu against
    their closed forms, q in [0.01, 100]: < 5e-14.  2-D over q1, q2 in
    [0.1, 50], c in [-0.99, 0.99]: relu ``E[phi phi]`` 1.3e-11 (2.8e-14 of
    ``sqrt(E[phi(u1)^2] E[phi(u2)^2])``), ``E[phi' phi']`` 4.4e-12; hard_tanh
    against its Price's-theorem forms 9e-12 (of the scale) and 5e-12; elu
    against nested adaptive quadrature < 3e-15.  On a harsher grid (q up to
    1e4, c up to 0.999) the worst case is ~1e-10.  The Price's-theorem form
    of hard_tanh is itself only ~2e-7 accurate at ``c -> 1`` with
    ``q1 != q2``, where this rule agrees with adaptive quadrature to 1e-15.

:mod:`sigprop.theory.activations` uses closed forms wherever they are known
and this rule for the quadrature path of relu, hard_tanh and elu (whose 2-D
maps have no closed form).
"""

from __future__ import annotations

from functools import cache

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
    "BP_NODES",
    "breakpoint_expect_1d",
    "breakpoint_expect_2d",
]

GH_DEG_1D = 300
GH_DEG_2D = 120

# Uniform-grid rule parameters (see module docstring).
Z_MAX = 9.0  # half-width of the grid in units of the standard normal
H_MAX = 0.4  # largest spacing (q <~ 0.8); a Gaussian alone needs h <~ 0.6 for 1e-12
H_C = 0.35  # h = H_C / sqrt(q) for large q (tanh has poles at distance pi/(2 sqrt q))
MAX_HALF_NODES = 260  # grid cap: 2 * 260 = 520 nodes per axis (full accuracy to q ~ 100)

# Ladder of half-sizes m (grid of 2m nodes, h = Z_MAX / m): geometric, ratio ~1.15.
_LADDER = np.unique(np.minimum(np.ceil(23.0 * 1.15 ** np.arange(40)).astype(int), MAX_HALF_NODES))

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


@cache
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
    ``000``.  ``q`` is any array (broadcast elementwise);
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
    ``000`` (and of chi_2 after Eq. (6)).  ``q1, q2, c``
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


@cache
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
    10 of ``000``) but accurate to ~1e-9 relative for tanh /
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


def gauss_expect_2d(f, g, q1, q2, c, h=None, scale: float = 1.0, max_half_nodes=None) -> np.ndarray:
    """E[f(u1) g(u2)], ``u1 = sqrt(q1) z1``, ``u2 = sqrt(q2)(c z1 + sqrt(1-c^2) z2)``.

    Adaptive tensor-product Gaussian trapezoid rule (module docstring), spacing
    chosen from ``max(q1, q2)``; the double integral of Eq. (3) and of chi_2 (text
    after Eq. 6) of ``000``.  Inputs broadcast; ``c`` is
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


# --------------------------------------------------------------------------
# Breakpoint-aware composite Gauss--Legendre rule (piecewise-smooth integrands)
# --------------------------------------------------------------------------

BP_NODES = 16  # Gauss--Legendre nodes per sub-interval
BP_LEVELS = 3  # graded split points on each side of a breakpoint
BP_RATIO = 4.0  # smallest ratio between successive graded distances
BP_DMAX = 2.0  # graded points only at distances < BP_DMAX (z units) from a breakpoint
# Fixed splits of every z-axis: with pieces no longer than ~6.5 the Gaussian
# factor alone needs ~16 nodes per piece for 1e-13 (a single piece [-9, 9] would
# need ~40 for 1e-12; splits at 0, +-3 were measured slightly less accurate).
_BP_BACKGROUND = np.array([-Z_MAX, -2.5, 2.5, Z_MAX])
_BP_CHUNK = 1 << 18  # smaller work arrays than _CHUNK: the 2-D rule makes several passes
_INV_SQRT_2PI = 1.0 / np.sqrt(2.0 * np.pi)


@cache
def _gl_rule(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss--Legendre nodes/weights on [-1, 1] (read-only, cached)."""
    if n < 1:
        raise ValueError("n must be >= 1")
    x, w = np.polynomial.legendre.leggauss(int(n))
    x.setflags(write=False)
    w.setflags(write=False)
    return x, w


def _graded(center: np.ndarray, width, levels: int = BP_LEVELS) -> np.ndarray:
    """Split points ``center +- width * R^j`` (j < levels) around each breakpoint.

    ``center`` has shape ``(..., k)`` (breakpoints on the last axis) and
    ``width`` (broadcastable to ``center[..., :1]``) is the width of the
    narrowest feature next to the breakpoint, in the same units.  The ratio
    ``R = max(BP_RATIO, width^(-1/levels))`` is chosen so that the graded
    points reach distance ~1 (the scale of the Gaussian) also for tiny widths:
    a feature of width ``w`` at the end of a piece of length ``L >> w`` would
    otherwise need ~``sqrt(L / w)`` Gauss--Legendre nodes.  Returns an array of
    shape ``(..., 2 * levels * k)``; points may lie outside ``[-Z, Z]`` (they
    are clipped by the caller) and are ``+-inf`` for ``width = inf``.
    """
    width = np.maximum(np.asarray(width, dtype=float), 1e-300)
    ratio = np.maximum(BP_RATIO, np.exp(-np.log(width) / levels))
    d = width[..., None] * ratio[..., None] ** np.arange(levels)  # (..., levels)
    d = np.where(d < BP_DMAX, d, np.inf)  # beyond the Gaussian's scale: not needed
    d = np.concatenate([d, -d], axis=-1)  # (..., 2 levels)
    with np.errstate(invalid="ignore"):
        out = center[..., :, None] + d[..., None, :]
    out = np.where(np.isnan(out), center[..., :, None], out)  # inf + -inf: stays at inf
    return out.reshape(out.shape[:-2] + (-1,))


def _zbreaks(breaks, scale: np.ndarray) -> np.ndarray:
    """Breakpoints ``k`` (u units) mapped to ``k * scale`` with 0 * inf = 0; shape (..., nk)."""
    k = np.asarray(breaks, dtype=float)
    with np.errstate(invalid="ignore"):
        z = k * scale[..., None]
    return np.where(k == 0, 0.0, z)


def _pieces(points: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Composite Gauss--Legendre rule for the N(0,1) density on ``[-Z, Z]``.

    ``points``: split points, shape ``(..., m)`` (any order, may repeat or lie
    outside ``[-Z, Z]``; they are clipped and the background splits added).
    Returns nodes and weights of shape ``(..., P, n)`` (P pieces); the
    weights include the Gaussian density, so ``sum(w * F(z))`` approximates
    ``E[F(z)]``.  Repeated points give pieces of length zero, whose weights are
    exactly zero; pieces of length zero in all rows are dropped.
    """
    bg = np.broadcast_to(_BP_BACKGROUND, points.shape[:-1] + _BP_BACKGROUND.shape)
    edges = np.sort(np.concatenate([bg, np.clip(points, -Z_MAX, Z_MAX)], axis=-1), axis=-1)
    x, w = _gl_rule(n)
    half = 0.5 * (edges[..., 1:] - edges[..., :-1])
    mid = 0.5 * (edges[..., 1:] + edges[..., :-1])
    # drop pieces of length zero in every row (clipped or repeated points)
    keep = np.any(half.reshape(-1, half.shape[-1]) > 0, axis=0)
    if not keep.all():
        half, mid = half[..., keep], mid[..., keep]
    half, mid = half[..., None], mid[..., None]
    z = np.multiply(half, x)
    z += mid
    wt = np.multiply(z, z)
    wt *= -0.5
    np.exp(wt, out=wt)
    wt *= half * (_INV_SQRT_2PI * w)
    return z, wt


def _sum_pieces(v: np.ndarray) -> np.ndarray:
    """Sum over the piece axis (last) sequentially, so that pieces of length zero
    (exact zeros) do not change the result even in the last bit."""
    out = v[..., 0].copy()
    for j in range(1, v.shape[-1]):
        out += v[..., j]
    return out


def _bp_points_1d(q: np.ndarray, breaks, width) -> np.ndarray:
    """z split points of ``f(sqrt(q) z)``: breakpoints k / sqrt(q), graded if ``width``."""
    with np.errstate(divide="ignore"):
        inv = 1.0 / np.sqrt(q)
    pts = _zbreaks(breaks, inv)
    if width is not None and pts.shape[-1]:
        pts = np.concatenate([pts, _graded(pts, width * inv)], axis=-1)
    return pts


def _bp_rule_1d(F, points: np.ndarray, n: int) -> np.ndarray:
    """E[F(z)] with split points ``points`` of shape (K, m); F maps z (K, P, n) -> values."""
    z, w = _pieces(points, n)
    return _sum_pieces((F(z) * w).sum(-1))


def breakpoint_expect_1d(f, q, breaks=(), width=None, n: int = BP_NODES) -> np.ndarray:
    """E_{z ~ N(0,1)}[f(sqrt(q) z)] for ``f`` smooth between the ``breaks``.

    ``breaks``: the points (in units of ``u = sqrt(q) z``) where ``f`` or a
    derivative jumps, e.g. ``[0]`` for relu, ``[-1, 1]`` for hard_tanh.
    ``width``: width (in ``u``) of the narrowest feature of the smooth pieces
    next to a breakpoint (1 for elu's ``e^u``; ``None`` for polynomial pieces,
    which need no grading).  The z axis is truncated to ``[-Z, Z]`` (``Z = 9``,
    Gaussian tail < 1e-18) and split at ``k / sqrt(q)``, at graded points
    around them (see :func:`_graded`) and at ``+-2.5``; each piece gets ``n``
    Gauss--Legendre nodes, so convergence is exponential on every smooth piece
    (measured: relu / hard_tanh / elu against their closed forms < 1e-13 for
    q in [0.01, 100], see ``tests/test_theory_quadrature.py``).  The integral
    of Eq. (2) / Eq. (10) of ``000``; ``q`` broadcasts
    elementwise.  With ``breaks=()`` it is a plain composite rule.
    """
    q = _as_float(q)
    _check_q(q)
    out = np.empty(q.shape)
    flat_q, flat_out = q.reshape(-1), out.reshape(-1)
    pts = _bp_points_1d(flat_q, breaks, width)
    per = max(1, (pts.shape[-1] + _BP_BACKGROUND.size) * n)
    step = max(1, _CHUNK // per)
    for s in range(0, flat_q.size, step):
        sl = slice(s, s + step)
        r = np.sqrt(flat_q[sl])[:, None, None]
        flat_out[sl] = _bp_rule_1d(lambda z: f(r * z), pts[sl], n)  # noqa: B023 (called here)
    return out


def breakpoint_expect_2d(
    f, g, q1, q2, c, breaks_f=(), breaks_g=(), width_f=None, width_g=None, n: int = BP_NODES
) -> np.ndarray:
    """E[f(u1) g(u2)] for piecewise-smooth ``f, g`` (breakpoints ``breaks_f, breaks_g``).

    ``u1 = sqrt(q1) z1``, ``u2 = sqrt(q2)(c z1 + s z2)``, ``s = sqrt(1 - c^2)``:
    the double integral of Eq. (3) and of chi_2 (text after Eq. 6) of
    ``000``.  Iterated composite Gauss--Legendre
    (``n`` nodes per piece, ``breaks``/``width`` as in
    :func:`breakpoint_expect_1d`):

    * inner integral over ``z2`` for each outer node ``z1``: ``g`` breaks at
      ``z2 = (k / sqrt(q2) - c z1) / s``, so the pieces are built per node (graded
      with the width ``width_g / (sqrt(q2) s)``);
    * outer integral over ``z1`` of ``f(u1) E[g(u2) | z1]``: split at
      ``k / sqrt(q1)`` (breakpoints of ``f``, graded with ``width_f / sqrt(q1)``)
      and at ``k / (c sqrt(q2))``, where the inner breakpoint crosses the bulk
      of the ``z2`` Gaussian.  The inner integral is smooth (entire for
      polynomial pieces) in ``z1`` but has a feature of width ``s / |c|``
      there, resolved by graded points down to that width.

    ``|c| = 1`` exactly: the 1-D rule of ``f(sqrt(q1) z) g(+-sqrt(q2) z)`` split at
    the breakpoints of both factors; for ``c = 1, q1 = q2, f = g`` this is
    bit-for-bit :func:`breakpoint_expect_1d` of ``f^2`` with the same
    breakpoints (the repeated split points give pieces with zero weight,
    summed sequentially), which keeps ``c = 1`` an exact fixed point of the
    quadrature c-map.  Inputs broadcast; ``c`` is clipped to ``[-1, 1]``.
    Measured errors: module docstring.
    """
    q1, q2, c = np.broadcast_arrays(_as_float(q1), _as_float(q2), _as_float(c))
    _check_q(q1, q2)
    shape = q1.shape
    q1, q2, c = q1.reshape(-1), q2.reshape(-1), np.clip(c.reshape(-1), -1.0, 1.0)
    out = np.empty(q1.size)
    edge = np.abs(c) == 1.0
    i = np.flatnonzero(edge)
    if i.size:
        out[i] = _bp_edge(f, g, q1[i], q2[i], c[i], breaks_f, breaks_g, width_f, width_g, n)
    i = np.flatnonzero(~edge)
    if i.size:
        out[i] = _bp_interior(f, g, q1[i], q2[i], c[i], breaks_f, breaks_g, width_f, width_g, n)
    return out.reshape(shape)


def _bp_edge(f, g, q1, q2, c, breaks_f, breaks_g, width_f, width_g, n):
    """|c| = 1: u2 = c sqrt(q2) z1, a 1-D integral split at the breakpoints of f and g."""
    pf = _bp_points_1d(q1, breaks_f, width_f)
    pg = _bp_points_1d(q2, breaks_g, width_g) * c[:, None]  # c = +-1: mirror
    pts = np.concatenate([pf, pg], axis=-1)
    out = np.empty(q1.size)
    step = max(1, _CHUNK // ((pts.shape[-1] + _BP_BACKGROUND.size) * n))
    for s in range(0, q1.size, step):
        sl = slice(s, s + step)
        r1 = np.sqrt(q1[sl])[:, None, None]
        r2 = np.sqrt(q2[sl])[:, None, None]
        cc = c[sl][:, None, None]
        out[sl] = _bp_rule_1d(lambda z: f(r1 * z) * g(r2 * (cc * z)), pts[sl], n)  # noqa: B023 (called here)
    return out


def _bp_interior(f, g, q1, q2, c, breaks_f, breaks_g, width_f, width_g, n):
    """|c| < 1: iterated composite Gauss--Legendre (see breakpoint_expect_2d)."""
    s = np.sqrt((1.0 - c) * (1.0 + c))
    with np.errstate(divide="ignore"):
        inv2 = 1.0 / np.sqrt(q2)
        delta = s / np.abs(c)  # width of the feature of E[g | z1] in z1
    # outer split points
    pf = _bp_points_1d(q1, breaks_f, width_f)
    kg = np.asarray(breaks_g, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        mg = _zbreaks(kg, inv2 / c)  # k / (c sqrt(q2)); c = 0, k != 0 -> inf
    mg = np.where(np.isnan(mg), Z_MAX, mg)
    if mg.shape[-1]:
        mg = np.concatenate([mg, _graded(mg, delta)], axis=-1)
    pouter = np.concatenate([pf, mg], axis=-1)
    # inner breakpoints (before the shift by -c z1 / s)
    bz = _zbreaks(kg, inv2)  # k / sqrt(q2)
    with np.errstate(divide="ignore"):
        win = None if width_g is None else width_g * inv2 / s
    n_in = (_BP_BACKGROUND.size + bz.shape[-1] * (1 + (0 if win is None else 2 * BP_LEVELS))) * n
    n_out = (_BP_BACKGROUND.size + pouter.shape[-1]) * n
    out = np.empty(q1.size)
    step = max(1, _BP_CHUNK // (n_in * n_out))
    for a in range(0, q1.size, step):
        sl = slice(a, a + step)
        z1, w1 = _pieces(pouter[sl], n)  # (K, P1, n)
        K = z1.shape[0]
        z1 = z1.reshape(K, -1)
        w1 = w1.reshape(K, -1)
        ss = s[sl][:, None]
        cc = c[sl][:, None]
        b2 = (bz[sl][:, None, :] - (cc * z1)[:, :, None]) / ss[:, :, None]  # (K, N1, nk)
        if win is not None and b2.shape[-1]:
            b2 = np.concatenate([b2, _graded(b2, win[sl][:, None])], axis=-1)
        z2, w2 = _pieces(b2, n)  # (K, N1, P2, n)
        r2 = np.sqrt(q2[sl])[:, None, None, None]
        u2 = z2
        u2 *= ss[:, :, None, None]
        u2 += (cc * z1)[:, :, None, None]
        u2 *= r2
        gv = g(u2)
        gv *= w2
        inner = gv.reshape(gv.shape[:2] + (-1,)).sum(-1)  # (K, N1)
        fu = f(np.sqrt(q1[sl])[:, None] * z1)
        out[sl] = (fu * inner * w1).sum(-1)
    return out
