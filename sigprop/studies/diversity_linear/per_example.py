"""Per-example gradient norms and gradient diversity over whole data sets, chunked.

Gradient diversity (004 Chen et al., Def. 1; Yin et al. 2018)::

    Delta_S(w) = sum_i ||grad f_i(w)||^2 / ||sum_i grad f_i(w)||^2

needs every example's squared gradient norm.  Materializing the n per-example
gradients costs n times the memory of the model; for affine layers it is not
needed.  With ``z_i = W a_i + b`` the gradient of example i's loss is
``dF_i/dW = delta_i a_i^T`` and ``dF_i/db = delta_i``, ``delta_i = dF_i/dz_i``, so::

    ||dF_i/dW||^2 = ||delta_i||^2 ||a_i||^2,      ||dF_i/db||^2 = ||delta_i||^2,

and the summed gradient is ``sum_i delta_i a_i^T = delta^T A``.  Per-example losses
are independent, so the ``delta_i`` of the *summed* loss is example i's own: one
forward pass that keeps the layer inputs ``a`` and one ``torch.autograd.grad`` of the
summed loss with respect to the pre-activations ``z`` give everything
(:func:`fc_grad_norms`).  Cost: one forward and one backward pass plus a few
elementwise products, memory ``O(chunk * width)`` per layer.

Models are stacked as in :mod:`sigprop.nets.fc` / :mod:`sigprop.nets.families`:
layer ``l`` is ``W [M, out, in]`` and ``b [M, 1, out]`` (or ``None`` for a net without
biases, as in 004's theory), a forward pass is one ``baddbmm`` per layer for all M
models, and one summed loss over the M models gives every model its own deltas.

Generic fallback (:func:`func_grad_norms`): ``torch.func.vmap(grad(loss))`` over the
examples of a chunk (and ``vmap`` over the M models), for any single-model loss
``loss_fn(params, x, y)``; it materializes the chunk's per-example gradients.

Losses are per-example sums, not means: ``mse`` is ``f_i = ||y_hat_i - y_i||^2 / 2``
(004 Sec. 3), ``ce`` the cross-entropy of integer labels.  Diversity is invariant to a
common scale of the losses, so this choice does not change Delta_S.

Results (:class:`GradNorms`) keep one column per parameter tensor ("group"), in the
order of the parameters, so a reparametrization ``W_l = c_l U_l`` (gradients scale
by ``c_l``) is a reweighting of the groups by ``c_l^2`` (:meth:`GradNorms.diversity`).

Papers cited by prefix: 004 = Chen, Wang, Zhao, Papailiopoulos, Koutris (2018),
arXiv:1806.03791.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ...nets import activations

LOSSES = ("mse", "ce")


@dataclass
class GradNorms:
    """Per-example squared gradient norms of M stacked models on n examples.

    ``per_example``: ``[M, n, G]``, ``||grad_g f_i||^2`` of every example i and
    parameter group g (one group per parameter tensor); ``sum_sq``: ``[M, G]``,
    ``||sum_i grad_g f_i||^2``.
    """

    per_example: torch.Tensor
    sum_sq: torch.Tensor

    @property
    def sq_norms(self) -> torch.Tensor:
        """``[M, n]``: ``||grad f_i||^2`` over all parameters."""
        return self.per_example.sum(-1)

    @property
    def sq_norm_sum(self) -> torch.Tensor:
        """``[M]``: ``sum_i ||grad f_i||^2``."""
        return self.per_example.sum((1, 2))

    @property
    def sum_norm_sq(self) -> torch.Tensor:
        """``[M]``: ``||sum_i grad f_i||^2``."""
        return self.sum_sq.sum(-1)

    def group_totals(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``([M, G], [M, G])``: per group ``sum_i ||grad_g f_i||^2`` and ``||sum_i grad_g f_i||^2``."""
        return self.per_example.sum(1), self.sum_sq

    def diversity(self, weights: torch.Tensor | None = None) -> torch.Tensor:
        """Gradient diversity ``[M]`` of 004 Def. 1.

        ``weights`` ``[G]`` or ``[M, G]`` (optional): per-group factors ``c_g^2`` giving the
        diversity in the parametrization ``theta_g = c_g u_g`` (gradients w.r.t. ``u_g``
        are ``c_g`` times those w.r.t. ``theta_g``).
        """
        num, den = self.group_totals()
        if weights is not None:
            w = torch.as_tensor(weights, dtype=num.dtype, device=num.device)
            num, den = num * w, den * w
        return num.sum(-1) / den.sum(-1)


