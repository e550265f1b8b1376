"""Vectorized bracketing root finder (Chandrupatla 1997) for the mean-field solvers.

T. R. Chandrupatla, "A new hybrid quadratic/bisection algorithm for finding the
zero of a nonlinear function without using derivatives", Adv. Eng. Software 28
(1997) 145-149: inverse quadratic interpolation when the last three points make
it safe, bisection otherwise.  Always keeps a valid bracket, so it converges for
any continuous function with a sign change -- the property the fixed-point
solvers of :mod:`sigprop.theory.meanfield` need near criticality, where plain
iteration of the maps converges arbitrarily slowly.

Only the still-active elements are passed to ``fun`` in each iteration (with the
matching slices of ``args``), so mixed batches cost no more than their slowest
element needs.
"""

from __future__ import annotations

import numpy as np

__all__ = ["bracketed_root"]

_EPS = np.finfo(float).eps


def bracketed_root(
    fun, lo, hi, args=(), flo=None, fhi=None, xatol=0.0, xrtol=4 * _EPS, maxiter=200
):
    """Roots of ``fun(x, *args)`` elementwise in the brackets ``[lo, hi]``.

    ``lo, hi`` and every array in ``args`` are 1-D of equal length (one entry per
    problem); ``fun`` must be elementwise.  ``flo``/``fhi`` may pass the function
    values at the ends if already known.  An end where the function is exactly
    zero is returned as the root; an invalid bracket (no sign change) gives NaN.
    Terminates when the bracket is narrower than ``xatol + xrtol * |x|``.
    """
    lo = np.array(lo, dtype=float).reshape(-1)
    hi = np.array(hi, dtype=float).reshape(-1)
    args = tuple(np.asarray(a).reshape(-1) for a in args)
    flo = fun(lo, *args) if flo is None else np.asarray(flo, dtype=float).reshape(-1)
    fhi = fun(hi, *args) if fhi is None else np.asarray(fhi, dtype=float).reshape(-1)

    x = np.full(lo.size, np.nan)
    zero_lo = flo == 0
    zero_hi = (fhi == 0) & ~zero_lo
    x[zero_lo] = lo[zero_lo]
    x[zero_hi] = hi[zero_hi]
    act = np.flatnonzero(np.sign(flo) * np.sign(fhi) < 0)

    x1, f1 = lo[act], flo[act]
    x2, f2 = hi[act], fhi[act]
    t = np.full(act.size, 0.5)
    for _ in range(maxiter):
        if act.size == 0:
            break
        xt = x1 + t * (x2 - x1)
        ft = np.asarray(fun(xt, *(a[act] for a in args)), dtype=float)
        same = np.sign(ft) == np.sign(f1)
        x3 = np.where(same, x1, x2)
        f3 = np.where(same, f1, f2)
        x2 = np.where(same, x2, x1)
        f2 = np.where(same, f2, f1)
        x1, f1 = xt, ft

        smaller = np.abs(f1) < np.abs(f2)
        xm = np.where(smaller, x1, x2)
        fm = np.where(smaller, f1, f2)
        dx = np.abs(x2 - x1)
        tol = xatol + xrtol * np.abs(xm)
        bad = ~np.isfinite(ft)
        done = bad | (fm == 0) | (dx <= tol)
        if done.any():
            x[act[done]] = np.where(bad[done], np.nan, xm[done])
            keep = ~done
            act = act[keep]
            x1, x2, x3, f1, f2, f3 = (v[keep] for v in (x1, x2, x3, f1, f2, f3))
            dx, tol = dx[keep], tol[keep]
            if act.size == 0:
                break

        with np.errstate(divide="ignore", invalid="ignore"):
            xi = (x1 - x2) / (x3 - x2)
            phi = (f1 - f2) / (f3 - f2)
            alpha = (x3 - x1) / (x2 - x1)
            iqi = (1.0 - np.sqrt(1.0 - xi) < phi) & (phi < np.sqrt(xi))
            t_iqi = f1 / (f1 - f2) * f3 / (f3 - f2) - alpha * f1 / (f3 - f1) * f2 / (f2 - f3)
        t = np.where(iqi & np.isfinite(t_iqi), t_iqi, 0.5)
        tl = 0.5 * tol / dx
        t = np.clip(t, tl, 1.0 - tl)
    if act.size:  # maxiter reached: best end of the final bracket
        x[act] = np.where(np.abs(f1) < np.abs(f2), x1, x2)
    return x
