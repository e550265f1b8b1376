"""Study: gradient diversity and large-batch training of deep linear nets (004 Fig. 2, Figs. 3(a)/4(a)).

Paper: ``../shared/seeds/004_ff22a8b96b446280.txt`` (Chen, Wang, Zhao, Papailiopoulos,
Koutris, "The Effect of Network Width on the Performance of Large-batch Training").

Every run is one linear fully connected net (fc family, activation ``linear``, ``depth``
hidden layers of ``width`` units, one output, **no biases**: 004's nets are products of
matrices, Sec. 3) trained by mini-batch SGD on the embedded ``synthetic_regression`` data
set (N(0, 1) inputs labelled by a deep linear N(0, 1) teacher, 004 Sec. 5 / Table 1) with
the square loss, in float64.  The measure job of a shard trains its runs itself
(:func:`train_group`), following 004 Sec. 5:

* learning rate: every candidate of ``analysis.training.lrs`` is trained for ``lr_epochs``
  (2) epochs from the run's initial weights; the one with the lowest training loss is kept;
* that model trains on until its training loss (mean squared error over the training set,
  evaluated after every epoch) reaches ``target_loss`` (1e-12, Table 1) or the epoch budget
  ``steps`` runs out; ``epochs_to_target`` is the first epoch at whose end the loss is at
  the target (NaN if never);
* gradient diversity Delta_S (004 Def. 1) of the whole training set is measured at
  initialization and every ``eval_every`` epochs while the loss is above the target
  ("every ten epochs ... and compute the average", Sec. 5), with the per-example gradient
  norms of :mod:`sigprop.measure.per_example` (no per-example gradients materialized).

Minibatches: a fresh permutation per epoch from the run's key (:func:`sigprop.nets.rng.permutations`),
batches of ``batch_size`` (the last one smaller when ``batch_size`` does not divide n); the loss
of a step is the batch mean of the squared error.  Runs of one shard with equal batch size are
trained as one stacked model (runs x candidate learning rates).

Theory check at initialization (004 Thms. 3, 6; Appendix C): Thm. 6 assumes a student with
N(0, 1) weights, a teacher of the same widths with N(0, 1) weights and N(0, I) inputs.  Each run
also draws ``init_draws`` such (student, teacher, data) triples of its net's widths and of the
training set's size n and dimension d (counter-based streams keyed by the run id), and records
``sum_i ||grad f_i||^2`` and ``||sum_i grad f_i||^2`` of each; the ratio of their means times n
estimates the E-ratio ``rho`` of Thm. 3 / Eq. 4.1, compared with Thm. 6 (exact) and the Thm. 3
lower bound (:mod:`sigprop.theory.diversity`).

Run fields: ``steps`` is the epoch budget, ``eval_every`` the diversity period in epochs,
``target_loss`` the loss target, ``batch_size`` the SGD batch; ``lr`` is unused (the candidates
are ``analysis.training.lrs``).  Rows (``step`` = epoch): ``train_loss`` and ``diversity`` of the
kept model; ``epochs_to_target``, ``lr``, ``diverged``; ``lr_candidate`` / ``lr_loss`` (``probe`` =
candidate); ``init_num`` / ``init_den`` (``probe`` = draw); ``n_train``, ``d_in``, ``seconds``.
"""

from __future__ import annotations

import hashlib
import time

import numpy as np
import pandas as pd

from .. import tables
from ..claims import frame, kendall_tau, row
from ..figures.diversity_linear import epochs_figure, fig2
from ..theory import diversity as th

