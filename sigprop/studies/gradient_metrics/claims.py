"""Claims of Huang et al. 2019 (arXiv:1912.09132) Sec. 4.1-4.2: Eq. 12 predicts g_aa in linear
nets, g_ab decays at chi_1 (not chi_2), and g_aa, g~_ab decay at chi_1 for nonlinear nets."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...claims import frame, row
from ...measure.gradient_runs import matrix
from .analysis import decay_rate, fit_window, profile, settings_of, theory_curve, theory_value

SOURCE_EQ12 = "000 §4.1, Eqs. 8, 12, Fig. 2(a)"
SOURCE_CHI1 = "000 §4.1, Eq. 13, Fig. 2(b-d)"
SOURCE_FIG3 = "000 §4.2, Eq. 13, Fig. 3"


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, p) -> pd.DataFrame:
    cl = p.claims
    study = p.study
    k = float(cl.z_max)
    want = float(cl.within_fraction)
    ftol = float(cl.fraction_tolerance)
    rtol = float(cl.rate_rel_tolerance)
    n_boot = int(cl.n_boot)
    gab_from = int(cl.gab_fit_min_from_output)
    act_from = int(cl.fit_min_from_output)
    rows = []
    settings = settings_of(runs)
    # (1) Eq. 12 predicts g_aa in linear nets
    for s in [s for s in settings if s["activation"] == "linear"]:
        prof = profile(runs, s, "g_aa")
        th = theory_curve(theory, s, "g_aa_eq12", prof.layer.to_numpy())
        lr = np.log(prof["mean"].to_numpy() / th)
        z = lr / prof.se_log.to_numpy()
        frac = float(np.mean(np.abs(z) <= k))
        rows.append(row(study, f"eq12_predicts_g_aa[linear, rho={s['keep_rate']:g}]",
                        "Eq. 12 predicts the mean g_aa^l of linear dropout networks at every layer",
                        SOURCE_EQ12, measured=frac,
                        expected=f">= {want:g} of layers with |log(mean/Eq.12)| <= {k:g} SE of the log mean",
                        tolerance=ftol, verdict="pass" if frac >= want - ftol else "fail",
                        detail=(f"L = {s['depth']}, {int(prof.n.min())} instantiations; max |log ratio| "
                                f"{np.nanmax(np.abs(lr)):.3f} (max |z| {np.nanmax(np.abs(z)):.2f}); "
                                f"ratio at l = 1: {np.exp(lr[0]):.3f}, at l = L: {np.exp(lr[-1]):.3f}")))
    # (2) g_ab decays at chi_1, not chi_2 (linear, rho < 1), far from the output
    for s in [s for s in settings if s["activation"] == "linear" and s["keep_rate"] < 1]:
        v, layers = matrix(runs, s, "g_ab")
        use = fit_window(layers, int(s["depth"]), gab_from)
        c1, c2 = theory_value(theory, s, "chi1"), theory_value(theory, s, "chi2")
        if use.sum() < 3:
            rows.append(row(study, f"g_ab_follows_chi1[linear, rho={s['keep_rate']:g}]",
                            "g_ab^l = g_ab^{l+1} chi_1, not chi_2", SOURCE_CHI1, measured=np.nan,
                            expected=f"chi1 = {c1:.4f}", tolerance=np.nan, verdict="fail",
                            detail=f"fewer than 3 layers at least {gab_from} from the output"))
            continue
        r, se = decay_rate(v, layers, use, n_boot)
        ok = abs(r - c1) <= k * se and abs(r - c1) < abs(r - c2)
        rows.append(row(study, f"g_ab_follows_chi1[linear, rho={s['keep_rate']:g}]",
                        "Away from the output the mean g_ab^l of linear dropout networks decays per "
                        "layer at chi_1 = sigma_w^2/rho (Eq. 13), not at chi_2 = sigma_w^2",
                        SOURCE_CHI1, measured=r, expected=f"chi1 = {c1:.4f} (chi2 = {c2:.4f})",
                        tolerance=k * se, verdict="pass" if ok else "fail",
                        detail=(f"fit of log mean g_ab over layers {layers[use].min()}-{layers[use].max()} "
                                f"(>= {gab_from} from the output L = {s['depth']}), {len(v)} "
                                f"instantiations; bootstrap SE {se:.4f}; |r - chi1| = {abs(r - c1):.4f}, "
                                f"|r - chi2| = {abs(r - c2):.4f}")))
    # (3) Fig. 3: g_aa and g~_ab decay at chi_1 for nonlinear activations
    for s in [s for s in settings if s["activation"] != "linear"]:
        c1 = theory_value(theory, s, "chi1")
        for metric, label in (("g_aa", "g_aa"), ("g_ab_abs", "g~_ab")):
            v, layers = matrix(runs, s, metric)
            use = fit_window(layers, int(s["depth"]), act_from)
            r, se = decay_rate(v, layers, use, n_boot)
            tol = max(k * se, rtol * c1)
            ok = bool(np.isfinite(r) and abs(r - c1) <= tol)
            rows.append(row(study, f"{metric}_decays_at_chi1[{s['activation']}, rho={s['keep_rate']:g}]",
                            f"{label}^l = {label}^{{l+1}} chi_1 for {s['activation']} dropout networks",
                            SOURCE_FIG3, measured=r, expected=f"chi1 = {c1:.4f}", tolerance=tol,
                            verdict="pass" if ok else "fail",
                            detail=(f"fit of log mean over layers {layers[use].min()}-{layers[use].max()} "
                                    f"(L = {s['depth']}), {len(v)} instantiations; bootstrap SE {se:.4f}; "
                                    f"tolerance max({k:g} SE, {rtol:g} chi1); "
                                    f"chi2 = {theory_value(theory, s, 'chi2'):.4f}")))
    return frame(rows)
