"""Per-weight-matrix Jacobian norms and reduced-network outputs at initialization (001 Sec. 5).

001 (Littwin & Wolf 2020, "Residual Tangent Kernels", arXiv:2001.10460)
studies, for one fixed input ``x`` and a scalar output ``f(x)``:

* the per-layer Jacobian ``J^k = df/dW^k`` of one hidden weight matrix ``W^k`` (Sec. 5.1,
  "here we use a single superscript k to identify weight matrices"): for the ResNet every
  branch matrix ``W^{k,h}``, ``h = 1..m``, is its own ``J``;
* the full Jacobian squared norm ``||J||^2 = sum_k ||J^k||^2 = G(x, x)`` (Eq. 35) over the
  hidden weights (``W^s`` and ``W^f`` fixed, text before Thm. 1);
* the output ``f_(k)`` of the *reduced network* (Def. 1): all connections bypassing ``W^k``
  removed.  For the ResNet of Eqs. 7-8 this is Eq. 150: ``y^k = g^{k,m}`` (the skip
  ``y^{k-1} -> y^k`` dropped), every other block unchanged, same weights.  ``f_(k)`` is the
  same network for all ``W^{k,h}`` of branch ``k``.

Networks are the stacked families of :mod:`sigprop.nets` (``M`` models in one tensor); the
Jacobians are obtained by one autograd backward pass through the family's own forward
(``f`` summed over models: each model's output depends on its own weights only), so what is
measured is exactly the network the workflow initialized.  Weights are taken in 001's NTK
parameterization (``N(0, 1)`` entries, ``1/sqrt(fan_in)`` in the forward pass): the ResNet and
DenseNet families store them that way; the ``fc`` family stores ``W = sigma_w W~ / sqrt(fan_in)``,
so ``||df/dW~||^2 = (sigma_w^2 / fan_in) ||df/dW||^2``.

Inputs: one vector per model, ``x = sqrt(d) u / |u|`` with ``u`` standard normal from the
model's key (:func:`probe_input`), so ``x.x/d = 1`` (``Sigma^0 = 1`` in 001 Eq. 11) and a run's
numbers do not depend on its shard.  Everything is computed in float64.
"""

from __future__ import annotations

import logging
import math
import time

import numpy as np
import torch

from ...nets import activations, families, rng

log = logging.getLogger("sigprop.measure")

STREAM_PROBE = 11  # rng stream of the probe inputs (distinct from sigprop.nets.rng's 1-4)


def probe_input(keys: torch.Tensor, d: int, n_inputs: int = 1, dtype=torch.float64) -> torch.Tensor:
    """``[M, n_inputs, d]`` inputs with ``x.x = d`` exactly, drawn from each model's key."""
    u = rng.normal(keys, STREAM_PROBE, (n_inputs, d), dtype=torch.float64)
    return (u * math.sqrt(d) / u.norm(dim=-1, keepdim=True)).to(dtype)


def _per_model(runs, attr, default, like: torch.Tensor) -> torch.Tensor:
    return torch.tensor(
        [float(getattr(r, attr, default)) for r in runs], dtype=like.dtype, device=like.device
    ).view(-1, 1, 1)


# ------------------------------------------------------------------ hidden weights


def hidden_weights(arch: str, params: list[torch.Tensor]) -> list[int]:
    """Indices into ``params`` of the hidden weight matrices entering ``||J||^2``.

    ``resnet_fc``: ``W^{1,1} .. W^{L,m}`` (``params[1:-1]``, branch-major); ``densenet_fc``:
    ``W^1 .. W^L`` (``W^l = [W^{l,0} .. W^{l,l-1}]`` stacked); ``fc``: the ``depth`` hidden
    layers ``W_0 .. W_{L-1}`` (biases and the readout excluded).
    """
    if arch in ("resnet_fc", "densenet_fc"):
        return list(range(1, len(params) - 1))
    if arch == "fc":
        return list(range(0, len(params) - 2, 2))
    raise ValueError(f"Jacobian moments: unsupported architecture '{arch}'")


def ntk_scales(arch: str, runs, params: list[torch.Tensor]) -> torch.Tensor:
    """``[M, n_hidden]`` factors turning ``||df/dW||^2`` into the NTK-parameterization norm."""
    idx = hidden_weights(arch, params)
    m = params[0].shape[0]
    dev = params[0].device
    if arch != "fc":
        return torch.ones(m, len(idx), dtype=torch.float64, device=dev)
    sw2 = torch.tensor([float(r.sigma_w2) for r in runs], dtype=torch.float64, device=dev).view(
        -1, 1
    )
    fan_in = torch.tensor(
        [float(params[i].shape[2]) for i in idx], dtype=torch.float64, device=dev
    ).view(1, -1)
    return sw2 / fan_in