TASK = "measure"
FIGURES = {"diversity_linear": fig2, "diversity_epochs": epochs_figure}
CAPTIONS = {
    "diversity_linear": (
        "004 Fig. 2 on the synthetic regression set with linear FC nets (no biases, square loss, "
        "SGD with the paper's learning-rate protocol). (a) At initialization in 004's setting "
        "(N(0,1) student, N(0,1) teacher of the same widths, N(0,I) inputs, n and d of the "
        "training set): n times the ratio of the mean sum_i ||grad f_i||^2 to the mean "
        "||sum_i grad f_i||^2 over draws (points, ±1 SE) against width, one colour per depth "
        "(hidden layers); solid: the exact E-ratio of Thm. 6 at this n, dashed: the lower bound "
        "of Thm. 3 (Eq. 4.1, n -> infinity). (b) Gradient diversity Delta_S (Def. 1) of the "
        "trained nets on the training set, averaged over the measurements every few epochs "
        "during training (at initialization and while the loss is above the target) and over "
        "runs (±1 SE over runs); dotted: the same nets at initialization. (c) Largest batch size whose median run reaches training loss "
        "1e-12 within the epoch budget of Fig. 2(b) (the text gives 14 epochs), against width; "
        "(d) the same against the diversity of (b) (Fig. 2(c)). Crosses in (c) and points "
        "at the bottom edge of (d) (half the smallest batch): no batch size converged within the "
        "budget; in (c) the depths are offset vertically "
        "by a few percent so that equal values stay visible."),
    "diversity_epochs": (
        "004 Figs. 3(a)/4(a) analogue on the synthetic regression set: epochs for linear FC nets "
        "to reach training loss 1e-12 against batch size, median over seeds (error bars: "
        "min-max), one panel per depth, one line per width (learning rate tuned per net and "
        "batch size by the lowest training loss after 2 epochs). Open markers at the top: the "
        "epoch budget ran out before the target. Right: log10 of the median epochs as a "
        "heatmap over nets and batch sizes (Fig. 4(a)); hatched cells never converged."),
}
SOURCE_FIG2 = "004 Sec. 5, Fig. 2"
SOURCE_THM = "004 Sec. 4, Thm. 3 (Eq. 4.1); App. C, Thm. 6"
SOURCE_THRESH = "004 Sec. 5 (findings 1-3), Figs. 3(a), 4(a)"
STREAM_STUDENT, STREAM_TEACHER, STREAM_X = 41, 42, 43   # streams of the Thm. 6 draws


# ----------------------------------------------------------------- protocol


def _per_scale(v, scale: str):
    return v[scale] if isinstance(v, dict) else v


def protocol(cfg: dict) -> dict:
    """``analysis.training`` with per-scale values (``{quick: .., paper: ..}``) resolved."""
    tr = dict(cfg.get("analysis", {}).get("training", {}))
    scale = cfg.get("scale", "quick")
    out = {k: _per_scale(v, scale) for k, v in tr.items()}
    out.setdefault("lr_epochs", 2)
    out.setdefault("init_draws", 16)
    out.setdefault("n_train", None)
    if not out.get("lrs"):
        raise ValueError("analysis.training.lrs: the learning-rate grid is missing")
    out["lrs"] = [float(x) for x in out["lrs"]]
    return out


def _draw_keys(run, count: int, what: str):
    import torch
    ks = [int(hashlib.sha256(f"{run.run_id}:{what}:{j}".encode()).hexdigest()[:8], 16) & 0x7FFFFFFF
          for j in range(count)]
    return torch.tensor(ks, dtype=torch.int64)


def net_dims(d: int, width: int, depth: int) -> list[tuple[int, int]]:
    """(in, out) of the ``depth + 1`` weight matrices: 004's ``L = depth + 1`` layers, ``K_L = 1``."""
    from ..nets import fc
    return fc.layer_dims(d, width, depth, 1)


def theory_widths(d: int, width, depth: int) -> np.ndarray:
    """004 Thm. 3/6 widths ``(K_0 = d, K_1, ..., K_{L-1})`` of a net with ``depth`` hidden layers."""
    K = np.atleast_1d(np.asarray(width, float))
    return np.concatenate([np.full((K.size, 1), float(d)), np.repeat(K[:, None], depth, axis=1)], axis=1)


# ----------------------------------------------------------------- training (torch inside)


def initial_weights(runs, d: int, dtype, device):
    """The runs' fc initial weights (``sigma_w2 / fan_in``, 000 Eq. 1 init of :mod:`sigprop.nets.fc`,
    from the run keys), readout of width 1, biases dropped: ``[W_1, ..., W_L]`` each ``[R, out, in]``."""
    import torch

    from ..nets import fc
    keys = torch.tensor([r.key for r in runs], dtype=torch.int64, device=device)
    sw = torch.tensor([r.sigma_w2 for r in runs], dtype=torch.float64)
    dims = net_dims(d, runs[0].width, runs[0].depth)
    p = fc.init_params(keys, sw, torch.zeros_like(sw), [r.init for r in runs], dims, dtype)
    return [w.to(device) for w in p[0::2]]


def full_loss(ws, x, y):
    """``[M]`` mean squared error over the whole training set, through the end-to-end map."""
    import torch
    p = ws[-1]
    for w in reversed(ws[:-1]):
        p = torch.bmm(p, w)                                   # [M, 1, d]
    out = torch.matmul(x, p.transpose(1, 2))                  # [M, n, 1]
    return (out - y).pow(2).mean(dim=(1, 2))


