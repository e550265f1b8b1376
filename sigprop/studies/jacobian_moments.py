"""Study: moments of the Jacobian squared norm at initialization (001 Figs. 4-5, Thms. 4-6).

A measurement at initialization, no training (:mod:`sigprop.measure.jacobians`): for one
fixed input with ``x.x/d = 1`` per network, the scalar output ``f``, the per-matrix
``||J^k||^2 = ||df/dW^k||^2`` (NTK parameterization), ``||J||^2`` (their sum over the hidden
matrices, 001 Eq. 35) and, for the ResNet, the reduced-network outputs ``f_(k)`` (001 Def. 1,
Eq. 150).

001 Fig. 4 (ResNet, m = 2, alpha = 0.3, varying depth): Thm. 4.1 ``E||J^k||^2 = E f_(k)^2``
and Thm. 4.2 ``E f_(k)^4 / c_4 <= E||J^k||^4 <= E f_(k)^4`` at every (depth, matrix) point;
also the closed form of the reduced mean, Eq. 152: ``E f_(k)^2 = alpha^m (1+alpha^m)^(L-1)``.

001 Fig. 5 (width n = 10 L; ResNet m = 2, alpha = 0.3/sqrt(L); DenseNet; vanilla ReLU):
the fluctuation of ``||J||^2 = G(x,x)`` against depth.  The figure's y axis is "variance";
its caption says the vanilla variance "remains constant due to the fixed ratio between
depth and width", which holds for the normalized ``Var/E^2`` (Hanin & Nica's
``E[K^2]/E[K]^2 ~ exp(5 beta)``, beta = L/n fixed), not for ``Var`` itself (the vanilla
mean grows like L, so ``Var`` grows like L^2).  The claims therefore use ``Var/E^2``; the
figure also shows ``Var``.  Scalings (``sigprop.theory.finite_width``; all "up to a constant"):
Eq. 40 (ResNet) and Eq. 42 (DenseNet) divided by the squared infinite-width means (Eq. 25;
Thm. 2's recursion H_L), and ``exp(5 beta)`` (vanilla).  The overlay draws each shape with its
constant fitted at ONE depth (the largest measured), so only the shape is compared.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import tables
from ..claims import frame, row
from ..figures.jacobian_moments import fig4, fig5, fig_kernel

TASK = "measure"
FIGURES = {"jacobian_moments_fig4": fig4, "jacobian_moments_fig5": fig5,
           "jacobian_moments_kernel": fig_kernel}
CAPTIONS = {
    "jacobian_moments_fig4": (
        "Per-matrix Jacobian norm against the reduced network (001 Fig. 4): ResNet, m = 2, "
        "alpha = 0.3, one input per network. (a) E||J^k||^2 for every branch matrix W^{k,h} "
        "(circles h = 1, triangles h = 2, all k of a depth spread around it) and E f_(k)^2 "
        "(squares), with 001 Eq. 152 alpha^m (1+alpha^m)^(L-1) (line); (b) the same for "
        "E||J^k||^4, E f_(k)^4 and E f_(k)^4 / c_4; (c) E||J^k||^2 / E f_(k)^2 per point, "
        "±3 paired SE (Thm. 4.1: 1); (d) E||J^k||^4 / E f_(k)^4 with the Thm. 4.2 bounds "
        "1/c_4 and 1 (dashed)."),
    "jacobian_moments_fig5": (
        "Fluctuation of the Jacobian squared norm ||J||^2 = G(x,x) against depth L at width "
        "n = 10 L (001 Fig. 5): ResNet (m = 2, alpha = 0.3/sqrt(L)), DenseNet, vanilla ReLU net "
        "(He init). (a) Var/E^2 with bootstrap SE and the predicted scalings (dashed: ResNet "
        "Eq. 40 / Eq. 25^2, DenseNet Eq. 42 / H_L^2, vanilla exp(5 L/n) of Hanin & Nica), each "
        "known only up to a constant, fitted at the largest depth; dotted: DenseNet with Eq. 187's "
        "(sum_k 1/k)^2 = H_L^2 in place of its limit log(L)^2; (b) Var itself with Eqs. "
        "40, 42 and E^2 exp(5 beta) likewise; (c) E||J||^2 with the infinite-width values "
        "(Eq. 25, Thm. 2's recursion H_L, 2L for the vanilla net)."),
    "jacobian_moments_kernel": (
        "Beyond 001: relative change of the empirical NTK (over the hidden weights, summed over "
        "the 10 logits, on 8 test inputs) after a short minibatch SGD run on digits (MSE to one-hot "
        "targets, hidden weights trained, step lr = eta / mean diagonal of the initial per-logit "
        "NTK), for ResNets with alpha = a/sqrt(L) (001 Cor. 1 / Fig. 5 scaling) and constant alpha "
        "= a, a DenseNet and a vanilla ReLU net of equal width and depth. (a) relative change, "
        "mean ± SE over networks; (b) training MSE before and after."),
}
SOURCE_THM41 = "001 §5.1, Thm. 4.1, Fig. 4(a)"
SOURCE_THM42 = "001 §5.1, Thm. 4.2, Fig. 4(b)"
SOURCE_EQ152 = "001 App. A.6, Eq. 152"
SOURCE_FIG5 = "001 §5.1, Thms. 5-6, Cors. 1-2, Fig. 5"
ARCH_NAMES = {"resnet_fc": "ResNet", "densenet_fc": "DenseNet", "fc": "vanilla"}


def measure(shard, params, buffers, cfg: dict, device: str = "cpu") -> pd.DataFrame:
    """Runs with ``steps == 1`` (Figs. 4-5): at initialization, rows per run ``f``,
    ``jac_sq_total`` (layer 0), ``jac_sq`` (layer k, probe h: matrix W^{k,h}; h = 0 outside the
    ResNet) and, for the ResNet, ``f_reduced`` (layer k).  Runs with ``steps > 1`` (kernel
    regime, beyond the paper): :func:`measure_kernel`."""
    if shard.runs[0].steps > 1:
        return measure_kernel(shard, params, cfg, device)
    from ..measure.jacobians import jacobian_moments  # torch: imported only in the job
    runs = shard.runs
    arch = runs[0].arch
    chunk = int(cfg.get("analysis", {}).get("chunk", 32))
    r = jacobian_moments(arch, runs, params, chunk=chunk)
    m = len(runs)
    frames = [pd.DataFrame({"model": np.arange(m), "layer": 0, "probe": 0, "metric": k,
                            "value": r[key]})
              for k, key in (("f", "f"), ("jac_sq_total", "jac_sq_total"))]
    nj = r["jac_sq"].shape[1]
    frames.append(pd.DataFrame({"model": np.repeat(np.arange(m), nj),
                                "layer": np.tile(r["layer"], m), "probe": np.tile(r["sub"], m),
                                "metric": "jac_sq", "value": r["jac_sq"].ravel()}))
    if "f_reduced" in r:
        L = r["f_reduced"].shape[1]
        frames.append(pd.DataFrame({"model": np.repeat(np.arange(m), L),
                                    "layer": np.tile(np.arange(1, L + 1), m), "probe": 0,
                                    "metric": "f_reduced", "value": r["f_reduced"].ravel()}))
    long = pd.concat(frames, ignore_index=True)
    return tables.run_rows(shard, long, device, order=("layer", "probe"))


def load_dataset(name: str):
    """The workflow's prepared data set, rebuilt in a temporary folder (embedded sets only:
    the generators are deterministic, so this is the same array the init stage read)."""
    import tempfile
    from pathlib import Path

    from ..data.prepare import load, prepare
    with tempfile.TemporaryDirectory() as tmp:
        return load(prepare(name, Path(tmp) / f"{name}.npz"))


def measure_kernel(shard, params, cfg: dict, device: str = "cpu") -> pd.DataFrame:
    """Beyond 001: relative change of the empirical NTK on ``kernel_probes`` test inputs over
    ``steps`` SGD steps (batch ``batch_size``, normalized step ``lr``) on the run's data set
    (:func:`sigprop.measure.jacobians.train_kernel_change`).  Rows per run (layer 0, probe 0):
    ``ntk_rel_change``, ``ntk_diag_0``, ``lr``, ``loss_init``, ``loss_final``, ``diverged``."""
    import torch

    from ..measure.jacobians import train_kernel_change
    runs = shard.runs
    r0 = runs[0]
    ds = load_dataset(r0.dataset)
    dev = params[0].device
    dtype = params[0].dtype
    xtr = torch.as_tensor(ds.x_train, device=dev).reshape(len(ds.x_train), -1).to(dtype)
    ytr = torch.as_tensor(ds.y_train, device=dev)
    p = int(cfg.get("analysis", {}).get("kernel_probes", 8))
    xpr = torch.as_tensor(ds.x_test[:p], device=dev).reshape(p, -1).to(dtype)
    eta = torch.tensor([r.lr for r in runs], dtype=torch.float64, device=dev)
    if len({r.batch_size for r in runs}) > 1:
        raise ValueError("kernel regime: a shard's runs must share their batch size")
    res = train_kernel_change(r0.arch, runs, params, xtr, ytr, xpr, r0.steps, r0.batch_size, eta)
    m = len(runs)
    long = pd.concat([pd.DataFrame({"model": np.arange(m), "layer": 0, "probe": 0, "metric": k,
                                    "value": v}) for k, v in res.items()], ignore_index=True)
    return tables.run_rows(shard, long, device, order=("layer", "probe"))


# ------------------------------------------------------------------ theory


def fig5_alpha(depth, a: float, m: int):
    """Cor. 1 / Fig. 5 ``alpha = a L^{-1/m}`` (0.3/sqrt(L) for m = 2), rounded as the config."""
    from ..theory.finite_width import resnet_alpha_cor1
    return np.array([float(f"{v:.10g}") for v in np.atleast_1d(resnet_alpha_cor1(depth, m, a))])


def theory_table(study: str, theory_cfg: dict, settings: list[dict]) -> pd.DataFrame:
    """Curves on ``L = 1..depth_max``.

    Fig. 4 (keys arch, alpha, branch_depth, depth): ``f2_eq152``.  Fig. 5 (keys arch,
    depth, width = c L, and for the ResNet alpha, branch_depth): ``mean_J2`` (Eq. 25,
    Thm. 2 recursion H_L, vanilla 2L), ``var_shape`` (Eq. 40, Eq. 42, mean^2 exp(5 beta))
    and ``ratio_shape`` (= var_shape / mean_J2^2 for ResNet and DenseNet, exp(5 beta) for
    the vanilla net): shapes, defined up to a constant; for the DenseNet also
    ``ratio_shape_eq187`` / ``var_shape_eq187``, Eq. 187 with ``H_L^2`` in place of Eq. 42's
    ``log(L)^2``.  ``c4``: the weights' 4th moment.
    """
    from ..theory import finite_width as fw
    from ..theory import kernels
    L = np.arange(1, int(theory_cfg.get("depth_max", 64)) + 1)
    rows = [pd.DataFrame([{"study": study, "quantity": "c4",
                           "value": float(theory_cfg.get("c4", 3.0))}])]
    f4 = theory_cfg.get("fig4", {})
    m4 = int(f4.get("branch_depth", 2))
    for a in f4.get("alpha", [0.3]):
        rows.append(pd.DataFrame({"study": study, "quantity": "f2_eq152", "arch": "resnet_fc",
                                  "alpha": float(a), "branch_depth": m4, "depth": L,
                                  "value": a ** m4 * (1 + a ** m4) ** (L - 1.0)}))
    f5 = theory_cfg.get("fig5", {})
    c, a5, m5 = int(f5.get("width_per_depth", 10)), float(f5.get("resnet_a", 0.3)), int(f5.get("branch_depth", 2))
    n = c * L
    al = fig5_alpha(L, a5, m5)
    mean = {"resnet_fc": kernels.resnet_ntk_diagonal(L, m5, al),
            "densenet_fc": kernels.densenet_ntk_diagonal(L, form="recursion"),
            "fc": 2.0 * L}
    ratio = {"resnet_fc": fw.resnet_variance(L, n, m5, al) / mean["resnet_fc"] ** 2,
             "densenet_fc": fw.densenet_variance(L, n) / mean["densenet_fc"] ** 2,
             "fc": fw.vanilla_relu_moment_ratio(L, n)}
    for arch in ("resnet_fc", "densenet_fc", "fc"):
        keys = {"study": study, "arch": arch, "depth": L, "width": n}
        if arch == "resnet_fc":
            keys.update(alpha=al, branch_depth=m5)
        for q, v in (("mean_J2", mean[arch]), ("ratio_shape", ratio[arch]),
                     ("var_shape", ratio[arch] * mean[arch] ** 2)):
            rows.append(pd.DataFrame({**keys, "quantity": q, "value": np.asarray(v, float)}))
    # DenseNet, Eq. 187 before its last step: (e^{5/n} - 1) (sum_k 1/k)^2 = (e^{5/n} - 1) H_L^2,
    # which Eq. 42 writes as log(L)^2 (equal only asymptotically)
    h2 = mean["densenet_fc"] ** 2
    for q, v in (("ratio_shape_eq187", np.expm1(5.0 / n)), ("var_shape_eq187", np.expm1(5.0 / n) * h2)):
        rows.append(pd.DataFrame({"study": study, "arch": "densenet_fc", "depth": L, "width": n,
                                  "quantity": q, "value": v}))
    return pd.concat(rows, ignore_index=True)


# ------------------------------------------------------------------ analysis


def panels(runs: pd.DataFrame, cfg: dict) -> pd.Series:
    """``run_id -> 'fig4' | 'fig5' | 'kernel'``: from the config block labels ("Fig. 4 ...",
    "Fig. 5 ...", "Kernel ...") when the config is at hand, else: ``steps > 1`` is the kernel
    study, Fig. 5 has width c L (ResNet: alpha = a/sqrt(L)), the rest is Fig. 4."""
    ids = runs.drop_duplicates("run_id").set_index("run_id")
    if "scales" in cfg and "scale" in cfg:
        from ..config import run_labels
        lab = run_labels(cfg, cfg["scale"])
        name = {"Fig. 5": "fig5", "Kernel": "kernel"}
        return pd.Series({r: next((v for k, v in name.items() if lab.get(r, "").startswith(k)), "fig4")
                          for r in ids.index}, dtype=object)
    f5 = cfg.get("theory", {}).get("fig5", {})
    c, a, m = int(f5.get("width_per_depth", 10)), float(f5.get("resnet_a", 0.3)), int(f5.get("branch_depth", 2))
    is5 = ids.width.to_numpy() == c * ids.depth.to_numpy()
    res = (ids.arch == "resnet_fc").to_numpy()
    is5 &= ~res | np.isclose(ids.alpha.to_numpy(), fig5_alpha(ids.depth.to_numpy(), a, m))
    out = np.where(is5, "fig5", "fig4").astype(object)
    out[ids.steps.to_numpy() > 1] = "kernel"
    return pd.Series(out, index=ids.index, dtype=object)


def select(runs: pd.DataFrame, cfg: dict, panel: str) -> pd.DataFrame:
    p = panels(runs, cfg)
    return runs[runs.run_id.map(p).to_numpy() == panel]


def wide(d: pd.DataFrame, metric: str) -> pd.DataFrame:
    """``[runs, (layer, probe)]`` values of one metric."""
    d = d[d.metric == metric]
    return d.pivot_table(index="run_id", columns=["layer", "probe"], values="value",
                         aggfunc="first").sort_index(axis=1)


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
        for (k, h) in J.columns:
            j2 = J[(k, h)].to_numpy()
            f2 = F[(k, 0)].to_numpy() ** 2
            rec = {"depth": int(L), "alpha": float(alpha), "width": int(width), "layer": int(k),
                   "sub": int(h), "n": n}
            for name, a in (("J2", j2), ("f2", f2), ("J4", j2 ** 2), ("f4", f2 ** 2)):
                rec[name] = a.mean()
                rec[f"se_{name}"] = a.std(ddof=1) / np.sqrt(n)
            for name, a, b in (("J2_f2", j2, f2), ("J4_f4", j2 ** 2, f2 ** 2),
                               ("J4_f4c4", j2 ** 2, f2 ** 2 / c4)):
                dlt = a - b
                rec[f"d_{name}"] = dlt.mean()
                rec[f"se_d_{name}"] = dlt.std(ddof=1) / np.sqrt(n)
            out.append(rec)
    return pd.DataFrame(out)


def fig4_reduced(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (depth, alpha, k): mean and SE of ``f_(k)^2`` (for Eq. 152)."""
    d = runs[runs.metric == "f_reduced"].assign(f2=lambda x: x.value ** 2)
    g = d.groupby(["depth", "alpha", "branch_depth", "layer"]).f2
    return pd.DataFrame({"mean": g.mean(), "se": g.std(ddof=1) / np.sqrt(g.count()),
                         "n": g.count()}).reset_index()


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
    from ..measure.jacobians import normalized_variance
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
    return {"depth": depths, "ratio": ratio, "var": var, "mean": mean,
            "se_mean": np.array([samples[L].std(ddof=1) / np.sqrt(len(samples[L])) for L in depths]),
            "se_log_ratio": np.log(br).std(0, ddof=1), "se_log_var": np.log(bv).std(0, ddof=1),
            "slope": slope, "slope_se": float(np.std(bs, ddof=1)) if len(bs) > 1 else np.nan,
            "n": np.array([len(samples[L]) for L in depths])}


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


