"""Epochs to target, learning-rate tuning, batch thresholds and the Thm. 3 bound per net, shared
by the figures and the claims (Chen, Wang, Zhao, Papailiopoulos & Koutris 2018,
arXiv:1806.03791, Sec. 5, Figs. 1, 3-5)."""

from __future__ import annotations

import numpy as np
import pandas as pd

NET = ["panel", "arch", "dataset", "depth", "width", "head_depth", "head_width"]  # one net


def model_epochs(step, batch_size, micro_batch, n_train):
    """Epochs a model has done at ``step``: ``t c / ((n // b) b)`` with c = micro_batch (or b)."""
    b = np.asarray(batch_size, dtype=float)
    c = np.where(np.asarray(micro_batch) > 0, micro_batch, b)
    return np.asarray(step, dtype=float) * c / (np.floor(n_train / b) * b)


def per_run(runs: pd.DataFrame, a) -> pd.DataFrame:
    """One row per run: its fields, ``panel`` (the label of the config block that made it, the
    ``block`` column: one panel per data set and architecture), ``tune_loss`` (training loss at
    ``tune_epochs`` epochs, linear in epochs between the two evaluations around it; +inf if
    diverged by then) and ``epochs`` (model epochs at the first evaluation with training
    accuracy >= the panel's target; NaN if never within the budget).  ``a``: the study's
    ``analysis`` parameters."""
    from ...data.sizes import train_size

    tune = float(a.tune_epochs)
    targets = a.targets
    default_target = np.nan if a.default_target is None else a.default_target
    runs = runs.assign(panel=runs.block.astype(object))
    n_by_ds = {ds: train_size(ds) for ds in runs.dataset.unique()}
    out = []
    for _rid, d in runs.groupby("run_id", sort=False):
        f = d.iloc[0]
        n = n_by_ds[f.dataset]
        target = float(targets.get(f.panel, default_target))
        rec = {
            k: f[k]
            for k in (
                "run_id",
                "panel",
                "dataset",
                "arch",
                "depth",
                "width",
                "head_depth",
                "head_width",
                "batch_size",
                "micro_batch",
                "lr",
                "seed",
            )
            if k in f.index
        }
        loss = d[d.metric == "train_loss"].sort_values("step")
        acc = d[d.metric == "train_acc"].sort_values("step")
        e_loss = model_epochs(loss.step, f.batch_size, f.micro_batch, n)
        v = loss.value.to_numpy(dtype=float)
        v = np.where(np.isfinite(v), v, np.inf)
        rec["tune_loss"] = (
            float(np.interp(tune, e_loss, v)) if len(v) and e_loss[-1] >= tune else np.nan
        )
        e_acc = model_epochs(acc.step, f.batch_size, f.micro_batch, n)
        hit = np.nonzero(acc.value.to_numpy(dtype=float) >= target)[0]
        rec["epochs"] = float(e_acc[hit[0]]) if len(hit) else np.nan
        rec["budget"] = float(e_acc[-1]) if len(e_acc) else np.nan
        rec["target"] = target
        out.append(rec)
    return pd.DataFrame(out)


def tuned(pr: pd.DataFrame) -> pd.DataFrame:
    """Per (net, batch): the rate with the lowest mean tuning loss over seeds (004 Sec. 5) and,
    at that rate, the mean epochs to target over seeds (NaN unless every seed reached it),
    ``n_reached`` of ``n_seeds``, and the budget in epochs."""
    keys = [k for k in NET if k in pr] + ["batch_size"]
    rows = []
    for key, d in pr.groupby(keys, sort=True, dropna=False):
        by_lr = d.groupby("lr").tune_loss.mean()
        by_lr = by_lr[np.isfinite(by_lr)]
        rec = dict(zip(keys, key))
        if by_lr.empty:
            rec.update(
                lr=np.nan,
                epochs=np.nan,
                n_reached=0,
                n_seeds=int(d.seed.nunique()),
                budget=float(d.budget.min()),
                tune_loss=np.nan,
            )
        else:
            lr = float(by_lr.idxmin())
            s = d[d.lr == lr]
            reached = s.epochs.notna()
            rec.update(
                lr=lr,
                tune_loss=float(by_lr.min()),
                n_reached=int(reached.sum()),
                n_seeds=len(s),
                budget=float(s.budget.min()),
                epochs=float(s.epochs.mean()) if reached.all() else np.nan,
            )
        rows.append(rec)
    return pd.DataFrame(rows)


def curves(runs: pd.DataFrame, a) -> pd.DataFrame:
    """:func:`tuned` of :func:`per_run`: the table behind every figure and claim."""
    return tuned(per_run(runs, a))


def threshold(batch, epochs, factor: float) -> float:
    """B*: the largest batch whose epochs are <= ``factor`` x the fewest (NaN if none reached)."""
    b, e = np.asarray(batch, float), np.asarray(epochs, float)
    ok = np.isfinite(e)
    if not ok.any():
        return np.nan
    return float(b[ok & (e <= factor * e[ok].min())].max())


def largest_within(batch, epochs, budget: float) -> float:
    """Largest batch reaching the target within ``budget`` epochs (NaN if none; 004 Fig. 5)."""
    b, e = np.asarray(batch, float), np.asarray(epochs, float)
    ok = np.isfinite(e) & (e <= budget)
    return float(b[ok].max()) if ok.any() else np.nan


def diversity_bound(arch: str, dataset: str, width: int, depth: int) -> float:
    """004 Thm. 3 equal-width bound ``1/((L-1)/(2(K-1)) + 2/(d-1))`` for a linear fc net with the
    run's input size d, hidden width K and ``depth`` hidden layers (L = depth + 1 weight layers)."""
    from ...data.sizes import fc_input_dim
    from ...theory.diversity import linear_equal_width_lower_bound

    d = fc_input_dim(arch, dataset, width) if arch == "fc" else np.nan
    return float(linear_equal_width_lower_bound(d, width, depth + 1))


def net_table(c: pd.DataFrame, a) -> pd.DataFrame:
    """Per net: K, L, B*, the largest batch within each budget and the Thm. 3 bound
    (``a``: the study's ``analysis`` parameters)."""
    factor = float(a.threshold_factor)
    budgets = [float(x) for x in a.budgets]
    rows = []
    for key, d in c.groupby([k for k in NET if k in c], sort=True, dropna=False):
        rec = dict(zip([k for k in NET if k in c], key))
        d = d.sort_values("batch_size")
        rec["threshold"] = threshold(d.batch_size, d.epochs, factor)
        rec["max_batch"] = float(d.batch_size.max())
        rec["epochs_at_max_batch"] = float(d.epochs.iloc[-1])
        rec["fewest_epochs"] = float(np.nanmin(d.epochs)) if d.epochs.notna().any() else np.nan
        for bud in budgets:
            rec[f"largest_within_{bud:g}"] = largest_within(d.batch_size, d.epochs, bud)
        rows.append(rec)
    return pd.DataFrame(rows)