def diversity(ws, x, y, chunk: int = 4096):
    """``[M]`` gradient diversity (004 Def. 1) of the square loss on the whole set (no biases)."""
    from ..measure.per_example import fc_grad_norms
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
        r = torch.bmm(r, ws[j])                                 # ends as p = W_L ... W_1
    e = torch.bmm(xb, r.transpose(1, 2)) - yb                     # [M, b, 1]
    u = torch.bmm(xb.transpose(1, 2), e) * (2.0 / xb.shape[1])   # [M, d, 1]
    grads = []
    for j in range(L):
        grads.append(torch.bmm(rows[j].transpose(1, 2), u.transpose(1, 2)))
        u = torch.bmm(ws[j], u)
    for w, g in zip(ws, grads):
        w.sub_(step_lr * torch.nan_to_num(g, nan=0.0, posinf=0.0, neginf=0.0))


def _sgd_epoch(ws, lr, keys_per_model, epoch, x, y, batch, active):
    """One epoch of SGD for every model (own permutation), in place; frozen where not ``active``."""
    from ..nets import rng
    n = x.shape[0]
    perm = rng.permutations(keys_per_model, epoch, n)           # [M, n]
    step_lr = (lr * active).view(-1, 1, 1)
    for s in range(0, n, batch):
        idx = perm[:, s:s + batch]
        linear_sgd_step(ws, x[idx], y[idx], step_lr)


def train_group(runs, x, y, prot: dict, device) -> list[dict]:
    """004 Sec. 5 protocol for runs sharing net and batch size: learning-rate search then training.

    Returns one record per run: ``lr``, ``lr_loss`` (per candidate), ``epochs_to_target``,
    ``diverged``, ``loss`` (epoch -> training loss of the kept model), ``diversity``
    (epoch -> Delta_S), ``seconds``.
    """
    import torch
    t0 = time.perf_counter()
    lrs = torch.tensor(prot["lrs"], dtype=x.dtype, device=device)
    n_lr, R = len(lrs), len(runs)
    r0 = runs[0]
    budget, every, target, batch = r0.steps, r0.eval_every, r0.target_loss, r0.batch_size
    lr_epochs = min(int(prot["lr_epochs"]), budget)
    init = initial_weights(runs, x.shape[1], x.dtype, device)
    run_keys = torch.tensor([r.key for r in runs], dtype=torch.int64, device=device)
    blow_up = float(prot.get("divergence_loss", 1e6))

    # phase 1: every (run, lr) pair for lr_epochs epochs; model index = r * n_lr + j
    ws = [w.repeat_interleave(n_lr, dim=0).clone() for w in init]
    keys = run_keys.repeat_interleave(n_lr)
    lr = lrs.repeat(R)
    active = torch.ones(R * n_lr, dtype=x.dtype, device=device)
    losses = {0: full_loss(ws, x, y)}
    div0 = diversity(init, x, y)                                # same for every candidate
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
    choice = torch.nan_to_num(final, nan=float("inf")).argmin(dim=1)     # [R]
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
        dh = {k: float(v[i]) for k, v in div_hist.items()
              if np.isfinite(float(v[i])) and (int(reached[i]) < 0 or k < int(reached[i]))}
        out.append({"lr": float(lrs[choice[i]]), "lr_loss": final[i].cpu().numpy(),
                    "epochs_to_target": float(reached[i]) if int(reached[i]) > 0 else np.nan,
                    "diverged": float(diverged[i]), "loss": lh, "diversity": dh,
                    "seconds": secs})
    return out


def init_draws(run, n: int, d: int, draws: int, device, dtype=None, max_elements: int = 2 ** 24):
    """``sum_i ||grad f_i||^2`` and ``||sum_i grad f_i||^2`` ``[draws]`` in 004 Thm. 6's setting.

    Draw j: student and teacher with the run's widths and N(0, 1) weights, n inputs N(0, I_d),
    labels ``y = W* x``, ``f_i = (W x_i - y_i)^2 / 2``; random numbers from counter streams
    keyed by ``(run id, j)``.
    """
    import torch

    from ..measure.per_example import fc_grad_norms
    from ..nets import rng
    dtype = dtype or torch.float64
    keys = _draw_keys(run, draws, "thm6").to(device)
    dims = net_dims(d, run.width, run.depth)
    student = [rng.normal(keys, STREAM_STUDENT, (o, i), offset=l << 34, dtype=dtype)
               for l, (i, o) in enumerate(dims)]
    teacher = [rng.normal(keys, STREAM_TEACHER, (o, i), offset=l << 34, dtype=dtype)
               for l, (i, o) in enumerate(dims)]
    x = rng.normal(keys, STREAM_X, (n, d), dtype=dtype)                # [J, n, d]
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


