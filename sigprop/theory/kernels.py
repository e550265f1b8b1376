"""Infinite-width NNGP / NTK kernels: fully connected (NTK parameterization), ResNet, DenseNet.

Papers / references
-------------------
* Fully connected nets: the layer algebra of neural-tangents' ``stax`` in the NTK
  parameterization (``/work/shared/references/theory-code.md`` Sec. 1).  A Dense
  layer is ``z = (W_std / sqrt(n_in)) W x + b_std b`` with ``W, b ~ N(0, 1)``; the
  input kernel is ``x . x' / d``; Dense maps ``Sigma -> W_std^2 Sigma + b_std^2``
  and ``Theta -> Sigma_new + W_std^2 Theta``; an activation maps
  ``Sigma -> E[phi(u) phi(v)]`` and ``Theta -> Theta * E[phi'(u) phi'(v)]``.
  Kernels are per output unit (NT divides the trace over logits by their number).
* Dropout (keep rate ``rho``): NT's ``Dropout(rate=rho)`` kernel, i.e. the
  same-input diagonal of Sigma and Theta is multiplied by ``1/rho`` and the
  cross-input entries are unchanged; this is Eqs. (2)-(3) of
  000 (Huang et al. 2019, arXiv:1912.09132) (length map with ``1/rho``,
  correlation map without).
* ResNet and DenseNet NTKs: 001 (Littwin & Wolf 2020, arXiv:2001.10460)
  (Littwin & Wolf, "Residual Tangent Kernels"), Thm. 1 (Eqs. 8, 11-18, 23-25,
  proof Eqs. 44-67) and Thm. 2 (Eqs. 19-22, 26-29, proof Eqs. 68-93).

Architectures of 001 (Sec. 3-4), implemented exactly
----------------------------------------------------
``y^0 = W^s x / sqrt(d)``, ``f = W^f . y^L / sqrt(n)``, all weights N(0, 1), relu
``phi``, ``q = sqrt(2) phi(y)``; the NTK ``G(x, x') = <df(x)/dW, df(x')/dW>``
sums over the hidden weights only (``W^s, W^f`` fixed, text before Thm. 1).

* ResNet (Eq. 7-8): ``y^l = y^{l-1} + g^{l,m}``, ``g^{l,1} = sqrt(alpha/n) W^{l,1} y^{l-1}``,
  ``g^{l,h} = sqrt(alpha/n) W^{l,h} sqrt(2) phi(g^{l,h-1})`` (``1 < h <= m``).
  Note the first branch layer acts on ``y^{l-1}`` with no nonlinearity, so
  for ``m = 1`` the network is linear.
* DenseNet (Eq. 19): ``y^l = (1/sqrt(n l)) sum_{h<l} W^{l,h} sqrt(2) phi(y^h)``.

Index conventions and typos of 001 (what is implemented, and why)
------------------------------------------------------------------
1. Eq. (15) gives ``Cov(y^{l,h}) = alpha^h Sigma^{l,h-1}``, so the branch output
   ``y^{l,m}`` has covariance ``alpha^m Sigma^{l,m-1}`` and Eq. (8) implies
   ``Sigma^l = Sigma^{l-1} + alpha^m Sigma^{l-1,m-1}``.  Eqs. (17)-(18) print
   ``Sigma^{l-1,m}`` (one more relu map).  Default ``sigma_recursion='eq15'``
   follows the architecture; ``'eq18'`` is the literal Eq. (18).  Both agree on
   the diagonal (``2 E[phi^2] = q``).  The simulation tests show 'eq15' matches
   finite networks and measure the gap of 'eq18' off the diagonal.
2. Eq. (23) prints ``Sigma^{L,h-1}, dSigma^{L,h'}`` in the added term; its own
   ``K_1`` (index 0), the summed form (Eq. 63, middle line) and Eq. (25) require
   ``L-1``.  Implemented: the summed form of Eq. (63).
3. Eq. (25) ``K^R(x,x) = m L alpha^m (1+alpha^m)^{L-1}`` assumes
   ``Sigma^0(x,x) = 1``; with Eq. (11) ``Sigma^0 = x.x/d`` the exact diagonal is
   that times ``x.x/d``.  :func:`resnet_ntk_diagonal` takes ``sigma0``.
4. DenseNet: Eqs. (21)-(22) index the covariance of ``q^h`` as ``Sigma^{h+1}``,
   Eqs. (26), (82) as ``Sigma^h``.  Implemented with ``a_h = Cov(q^h)``,
   ``s_l = Cov(y^l) = (1/l) sum_{h<l} a_h`` (Eq. 21), ``dS_h = 2E[phi'phi']`` at
   ``s_h`` (the derivative at the source of ``W^{l,h}``, as used in Eq. 27, 76),
   ``M_L = 1``, ``M_h = dS_h sum_{l>h} M_l / l`` (Eq. 27 with
   ``M_l = m^{l+1,l}``), ``K^D = sum_l s_l M_l`` (Eq. 26/84).
5. Eq. (29) ``K^D(x,x) = sum_{l=1}^L 1/(l+1)`` contradicts Eqs. (26)-(27)
   themselves: ``m^{L+1,L} = 1`` (Eq. 81), so the last layer contributes 1,
   not ``1/(L+1)``, and the recursion gives the harmonic number
   ``H_L = sum_{l=1}^L 1/l`` (times ``sigma0``).  :func:`densenet_ntk_diagonal`
   returns Eq. (29) with ``form='paper'`` and ``H_L`` with ``form='recursion'``;
   the tests show simulations agree with ``H_L`` (gap ``L/(L+1)``).

Papers cited by prefix: 000 = Huang, Xu, Du, Zeng, Zhao (2019), arXiv:1912.09132; 001 = Littwin,
Wolf (2020), arXiv:2001.10460.
"""

