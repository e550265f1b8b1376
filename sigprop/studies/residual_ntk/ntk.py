"""Empirical neural tangent kernel of the 001 residual nets at initialization (torch.func).

001 (Littwin & Wolf 2020, "Residual Tangent Kernels", arXiv:2001.10460)
Eq. (1): ``G(x, x') = <df(x)/dW, df(x')/dW>``, where ``W`` are the HIDDEN weights only:
``W^s`` and ``W^f`` "do not participate in the optimization" (§4.3, text before Thm. 1).
With a family's stacked parameters ``[W^s, W^{1}, ..., W^{last}, W^f]`` (see
:mod:`sigprop.nets.residual`) the hidden weights are ``params[1:-1]``; ``W^s, W^f`` enter
as constants.  ``f`` is the family's own batched forward (``apply``), so the kernel is that
of exactly the network the workflow initializes.

Two torch.func implementations of ``G[m] = J_m(x1) J_m(x2)^T`` (``[M, B1, B2]`` for the
``M`` models of a shard, each with its own weights):

* :func:`ntk_vp` (NTK-vector products): ``vjp`` of the batched forward at ``x1`` with a
  one-hot cotangent gives every model's ``J_m(x1)_i`` at once (a model's weights only
  reach its own output, so the gradient of the stacked outputs is the stack of the
  per-model gradients); a ``jvp`` of the forward at ``x2`` along that gradient gives the
  row ``J_m(x2) J_m(x1)_i^T``.  Rows are ``vmap``-ed over the one-hot basis.  Nothing of
  size ``B x P`` (``P`` hidden weights) is ever stored.
* :func:`ntk_jacobian` (Jacobian contraction): per model, ``vmap(jacrev(f))`` over the
  inputs materializes ``J_m(x1)``, ``J_m(x2)`` (``[B, P]``) and contracts them.

(``functional_call`` is not needed: a family's ``apply`` is already a function of the
parameter list, so ``f(hidden, x)`` closes over ``W^s, W^f`` and is transformed directly.)

Timing (this project's CPU machine, 1 torch thread, 2 shared cores
under a load of ~4, float64, Fig. 2 probes ``B1 = 1``, ``B2 = 20`` angles, best of 3, per
model; ``python -m sigprop.studies.residual_ntk.ntk`` re-measures):

====================================  ===========  ================
net                                   ``ntk_vp``   ``ntk_jacobian``
====================================  ===========  ================
ResNet m=2, L=3, n=50 (M=40)            0.38 ms        4.0 ms
ResNet m=2, L=3, n=500 (M=10)           13.5 ms        387 ms
ResNet m=2, L=10, n=500 (M=4)           55 ms          1393 ms
DenseNet L=3, n=500 (M=10)              13.4 ms        319 ms
DenseNet L=10, n=500 (M=4)              181 ms         5403 ms
====================================  ===========  ================

so :func:`ntk_vp` (the default of :func:`empirical_ntk`) is 10-30x faster for these shapes
(one backward and one forward-mode pass over the batch instead of ``B1 + B2`` backward
passes and a ``[B, P]`` Jacobian in memory); :func:`ntk_jacobian` is kept as the cross-check.
Both equal an explicitly materialized Jacobian to 1e-10 (``tests/test_residual_ntk.py``).

Inputs.  Fig. 2 uses ``x = [1, 0]``, ``x' = [cos t, sin t]`` (``d = 2``) while the workflow's
``W^s`` has the input dimension ``D`` of the data set (``gaussian``: 256).  :func:`embed`
pads a ``d``-dim input with zeros and scales it by ``sqrt(D / d_eff)``, so that
``y^0 = W^s x~ / sqrt(D) = W^s[:, :d] x / sqrt(d_eff)``: the network is exactly a
``d``-input net whose ``W^s`` is the first ``d`` columns (i.i.d. N(0, 1) like any other), and
Eq. (11) gives ``Sigma^0(x, x') = x . x' / d_eff``.  ``d_eff = 2`` reproduces Fig. 2's inputs
literally; ``d_eff = 1`` gives ``Sigma^0(x, x) = 1``, the normalization behind Eqs. (25), (29).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch.func import jacrev, jvp, vjp, vmap

from ...nets import families

__all__ = [
    "METHODS",
    "embed",
    "empirical_ntk",
    "fig2_probe_inputs",
    "hidden_forward",
    "ntk_jacobian",
    "ntk_vp",
]


def embed(
    x: np.ndarray, dim: int, d_eff: float, dtype=torch.float64, device: torch.device | str = "cpu"
) -> torch.Tensor:
    """``[B, d]`` inputs as ``[B, dim]``: zero-padded, times ``sqrt(dim / d_eff)``, on ``device``.

    With ``y^0 = W^s x~ / sqrt(dim)`` this is the ``d``-input net with ``Sigma^0 = x.x'/d_eff``.
    """
    x = np.atleast_2d(np.asarray(x, dtype=float))
    if x.shape[1] > dim:
        raise ValueError(f"cannot embed {x.shape[1]}-dim inputs in {dim} dimensions")
    out = np.zeros((x.shape[0], dim))
    out[:, : x.shape[1]] = x * math.sqrt(dim / float(d_eff))
    return torch.as_tensor(out, dtype=dtype, device=device)


def fig2_probe_inputs(
    theta: np.ndarray,
    dim: int,
    d_eff: float = 2.0,
    dtype=torch.float64,
    device: torch.device | str = "cpu",
):
    """001 Fig. 2 inputs embedded in ``dim``: ``x = [1, 0]`` (``[1, dim]``) and
    ``x'(theta) = [cos theta, sin theta]`` (``[len(theta), dim]``), on ``device``."""
    th = np.atleast_1d(np.asarray(theta, dtype=float))
    x1 = np.array([[1.0, 0.0]])
    x2 = np.stack([np.cos(th), np.sin(th)], -1)
    return embed(x1, dim, d_eff, dtype, device), embed(x2, dim, d_eff, dtype, device)


