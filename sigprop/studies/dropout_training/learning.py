"""Train a logistic network with dropout (or dropin) and measure it over training (002 §§9, 11).

Paper: Baldi & Sadowski, "The dropout learning algorithm" (2014), 002.  The
simulations of 002 §9.5-9.6 and §11.7 (Figs. 9.3-9.15, 11.1-11.3) train a logistic
classifier with dropout (keep 0.8 on the inputs, 0.5 on the hidden units) and sample
the dropout sub-networks of the weights at a few times of training; §11.6 trains the
same network with dropin.  This module is that experiment as plain functions:

* :func:`train` -- minibatch SGD with momentum on the softmax cross-entropy of the
  output layer's input sums, dropout/dropin on every non-output layer (no 1/p
  rescaling: the ensemble network scales by p, 002 Eq. 98), a snapshot callback at
  chosen steps.  Deterministic given its generators.
* :func:`measure_run` -- one run: trains a copy of the initial weights with dropout
  and another with dropin (same data order and same mask draws, so that the gate is
  the only difference), and returns long rows ``(step, layer, probe, metric, value)``.

Rows (``layer`` = hidden layer 1..L, 0 for whole-network metrics; ``probe`` encodes
``input * PROBE_STRIDE + unit`` (or pair / histogram bin), see :func:`probe_code`):

* at ``step`` 0 and the last step, per hidden unit and probe input (Figs. 9.3-9.9, 9.15):
  ``E, V, NWGM, W, se_e, se_nwgm, Esp, spE`` (:func:`sigprop.studies.dropout_training.monte_carlo.unit_stats`);
* same steps, per sampled pair (Figs. 9.12-9.14): ``pu_EOO, pu_WW`` (two units of hidden
  layer ``layer``), ``pc_EOO, pc_WW, pc_WijW`` (unit ``i`` of layer ``layer`` fed by
  unit ``j`` of layer ``layer - 1``);
* at every snapshot (Figs. 9.10-9.11, 11.2-11.3), per layer: ``traj_V`` (mean dropout
  variance over units and probe inputs), ``traj_gap`` (mean ``W(1-W) - V``),
  ``active_std_mean/_q05/_q95`` and ``inactive_std_mean`` over the (unit, input) pairs
  active (``E > active_threshold`` at the end of training) or not, ``n_active``;
  for one typical active and one typical inactive unit of each layer (probe input 0):
  ``typ_active_E/_q05/_q95/_std`` and ``typ_inactive_...`` (``probe`` = the unit);
  ``dropin_traj_V``, ``dropin_traj_gap`` for the dropin network;
* at every snapshot (layer 0): ``test_acc``, ``train_loss`` (dropout; deterministic
  ensemble network), ``dropin_test_acc``, ``dropin_train_loss``; at the end
  ``test_acc_mc``, ``dropin_test_acc_mc`` (ensemble average of the softmax over masks);
* at step 0 and the last step (Fig. 11.1): ``act_hist`` (counts of deterministic
  activations ``W`` in ``hist_bins`` bins of [0, 1]; ``probe`` = bin) and ``act_frac_below``
  (fraction below ``sparse_threshold``) per layer, over ``sparsity_inputs`` test inputs;
* cost (layer 0, last step): ``mc_seconds``, ``mc_macs``, ``mc_sample_units`` (samples x
  units summed over all Monte Carlo passes), ``train_seconds``.

Papers cited by prefix: 002 = Baldi, Sadowski (2014), doi:10.1016/j.artint.2014.02.004.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from . import monte_carlo as mc

PROBE_STRIDE = 1_000_000
UNIT_METRICS = ("E", "V", "NWGM", "W", "se_e", "se_nwgm", "Esp", "spE")
STREAM_BATCHES, STREAM_MASKS, STREAM_MC, STREAM_PROBES, STREAM_PAIRS = 1, 2, 3, 4, 5


def probe_code(inp, idx):
    """``probe`` of per-unit / per-pair rows: ``input * PROBE_STRIDE + index``."""
    return np.asarray(inp, np.int64) * PROBE_STRIDE + np.asarray(idx, np.int64)


def unit_interval(
    x_train: np.ndarray, x_test: np.ndarray, per_feature: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Inputs mapped affinely to [0, 1] by their training min and max, per feature (constant
    features -> 0) or over all features at once; test values clipped to [0, 1].  The paper's MNIST
    pixels lie in [0, 1] and our prepared data sets are standardised: for an image set standardised
    with one mean and SD per channel (MNIST), the global map recovers pixel/255 exactly; for a set
    standardised per feature (digits), the per-feature map gives each pixel its range [0, 1]."""
    a = x_train.reshape(len(x_train), -1).astype(np.float64)
    b = x_test.reshape(len(x_test), -1).astype(np.float64)
    lo, hi = (a.min(0), a.max(0)) if per_feature else (a.min(), a.max())
    span = np.where(hi > lo, hi - lo, 1.0)
    const = hi <= lo

    def f(z):
        return np.where(const, 0.0, np.clip((z - lo) / span, 0.0, 1.0))

    return f(a), f(b)


