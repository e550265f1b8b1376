"""Study: the variance-mean law of the gradient metrics of dropout networks (000 §4.2, Figs. 4-5).

A measurement at initialization, no training, identical to
:mod:`sigprop.studies.gradient_metrics` (its :func:`~sigprop.studies.gradient_metrics.measure`
is reused): random depth-L dropout networks (000 Eq. 1) fed a pair of inputs at
their mean-field fixed point, per-layer metrics ``g_aa``, ``g_ab`` and ``g~_ab``
of 000 Eq. (8) with the same weights and masks forward and backward.

Analysis: for each group of networks (Fig. 4: activation x keep rate at one width;
Fig. 5: tanh, ρ = 0.9, per width) and metric, the mean ``m^l`` and variance
``V^l`` over the instantiations at every layer ``l``; the paper conjectures
``V ∝ m^2`` ("the universal power coefficient between the variance and mean is
2", 000 §4.2).  The claim per group is the power ``p`` of a least-squares line of
``log V^l`` on ``log m^l`` over the layers, with a bootstrap SE over the
instantiations.  ``p = 2`` over the layers means the relative fluctuation
``sqrt(V)/m`` is the same at every layer; where it grows with the distance from the
output the fitted power moves away from 2 (below 2 when ``m`` shrinks away from the
output, ``chi_1 < 1``; above 2 when it grows, ``chi_1 > 1``), and the claim fails.
Per figure, an overall row (the fraction of groups passing) and, per metric, the
power of one line through the points of all groups together (the collapse the
figures show, dominated by the groups whose mean spans the most decades).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..claims import frame, row
from ..figures.gradient_universality import fig4, fig5
from ..runs import SETTING_FIELDS
from ..theory import meanfield
from .gradient_metrics import matrix
from .gradient_metrics import measure as _measure

TASK = "measure"
FIGURES = {"gradient_universality_activations": fig4, "gradient_universality_widths": fig5}
CAPTIONS = {
    "gradient_universality_activations": (
        "Variance V^l over network instantiations against the mean m^l of the gradient metrics, one "
        "point per layer l, for linear (sigma_w^2 = 0.5), ReLU (1.0), tanh and hard tanh (1.4) dropout "
        "networks, sigma_b^2 = 0.1 (000 Fig. 4): (a) g_aa, (b) g_ab (absolute value per network), "
        "(c) g~_ab. Colour: keep rate rho; marker: activation; black line: the conjectured law "
        "V ∝ m^2 (through the median of V/m^2). Legend: the power p of a least-squares fit of "
        "log V on log m per group."),
    "gradient_universality_widths": (
        "As the activations figure for tanh dropout networks with sigma_w^2 = 1.4, sigma_b^2 = 0.1, "
        "rho = 0.9 and different widths N (000 Fig. 5; colour: width). Black line: V ∝ m^2; "
        "legend: fitted powers."),
}
SOURCE_FIG4 = "000 §4.2, Fig. 4"
SOURCE_FIG5 = "000 §4.2, Fig. 5"
METRICS = {"g_aa": "g_aa", "g_ab": "g_ab", "g_ab_abs": "g~_ab"}
SETTING = list(SETTING_FIELDS)
GROUP = SETTING + ["width", "depth"]
ACTIVATION_ORDER = ("linear", "relu", "tanh", "hard_tanh")   # 000 Fig. 4


def measure(shard, params, buffers, cfg: dict, device: str = "cpu") -> pd.DataFrame:
    """Per run and layer ``1..L``: ``g_aa``, ``g_ab``, ``g_ab_abs`` (g~_ab), ``g_ab_signed``
    (000 Eq. 8), exactly as :func:`sigprop.studies.gradient_metrics.measure`."""
    return _measure(shard, params, buffers, cfg, device)


def theory_table(study: str, theory_cfg: dict, settings: list[dict]) -> pd.DataFrame:
    """The conjectured power ``p = 2`` of ``V ∝ m^p`` (000 §4.2; no setting), and per setting
    q*, c*, chi_1 (000 Eq. 10) and chi_2 from :mod:`sigprop.theory.meanfield` (the per-layer
    growth factors of the mean metrics, 000 Eqs. 9 and 13)."""
    p = float(theory_cfg.get("power", 2.0))
    rows = [{"study": study, "quantity": "variance_mean_power", "value": p}]
    for s in settings:
        act, sw, sb, rho = s["activation"], s["sigma_w2"], s["sigma_b2"], s["keep_rate"]
        base = {"study": study, "activation": act, "sigma_w2": sw, "sigma_b2": sb, "keep_rate": rho}
        for q, f in (("q_star", meanfield.q_star), ("c_star", meanfield.c_star),
                     ("chi1", meanfield.chi1), ("chi2", meanfield.chi2)):
            rows.append({**base, "quantity": q, "value": float(f(sw, sb, rho, act))})
    return pd.DataFrame(rows, columns=["study", "quantity", "value", *SETTING])


# ------------------------------------------------------------------ analysis


def groups_of(runs: pd.DataFrame) -> list[dict]:
    """Distinct (activation, sigma_w2, sigma_b2, keep_rate, width, depth) of the runs, sorted."""
    u = runs[GROUP].drop_duplicates().sort_values(GROUP)
    return [dict(zip(GROUP, t)) for t in u.itertuples(index=False)]


def fig4_groups(runs: pd.DataFrame) -> list[dict]:
    """000 Fig. 4: the groups at the width holding the most activation/keep-rate settings
    (the largest such width on a tie), in the paper's order of activations, keep rates descending."""
    gs = groups_of(runs)
    if not gs:
        return []
    count = pd.Series([g["width"] for g in gs]).value_counts()
    w = max(count.index[count == count.max()])
    order = {a: i for i, a in enumerate(ACTIVATION_ORDER)}
    return sorted([g for g in gs if g["width"] == w],
                  key=lambda g: (order.get(g["activation"], len(order)), g["activation"], -g["keep_rate"]))


