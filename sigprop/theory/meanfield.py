"""Mean-field signal propagation in deep (dropout) fully connected networks.

Paper: 000 (Huang et al. 2019, arXiv:1912.09132, "Mean field theory
for deep dropout networks: digging up gradient backpropagation deeply"),
Section 3, Eqs. (1)-(6) and (9)-(11); for keep rate ``rho = 1`` these reduce to
Schoenholz et al. (2017), "Deep information propagation".

Network (Eq. 1): ``z^l = (1/rho) W^l (p^l * y^{l-1}) + b^l``, ``y^l = phi(z^l)``,
``W_ij ~ N(0, sigma_w2 / N)``, ``b_i ~ N(0, sigma_b2)``, ``p_j ~ Bernoulli(rho)``
(``rho`` is the KEEP rate), with independent dropout masks for different inputs.

Maps and fixed points (``Dz`` the standard Gaussian measure):

* Eq. (2)  ``q^l = sigma_w2/rho * int Dz phi(sqrt(q^{l-1}) z)^2 + sigma_b2``  -> :func:`q_map`
* Eq. (3)  ``q_ab^l = sigma_w2 * int Dz1 Dz2 phi(u1) phi(u2) + sigma_b2`` (no ``1/rho``:
  ``E[p_a p_b] = rho^2`` for independent masks cancels the ``1/rho^2``), and
  Eq. (4) ``c^l = q_ab^l / sqrt(q_aa^l q_bb^l)``                       -> :func:`c_map`
* ``q* = lim q^l``, ``c* = lim c^l``                              -> :func:`q_star`, :func:`c_star`
* Eq. (10) ``chi_1 = sigma_w2/rho * int Dz phi'(sqrt(q*) z)^2`` (Eq. 5 at rho = 1)  -> :func:`chi1`
* text after Eq. (6): ``chi_2 = sigma_w2 * int Dz1 Dz2 phi'(u1*) phi'(u2*)`` at ``(q*, c*)``,
  the slope of the c-map at ``c*``                                        -> :func:`chi2`
* Eq. (6)/(11): ``xi = 1/|ln chi|``                                 -> :func:`xi1`, :func:`xi2`

Everything is vectorized: ``sigma_w2, sigma_b2, rho`` (and ``q, c``) are numpy
arrays of any broadcastable shapes; the result has the broadcast shape (a
numpy float for all-scalar input).  Gaussian integrals use the closed forms of
:mod:`sigprop.theory.activations` where known (linear, relu, erf; hard_tanh
semi-analytic; 1-D elu) and otherwise the adaptive quadrature of
:mod:`sigprop.theory.quadrature` (~1e-9 relative for tanh and sigmoid up to
q ~ 100; ~1e-10 for the piecewise relu, hard_tanh and elu by the breakpoint-aware rule).

Notes on the definitions of the paper
--------------------------------------
* Both inputs of a pair have the same length here (``q_aa = q_bb = q``), which
  is the case at the fixed point and for all pairs of the tests.
* With ``rho < 1`` the diagonal of the kernel gets the ``1/rho`` of Eq. (2) but
  the off-diagonal (Eq. 3) does not, so ``c_map(1) = (sw E + sb)/(sw E/rho + sb) < 1``:
  ``c = 1`` is no longer a fixed point and ``c* < 1`` always (000, below Eq. 4).
* The phase label of :func:`fixed_point_summary` is the paper's
  "ordered if chi_1 < 1 else chaotic" with the dropout chi_1 of Eq. (10).  As
  the text of 000 notes, for ``rho < 1`` ``chi_1 = 1`` is then strictly not a
  critical line of the c-map: ``c*`` is < 1 on both sides, ``chi_2`` stays < 1
  (finite ``xi_2`` everywhere) and ``chi_1`` only governs the (gradient-
  independence) growth of single-input gradients, Eq. (9)/(11).
* ``xi1, xi2`` are ``1/|ln chi|`` (the paper's Eq. 6 form), i.e. positive on both
  sides of ``chi = 1`` and infinite exactly at ``chi = 1``.

Papers cited by prefix: 000 = Huang, Xu, Du, Zeng, Zhao (2019), arXiv:1912.09132.
"""