from __future__ import annotations

import numpy as np

from . import activations as _act

__all__ = [
    "input_kernel",
    "fc_kernels",
    "relu2_maps",
    "resnet_ntk",
    "resnet_ntk_diagonal",
    "densenet_ntk",
    "densenet_ntk_diagonal",
    "fig2_inputs",
    "CLI_COMMANDS",
]


# ------------------------------------------------------------------ helpers


def _as_inputs(x1, x2):
    x1 = np.atleast_2d(np.asarray(x1, dtype=float))
    same = x2 is None
    x2 = x1 if same else np.atleast_2d(np.asarray(x2, dtype=float))
    if x1.shape[-1] != x2.shape[-1]:
        raise ValueError("x1 and x2 must have the same input dimension")
    return x1, x2, same


def input_kernel(x1, x2=None):
    """Input covariance ``x . x' / d`` (NT ``requirements.py``; 001 Eq. 11).

    Returns ``(cov1 (N1,), cov2 (N2,), k12 (N1, N2))``.
    """
    x1, x2, _ = _as_inputs(x1, x2)
    d = x1.shape[-1]
    return (np.sum(x1 * x1, -1) / d, np.sum(x2 * x2, -1) / d, x1 @ x2.T / d)


def _corr(k, q1, q2, same=False):
    """Correlation ``k / sqrt(q1 q2)``; exactly 1 on the same-input diagonal.

    (Rounding would otherwise give ``c = 1 - 1e-16`` there, and relu's
    ``arccos`` turns that into a ~1e-8 relative error of ``E[phi' phi']``.)
    """
    den = np.sqrt(q1[..., :, None] * q2[..., None, :])
    with np.errstate(invalid="ignore", divide="ignore"):
        c = np.where(den > 0, k / np.where(den > 0, den, 1.0), 0.0)
    c = np.clip(c, -1.0, 1.0)
    if same:
        c = np.where(np.eye(c.shape[-1], dtype=bool), 1.0, c)
    return c