def _load(cfg: dict, prot: dict, device):
    import torch

    from ..data.prepare import load
    ds = load(cfg["data_path"])
    x = np.asarray(ds.x_train, np.float64)
    y = np.asarray(ds.y_train, np.float64)
    y = y.reshape(len(y), -1)
    n = prot["n_train"]
    if n is not None:
        if int(n) > len(x):
            raise ValueError(f"analysis.training.n_train = {n} but the data set has {len(x)} "
                             "training examples (config data.options)")
        x, y = x[:int(n)], y[:int(n)]
    if y.shape[1] != 1:
        raise ValueError(f"004's nets have one output; the data set has {y.shape[1]} "
                         "(set data.options.synthetic_regression.d_out: 1)")
    return (torch.as_tensor(x, device=device), torch.as_tensor(y, device=device))


def measure(shard, params, buffers, cfg: dict, device: str = "cpu") -> pd.DataFrame:
    """Train every run of the shard by the 004 Sec. 5 protocol and measure its gradient diversity.

    ``params`` (the init stage's weights) are not used: the nets are re-drawn from the same keys
    with one output and without biases (:func:`initial_weights`).
    """
    import torch
    for r in shard.runs:
        if r.activation != "linear" or r.arch != "fc" or r.precision != "float64":
            raise ValueError(f"run {r.run_id}: diversity_linear trains fc nets with activation "
                             f"linear in float64 (got {r.arch}, {r.activation}, {r.precision})")
    prot = protocol(cfg)
    dev = torch.device(device) if isinstance(device, str) else device
    x, y = _load(cfg, prot, dev)
    n, d = x.shape
    frames = []
    by_batch: dict[int, list[int]] = {}
    for i, r in enumerate(shard.runs):
        by_batch.setdefault(r.batch_size, []).append(i)
    for idx in by_batch.values():
        recs = train_group([shard.runs[i] for i in idx], x, y, prot, dev)
        for i, rec in zip(idx, recs):
            frames.append(_rows(i, rec, prot["lrs"]))
    for i, r in enumerate(shard.runs):
        num, den = init_draws(r, n, d, int(prot["init_draws"]), dev)
        j = np.arange(len(num))
        frames.append(pd.DataFrame({"model": i, "metric": "init_num", "step": 0, "probe": j,
                                    "value": num.cpu().numpy()}))
        frames.append(pd.DataFrame({"model": i, "metric": "init_den", "step": 0, "probe": j,
                                    "value": den.cpu().numpy()}))
        frames.append(pd.DataFrame({"model": i, "metric": ["n_train", "d_in"], "step": 0, "probe": 0,
                                    "value": [float(n), float(d)]}))
    long = pd.concat(frames, ignore_index=True)
    long["step"] = long.step.astype(np.int64)
    long["probe"] = long.probe.astype(np.int64)
    long["layer"] = np.int64(0)
    return tables.run_rows(shard, long, str(dev.type), order=("step", "probe"))


def _rows(i: int, rec: dict, lrs) -> pd.DataFrame:
    parts = [pd.DataFrame({"model": i, "metric": "train_loss", "step": list(rec["loss"]),
                           "probe": 0, "value": list(rec["loss"].values())}),
             pd.DataFrame({"model": i, "metric": "diversity", "step": list(rec["diversity"]),
                           "probe": 0, "value": list(rec["diversity"].values())}),
             pd.DataFrame({"model": i, "metric": "lr_candidate", "step": 0,
                           "probe": np.arange(len(lrs)), "value": lrs}),
             pd.DataFrame({"model": i, "metric": "lr_loss", "step": 0,
                           "probe": np.arange(len(lrs)), "value": rec["lr_loss"]}),
             pd.DataFrame({"model": i, "metric": ["lr", "epochs_to_target", "diverged", "seconds"],
                           "step": 0, "probe": 0,
                           "value": [rec["lr"], rec["epochs_to_target"], rec["diverged"],
                                     rec["seconds"]]})]
    return pd.concat([p for p in parts if len(p)], ignore_index=True)


# ----------------------------------------------------------------- theory


def theory_table(study: str, theory_cfg: dict, settings: list[dict]) -> pd.DataFrame:
    """004 Thm. 6 / Thm. 3 for equal hidden widths ``K = 2 .. width_max`` and ``depth = 1 ..
    depth_max`` hidden layers (``L = depth + 1``), input dimension ``d_in``:

    ``sq_norm_thm8`` (E||grad f_i||^2, A), ``inner_thm6`` (E<grad f_i, grad f_j>, C): the
    finite-n E-ratio is ``n A / (A + (n - 1) C)`` (:func:`~sigprop.theory.diversity.linear_expected_ratio`);
    ``ratio_inf_thm6`` = A / C; ``bound_thm3`` = Eq. 4.1 (intended reading).
    """
    d = int(theory_cfg.get("d_in", 32))
    K = np.arange(2, int(theory_cfg.get("width_max", 128)) + 1, dtype=float)
    rows = []
    for depth in range(1, int(theory_cfg.get("depth_max", 4)) + 1):
        w = theory_widths(d, K, depth)
        vals = {"sq_norm_thm8": th.linear_sq_norm_expectation(w),
                "inner_thm6": th.linear_inner_expectation(w),
                "ratio_inf_thm6": th.linear_expected_ratio(w),
                "bound_thm3": th.linear_lower_bound(w)}
        for q, v in vals.items():
            rows.append(pd.DataFrame({"study": study, "quantity": q, "value": np.asarray(v, float),
                                      "width": K.astype(int), "depth": depth, "d_in": d}))
    return pd.concat(rows, ignore_index=True)