from __future__ import annotations

import numpy as np

from . import activations as _act
from ._rootfind import bracketed_root

__all__ = [
    "q_map",
    "c_map",
    "q_star",
    "c_star",
    "chi1",
    "chi2",
    "xi1",
    "xi2",
    "fixed_point_summary",
    "trajectory",
    "edge_of_chaos_sigma_w2",
    "sigma_w2_for_chi1",
]

Q_MAX = 1e12  # q* above this is reported as inf (unbounded activation, divergent map)
_Q_BIG = 1e100  # q is capped here inside the c-map and chi's (homogeneous/saturated limit)
_EPS = np.finfo(float).eps


# ----------------------------------------------------------------- helpers


def _arrays(*xs):
    """Broadcast to a common shape; return (flat float arrays..., shape)."""
    arrs = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in xs))
    shape = arrs[0].shape if arrs else ()
    return [np.array(a, dtype=float).reshape(-1) for a in arrs], shape


def _out(x, shape):
    x = np.asarray(x).reshape(shape)
    return x[()] if x.ndim == 0 else x


def _check_params(sigma_w2, sigma_b2, rho):
    if np.any(np.asarray(sigma_w2) < 0) or np.any(np.asarray(sigma_b2) < 0):
        raise ValueError("sigma_w2 and sigma_b2 must be >= 0")
    rho = np.asarray(rho)
    if np.any(rho <= 0) or np.any(rho > 1):
        raise ValueError("rho is the dropout KEEP rate and must lie in (0, 1]")


def _finite_q(q):
    """Cap q (possibly inf for a divergent length map) where only ratios or
    derivatives matter: the c-map is scale free and E[phi'^2] saturates there."""
    return np.minimum(q, _Q_BIG)


def _cf2(act):
    """Whether the 2-D integrals of ``act`` have closed forms.

    Inside the c-map the diagonal ``q_aa'`` is computed by the same method as the
    off-diagonal ``q_ab'``: the 2-D closed form at c = 1 when it exists, else
    the 1-D quadrature, which equals the 2-D quadrature at c = 1 to rounding
    (quadrature module).  So c = 1 stays an exact fixed point at rho = 1 and the
    slope of the map at c = 1 is that of the very function whose roots are found.
    """
    return _act.has_closed_form(act, "phiphi")


def _diag(act, q, which):
    """E[phi^2] (which='phi') or E[phi'^2] (which='dphi') computed consistently with the 2-D ones."""
    if _cf2(act):
        f = _act.expect_phiphi if which == "phi" else _act.expect_dphidphi
        return f(act, q, q, np.ones_like(q))
    f = _act.expect_phi2 if which == "phi" else _act.expect_dphi2
    return f(act, q, closed_form=False)


# ----------------------------------------------------------------- maps


def q_map(q, sigma_w2, sigma_b2, rho, act):
    """Length map, Eq. (2) of 000.

    ``q' = sigma_w2 / rho * E[phi(sqrt(q) z)^2] + sigma_b2``.
    """
    _check_params(sigma_w2, sigma_b2, rho)
    (q, sw, sb, rho), shape = _arrays(q, sigma_w2, sigma_b2, rho)
    with np.errstate(over="ignore"):
        out = sw / rho * _act.expect_phi2(act, q) + sb
    return _out(out, shape)


def _c_map_flat(c, q, sw, sb, rho, act):
    qe = _finite_q(q)
    q_ab = sw * _act.expect_phiphi(act, qe, qe, c) + sb
    q_aa = sw / rho * _diag(act, qe, "phi") + sb
    return q_ab / q_aa


def c_map(c, q, sigma_w2, sigma_b2, rho, act):
    """Correlation map, Eqs. (3)-(4) of 000, for two inputs of length q.

    ``q_ab' = sigma_w2 * E[phi(u1) phi(u2)] + sigma_b2`` with
    ``u1 = sqrt(q) z1, u2 = sqrt(q)(c z1 + sqrt(1-c^2) z2)`` (Eq. 3, no 1/rho since
    the two inputs carry independent masks), divided by ``q_aa'`` of Eq. (2)
    (Eq. 4).  Returns the next-layer correlation ``c'``.
    """
    _check_params(sigma_w2, sigma_b2, rho)
    (c, q, sw, sb, rho), shape = _arrays(c, q, sigma_w2, sigma_b2, rho)
    return _out(_c_map_flat(c, q, sw, sb, rho, act), shape)


