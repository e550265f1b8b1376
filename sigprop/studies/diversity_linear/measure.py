"""Training of linear FC nets by 004 Sec. 5's protocol, gradient diversity during training and
004 Thm. 6's draws at initialization (Chen, Wang, Zhao, Papailiopoulos & Koutris 2018,
arXiv:1806.03791): the measure job of a shard trains its runs itself.

Papers cited by prefix: 000 = Huang, Xu, Du, Zeng, Zhao (2019), arXiv:1912.09132.
"""

from __future__ import annotations

import hashlib
import time

import numpy as np
import pandas as pd

from ... import tables

STREAM_STUDENT, STREAM_TEACHER, STREAM_X = 41, 42, 43  # streams of the Thm. 6 draws


def _draw_keys(run, count: int, what: str):
    import torch

    ks = [
        int(hashlib.sha256(f"{run.run_id}:{what}:{j}".encode()).hexdigest()[:8], 16) & 0x7FFFFFFF
        for j in range(count)
    ]
    return torch.tensor(
        ks, dtype=torch.int64, device="cpu"
    )  # drawn on the CPU, moved by the caller


def net_dims(d: int, width: int, depth: int) -> list[tuple[int, int]]:
    """(in, out) of the ``depth + 1`` weight matrices: 004's ``L = depth + 1`` layers, ``K_L = 1``."""
    from ...nets import fc

    return fc.layer_dims(d, width, depth, 1)


# ----------------------------------------------------------------- training (torch inside)


def initial_weights(runs, d: int, dtype, device):
    """The runs' fc initial weights (``sigma_w2 / fan_in``, 000 Eq. 1 init of :mod:`sigprop.nets.fc`,
    from the run keys), readout of width 1, biases dropped: ``[W_1, ..., W_L]`` each ``[R, out, in]``."""
    import torch

    from ...nets import fc

    keys = torch.tensor([r.key for r in runs], dtype=torch.int64, device=device)
    sw = torch.tensor([r.sigma_w2 for r in runs], dtype=torch.float64, device=device)
    dims = net_dims(d, runs[0].width, runs[0].depth)
    p = fc.init_params(keys, sw, torch.zeros_like(sw), [r.init for r in runs], dims, dtype)
    return [w.to(device) for w in p[0::2]]


def full_loss(ws, x, y):
    """``[M]`` mean squared error over the whole training set, through the end-to-end map."""
    import torch

    p = ws[-1]
    for w in reversed(ws[:-1]):
        p = torch.bmm(p, w)  # [M, 1, d]
    out = torch.matmul(x, p.transpose(1, 2))  # [M, n, 1]
    return (out - y).pow(2).mean(dim=(1, 2))


def diversity(ws, x, y, chunk: int = 4096):
    """``[M]`` gradient diversity (004 Def. 1) of the square loss on the whole set (no biases)."""
    from .per_example import fc_grad_norms

    return fc_grad_norms([(w, None) for w in ws], x, y, "linear", "mse", chunk).diversity()


def linear_sgd_step(ws, xb, yb, step_lr) -> None:
    """One SGD step on the batch-mean squared error of stacked linear nets, in place.

    Exact gradient without per-layer activations: with ``e = X_b p^T - y_b`` (``p = W_L ... W_1``)
    and ``v = X_b^T e``, ``dL/dW_j = (2/b) r_j^T u_j^T`` where ``r_j = W_L ... W_{j+1}`` (row) and
    ``u_j = W_{j-1} ... W_1 v`` (column): O(b d + L K^2) per step instead of O(b L K^2).
    ``ws``: ``[W_1, ..., W_L]`` each ``[M, out, in]``; ``xb`` ``[M, b, d]``; ``yb`` ``[M, b, 1]``;
    ``step_lr`` ``[M, 1, 1]``.
    """
    import torch

    L = len(ws)
    rows = [None] * L
    r = torch.ones(ws[-1].shape[0], 1, 1, dtype=ws[-1].dtype, device=ws[-1].device)
    for j in range(L - 1, -1, -1):
        rows[j] = r
        r = torch.bmm(r, ws[j])  # ends as p = W_L ... W_1
    e = torch.bmm(xb, r.transpose(1, 2)) - yb  # [M, b, 1]
    u = torch.bmm(xb.transpose(1, 2), e) * (2.0 / xb.shape[1])  # [M, d, 1]
    grads = []
    for j in range(L):
        grads.append(torch.bmm(rows[j].transpose(1, 2), u.transpose(1, 2)))
        u = torch.bmm(ws[j], u)
    for w, g in zip(ws, grads):
        w.sub_(step_lr * torch.nan_to_num(g, nan=0.0, posinf=0.0, neginf=0.0))