def hidden_forward(family, runs, params):
    """``f(hidden, x) -> [M, B]``: the family's batched forward with ``W^s = params[0]`` and
    ``W^f = params[-1]`` held fixed and the hidden weights as the argument."""
    first, last = params[0].detach(), params[-1].detach()

    def f(hidden, x):
        out, _ = family.apply(runs, [first, *hidden, last], [], x, False, None, 0)
        if out.shape[-1] != 1:
            raise ValueError("the NTK of 001 is for a scalar output (n_out = 1)")
        return out[..., 0]

    return f


def _stack(x: torch.Tensor, m: int) -> torch.Tensor:
    """``[B, d]`` (same inputs for every model) or ``[M, B, d]`` -> ``[M, B, d]``."""
    return x.expand(m, *x.shape) if x.dim() == 2 else x


def ntk_vp(family, runs, params, x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
    """``G[m, i, j] = J_m(x1_i) . J_m(x2_j)`` over the hidden weights, ``[M, B1, B2]``, by
    NTK-vector products (vjp at ``x1``, jvp at ``x2``), batched over the shard's models."""
    hidden = [p.detach() for p in params[1:-1]]
    m = hidden[0].shape[0]
    x1, x2 = _stack(x1, m).to(hidden[0].dtype), _stack(x2, m).to(hidden[0].dtype)
    f = hidden_forward(family, runs, params)
    _, pullback = vjp(lambda h: f(h, x1), hidden)

    def row(ct):
        (g,) = pullback(ct)  # J_m(x1_i), stacked over models
        _, out = jvp(lambda h: f(h, x2), (hidden,), (g,))
        return out  # [M, B2]

    b1 = x1.shape[1]
    basis = torch.eye(b1, dtype=x1.dtype, device=x1.device)[:, None, :].expand(b1, m, b1)
    return vmap(row)(basis.contiguous()).permute(1, 0, 2)


def ntk_jacobian(family, runs, params, x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
    """The same kernel by Jacobian contraction: per model, ``vmap(jacrev(f))`` over the
    inputs gives ``J(x) [B, P]`` (P hidden weights), and ``G = J(x1) J(x2)^T``."""
    m = params[0].shape[0]
    x1, x2 = _stack(x1, m).to(params[0].dtype), _stack(x2, m).to(params[0].dtype)
    out = []
    for k in range(m):
        mine = [p[k : k + 1].detach() for p in params]
        f = hidden_forward(family, runs[k : k + 1], mine)

        def scalar(hidden, x, f=f):
            return f([h[None] for h in hidden], x[None, None])[0, 0]

        hidden = [p[0] for p in mine[1:-1]]
        jac = vmap(jacrev(scalar), in_dims=(None, 0))
        j1 = torch.cat([j.reshape(x1.shape[1], -1) for j in jac(hidden, x1[k])], 1)
        j2 = torch.cat([j.reshape(x2.shape[1], -1) for j in jac(hidden, x2[k])], 1)
        out.append(j1 @ j2.T)
    return torch.stack(out)


METHODS = {"vp": ntk_vp, "jacobian": ntk_jacobian}


def empirical_ntk(runs, params, x1, x2, method: str = "vp") -> np.ndarray:
    """``[M, B1, B2]`` empirical NTK (hidden weights, 001 Eq. 1) of a shard's models."""
    try:
        fn = METHODS[method]
    except KeyError:
        raise ValueError(f"unknown NTK method '{method}'; known: {sorted(METHODS)}") from None
    family = families.get(runs[0].arch)
    with torch.no_grad():
        return fn(family, runs, params, x1, x2).detach().cpu().numpy()


# ----------------------------------------------------------------- timing


def _timing(
    cases=(
        ("resnet_fc", 3, 50, 40),
        ("resnet_fc", 3, 500, 10),
        ("resnet_fc", 10, 500, 4),
        ("densenet_fc", 3, 500, 10),
        ("densenet_fc", 10, 500, 4),
    ),
    repeat: int = 3,
):
    """Seconds per model of :func:`ntk_vp` and :func:`ntk_jacobian` on Fig. 2 probes."""
    import time

    from ...runs import RunSpec, Shard
    from ...train.engine import initial_state

    rows = []
    for arch, depth, width, m in cases:
        runs = tuple(
            RunSpec(
                arch=arch,
                dataset="gaussian",
                width=width,
                depth=depth,
                branch_depth=2,
                alpha=0.3,
                activation="relu",
                sigma_w2=2.0,
                sigma_b2=0.0,
                precision="float64",
                seed=s,
            )
            for s in range(m)
        )
        params, _ = initial_state(Shard("t", runs), (256,), 1, torch.device("cpu"), torch.float64)
        x1, x2 = fig2_probe_inputs(np.linspace(0, np.pi, 20), 256)
        row = {"arch": arch, "depth": depth, "width": width, "models": m}
        for name in METHODS:
            best = math.inf
            for _ in range(repeat):
                t0 = time.perf_counter()
                empirical_ntk(runs, params, x1, x2, name)
                best = min(best, time.perf_counter() - t0)
            row[name] = best / m
        rows.append(row)
    return rows


if __name__ == "__main__":  # pragma: no cover
    torch.set_num_threads(1)
    for r in _timing():
        print(
            f"{r['arch']:12s} L={r['depth']:3d} n={r['width']:4d} M={r['models']:3d}  "
            f"vp {1e3 * r['vp']:8.2f} ms/model   jacobian {1e3 * r['jacobian']:8.2f} ms/model"
        )
