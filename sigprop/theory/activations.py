"""Activation registry (numpy) and the Gaussian expectations of the mean-field maps.

Paper: 000 (Huang et al. 2019, arXiv:1912.09132, "Mean field theory
for deep dropout networks"), Section 3.  With ``u ~ N(0, q)`` and
``(u1, u2)`` centred Gaussian with variances ``q1, q2`` and correlation ``c``
(``u1 = sqrt(q1) z1``, ``u2 = sqrt(q2)(c z1 + sqrt(1-c^2) z2)``), the maps use

* ``E[phi(u)^2]``           -- Eq. (2) (length map),
* ``E[phi'(u)^2]``          -- Eq. (5) / Eq. (10) (chi_1),
* ``E[phi(u1) phi(u2)]``    -- Eq. (3) (correlation map),
* ``E[phi'(u1) phi'(u2)]``  -- chi_2, text after Eq. (6).

The names match the torch registry :mod:`sigprop.nets.activations`:
``linear, relu, tanh, hard_tanh, erf, sigmoid, elu`` (``erf`` is
``scipy.special.erf`` itself, not rescaled; ``elu`` has alpha = 1;
``hard_tanh`` is ``clip(x, -1, 1)``).

Closed forms (used by default when they exist; otherwise quadrature from
:mod:`sigprop.theory.quadrature`, adaptive uniform-grid rule):

=========  ==========================  ===================  ======================================  ==========================================
name       E[phi^2]                    E[phi'^2]            E[phi(u1)phi(u2)]                       E[phi'(u1)phi'(u2)]
=========  ==========================  ===================  ======================================  ==========================================
linear     q                           1                    k = c sqrt(q1 q2)                       1
relu       q / 2                       1 / 2                sqrt(q1 q2)/(2 pi) (sin t + (pi - t) c)  (pi - t) / (2 pi),  t = arccos c
erf        2/pi asin(2q/(1+2q))        4/pi / sqrt(1+4q)    2/pi asin(2k / sqrt((1+2q1)(1+2q2)))    4/pi / sqrt((1+2q1)(1+2q2) - 4k^2)
hard_tanh  Gaussian partial moments    erf(1/sqrt(2q))      Price's theorem, 1-D Gauss-Legendre     Price's theorem, 1-D Gauss-Legendre
elu        Gaussian partial moments    1/2 + erfcx(sqrt(2q))/2   quadrature                         quadrature
tanh       quadrature                  quadrature           quadrature                              quadrature
sigmoid    quadrature                  quadrature           quadrature                              quadrature
=========  ==========================  ===================  ======================================  ==========================================

relu: the arc-cosine kernel of degree 1 and 0 (Cho & Saul 2009).  erf: Williams
(1997).  hard_tanh in 2-D: Price's theorem (``d/dk E[f(u1) g(u2)] = E[f'(u1) g'(u2)]``,
``k = sqrt(q1 q2) c``) with ``phi'' = delta(u+1) - delta(u-1)`` reduces both 2-D
integrals to one smooth integral over the correlation, done by 64-point
Gauss--Legendre (agrees with adaptive quadrature and with the bivariate-normal
rectangle probability to ~1e-11).  hard_tanh: ``E[phi^2] = q (erf(t/sqrt2) - 2 t N(t)) + erfc(t/sqrt2)`` with
``t = 1/sqrt(q)`` and ``N`` the standard normal density.  elu (alpha=1):
``E[phi^2] = q/2 + 1/2 + erfcx(sqrt(2q))/2 - erfcx(sqrt(q/2))`` from
``E[e^{a u} 1{u<0}] = erfcx(a sqrt(q/2)) / 2``.

Quadrature (``closed_form=False``, and elu's 2-D integrals, which have no closed
form): activations with kinks or jumps declare their ``breakpoints`` (relu 0,
hard_tanh -1 and 1, elu 0) and are integrated by the breakpoint-aware composite
Gauss--Legendre rule of :mod:`sigprop.theory.quadrature` (< 1e-10 relative
against the closed forms above and against adaptive quadrature for elu; the
uniform grid, still available as ``method='uniform'``, converges only
algebraically there, ~1e-3 for elu's ``E[phi'(u1) phi'(u2)]``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import erf, erfc, erfcx, expit

from . import quadrature as _quad

__all__ = [
    "Activation",
    "ACTIVATIONS",
    "get",
    "names",
    "has_closed_form",
    "expect_phi2",
    "expect_dphi2",
    "expect_phiphi",
    "expect_dphidphi",
]

_SQRT2 = np.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / np.sqrt(2.0 * np.pi)


@dataclass(frozen=True)
class Activation:
    """phi, phi' as vectorized numpy callables plus optional closed forms.

    ``sup_phi2`` is ``sup_x phi(x)^2`` (``inf`` for unbounded activations) and
    ``sup_dphi2`` is ``sup_x phi'(x)^2``; the fixed-point and edge-of-chaos
    solvers use them to bracket their roots.  ``breakpoints`` lists the
    pre-activations where ``phi`` or ``phi'`` has a kink or jump (relu ``(0,)``,
    hard_tanh ``(-1, 1)``, elu ``(0,)``); quadrature then splits the Gaussian
    integrals there (:func:`sigprop.theory.quadrature.breakpoint_expect_1d`),
    which converges exponentially instead of algebraically.
    """

    name: str
    phi: Callable[[np.ndarray], np.ndarray]
    dphi: Callable[[np.ndarray], np.ndarray]
    sup_phi2: float = np.inf
    sup_dphi2: float = 1.0
    quad_scale: float = 1.0  # feature width relative to tanh, for the grid spacing
    quad_max_half_nodes: int | None = None  # lower grid cap for kinked activations
    # Points (in pre-activation units u) where phi or phi' is not smooth; when
    # non-empty the quadrature path uses the breakpoint-aware composite
    # Gauss--Legendre rule of the quadrature module instead of the uniform grid.
    breakpoints: tuple = ()
    # Width (in u) of the narrowest feature of the smooth pieces next to a
    # breakpoint (1 for elu's e^u); None for polynomial pieces (relu, hard_tanh).
    breakpoint_width: float | None = None
    phi2: Callable | None = None  # q -> E[phi(u)^2]
    dphi2: Callable | None = None  # q -> E[phi'(u)^2]
    phiphi: Callable | None = None  # (q1, q2, c) -> E[phi(u1) phi(u2)]
    dphidphi: Callable | None = None  # (q1, q2, c) -> E[phi'(u1) phi'(u2)]

    def __iter__(self):
        """Unpack as ``phi, dphi = ACTIVATIONS[name]``."""
        return iter((self.phi, self.dphi))


# ----------------------------------------------------------------- pointwise


def _linear(x):
    return np.asarray(x, dtype=float) * 1.0


def _dlinear(x):
    return np.ones_like(np.asarray(x, dtype=float))


def _relu(x):
    return np.maximum(x, 0.0)


def _drelu(x):
    return (np.asarray(x) > 0).astype(float)


def _tanh(x):
    return np.tanh(x)


def _dtanh(x):
    t = np.tanh(x)
    return 1.0 - t * t


def _hard_tanh(x):
    return np.clip(x, -1.0, 1.0)


def _dhard_tanh(x):
    return (np.abs(x) < 1.0).astype(float)


def _erf(x):
    return erf(x)


def _derf(x):
    x = np.asarray(x, dtype=float)
    return (2.0 / np.sqrt(np.pi)) * np.exp(-x * x)


def _sigmoid(x):
    return expit(x)


def _dsigmoid(x):
    s = expit(x)
    return s * (1.0 - s)


def _elu(x):
    x = np.asarray(x, dtype=float)
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0.0)))


def _delu(x):
    x = np.asarray(x, dtype=float)
    return np.where(x > 0, 1.0, np.exp(np.minimum(x, 0.0)))


# -------------------------------------------------------------- closed forms


def _arc(c):
    """sin(t), t = arccos(c) computed stably as atan2(sqrt(1-c^2), c)."""
    c = np.clip(c, -1.0, 1.0)
    s = np.sqrt(np.maximum(0.0, 1.0 - c * c))
    return s, np.arctan2(s, c)


def _relu_phiphi(q1, q2, c):
    s, t = _arc(c)
    c = np.clip(c, -1.0, 1.0)
    return np.sqrt(q1) * np.sqrt(q2) / (2.0 * np.pi) * (s + (np.pi - t) * c)


def _relu_dphidphi(q1, q2, c):
    _, t = _arc(c)
    return np.broadcast_to(
        (np.pi - t) / (2.0 * np.pi), np.broadcast_shapes(np.shape(q1), np.shape(q2), np.shape(c))
    ).copy()


def _erf_phi2(q):
    q = np.asarray(q, dtype=float)
    with np.errstate(divide="ignore"):
        return (2.0 / np.pi) * np.arcsin(1.0 / (1.0 + 0.5 / q))


def _erf_dphi2(q):
    return (4.0 / np.pi) / np.sqrt(1.0 + 4.0 * q)


def _erf_phiphi(q1, q2, c):
    # 2k / sqrt((1+2q1)(1+2q2)) = c * sqrt(2q1/(1+2q1)) * sqrt(2q2/(1+2q2)): no overflow
    c = np.clip(c, -1.0, 1.0)
    with np.errstate(divide="ignore"):
        r1 = np.sqrt(1.0 / (1.0 + 0.5 / np.asarray(q1, dtype=float)))
        r2 = np.sqrt(1.0 / (1.0 + 0.5 / np.asarray(q2, dtype=float)))
    return (2.0 / np.pi) * np.arcsin(np.clip(c * r1 * r2, -1.0, 1.0))


def _erf_dphidphi(q1, q2, c):
    # (1+2q1)(1+2q2) - 4k^2 = 1 + 2q1 + 2q2 + 4 q1 q2 (1 - c^2): no cancellation at c = 1
    c = np.clip(c, -1.0, 1.0)
    q1 = np.asarray(q1, dtype=float)
    q2 = np.asarray(q2, dtype=float)
    det = 1.0 + 2.0 * q1 + 2.0 * q2 + 4.0 * q1 * q2 * ((1.0 - c) * (1.0 + c))
    return (4.0 / np.pi) / np.sqrt(det)


def _hard_tanh_phi2(q):
    q = np.asarray(q, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = 1.0 / np.sqrt(q)
        a = erf(t / _SQRT2)
        inner = q * (a - 2.0 * t * _INV_SQRT_2PI * np.exp(-0.5 * t * t)) + erfc(t / _SQRT2)
    return np.where(q == 0, 0.0, np.where(np.isinf(q), 1.0, inner))


def _hard_tanh_dphi2(q):
    q = np.asarray(q, dtype=float)
    with np.errstate(divide="ignore"):
        return erf(1.0 / np.sqrt(2.0 * q))


# hard_tanh in 2-D: Price's theorem, d/dk E[f(u1) g(u2)] = E[f'(u1) g'(u2)] with
# k = sqrt(q1 q2) c, applied with phi'' = delta(u + 1) - delta(u - 1):
#   E[phi'(u1) phi'(u2)] = E[phi']^2 + int_0^c D(t) dt,
#   E[phi(u1) phi(u2)]   = sqrt(q1 q2) (c E[phi']^2 + int_0^c (c - t) D(t) dt),
# D(t) = sum_{e1, e2 = +-1} e1 e2 N2(e1 a1, e2 a2; t), a_i = 1/sqrt(q_i), N2 the
# standard bivariate normal density with correlation t (E[phi] = 0, phi odd).
# D has a (1 - t)^(-1/2) singularity at t = 1, removed by t = 1 - v^2; the
# v-integral is smooth and done by Gauss-Legendre.
_GL_X, _GL_W = np.polynomial.legendre.leggauss(64)


def _hard_tanh_price(q1, q2, c):
    q1, q2, c = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (q1, q2, c)))
    c = np.clip(c, -1.0, 1.0)
    ac = np.abs(c)[..., None]
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        a1 = (1.0 / np.sqrt(q1))[..., None]
        a2 = (1.0 / np.sqrt(q2))[..., None]
        v0 = np.sqrt(1.0 - ac)
        v = v0 + (1.0 - v0) * 0.5 * (_GL_X + 1.0)  # nodes on [v0, 1]
        w = (1.0 - v0) * 0.5 * _GL_W
        t = 1.0 - v * v
        two_m = 2.0 - v * v  # 1 + t
        cross = a1 * a2 / two_m
        e_same = (a1 - a2) ** 2 / (2.0 * v * v * two_m) + cross
        e_opp = (a1 + a2) ** 2 / (2.0 * v * v * two_m) - cross
        # D(t) dt = D(1 - v^2) 2 v dv = 2 / (pi sqrt(2 - v^2)) (e^-same - e^-opp) dv
        dens = 2.0 / (np.pi * np.sqrt(two_m)) * (np.exp(-e_same) - np.exp(-e_opp))
        dens = np.where(np.isfinite(dens), dens, 0.0)  # q = 0: a = inf, no mass at the kinks
        i0 = (dens * w).sum(-1)
        i1 = (dens * (ac - t) * w).sum(-1)
        m1 = erf(a1[..., 0] / _SQRT2)
        m2 = erf(a2[..., 0] / _SQRT2)
        q12 = np.sqrt(q1) * np.sqrt(q2)
        phiphi = np.sign(c) * q12 * (np.abs(c) * m1 * m2 + i1)
    return phiphi, m1 * m2 + i0


def _hard_tanh_phiphi(q1, q2, c):
    return _hard_tanh_price(q1, q2, c)[0]


def _hard_tanh_dphidphi(q1, q2, c):
    return _hard_tanh_price(q1, q2, c)[1]


def _elu_phi2(q):
    q = np.asarray(q, dtype=float)
    return 0.5 * q + 0.5 + 0.5 * erfcx(np.sqrt(2.0 * q)) - erfcx(np.sqrt(0.5 * q))


def _elu_dphi2(q):
    q = np.asarray(q, dtype=float)
    return 0.5 + 0.5 * erfcx(np.sqrt(2.0 * q))


def _const(v):
    def f(*args):
        shape = np.broadcast_shapes(*(np.shape(a) for a in args))
        return np.full(shape, float(v))

    return f


ACTIVATIONS: dict[str, Activation] = {
    a.name: a
    for a in [
        Activation(
            "linear",
            _linear,
            _dlinear,
            phi2=lambda q: np.asarray(q, dtype=float) * 1.0,
            dphi2=_const(1.0),
            phiphi=lambda q1, q2, c: np.clip(c, -1.0, 1.0) * np.sqrt(q1) * np.sqrt(q2),
            dphidphi=_const(1.0),
        ),
        Activation(
            "relu",
            _relu,
            _drelu,
            breakpoints=(0.0,),
            phi2=lambda q: 0.5 * np.asarray(q, dtype=float),
            dphi2=_const(0.5),
            phiphi=_relu_phiphi,
            dphidphi=_relu_dphidphi,
        ),
        Activation("tanh", _tanh, _dtanh, sup_phi2=1.0),
        Activation(
            "hard_tanh",
            _hard_tanh,
            _dhard_tanh,
            sup_phi2=1.0,
            breakpoints=(-1.0, 1.0),
            phi2=_hard_tanh_phi2,
            dphi2=_hard_tanh_dphi2,
            phiphi=_hard_tanh_phiphi,
            dphidphi=_hard_tanh_dphidphi,
        ),
        Activation(
            "erf",
            _erf,
            _derf,
            sup_phi2=1.0,
            sup_dphi2=4.0 / np.pi,
            phi2=_erf_phi2,
            dphi2=_erf_dphi2,
            phiphi=_erf_phiphi,
            dphidphi=_erf_dphidphi,
        ),
        Activation(
            "sigmoid", _sigmoid, _dsigmoid, sup_phi2=1.0, sup_dphi2=1.0 / 16.0, quad_scale=2.0
        ),  # poles at u = +-i pi, twice as far as tanh's
        # kinked: the uniform grid (method='uniform') has an O(h^2) error that does not
        # improve much on finer grids; the default quadrature splits at the kink
        Activation(
            "elu",
            _elu,
            _delu,
            phi2=_elu_phi2,
            dphi2=_elu_dphi2,
            quad_max_half_nodes=80,
            breakpoints=(0.0,),
            breakpoint_width=1.0,
        ),
    ]
}


def names() -> list[str]:
    """Sorted list of registered activation names."""
    return sorted(ACTIVATIONS)


def get(name: str) -> Activation:
    """The :class:`Activation` registered as ``name``; ValueError listing the known names."""
    try:
        return ACTIVATIONS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown activation {name!r}; known: {names()}") from None


def has_closed_form(name: str, which: str) -> bool:
    """Whether ``which`` in {'phi2', 'dphi2', 'phiphi', 'dphidphi'} has a closed form."""
    if which not in ("phi2", "dphi2", "phiphi", "dphidphi"):
        raise ValueError(f"unknown expectation {which!r}")
    return getattr(get(name), which) is not None


# -------------------------------------------------------------- expectations


_METHODS = ("grid", "uniform", "hermite")


def _one_d(a, f, q, method, deg):
    """1-D quadrature: 'grid' is the default rule (breakpoint-aware Gauss--Legendre
    for activations with ``breakpoints``, else the adaptive uniform grid);
    'uniform' forces the uniform grid, 'hermite' Gauss--Hermite."""
    if method == "grid" and a.breakpoints:
        return _quad.breakpoint_expect_1d(f, q, a.breakpoints, a.breakpoint_width)
    if method in ("grid", "uniform"):
        return _quad.gauss_expect_1d(f, q, scale=a.quad_scale, max_half_nodes=a.quad_max_half_nodes)
    if method == "hermite":
        return _quad.gauss_hermite_1d(f, q, deg=deg or _quad.GH_DEG_1D)
    raise ValueError(f"method must be one of {_METHODS}, got {method!r}")


def _two_d(a, f, g, q1, q2, c, method, deg):
    """2-D quadrature, same methods as :func:`_one_d`.  The breakpoint rule at
    ``c = 1, q1 = q2`` equals the 1-D one bit for bit (quadrature module)."""
    if method == "grid" and a.breakpoints:
        return _quad.breakpoint_expect_2d(
            f, g, q1, q2, c, a.breakpoints, a.breakpoints, a.breakpoint_width, a.breakpoint_width
        )
    if method in ("grid", "uniform"):
        return _quad.gauss_expect_2d(
            f, g, q1, q2, c, scale=a.quad_scale, max_half_nodes=a.quad_max_half_nodes
        )
    if method == "hermite":
        return _quad.gauss_hermite_2d(f, g, q1, q2, c, deg=deg or _quad.GH_DEG_2D)
    raise ValueError(f"method must be one of {_METHODS}, got {method!r}")


def expect_phi2(name, q, *, closed_form: bool = True, method: str = "grid", deg=None):
    """E[phi(u)^2], u ~ N(0, q): the integral of Eq. (2) of 000.

    Closed form when registered and ``closed_form`` is true, otherwise quadrature
    (``method='grid'``: the default rule, i.e. the breakpoint-aware Gauss--Legendre
    rule for activations with ``breakpoints`` and the adaptive uniform grid
    otherwise; ``'uniform'``: always the uniform grid; ``'hermite'``:
    Gauss--Hermite of degree ``deg``).  Returns an array of the shape of ``q``.
    """
    a = get(name)
    q = np.asarray(q, dtype=float)
    if closed_form and a.phi2 is not None:
        return np.asarray(a.phi2(q), dtype=float)
    return _one_d(a, lambda u: a.phi(u) ** 2, q, method, deg)


def expect_dphi2(name, q, *, closed_form: bool = True, method: str = "grid", deg=None):
    """E[phi'(u)^2], u ~ N(0, q): the integral of Eq. (5) / Eq. (10) of 000."""
    a = get(name)
    q = np.asarray(q, dtype=float)
    if closed_form and a.dphi2 is not None:
        return np.asarray(a.dphi2(q), dtype=float)
    return _one_d(a, lambda u: a.dphi(u) ** 2, q, method, deg)


def expect_phiphi(name, q1, q2, c, *, closed_form: bool = True, method: str = "grid", deg=None):
    """E[phi(u1) phi(u2)] with variances q1, q2 and correlation c (Eq. 3 of 000).

    Inputs broadcast; closed form for linear, relu, erf, quadrature otherwise.
    """
    a = get(name)
    q1, q2, c = (np.asarray(x, dtype=float) for x in (q1, q2, c))
    if closed_form and a.phiphi is not None:
        return np.asarray(a.phiphi(q1, q2, c), dtype=float)
    return _two_d(a, a.phi, a.phi, q1, q2, c, method, deg)


def expect_dphidphi(name, q1, q2, c, *, closed_form: bool = True, method: str = "grid", deg=None):
    """E[phi'(u1) phi'(u2)] (chi_2 of the text after Eq. 6 of 000)."""
    a = get(name)
    q1, q2, c = (np.asarray(x, dtype=float) for x in (q1, q2, c))
    if closed_form and a.dphidphi is not None:
        return np.asarray(a.dphidphi(q1, q2, c), dtype=float)
    return _two_d(a, a.dphi, a.dphi, q1, q2, c, method, deg)