def _sgd_epoch(ws, lr, keys_per_model, epoch, x, y, batch, active):
    """One epoch of SGD for every model (own permutation), in place; frozen where not ``active``."""
    from ...nets import rng

    n = x.shape[0]
    perm = rng.permutations(keys_per_model, epoch, n)  # [M, n]
    step_lr = (lr * active).view(-1, 1, 1)
    for s in range(0, n, batch):
        idx = perm[:, s : s + batch]
        linear_sgd_step(ws, x[idx], y[idx], step_lr)


def train_group(runs, x, y, prot, device) -> list[dict]:
    """004 Sec. 5 protocol for runs sharing net and batch size: learning-rate search then training.

    ``prot``: the study's ``measure`` parameters (:class:`~sigprop.studies.diversity_linear.Measure`:
    ``lrs``, ``lr_epochs``, ``divergence_loss``).

    Returns one record per run: ``lr``, ``lr_loss`` (per candidate), ``epochs_to_target``,
    ``diverged``, ``loss`` (epoch -> training loss of the kept model), ``diversity``
    (epoch -> Delta_S), ``seconds``.
    """
    import torch

    t0 = time.perf_counter()
    lrs = torch.tensor(prot.lrs, dtype=x.dtype, device=device)
    n_lr, R = len(lrs), len(runs)
    r0 = runs[0]
    budget, every, target, batch = r0.steps, r0.eval_every, r0.target_loss, r0.batch_size
    lr_epochs = min(int(prot.lr_epochs), budget)
    init = initial_weights(runs, x.shape[1], x.dtype, device)
    run_keys = torch.tensor([r.key for r in runs], dtype=torch.int64, device=device)
    blow_up = float(prot.divergence_loss)

    # phase 1: every (run, lr) pair for lr_epochs epochs; model index = r * n_lr + j
    ws = [w.repeat_interleave(n_lr, dim=0).clone() for w in init]
    keys = run_keys.repeat_interleave(n_lr)
    lr = lrs.repeat(R)
    active = torch.ones(R * n_lr, dtype=x.dtype, device=device)
    losses = {0: full_loss(ws, x, y)}
    div0 = diversity(init, x, y)  # same for every candidate
    divs = {0: div0.repeat_interleave(n_lr)}
    for e in range(1, lr_epochs + 1):
        _sgd_epoch(ws, lr, keys, e - 1, x, y, batch, active)
        le = full_loss(ws, x, y)
        bad = ~torch.isfinite(le) | (le > blow_up)
        active = active * (~bad).to(x.dtype)
        losses[e] = torch.where(bad, torch.full_like(le, float("inf")), le)
        if e % every == 0:
            divs[e] = diversity(ws, x, y)
    final = losses[lr_epochs].view(R, n_lr)
    choice = torch.nan_to_num(final, nan=float("inf")).argmin(dim=1)  # [R]
    sel = torch.arange(R, device=device) * n_lr + choice
    loss_hist = {e: v[sel] for e, v in losses.items()}
    div_hist = {e: v[sel] for e, v in divs.items()}

    # phase 2: the kept models until the target or the budget
    ws = [w[sel].clone() for w in ws]
    lr2, keys2 = lrs[choice], run_keys
    reached = torch.full((R,), -1, dtype=torch.int64, device=device)
    for e in sorted(loss_hist):
        hit = (loss_hist[e] <= target) & (reached < 0) & (e > 0)
        reached[hit] = e
    diverged = ~torch.isfinite(loss_hist[lr_epochs])
    alive = ~diverged & (reached < 0)
    e = lr_epochs
    while e < budget and bool(alive.any()):
        _sgd_epoch(ws, lr2, keys2, e, x, y, batch, alive.to(x.dtype))
        e += 1
        le = full_loss(ws, x, y)
        le = torch.where(alive, le, torch.full_like(le, float("nan")))
        bad = alive & (~torch.isfinite(le) | (le > blow_up))
        le = torch.where(bad, torch.full_like(le, float("inf")), le)
        loss_hist[e] = le
        hit = alive & (le <= target)
        reached[hit] = e
        diverged |= bad
        alive = alive & ~hit & ~bad
        if e % every == 0 and bool(alive.any()):
            d = diversity(ws, x, y)
            div_hist[e] = torch.where(alive, d, torch.full_like(d, float("nan")))
    secs = (time.perf_counter() - t0) / R
    out = []
    for i in range(R):
        lh = {k: float(v[i]) for k, v in loss_hist.items() if np.isfinite(float(v[i]))}
        # diversity only while the loss is above the target (before convergence)
        dh = {
            k: float(v[i])
            for k, v in div_hist.items()
            if np.isfinite(float(v[i])) and (int(reached[i]) < 0 or k < int(reached[i]))
        }
        out.append(
            {
                "lr": float(lrs[choice[i]]),
                "lr_loss": final[i].cpu().numpy(),
                "epochs_to_target": float(reached[i]) if int(reached[i]) > 0 else np.nan,
                "diverged": float(diverged[i]),
                "loss": lh,
                "diversity": dh,
                "seconds": secs,
            }
        )
    return out