# ------------------------------------------------------------------ claims


def _fraction_claim(study, claim_id, claim, source, ok, z, want, ftol, expected, detail, values=None):
    frac = float(np.mean(ok)) if len(ok) else np.nan
    verdict = "pass" if np.isfinite(frac) and frac >= want - ftol else "fail"
    if not len(ok):
        verdict, detail = "inconclusive", "no (depth, matrix) points measured"
    return row(study, claim_id, claim, source, measured=frac, expected=expected, tolerance=ftol,
               verdict=verdict, detail=detail, values=values)


def claims_fig4(runs: pd.DataFrame, theory: pd.DataFrame, cfg: dict) -> list[dict]:
    an = cfg.get("analysis", {})
    study = cfg["name"]
    k = float(an.get("z_max", 3.0))
    want = float(an.get("within_fraction", 0.95))
    ftol = float(an.get("fraction_tolerance", 0.05))
    c4 = c4_of(theory)
    pts = fig4_points(runs, c4)
    if not len(pts):
        return [row(study, cid, "001 Fig. 4 (Thm. 4, Eq. 152)", SOURCE_THM41, measured=np.nan,
                    expected="", tolerance=np.nan, verdict="inconclusive",
                    detail="no ResNet runs with per-matrix Jacobians and reduced outputs")
                for cid in ("thm4_1_second_moment", "thm4_2_fourth_moment_bounds",
                            "eq152_reduced_output_mean")]
    rows = []
    subs = sorted(pts["sub"].unique())
    for h in subs:
        p = pts[pts["sub"] == h]
        z = (p.d_J2_f2 / p.se_d_J2_f2).to_numpy()
        ok = np.abs(z) <= k
        ratio = (p.J2 / p.f2).to_numpy()
        rows.append(_fraction_claim(
            study, f"thm4_1_second_moment[W^(k,{h})]",
            f"E||df/dW^(k,{h})||^2 = E f_(k)^2 (reduced network) at every depth and branch k",
            SOURCE_THM41, ok, z, want, ftol,
            f">= {want:g} of (depth, k) points with |mean(J2 - f2)| <= {k:g} paired SE",
            (f"{len(p)} points, depths {[int(v) for v in sorted(p.depth.unique())]}, {int(p.n.min()) if len(p) else 0}-"
             f"{int(p.n.max()) if len(p) else 0} networks each; max |z| {np.nanmax(np.abs(z)) if len(z) else np.nan:.2f}; "
             f"E J2 / E f2 in [{np.nanmin(ratio) if len(ratio) else np.nan:.3f}, {np.nanmax(ratio) if len(ratio) else np.nan:.3f}]"),
            {"max_abs_z": np.nanmax(np.abs(z)) if len(z) else np.nan, "points": len(p)}))
        lo = (p.d_J4_f4c4 + k * p.se_d_J4_f4c4 >= 0).to_numpy()
        hi = (p.d_J4_f4 - k * p.se_d_J4_f4 <= 0).to_numpy()
        r4 = (p.J4 / p.f4).to_numpy()
        pooled = float(p.J4.sum() / p.f4.sum()) if len(p) else np.nan
        rows.append(_fraction_claim(
            study, f"thm4_2_fourth_moment_bounds[W^(k,{h})]",
            f"E f_(k)^4 / c4 <= E||df/dW^(k,{h})||^4 <= E f_(k)^4 at every depth and branch k",
            SOURCE_THM42, lo & hi, None, want, ftol,
            f">= {want:g} of points inside [f4/c4, f4] (c4 = {c4:g}) allowing {k:g} paired SE",
            (f"{len(p)} points; below the lower bound by > {k:g} SE: {int((~lo).sum())}, above the "
             f"upper by > {k:g} SE: {int((~hi).sum())}; E J4 / E f4 per point in "
             f"[{np.nanmin(r4) if len(r4) else np.nan:.3f}, {np.nanmax(r4) if len(r4) else np.nan:.3f}], "
             f"pooled {pooled:.3f} (bounds {1 / c4:.3f}, 1)"),
            {"pooled_J4_over_f4": pooled, "below_lower": int((~lo).sum()), "above_upper": int((~hi).sum())}))
    red = fig4_reduced(runs)
    th = theory[theory.quantity == "f2_eq152"]
    zs = []
    for r in red.itertuples():
        t = th[(th.depth == r.depth) & np.isclose(th.alpha, r.alpha) & (th.branch_depth == r.branch_depth)]
        zs.append((r.mean - float(t.value.iloc[0])) / r.se if len(t) else np.nan)
    zs = np.array(zs)
    rows.append(_fraction_claim(
        study, "eq152_reduced_output_mean",
        "E f_(k)^2 = alpha^m (1 + alpha^m)^(L-1) Sigma^0 for the reduced ResNet (Sigma^0 = x.x/d = 1)",
        SOURCE_EQ152, np.abs(zs) <= k, zs, want, ftol,
        f">= {want:g} of (depth, k) points within {k:g} SE of Eq. 152",
        (f"{len(zs)} points; {int(np.isnan(zs).sum())} without a theory value; max |z| "
         f"{np.nanmax(np.abs(zs)) if np.isfinite(zs).any() else np.nan:.2f}"),
        {"max_abs_z": np.nanmax(np.abs(zs)) if np.isfinite(zs).any() else np.nan}))
    return rows