def theory_ratio(theory: pd.DataFrame, width, depth: int, n: float) -> tuple[np.ndarray, np.ndarray]:
    """(Thm. 6 E-ratio at n, Thm. 3 bound) at the given widths of one depth, from the theory table."""
    t = theory[theory.depth == depth].pivot_table(index="width", columns="quantity", values="value")
    w = np.asarray(width, int)
    if not set(w) <= set(t.index):
        raise ValueError(f"theory table has widths {t.index.min()}..{t.index.max()} at depth {depth}; "
                         f"need {sorted(set(w))} (raise theory.width_max / depth_max)")
    A, C = t.loc[w, "sq_norm_thm8"].to_numpy(), t.loc[w, "inner_thm6"].to_numpy()
    return n * A / (A + (n - 1) * C), t.loc[w, "bound_thm3"].to_numpy()


# ----------------------------------------------------------------- analysis tables


def _metric(runs: pd.DataFrame, metric: str) -> pd.DataFrame:
    return runs[runs.metric == metric]


def _ratio_of_means(num: np.ndarray, den: np.ndarray, n: float) -> tuple[float, float]:
    """``n mean(num) / mean(den)`` and its delta-method SE over draws."""
    k = len(num)
    a, b = num.mean(), den.mean()
    r = n * a / b
    if k < 2:
        return r, np.nan
    c = np.cov(num, den, ddof=1)
    var = (c[0, 0] / a ** 2 + c[1, 1] / b ** 2 - 2 * c[0, 1] / (a * b)) / k
    return r, r * np.sqrt(max(var, 0.0))


def init_table(runs: pd.DataFrame, theory: pd.DataFrame) -> pd.DataFrame:
    """Per net (width, depth): the Thm. 3/6 E-ratio estimate from the init draws (all runs), its SE,
    the number of draws, Thm. 6 at n and the Thm. 3 bound."""
    r = runs[runs.metric.isin(["init_num", "init_den"])]
    if not len(r):
        return pd.DataFrame(columns=["width", "depth", "rho", "rho_se", "draws", "thm6", "bound", "n", "d"])
    n = float(_metric(runs, "n_train").value.iloc[0])
    d = float(_metric(runs, "d_in").value.iloc[0])
    w = r.pivot_table(index=["width", "depth", "run_id", "probe"], columns="metric", values="value")
    out = []
    for (width, depth), g in w.groupby(level=["width", "depth"]):
        rho, se = _ratio_of_means(g.init_num.to_numpy(), g.init_den.to_numpy(), n)
        out.append({"width": int(width), "depth": int(depth), "rho": rho, "rho_se": se,
                    "draws": len(g), "n": n, "d": d})
    df = pd.DataFrame(out)
    _check_d(theory, d)
    for depth, g in df.groupby("depth"):
        t6, b3 = theory_ratio(theory, g.width, int(depth), n)
        df.loc[g.index, "thm6"] = t6
        df.loc[g.index, "bound"] = b3
    return df.sort_values(["depth", "width"]).reset_index(drop=True)


def _check_d(theory: pd.DataFrame, d: float) -> None:
    td = set(theory.d_in.astype(int)) if "d_in" in theory else set()
    if td != {int(d)}:
        raise ValueError(f"theory table computed for d_in {sorted(td)} but the training set has "
                         f"d = {int(d)}: set theory.d_in in the study config")