def init_draws(run, n: int, d: int, draws: int, device, dtype=None, max_elements: int = 2**24):
    """``sum_i ||grad f_i||^2`` and ``||sum_i grad f_i||^2`` ``[draws]`` in 004 Thm. 6's setting.

    Draw j: student and teacher with the run's widths and N(0, 1) weights, n inputs N(0, I_d),
    labels ``y = W* x``, ``f_i = (W x_i - y_i)^2 / 2``; random numbers from counter streams
    keyed by ``(run id, j)``.
    """
    import torch

    from ...nets import rng
    from .per_example import fc_grad_norms

    dtype = dtype or torch.float64
    keys = _draw_keys(run, draws, "thm6").to(device)
    dims = net_dims(d, run.width, run.depth)
    student = [
        rng.normal(keys, STREAM_STUDENT, (o, i), offset=l << 34, dtype=dtype)
        for l, (i, o) in enumerate(dims)
    ]
    teacher = [
        rng.normal(keys, STREAM_TEACHER, (o, i), offset=l << 34, dtype=dtype)
        for l, (i, o) in enumerate(dims)
    ]
    x = rng.normal(keys, STREAM_X, (n, d), dtype=dtype)  # [J, n, d]
    y = full_targets(teacher, x)
    chunk = max(1, max_elements // (draws * max(run.width, d)))
    g = fc_grad_norms([(w, None) for w in student], x, y, "linear", "mse", chunk)
    return g.sq_norm_sum, g.sum_norm_sq


def full_targets(ws, x):
    """``[M, n, 1]`` outputs of linear nets ``ws`` on per-model inputs ``x [M, n, d]``."""
    import torch

    p = ws[-1]
    for w in reversed(ws[:-1]):
        p = torch.bmm(p, w)
    return torch.bmm(x, p.transpose(1, 2))


def _load(data_path, prot, device):
    import torch

    from ...data.prepare import load

    ds = load(data_path)
    x = np.asarray(ds.x_train, np.float64)
    y = np.asarray(ds.y_train, np.float64)
    y = y.reshape(len(y), -1)
    n = prot.n_train
    if n is not None:
        if int(n) > len(x):
            raise ValueError(
                f"measure.n_train = {n} but the data set has {len(x)} "
                "training examples (config data.options)"
            )
        x, y = x[: int(n)], y[: int(n)]
    if y.shape[1] != 1:
        raise ValueError(
            f"004's nets have one output; the data set has {y.shape[1]} "
            "(set data.options.synthetic_regression.d_out: 1)"
        )
    return (torch.as_tensor(x, device=device), torch.as_tensor(y, device=device))


def measure(
    shard, params, buffers, p, device: str = "cpu", data_path=None, masks_path=None
) -> pd.DataFrame:
    """Train every run of the shard by the 004 Sec. 5 protocol and measure its gradient diversity.

    ``params`` (the init stage's weights) are not used: the nets are re-drawn from the same keys
    with one output and without biases (:func:`initial_weights`).
    """
    import torch

    for r in shard.runs:
        if r.activation != "linear" or r.arch != "fc" or r.precision != "float64":
            raise ValueError(
                f"run {r.run_id}: diversity_linear trains fc nets with activation "
                f"linear in float64 (got {r.arch}, {r.activation}, {r.precision})"
            )
    prot = p.measure
    dev = torch.device(device) if isinstance(device, str) else device
    x, y = _load(data_path, prot, dev)
    n, d = x.shape
    frames = []
    by_batch: dict[int, list[int]] = {}
    for i, r in enumerate(shard.runs):
        by_batch.setdefault(r.batch_size, []).append(i)
    for idx in by_batch.values():
        recs = train_group([shard.runs[i] for i in idx], x, y, prot, dev)
        for i, rec in zip(idx, recs):
            frames.append(_rows(i, rec, list(prot.lrs)))
    for i, r in enumerate(shard.runs):
        num, den = init_draws(r, n, d, int(prot.init_draws), dev)
        j = np.arange(len(num))
        frames.append(
            pd.DataFrame(
                {
                    "model": i,
                    "metric": "init_num",
                    "step": 0,
                    "probe": j,
                    "value": num.cpu().numpy(),
                }
            )
        )
        frames.append(
            pd.DataFrame(
                {
                    "model": i,
                    "metric": "init_den",
                    "step": 0,
                    "probe": j,
                    "value": den.cpu().numpy(),
                }
            )
        )
        frames.append(
            pd.DataFrame(
                {
                    "model": i,
                    "metric": ["n_train", "d_in"],
                    "step": 0,
                    "probe": 0,
                    "value": [float(n), float(d)],
                }
            )
        )
    long = pd.concat(frames, ignore_index=True)
    long["step"] = long.step.astype(np.int64)
    long["probe"] = long.probe.astype(np.int64)
    long["layer"] = np.int64(0)
    return tables.run_rows(shard, long, str(dev.type), order=("step", "probe"))


def _rows(i: int, rec: dict, lrs) -> pd.DataFrame:
    parts = [
        pd.DataFrame(
            {
                "model": i,
                "metric": "train_loss",
                "step": list(rec["loss"]),
                "probe": 0,
                "value": list(rec["loss"].values()),
            }
        ),
        pd.DataFrame(
            {
                "model": i,
                "metric": "diversity",
                "step": list(rec["diversity"]),
                "probe": 0,
                "value": list(rec["diversity"].values()),
            }
        ),
        pd.DataFrame(
            {
                "model": i,
                "metric": "lr_candidate",
                "step": 0,
                "probe": np.arange(len(lrs)),
                "value": lrs,
            }
        ),
        pd.DataFrame(
            {
                "model": i,
                "metric": "lr_loss",
                "step": 0,
                "probe": np.arange(len(lrs)),
                "value": rec["lr_loss"],
            }
        ),
        pd.DataFrame(
            {
                "model": i,
                "metric": ["lr", "epochs_to_target", "diverged", "seconds"],
                "step": 0,
                "probe": 0,
                "value": [rec["lr"], rec["epochs_to_target"], rec["diverged"], rec["seconds"]],
            }
        ),
    ]
    return pd.concat([p for p in parts if len(p)], ignore_index=True)