def fig5_groups(runs: pd.DataFrame, cfg: dict) -> list[dict]:
    """000 Fig. 5: the groups of the ``analysis.widths`` setting (tanh, ρ = 0.9), one per width."""
    sel = cfg.get("analysis", {}).get("widths", {"activation": "tanh", "sigma_w2": 1.4, "keep_rate": 0.9})
    out = []
    for g in groups_of(runs):
        if all((g[k] == v) if isinstance(v, str) else np.isclose(g[k], v) for k, v in sel.items()):
            out.append(g)
    return sorted(out, key=lambda g: (g["width"], g["depth"]))


def mean_var(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-layer mean ``m^l`` and unbiased variance ``V^l`` over the instantiations (rows)."""
    return v.mean(0), v.var(0, ddof=1)


def fit_power(m: np.ndarray, V: np.ndarray, min_points: int = 3) -> tuple[float, float, int]:
    """Least-squares line ``log V = log a + p log m`` over the points with ``m > 0`` and
    ``V > 0``: ``(p, a, n_points)``; NaNs when fewer than ``min_points`` remain or all
    ``m`` are equal."""
    m, V = np.asarray(m, float), np.asarray(V, float)
    ok = np.isfinite(m) & np.isfinite(V) & (m > 0) & (V > 0)
    n = int(ok.sum())
    if n < max(min_points, 2):
        return np.nan, np.nan, n
    x, y = np.log(m[ok]), np.log(V[ok])
    if np.ptp(x) == 0:
        return np.nan, np.nan, n
    p, c = np.polyfit(x, y, 1)
    return float(p), float(np.exp(c)), n


def _pooled_mean_var(vs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    mv = [mean_var(v) for v in vs]
    return np.concatenate([m for m, _ in mv]), np.concatenate([V for _, V in mv])


def power_and_se(vs: list[np.ndarray], n_boot: int = 200, min_points: int = 3,
                 seed: int = 0) -> dict:
    """Fitted power of ``V^l ∝ (m^l)^p`` over the layers of one or more groups, each
    ``[instantiations, layers]`` (000 §4.2); SE of ``p`` by bootstrap over the
    instantiations (each group's rows resampled with replacement).  Diagnostics:
    decades spanned by ``m`` and ``V/m^2`` at the first and last layer (first group)."""
    m, V = _pooled_mean_var(vs)
    p, a, n = fit_power(m, V, min_points)
    rng = np.random.default_rng(seed)
    boot = []
    if min(len(v) for v in vs) > 2:
        for _ in range(n_boot):
            rs = [v[rng.integers(0, len(v), len(v))] for v in vs]
            boot.append(fit_power(*_pooled_mean_var(rs), min_points)[0])
    boot = np.asarray(boot, float)
    se = float(np.nanstd(boot, ddof=1)) if np.isfinite(boot).sum() > 1 else np.nan
    m0, V0 = mean_var(vs[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        r = V0 / m0 ** 2
    pos = m[m > 0]
    decades = float(np.log10(pos.max() / pos.min())) if len(pos) else np.nan
    return {"p": p, "a": a, "n_layers": n, "se": se, "n_inst": min(len(v) for v in vs),
            "rel_var_first": float(r[0]), "rel_var_last": float(r[-1]), "m_decades": decades}


def group_fits(runs: pd.DataFrame, groups: list[dict], an: dict) -> pd.DataFrame:
    """One row per group and metric: fitted power, SE, prefactor and diagnostics."""
    rows = []
    for g in groups:
        for metric in METRICS:
            v, _ = matrix(runs, g, metric)
            f = power_and_se([v], int(an.get("n_boot", 200)), int(an.get("min_layers", 3)))
            rows.append({**g, "metric": metric, **f})
    return pd.DataFrame(rows)


def pooled_fits(runs: pd.DataFrame, groups: list[dict], an: dict) -> pd.DataFrame:
    """One row per metric: the power fitted to the points of all groups together (the
    collapse of 000 Figs. 4-5 read as one line)."""
    rows = []
    for metric in METRICS:
        vs = [matrix(runs, g, metric)[0] for g in groups]
        f = power_and_se(vs, int(an.get("n_boot", 200)), int(an.get("min_layers", 3)))
        rows.append({"metric": metric, "n_groups": len(groups), **f})
    return pd.DataFrame(rows)


def expected_power(theory: pd.DataFrame) -> float:
    """The conjectured power of ``V ∝ m^p`` from the theory table (000 §4.2: 2)."""
    t = theory[theory.quantity == "variance_mean_power"]
    return float(t.value.iloc[0]) if len(t) else 2.0


def verdict(p: float, se: float, n_layers: int, want: float, an: dict) -> tuple[float, str]:
    """Tolerance ``max(z_max SE, abs_tolerance)`` and verdict: ``fail`` when ``|p - want|``
    exceeds it (or no fit), ``inconclusive`` when it would pass but the tolerance exceeds
    ``inconclusive_tolerance`` (the SE is too large to tell the power), else ``pass``."""
    se_tol = float(an.get("z_max", 3.0)) * se if np.isfinite(se) else 0.0
    tol = max(se_tol, float(an.get("abs_tolerance", 0.1)))
    if not (np.isfinite(p) and n_layers >= int(an.get("min_layers", 3)) and abs(p - want) <= tol):
        return tol, "fail"
    return tol, "inconclusive" if tol > float(an.get("inconclusive_tolerance", 1.0)) else "pass"


def _detail(f: dict, verdict_: str) -> str:
    d = (f"{f['n_layers']} layers (L = {f['depth']}), {f['n_inst']} instantiations; bootstrap SE "
         f"{f['se']:.3f}; fit V = {f['a']:.3g} m^{f['p']:.3f}; m spans {f['m_decades']:.2f} "
         f"decades; V/m^2 at l = 1: {f['rel_var_first']:.3g}, at l = L: {f['rel_var_last']:.3g}")
    if verdict_ == "fail" and np.isfinite(f["p"]):
        trend = "grows" if f["rel_var_first"] > f["rel_var_last"] else "shrinks"
        d += (f"; V/m^2 is not constant over the layers (it {trend} with the distance from the "
              "output), so V is not ∝ m^2 within the group")
    if verdict_ == "inconclusive":
        d += "; tolerance above inconclusive_tolerance: the SE is too large to tell the power"
    if f["metric"] != "g_aa" and f["keep_rate"] == 1.0 and f.get("c_star", 0.0) >= 1.0:
        d += "; rho = 1 and c* = 1: the two inputs coincide, so this metric equals g_aa"
    return d


def _group_rows(study: str, fits: pd.DataFrame, an: dict, want: float, what: str,
                source: str) -> list[dict]:
    rows = []
    for f in fits.to_dict("records"):
        tol, v = verdict(f["p"], f["se"], f["n_layers"], want, an)
        label = METRICS[f["metric"]]
        cid = (f"power2[{f['metric']}, {f['activation']}, rho={f['keep_rate']:g}]" if what == "activation"
               else f"power2_width[{f['metric']}, N={f['width']}]")
        who = (f"{f['activation']} (sigma_w^2 = {f['sigma_w2']:g}), rho = {f['keep_rate']:g}, "
               f"N = {f['width']}")
        rows.append(row(study, cid, f"Var over instantiations of {label}^l ∝ (mean {label}^l)^2 "
                        f"across layers, {who}", source, measured=f["p"], expected=f"p = {want:g}",
                        tolerance=tol, verdict=v, detail=_detail(f, v)))
    return rows


def _pooled_rows(study: str, fits: pd.DataFrame, an: dict, want: float, tag: str, who: str,
                 source: str) -> list[dict]:
    rows = []
    for f in fits.to_dict("records"):
        tol, v = verdict(f["p"], f["se"], f["n_layers"], want, an)
        label = METRICS[f["metric"]]
        rows.append(row(study, f"power2_pooled_{tag}[{f['metric']}]",
                        f"All groups' points (V^l, m^l) of {label} collapse on V ∝ m^2, {who}", source,
                        measured=f["p"], expected=f"p = {want:g}", tolerance=tol, verdict=v,
                        detail=(f"one fit over {f['n_layers']} points of {f['n_groups']} groups "
                                f"(>= {f['n_inst']} instantiations each); bootstrap SE {f['se']:.3f}; "
                                f"fit V = {f['a']:.3g} m^{f['p']:.3f}; m spans {f['m_decades']:.1f} "
                                "decades (the pooled fit is dominated by the groups whose m spans "
                                "the most decades)")))
    return rows


def _overall(study: str, group_rows: list[dict], cid: str, claim: str, source: str) -> dict:
    """Fraction of a figure's groups whose power is consistent with 2; passes only if all are."""
    v = [r["verdict"] for r in group_rows]
    frac = float(np.mean([x == "pass" for x in v])) if v else np.nan
    failed = [r["claim_id"] for r in group_rows if r["verdict"] == "fail"]
    unsure = [r["claim_id"] for r in group_rows if r["verdict"] == "inconclusive"]
    return row(study, cid, claim, source, measured=frac, expected="1 (every group consistent with p = 2)",
               tolerance=0.0, verdict="pass" if v and frac == 1.0 else "fail",
               detail=(f"{v.count('pass')} of {len(v)} groups pass, {len(failed)} fail, "
                       f"{len(unsure)} inconclusive"
                       + (f"; failing: {', '.join(failed)}" if failed else "")
                       + (f"; inconclusive: {', '.join(unsure)}" if unsure else "")))


def _with_c_star(fits: pd.DataFrame, theory: pd.DataFrame) -> pd.DataFrame:
    t = theory[theory.quantity == "c_star"][SETTING + ["value"]].rename(columns={"value": "c_star"})
    if fits.empty or t.empty:
        return fits.assign(c_star=np.nan)
    return fits.merge(t, on=SETTING, how="left")


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, cfg: dict) -> pd.DataFrame:
    """Per group and metric: fitted power of ``V ∝ m^p`` against 2 (000 §4.2), tolerance
    ``max(z_max SE, abs_tolerance)``; per figure the fraction of groups passing and, per
    metric, the power of one fit through all groups' points."""
    an = dict(cfg.get("analysis", {}))
    study = cfg["name"]
    want = expected_power(theory)
    rows = []
    g4 = fig4_groups(runs)
    r4 = _group_rows(study, _with_c_star(group_fits(runs, g4, an), theory), an, want, "activation",
                     SOURCE_FIG4)
    rows += r4 + [_overall(study, r4, "power2_all_activations",
                           "V ∝ m^2 for g_aa, g_ab, g~_ab regardless of activation and keep rate",
                           SOURCE_FIG4)]
    rows += _pooled_rows(study, pooled_fits(runs, g4, an), an, want, "activations",
                         "all activations and keep rates", SOURCE_FIG4)
    g5 = fig5_groups(runs, cfg)
    if len({g["width"] for g in g5}) > 1:
        r5 = _group_rows(study, _with_c_star(group_fits(runs, g5, an), theory), an, want, "width",
                         SOURCE_FIG5)
        rows += r5 + [_overall(study, r5, "power2_all_widths",
                               "V ∝ m^2 for g_aa, g_ab, g~_ab regardless of the width N "
                               "(tanh, rho = 0.9)", SOURCE_FIG5)]
        rows += _pooled_rows(study, pooled_fits(runs, g5, an), an, want, "widths",
                             "all widths (tanh, rho = 0.9)", SOURCE_FIG5)
    return frame(rows)
