"""Panels, Jacobian moments and their bootstrap statistics (Littwin & Wolf 2020,
arXiv:2001.10460, Figs. 4-5; the kernel regime beyond it), shared by the figures and the claims."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .theory import fig5_alpha

ARCH_NAMES = {"resnet_fc": "ResNet", "densenet_fc": "DenseNet", "fc": "vanilla"}


def panels(runs: pd.DataFrame, p) -> pd.Series:
    """``run_id -> 'fig4' | 'fig5' | 'kernel'`` from the block labels (the ``block`` column of
    the merged run table): "Fig. 5 ..." and "Kernel ..." blocks, the rest Fig. 4."""
    if "block" not in runs.columns:
        raise ValueError(
            "jacobian_moments: the run table has no 'block' column (the merge "
            "labels each run with its grid block; panels are found by it)"
        )
    ids = runs.drop_duplicates("run_id").set_index("run_id")
    lab = ids.block.astype(object).fillna("")
    name = {"Fig. 5": "fig5", "Kernel": "kernel"}
    return pd.Series(
        {r: next((v for k, v in name.items() if lab[r].startswith(k)), "fig4") for r in ids.index},
        dtype=object,
    )


def select(runs: pd.DataFrame, p, panel: str) -> pd.DataFrame:
    pan = panels(runs, p)
    return runs[runs.run_id.map(pan).to_numpy() == panel]


def wide(d: pd.DataFrame, metric: str) -> pd.DataFrame:
    """``[runs, (layer, probe)]`` values of one metric."""
    d = d[d.metric == metric]
    return d.pivot_table(
        index="run_id", columns=["layer", "probe"], values="value", aggfunc="first"
    ).sort_index(axis=1)


def fig4_points(runs: pd.DataFrame, c4: float = 3.0) -> pd.DataFrame:
    """One row per (depth L, alpha, layer k, sub-layer h): means over runs of ``||J^k||^2``,
    ``f_(k)^2`` and their 4th-moment analogues, with paired SEs of the differences that the
    claims test (``J2 - f2``, ``J4 - f4``, ``J4 - f4/c4``) and SEs of each mean."""
    out = []
    for (L, alpha, width), d in runs.groupby(["depth", "alpha", "width"]):
        J, F = wide(d, "jac_sq"), wide(d, "f_reduced")
        common = J.index.intersection(F.index)
        J, F = J.loc[common], F.loc[common]
        n = len(common)
        for k, h in J.columns:
            j2 = J[(k, h)].to_numpy()
            f2 = F[(k, 0)].to_numpy() ** 2
            rec = {
                "depth": int(L),
                "alpha": float(alpha),
                "width": int(width),
                "layer": int(k),
                "sub": int(h),
                "n": n,
            }
            for name, a in (("J2", j2), ("f2", f2), ("J4", j2**2), ("f4", f2**2)):
                rec[name] = a.mean()
                rec[f"se_{name}"] = a.std(ddof=1) / np.sqrt(n)
            for name, a, b in (
                ("J2_f2", j2, f2),
                ("J4_f4", j2**2, f2**2),
                ("J4_f4c4", j2**2, f2**2 / c4),
            ):
                dlt = a - b
                rec[f"d_{name}"] = dlt.mean()
                rec[f"se_d_{name}"] = dlt.std(ddof=1) / np.sqrt(n)
            out.append(rec)
    return pd.DataFrame(out)


def fig4_reduced(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (depth, alpha, k): mean and SE of ``f_(k)^2`` (for Eq. 152)."""
    d = runs[runs.metric == "f_reduced"].assign(f2=lambda x: x.value**2)
    g = d.groupby(["depth", "alpha", "branch_depth", "layer"]).f2
    return pd.DataFrame(
        {"mean": g.mean(), "se": g.std(ddof=1) / np.sqrt(g.count()), "n": g.count()}
    ).reset_index()


def totals(runs: pd.DataFrame, arch: str) -> dict[int, np.ndarray]:
    """``depth -> ||J||^2`` of every run of one architecture."""
    d = runs[(runs.metric == "jac_sq_total") & (runs.arch == arch)]
    return {int(L): g.sort_values("run_id").value.to_numpy(float) for L, g in d.groupby("depth")}


def loglog_slope(depths: np.ndarray, values: np.ndarray) -> float:
    x, y = np.log(np.asarray(depths, float)), np.log(np.asarray(values, float))
    return float(np.polyfit(x, y, 1)[0])


def ratio_stats(samples: dict[int, np.ndarray], n_boot: int = 400, seed: int = 0) -> dict:
    """``Var/E^2`` and ``Var`` per depth, their bootstrap SEs (of the log), and the log-log
    slope of ``Var/E^2`` against depth with its bootstrap SE (runs resampled per depth)."""
    from .jacobians import normalized_variance

    depths = np.array(sorted(samples))
    ratio = np.array([normalized_variance(samples[L]) for L in depths])
    var = np.array([samples[L].var(ddof=1) for L in depths])
    mean = np.array([samples[L].mean() for L in depths])
    rng = np.random.default_rng(seed)
    br, bv = np.empty((n_boot, len(depths))), np.empty((n_boot, len(depths)))
    for i, L in enumerate(depths):
        v = samples[L]
        idx = rng.integers(0, len(v), (n_boot, len(v)))
        s = v[idx]
        bv[:, i] = s.var(axis=1, ddof=1)
        br[:, i] = bv[:, i] / s.mean(axis=1) ** 2
    slope = loglog_slope(depths, ratio) if len(depths) > 1 else np.nan
    bs = [loglog_slope(depths, b) for b in br] if len(depths) > 1 else []
    return {
        "depth": depths,
        "ratio": ratio,
        "var": var,
        "mean": mean,
        "se_mean": np.array([samples[L].std(ddof=1) / np.sqrt(len(samples[L])) for L in depths]),
        "se_log_ratio": np.log(br).std(0, ddof=1),
        "se_log_var": np.log(bv).std(0, ddof=1),
        "slope": slope,
        "slope_se": float(np.std(bs, ddof=1)) if len(bs) > 1 else np.nan,
        "n": np.array([len(samples[L]) for L in depths]),
    }