def snapshot_steps(steps: int, every: int) -> list[int]:
    """0, every, 2 every, ..., and the last step."""
    return sorted(set(range(0, steps + 1, max(1, every))) | {steps})


def train(
    weights,
    biases,
    x,
    y,
    *,
    steps: int,
    lr: float,
    momentum: float,
    batch_size: int,
    keeps: list[float],
    mode: str,
    gen_batch: torch.Generator,
    gen_mask: torch.Generator,
    snapshots: list[int],
    on_snapshot,
    weight_decay: float = 0.0,
) -> dict:
    """SGD with momentum on the cross-entropy of the softmax of the last layer's sums ``S^L``
    of masked networks (one fresh mask per example and step; 002 Eq. 49 gates).  Epochs are
    random permutations of the training set.  ``on_snapshot(step, weights, biases)`` runs
    (without gradients) before the update of every step in ``snapshots``.  Trains copies;
    returns ``{"loss": {step: mean minibatch loss since the previous snapshot}, "weights",
    "biases"}``."""
    ws = [w.detach().clone().requires_grad_(True) for w in weights]
    bs = [b.detach().clone().requires_grad_(True) for b in biases]
    opt = torch.optim.SGD(ws + bs, lr=lr, momentum=momentum, weight_decay=weight_decay)
    dims = [w.shape[1] for w in ws]
    n = x.shape[0]

    def order():
        """A random order of the examples, drawn on the batch generator's device (the CPU)."""
        return torch.randperm(n, generator=gen_batch, device=gen_batch.device).to(x.device)

    perm, pos = order(), 0
    snaps, losses, acc = set(snapshots), {}, []
    for step in range(steps + 1):
        if step in snaps:
            losses[step] = float(np.mean(acc)) if acc else float("nan")
            acc = []
            with torch.no_grad():
                on_snapshot(step, [w.detach() for w in ws], [b.detach() for b in bs])
        if step == steps:
            break
        if pos + batch_size > n:
            perm, pos = order(), 0
        idx = perm[pos : pos + batch_size]
        pos += batch_size
        masks = mc.draw_masks(gen_mask, len(idx), dims, keeps, x.dtype, x.device)
        S, _ = mc.mc_forward(ws, bs, x[idx], masks, mode)
        loss = F.cross_entropy(S[-1], y[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        acc.append(float(loss.detach()))
    return {"loss": losses, "weights": [w.detach() for w in ws], "biases": [b.detach() for b in bs]}


def det_accuracy(weights, biases, x, y, keeps, mode) -> float:
    U, _ = mc.det_forward(weights, biases, x, keeps, mode)
    return float((U[-1].argmax(1) == y).double().mean())


def mc_accuracy(weights, biases, x, y, keeps, mode, n: int, gen: torch.Generator) -> float:
    """Accuracy of the Monte Carlo ensemble: softmax averaged over ``n`` masks per input."""
    dims = [w.shape[1] for w in weights]
    p = torch.zeros(x.shape[0], weights[-1].shape[0], dtype=x.dtype, device=x.device)
    for _ in range(n):
        masks = mc.draw_masks(gen, x.shape[0], dims, keeps, x.dtype, x.device)
        S, _ = mc.mc_forward(weights, biases, x, masks, mode)
        p += torch.softmax(S[-1], 1)
    return float((p.argmax(1) == y).double().mean())


def sample_pairs(widths: list[int], n_pairs: int, gen: np.random.Generator) -> dict:
    """Random unit pairs per hidden layer ``l`` (1-based, ``widths`` = hidden widths):
    ``("u", l)``: two distinct units of layer ``l``; ``("c", l)``, ``l >= 2``: unit ``i`` of
    layer ``l`` and unit ``j`` of layer ``l - 1`` (connected, ``j -> i``)."""
    out = {}
    for l, n_l in enumerate(widths, start=1):
        i = gen.integers(0, n_l, n_pairs)
        j = (i + gen.integers(1, n_l, n_pairs)) % n_l
        out[("u", l)] = (i, j)
        if l >= 2:
            out[("c", l)] = (gen.integers(0, n_l, n_pairs), gen.integers(0, widths[l - 2], n_pairs))
    return out


def _rows(step, layer, probe, metric, value) -> pd.DataFrame:
    v = np.asarray(value, float).ravel()
    return pd.DataFrame(
        {
            "step": step,
            "layer": layer,
            "probe": np.broadcast_to(np.asarray(probe, np.int64), v.shape),
            "metric": metric,
            "value": v,
        }
    )


class _Recorder:
    """Per-snapshot Monte Carlo of one network (one mode): the trajectory arrays and, at the
    detail steps, the per-unit and per-pair rows."""

    def __init__(self, mode, keeps, probes, data, p, pairs, key, detail_steps, device):
        self.mode, self.keeps, self.probes, self.data, self.p = mode, keeps, probes, data, p
        self.pairs, self.key, self.detail, self.device = pairs, key, set(detail_steps), device
        self.traj = {}  # step -> {"E","V","W": [layers] of [inputs, units]; "q": [layers] [3, units]}
        self.acc, self.rows = {}, []
        self.mc_seconds = self.mc_macs = self.mc_sample_units = 0.0

    def _mc(self, ws, bs, x, n, gen, pairs=None, quantiles=()):
        t0 = time.perf_counter()
        r = mc.mc_input_stats(
            ws,
            bs,
            x,
            self.keeps,
            n,
            gen,
            self.mode,
            int(self.p.get("mc_chunk", 0)),
            pairs,
            quantiles,
        )
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        self.mc_seconds += time.perf_counter() - t0
        widths = [ws[0].shape[1]] + [w.shape[0] for w in ws]
        self.mc_macs += mc.mc_cost(n, widths)
        self.mc_sample_units += n * sum(widths[1:])
        return r

    def __call__(self, step, ws, bs):
        d, L = self.data, len(ws) - 1
        self.acc[step] = det_accuracy(ws, bs, d["x_test"], d["y_test"], self.keeps, self.mode)
        gen = mc.seeded_generator(self.key, STREAM_MC * 100_000 + step, self.device)
        E, V, W, q = ([[] for _ in range(L)] for _ in range(4))
        for k, x in enumerate(self.probes):
            r = self._mc(
                ws,
                bs,
                x,
                int(self.p["mc_samples_trajectory"]),
                gen,
                quantiles=(0.05, 0.95) if k == 0 else (),
            )
            for l in range(L):
                u = r["units"][l]
                E[l].append(u["E"])
                V[l].append(u["V"])
                W[l].append(u["W"])
                if k == 0:
                    q[l] = torch.stack([r["quantiles"][l][0], u["E"], r["quantiles"][l][1]])

        def st(a):
            return [torch.stack(v).cpu().numpy() for v in a]

        self.traj[step] = {"E": st(E), "V": st(V), "W": st(W), "q": [v.cpu().numpy() for v in q]}
        if step in self.detail and self.mode == "dropout":
            self._detail(step, ws, bs)

    def _detail(self, step, ws, bs):
        L = len(ws) - 1
        gen = mc.seeded_generator(self.key, STREAM_MC * 100_000 + 50_000 + step, self.device)
        pairs_t = {}
        for (kind, l), (i, j) in self.pairs.items():
            ti, tj = (torch.as_tensor(a, device=self.device) for a in (i, j))
            pairs_t[(kind, l)] = (l - 1, ti, l - 1, tj) if kind == "u" else (l - 1, ti, l - 2, tj)
        for k, x in enumerate(self.probes):
            r = self._mc(ws, bs, x, int(self.p["mc_samples"]), gen, pairs=pairs_t)
            U, Wd = mc.det_forward(ws, bs, x[None, :], self.keeps, self.mode)
            for l in range(L):
                u = r["units"][l]
                probe = probe_code(k, np.arange(u["E"].shape[0]))
                for m in UNIT_METRICS:
                    self.rows.append(_rows(step, l + 1, probe, m, u[m].cpu().numpy()))
            for (kind, l), (i, j) in self.pairs.items():
                probe = probe_code(k, np.arange(len(i)))
                eoo = r["pairs"][(kind, l)].cpu().numpy()
                wi, wj = (
                    Wd[l - 1][0].cpu().numpy()[i],
                    Wd[l - 2 if kind == "c" else l - 1][0].cpu().numpy()[j],
                )
                self.rows.append(_rows(step, l, probe, f"p{kind}_EOO", eoo))
                self.rows.append(_rows(step, l, probe, f"p{kind}_WW", wi * wj))
                if kind == "c":
                    ti, tj = (
                        torch.as_tensor(i, device=self.device),
                        torch.as_tensor(j, device=self.device),
                    )
                    wij = (
                        mc.connected_w_removed(
                            U[l - 1][0][ti],
                            ws[l - 1][ti, tj],
                            self.keeps[l - 1],
                            Wd[l - 2][0][tj],
                            self.mode,
                        )
                        .cpu()
                        .numpy()
                    )
                    self.rows.append(_rows(step, l, probe, "pc_WijW", wij * wj))


def _trajectory_rows(
    traj: dict, thr: float, prefix: str = "", full: bool = True
) -> list[pd.DataFrame]:
    steps = sorted(traj)
    last = traj[steps[-1]]
    L = len(last["E"])
    rows = []
    for l in range(L):
        active = last["E"][l] > thr  # [inputs, units] at the end of training
        e0 = last["q"][l][1] if full else None  # probe input 0, final E per unit
        if full:
            sd_end = np.sqrt(last["V"][l][0])
            act_units = np.flatnonzero(e0 > thr)
            ina_units = np.flatnonzero(e0 <= thr)
            typ = {}
            for name, units in (("active", act_units), ("inactive", ina_units)):
                if len(units):
                    order = units[np.argsort(sd_end[units], kind="stable")]
                    typ[name] = int(order[len(order) // 2])
        for s in steps:
            t = traj[s]
            V, W = t["V"][l], t["W"][l]
            rows.append(_rows(s, l + 1, 0, f"{prefix}traj_V", V.mean()))
            rows.append(_rows(s, l + 1, 0, f"{prefix}traj_gap", (W * (1 - W) - V).mean()))
            if not full:
                continue
            sd = np.sqrt(V)
            rows.append(_rows(s, l + 1, 0, "n_active", active.sum()))
            if active.any():
                a = sd[active]
                rows.append(_rows(s, l + 1, 0, "active_std_mean", a.mean()))
                rows.append(_rows(s, l + 1, 0, "active_std_q05", np.quantile(a, 0.05)))
                rows.append(_rows(s, l + 1, 0, "active_std_q95", np.quantile(a, 0.95)))
            if (~active).any():
                rows.append(_rows(s, l + 1, 0, "inactive_std_mean", sd[~active].mean()))
            for name, u in typ.items():
                q = t["q"][l][:, u]
                for m, v in (("q05", q[0]), ("E", q[1]), ("q95", q[2]), ("std", np.sqrt(V[0, u]))):
                    rows.append(_rows(s, l + 1, u, f"typ_{name}_{m}", v))
    return rows


def _sparsity_rows(step, ws, bs, x, keeps, bins: int, thr: float) -> list[pd.DataFrame]:
    _, W = mc.det_forward(ws, bs, x, keeps, "dropout")
    rows = []
    for l, w in enumerate(W[:-1], start=1):
        a = w.cpu().numpy().ravel()
        counts, _ = np.histogram(a, bins=bins, range=(0.0, 1.0))
        rows.append(_rows(step, l, np.arange(bins), "act_hist", counts))
        rows.append(_rows(step, l, 0, "act_frac_below", np.mean(a < thr)))
    return rows


def measure_run(
    weights, biases, data: dict, run, p: dict, input_keep: float, device: torch.device
) -> pd.DataFrame:
    """All rows of one run (see the module docstring).  ``data``: tensors ``x_train, y_train,
    x_test, y_test`` on ``device`` (inputs in [0, 1], flattened); ``run``: a RunSpec
    (``keep_rate`` = hidden keep, ``steps, eval_every, lr, momentum, batch_size,
    weight_decay``, ``key``); ``p``: the scale's Monte Carlo parameters."""
    keeps = mc.layer_keeps(len(weights), input_keep, run.keep_rate)
    steps = snapshot_steps(run.steps, run.eval_every)
    detail = [0, run.steps]
    rng = np.random.default_rng(mc.seeded_generator(run.key, STREAM_PROBES).initial_seed())
    n_test = data["x_test"].shape[0]
    probe_idx = rng.choice(n_test, size=min(int(p["n_inputs"]), n_test), replace=False)
    probes = [data["x_test"][i] for i in probe_idx]
    hidden = [w.shape[0] for w in weights[:-1]]
    pairs = sample_pairs(
        hidden,
        int(p["pairs_per_layer"]),
        np.random.default_rng(mc.seeded_generator(run.key, STREAM_PAIRS).initial_seed()),
    )
    thr_act, thr_sparse = float(p["active_threshold"]), float(p["sparse_threshold"])
    xs = data["x_test"][: int(p["sparsity_inputs"])]
    out, costs = [], {}
    for mode in mc.MODES:
        rec = _Recorder(mode, keeps, probes, data, p, pairs, run.key, detail, device)
        t0 = time.perf_counter()
        res = train(
            weights,
            biases,
            data["x_train"],
            data["y_train"],
            steps=run.steps,
            lr=run.lr,
            momentum=run.momentum,
            batch_size=run.batch_size,
            keeps=keeps,
            mode=mode,
            gen_batch=mc.seeded_generator(run.key, STREAM_BATCHES),
            gen_mask=mc.seeded_generator(run.key, STREAM_MASKS, device),
            snapshots=steps,
            on_snapshot=rec,
            weight_decay=run.weight_decay,
        )
        elapsed = time.perf_counter() - t0
        pre = "" if mode == "dropout" else "dropin_"
        for s in steps:
            out.append(_rows(s, 0, 0, f"{pre}test_acc", rec.acc[s]))
            out.append(_rows(s, 0, 0, f"{pre}train_loss", res["loss"][s]))
        gen = mc.seeded_generator(run.key, STREAM_MC * 100_000 + 99_999, device)
        out.append(
            _rows(
                run.steps,
                0,
                0,
                f"{pre}test_acc_mc",
                mc_accuracy(
                    res["weights"],
                    res["biases"],
                    data["x_test"],
                    data["y_test"],
                    keeps,
                    mode,
                    int(p["mc_eval_samples"]),
                    gen,
                ),
            )
        )
        out += _trajectory_rows(rec.traj, thr_act, pre, full=(mode == "dropout"))
        if mode == "dropout":
            out += rec.rows
            for s, (ws, bs) in (
                (0, (weights, biases)),
                (run.steps, (res["weights"], res["biases"])),
            ):
                out += _sparsity_rows(s, ws, bs, xs, keeps, int(p["hist_bins"]), thr_sparse)
        costs[f"{pre}mc_seconds"] = rec.mc_seconds
        costs[f"{pre}train_seconds"] = elapsed - rec.mc_seconds
        costs[f"{pre}mc_macs"] = rec.mc_macs
        costs[f"{pre}mc_sample_units"] = rec.mc_sample_units
    for k, v in costs.items():
        out.append(_rows(run.steps, 0, 0, k, v))
    return pd.concat(out, ignore_index=True)