# ----------------------------------------------------------------- fixed points


def _q_star_flat(sw, sb, rho, act):
    a = _act.get(act)

    def g(q, sw, sb, rho):
        return sw / rho * _act.expect_phi2(act, q) + sb - q

    n = sw.size
    lo = sb.copy()
    glo = g(lo, sw, sb, rho)
    # sigma_b2 = 0 with phi(0) = 0: q = 0 is a fixed point; a positive one exists
    # (and is the one reached from q0 > 0) iff the map rises above the diagonal
    # near 0.
    tiny = 1e-10
    degenerate = glo <= 0
    if degenerate.any():
        i = np.flatnonzero(degenerate)
        gt = g(np.full(i.size, tiny), sw[i], sb[i], rho[i])
        up = gt > 0
        lo[i[up]] = tiny
        glo[i[up]] = gt[up]
    out = np.full(n, np.nan)
    zero = glo <= 0
    out[zero] = lo[zero]

    # Upper end of the bracket.
    if np.isfinite(a.sup_phi2):
        hi = sb + sw / rho * a.sup_phi2 + 1.0  # g(hi) <= -1
        ghi = g(hi, sw, sb, rho)
    else:
        hi = np.maximum(2.0 * lo, 1.0)
        ghi = np.full(n, -1.0)
        todo = np.flatnonzero(~zero)
        while todo.size:
            ghi[todo] = g(hi[todo], sw[todo], sb[todo], rho[todo])
            todo = todo[(ghi[todo] >= 0) & (hi[todo] < Q_MAX)]
            hi[todo] *= 16.0
        diverge = (ghi >= 0) & ~zero
        out[diverge] = np.inf
        zero = zero | diverge

    i = np.flatnonzero(~zero)
    if i.size:
        out[i] = bracketed_root(
            g, lo[i], hi[i], args=(sw[i], sb[i], rho[i]), flo=glo[i], fhi=ghi[i], xrtol=4 * _EPS
        )
    return out


def q_star(sigma_w2, sigma_b2, rho, act):
    """Fixed point q* of the length map Eq. (2) of 000.

    Solved as the root of ``q_map(q) - q`` by a bracketing method (robust at any
    slope of the map, unlike plain iteration), to ~1e-15 relative.  The bracket
    is ``[sigma_b2, sigma_b2 + sigma_w2/rho sup phi^2 + 1]`` for bounded
    activations; for unbounded ones it is grown geometrically and ``inf`` is
    returned when the map has no fixed point below ``Q_MAX`` (e.g. relu with
    ``sigma_w2 > 2 rho``, linear with ``sigma_w2 > rho``).  With
    ``sigma_b2 = 0`` and ``phi(0) = 0``, ``q* = 0`` unless the map rises above the
    diagonal at small q, in which case the positive fixed point is returned.
    """
    _check_params(sigma_w2, sigma_b2, rho)
    (sw, sb, rho), shape = _arrays(sigma_w2, sigma_b2, rho)
    return _out(_q_star_flat(sw, sb, rho, act), shape)


