"""Claims of Huang, Xu, Du, Zeng, Zhao 2019, "Mean field theory for deep dropout networks"
(arXiv:1912.09132) Sec. 4.1-4.2: Eq. 12 predicts g_aa in linear nets (Fig. 2a), g_ab decays at
chi_1 (Eq. 13), not chi_2 (Fig. 2b-d), and g_aa, g~_ab decay at chi_1 for nonlinear nets
(Fig. 3).

The statistics of the claims declared in ``CLAIMS`` (``__init__.py``; ``NOTES`` are added to a
row's test or detail where its design cannot resolve the tolerance; a ``g_ab_follows_chi1`` row
with fewer than 3 layers to fit has the texts ``GAB_TOO_FEW``, a sanity copy ``COPY``), built
into the claims table by :func:`sigprop.claims.declared.build`; every claim here is an
equivalence and states its ``margin`` (:func:`sigprop.claims.row`: a pass whose detectable
exceeds the margin is ``inconclusive``):

- ``eq12_predicts_g_aa[linear, rho]`` (claim): one joint test over the layers, which share the
  instantiations: max |mean g_aa^l - Eq. 12| / SE over the layers against its bootstrap null
  (:func:`sigprop.claims.max_abs_z_bootstrap`); detectable: a common relative offset; margin
  ``claims.margin`` (a 10 % relative offset).
- ``g_ab_follows_chi1[linear, rho<1]`` (claim): the fitted per-layer decay factor is within
  ``z_max`` bootstrap SE of chi_1 and closer to chi_1 than to chi_2; the test resolves the two
  only when ``z_max`` SE is below half their gap, else ``inconclusive``; margin: that half gap
  |chi_1 - chi_2| / 2 (the same rule, stated as a margin).
- ``{g_aa,g_ab_abs}_decays_at_chi1[act, rho]`` (claim): |rate - chi_1| <= max(z_max SE,
  rate_rel_tolerance chi_1); a pass needs ``z_max`` SE <= rate_rel_tolerance chi_1 (else the
  design cannot resolve a deviation of that size: ``inconclusive``); margin: rate_rel_tolerance
  chi_1 (the same rule, stated as a margin).
- ``g_ab_abs_decays_at_chi1[act, rho=1]`` where c* = 1 (sanity): the two inputs coincide, so
  g~_ab = g_aa at every layer of every net and the row repeats the g_aa claim: an identity,
  checked on the data, never counted.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...claims import max_abs_z_bootstrap, z_within
from ...claims.declared import build, result
from ...claims.fits import decay_rate, fit_window
from ...measure.gradient_runs import matrix
from . import CLAIMS, COPY, GAB_TOO_FEW, NOTES, SOURCE
from .analysis import profile, settings_of, theory_curve, theory_value

IDENTITY_RTOL = 1e-12
"""g~_ab equals g_aa when the two inputs coincide (c* = 1): up to rounding."""


def rate_verdict(
    r: float, se: float, chi1: float, k: float, rtol: float
) -> tuple[str, float, bool]:
    """Fig. 3: ``|r - chi1| <= max(k SE, rtol chi1)`` passes (fail beyond), but only when the
    design resolves the scientific tolerance: ``k SE > rtol chi1`` turns a pass into
    ``inconclusive``.  Returns ``(verdict, detectable, unresolved)``: detectable = max(k SE,
    rtol chi1) in units of the per-layer decay factor; ``unresolved``: a pass was turned
    ``inconclusive`` (the row's test says so)."""
    verdict, _, det = z_within(r - chi1 if np.isfinite(r) else np.nan, se, k, rtol * chi1)
    unresolved = verdict == "pass" and k * se > rtol * chi1
    return ("inconclusive" if unresolved else verdict), det, unresolved


def _fit(v: np.ndarray, layers: np.ndarray, use: np.ndarray, s: dict, se: float, k: float) -> dict:
    """The slots of a decay-rate fit: its layers, instantiations and SE."""
    first, last, n = layers[use].min(), layers[use].max(), len(v)
    return dict(first=first, last=last, depth=s["depth"], n=n, boot_se=se, k_se=k * se)


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, p) -> pd.DataFrame:
    cl = p.claims
    k, rtol, n_boot = float(cl.z_max), float(cl.rate_rel_tolerance), int(cl.n_boot)
    level, joint_boot = float(cl.joint_level), int(cl.joint_n_boot)
    gab_from, act_from = int(cl.gab_fit_min_from_output), int(cl.fit_min_from_output)
    results = []
    settings = settings_of(runs)
    # (1) Eq. 12 predicts g_aa in linear nets: one joint test over the layers
    for s in [s for s in settings if s["activation"] == "linear"]:
        v, layers = matrix(runs, s, "g_aa")
        th = theory_curve(theory, s, "g_aa_eq12", layers)
        j = max_abs_z_bootstrap(v, th, n_boot=joint_boot, level=level)
        ok = np.isfinite(j["T"]) and np.isfinite(j["crit"])
        lr = np.log(profile(runs, s, "g_aa")["mean"].to_numpy() / th)
        fields = dict(level=level, joint_boot=joint_boot, depth=s["depth"], layers=len(layers))
        fields.update({key: j[key] for key in ("T", "crit", "p", "n")}, offset=j["detectable"])
        fields.update(max_log_ratio=np.nanmax(np.abs(lr)), ratio_first=np.exp(lr[0]))
        stats = dict(measured=j["T"], tolerance=j["crit"], detectable=j["detectable"])
        results.append(
            result(
                "eq12_predicts_g_aa",
                f"linear, rho={s['keep_rate']:g}",
                **stats,
                verdict=("pass" if j["T"] <= j["crit"] else "fail") if ok else "inconclusive",
                values={"T": j["T"], "crit": j["crit"], "p": j["p"], "layers": len(layers)},
                margin=float(cl.margin),
                ratio_last=np.exp(lr[-1]),
                **fields,
            )
        )
    # (2) g_ab decays at chi_1, not chi_2 (linear, rho < 1), far from the output
    for s in [s for s in settings if s["activation"] == "linear" and s["keep_rate"] < 1]:
        v, layers = matrix(runs, s, "g_ab")
        use = fit_window(layers, int(s["depth"]), gab_from)
        c1, c2 = theory_value(theory, s, "chi1"), theory_value(theory, s, "chi2")
        half_gap = abs(c1 - c2) / 2
        fields = dict(k=k, half_gap=half_gap, chi1=c1, chi2=c2, gab_from=gab_from)
        q = f"linear, rho={s['keep_rate']:g}"
        if use.sum() < 3:
            stats = dict(measured=np.nan, tolerance=np.nan, verdict="inconclusive", margin=half_gap)
            results.append(result("g_ab_follows_chi1", q, **stats, texts=GAB_TOO_FEW, **fields))
            continue
        r, se = decay_rate(v, layers, use, n_boot)
        near = abs(r - c1) <= k * se and abs(r - c1) < abs(r - c2)
        unresolved = np.isfinite(r) and np.isfinite(se) and k * se >= half_gap
        if not (np.isfinite(r) and np.isfinite(se)) or unresolved:
            verdict = "inconclusive"
        else:
            verdict = "pass" if near else "fail"
        note = {"test": CLAIMS["g_ab_follows_chi1"].test + NOTES["g_ab test"]}
        fields.update(_fit(v, layers, use, s, se, k), off1=abs(r - c1), off2=abs(r - c2))
        stats = dict(measured=r, tolerance=k * se, detectable=k * se, margin=half_gap)
        results.append(
            result(
                "g_ab_follows_chi1",
                q,
                **stats,
                verdict=verdict,
                values={"rate": r, "se": se, "chi1": c1, "chi2": c2},
                texts=note if unresolved else None,
                **fields,
            )
        )
    # (3) Fig. 3: g_aa and g~_ab decay at chi_1 for nonlinear activations
    for s in [s for s in settings if s["activation"] != "linear"]:
        c1, c_star = theory_value(theory, s, "chi1"), theory_value(theory, s, "c_star")
        chi = dict(chi1=c1, chi2=theory_value(theory, s, "chi2"), c_star=c_star)
        g_aa, _ = matrix(runs, s, "g_aa")
        q = f"{s['activation']}, rho={s['keep_rate']:g}"
        for metric, label, claim in (
            ("g_aa", "g_aa", "g_aa_decays_at_chi1"),
            ("g_ab_abs", "g~_ab", "g_ab_abs_decays_at_chi1"),
        ):
            v, layers = matrix(runs, s, metric)
            use = fit_window(layers, int(s["depth"]), act_from)
            r, se = decay_rate(v, layers, use, n_boot)
            fields = dict(label=label, activation=s["activation"], k=k, rtol=rtol, floor=rtol * c1)
            fields.update(chi, **_fit(v, layers, use, s, se, k))
            values = {"rate": r, "se": se, "chi1": c1}
            if metric != "g_aa" and s["keep_rate"] == 1.0 and c_star >= 1.0 - 1e-12:
                # c* = 1 without dropout: both inputs are one input, g~_ab = g_aa exactly
                dev = np.inf
                if v.shape == g_aa.shape:
                    dev = float(np.nanmax(np.abs(v - g_aa) / np.maximum(np.abs(g_aa), 1e-300)))
                same = "pass" if dev <= IDENTITY_RTOL else "fail"
                stats = dict(measured=r, tolerance=IDENTITY_RTOL, verdict=same, kind="sanity")
                values["max_rel_diff_to_g_aa"] = dev
                fields.update(dev=dev, rtol_id=IDENTITY_RTOL)
                results.append(result(claim, q, **stats, values=values, texts=COPY, **fields))
                continue
            verdict, det, unresolved = rate_verdict(r, se, c1, k, rtol)
            texts = {"test": CLAIMS[claim].test + NOTES["rate test"]} if unresolved else {}
            if verdict == "inconclusive" and np.isfinite(se):
                texts["detail"] = CLAIMS[claim].detail + NOTES["rate detail"]
                fields["need"] = int(np.ceil(len(v) * (k * se / (rtol * c1)) ** 2))
            stats = dict(measured=r, tolerance=det, verdict=verdict, detectable=det)
            results.append(
                result(claim, q, **stats, values=values, margin=rtol * c1, texts=texts, **fields)
            )
    return build(p.study, CLAIMS, results, SOURCE)