def fc_layers(params: list[torch.Tensor], bias: bool = True) -> list[tuple]:
    """``[(W, b), ...]`` from the fc family's flat ``[W_0, b_0, W_1, b_1, ...]``;
    with ``bias=False`` the list holds weights only and every ``b`` is ``None``."""
    if bias:
        if len(params) % 2:
            raise ValueError("fc parameters come in (W, b) pairs")
        return [(params[i], params[i + 1]) for i in range(0, len(params), 2)]
    return [(w, None) for w in params]


def _per_model(t: torch.Tensor, m: int, lead: int) -> tuple[torch.Tensor, bool]:
    """``t`` with a model axis: ``[M, n, ...]`` (returns whether it was shared)."""
    if t.dim() == lead + 1 and t.shape[0] == m:
        return t, False
    if t.dim() == lead:
        return t.unsqueeze(0).expand(m, *t.shape), True
    raise ValueError(
        f"expected {lead} or {lead + 1} dims (leading model axis of size {m}), "
        f"got shape {tuple(t.shape)}"
    )


def _loss_sum(out: torch.Tensor, y: torch.Tensor, loss: str) -> torch.Tensor:
    """Sum over models and examples of the per-example losses (``out`` ``[M, c, k]``)."""
    if loss == "mse":
        return 0.5 * (out - y.reshape(out.shape)).pow(2).sum()
    if loss == "ce":
        return F.cross_entropy(
            out.reshape(-1, out.shape[-1]), y.reshape(-1).long(), reduction="sum"
        )
    raise ValueError(f"unknown loss '{loss}'; known: {list(LOSSES)}")


def _row_sq(t: torch.Tensor) -> torch.Tensor:
    """``[M, c]``: squared norm of every row of ``t [M, c, k]`` (einsum: one pass, faster on CPU
    than ``pow(2).sum(-1)``)."""
    return torch.einsum("mck,mck->mc", t, t)


def _check_layers(layers):
    if not layers:
        raise ValueError("no layers")
    m = layers[0][0].shape[0]
    for w, b in layers:
        if w.dim() != 3 or w.shape[0] != m:
            raise ValueError(f"weights must be [M, out, in] with one M, got {tuple(w.shape)}")
        if b is not None and tuple(b.shape) != (m, 1, w.shape[1]):
            raise ValueError(
                f"bias must be [M, 1, out] = {(m, 1, w.shape[1])}, got {tuple(b.shape)}"
            )
    return m


def fc_grad_norms(
    layers: list[tuple],
    x: torch.Tensor,
    y: torch.Tensor,
    activation: str = "linear",
    loss: str = "mse",
    chunk: int = 4096,
) -> GradNorms:
    """Per-example gradient norms of stacked fc nets, without per-example gradients.

    ``layers``: ``[(W [M, out, in], b [M, 1, out] or None), ...]`` (see :func:`fc_layers`),
    activation ``activation`` after every layer but the last (linear readout, as
    :func:`sigprop.nets.fc.forward`); ``x``: ``[n, d]`` shared or ``[M, n, d]``; ``y``: targets
    ``[n, k]`` / ``[M, n, k]`` (mse) or labels ``[n]`` / ``[M, n]`` (ce).  Examples are processed
    ``chunk`` at a time; the result does not depend on ``chunk``.  Groups: ``W_0, (b_0,) W_1, ...``.
    """
    phi = activations.get(activation)
    m = _check_layers(layers)
    x, _ = _per_model(x, m, 2)
    y, _ = _per_model(y, m, 1 if loss == "ce" else 2)
    n = x.shape[1]
    dtype, dev = layers[0][0].dtype, layers[0][0].device
    groups = [g for w, b in layers for g in ((w,) if b is None else (w, b))]
    per_ex = torch.zeros(m, n, len(groups), dtype=dtype, device=dev)
    sums = []  # summed gradient of each group
    for w, b in layers:
        sums.append(torch.zeros_like(w))
        if b is not None:
            sums.append(torch.zeros(m, w.shape[1], dtype=dtype, device=dev))
    ws = [w.detach() for w, _ in layers]
    bs = [None if b is None else b.detach() for _, b in layers]
    for s in range(0, n, chunk):
        xc, yc = x[:, s : s + chunk].to(dtype), y[:, s : s + chunk]
        acts, zs = [], []
        h = xc
        with torch.enable_grad():
            for i, (w, b) in enumerate(zip(ws, bs)):
                acts.append(h)
                z = (
                    torch.bmm(h, w.transpose(1, 2))
                    if b is None
                    else torch.baddbmm(b, h, w.transpose(1, 2))
                )
                if i == 0:
                    z.requires_grad_(True)
                zs.append(z)
                h = phi(z) if i < len(ws) - 1 else z
            deltas = torch.autograd.grad(_loss_sum(h, yc, loss), zs)
        col = 0
        for i, (a, d) in enumerate(zip(acts, deltas)):
            d = d.detach()
            a = a.detach()
            d2 = _row_sq(d)  # [M, c]
            per_ex[:, s : s + chunk, col] = d2 * _row_sq(a)
            sums[col] += torch.bmm(d.transpose(1, 2), a)  # sum_i delta_i a_i^T
            col += 1
            if bs[i] is not None:
                per_ex[:, s : s + chunk, col] = d2
                sums[col] += d.sum(1)
                col += 1
    sum_sq = torch.stack([g.pow(2).flatten(1).sum(-1) for g in sums], dim=-1)
    return GradNorms(per_ex, sum_sq)