def claims_fig5(runs: pd.DataFrame, theory: pd.DataFrame, cfg: dict) -> list[dict]:
    an = cfg.get("analysis", {})
    study = cfg["name"]
    k = float(an.get("z_max", 3.0))
    flat = float(an.get("flat_slope_tolerance", 0.25))
    n_boot = int(an.get("n_boot", 400))
    rows = []
    for arch in ("fc", "resnet_fc", "densenet_fc"):
        name = ARCH_NAMES[arch]
        samples = totals(runs, arch)
        cid = "fig5_vanilla_flat" if arch == "fc" else f"fig5_{name.lower()}_decreases"
        if len(samples) < 2:
            rows.append(row(study, cid, f"{name}: Var/E^2 of ||J||^2 against depth at n = 10 L",
                            SOURCE_FIG5, measured=np.nan, expected="", tolerance=np.nan,
                            verdict="inconclusive", detail="fewer than 2 depths measured"))
            continue
        s = ratio_stats(samples, n_boot)
        pred = theory_on(theory, arch, "ratio_shape", s["depth"], widths_of(runs, arch, s["depth"]))
        pslope = loglog_slope(s["depth"], pred) if np.all(np.isfinite(pred)) else np.nan
        extra = ""
        if arch == "densenet_fc":
            p187 = theory_on(theory, arch, "ratio_shape_eq187", s["depth"], widths_of(runs, arch, s["depth"]))
            if np.all(np.isfinite(p187)):
                extra = f" (Eq. 42 with log(L)^2); with Eq. 187's H_L^2: {loglog_slope(s['depth'], p187):.3f}"
        base = (f"depths {[int(v) for v in s['depth']]}, {int(s['n'].min())} networks each; Var/E^2 = "
                + ", ".join(f"{v:.4g}" for v in s["ratio"])
                + f"; bootstrap SE of the slope {s['slope_se']:.3f}; slope of the predicted shape "
                f"over the same depths {pslope:.3f}{extra}")
        vals = {"slope": s["slope"], "slope_se": s["slope_se"], "predicted_slope": pslope}
        if arch == "fc":
            a = abs(s["slope"])
            verdict = "pass" if a <= flat else ("fail" if a - k * s["slope_se"] > flat else "inconclusive")
            rows.append(row(study, cid,
                            "The vanilla (ReLU, He init) network's Var(||J||^2)/E^2 stays constant with "
                            "depth when n = 10 L (fixed L/n; Hanin & Nica)", SOURCE_FIG5,
                            measured=s["slope"], expected="log-log slope 0", tolerance=flat,
                            verdict=verdict,
                            detail=base + (f"; fail only if |slope| - {k:g} SE > {flat:g}, "
                                           "inconclusive in between"), values=vals))
        else:
            sl, se = s["slope"], s["slope_se"]
            verdict = "pass" if sl + k * se < 0 else ("fail" if sl >= 0 else "inconclusive")
            rows.append(row(study, cid,
                            f"The {name}'s Var(||J||^2)/E^2 decreases with depth when n = 10 L "
                            f"(convergence to the NTK; {'Thm. 5, Cor. 1' if arch == 'resnet_fc' else 'Thm. 6, Cor. 2'})",
                            SOURCE_FIG5, measured=sl, expected=f"log-log slope < 0 by more than {k:g} SE",
                            tolerance=k * se, verdict=verdict,
                            detail=base + "; inconclusive when negative but within the SE band",
                            values=vals))
    return rows


