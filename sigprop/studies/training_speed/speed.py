"""Training speed τ(η) and the collapse of depth curves (000 §5.1, Fig. 6).

000 §5.1 trains tanh networks on the critical line χ1 = 1 and records, per
learning rate η and depth L, the first step τ at which the test accuracy
exceeds p = 0.25.  The claims are statements about how the curves τ(η) of
different depths collapse: onto τ = f1(ηL) without dropout (Fig. 6(a)) and onto
τ = f2(η) for ρ < 1 up to a depth (Fig. 6(b), (c)).

Everything here is numpy/pandas on the long run table
(:mod:`sigprop.tables`); nothing trains.

Conventions
-----------
* τ of a run is its ``target_step`` metric (written by the shard trainer when
  ``target_acc`` > 0): the first evaluation step whose test accuracy is
  ≥ ``target_acc``, or −1 when it never got there within ``steps`` (a
  diverged run never gets there).  A −1 is *censored*: τ > ``steps``; it is
  stored here as τ = +inf, never dropped.  τ's resolution is ``eval_every``.
* τ = 0 (accuracy already ≥ p at initialization) is kept, but on log axes and
  in the dispersion it is read as ``eval_every / 2`` (:func:`log_tau`).
* Replicates (``seed``) of one (ρ, L, η) point are combined by the median with
  censored τ = +inf, so a point is censored when at least half its seeds are.

Papers cited by prefix: 000 = Huang, Xu, Du, Zeng, Zhao (2019), arXiv:1912.09132.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

POINT = ["keep_rate", "depth", "lr"]
KEEP = ["sigma_w2", "sigma_b2", "activation", "width", "steps", "eval_every", "target_acc"]


def tau_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per run: τ (+inf when censored), ``reached``, ``diverged``.

    Columns: ``run_id, keep_rate, depth, lr, seed`` + :data:`KEEP` fields
    present in the table + ``tau, reached, diverged``.
    """
    t = runs[runs.metric == "target_step"]
    if t.empty:
        raise ValueError("no 'target_step' rows in the run table: the runs need target_acc > 0")
    cols = ["run_id"] + [c for c in POINT + ["seed"] + KEEP if c in runs.columns]
    out = t[cols + ["value"]].drop_duplicates("run_id").reset_index(drop=True)
    div = runs[runs.metric == "diverged_step"].drop_duplicates("run_id").set_index("run_id").value
    out["diverged"] = out.run_id.map(div).fillna(-1).to_numpy() >= 0
    out["reached"] = out.value.to_numpy() >= 0
    out["tau"] = np.where(out.reached, out.value.to_numpy(float), np.inf)
    return out.drop(columns="value")


def curves(taus: pd.DataFrame) -> pd.DataFrame:
    """τ per (ρ, L, η): the median over seeds (censored = +inf); sorted by ρ, L, η.

    Columns: :data:`POINT` + ``tau, reached, n_seeds, n_reached, n_diverged``
    and the :data:`KEEP` fields (first value of the group).
    """
    keep = [c for c in KEEP if c in taus.columns]
    g = taus.groupby(POINT, sort=True)
    out = g.agg(
        tau=("tau", "median"),
        n_seeds=("tau", "size"),
        n_reached=("reached", "sum"),
        n_diverged=("diverged", "sum"),
        **{c: (c, "first") for c in keep},
    )
    out = out.reset_index()
    out["reached"] = np.isfinite(out.tau.to_numpy())
    return out


def log_tau(tau, eval_every) -> np.ndarray:
    """ln τ with τ = 0 read as ``eval_every / 2`` (reached at initialization); +inf stays +inf."""
    tau = np.asarray(tau, float)
    floor = np.asarray(eval_every, float) / 2.0
    with np.errstate(divide="ignore"):
        return np.log(np.where(tau > 0, tau, floor))


def x_of(c: pd.DataFrame, by_depth: bool) -> np.ndarray:
    """log10 of the scaling variable: η, or ηL when ``by_depth``."""
    x = c.lr.to_numpy(float) * (c.depth.to_numpy(float) if by_depth else 1.0)
    return np.log10(x)


