"""Tables of the runs shared by the figures and the claims (Chen, Wang, Zhao, Papailiopoulos &
Koutris 2018, arXiv:1806.03791, Sec. 5, Thms. 3 and 6): the E-ratio at initialization against
theory, per-run and per-net summaries, the batch threshold."""

from __future__ import annotations

import numpy as np
import pandas as pd


def theory_ratio(
    theory: pd.DataFrame, width, depth: int, n: float
) -> tuple[np.ndarray, np.ndarray]:
    """(Thm. 6 E-ratio at n, Thm. 3 bound) at the given widths of one depth, from the theory table."""
    t = theory[theory.depth == depth].pivot_table(index="width", columns="quantity", values="value")
    w = np.asarray(width, int)
    if not set(w) <= set(t.index):
        raise ValueError(
            f"theory table has widths {t.index.min()}..{t.index.max()} at depth {depth}; "
            f"need {sorted(set(w))} (raise theory.width_max / depth_max)"
        )
    A, C = t.loc[w, "sq_norm_thm8"].to_numpy(), t.loc[w, "inner_thm6"].to_numpy()
    return n * A / (A + (n - 1) * C), t.loc[w, "bound_thm3"].to_numpy()


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
    var = (c[0, 0] / a**2 + c[1, 1] / b**2 - 2 * c[0, 1] / (a * b)) / k
    return r, r * np.sqrt(max(var, 0.0))


def init_table(runs: pd.DataFrame, theory: pd.DataFrame) -> pd.DataFrame:
    """Per net (width, depth): the Thm. 3/6 E-ratio estimate from the init draws (all runs), its SE,
    the number of draws, Thm. 6 at n and the Thm. 3 bound."""
    r = runs[runs.metric.isin(["init_num", "init_den"])]
    if not len(r):
        return pd.DataFrame(
            columns=["width", "depth", "rho", "rho_se", "draws", "thm6", "bound", "n", "d"]
        )
    n = float(_metric(runs, "n_train").value.iloc[0])
    d = float(_metric(runs, "d_in").value.iloc[0])
    w = r.pivot_table(index=["width", "depth", "run_id", "probe"], columns="metric", values="value")
    out = []
    for (width, depth), g in w.groupby(level=["width", "depth"]):
        rho, se = _ratio_of_means(g.init_num.to_numpy(), g.init_den.to_numpy(), n)
        out.append(
            {
                "width": int(width),
                "depth": int(depth),
                "rho": rho,
                "rho_se": se,
                "draws": len(g),
                "n": n,
                "d": d,
            }
        )
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
        raise ValueError(
            f"theory table computed for d_in {sorted(td)} but the training set has "
            f"d = {int(d)}: set theory.d_in in the study config"
        )


def progress(loss: np.ndarray, target: float) -> np.ndarray:
    """Training progress at each epoch: the fraction of the log-loss decrease from the initial
    loss to ``target`` achieved so far, ``log(L_0 / min_{s <= t} L_s) / log(L_0 / target)``
    (0 at initialization, 1 at the target; the running minimum keeps it monotone)."""
    loss = np.asarray(loss, float)
    best = np.minimum.accumulate(np.where(np.isfinite(loss), loss, np.inf))
    span = np.log(loss[0] / target)
    if not (np.isfinite(span) and span > 0):
        return np.full(len(loss), np.nan)
    return np.clip(np.log(loss[0] / best) / span, 0.0, None)


def window_diversity(
    epochs, diversity, loss_epochs, loss, target: float, upto: float, points: int
) -> float:
    """The gradient diversity of one run averaged over a window of matched progress: log
    diversity interpolated linearly in progress (:func:`progress`) between the run's
    measurements, at ``points`` evenly spaced progress values from 0 to ``upto``, and the
    geometric mean of those.  NaN when the run's measurements do not reach progress ``upto``
    (it stopped or ended before a measurement there): then its window is not comparable."""
    lp = dict(zip(np.asarray(loss_epochs, int), progress(loss, target)))
    e = np.asarray(epochs, int)
    pr = np.array([lp.get(int(k), np.nan) for k in e])
    dv = np.asarray(diversity, float)
    ok = np.isfinite(pr) & np.isfinite(dv) & (dv > 0)
    pr, dv = pr[ok], dv[ok]
    if not len(pr) or pr.max() < upto - 1e-12:
        return np.nan
    order = np.argsort(pr, kind="stable")
    pr, lv = pr[order], np.log(dv[order])
    pr, first = np.unique(pr, return_index=True)  # a plateau: its first measurement
    lv = lv[first]
    grid = np.linspace(0.0, upto, points)
    return float(np.exp(np.interp(grid, pr, lv).mean()))