def fc_loss_fn(activation: str = "linear", loss: str = "mse", bias: bool = True):
    """Single-model, single-example loss ``loss_fn(params, x, y)`` of an fc net, for
    :func:`func_grad_norms`: ``params`` = ``(W_0, b_0, W_1, ...)`` without the model axis
    (``W [out, in]``, ``b [1, out]``), or weights only with ``bias=False``."""
    phi = activations.get(activation)

    def loss_fn(params, x, y):
        step = 2 if bias else 1
        n_layers = len(params) // step
        h = x
        for i in range(n_layers):
            w = params[step * i]
            h = w @ h if not bias else w @ h + params[step * i + 1][0]
            if i < n_layers - 1:
                h = phi(h)
        if loss == "mse":
            return 0.5 * (h - y).pow(2).sum()
        if loss == "ce":
            return F.cross_entropy(h.unsqueeze(0), y.reshape(1).long(), reduction="sum")
        raise ValueError(f"unknown loss '{loss}'; known: {list(LOSSES)}")

    return loss_fn


def func_grad_norms(
    loss_fn,
    params: list[torch.Tensor],
    x: torch.Tensor,
    y: torch.Tensor,
    chunk: int = 1024,
    data_per_model: bool = False,
) -> GradNorms:
    """Generic per-example gradient norms by ``torch.func`` for any single-model loss.

    ``loss_fn(params, x_i, y_i) -> scalar``: one model's loss on one example, ``params`` a tuple
    of tensors without the model axis; ``params``: stacked ``[M, ...]`` tensors; ``x``: ``[n, ...]``
    shared or ``[M, n, ...]``; ``y`` likewise (pass ``y_per_model`` shapes with the model axis).
    Per-example gradients of a chunk are materialized (``vmap(grad)``), then reduced.
    """
    from torch.func import grad, vmap

    m = params[0].shape[0]
    shared_x = not data_per_model
    n = x.shape[0] if shared_x else x.shape[1]
    per_example_grad = vmap(grad(lambda p, xi, yi: loss_fn(p, xi, yi)), in_dims=(None, 0, 0))
    over_models = vmap(
        per_example_grad, in_dims=(0, None if shared_x else 0, None if shared_x else 0)
    )
    per_ex = torch.zeros(m, n, len(params), dtype=params[0].dtype, device=params[0].device)
    sums = [torch.zeros_like(p) for p in params]
    ps = tuple(p.detach() for p in params)
    for s in range(0, n, chunk):
        xc = x[s : s + chunk] if shared_x else x[:, s : s + chunk]
        yc = y[s : s + chunk] if shared_x else y[:, s : s + chunk]
        g = over_models(ps, xc, yc)  # each [M, c, *shape]
        for j, gj in enumerate(g):
            per_ex[:, s : s + chunk, j] = gj.pow(2).flatten(2).sum(-1)
            sums[j] += gj.sum(1)
    sum_sq = torch.stack([t.pow(2).flatten(1).sum(-1) for t in sums], dim=-1)
    return GradNorms(per_ex, sum_sq)