def _c_star_flat(sw, sb, rho, q, act):
    n = sw.size
    qe = _finite_q(q)
    out = np.ones(n)

    # rho < 1: g(c) = c_map(c) - c on [0, 1].  c_map is increasing and convex on
    # [0, 1] (Hermite expansion with non-negative coefficients), g(0) >= 0 and
    # g(1) = (sw E + sb) / (sw E / rho + sb) - 1 < 0, so the root is unique and
    # it is the stable fixed point.
    i = np.flatnonzero(rho < 1)
    if i.size:

        def g(c, sw, sb, rho, q):
            return _c_map_flat(c, q, sw, sb, rho, act) - c

        args = (sw[i], sb[i], rho[i], qe[i])
        g0 = g(np.zeros(i.size), *args)
        g1 = g(np.ones(i.size), *args)
        res = np.ones(i.size)
        ok = g1 < 0  # g1 == 0 only when sw E[phi^2] = 0: then c = 1 exactly
        res[ok] = bracketed_root(
            g,
            np.zeros(ok.sum()),
            np.ones(ok.sum()),
            args=tuple(a[ok] for a in args),
            flo=g0[ok],
            fhi=g1[ok],
            xatol=1e-15,
            xrtol=0.0,
        )
        out[i] = res

    # rho = 1: c = 1 is a fixed point with slope chi = sw q E[phi'^2] / q'.  With
    # h(c) = (1 - c_map(c)) / (1 - c) - 1 (secant slope from c to 1, minus 1),
    # which is increasing on [0, 1) with h(1-) = chi - 1 and h(0) = -c_map(0) <= 0,
    # a fixed point below 1 exists iff chi > 1 (chaotic phase) and is the unique
    # root of h.  Working with h avoids bracketing against the root at c = 1,
    # which would fail near criticality where c* -> 1.
    j = np.flatnonzero(rho >= 1)
    if j.size:
        qj = qe[j]
        q_next = sw[j] * _diag(act, qj, "phi") + sb[j]
        slope = sw[j] * qj * _diag(act, qj, "dphi") / q_next
        chaotic = slope > 1
        if chaotic.any():
            k = j[chaotic]

            def h(c, sw, sb, q, s1):
                with np.errstate(divide="ignore", invalid="ignore"):
                    val = (1.0 - _c_map_flat(c, q, sw, sb, np.ones_like(c), act)) / (1.0 - c) - 1.0
                return np.where(c >= 1.0, s1 - 1.0, val)

            args = (sw[k], sb[k], qe[k], slope[chaotic])
            h0 = h(np.zeros(k.size), *args)
            out[k] = bracketed_root(
                h,
                np.zeros(k.size),
                np.ones(k.size),
                args=args,
                flo=h0,
                fhi=slope[chaotic] - 1.0,
                xatol=1e-15,
                xrtol=0.0,
            )
    return out


def c_star(sigma_w2, sigma_b2, rho, act, q=None):
    """Stable fixed point c* of the correlation map, Eqs. (3)-(4) of 000.

    The fixed point reached from ``0 <= c0 < 1`` at the length fixed point
    ``q*`` (passed as ``q`` if already known).  ``rho = 1``: 1 in the ordered
    phase (slope of the c-map at 1, = chi_1, <= 1), the root < 1 in the chaotic
    phase; ``rho < 1``: always < 1.  Found by a bracketing root finder on a
    function with a single sign change in [0, 1] (see code comments), so it is
    accurate to ~1e-15 in c (plus the quadrature error of the map) away from
    criticality and to ~1e-7 within ~1e-8 of it in chi_1 (a near-double root;
    measured: 1 - c* = 5e-8 where the linear law gives 1.3e-9), where iterating
    the map would converge arbitrarily slowly.
    For odd phi and ``sigma_b2 = 0`` the map is odd and ``-c*`` is reached from
    ``c0 < 0``.  Where q* diverges (relu for ``sigma_w2 > 2 rho``, linear for
    ``sigma_w2 > rho``) the c-map is evaluated in its scale-free limit; at
    ``rho = 1`` it has slope exactly 1 at c = 1 there, so ``c* = 1`` although
    chi_1 > 1 (the known absence of a correlation-chaotic phase for relu).
    elu has no 2-D closed form: its c-map uses the breakpoint-aware quadrature
    (~1e-10 relative), so only extremely close to its edge of chaos could the
    signs of ``1 - c*`` and ``chi1 - 1`` disagree.
    """
    _check_params(sigma_w2, sigma_b2, rho)
    if q is None:
        q = q_star(sigma_w2, sigma_b2, rho, act)
    (sw, sb, rho, q), shape = _arrays(sigma_w2, sigma_b2, rho, q)
    return _out(_c_star_flat(sw, sb, rho, q, act), shape)


# ----------------------------------------------------------------- slopes and depth scales