def theory_on(theory: pd.DataFrame, arch: str, quantity: str, depths, widths=None) -> np.ndarray:
    """A Fig. 5 theory quantity at the given depths (and widths, when given), NaN if absent."""
    t = theory[(theory.quantity == quantity) & (theory["arch"] == arch)]
    out = []
    for i, L in enumerate(np.asarray(depths)):
        s = t[t.depth == L]
        if widths is not None and len(s):
            s = s[s.width == np.asarray(widths)[i]]
        out.append(float(s.value.iloc[0]) if len(s) else np.nan)
    return np.array(out)


def widths_of(runs: pd.DataFrame, arch: str, depths) -> np.ndarray:
    d = runs[runs.arch == arch].drop_duplicates("depth").set_index("depth").width
    return np.array([int(d.get(L, -1)) for L in depths])


def c4_of(theory: pd.DataFrame) -> float:
    t = theory[theory.quantity == "c4"]
    return float(t.value.iloc[0]) if len(t) else 3.0


def kernel_groups(runs: pd.DataFrame) -> pd.DataFrame:
    """Kernel-regime runs per (group, depth, width): mean and SE of the NTK's relative change,
    mean initial and final loss, diverged count.  Groups: ``vanilla``, ``DenseNet``,
    ``ResNet alpha=<alpha>`` per distinct alpha/depth, named by how alpha was set."""
    wide_ = runs.pivot_table(index="run_id", columns="metric", values="value", aggfunc="first")
    hp = runs.drop_duplicates("run_id").set_index("run_id")[
        ["arch", "depth", "width", "alpha", "branch_depth"]
    ]
    d = wide_.join(hp)
    d["group"] = [
        ARCH_NAMES[a] if a != "resnet_fc" else f"ResNet alpha={al:.4g}"
        for a, al in zip(d.arch, d.alpha)
    ]
    ok = d[d.get("diverged", 0) == 0]
    g = ok.groupby(["group", "arch", "depth", "width", "alpha"])
    out = pd.DataFrame(
        {
            "rel": g.ntk_rel_change.mean(),
            "se": g.ntk_rel_change.std(ddof=1) / np.sqrt(g.ntk_rel_change.count()),
            "n": g.ntk_rel_change.count(),
            "loss_init": g.loss_init.mean(),
            "loss_final": g.loss_final.mean(),
        }
    ).reset_index()
    div = d.groupby(["group", "depth"]).diverged.sum() if "diverged" in d else None
    out["diverged"] = [
        int(div.get((a, b), 0)) if div is not None else 0 for a, b in zip(out.group, out.depth)
    ]
    return out


def kernel_scaled(alpha: float, depth: int, p) -> bool:
    """Whether a ResNet's alpha is the depth-scaled ``a L^{-1/m}`` of ``analysis.kernel`` (vs
    constant)."""
    k = p.analysis.kernel
    a, m = float(k.resnet_a), int(k.branch_depth)
    return bool(np.isclose(alpha, fig5_alpha(depth, a, m)[0], rtol=1e-6)) and not np.isclose(
        alpha, a
    )


def fig4_samples(runs: pd.DataFrame) -> dict[tuple[int, float, int], dict]:
    """Per (depth, alpha, width) of the Fig. 4 runs: the per-network values behind
    :func:`fig4_points`, for joint tests over the (k, h) matrices that share the networks:
    ``J2 [n, P]`` (``||J^{k,h}||^2``), ``F2 [n, P]`` (``f_(k)^2`` of the matrix's branch), the
    labels ``layer [P]``, ``sub [P]`` and the run ids (rows in run-id order)."""
    out = {}
    for (L, alpha, width), d in runs.groupby(["depth", "alpha", "width"]):
        J, F = wide(d, "jac_sq"), wide(d, "f_reduced")
        common = J.index.intersection(F.index).sort_values()
        J, F = J.loc[common], F.loc[common]
        cols = list(J.columns)
        out[(int(L), float(alpha), int(width))] = {
            "J2": J.to_numpy(float),
            "F2": np.stack([F[(k, 0)].to_numpy(float) ** 2 for k, _h in cols], axis=1),
            "layer": np.array([k for k, _ in cols], int),
            "sub": np.array([h for _, h in cols], int),
            "run_id": common.to_numpy(),
        }
    return out


def stack_independent(blocks: list[np.ndarray]) -> np.ndarray:
    """Columns of several ``[n_b, P_b]`` blocks of INDEPENDENT networks (e.g. different depths)
    side by side, rows paired by position and cut to the smallest ``n_b``: resampling the rows
    of the result resamples every block's networks, and pairing independent networks adds no
    dependence, so a bootstrap over its rows is a joint test over all columns."""
    n = min(b.shape[0] for b in blocks)
    return np.concatenate([b[:n] for b in blocks], axis=1)
