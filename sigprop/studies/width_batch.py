"""Study: network width, depth and large-batch training at a fixed parameter count.

Paper: 004 Chen, Wang, Zhao, Papailiopoulos, Koutris, "The Effect of Network Width on the
Performance of Large-batch Training", Sec. 5, Figs. 1, 3, 4, 5 and Table 1.  For a fixed number
of weights p, nets of depth L and width K (``d_in K + (L-1) K^2 + K d_out = p``, the config's
``derived: {width: {params: p}}``) are trained by SGD at batch sizes 2^5..2^12.  Per (net, batch)
the learning rate is tuned by the paper's protocol (the grid rate with the lowest training loss
after 2 epochs) and the epochs to reach the Table 1 training accuracy are read at that rate.

All rates, batch sizes and seeds of a net train in one micro-batched shard
(``RunSpec.micro_batch``) for the whole epoch budget; a model's epoch count at step t is
``t c / ((n // b) b)`` (c examples per micro-step, batch b, n training examples, last partial
batch dropped), see :func:`model_epochs`.

Outputs (figures in :mod:`sigprop.figures.width_batch`):

* ``width_batch_epochs`` (Figs. 1, 3): epochs to target against batch size, one curve per net;
* ``width_batch_heatmap`` (Fig. 4): the same as a depth x batch heat map;
* ``width_batch_largest`` (Fig. 5): the largest batch reaching the target within a few epoch
  budgets, per net, with the linear-net theory's diversity bound (Thm. 3, equal widths, text after
  it) as the theory curve on a second axis.

Claims (tolerances in ``analysis:``, fixed before any result was seen), per panel:

1. ``threshold_exists`` (Sec. 5 finding 1): a batch threshold B* (the largest batch whose
   epochs are within ``threshold_factor`` of the net's fewest) below the largest batch, for at
   least ``min_fraction`` of the nets that reached the target;
2. ``threshold_grows_with_width`` (finding 2): Kendall's tau between width K and B* >= ``min_tau``;
3. ``wide_fewer_epochs_at_large_batch`` (finding 3): at the largest batch, Kendall's tau between
   K and minus the epochs >= ``min_tau`` (a net that never reached the target counts as slowest);
4. ``largest_batch_follows_diversity_bound`` (Secs. 3-4: larger diversity allows larger batches):
   Kendall's tau between the Thm. 3 bound and the largest batch within the middle budget >=
   ``min_tau``.  The bound is proven for linear nets only; here it ranks ReLU nets.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..claims import frame, kendall_tau, row
from ..figures.width_batch import epochs_curves, epochs_heatmap, largest_batch_plot

TASK = "train"
FIGURES = {"width_batch_epochs": epochs_curves, "width_batch_heatmap": epochs_heatmap,
           "width_batch_largest": largest_batch_plot}
CAPTIONS = {
    "width_batch_epochs": (
        "Epochs to reach the target training accuracy (the panel's 004 Table 1 value) against "
        "batch size, for nets of depth L and width K with about the same number of weights (004 "
        "Figs. 1, 3). Each point uses the learning rate tuned by the paper's protocol (lowest "
        "training loss after 2 epochs) and is the mean over seeds; open markers at the top: the "
        "target was not reached within the epoch budget. Dotted verticals: each net's batch "
        "threshold B* (largest batch within the threshold factor of the net's fewest epochs)."),
    "width_batch_heatmap": (
        "Epochs to the target training accuracy by depth L (width K in brackets) and batch size, "
        "as 004 Fig. 4; blank: not reached within the budget."),
    "width_batch_largest": (
        "Largest batch size that reaches the target training accuracy within a fixed number of "
        "epochs, per net (004 Fig. 5), coloured lines and left axis (crosses on the bottom line: "
        "no batch size reached it in time). Black dashed, right axis (theory): the "
        "lower bound of 004 Thm. 3 (equal widths, text after it) on the gradient-diversity ratio of "
        "a linear net with the same input size, widths and depth, 1 / ((L-1)/(2(K-1)) + 2/(d-1)) "
        "with L counting weight layers; the paper proves it for linear nets only."),
}
SOURCE = "004 Sec. 5, Figs. 1, 3-5"
NET = ["panel", "arch", "dataset", "depth", "width", "head_depth", "head_width"]  # one net


def theory_table(study: str, theory_cfg: dict, settings: list[dict]) -> pd.DataFrame:
    """No per-setting theory: the Thm. 3 bound depends on each net's widths and is computed
    with the runs (:func:`diversity_bound`)."""
    return pd.DataFrame(columns=["study", "quantity", "value"])


# ------------------------------------------------------------------ per-run measurements
def model_epochs(step, batch_size, micro_batch, n_train):
    """Epochs a model has done at ``step``: ``t c / ((n // b) b)`` with c = micro_batch (or b)."""
    b = np.asarray(batch_size, dtype=float)
    c = np.where(np.asarray(micro_batch) > 0, micro_batch, b)
    return np.asarray(step, dtype=float) * c / (np.floor(n_train / b) * b)


def with_panels(runs: pd.DataFrame, cfg: dict) -> pd.DataFrame:
    """Runs with ``panel``: the label of the config block that made them (one panel per data
    set and architecture); the panel ``all`` when the config carries no scale."""
    from ..config import run_labels
    if "scale" not in cfg or "scales" not in cfg:
        return runs.assign(panel="all")
    labels = run_labels(cfg, cfg["scale"], cfg.get("name", "<study>"))
    return runs.assign(panel=runs.run_id.map(labels).fillna("all"))


def per_run(runs: pd.DataFrame, cfg: dict) -> pd.DataFrame:
    """One row per run: its fields, ``tune_loss`` (training loss at ``tune_epochs`` epochs,
    linear in epochs between the two evaluations around it; +inf if diverged by then) and
    ``epochs`` (model epochs at the first evaluation with training accuracy >= the panel's
    target; NaN if never within the budget)."""
    from ..config import train_size
    a = cfg.get("analysis", {})
    tune = float(a.get("tune_epochs", 2.0))
    targets = a.get("targets", {})
    runs = with_panels(runs, cfg)
    n_by_ds = {ds: train_size(ds) for ds in runs.dataset.unique()}
    out = []
    for rid, d in runs.groupby("run_id", sort=False):
        f = d.iloc[0]
        n = n_by_ds[f.dataset]
        target = float(targets.get(f.panel, a.get("default_target", np.nan)))
        rec = {k: f[k] for k in ("run_id", "panel", "dataset", "arch", "depth", "width",
                                 "head_depth", "head_width", "batch_size", "micro_batch", "lr",
                                 "seed") if k in f.index}
        loss = d[d.metric == "train_loss"].sort_values("step")
        acc = d[d.metric == "train_acc"].sort_values("step")
        e_loss = model_epochs(loss.step, f.batch_size, f.micro_batch, n)
        v = loss.value.to_numpy(dtype=float)
        v = np.where(np.isfinite(v), v, np.inf)
        rec["tune_loss"] = (float(np.interp(tune, e_loss, v)) if len(v) and e_loss[-1] >= tune
                            else np.nan)
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
            rec.update(lr=np.nan, epochs=np.nan, n_reached=0, n_seeds=int(d.seed.nunique()),
                       budget=float(d.budget.min()), tune_loss=np.nan)
        else:
            lr = float(by_lr.idxmin())
            s = d[d.lr == lr]
            reached = s.epochs.notna()
            rec.update(lr=lr, tune_loss=float(by_lr.min()), n_reached=int(reached.sum()),
                       n_seeds=len(s), budget=float(s.budget.min()),
                       epochs=float(s.epochs.mean()) if reached.all() else np.nan)
        rows.append(rec)
    return pd.DataFrame(rows)


def curves(runs: pd.DataFrame, cfg: dict) -> pd.DataFrame:
    """:func:`tuned` of :func:`per_run`: the table behind every figure and claim."""
    return tuned(per_run(runs, cfg))


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
    from ..config import fc_input_dim
    from ..theory.diversity import linear_equal_width_lower_bound
    d = fc_input_dim(arch, dataset, width) if arch == "fc" else np.nan
    return float(linear_equal_width_lower_bound(d, width, depth + 1))


def net_table(c: pd.DataFrame, cfg: dict) -> pd.DataFrame:
    """Per net: K, L, B*, the largest batch within each budget and the Thm. 3 bound."""
    a = cfg.get("analysis", {})
    factor = float(a.get("threshold_factor", 1.5))
    budgets = [float(x) for x in a.get("budgets", [10])]
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



# ------------------------------------------------------------------ claims
def _verdict(tau: float, need: float) -> str:
    if not np.isfinite(tau):
        return "inconclusive"
    return "pass" if tau >= need else "fail"


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, cfg: dict) -> pd.DataFrame:
    study = cfg.get("name", "width_batch")
    a = cfg.get("analysis", {})
    need, frac = float(a["min_tau"]), float(a["min_fraction"])
    factor = float(a["threshold_factor"])
    budgets = [float(x) for x in a["budgets"]]
    mid = budgets[len(budgets) // 2]
    c = curves(runs, cfg)
    rows = []
    for panel, cp in c.groupby("panel", sort=False):
        nets = net_table(cp, cfg)
        wide = nets.head_width if (nets.get("head_depth", pd.Series([0])) > 0).any() else nets.width
        wide = wide.astype(float)
        reached = nets[nets.threshold.notna()]
        below = (reached.threshold < reached.max_batch)
        f = float(below.mean()) if len(reached) else np.nan
        desc = "; ".join(f"L={int(r.depth)},K={int(r.width)}: B*={r.threshold:g}"
                         for r in nets.itertuples())
        rows.append(row(study, f"threshold_exists[{panel}]",
                        "A batch threshold exists beyond which more epochs are needed",
                        SOURCE + " (finding 1)", measured=f,
                        expected=f"fraction of nets with B* < largest batch >= {frac:g}",
                        tolerance=frac,
                        verdict="inconclusive" if not np.isfinite(f) else
                        ("pass" if f >= frac else "fail"),
                        detail=f"B* = largest batch with epochs <= {factor:g} x fewest; " + desc,
                        values={"n_nets": len(reached)}))
        t_thr = kendall_tau(wide, reached.threshold.reindex(nets.index))
        rows.append(row(study, f"threshold_grows_with_width[{panel}]",
                        "The batch threshold grows with width (at a fixed parameter count)",
                        SOURCE + " (finding 2)", measured=t_thr,
                        expected=f"Kendall tau(K, B*) >= {need:g}", tolerance=need,
                        verdict=_verdict(t_thr, need), detail=desc))
        slow = nets.epochs_at_max_batch.fillna(np.inf)
        t_big = kendall_tau(wide, -slow.replace(np.inf, 1e300))
        rows.append(row(study, f"wide_fewer_epochs_at_large_batch[{panel}]",
                        "At the largest batch, wider nets need fewer epochs",
                        SOURCE + " (finding 3)", measured=t_big,
                        expected=f"Kendall tau(K, -epochs at b={nets.max_batch.max():g}) >= {need:g}",
                        tolerance=need, verdict=_verdict(t_big, need),
                        detail="; ".join(f"K={int(k)}: {e:.3g}" for k, e in
                                         zip(wide, nets.epochs_at_max_batch))
                        + " (nan: not reached within the budget, ranked slowest)"))
        arch, ds = nets.arch.iloc[0], nets.dataset.iloc[0]   # a panel is one arch on one data set
        if arch != "fc":  # Thm. 3 is for fully connected nets: no bound for LeNet / ResNet panels
            continue
        bound = [diversity_bound(arch, ds, int(r.width), int(r.depth)) for r in nets.itertuples()]
        lb = nets[f"largest_within_{mid:g}"]
        t_div = kendall_tau(bound, lb.fillna(0.0))
        rows.append(row(study, f"largest_batch_follows_diversity_bound[{panel}]",
                        "Nets with larger gradient diversity (004 Thm. 3 bound) reach the target "
                        f"with larger batches within {mid:g} epochs", "004 Secs. 3-4, Thm. 3, Fig. 5",
                        measured=t_div, expected=f"Kendall tau(bound, largest batch) >= {need:g}",
                        tolerance=need, verdict=_verdict(t_div, need),
                        detail="; ".join(f"L={int(r.depth)},K={int(r.width)}: bound {b:.3g}, "
                                         f"largest batch {x:g}" for r, b, x in
                                         zip(nets.itertuples(), bound, lb))
                        + " (nan: no batch within the budget, ranked lowest); the bound is "
                          "proven for linear nets, these are ReLU nets"))
    return frame(rows)