def _act_step(act, q1, q2, k, closed_form=True, same=False):
    """(E[phi(u)phi(v)], E[phi'(u)phi'(v)], E[phi(u1)^2], E[phi(u2)^2])."""
    c = _corr(k, q1, q2, same)
    Q1, Q2 = q1[..., :, None], q2[..., None, :]
    kk = _act.expect_phiphi(act, Q1, Q2, c, closed_form=closed_form)
    dd = _act.expect_dphidphi(act, Q1, Q2, c, closed_form=closed_form)
    return (
        kk,
        dd,
        _act.expect_phi2(act, q1, closed_form=closed_form),
        _act.expect_phi2(act, q2, closed_form=closed_form),
    )


def _scale_diag(a, factor, same):
    """Multiply the same-input diagonal (i == j, only when x2 is x1) by ``factor``."""
    if not same:
        return a
    eye = np.eye(a.shape[-1], dtype=bool)
    return np.where(eye, a * factor[..., None, None], a)


# ------------------------------------------------------------- FC (NT stax)


def fc_kernels(
    x1, x2=None, depth=1, W_std=1.0, b_std=0.0, act="relu", keep_rate=1.0, closed_form=True
):
    """NNGP and NTK of ``stax.serial(*[Dense, act, Dropout(keep)] * depth, Dense)``.

    NTK parameterization of neural-tangents (theory-code.md Sec. 1):
    ``Dense: Sigma -> W_std^2 Sigma + b_std^2``, ``Theta -> Sigma_new + W_std^2 Theta``;
    ``act: Sigma -> E[phi phi]``, ``Theta -> Theta E[phi' phi']`` (closed forms for
    linear / relu / erf, 2-D quadrature otherwise, via
    :mod:`sigprop.theory.activations`); ``Dropout(keep)``: the same-input
    diagonal is divided by ``keep`` (000 Eq. 2 vs Eq. 3).  With ``x2=None`` the
    kernel of ``x1`` with itself is returned (and only then does dropout act on
    the diagonal, as in NT).

    ``W_std, b_std, keep_rate`` broadcast to a grid shape ``G``; returns a dict
    with ``nngp, ntk`` of shape ``G + (N1, N2)`` and ``cov1, cov2`` (the
    diagonals, ``G + (N1,)``, ``G + (N2,)``) of the readout layer.
    """
    x1, x2, same = _as_inputs(x1, x2)
    W, b, keep = np.broadcast_arrays(
        *(np.asarray(v, dtype=float) for v in (W_std, b_std, keep_rate))
    )
    if np.any(keep <= 0) or np.any(keep > 1):
        raise ValueError("keep_rate must be in (0, 1]")
    W2, b2 = (W**2)[..., None], (b**2)[..., None]
    q1, q2, k = input_kernel(x1, None if same else x2)
    G = W.shape
    q1 = np.broadcast_to(q1, G + q1.shape)
    q2 = np.broadcast_to(q2, G + q2.shape)
    k = np.broadcast_to(k, G + k.shape)
    theta = np.zeros_like(k)

    def dense(q1, q2, k, theta):
        k = W2[..., None] * k + b2[..., None]
        return W2 * q1 + b2, W2 * q2 + b2, k, k + W2[..., None] * theta

    q1, q2, k, theta = dense(q1, q2, k, theta)
    for _ in range(int(depth)):
        k, dd, q1, q2 = _act_step(act, q1, q2, k, closed_form, same)
        theta = theta * dd
        # Dropout(keep): 1/keep on the same-input diagonal only
        inv = 1.0 / keep
        q1, q2 = q1 * inv[..., None], q2 * inv[..., None]
        k, theta = _scale_diag(k, inv, same), _scale_diag(theta, inv, same)
        q1, q2, k, theta = dense(q1, q2, k, theta)
    return {"nngp": k, "ntk": theta, "cov1": q1, "cov2": q2}