def kernel_groups(runs: pd.DataFrame) -> pd.DataFrame:
    """Kernel-regime runs per (group, depth, width): mean and SE of the NTK's relative change,
    mean initial and final loss, diverged count.  Groups: ``vanilla``, ``DenseNet``,
    ``ResNet alpha=<alpha>`` per distinct alpha/depth, named by how alpha was set."""
    wide_ = runs.pivot_table(index="run_id", columns="metric", values="value", aggfunc="first")
    hp = runs.drop_duplicates("run_id").set_index("run_id")[["arch", "depth", "width", "alpha", "branch_depth"]]
    d = wide_.join(hp)
    d["group"] = [ARCH_NAMES[a] if a != "resnet_fc" else f"ResNet alpha={al:.4g}"
                  for a, al in zip(d.arch, d.alpha)]
    ok = d[d.get("diverged", 0) == 0]
    g = ok.groupby(["group", "arch", "depth", "width", "alpha"])
    out = pd.DataFrame({"rel": g.ntk_rel_change.mean(),
                        "se": g.ntk_rel_change.std(ddof=1) / np.sqrt(g.ntk_rel_change.count()),
                        "n": g.ntk_rel_change.count(), "loss_init": g.loss_init.mean(),
                        "loss_final": g.loss_final.mean()}).reset_index()
    div = d.groupby(["group", "depth"]).diverged.sum() if "diverged" in d else None
    out["diverged"] = [int(div.get((a, b), 0)) if div is not None else 0
                       for a, b in zip(out.group, out.depth)]
    return out