def chi1(sigma_w2, sigma_b2, rho, act, q=None):
    """chi_1 = sigma_w2 / rho * E[phi'(sqrt(q*) z)^2], Eq. (10) of 000.

    Eq. (5) at rho = 1.  The per-layer growth of ``||J v||^2`` for the layer
    Jacobian with the dropout mask held fixed (``E[p/rho^2] = 1/rho``), and of
    ``q~_aa`` backwards under gradient independence (Eq. 9).
    """
    _check_params(sigma_w2, sigma_b2, rho)
    if q is None:
        q = q_star(sigma_w2, sigma_b2, rho, act)
    (sw, sb, rho, q), shape = _arrays(sigma_w2, sigma_b2, rho, q)
    return _out(sw / rho * _act.expect_dphi2(act, _finite_q(q)), shape)


def chi2(sigma_w2, sigma_b2, rho, act, q=None, c=None):
    """chi_2 = sigma_w2 * E[phi'(u1*) phi'(u2*)] at (q*, c*); text after Eq. (6) of 000.

    The slope of the c-map at c* (so ``|c^l - c*| ~ chi_2^l``, Eq. 6) and the
    backward factor of ``q~_ab`` in Eq. (9).  Where ``c* = 1`` (rho = 1, ordered)
    it is evaluated with the same 1-D integral as :func:`chi1`, so the two agree
    to rounding.
    """
    _check_params(sigma_w2, sigma_b2, rho)
    if q is None:
        q = q_star(sigma_w2, sigma_b2, rho, act)
    if c is None:
        c = c_star(sigma_w2, sigma_b2, rho, act, q=q)
    (sw, sb, rho, q, c), shape = _arrays(sigma_w2, sigma_b2, rho, q, c)
    qe = _finite_q(q)
    out = np.empty(sw.size)
    one = c >= 1.0
    out[one] = sw[one] * _act.expect_dphi2(act, qe[one])
    k = ~one
    out[k] = sw[k] * _act.expect_dphidphi(act, qe[k], qe[k], c[k])
    return _out(out, shape)


def _xi(chi):
    with np.errstate(divide="ignore"):
        return 1.0 / np.abs(np.log(chi))


def xi1(sigma_w2, sigma_b2, rho, act, q=None):
    """xi_1 = 1 / |ln chi_1|, Eq. (11) of 000 (inf at chi_1 = 1)."""
    return _xi(chi1(sigma_w2, sigma_b2, rho, act, q=q))


def xi2(sigma_w2, sigma_b2, rho, act, q=None, c=None):
    """xi_2 = 1 / |ln chi_2|, Eq. (6) and Eq. (11) of 000."""
    return _xi(chi2(sigma_w2, sigma_b2, rho, act, q=q, c=c))


def fixed_point_summary(sigma_w2, sigma_b2, rho, act):
    """All fixed-point quantities of Section 3 of 000 at once.

    Returns a dict of arrays of the broadcast shape: ``q_star`` (Eq. 2),
    ``c_star`` (Eqs. 3-4), ``chi1`` (Eq. 10), ``chi2`` (after Eq. 6), ``xi1``,
    ``xi2`` (Eqs. 6, 11) and ``phase`` = "ordered" where chi1 < 1 else "chaotic"
    (for rho < 1 chi1 = 1 is strictly not a critical line of the c-map; module
    docstring).
    """
    _check_params(sigma_w2, sigma_b2, rho)
    (sw, sb, rho), shape = _arrays(sigma_w2, sigma_b2, rho)
    q = _q_star_flat(sw, sb, rho, act)
    c = _c_star_flat(sw, sb, rho, q, act)
    x1 = np.asarray(chi1(sw, sb, rho, act, q=q))
    x2 = np.asarray(chi2(sw, sb, rho, act, q=q, c=c))
    res = {
        "q_star": q,
        "c_star": c,
        "chi1": x1,
        "chi2": x2,
        "xi1": _xi(x1),
        "xi2": _xi(x2),
        "phase": np.where(x1 < 1, "ordered", "chaotic"),
    }
    return {k: np.asarray(v).reshape(shape) for k, v in res.items()}