def run_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per run: width, depth, batch, seed, lr, epochs_to_target, diverged, mean diversity over its
    measurements (``div_train``), diversity at initialization (``div_init``), measurements."""
    scal = runs[runs.metric.isin(["lr", "epochs_to_target", "diverged"])].pivot(
        index="run_id", columns="metric", values="value")
    dv = _metric(runs, "diversity")
    agg = dv.groupby("run_id").value.agg(div_train="mean", n_div="count")
    agg["div_init"] = dv[dv.step == 0].groupby("run_id").value.first()
    hp = runs[["run_id", "width", "depth", "batch_size", "seed", "steps"]].drop_duplicates("run_id")
    out = hp.set_index("run_id").join(scal).join(agg).reset_index()
    return out.sort_values(["depth", "width", "batch_size", "seed"]).reset_index(drop=True)


def batch_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (net, batch size): median / min / max epochs to the target over seeds (inf: not reached)."""
    rt = run_table(runs)
    rt["ep"] = rt.epochs_to_target.fillna(np.inf)
    g = rt.groupby(["width", "depth", "batch_size"]).ep
    out = pd.DataFrame({"median": g.median(), "min": g.min(), "max": g.max(), "seeds": g.size(),
                        "budget": rt.groupby(["width", "depth", "batch_size"]).steps.max()})
    return out.reset_index()


def net_table(runs: pd.DataFrame, cfg: dict) -> pd.DataFrame:
    """Per net: mean diversity during training (``div_train``, SE over runs), at initialization
    (``div_init``), the largest batch converging within the Fig. 2(b) budget, the batch threshold."""
    an = cfg.get("analysis", {})
    budget = float(an.get("fig2_epochs", 14))
    rt = run_table(runs)
    g = rt.groupby(["width", "depth"])
    nt = pd.DataFrame({"div_train": g.div_train.mean(),
                       "div_train_se": g.div_train.std(ddof=1) / np.sqrt(g.size()),
                       "div_init": g.div_init.mean(), "runs": g.size(),
                       "measurements": g.n_div.mean()}).reset_index()
    bt = batch_table(runs)
    largest, thresh = [], []
    for _, net in nt.iterrows():
        b = bt[(bt.width == net.width) & (bt.depth == net.depth)].sort_values("batch_size")
        ok = b[b["median"] <= budget]
        largest.append(float(ok.batch_size.max()) if len(ok) else np.nan)
        thresh.append(threshold(b.batch_size.to_numpy(), b["median"].to_numpy(), an))
    nt["largest_batch"] = largest
    nt["threshold"] = [t["threshold"] for t in thresh]
    nt["has_threshold"] = [t["exists"] for t in thresh]
    nt["epochs_at_largest_batch"] = [t["e_last"] for t in thresh]
    nt["epochs_min"] = [t["e_min"] for t in thresh]
    return nt


def threshold(batches: np.ndarray, epochs: np.ndarray, an: dict) -> dict:
    """Batch threshold B* of 004 Sec. 5 (finding 1) from median epochs per batch size.

    ``e_min``: fewest epochs over the batch sizes; the flat region is the longest run of batch
    sizes from the smallest with epochs <= max(``flat_factor`` e_min, e_min + 1); B* is its last
    batch size.  A threshold exists when B* is below the largest batch size and the largest
    batch size needs >= ``growth_factor`` e_min epochs (never reaching the target counts).
    """
    th_cfg = an.get("threshold", {})
    flat, growth = float(th_cfg.get("flat_factor", 1.5)), float(th_cfg.get("growth_factor", 2.0))
    e = np.asarray(epochs, float)
    if not len(e) or not np.isfinite(e).any():
        return {"threshold": np.nan, "exists": False, "e_min": np.nan, "e_last": np.inf}
    e_min = float(np.nanmin(e))
    limit = max(flat * e_min, e_min + 1)
    k = 0
    while k < len(e) and e[k] <= limit:
        k += 1
    b_star = float(batches[k - 1]) if k else np.nan
    exists = bool(0 < k < len(e) and e[-1] >= growth * e_min)
    return {"threshold": b_star, "exists": exists, "e_min": e_min, "e_last": float(e[-1])}


# ----------------------------------------------------------------- claims


def trend(df: pd.DataFrame, x: str, y: str, by: str) -> tuple[float, str]:
    """Mean over groups ``by`` of Kendall tau-b(x, y), over groups with >= 2 values of x;
    without such a group (e.g. nets of fixed parameter count, one width per depth), tau-b
    over all rows.  Returns (tau, description)."""
    d = df[[x, y, by]]
    taus = {k: kendall_tau(g[x], g[y]) for k, g in d.groupby(by)}
    taus = {k: v for k, v in taus.items() if np.isfinite(v)}
    if taus:
        return float(np.mean(list(taus.values()))), (
            f"tau-b per {by}: " + ", ".join(f"{k}: {v:+.2f}" for k, v in taus.items()))
    return kendall_tau(d[x], d[y]), f"tau-b over all {len(d)} nets (no {by} with two values of {x})"