def kernel_scaled(alpha: float, depth: int, cfg: dict) -> bool:
    """Whether a ResNet's alpha is the depth-scaled ``a L^{-1/m}`` of the config (vs constant)."""
    k = cfg.get("analysis", {}).get("kernel", {})
    a, m = float(k.get("resnet_a", 0.3)), int(k.get("branch_depth", 2))
    return bool(np.isclose(alpha, fig5_alpha(depth, a, m)[0], rtol=1e-6)) and not np.isclose(alpha, a)


def claims_kernel(runs: pd.DataFrame, cfg: dict) -> list[dict]:
    """Beyond the paper: the scaled ResNet and the DenseNet move their NTK less than the
    vanilla net (and the scaled ResNet less than the constant-alpha one) at equal width/depth."""
    if not len(runs):
        return []
    an = cfg.get("analysis", {})
    study = cfg["name"]
    k = float(an.get("z_max", 3.0))
    g = kernel_groups(runs)
    rows = []
    src = "beyond 001 (its §6 conclusion: residual nets operate closer to the kernel regime)"
    for (L, n), d in g.groupby(["depth", "width"]):
        van = d[d.arch == "fc"]
        res = d[d.arch == "resnet_fc"]
        scaled = res[[kernel_scaled(a, L, cfg) for a in res.alpha]]
        const = res[[not kernel_scaled(a, L, cfg) for a in res.alpha]]
        pairs = [("resnet_scaled_below_vanilla", scaled, van), ("densenet_below_vanilla", d[d.arch == "densenet_fc"], van),
                 ("resnet_scaled_below_constant_alpha", scaled, const)]
        for cid, a_, b_ in pairs:
            if len(a_) != 1 or len(b_) != 1:
                continue
            a, b = a_.iloc[0], b_.iloc[0]
            diff, se = a.rel - b.rel, float(np.hypot(a.se, b.se))
            verdict = "pass" if diff + k * se < 0 else ("fail" if diff >= 0 else "inconclusive")
            rows.append(row(study, f"kernel_{cid}[L={int(L)}, n={int(n)}]",
                            f"{a.group} changes its empirical NTK less than {b.group} during SGD "
                            f"(depth {int(L)}, width {int(n)})", src, measured=diff,
                            expected=f"rel. change difference < 0 by more than {k:g} SE",
                            tolerance=k * se, verdict=verdict,
                            detail=(f"||Theta_T - Theta_0||_F / ||Theta_0||_F: {a.group} {a.rel:.4g} "
                                    f"± {a.se:.2g} ({int(a.n)} nets, train MSE {a.loss_init:.3g} -> "
                                    f"{a.loss_final:.3g}, {a.diverged} diverged); {b.group} {b.rel:.4g} ± "
                                    f"{b.se:.2g} ({int(b.n)} nets, MSE {b.loss_init:.3g} -> "
                                    f"{b.loss_final:.3g}, {b.diverged} diverged)"),
                            values={"a": a.rel, "b": b.rel, "se": se}))
    return rows


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, cfg: dict) -> pd.DataFrame:
    rows = claims_fig4(select(runs, cfg, "fig4"), theory, cfg)
    rows += claims_fig5(select(runs, cfg, "fig5"), theory, cfg)
    rows += claims_kernel(select(runs, cfg, "kernel"), cfg)
    return frame(rows)
