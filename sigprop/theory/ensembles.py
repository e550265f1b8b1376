"""Dropout ensemble averages: NWGM, its approximation of E, and exact linear-network moments.

Paper: 002 (Baldi & Sadowski 2014, doi:10.1016/j.artint.2014.02.004, "The dropout
learning algorithm", 2014).  Notation: ``O = sigma(S)`` a logistic output, values
``O_i`` with probabilities ``P_i``; ``E = sum P_i O_i``, ``V = Var(O)``,
``G = prod O_i^P_i``, ``G' = prod (1 - O_i)^P_i``, ``NWGM = G / (G + G')``.

* Eqs. 35-39   NWGM of a set of outputs; for logistic ``O``: ``NWGM = sigma(E[S])``
                                            -> :func:`weighted_means`, :func:`nwgm`,
                                               :func:`nwgm_logistic_of_mean`
* Eq. 83/89    first order: ``G ~ NWGM ~ E`` -> :func:`e_minus_nwgm_first_order`
* Eqs. 84-85   second order around 0.5: ``NWGM ~ (E - V)/(1 - 2V)``,
               ``E - NWGM ~ V(1 - 2E)/(1 - 2V)``  -> :func:`e_minus_nwgm_second_order`
* Eq. 202      second order around E (App. B): ``NWGM ~ (E - V/2E)/(1 - V/(2E(1-E)))``
                                            -> :func:`e_minus_nwgm_second_order_about_mean`
* Eq. 87, Figs. 8.1-8.2, 9.3  approximation / Bound 1 / Bound 2 / Fig. 8.2 bound
                                            -> :func:`eq87_bounds`, :func:`eq87_argmax`
* Eqs. 52-54 / 98  deterministic "W" network (weights scaled by keep probabilities)
                                            -> :func:`deterministic_forward`
* Eqs. 15-17, 24-25  exact mean and covariance of a deep linear dropout net
                                            -> :func:`linear_dropout_expectation`

Network convention (dropout on units, Eq. 49): ``weights[h]`` has shape
``(n_{h+1}, n_h)``; layer ``h+1`` receives ``delta^h * O^h`` with
``delta^h_j ~ Bernoulli(keep_probs[h])`` independent of everything else
(``O^0 = x``, the input).  Biases are never dropped (Eq. 9 with ``p_b = 1``).
The output layer's own units are not dropped.  ``keep_probs`` is a list with one
entry per weight matrix (scalar, per-unit vector or any array broadcastable to
``(..., n_h)``), or one scalar used for every layer.  ``x`` may carry leading
batch/grid axes: ``x`` of shape ``(..., n_0)`` gives outputs ``(..., n_h)``, so a
grid of keep probabilities of shape ``(G, 1, 1)`` with a batch ``(B, n_0)`` gives
``(G, B, n_h)``.

Findings on the paper (measured in ``tests/test_theory_ensembles.py``):

* Eq. 85 keeps the term ``V(1-2E)``, which is itself third order in
  ``eps = O - 0.5`` (``1 - 2E = -2 E[eps]``), while dropping the other third-order
  terms of ``G`` and ``G'``.  The consistent leading term (delta method,
  ``logit`` expanded around ``E``) is ``E - NWGM ~ V(1-2E)/(2E(1-E))``, i.e. Eq. 202;
  Eq. 85 is smaller by the factor ``2E(1-E) <= 1/2``.  For ``O = sigma(S)``,
  ``S ~ N(mu, s^2)`` the exact small-``s`` limit is ``sigma''(mu) s^2 / 2``, which
  Eq. 202 reproduces and Eq. 85 underestimates by ``2 sigma(mu)(1 - sigma(mu))``.
* The "bounds" of Eq. 87 bound the Eq. 85 approximation, not ``|E - NWGM|``
  itself (which can approach 1/2 at ``E = 1/2``); the paper writes them with
  ``\\lesssim`` and we implement them as written.
* Eq. 199 prints ``G = E[1 - V/E^2 + R_3]``; the expansion gives
  ``1 - V/(2E^2)``, consistent with the ``E - V/(2E)`` of the same equation,
  which is what Eq. 202 (implemented here) uses.

Papers cited by prefix: 002 = Baldi, Sadowski (2014), doi:10.1016/j.artint.2014.02.004.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "logistic",
    "weighted_means",
    "nwgm",
    "nwgm_logistic_of_mean",
    "e_minus_nwgm_first_order",
    "e_minus_nwgm_second_order",
    "second_order_means",
    "e_minus_nwgm_second_order_about_mean",
    "eq87_bounds",
    "eq87_argmax",
    "deterministic_forward",
    "linear_dropout_expectation",
    "CLI_COMMANDS",
]


def logistic(s, c=1.0, lam=1.0):
    """Eq. 27: ``sigma(S) = 1 / (1 + c exp(-lam S))`` (broadcasting, overflow-safe)."""
    s, c, lam = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (s, c, lam)))
    z = lam * s - np.log(c)  # sigma = 1/(1 + exp(-z))
    out = np.empty(z.shape)
    pos = z >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-z[pos]))
    ez = np.exp(z[~pos])
    out[~pos] = ez / (1.0 + ez)
    return out


def _norm_probs(values, probs, axis):
    v = np.asarray(values, dtype=float)
    if probs is None:
        p = np.full(v.shape[axis], 1.0 / v.shape[axis])
        shape = [1] * v.ndim
        shape[axis] = -1
        p = p.reshape(shape)
    else:
        p = np.asarray(probs, dtype=float)
        p = p / p.sum(axis=axis, keepdims=True)
    return v, p


def weighted_means(values, probs=None, axis=-1):
    """Sec. 8 means of numbers ``0 < O_i < 1`` with weights ``P_i`` along ``axis``.

    Returns a dict of arrays (``axis`` reduced): ``E`` (Sec. 8), ``V = Var(O)``,
    ``G`` (Eq. 35), ``G_c`` (``G'``, Eq. 36) and ``NWGM = G/(G+G')`` (Eq. 37),
    the latter computed as ``sigma(sum P_i logit(O_i))`` (the identity of Eq. 39,
    exact for any numbers in (0, 1)), which avoids underflow of the products.
    ``probs`` (broadcastable to ``values``; None = uniform) is normalised.
    """
    v, p = _norm_probs(values, probs, axis)
    E = np.sum(p * v, axis=axis)
    V = np.sum(p * v * v, axis=axis) - E * E
    V = np.maximum(V, 0.0)
    with np.errstate(divide="ignore"):
        lg = np.sum(p * np.log(v), axis=axis)
        lgc = np.sum(p * np.log1p(-v), axis=axis)
    G, Gc = np.exp(lg), np.exp(lgc)
    with np.errstate(invalid="ignore"):
        nw = logistic(lg - lgc)
    return {"E": E, "V": V, "G": G, "G_c": Gc, "NWGM": nw}


def nwgm(values, probs=None, axis=-1):
    """Eqs. 37-38: ``NWGM = prod O^P / (prod O^P + prod (1-O)^P)`` along ``axis``."""
    return weighted_means(values, probs, axis)["NWGM"]


def nwgm_logistic_of_mean(S_mean, c=1.0, lam=1.0):
    """Eq. 39 / Eq. 53: NWGM of logistic outputs ``sigma(S)`` equals ``sigma(E[S])``."""
    return logistic(S_mean, c, lam)


def e_minus_nwgm_first_order(E, V=0.0):
    """Eq. 83 (proof Eq. 89): to first order ``G ~ E`` and ``NWGM ~ E``, so the
    first-order approximation of ``E - NWGM`` (and of ``E - G``) is 0.

    Returned as zeros of the broadcast shape of ``E`` and ``V``; the content of the
    statement is that the true difference is ``o(eps)`` (tested by quadrature).
    """
    E, V = np.broadcast_arrays(np.asarray(E, dtype=float), np.asarray(V, dtype=float))
    return np.zeros(E.shape)


def second_order_means(E, V):
    """Eq. 84 (proof Eqs. 93-95), expansion around 0.5: returns dict ``G ~ E - V``,
    ``G_c ~ 1 - E - V``, ``NWGM ~ (E - V)/(1 - 2V)``, ``NWGM_c ~ (1 - E - V)/(1 - 2V)``."""
    E, V = (np.asarray(a, dtype=float) for a in (E, V))
    return {
        "G": E - V,
        "G_c": 1.0 - E - V,
        "NWGM": (E - V) / (1.0 - 2.0 * V),
        "NWGM_c": (1.0 - E - V) / (1.0 - 2.0 * V),
    }


def e_minus_nwgm_second_order(E, V):
    """Eq. 85 (= Eq. 96): ``E - NWGM ~ V (1 - 2E) / (1 - 2V)`` (signed; Eq. 87 uses ``|.|``)."""
    E, V = (np.asarray(a, dtype=float) for a in (E, V))
    return V * (1.0 - 2.0 * E) / (1.0 - 2.0 * V)


def e_minus_nwgm_second_order_about_mean(E, V):
    """Appendix B, Eq. 202 (expansion around E): ``NWGM ~ (E - V/(2E)) / (1 - V/(2E(1-E)))``;
    returns ``E`` minus that, ``= V(1-2E) / (2E(1-E) - V)``."""
    E, V = (np.asarray(a, dtype=float) for a in (E, V))
    nw = (E - V / (2.0 * E)) / (1.0 - V / (2.0 * E * (1.0 - E)))
    return E - nw


def eq87_bounds(E, V=None):
    """Eq. 87 chain (Figs. 8.1, 8.2, 9.3), as functions of ``E`` (and ``V``):

    ``|E - NWGM| ~ V|1-2E|/(1-2V)``            -> ``"second_order"`` (needs V)
    ``<= E(1-E)|1-2E|/(1-2V)``                 -> ``"bound1"`` (Fig. 9.3 Bound 1, needs V)
    ``<= E(1-E)|1-2E|/(1-2E(1-E))``            -> ``"bound2"`` (Fig. 8.1, Fig. 9.3 Bound 2)
    ``<= 2E(1-E)|1-2E|``                       -> ``"bound3"`` (Fig. 8.2)

    Arrays broadcast; without ``V`` the V-dependent entries are omitted.
    """
    E = np.asarray(E, dtype=float)
    x = E * (1.0 - E)
    a = np.abs(1.0 - 2.0 * E)
    out = {"bound2": x * a / (1.0 - 2.0 * x), "bound3": 2.0 * x * a}
    if V is not None:
        V = np.asarray(V, dtype=float)
        out = {"second_order": V * a / (1.0 - 2.0 * V), "bound1": x * a / (1.0 - 2.0 * V), **out}
    return out


def eq87_argmax():
    """Text after Eq. 87: maximisers on [0, 0.5] of Bound 2 (``0.5 - sqrt(sqrt5 - 2)/2``,
    Fig. 8.1) and of ``2E(1-E)|1-2E|`` (``0.5 - sqrt(3)/6``, Fig. 8.2)."""
    return {"bound2": 0.5 - np.sqrt(np.sqrt(5.0) - 2.0) / 2.0, "bound3": 0.5 - np.sqrt(3.0) / 6.0}


# ----------------------------------------------------------------- networks


def _layer_keep(keep_probs, n_layers):
    if isinstance(keep_probs, (list, tuple)):
        if len(keep_probs) != n_layers:
            raise ValueError(f"keep_probs: {len(keep_probs)} entries for {n_layers} weight layers")
        return [np.asarray(p, dtype=float) for p in keep_probs]
    return [np.asarray(keep_probs, dtype=float)] * n_layers


def _biases(biases, weights):
    if biases is None:
        return [np.zeros(w.shape[0]) for w in weights]
    return [
        np.zeros(w.shape[0]) if b is None else np.asarray(b, dtype=float)
        for b, w in zip(biases, weights)
    ]


def deterministic_forward(weights, biases, keep_probs, x, c=1.0, lam=1.0):
    """Eqs. 52-54 / Eq. 98: the deterministic ensemble ("W") network of a logistic net.

    ``U^{h+1} = W^{h+1} (p^h * W^h) + b^{h+1}``, ``W^{h+1} = sigma(U^{h+1})`` with
    ``W^0 = x``: the recursion of Eqs. 52-54 with every ``E(O)`` replaced by its
    propagated NWGM approximation.  In the first layer ``U^1 = E(S^1)`` and
    ``W^1 = NWGM(O^1)`` exactly; deeper ``W^l`` approximates both ``NWGM(O^l)`` and
    ``E(O^l)`` (Eqs. 99-102).  Returns ``{"U": [U^1..U^L], "W": [W^1..W^L]}``.
    """
    weights = [np.asarray(w, dtype=float) for w in weights]
    ps = _layer_keep(keep_probs, len(weights))
    bs = _biases(biases, weights)
    a = np.asarray(x, dtype=float)
    Us, Ws = [], []
    for w, b, p in zip(weights, bs, ps):
        u = (p * a) @ w.T + b
        a = logistic(u, c, lam)
        Us.append(u)
        Ws.append(a)
    return {"U": Us, "W": Ws}


def linear_dropout_expectation(weights, biases, keep_probs, x):
    """Exact ensemble mean and covariance of a deep LINEAR dropout network (Secs. 2-3).

    ``S^{h+1} = W^{h+1} (delta^h * S^h) + b^{h+1}``, ``S^0 = x``.  Mean: Eq. 24
    (Eqs. 10, 15 for one layer), ``mu^{h+1} = W (p * mu^h) + b``.  Covariance: the
    recursion of Eq. 25 restricted to a layered chain, with
    ``E[delta_i delta_j] = p_i p_j`` (i != j), ``p_i`` (i = j):
    ``Cov(delta*S) = (p p^T) o C^h + diag(p (1-p) E[(S^h_i)^2])`` and
    ``C^{h+1} = W Cov(delta*S) W^T`` (for one layer this is Eqs. 16-17).
    Returns ``{"mean": [...], "cov": [...], "var": [...]}`` for layers 1..L,
    shapes ``(..., n_h)``, ``(..., n_h, n_h)``, ``(..., n_h)``.
    """
    weights = [np.asarray(w, dtype=float) for w in weights]
    ps = _layer_keep(keep_probs, len(weights))
    bs = _biases(biases, weights)
    mu = np.asarray(x, dtype=float)
    C = np.zeros(mu.shape + mu.shape[-1:])
    means, covs = [], []
    for w, b, p in zip(weights, bs, ps):
        p = np.broadcast_to(p, np.broadcast_shapes(p.shape, mu.shape))
        second = np.diagonal(C, axis1=-2, axis2=-1) + mu * mu
        cy = p[..., :, None] * p[..., None, :] * C
        i = np.arange(mu.shape[-1])
        cy[..., i, i] += p * (1.0 - p) * second
        mu = (p * mu) @ w.T + b
        C = w @ cy @ w.T  # O(n^3) per layer (matrix products, not einsum)
        means.append(mu)
        covs.append(C)
    return {
        "mean": means,
        "cov": covs,
        "var": [np.diagonal(c, axis1=-2, axis2=-1).copy() for c in covs],
    }


# ----------------------------------------------------------------- command line


def _tolist(d):
    return {
        k: (np.asarray(v).tolist() if isinstance(v, (np.ndarray, np.floating, float)) else v)
        for k, v in d.items()
    }


def _cli_nwgm(values, probs):
    v = np.asarray(values, dtype=float)
    p = None if not probs else np.asarray(probs, dtype=float)
    m = weighted_means(v, p)
    E, V = m["E"], m["V"]
    out = {k: float(val) for k, val in m.items()}
    out.update(
        {
            "E_minus_NWGM": float(E - m["NWGM"]),
            "first_order_eq83": float(e_minus_nwgm_first_order(E, V)),
            "second_order_eq85": float(e_minus_nwgm_second_order(E, V)),
            "second_order_eq202": float(e_minus_nwgm_second_order_about_mean(E, V)),
        }
    )
    return out


def _cli_bounds(E, V):
    E = np.asarray(E, dtype=float)
    b = eq87_bounds(E, None if V is None else float(V))
    return {"E": E.tolist(), "V": V, **_tolist(b), "argmax_on_0_to_half": _tolist(eq87_argmax())}


def _random_net(widths, sigma_w, sigma_b, seed):
    rng = np.random.default_rng(seed)
    ws = [
        rng.normal(0.0, sigma_w / np.sqrt(n_in), size=(n_out, n_in))
        for n_in, n_out in zip(widths[:-1], widths[1:])
    ]
    bs = [rng.normal(0.0, sigma_b, size=n_out) for n_out in widths[1:]]
    x = rng.uniform(0.0, 1.0, size=widths[0])
    return ws, bs, x


def _keeps(p_input, p_hidden, n_layers):
    return [p_input] + [p_hidden] * (n_layers - 1)


def _cli_forward(widths, sigma_w, sigma_b, p_input, p_hidden, seed):
    ws, bs, x = _random_net(widths, sigma_w, sigma_b, seed)
    r = deterministic_forward(ws, bs, _keeps(p_input, p_hidden, len(ws)), x)
    return {
        "widths": widths,
        "input": x.tolist(),
        "U": [u.tolist() for u in r["U"]],
        "W": [w.tolist() for w in r["W"]],
    }


def _cli_linear(widths, sigma_w, sigma_b, p_input, p_hidden, seed):
    ws, bs, x = _random_net(widths, sigma_w, sigma_b, seed)
    r = linear_dropout_expectation(ws, bs, _keeps(p_input, p_hidden, len(ws)), x)
    return {
        "widths": widths,
        "input": x.tolist(),
        "mean": [m.tolist() for m in r["mean"]],
        "var": [v.tolist() for v in r["var"]],
    }


_NET = {
    "widths": {"type": int, "default": [20, 30, 30, 5], "list": True, "help": "layer widths"},
    "sigma_w": {"type": float, "default": 4.0, "help": "weight std times sqrt(fan-in)"},
    "sigma_b": {"type": float, "default": 0.5, "help": "bias std"},
    "p_input": {"type": float, "default": 0.8, "help": "keep probability of the inputs"},
    "p_hidden": {"type": float, "default": 0.5, "help": "keep probability of hidden units"},
    "seed": {"type": int, "default": 0, "help": "seed of the random weights and input"},
}

CLI_COMMANDS = [
    {
        "name": "dropout-nwgm",
        "fn": _cli_nwgm,
        "help": "E, V, G, G', NWGM of numbers O_i with probabilities P_i (002 Eqs. 35-39) and the "
        "approximations of E - NWGM (Eqs. 83, 85, 202)",
        "params": {
            "values": {
                "type": float,
                "default": [0.622459, 0.731059],
                "list": True,
                "help": "numbers O_i in (0, 1)",
            },
            "probs": {
                "type": float,
                "default": None,
                "list": True,
                "optional": True,
                "help": "probabilities P_i (default uniform)",
            },
        },
    },
    {
        "name": "dropout-eq87-bounds",
        "fn": _cli_bounds,
        "help": "Eq. 87 curves of E (Figs. 8.1-8.2): Bound 2, 2E(1-E)|1-2E|, and with V the "
        "second-order approximation and Bound 1",
        "params": {
            "E": {
                "type": float,
                "default": [0.1, 0.2, 0.3, 0.4, 0.5],
                "list": True,
                "help": "expectations E",
            },
            "V": {
                "type": float,
                "default": None,
                "optional": True,
                "help": "variance V (optional)",
            },
        },
    },
    {
        "name": "dropout-deterministic",
        "fn": _cli_forward,
        "help": "deterministic ensemble (W) network of Eqs. 52-54 / 98 for a random logistic net",
        "params": dict(_NET),
    },
    {
        "name": "dropout-linear",
        "fn": _cli_linear,
        "help": "exact dropout mean and variance of a random deep linear net (Eqs. 24-25)",
        "params": dict(_NET),
    },
]