def layer_labels(arch: str, runs, params: list[torch.Tensor]) -> tuple[np.ndarray, np.ndarray]:
    """``(layer k, sub-layer h)`` of every hidden matrix: ResNet ``W^{k,h}`` (``h = 1..m``);
    DenseNet ``W^k`` and vanilla ``W_{k-1}`` (``h = 0``)."""
    n = len(hidden_weights(arch, params))
    if arch == "resnet_fc":
        m = int(runs[0].branch_depth)
        i = np.arange(n)
        return i // m + 1, i % m + 1
    return np.arange(1, n + 1), np.zeros(n, int)


# ------------------------------------------------------------------ measurements


def output_and_jacobians(
    arch: str,
    runs,
    params: list[torch.Tensor],
    x: torch.Tensor,
    out_index: int = 0,
    with_paths: bool = False,
):
    """Scalar outputs ``f`` ``[M, B]`` and ``||df/dW^k||^2`` ``[M, B, n_hidden]`` (NTK param.).

    One backward pass per input through the family's forward; ``f`` is logit ``out_index``.
    With ``with_paths`` also ``f^k = <W^k, df/dW^k>`` ``[M, B, n_hidden]``: the contribution to
    ``f`` of the paths through ``W^k`` (001 Eq. 36).  For a bias-free ReLU net ``f`` is, at a
    fixed activation pattern, linear in ``W^k`` (a path crosses ``W^k`` at most once), so
    Euler's identity gives exactly the sum over those paths.
    """
    fam = families.get(arch)
    ps = [p.detach().to(torch.float64).requires_grad_(True) for p in params]
    idx = hidden_weights(arch, ps)
    scale = ntk_scales(arch, runs, ps).to(x.device)
    keys = torch.zeros(len(runs), dtype=torch.int64, device=x.device)
    fs, js, paths = [], [], []
    with torch.enable_grad():
        for b in range(x.shape[1]):
            logits, _ = fam.apply(runs, ps, [], x[:, b : b + 1].to(torch.float64), False, keys, 0)
            f = logits[:, 0, out_index]
            grads = torch.autograd.grad(f.sum(), [ps[i] for i in idx])
            js.append(torch.stack([g.pow(2).flatten(1).sum(1) for g in grads], dim=1) * scale)
            if with_paths:
                paths.append(
                    torch.stack(
                        [(ps[i].detach() * g).flatten(1).sum(1) for i, g in zip(idx, grads)], dim=1
                    )
                )
            fs.append(f.detach())
    if with_paths:
        return torch.stack(fs, dim=1), torch.stack(js, dim=1), torch.stack(paths, dim=1)
    return torch.stack(fs, dim=1), torch.stack(js, dim=1)


def resnet_forward(
    params: list[torch.Tensor],
    x: torch.Tensor,
    alpha: torch.Tensor,
    gain: torch.Tensor,
    m: int,
    act: str = "relu",
    reduced: int | None = None,
    out_index: int = 0,
) -> torch.Tensor:
    """001 Eqs. 7-8 (as :class:`sigprop.nets.residual.ResNetFC`), or with ``reduced = k`` the
    reduced network of Def. 1 / Eq. 150 (``y^k = g^{k,m}``, no skip).  Returns ``f`` ``[M, B]``.

    ``alpha``, ``gain`` (``sqrt(sigma_w2)``): ``[M, 1, 1]``.
    """
    phi = activations.get(act)
    n = params[0].shape[1]
    L = (len(params) - 2) // m
    c = (alpha / n).sqrt()
    y = torch.bmm(x, params[0].transpose(1, 2)) / math.sqrt(x.shape[-1])
    i = 1
    for l in range(1, L + 1):
        g = c * torch.bmm(y, params[i].transpose(1, 2))
        i += 1
        for _ in range(1, m):
            g = c * torch.bmm(gain * phi(g), params[i].transpose(1, 2))
            i += 1
        y = g if l == reduced else y + g
    return (torch.bmm(y, params[i].transpose(1, 2)) / math.sqrt(n))[..., out_index]


def resnet_reduced_outputs(
    runs, params: list[torch.Tensor], x: torch.Tensor, out_index: int = 0
) -> torch.Tensor:
    """``f_(k)`` for ``k = 1..L``: ``[M, B, L]`` (001 Def. 1, Eq. 150)."""
    ps = [p.detach().to(torch.float64) for p in params]
    x = x.to(torch.float64)
    m = int(runs[0].branch_depth)
    alpha = _per_model(runs, "alpha", 1.0, x)
    gain = _per_model(runs, "sigma_w2", 1.0, x).sqrt()
    L = (len(ps) - 2) // m
    with torch.no_grad():
        return torch.stack(
            [
                resnet_forward(ps, x, alpha, gain, m, runs[0].activation, k, out_index)
                for k in range(1, L + 1)
            ],
            dim=-1,
        )


