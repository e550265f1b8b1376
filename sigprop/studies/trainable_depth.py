"""Study: trainable depth of dropout networks (000 Fig. 7 and §5.2; Table 1).

tanh fully connected nets over a depth × σ_w² grid at fixed σ_b², in the eight
panels (a)-(h) of 000 Fig. 7 (keep rate, initialization, optimizer, data set,
step budget); a panel is a block label of the study config.  Theory: the depth scales ξ1 = 1/|ln χ1| (000 Eq. 10–11) and
ξ2 = 1/|ln χ2| (000 Eq. 6) from :mod:`sigprop.theory.meanfield`; the paper's
empirical bound L ≤ min(12ξ1, 12ξ2) (000 Table 1, "realistic condition")
against Schoenholz et al.'s 6ξ2 ("independent assumption").
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..claims.trainable_depth import claims_table  # noqa: F401  (re-exported)
from ..figures.trainable_depth import heatmap
from ..theory import meanfield

CURVES = {
    "12xi1": lambda t: 12 * t["xi1"],
    "6xi2": lambda t: 6 * t["xi2"],
    "12xi2": lambda t: 12 * t["xi2"],
    "min_12xi1_12xi2": lambda t: np.minimum(12 * t["xi1"], 12 * t["xi2"]),
}

FIGURES = {"trainable_depth": heatmap}
CAPTIONS = {
    "trainable_depth": (
        "Accuracy after the step budget of tanh networks over depth L and σ_w² (σ_b² fixed), "
        "panels (a)-(h) as in 000 Fig. 7 (keep rate, initialization, optimizer, data, steps in each title). Lines: mean-field depth scales from Gauss–Hermite "
        "quadrature, 12ξ1 (white solid), 6ξ2 (green dashed), 12ξ2 (white dashed)."),
}


def theory_table(study: str, theory_cfg: dict, settings: list[dict]) -> pd.DataFrame:
    """Mean-field quantities on a fine σ_w² grid for every keep rate of the study."""
    keep_rates = [s["keep_rate"] for s in settings]
    act = theory_cfg.get("activation", "tanh")
    sb2 = float(theory_cfg.get("sigma_b2", 0.05))
    lo, hi = theory_cfg.get("sigma_w2_range", [1.0, 4.0])
    n = int(theory_cfg.get("points", 301))
    sw2 = np.linspace(lo, hi, n)
    rows = []
    for rho in sorted(set(float(k) for k in keep_rates)):
        s = meanfield.fixed_point_summary(sw2, sb2, rho, act)
        quantities = {k: np.broadcast_to(np.asarray(s[k], dtype=float), sw2.shape)
                      for k in ("q_star", "c_star", "chi1", "chi2", "xi1", "xi2")}
        quantities.update({name: f(quantities) for name, f in CURVES.items()})
        for q, v in quantities.items():
            rows.append(pd.DataFrame({"keep_rate": rho, "sigma_w2": sw2, "sigma_b2": sb2,
                                      "activation": act, "quantity": q, "value": v}))
    df = pd.concat(rows, ignore_index=True)
    df.insert(0, "study", study)
    return df


def with_panels(runs: pd.DataFrame, cfg: dict) -> pd.DataFrame:
    """Runs with their panel: the label of the config block that made them (000 Fig. 7
    (a)-(h)) when the config carries its scale (as the workflow passes it), else by keep rate."""
    from ..config import run_labels
    from ..measure.trainability import add_panels
    if "scale" not in cfg or "scales" not in cfg:
        return add_panels(runs)
    return add_panels(runs, run_labels(cfg, cfg["scale"], cfg.get("name", "<study>")))


def curve(theory: pd.DataFrame, quantity: str):
    """``f(keep_rate, sigma_w2) -> value`` interpolating the theory table in σ_w²."""
    t = theory[theory.quantity == quantity]
    tables = {k: (g.sigma_w2.to_numpy(), g.value.to_numpy()) for k, g in t.groupby("keep_rate")}

    def f(keep_rate, sigma_w2):
        keep_rate, sigma_w2 = np.broadcast_arrays(np.asarray(keep_rate, float), np.asarray(sigma_w2, float))
        out = np.full(sigma_w2.shape, np.nan)
        for k, (x, y) in tables.items():
            sel = np.isclose(keep_rate, k)
            out[sel] = np.interp(sigma_w2[sel], x, y)
        return out
    return f