def _tau_claim(study, cid, claim, source, tau, desc, tau_min, sign=+1) -> dict:
    ok = bool(np.isfinite(tau) and sign * tau >= tau_min)
    exp = f"tau-b {'>=' if sign > 0 else '<='} {sign * tau_min:+g}"
    return row(study, cid, claim, source, measured=tau, expected=exp, tolerance=tau_min,
               verdict="pass" if ok else "fail",
               detail=desc if np.isfinite(tau) else f"no rank correlation computable; {desc}")


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, cfg: dict) -> pd.DataFrame:
    """Claims of 004 Thms. 3/6 (initialization), Fig. 2 and the Sec. 5 findings (see the config)."""
    an = cfg.get("analysis", {})
    study = cfg["name"]
    nt = net_table(runs, cfg)
    rows = _init_claims(study, init_table(runs, theory), an)
    if len(nt):
        rows += _fig2_claims(study, nt, an) + _threshold_claims(study, nt, batch_table(runs), an)
    return frame(rows)


def _init_claims(study: str, it: pd.DataFrame, an: dict) -> list[dict]:
    tau_min, k = float(an.get("tau_min", 0.6)), float(an.get("z_max", 3.0))
    want = float(an.get("within_fraction", 0.9))
    if not len(it):
        return []
    rows = []
    for cid, claim, x, by, sign in (
            ("diversity_rises_with_width[thm6]", ("At N(0,1) initialization (004's setting) the "
             "E-ratio (n x gradient diversity) rises with the width"), "width", "depth", +1),
            ("diversity_falls_with_depth[thm6]", ("At N(0,1) initialization (004's setting) the "
             "E-ratio falls with the depth"), "depth", "width", -1)):
        tau, desc = trend(it, x, "rho", by)
        rows.append(_tau_claim(study, cid, claim + " (004 Thm. 3 and its discussion)", SOURCE_THM,
                               tau, desc + f"; {int(it.draws.min())}+ draws per net", tau_min, sign))
    z_b = (it.rho - it.bound) / it.rho_se
    ok_b = bool((it.rho + k * it.rho_se >= it.bound).all())
    worst = it.loc[z_b.idxmin()]
    rows.append(row(study, "thm3_bound_holds", "The Thm. 3 (Eq. 4.1) lower bound holds for the "
                    "E-ratio rho = E[n sum ||grad f_i||^2] / E[||sum grad f_i||^2] of every net",
                    SOURCE_THM, measured=float(z_b.min()), expected="rho >= bound (z >= -k)",
                    tolerance=k, verdict="pass" if ok_b else "fail",
                    detail=(f"min over {len(it)} nets of (rho - bound)/SE at width "
                            f"{int(worst.width)}, depth {int(worst.depth)}: rho = {worst.rho:.4g} "
                            f"± {worst.rho_se:.2g}, bound = {worst.bound:.4g}; n = {int(worst.n)}, "
                            f"d = {int(worst.d)} (the bound is for n -> infinity; Thm. 6 at this n "
                            f"is {worst.thm6:.4g}); bound/rho from "
                            f"{(it.bound / it.rho).min():.2f} to {(it.bound / it.rho).max():.2f}")))
    z6 = (it.rho - it.thm6) / it.rho_se
    frac = float(np.mean(np.abs(z6) <= k))
    rel = it.rho / it.thm6 - 1
    rows.append(row(study, "thm6_expectation", "Thm. 6 gives the expected sums of squared "
                    "per-example gradient norms and of inner products (their ratio at the "
                    "data set's n) of linear nets at N(0,1) initialization",
                    SOURCE_THM, measured=frac,
                    expected=f">= {want:g} of nets with |rho - Thm. 6| <= {k:g} SE",
                    tolerance=want, verdict="pass" if frac >= want else "fail",
                    detail=(f"{len(it)} nets, {int(it.draws.min())}-{int(it.draws.max())} draws "
                            f"each; max |z| {np.nanmax(np.abs(z6)):.2f}; rho/Thm. 6 - 1 from "
                            f"{rel.min():+.3f} to {rel.max():+.3f} (median {rel.median():+.3f}); "
                            f"SE/rho median {(it.rho_se / it.rho).median():.3f}")))
    return rows