def interp_defined(g: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """A curve's value on ``g`` where it is defined, NaN elsewhere.

    ``x`` sorted ascending, ``y`` finite at reached points and non-finite at
    censored ones.  The curve is linear in x between two *neighbouring* points
    that both reached the target, defined at an isolated reached point itself,
    and undefined elsewhere (a censored point is never bridged, nor is the
    curve extended past its first or last reached point).
    """
    g = np.asarray(g, float)
    out = np.full(g.shape, np.nan)
    ok = np.isfinite(y)
    for i in np.flatnonzero(ok):
        out[np.isclose(g, x[i], rtol=0, atol=1e-9)] = y[i]
    for i in range(len(x) - 1):
        if ok[i] and ok[i + 1] and x[i + 1] > x[i]:
            sel = (g >= x[i]) & (g <= x[i + 1])
            out[sel] = y[i] + (g[sel] - x[i]) * (y[i + 1] - y[i]) / (x[i + 1] - x[i])
    return out


def pair_gap(x1, y1, x2, y2, step: float) -> tuple[float, float]:
    """Mean |y1 − y2| where both curves are defined, and the length (in x) of that overlap.

    The curves are evaluated (:func:`interp_defined`) on a grid of spacing
    ``step`` covering both; the overlap length is the number of grid points
    where both are defined times ``step``.  Returns ``(nan, 0.0)`` without overlap.
    """
    lo = min(np.min(x1), np.min(x2))
    hi = max(np.max(x1), np.max(x2))
    g = lo + step * np.arange(int(np.floor((hi - lo) / step + 1e-9)) + 1)
    a, b = interp_defined(g, x1, y1), interp_defined(g, x2, y2)
    both = np.isfinite(a) & np.isfinite(b)
    if not both.any():
        return float("nan"), 0.0
    return float(np.mean(np.abs(a[both] - b[both]))), float(both.sum() * step)


def dispersion(c: pd.DataFrame, by_depth: bool, min_overlap: float, step: float = 0.01) -> dict:
    """How far apart the depth curves ln τ(x) of one keep rate lie, x = log10 η or log10 ηL.

    Definition (000 Fig. 6 read as a collapse test).  For each depth L the
    curve is ln τ against x over the learning rates where it reached the
    target (:func:`interp_defined`; τ = 0 read by :func:`log_tau`).  For each
    pair of depths, d_ij = mean over the grid points (spacing ``step``
    decades) where both curves are defined of |ln τ_i − ln τ_j|; a pair counts
    only when that overlap spans at least ``min_overlap`` decades of x.  The
    dispersion is D = mean of d_ij over the counted pairs (NaN when none
    counts).  Censored points (τ > steps) enter no d_ij: they are reported
    separately (``n_censored``).  D = 0 is a perfect collapse; shifting one of
    two curves τ ∝ 1/x by a factor k in x gives D = ln k.

    Returns ``{"D", "n_pairs", "n_compared", "pairs"}`` with ``pairs`` a list
    of ``(L_i, L_j, d_ij, overlap)``.
    """
    per = []
    for depth, g in c.groupby("depth", sort=True):
        g = g.assign(_x=x_of(g, by_depth)).sort_values("_x")
        y = log_tau(g.tau, g.eval_every if "eval_every" in g else 1.0)
        per.append((depth, g._x.to_numpy(), y))
    pairs = []
    for (d1, x1, y1), (d2, x2, y2) in itertools.combinations(per, 2):
        gap, overlap = pair_gap(x1, y1, x2, y2, step)
        pairs.append((int(d1), int(d2), gap, overlap))
    counted = [p for p in pairs if p[3] >= min_overlap - 1e-9 and np.isfinite(p[2])]
    D = float(np.mean([p[2] for p in counted])) if counted else float("nan")
    return {"D": D, "n_pairs": len(pairs), "n_compared": len(counted), "pairs": pairs}


def _at_lr(c: pd.DataFrame) -> pd.DataFrame:
    """ln τ as a (learning rate × depth) table; lr keyed by log10 rounded to 6 decimals."""
    y = log_tau(c.tau, c.eval_every if "eval_every" in c else 1.0)
    t = c.assign(_k=np.round(np.log10(c.lr.to_numpy(float)), 6), _y=y)
    return t.pivot_table(index="_k", columns="depth", values="_y", aggfunc="first")


def outlier_gap(c: pd.DataFrame, outlier: int) -> dict:
    """How far the curve of depth ``outlier`` lies from the other depths' curves, at equal η.

    On the learning rates the depths share: ``D_out`` = mean over (other
    depth j, η where j reached) of |ln τ_out(η) − ln τ_j(η)|, where a censored
    τ_out (never reached within T = ``steps``) counts as the lower bound
    ln(T / τ_j) (≥ 0, since τ_j ≤ T).  ``D_in`` = the same mean over pairs of
    the other depths and the η where both reached (no censoring there).
    Returns ``{"D_out", "D_in", "n_out", "n_in", "out_reached", "out_points"}``.
    """
    t = _at_lr(c)
    if outlier not in t.columns:
        raise ValueError(f"depth {outlier} is not among the curves {list(t.columns)}")
    T = float(c.steps.max())
    T_log = log_tau(T, 1.0)
    others = [d for d in t.columns if d != outlier]
    yo = t[outlier].to_numpy()
    gaps_out = []
    for d in others:
        yj = t[d].to_numpy()
        ok = np.isfinite(yj) & ~np.isnan(yo)
        gaps_out += list(np.where(np.isfinite(yo[ok]), np.abs(yo[ok] - yj[ok]), T_log - yj[ok]))
    gaps_in = []
    for d1, d2 in itertools.combinations(others, 2):
        a, b = t[d1].to_numpy(), t[d2].to_numpy()
        ok = np.isfinite(a) & np.isfinite(b)
        gaps_in += list(np.abs(a[ok] - b[ok]))
    return {
        "D_out": float(np.mean(gaps_out)) if gaps_out else float("nan"),
        "D_in": float(np.mean(gaps_in)) if gaps_in else float("nan"),
        "n_out": len(gaps_out),
        "n_in": len(gaps_in),
        "out_reached": int(np.isfinite(yo).sum()),
        "out_points": int((~np.isnan(yo)).sum()),
    }