# ------------------------------------------------------------ 001 ResNet


def relu2_maps(q1, q2, k, same=False):
    """``(2 E[phi(u)phi(v)], 2 E[phi'(u)phi'(v)])`` for relu: 001 Eqs. (16), (24).

    The arc-cosine kernels times 2 (``q = sqrt(2) phi(y)``): diagonal ``q -> q``.
    """
    c = _corr(k, q1, q2, same)
    Q1, Q2 = q1[..., :, None], q2[..., None, :]
    return (
        2.0 * _act.expect_phiphi("relu", Q1, Q2, c),
        2.0 * _act.expect_dphidphi("relu", Q1, Q2, c),
    )


def resnet_ntk(x1, x2=None, depth=1, m=1, alpha=1.0, sigma_recursion="eq15"):
    """ResNet NTK ``K^R_L(x, x')`` of 001 Thm. 1 (Eqs. 16-18, 23-24; summed form Eq. 63).

    ``K_L = sum_{l=1}^L alpha^m [sum_{h=1}^m Sigma^{l-1,h-1} prod_{h'=h}^{m-1} dSigma^{l-1,h'}]
    prod_{l'=l}^{L-1} (1 + alpha^m prod_{h=1}^{m-1} dSigma^{l',h})``, with
    ``Sigma^{l,0} = Sigma^l``, ``Sigma^{l,h} = 2E[phi phi]`` at ``Sigma^{l,h-1}`` (Eq. 16),
    ``dSigma^{l,h} = 2E[phi' phi']`` at ``Sigma^{l,h-1}`` (Eq. 24), ``Sigma^0 = x.x'/d``
    (Eq. 11) and ``Sigma^l = Sigma^{l-1} + alpha^m Sigma^{l-1,m-1}`` (``'eq15'``,
    implied by Eqs. 8 and 15) or ``... Sigma^{l-1,m}`` (``'eq18'``, Eq. 18 as printed).
    Only the branch weights ``W^{l,h}`` count.  ``alpha`` broadcasts (grid ``G``);
    returns ``G + (N1, N2)``.
    """
    if sigma_recursion not in ("eq15", "eq18"):
        raise ValueError("sigma_recursion must be 'eq15' or 'eq18'")
    m, L = int(m), int(depth)
    if m < 1 or L < 1:
        raise ValueError("depth and m must be >= 1")
    x1, x2, same = _as_inputs(x1, x2)
    a = np.asarray(alpha, dtype=float)
    am = (a**m)[..., None, None]
    q1, q2, s = input_kernel(x1, None if same else x2)
    G = a.shape
    q1, q2, s = (np.broadcast_to(v, G + v.shape).copy() for v in (q1, q2, s))
    K = np.zeros_like(s)
    for _ in range(L):
        S = [s]  # Sigma^{l-1,h}, h = 0..m
        D = [None]  # dSigma^{l-1,h}, h = 1..m
        for _h in range(m):
            kk, dd = relu2_maps(q1, q2, S[-1], same)
            S.append(kk)
            D.append(dd)
        B = np.zeros_like(s)
        for h in range(1, m + 1):
            term = S[h - 1]
            for hp in range(h, m):
                term = term * D[hp]
            B = B + term
        dprod = np.ones_like(s)
        for hp in range(1, m):
            dprod = dprod * D[hp]
        K = K * (1.0 + am * dprod) + am * B
        s = s + am * (S[m - 1] if sigma_recursion == "eq15" else S[m])
        q1 = q1 * (1.0 + am[..., 0])
        q2 = q2 * (1.0 + am[..., 0])
    return K


def resnet_ntk_diagonal(depth, m, alpha, sigma0=1.0):
    """Closed-form ResNet NTK diagonal, 001 Eq. (25): ``m L alpha^m (1+alpha^m)^{L-1} sigma0``.

    Eq. (25) is for ``Sigma^0(x,x) = 1``; for Eq. (11) inputs pass
    ``sigma0 = x.x/d``.  All arguments broadcast.
    """
    L, m, a, s0 = (np.asarray(v, dtype=float) for v in (depth, m, alpha, sigma0))
    return m * L * a**m * (1.0 + a**m) ** (L - 1.0) * s0