def trajectory(q0, c0, depth, sigma_w2, sigma_b2, rho, act):
    """Per-layer iterates of Eqs. (2)-(4) of 000 from layer-0 pre-activations.

    ``q0`` is the length and ``c0`` the correlation of the layer-0
    pre-activations of a pair of inputs of equal length.  Returns ``(q, c)``,
    each of shape ``(depth + 1,) + broadcast shape`` with ``q[0] = q0``,
    ``c[0] = c0``, ``q[l] = q_map(q[l-1])``, ``c[l] = c_map(c[l-1], q[l-1])``.
    """
    _check_params(sigma_w2, sigma_b2, rho)
    (q, c, sw, sb, rho), shape = _arrays(q0, c0, sigma_w2, sigma_b2, rho)
    qs, cs = [q], [c]
    for _ in range(int(depth)):
        c = _c_map_flat(c, q, sw, sb, rho, act)
        with np.errstate(over="ignore"):
            q = sw / rho * _act.expect_phi2(act, q) + sb
        qs.append(q)
        cs.append(c)
    full = (int(depth) + 1,) + shape
    return np.stack(qs).reshape(full), np.stack(cs).reshape(full)


# ----------------------------------------------------------------- edge of chaos


def edge_of_chaos_sigma_w2(sigma_b2, rho, act):
    """sigma_w2 at which chi_1 (Eq. 10 of 000) equals 1.

    For relu it is ``2 rho`` (closed form), for linear ``rho``; see
    :func:`sigma_w2_for_chi1`.
    """
    return sigma_w2_for_chi1(1.0, sigma_b2, rho, act)


def point_for_q_star(q_star, rho, act, chi1_target=None, sigma_w2=None):
    """``(sigma_w2, sigma_b2)`` whose length fixed point (Eq. 2 of 000) is ``q_star``.

    On the line chi_1 = ``chi1_target`` (Eq. 10 of 000; 1 is the critical line of 000 §5.1),
    both follow in closed form at q = q*: ``sigma_w2 = chi1_target rho / E[phi'(sqrt(q*) z)^2]``
    and ``sigma_b2 = q* - sigma_w2 / rho E[phi(sqrt(q*) z)^2]``.  Given ``sigma_w2`` instead,
    only ``sigma_b2`` is solved.  ``sigma_b2`` is NaN where it would be negative: no point of
    that line (or with that ``sigma_w2``) has this q*.  Exactly one of ``chi1_target`` and
    ``sigma_w2`` is given.
    """
    if (chi1_target is None) == (sigma_w2 is None):
        raise ValueError("give exactly one of chi1_target and sigma_w2")
    (q, rho), shape = _arrays(q_star, rho)
    _check_params(0.0, 0.0, rho)
    if np.any(q <= 0):
        raise ValueError(f"q_star must be positive, got {q_star}")
    if sigma_w2 is None:
        if np.any(np.asarray(chi1_target, dtype=float) <= 0):
            raise ValueError(f"target chi1 must be positive, got {chi1_target}")
        sw = np.asarray(chi1_target, dtype=float) * rho / _act.expect_dphi2(act, q)
    else:
        sw = np.broadcast_to(np.asarray(sigma_w2, dtype=float), q.shape).astype(float)
    sb = q - sw / rho * _act.expect_phi2(act, q)
    sb = np.where(sb >= 0, sb, np.nan)
    return _out(sw, shape), _out(sb, shape)