def _fig2_claims(study: str, nt: pd.DataFrame, an: dict) -> list[dict]:
    tau_min, budget = float(an.get("tau_min", 0.6)), float(an.get("fig2_epochs", 14))
    nt = nt.fillna({"largest_batch": 0.0})      # no converging batch size: below every batch
    rows = []
    for cid, claim, x, by, sign, y in (
            ("diversity_rises_with_width[train]", ("The gradient diversity averaged over "
             "training rises with the width (Fig. 2(a))"), "width", "depth", +1, "div_train"),
            ("diversity_falls_with_depth[train]", ("The gradient diversity averaged over "
             "training falls with the depth (Fig. 2(a))"), "depth", "width", -1, "div_train"),
            ("diversity_rises_with_width[init]", ("The gradient diversity of the trained nets "
             "at their initialization (fc init, the data set) rises with the width"),
             "width", "depth", +1, "div_init"),
            ("diversity_falls_with_depth[init]", ("The gradient diversity of the trained nets "
             "at their initialization falls with the depth"), "depth", "width", -1, "div_init"),
            ("largest_batch_rises_with_width", (f"The largest batch size converging to the loss "
             f"target within {budget:g} epochs rises with the width (Fig. 2(b))"), "width",
             "depth", +1, "largest_batch"),
            ("largest_batch_falls_with_depth", (f"The largest batch size converging within "
             f"{budget:g} epochs falls with the depth (Sec. 1: deeper nets are less amenable to "
             "large-batch training)"), "depth", "width", -1, "largest_batch")):
        tau, desc = trend(nt, x, y, by)
        if y == "largest_batch":
            desc += ("; no converging batch counts as 0; a group with one value counts as tau 0; "
                     "largest batch per net " + ", ".join(
                         f"K{int(r.width)}L{int(r.depth)}: {r.largest_batch:g}" for r in nt.itertuples()))
        elif y == "div_train":
            m = nt.groupby("depth").measurements.mean()
            desc += ("; the average runs over the measurements before the target is reached: mean "
                     "measurements per run by depth " + ", ".join(f"{k}: {v:.1f}" for k, v in m.items()))
        rows.append(_tau_claim(study, cid, claim, SOURCE_FIG2, tau, desc, tau_min, sign))
    for which, col in (("train", "div_train"), ("init", "div_init")):
        tau = kendall_tau(nt[col], nt.largest_batch)
        rows.append(_tau_claim(
            study, f"largest_batch_rises_with_diversity[{which}]",
            "The largest batch size converging within the budget grows with the gradient "
            f"diversity ({'averaged over training' if which == 'train' else 'at initialization'}"
            "; Fig. 2(c))", SOURCE_FIG2, tau,
            f"tau-b over {len(nt)} nets (no converging batch counts as 0); largest batch from "
            f"{nt.largest_batch.min():g} to {nt.largest_batch.max():g}", tau_min))
    return rows


def _threshold_claims(study: str, nt: pd.DataFrame, bt: pd.DataFrame, an: dict) -> list[dict]:
    tau_min, want = float(an.get("tau_min", 0.6)), float(an.get("within_fraction", 0.9))
    th_cfg = an.get("threshold", {})
    frac = float(nt.has_threshold.mean())
    bad = nt[~nt.has_threshold]
    rows = [row(study, "batch_threshold_exists", "For every net there is a batch-size "
                "threshold B*: up to B* the epochs to the target stay near their minimum, "
                "beyond it they grow", SOURCE_THRESH, measured=frac,
                expected=f">= {want:g} of nets", tolerance=want,
                verdict="pass" if frac >= want else "fail",
                detail=(f"flat: epochs <= max({th_cfg.get('flat_factor', 1.5)} e_min, e_min + 1)"
                        f"; growth: epochs at the largest batch >= "
                        f"{th_cfg.get('growth_factor', 2.0)} e_min; B* per net "
                        + ", ".join(f"K{int(r.width)}L{int(r.depth)}: {r.threshold:g}"
                                    for r in nt.itertuples())
                        + ("; no threshold: " + ", ".join(f"K{int(r.width)}L{int(r.depth)}"
                                                          for r in bad.itertuples())
                           if len(bad) else "")))]
    tau, desc = trend(nt[nt.has_threshold], "width", "threshold", "depth")
    rows.append(_tau_claim(study, "threshold_rises_with_width", "The batch threshold B* rises "
                           "with the width", SOURCE_THRESH, tau, desc, tau_min))
    tau, desc = trend(nt[nt.has_threshold], "depth", "threshold", "width")
    rows.append(_tau_claim(study, "threshold_falls_with_depth", "The observed threshold B* "
                           "becomes smaller when the network becomes deeper",
                           "004 Sec. 1 (contribution); Sec. 5, Fig. 3", tau, desc, tau_min, -1))
    top = bt[bt.batch_size == bt.batch_size.max()].copy()
    top["ep"] = top["median"].replace(np.inf, np.nan).fillna(top.budget + 1)
    tau, desc = trend(top, "width", "ep", "depth")
    rows.append(_tau_claim(study, "wider_fewer_epochs_at_large_batch", "At the largest batch "
                           f"size ({int(bt.batch_size.max())}) wider nets need fewer epochs to "
                           "the target", SOURCE_THRESH, tau,
                           desc + "; unconverged runs ranked as budget + 1 (a depth where none "
                           "converges counts as tau 0)", tau_min, -1))
    return rows