def run_table(runs: pd.DataFrame, window=None) -> pd.DataFrame:
    """Per run: width, depth, batch, seed, lr, epochs_to_target, diverged, mean diversity over its
    measurements (``div_train``), the diversity averaged over the window of matched progress
    (``div_window``, :func:`window_diversity`; ``window``: the study's ``analysis.div_window``,
    NaN without it), diversity at initialization (``div_init``), measurements."""
    scal = runs[runs.metric.isin(["lr", "epochs_to_target", "diverged"])].pivot(
        index="run_id", columns="metric", values="value"
    )
    dv = _metric(runs, "diversity")
    agg = dv.groupby("run_id").value.agg(div_train="mean", n_div="count")
    agg["div_init"] = dv[dv.step == 0].groupby("run_id").value.first()
    hp = runs[["run_id", "width", "depth", "batch_size", "seed", "steps"]].drop_duplicates("run_id")
    out = hp.set_index("run_id").join(scal).join(agg)
    out["div_window"] = np.nan
    if window is not None:
        tl = _metric(runs, "train_loss")
        target = (
            runs[["run_id", "target_loss"]]
            .drop_duplicates("run_id")
            .set_index("run_id")
            .target_loss
        )
        loss_by = {k: g.sort_values("step") for k, g in tl.groupby("run_id")}
        for rid, g in dv.groupby("run_id"):
            lg = loss_by.get(rid)
            if lg is None or not len(lg):
                continue
            g = g.sort_values("step")
            out.loc[rid, "div_window"] = window_diversity(
                g.step,
                g.value,
                lg.step,
                lg.value,
                float(target[rid]),
                float(window.progress),
                int(window.points),
            )
    out = out.reset_index()
    return out.sort_values(["depth", "width", "batch_size", "seed"]).reset_index(drop=True)


def batch_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (net, batch size): median / min / max epochs to the target over seeds (inf: not reached)."""
    rt = run_table(runs)
    rt["ep"] = rt.epochs_to_target.fillna(np.inf)
    g = rt.groupby(["width", "depth", "batch_size"]).ep
    out = pd.DataFrame(
        {
            "median": g.median(),
            "min": g.min(),
            "max": g.max(),
            "seeds": g.size(),
            "budget": rt.groupby(["width", "depth", "batch_size"]).steps.max(),
        }
    )
    return out.reset_index()


def net_table(runs: pd.DataFrame, an) -> pd.DataFrame:
    """Per net: diversity during training (``div_train``: the mean over its runs of the diversity
    averaged over the window of matched progress, SE over runs, ``window_runs`` the runs whose
    measurements reach the window's end; ``div_all``: the mean over all measurements of every
    run, which compares different windows), at initialization (``div_init``), the largest
    batch converging within the Fig. 2(b) budget, the batch threshold.  ``an``: the study's
    ``analysis`` parameters (``fig2_epochs``, ``threshold``, ``div_window``)."""
    budget = float(an.fig2_epochs)
    rt = run_table(runs, an.div_window)
    g = rt.groupby(["width", "depth"])
    nt = pd.DataFrame(
        {
            "div_train": g.div_window.mean(),
            "div_train_se": g.div_window.std(ddof=1) / np.sqrt(g.div_window.count()),
            "window_runs": g.div_window.count(),
            "div_all": g.div_train.mean(),
            "div_init": g.div_init.mean(),
            "runs": g.size(),
            "measurements": g.n_div.mean(),
        }
    ).reset_index()
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


def threshold(batches: np.ndarray, epochs: np.ndarray, an) -> dict:
    """Batch threshold B* of 004 Sec. 5 (finding 1) from median epochs per batch size.

    ``e_min``: fewest epochs over the batch sizes; the flat region is the longest run of batch
    sizes from the smallest with epochs <= max(``flat_factor`` e_min, e_min + 1); B* is its last
    batch size.  A threshold exists when B* is below the largest batch size and the largest
    batch size needs >= ``growth_factor`` e_min epochs (never reaching the target counts); both
    from ``an.threshold`` (the study's ``analysis`` parameters).
    """
    flat, growth = float(an.threshold.flat_factor), float(an.threshold.growth_factor)
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