# ---------------------------------------------------------- 001 DenseNet


def densenet_ntk(x1, x2=None, depth=1):
    """DenseNet NTK ``K^D_L(x, x')`` of 001 Thm. 2 (Eqs. 21-22, 26-28; proof Eqs. 70-84).

    ``s_0 = x.x'/d``; ``a_h = 2E[phi phi]`` at ``s_h`` (covariance of ``q^h``);
    ``s_l = (1/l) sum_{h<l} a_h`` (Eq. 21-22); ``dS_h = 2E[phi' phi']`` at ``s_h``
    (Eq. 28); ``M_L = 1``, ``M_h = dS_h sum_{l=h+1}^L M_l / l`` (Eq. 27, ``M_l = m^{l+1,l}``);
    ``K = sum_{l=1}^L s_l M_l`` (Eq. 26).  Only the hidden ``W^{l,h}`` count.
    Returns ``(N1, N2)``.
    """
    L = int(depth)
    if L < 1:
        raise ValueError("depth must be >= 1")
    x1, x2, same = _as_inputs(x1, x2)
    q1, q2, s0 = input_kernel(x1, None if same else x2)
    s = [s0]
    a_sum = np.zeros_like(s0)
    dS = []
    for l in range(1, L + 1):
        a_h, d_h = relu2_maps(q1, q2, s[-1], same)  # q-diagonals stay q1, q2 (2E[phi^2](q) = q)
        dS.append(d_h)
        a_sum = a_sum + a_h
        s.append(a_sum / l)
    # dS[h] is the derivative kernel at s_h for h = 0..L (dS[L] unused)
    M = [None] * (L + 1)
    M[L] = np.ones_like(s0)
    tail = M[L] / L  # sum_{l > h} M_l / l, starting at h = L-1
    for h in range(L - 1, 0, -1):
        M[h] = dS[h] * tail
        tail = tail + M[h] / h
    K = np.zeros_like(s0)
    for l in range(1, L + 1):
        K = K + s[l] * M[l]
    return K


def densenet_ntk_diagonal(depth, sigma0=1.0, form="paper"):
    """DenseNet NTK diagonal.

    ``form='paper'``: 001 Eq. (29), ``sum_{l=1}^L 1/(l+1)`` (times ``sigma0``).
    ``form='recursion'``: the value of Eqs. (26)-(27) themselves, ``H_L = sum_{l=1}^L 1/l``
    (times ``sigma0 = x.x/d``); see the module docstring, note 5.
    """
    L = np.asarray(depth, dtype=int)
    s0 = np.asarray(sigma0, dtype=float)
    off = {"paper": 1, "recursion": 0}
    if form not in off:
        raise ValueError("form must be 'paper' or 'recursion'")
    Lmax = int(np.max(L)) if L.size else 0
    cum = np.concatenate([[0.0], np.cumsum(1.0 / (np.arange(1, Lmax + 1) + off[form]))])
    return cum[L] * s0


def fig2_inputs(theta):
    """001 Fig. 2 inputs: ``x = [1, 0]`` and ``x'(theta) = [cos theta, sin theta]`` (rows)."""
    th = np.atleast_1d(np.asarray(theta, dtype=float))
    return np.array([[1.0, 0.0]]), np.stack([np.cos(th), np.sin(th)], -1)


# -------------------------------------------------------------------- CLI


def _tolist(d):
    return {k: np.asarray(v).tolist() for k, v in d.items()}