def sigma_w2_for_chi1(target, sigma_b2, rho, act):
    """Smallest sigma_w2 at which chi_1 (Eq. 10 of 000) equals ``target``.

    Root in ``sigma_w2`` of ``chi1(sigma_w2) - target`` with ``q*`` re-solved at
    each trial ``sigma_w2``.  Bracketed: at ``sigma_w2 = target rho / sup phi'^2``
    chi1 <= target, and the upper end is grown by factors of 1.1 until chi1 >
    target, so the first crossing is found (elu, for instance, has chi1 > 1 on
    (1.51, 2) at sigma_b2 = 0.05 and touches 1 again at 2 rho where q* diverges).
    chi1 at the result equals the target to ~1e-12.  NaN where no root exists
    below 1e6.
    """
    (t, sb, rho), shape = _arrays(target, sigma_b2, rho)
    _check_params(0.0, sb, rho)
    if np.any(t <= 0):
        raise ValueError(f"target chi1 must be positive, got {target}")

    def f(sw, sb, rho, t):
        q = _q_star_flat(sw, sb, rho, act)
        return sw / rho * _act.expect_dphi2(act, _finite_q(q)) - t

    lo = t * rho / _act.get(act).sup_dphi2
    flo = f(lo, sb, rho, t)
    hi = lo.copy()
    fhi = flo.copy()
    todo = np.flatnonzero(flo < 0)
    while todo.size:
        lo[todo], flo[todo] = hi[todo], fhi[todo]
        hi[todo] *= 1.1
        fhi[todo] = f(hi[todo], sb[todo], rho[todo], t[todo])
        todo = todo[(fhi[todo] <= 0) & (hi[todo] < 1e6)]
    out = bracketed_root(f, lo, hi, args=(sb, rho, t), flo=flo, fhi=fhi, xrtol=4 * _EPS)
    return _out(out, shape)


# ----------------------------------------------------------------- command line


def _grid(sigma_w2, rho):
    sw = np.asarray(sigma_w2, dtype=float)
    r = np.asarray(rho, dtype=float).reshape(-1, 1)
    return sw, r


def _cli_summary(act, sigma_w2, sigma_b2, rho):
    sw, r = _grid(sigma_w2, rho)
    s = fixed_point_summary(sw, sigma_b2, r, act)
    return {"rows": "rho", "columns": "sigma_w2", "rho": r.ravel(), "sigma_w2": sw, **s}


def _cli_eoc(act, sigma_b2, rho):
    sb = np.asarray(sigma_b2, dtype=float)
    r = np.asarray(rho, dtype=float).reshape(-1, 1)
    return {
        "rows": "rho",
        "columns": "sigma_b2",
        "rho": r.ravel(),
        "sigma_b2": sb,
        "sigma_w2": edge_of_chaos_sigma_w2(sb, r, act),
    }


def _cli_trajectory(act, q0, c0, depth, sigma_w2, sigma_b2, rho):
    q, c = trajectory(q0, c0, depth, sigma_w2, sigma_b2, rho, act)
    return {"layer": list(range(int(depth) + 1)), "q": q, "c": c}


_ACT = {
    "type": str,
    "default": "tanh",
    "help": "activation (linear, relu, tanh, hard_tanh, erf, sigmoid, elu)",
}
CLI_COMMANDS = [
    {
        "name": "meanfield",
        "fn": _cli_summary,
        "help": "q*, c*, chi1, chi2, xi1, xi2 and phase with dropout (000 Eqs. 2-6, 10-11), "
        "on a rho x sigma_w2 grid",
        "params": {
            "act": _ACT,
            "sigma_w2": {
                "type": float,
                "default": [1.0, 2.0, 3.0],
                "list": True,
                "help": "weight variances",
            },
            "sigma_b2": {"type": float, "default": 0.05, "help": "bias variance"},
            "rho": {"type": float, "default": [1.0], "list": True, "help": "keep rates"},
        },
    },
    {
        "name": "eoc",
        "fn": _cli_eoc,
        "help": "edge of chaos: sigma_w2 with chi1 = 1 (000 Eq. 10) on a rho x sigma_b2 grid",
        "params": {
            "act": _ACT,
            "sigma_b2": {"type": float, "default": [0.05], "list": True, "help": "bias variances"},
            "rho": {"type": float, "default": [1.0], "list": True, "help": "keep rates"},
        },
    },
    {
        "name": "trajectory",
        "fn": _cli_trajectory,
        "help": "per-layer q^l and c^l from q0, c0 (000 Eqs. 2-4)",
        "params": {
            "act": _ACT,
            "q0": {"type": float, "default": 1.0, "help": "layer-0 length"},
            "c0": {"type": float, "default": 0.5, "help": "layer-0 correlation"},
            "depth": {"type": int, "default": 20, "help": "number of layers"},
            "sigma_w2": {"type": float, "default": 1.5, "help": "weight variance"},
            "sigma_b2": {"type": float, "default": 0.05, "help": "bias variance"},
            "rho": {"type": float, "default": 1.0, "help": "keep rate"},
        },
    },
]
