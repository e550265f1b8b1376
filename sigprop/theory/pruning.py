"""Pruning at initialization: critical sparsity, rescaling trick, Stable ResNet.

Paper: 003 (Hayou et al. 2021, arXiv:2002.08797, "Robust Pruning at Initialization").
Notation of its Section 2.1: ``L`` layers
of width ``N``, ``W^l ~ N(0, sigma_w2 / v_l)``, ``v_l = alpha_l N``,
``M_l = zeta_l N^2`` weights in layer ``l``; a global threshold keeps the top
``(1 - s) sum_l M_l`` scores; the critical sparsity ``s_cr`` is the smallest
sparsity at which some layer is fully pruned (definition above Thm. 1).

* :func:`sbp_kappa`, :func:`critical_sparsity_bound` -- Thm. 1 (Section 2.2 and
  App. C): for sensitivity-based pruning (score ``|W dL/dW|``) outside the edge
  of chaos, ``E[s_cr] <= (1 + log(kappa L N^2) / kappa) / L + O(...)`` with
  ``kappa = |log chi| / 8`` and ``chi = f'(1) = sigma_w2 E[phi'(sqrt(q*) Z)^2]``
  (``chi_1`` of :mod:`sigprop.theory.meanfield` at keep rate 1).
* :func:`mbp_critical_sparsity_bound` -- Prop. 4 (App. E): the large-depth
  bound for magnitude-based pruning when one layer ``l0`` has the largest
  ``alpha``, evaluated numerically as for Table 7.
* :func:`rescaling_factors`, :func:`expected_rescaling_factor` -- Prop. 1 /
  Eq. (7) and Algorithm 1 (App. I): the per-neuron factors ``rho`` that put a
  pruned FFNN/CNN back on the edge of chaos.
* :func:`criterion_second_moment` -- Thm. 2 and Prop. 2 (App. D): the
  mean-field second moment ``m^l = E[|W dL/dW|^2]`` of the sensitivity
  criterion in a fully connected ResNet with and without the ``1/sqrt(L)``
  branch scaling of the Stable ResNet (Eq. 9).

Ambiguities of the paper and the choices made here (see the docstrings):

1. Thm. 1 is stated with the natural log (its proof sets
   ``eps = log(kappa L N^2)/(kappa L)`` so that ``chi^{eps L/4} = (kappa L N^2)^-2``).
   The number quoted after it (27% for ``L = N = 100, kappa = 0.2``) is only
   obtained with ``log10``; with ``ln`` the bound is 62%.  ``log_base``
   selects either; the default is the theorem's ``e``.
2. Prop. 1 / Alg. 1 define ``rho = (sum_j W_ij^2 delta_ij)^{-1/2}``.  Under the
   paper's own initialization ``W ~ N(0, sigma_w2/N)`` this sets the effective
   weight variance to ``1`` (not ``sigma_w2``), so the rescaled net is on the
   EOC only when ``sigma_w2 = 1``; the proof of Prop. 1 silently uses
   standardized weights (its ``alpha_l < 1`` "unless we do not prune").
   ``rescaling_factors(..., sigma_w2=None)`` is the literal formula; passing
   ``sigma_w2`` gives the variance-preserving version the proof needs.
3. Prop. 4 compares ``max|X_i|`` with ``gamma |Z|^(k)`` although the weight
   standard deviations differ by ``sqrt(alpha_l0/alpha_l) = sqrt(gamma)``;
   ``quantile_factor='gamma'`` (default, literal) or ``'sqrt_gamma'``.

Papers cited by prefix: 003 = Hayou, Ton, Doucet, Teh (2021), arXiv:2002.08797.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri_exp

from . import activations as _act
from . import meanfield as _mf

__all__ = [
    "sbp_kappa",
    "critical_sparsity_bound",
    "mbp_critical_sparsity_bound",
    "rescaling_factors",
    "conv_rescaling_factors",
    "expected_rescaling_factor",
    "criterion_second_moment",
    "CLI_COMMANDS",
]


def _out(x):
    x = np.asarray(x, dtype=float)
    return x[()] if x.ndim == 0 else x


# ----------------------------------------------------------------- Thm. 1 (SBP)


def sbp_kappa(sigma_w2, sigma_b2, act):
    """``kappa = |log chi(sigma_b, sigma_w)| / 8`` of Thm. 1 (003, Section 2.2).

    ``chi = f'(1) = sigma_w2 E[phi'(sqrt(q*) Z)^2]`` is
    :func:`sigprop.theory.meanfield.chi1` at keep rate ``rho = 1``.  Zero on the
    edge of chaos.  Vectorized over ``sigma_w2, sigma_b2``.
    """
    chi = _mf.chi1(sigma_w2, sigma_b2, 1.0, act)
    return _out(np.abs(np.log(chi)) / 8.0)


def critical_sparsity_bound(depth, width, sigma_w2, sigma_b2, act, *, log_base=np.e):
    """Leading term of the Thm. 1 bound on ``E[s_cr]`` for sensitivity pruning.

    003, Thm. 1 (statement in Section 2.2, proof in App. C, FFNN Eq. (2) or CNN
    Eq. (3) with ``M_l = N^2``)::

        E[s_cr] <= (1/L) (1 + log(kappa L N^2) / kappa) + O(1 / (kappa^2 sqrt(L N^2)))

    with ``kappa = |log chi| / 8`` (:func:`sbp_kappa`).  The paper proves it in
    the ordered phase and states that the chaotic phase is "similar"; the same
    expression with ``|log chi|`` is returned there.  On the EOC (``kappa = 0``)
    the theorem gives no bound and ``inf`` is returned.  The ``O(.)`` remainder
    has no explicit constant and is not included; values above 1 are vacuous
    (returned as computed, not clipped).  ``log_base`` is the base of the outer
    ``log`` (``kappa`` always uses ``ln``): ``e`` is the theorem, ``10``
    reproduces the 27% quoted after it (see the module docstring).

    All arguments broadcast; returns an array (numpy float for scalars).
    """
    L = np.asarray(depth, dtype=float)
    N = np.asarray(width, dtype=float)
    kappa = np.asarray(sbp_kappa(sigma_w2, sigma_b2, act), dtype=float)
    L, N, kappa = np.broadcast_arrays(L, N, kappa)
    with np.errstate(divide="ignore", invalid="ignore"):
        lg = np.log(kappa * L * N**2) / np.log(log_base)
        out = (1.0 + lg / kappa) / L
    out = np.where(kappa > 1e-12, out, np.inf)
    return _out(out)


# ----------------------------------------------------------------- Prop. 4 (MBP)


def _log_qc(logt):
    """``Q_{1-t}`` (quantile of |N(0,1)|) from ``log t``, accurate for tiny t."""
    return -ndtri_exp(logt - np.log(2.0))


def _x_eps(fac, g, logu):
    """``x_{eps,gamma}``: last x in (0,1) with ``fac Q_x <= Q_{1-(1-x)^g}`` (0 if none).

    ``logu`` is a grid of ``log(1 - x)``; the inequality is tested on it and the
    last crossing refined by bisection in ``log(1 - x)``.
    """
    fail = fac * _log_qc(logu) <= _log_qc(g * logu)
    if not fail.any():
        return 0.0
    k = int(np.flatnonzero(fail)[0])  # logu ascending: smallest 1-x that fails
    if k == 0:
        return 1.0
    lo, hi = logu[k - 1], logu[k]  # lo passes, hi fails
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if fac * _log_qc(mid) <= _log_qc(g * mid):
            hi = mid
        else:
            lo = mid
    return float(-np.expm1(hi))


def mbp_critical_sparsity_bound(
    gamma, width, zeta_l0=1.0, *, quantile_factor="gamma", n_eps=399, return_details=False
):
    """Prop. 4 (003, App. E): large-depth bound on ``E[s_cr]`` for magnitude pruning.

    One layer ``l0`` has the largest ``alpha`` (smallest init variance),
    ``gamma = min_{l != l0} alpha_l0 / alpha_l > 1``, ``M_l0 = zeta_l0 N^2``::

        E[s_cr] <= inf_{eps in (0,2)} { x_eps + zeta_l0 N^2 / (1 + gamma^{2-eps})
                                          * (1 - x_eps)^{1 + gamma^{2-eps}} } + O(1/sqrt(L N^2)),
        x_eps = inf{ y in (0,1): for all x > y, c Q_x > Q_{1-(1-x)^{gamma^{2-eps}}} },

    ``Q_x`` the x-quantile of ``|N(0,1)|`` and ``c = gamma`` as printed
    (``quantile_factor='gamma'``) or ``c = sqrt(gamma)``, the actual ratio of
    weight standard deviations (``'sqrt_gamma'``).  The infimum is taken on a
    uniform grid of ``n_eps`` values of eps in (0, 2); ``x_eps`` on a grid of
    ``log(1 - x)`` down to ``-700`` refined by bisection.  The ``O(.)`` term is
    dropped.  ``gamma, width, zeta_l0`` broadcast; returns the bound (and, with
    ``return_details``, a dict with the minimizing ``eps`` and ``x_eps``).
    """
    if quantile_factor not in ("gamma", "sqrt_gamma"):
        raise ValueError("quantile_factor must be 'gamma' or 'sqrt_gamma'")
    gam, N, zeta = np.broadcast_arrays(
        *(np.asarray(v, dtype=float) for v in (gamma, width, zeta_l0))
    )
    if np.any(gam <= 1):
        raise ValueError("Prop. 4 needs gamma > 1")
    eps_grid = np.linspace(0.0, 2.0, n_eps + 2)[1:-1]
    logu = np.concatenate(
        [np.linspace(-700.0, np.log(0.1), 6000), np.log1p(-np.linspace(0.9, 1e-12, 3000)[1:])]
    )
    best = np.empty(gam.size)
    arg_eps = np.empty(gam.size)
    arg_x = np.empty(gam.size)
    for k, (g0, n0, z0) in enumerate(zip(gam.ravel(), N.ravel(), zeta.ravel())):
        fac = g0 if quantile_factor == "gamma" else np.sqrt(g0)
        vals = np.empty(eps_grid.size)
        xs = np.empty(eps_grid.size)
        for j, eps in enumerate(eps_grid):
            g = g0 ** (2.0 - eps)
            x = _x_eps(fac, g, logu)
            xs[j] = x
            with np.errstate(over="ignore"):
                vals[j] = x + z0 * n0**2 / (1.0 + g) * (1.0 - x) ** (1.0 + g)
        j = int(np.argmin(vals))
        best[k], arg_eps[k], arg_x[k] = vals[j], eps_grid[j], xs[j]
    shape = gam.shape
    res = _out(best.reshape(shape))
    if return_details:
        return res, {"eps": _out(arg_eps.reshape(shape)), "x_eps": _out(arg_x.reshape(shape))}
    return res


# ----------------------------------------------------------------- Prop. 1 / Alg. 1


def rescaling_factors(weight, mask, *, sigma_w2=None, per="neuron"):
    """Rescaling factors ``rho`` of Prop. 1 / Eq. (7) and Algorithm 1 (003, App. I).

    ``weight, mask``: arrays of shape ``(..., out, in)`` (FFNN, Eq. 2) or
    ``(..., out, in, *kernel)`` (CNN, Eq. 3; ``kernel_ndim`` trailing axes);
    leading axes are batch axes (e.g. several layers or seeds).  For each output
    neuron ``i`` (and kernel position ``beta`` for a CNN) Alg. 1 computes
    ``a_i = sum_j W_ij^2 delta_ij`` over the fan-in ``j`` (input channels for a
    CNN, as in Eq. 7) and returns ``rho_i = a_i^{-1/2}`` (constant across ``j``).

    * ``sigma_w2=None``: the literal formula above (Eq. 7 / Alg. 1).  With
      ``W ~ N(0, sigma_w2 / v_l)`` the rescaled rows have ``sum_j (rho W)^2 = 1``,
      i.e. the network is re-initialized with ``sigma_w2 = 1`` (and, for a CNN,
      ``sum over (j, beta) = 2k+1``).
    * ``sigma_w2`` given: ``rho_i = sqrt(sigma_w2 / (K a_i))`` (``K`` the number
      of kernel positions, 1 for FFNN), which restores the unpruned
      ``E[sum_{j,beta} W^2] = sigma_w2`` per neuron -- the variance the proof of
      Prop. 1 keeps ("the new variance after re-scaling is sigma_w2").

    ``per='neuron'`` is Alg. 1 (empirical row sums); ``per='layer'`` replaces
    ``a_i`` by its mean over the neurons of the layer (the expectation
    ``E[N_{l-1} W_i1^2 delta_i1]`` of Eq. 7 estimated from the layer).  Rows
    with nothing kept get ``rho = 1``.  Returns ``rho`` broadcastable against
    ``weight`` (the fan-in axis kept with length 1).
    """
    w = np.asarray(weight, dtype=float)
    m = np.asarray(mask, dtype=float)
    w, m = np.broadcast_arrays(w, m)
    if per not in ("neuron", "layer"):
        raise ValueError("per must be 'neuron' or 'layer'")
    return _rescale(w, m, kernel_ndim=None, sigma_w2=sigma_w2, per=per)


def _rescale(w, m, kernel_ndim, sigma_w2, per):
    # FFNN: (..., out, in); CNN: caller passes kernel_ndim via conv_rescaling_factors
    kd = 0 if kernel_ndim is None else int(kernel_ndim)
    fan_axis = w.ndim - 1 - kd
    a = np.sum(w**2 * m, axis=fan_axis, keepdims=True)
    K = float(np.prod(w.shape[w.ndim - kd :])) if kd else 1.0
    if per == "layer":
        out_axis = fan_axis - 1
        axes = (out_axis,) + tuple(range(w.ndim - kd, w.ndim))
        a = np.broadcast_to(np.mean(a, axis=axes, keepdims=True), a.shape)
    target = 1.0 if sigma_w2 is None else np.asarray(sigma_w2, dtype=float) / K
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where(a > 0, np.sqrt(target / a), 1.0)
    return rho


def conv_rescaling_factors(weight, mask, *, kernel_ndim=2, sigma_w2=None, per="neuron"):
    """CNN version of :func:`rescaling_factors` (003, Eq. 7 CNN case).

    ``weight, mask`` of shape ``(..., out, in, *kernel)`` with ``kernel_ndim``
    trailing kernel axes; ``a_{i,beta} = sum_j W_{i,j,beta}^2 delta_{i,j,beta}``
    (sum over input channels at each kernel position), ``rho_{i,beta} =
    a^{-1/2}`` (literal) or ``sqrt(sigma_w2 / (K a))`` with ``K`` kernel
    positions (variance-preserving).  Returns ``rho`` with the input-channel
    axis of length 1.
    """
    w, m = np.broadcast_arrays(np.asarray(weight, dtype=float), np.asarray(mask, dtype=float))
    return _rescale(w, m, kernel_ndim=kernel_ndim, sigma_w2=sigma_w2, per=per)


def expected_rescaling_factor(kept_fraction, criterion="magnitude"):
    """``rho = (E[N W^2 delta] / sigma_w2)^{-1/2}`` of Eq. (7) from a kept fraction ``p``.

    The expectation of Prop. 1 for a layer whose weights are kept with
    probability ``p`` (003, Eq. 7 with standardized weights, which is how the
    proof of Prop. 1 uses it): ``criterion='random'`` (mask independent of W):
    ``E[Z^2 delta] = p``; ``'magnitude'`` (keep ``|Z| >= t``, ``t = Q_{1-p}``):
    ``E[Z^2 1{|Z|>=t}] = p + 2 t phi(t)``.  Multiply by ``sqrt(sigma_w2)``-free
    weights as in :func:`rescaling_factors` with ``sigma_w2`` given.  Vectorized.
    """
    p = np.asarray(kept_fraction, dtype=float)
    if criterion == "random":
        e = p
    elif criterion == "magnitude":
        t = _log_qc(np.log(np.clip(p, 1e-300, 1.0)))
        e = p + 2.0 * t * np.exp(-0.5 * t**2) / np.sqrt(2.0 * np.pi)
    else:
        raise ValueError("criterion must be 'random' or 'magnitude'")
    with np.errstate(divide="ignore"):
        return _out(1.0 / np.sqrt(e))


# ----------------------------------------------------------------- Thm. 2 / Prop. 2


def criterion_second_moment(
    depth, sigma_w2, *, stable=False, width=1.0, act="relu", sigma_b2=0.0, q0=1.0, qtilde_out=1.0
):
    """Per-block ``m^l = E[|W^l_ij dL/dW^l_ij|^2]`` in a fully connected ResNet (003, Thm. 2, Prop. 2).

    Network (Eqs. 8-9, App. D): ``y^0`` with variance ``q0``; blocks
    ``l = 1..B`` (``B = depth``): ``y^l = y^{l-1} + a (W^l phi(y^{l-1}) + b^l)``,
    ``W ~ N(0, sigma_w2 / N)``, ``b ~ N(0, sigma_b2)``, ``a = 1`` (ResNet) or
    ``1/sqrt(B)`` (Stable ResNet).  Mean-field recursions of the proofs for one
    input (``|D| = 1``, so ``c = 1`` and ``f(c) = f'(c) = 1``) under gradient
    independence (Approximation 2)::

        q^l       = q^{l-1} + a^2 (sigma_w2 E[phi(sqrt(q^{l-1}) Z)^2] + sigma_b2)
        qt^{l-1}  = qt^l (1 + a^2 sigma_w2 E[phi'(sqrt(q^{l-1}) Z)^2]),   qt^B = qtilde_out
        m^l       = (sigma_w2 / N) a^2 E[phi(sqrt(q^{l-1}) Z)^2] qt^l

    (``E[W^2] E[(dL/dW)^2]`` with ``dL/dW_ij = a g_i^l phi(y_j^{l-1})``).  For
    relu and ``sigma_b2 = 0`` this is ``m^l = (sigma_w2/N)(a^2/2) q0
    qtilde_out (1 + a^2 sigma_w2/2)^{B-1}`` for every ``l``: ``Theta((1 +
    sigma_w2/2)^B)`` for the ResNet (Thm. 2) and ``~ e^{sigma_w2/2} sigma_w2
    q0 / (2 N B)`` i.e. ``Theta(1/B)`` for the Stable ResNet (Prop. 2).

    ``depth`` and ``sigma_w2, sigma_b2, width, q0, qtilde_out`` broadcast to a
    shape ``S``; returns an array of shape ``S + (max(depth),)`` with ``m^l``
    in ``[..., l-1]`` and NaN for ``l > depth``.
    """
    B, sw, sb, N, q0_, qt_ = np.broadcast_arrays(
        *(np.asarray(v, dtype=float) for v in (depth, sigma_w2, sigma_b2, width, q0, qtilde_out))
    )
    if np.any(B < 1) or np.any(B != np.round(B)):
        raise ValueError("depth must be a positive integer")
    a2 = 1.0 / B if stable else np.ones_like(B)
    Bmax = int(B.max())
    q = q0_.copy()
    e_phi2 = np.empty((Bmax,) + B.shape)
    growth = np.empty((Bmax,) + B.shape)
    for l in range(Bmax):  # e_phi2[l] is at y^{l} = input of block l+1
        ep = _act.expect_phi2(act, q)
        ed = _act.expect_dphi2(act, q)
        e_phi2[l] = ep
        growth[l] = 1.0 + a2 * sw * ed
        q = q + a2 * (sw * ep + sb)
    idx = np.arange(1, Bmax + 1).reshape((Bmax,) + (1,) * B.ndim)
    active = idx <= B  # block l is present
    g = np.where(active, growth, 1.0)
    # qt^l = qt_out * prod_{k=l}^{B-1} growth[k]  (growth[k] uses y^k, block k+1's input)
    logg = np.log(g)
    suffix = np.cumsum(logg[::-1], axis=0)[::-1]  # suffix[k] = sum_{j>=k} logg[j]
    # qt^l needs sum over j = l..B-1 (0-based growth index j = l..B-1) -> suffix[l] restricted
    suffix_next = np.concatenate([suffix[1:], np.zeros((1,) + B.shape)], axis=0)
    qt = qt_ * np.exp(suffix_next)  # qt[l-1] = qt^l for block l (uses growth indices l..B-1)
    m = sw / N * a2 * e_phi2 * qt
    m = np.where(active, m, np.nan)
    return np.moveaxis(m, 0, -1)


# ----------------------------------------------------------------- CLI


def _tolist(x):
    return np.asarray(x, dtype=float).tolist()


def _cli_sbp_bound(depth, width, sigma_w2, sigma_b2, act="tanh", log_base=np.e):
    d = np.asarray(depth, dtype=float)[:, None, None]
    sw = np.asarray(sigma_w2, dtype=float)[None, :, None]
    sb = np.asarray(sigma_b2, dtype=float)[None, None, :]
    b = critical_sparsity_bound(d, width, sw, sb, act, log_base=log_base)
    chi = _mf.chi1(sw, sb, 1.0, act)
    return {
        "paper": "003 Thm. 1",
        "depth": list(depth),
        "width": width,
        "sigma_w2": list(sigma_w2),
        "sigma_b2": list(sigma_b2),
        "act": act,
        "log_base": float(log_base),
        "chi": _tolist(np.broadcast_to(chi, (1,) + np.shape(b)[1:])[0]),
        "bound[depth][sigma_w2][sigma_b2]": _tolist(b),
    }


def _cli_mbp_bound(gamma, width, zeta_l0=1.0, quantile_factor="gamma"):
    b, det = mbp_critical_sparsity_bound(
        np.asarray(gamma, dtype=float),
        width,
        zeta_l0,
        quantile_factor=quantile_factor,
        return_details=True,
    )
    return {
        "paper": "003 Prop. 4 / Table 7",
        "gamma": list(gamma),
        "width": width,
        "zeta_l0": zeta_l0,
        "quantile_factor": quantile_factor,
        "bound": _tolist(b),
        "eps": _tolist(det["eps"]),
        "x_eps": _tolist(det["x_eps"]),
    }


def _cli_rescaling(kept_fraction, criterion="magnitude"):
    return {
        "paper": "003 Prop. 1 Eq. 7",
        "kept_fraction": list(kept_fraction),
        "criterion": criterion,
        "rho": _tolist(
            expected_rescaling_factor(np.asarray(kept_fraction, dtype=float), criterion)
        ),
    }


def _cli_criterion(depth, sigma_w2=2.0, width=1.0, act="relu"):
    out = {
        "paper": "003 Thm. 2 / Prop. 2",
        "depth": list(depth),
        "sigma_w2": sigma_w2,
        "width": width,
        "act": act,
    }
    for name, st in (("resnet", False), ("stable_resnet", True)):
        rows = []
        for d in depth:
            m = criterion_second_moment(int(d), sigma_w2, stable=st, width=width, act=act)
            rows.append(
                {
                    "depth": int(d),
                    "mean": float(np.mean(m)),
                    "max_over_min": float(np.max(m) / np.min(m)),
                }
            )
        out[name] = rows
    return out


CLI_COMMANDS = [
    {
        "name": "pruning-sbp-bound",
        "help": "Thm. 1 of 003: bound on E[s_cr] for sensitivity pruning off the EOC",
        "params": {
            "depth": {"type": int, "default": [10, 50, 100], "help": "depth L", "list": True},
            "width": {"type": float, "default": 100.0, "help": "width N", "list": False},
            "sigma_w2": {
                "type": float,
                "default": [0.5, 1.0],
                "help": "weight variance",
                "list": True,
            },
            "sigma_b2": {"type": float, "default": [0.05], "help": "bias variance", "list": True},
            "act": {"type": str, "default": "tanh", "help": "activation", "list": False},
            "log_base": {
                "type": float,
                "default": float(np.e),
                "help": "base of the outer log (e: theorem; 10: paper's 27%)",
                "list": False,
            },
        },
        "fn": _cli_sbp_bound,
    },
    {
        "name": "pruning-mbp-bound",
        "help": "Prop. 4 of 003 (Table 7): large-depth bound on E[s_cr] for magnitude pruning",
        "params": {
            "gamma": {
                "type": float,
                "default": [2.0, 5.0, 10.0],
                "help": "alpha ratio gamma > 1",
                "list": True,
            },
            "width": {"type": float, "default": 100.0, "help": "width N", "list": False},
            "zeta_l0": {"type": float, "default": 1.0, "help": "M_l0 / N^2", "list": False},
            "quantile_factor": {
                "type": str,
                "default": "gamma",
                "help": "'gamma' (printed) or 'sqrt_gamma'",
                "list": False,
            },
        },
        "fn": _cli_mbp_bound,
    },
    {
        "name": "pruning-rescaling",
        "help": "Prop. 1 Eq. 7 of 003: expected rescaling factor for a kept fraction",
        "params": {
            "kept_fraction": {
                "type": float,
                "default": [0.5, 0.2, 0.1],
                "help": "fraction of weights kept",
                "list": True,
            },
            "criterion": {
                "type": str,
                "default": "magnitude",
                "help": "'magnitude' or 'random'",
                "list": False,
            },
        },
        "fn": _cli_rescaling,
    },
    {
        "name": "pruning-criterion-moment",
        "help": "Thm. 2 / Prop. 2 of 003: second moment of |W dL/dW| in ResNet vs Stable ResNet",
        "params": {
            "depth": {
                "type": int,
                "default": [4, 8, 16, 32],
                "help": "number of blocks",
                "list": True,
            },
            "sigma_w2": {"type": float, "default": 2.0, "help": "weight variance", "list": False},
            "width": {
                "type": float,
                "default": 1.0,
                "help": "width N (m scales as 1/N)",
                "list": False,
            },
            "act": {"type": str, "default": "relu", "help": "activation", "list": False},
        },
        "fn": _cli_criterion,
    },
]