def jacobian_moments(
    arch: str,
    runs,
    params: list[torch.Tensor],
    chunk: int = 32,
    reduced: bool = True,
    chunk_bytes: int | None = None,
) -> dict[str, np.ndarray]:
    """Everything 001 Figs. 4-5 need, per model (float64 numpy):

    ``f`` ``[M]`` (output), ``jac_sq`` ``[M, n_hidden]`` (``||J^k||^2`` per hidden matrix),
    ``jac_sq_total`` ``[M]`` (``||J||^2``), ``layer``/``sub`` ``[n_hidden]`` (labels of the
    matrices, :func:`layer_labels`) and, for the ResNet with ``reduced``, ``f_reduced``
    ``[M, L]`` (``f_(k)``) and ``f_path`` ``[M, n_hidden]`` (``f^k`` through each hidden matrix,
    001 Eq. 36; Thm. 3 compares its moments with those of ``f_(k)``).  Models are processed
    ``chunk`` at a time, fewer where their float64 copies and gradients (16 bytes a parameter)
    would exceed ``chunk_bytes`` (memory only; the numbers do not depend on it: a DenseNet of
    001 Fig. 5 at L = 32, n = 320 has 54M weights, 0.9 GB a model).
    """
    m_all = params[0].shape[0]
    if chunk_bytes is not None:
        per_model = 16 * sum(p[0].numel() for p in params)
        chunk = max(1, min(chunk, chunk_bytes // per_model))
    dev = params[0].device
    keys_all = torch.tensor([r.key for r in runs], dtype=torch.int64, device=dev)
    d = params[0].shape[2]
    out = {"f": [], "jac_sq": [], "f_reduced": [], "f_path": []}
    paths = arch == "resnet_fc" and reduced
    for a in range(0, m_all, chunk):
        sl = slice(a, min(a + chunk, m_all))
        rs, ps = runs[sl], [p[sl] for p in params]
        x = probe_input(keys_all[sl], d).to(dev)
        f, j, *fp = output_and_jacobians(arch, rs, ps, x, with_paths=paths)
        out["f"].append(f[:, 0].cpu())
        out["jac_sq"].append(j[:, 0].cpu())
        if paths:
            out["f_reduced"].append(resnet_reduced_outputs(rs, ps, x)[:, 0].cpu())
            out["f_path"].append(fp[0][:, 0].cpu())
    res = {k: torch.cat(v).numpy() for k, v in out.items() if v}
    res["jac_sq_total"] = res["jac_sq"].sum(1)
    res["layer"], res["sub"] = layer_labels(arch, runs, params)
    return res


# ------------------------------------------------------------------ statistics


def normalized_variance(v: np.ndarray, axis: int = 0) -> np.ndarray:
    """``Var / E^2`` over ``axis`` (unbiased variance)."""
    v = np.asarray(v, float)
    return v.var(axis=axis, ddof=1) / v.mean(axis=axis) ** 2


# ------------------------------------------------------------------ kernel regime in training
# Beyond 001 (its §6 conclusion: residual nets "operate much closer to the so called kernel
# regime than vanilla architectures"): how much the empirical NTK moves during a short SGD run.


def empirical_ntk(
    arch: str, run, params_m: list[torch.Tensor], x: torch.Tensor, trained: list[int]
) -> torch.Tensor:
    """Empirical NTK ``Theta[p, q] = sum_c <df_c(x_p)/dW, df_c(x_q)/dW>`` of ONE model over the
    ``trained`` parameters (the hidden weights), summed over the logits ``c``: ``[P, P]``.

    ``params_m``: the model's parameters with a leading axis of size 1; ``x``: ``[P, *in]``.
    Jacobians by ``torch.func.jacrev`` through the family's forward.
    """
    fam = families.get(arch)
    keys = torch.zeros(1, dtype=torch.int64, device=x.device)

    def fn(*w):
        ps = list(params_m)
        for i, t in zip(trained, w):
            ps[i] = t
        return fam.apply((run,), ps, [], x.unsqueeze(0), False, keys, 0)[0][0]  # [P, C]

    jac = list(
        torch.func.jacrev(fn, argnums=tuple(range(len(trained))))(*[params_m[i] for i in trained])
    )
    p = x.shape[0]
    theta = torch.zeros(p, p, dtype=torch.float64, device=x.device)
    while jac:  # sum_c <J_c(x_p), J_c(x_q)> one weight at a time, each freed once added:
        j = jac.pop(0).reshape(p, -1).to(torch.float64)  # no float64 copy of the whole Jacobian
        theta.addmm_(j, j.T)
        del j
    return theta


def ntk_all(arch: str, runs, params: list[torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """:func:`empirical_ntk` of every model: ``[M, P, P]`` (one model at a time)."""
    trained = hidden_weights(arch, params)
    return torch.stack(
        [
            empirical_ntk(arch, r, [p[i : i + 1].detach() for p in params], x, trained)
            for i, r in enumerate(runs)
        ]
    )


def mse_per_model(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``0.5 * mean_b ||f(x_b) - onehot(y_b)||^2`` per model: ``out [M, B, C]``, ``y [M, B]``."""
    t = torch.nn.functional.one_hot(y, out.shape[-1]).to(out.dtype)
    return 0.5 * (out - t).pow(2).sum(-1).mean(-1)


def train_kernel_change(
    arch: str,
    runs,
    params: list[torch.Tensor],
    x_train: torch.Tensor,
    y_train: torch.Tensor,
    x_probe: torch.Tensor,
    steps: int,
    batch: int,
    eta: torch.Tensor,
    n_eval: int = 512,
) -> dict[str, np.ndarray]:
    """Train the hidden weights of every model by plain minibatch SGD on the MSE to one-hot
    targets and measure how far the empirical NTK on ``x_probe`` moves.

    Step size per model: ``lr = eta / K0``, ``K0`` = mean diagonal of the per-logit NTK at
    initialization (``mean diag Theta_0 / C``), which makes kernel gradient descent stable for
    ``eta < 2`` and puts the architectures on the same function-space step scale.  W^s, W^f
    (001's fixed projections) and biases are not trained.  Minibatches: a per-model
    permutation of the training set per epoch from the model's key (:func:`rng.permutations`).
    Returns per model: ``ntk_rel_change = ||Theta_T - Theta_0||_F / ||Theta_0||_F``,
    ``ntk_diag_0`` (K0), ``lr``, ``loss_init`` / ``loss_final`` (MSE on the first ``n_eval``
    training examples) and ``diverged`` (1 if a loss became non-finite).
    """
    fam = families.get(arch)
    m = len(runs)
    dev = x_train.device
    ps = [p.detach().clone() for p in params]
    trained = hidden_weights(arch, ps)
    keys = torch.tensor([r.key for r in runs], dtype=torch.int64, device=dev)
    n = x_train.shape[0]
    xe, ye = x_train[:n_eval], y_train[:n_eval]

    def eval_loss():
        with torch.no_grad():
            out = fam.apply(runs, ps, [], xe.unsqueeze(0).expand(m, *xe.shape), False, keys, 0)[0]
            return mse_per_model(out, ye.unsqueeze(0).expand(m, -1))

    from ...train.engine import progress_interval

    every, t0 = progress_interval(), time.time()
    theta0 = ntk_all(arch, runs, ps, x_probe)
    log.info("kernel regime: NTK at initialization of %d models in %.1f s", m, time.time() - t0)
    c = fam.apply(runs[:1], [p[:1] for p in ps], [], x_probe[:1].unsqueeze(0), False, keys[:1], 0)[
        0
    ].shape[-1]
    k0 = torch.diagonal(theta0, dim1=1, dim2=2).mean(1) / c
    lr = (eta.to(torch.float64) / k0).to(ps[0].dtype)
    loss0 = eval_loss()
    per_epoch = n // batch
    perm = None
    last = ts = time.time()
    for t in range(steps):
        if time.time() - last > every:
            last = time.time()
            log.info("kernel regime: step %d/%d, %.1f steps/s", t, steps, t / (last - ts))
        epoch, pos = divmod(t, per_epoch)
        if pos == 0:
            perm = rng.permutations(keys, epoch, n)
        idx = perm[:, pos * batch : (pos + 1) * batch]
        with torch.enable_grad():
            w = [ps[i].requires_grad_(True) for i in trained]
            out = fam.apply(runs, ps, [], x_train[idx], True, keys, t)[0]
            loss = mse_per_model(out, y_train[idx])
            grads = torch.autograd.grad(loss.sum(), w)
        with torch.no_grad():
            for i, g in zip(trained, grads):
                ps[i] = ps[i].detach() - lr.view(-1, *([1] * (g.dim() - 1))) * g
    lossT = eval_loss()
    thetaT = ntk_all(arch, runs, ps, x_probe)
    log.info("kernel regime: %d steps and both NTKs in %.1f s", steps, time.time() - t0)
    rel = (thetaT - theta0).flatten(1).norm(dim=1) / theta0.flatten(1).norm(dim=1)
    bad = ~torch.isfinite(lossT) | ~torch.isfinite(rel)
    return {
        "ntk_rel_change": rel.cpu().numpy(),
        "ntk_diag_0": k0.cpu().numpy(),
        "lr": lr.double().cpu().numpy(),
        "loss_init": loss0.double().cpu().numpy(),
        "loss_final": lossT.double().cpu().numpy(),
        "diverged": bad.double().cpu().numpy(),
    }