def _cli_fc(depth, W_std, b_std, act, keep_rate, theta):
    x1, x2 = fig2_inputs(theta)
    x = np.concatenate([x1, x2])
    W = np.asarray(W_std, dtype=float)[:, None, None]
    b = np.asarray(b_std, dtype=float)[None, :, None]
    r = fc_kernels(x, None, depth, W, b, act, np.asarray(keep_rate, dtype=float)[None, None, :])
    return {
        "inputs": x.tolist(),
        "W_std": list(W_std),
        "b_std": list(b_std),
        "keep_rate": list(keep_rate),
        "axes": "W_std, b_std, keep_rate, input, input",
        **_tolist({"nngp": r["nngp"], "ntk": r["ntk"]}),
    }


def _cli_resnet(depth, m, alpha, theta, sigma_recursion):
    x1, x2 = fig2_inputs(theta)
    a = np.asarray(alpha, dtype=float)
    K = resnet_ntk(x1, x2, depth, m, a, sigma_recursion)[..., 0, :]
    return {
        "theta": list(theta),
        "alpha": list(alpha),
        "depth": depth,
        "m": m,
        "ntk": K.tolist(),
        "diagonal_eq25": resnet_ntk_diagonal(depth, m, a).tolist(),
        "diagonal_eq25_sigma0_x.x/d": resnet_ntk_diagonal(depth, m, a, 0.5).tolist(),
    }


def _cli_densenet(depth, theta):
    x1, x2 = fig2_inputs(theta)
    return {
        "theta": list(theta),
        "depth": list(depth),
        "ntk": [densenet_ntk(x1, x2, L)[0].tolist() for L in depth],
        "diagonal_eq29": densenet_ntk_diagonal(depth).tolist(),
        "diagonal_recursion": densenet_ntk_diagonal(depth, form="recursion").tolist(),
    }


_THETA = [float(t) for t in np.linspace(0.0, np.pi, 20)]

CLI_COMMANDS = [
    {
        "name": "fc-kernels",
        "help": "NNGP/NTK of depth x [Dense, act, Dropout] + Dense (NT NTK param.) on 001 Fig. 2 inputs",
        "params": {
            "depth": {"type": int, "default": 3, "help": "hidden layers", "list": False},
            "W_std": {
                "type": float,
                "default": [1.41421356],
                "help": "weight std(s)",
                "list": True,
            },
            "b_std": {"type": float, "default": [0.0], "help": "bias std(s)", "list": True},
            "act": {"type": str, "default": "relu", "help": "activation name", "list": False},
            "keep_rate": {
                "type": float,
                "default": [1.0],
                "help": "dropout keep rate(s)",
                "list": True,
            },
            "theta": {
                "type": float,
                "default": [0.0, 0.785398, 1.570796],
                "help": "angles of x'",
                "list": True,
            },
        },
        "fn": _cli_fc,
    },
    {
        "name": "resnet-ntk",
        "help": "001 Thm. 1 ResNet NTK K(x, x'(theta)) and Eq. 25 diagonal",
        "params": {
            "depth": {
                "type": int,
                "default": 5,
                "help": "number of residual branches L",
                "list": False,
            },
            "m": {"type": int, "default": 2, "help": "branch depth", "list": False},
            "alpha": {"type": float, "default": [0.3], "help": "branch scale(s)", "list": True},
            "theta": {"type": float, "default": _THETA, "help": "angles of x'", "list": True},
            "sigma_recursion": {
                "type": str,
                "default": "eq15",
                "help": "'eq15' (architecture) or 'eq18' (literal)",
                "list": False,
            },
        },
        "fn": _cli_resnet,
    },
    {
        "name": "densenet-ntk",
        "help": "001 Thm. 2 DenseNet NTK K(x, x'(theta)) and Eq. 29 / recursion diagonals",
        "params": {
            "depth": {"type": int, "default": [5], "help": "depth(s) L", "list": True},
            "theta": {"type": float, "default": _THETA, "help": "angles of x'", "list": True},
        },
        "fn": _cli_densenet,
    },
]