def naive_grad_norms(
    loss_fn, params: list[torch.Tensor], x: torch.Tensor, y: torch.Tensor
) -> GradNorms:
    """Reference: one ``torch.autograd.grad`` per model and example (slow; for tests and benchmarks).

    Same arguments as :func:`func_grad_norms` with shared data ``x [n, ...]``, ``y [n, ...]``.
    """
    m, n = params[0].shape[0], x.shape[0]
    per_ex = torch.zeros(m, n, len(params), dtype=params[0].dtype, device=params[0].device)
    sum_sq = torch.zeros(m, len(params), dtype=params[0].dtype, device=params[0].device)
    for k in range(m):
        ps = [p[k].detach().clone().requires_grad_(True) for p in params]
        total = [torch.zeros_like(p) for p in ps]
        for i in range(n):
            g = torch.autograd.grad(loss_fn(tuple(ps), x[i], y[i]), ps)
            for j, gj in enumerate(g):
                per_ex[k, i, j] = gj.pow(2).sum()
                total[j] += gj
        sum_sq[k] = torch.stack([t.pow(2).sum() for t in total])
    return GradNorms(per_ex, sum_sq)


def benchmark(
    n: int = 2048,
    d: int = 32,
    width: int = 64,
    depth: int = 4,
    models: int = 1,
    activation: str = "linear",
    chunk: int = 4096,
    naive_examples: int = 256,
    seed: int = 0,
    threads: int = 1,
    reps: int = 5,
) -> dict:
    """Seconds per data set of the three paths on an fc net (``depth`` hidden layers, 1 output,
    float64), and the speed-ups of :func:`fc_grad_norms` over the others.

    The naive loop is timed on ``naive_examples`` examples and scaled to n (it is linear in n).
    Best of ``reps`` repetitions (the naive loop: one) with ``threads`` torch threads.
    Run as ``python -m sigprop.studies.diversity_linear.per_example [n=2048 width=64 depth=4 ...]``.
    """
    torch.set_num_threads(threads)
    cpu = torch.device("cpu")  # a CPU benchmark, whatever the process's default device
    gen = torch.Generator(device=cpu).manual_seed(seed)
    dims = [d] + [width] * depth + [1]
    params = []
    for a, b in itertools.pairwise(dims):
        params += [
            torch.randn(models, b, a, generator=gen, dtype=torch.float64, device=cpu) / a**0.5,
            0.1 * torch.randn(models, 1, b, generator=gen, dtype=torch.float64, device=cpu),
        ]
    x = torch.randn(n, d, generator=gen, dtype=torch.float64, device=cpu)
    y = torch.randn(n, 1, generator=gen, dtype=torch.float64, device=cpu)
    fn = fc_loss_fn(activation, "mse", bias=True)

    def timed(f, reps=reps):
        best = float("inf")
        for _ in range(reps):
            t0 = time.perf_counter()
            out = f()
            best = min(best, time.perf_counter() - t0)
        return best, out

    t_eff, a = timed(lambda: fc_grad_norms(fc_layers(params), x, y, activation, "mse", chunk))
    t_func, b = timed(lambda: func_grad_norms(fn, params, x, y, chunk=min(chunk, 1024)))
    k = min(naive_examples, n)
    t_naive, c = timed(lambda: naive_grad_norms(fn, params, x[:k], y[:k]), reps=1)
    t_naive *= n / k
    return {
        "n": n,
        "d": d,
        "width": width,
        "depth": depth,
        "models": models,
        "parameters": sum(p[0].numel() for p in params),
        "threads": torch.get_num_threads(),
        "efficient_s": t_eff,
        "func_s": t_func,
        "naive_s_scaled": t_naive,
        "speedup_vs_naive": t_naive / t_eff,
        "speedup_vs_func": t_func / t_eff,
        "max_rel_diff_func": float(
            (a.per_example - b.per_example).abs().max() / a.per_example.abs().max()
        ),
        "max_rel_diff_naive": float(
            (a.per_example[:, :k] - c.per_example).abs().max() / c.per_example.abs().max()
        ),
    }


if __name__ == "__main__":  # pragma: no cover
    import json
    import sys

    kw = dict(a.split("=") for a in sys.argv[1:])
    print(
        json.dumps(
            benchmark(**{k: (v if k == "activation" else int(v)) for k, v in kw.items()}), indent=1
        )
    )
