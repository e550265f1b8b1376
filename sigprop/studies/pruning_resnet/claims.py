"""Claims of Hayou, Ton, Doucet & Teh 2021, "Robust Pruning at Initialization" (arXiv:2002.08797)
Secs. 3-4: SBP-SR against SNIP and the other pruners (Tables 1, 2, 9), and the Stable ResNet's
more uniform per-layer kept fraction and less pruned last section (Sec. 3, Fig. 2).  Every
comparison is a difference of means over seeds with its standard error (unpaired), decided by
:func:`sigprop.claims.z_above` at ``claims.z`` SE: the accuracy claims are non-inferiority tests
(SBP-SR - other > -acc_margin), the layer claims one-sided ("smaller", "larger")."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...claims import false_pass_z, frame, row, z_above
from .analysis import N_BLOCKS, accuracy_table, seed_section_stats

SOURCE_T1 = "003 Sec. 4.2, Tables 1, 9"
SOURCE_T2 = "003 Sec. 4.2, Table 2"
SOURCE_F2 = "003 Sec. 3 (after Prop. 2), Fig. 2"


def claims_table(
    runs: pd.DataFrame, theory: pd.DataFrame, p, layers: pd.DataFrame | None = None
) -> pd.DataFrame:
    study = p.study
    a = p.claims
    margin, min_seeds, k = 100 * float(a.acc_margin), int(a.min_seeds), float(a.z)
    acc = accuracy_table(runs)
    acc["se"] = acc.final_std / np.sqrt(acc.n)
    rows = []
    for (ds, act, net), d in acc[acc.method.isin(["SNIP", "SBP-SR"])].groupby(
        ["dataset", "activation", "net"]
    ):
        both = d.pivot_table(index="sparsity", columns="method", values="final_mean").dropna()
        if both.empty or set(both.columns) != {"SNIP", "SBP-SR"}:
            continue
        s = both.index.max()
        at = d[d.sparsity == s].set_index("method")
        n = int(at.n.min())
        diff = both.loc[s, "SBP-SR"] - both.loc[s, "SNIP"]
        se = float(np.hypot(at.loc["SBP-SR", "se"], at.loc["SNIP", "se"]))
        verdict, test, det = z_above(diff + margin, se, k)
        if n < min_seeds:
            verdict = "inconclusive"
        rows.append(
            row(
                study,
                f"sbp_sr_vs_snip[{ds},{act},{net},s={s:g}]",
                f"At sparsity {s:g}, SBP-SR (Stable ResNet) is at least as accurate as "
                f"SNIP on {net} ({act}, {ds})",
                SOURCE_T1,
                measured=diff,
                expected=f"acc(SBP-SR) - acc(SNIP) > -{margin:g} points by {k:g} SE",
                tolerance=margin,
                verdict=verdict,
                detail=(
                    f"final test accuracy, mean of {n} seeds: SBP-SR "
                    f"{both.loc[s, 'SBP-SR']:.2f}%, SNIP {both.loc[s, 'SNIP']:.2f}%; "
                    f"SE of the difference {se:.2f} points"
                ),
                test=(
                    f"non-inferiority: (difference + {margin:g}) {test}; SE unpaired over "
                    f"{n} seeds (< {min_seeds} seeds: inconclusive); units: accuracy points"
                ),
                detectable=det,
                false_pass=false_pass_z(k, n - 1),
                se=se,
                values={"sbp_sr": both.loc[s, "SBP-SR"], "snip": both.loc[s, "SNIP"], "se": se},
            )
        )
    pr = acc[(acc.activation == "relu") & (acc.method != "no pruning")]
    for ds, d in pr.groupby("dataset"):
        net = max(d.net.unique(), key=lambda x: N_BLOCKS.get(x, 0))
        d = d[d.net == net]
        d = d[d.sparsity == d.sparsity.max()]
        if "SBP-SR" not in set(d.method) or d.method.nunique() < 2:
            continue
        others = d[d.method != "SBP-SR"]
        best = others.loc[others.final_mean.idxmax()]
        me = d[d.method == "SBP-SR"].iloc[0]
        ours = float(me.final_mean)
        gap = ours - float(best.final_mean)
        se = float(np.hypot(me.se, best.se))
        n = int(d.n.min())
        verdict, test, det = z_above(gap + margin, se, k)
        if n < min_seeds:
            verdict = "inconclusive"
        rows.append(
            row(
                study,
                f"sbp_sr_best[{ds},{net},s={best.sparsity:g}]",
                f"SBP-SR is the best pruner on the deepest net ({net}, {ds}) at sparsity "
                f"{best.sparsity:g}",
                SOURCE_T2,
                measured=gap,
                expected=f"acc(SBP-SR) - best other pruner > -{margin:g} points by {k:g} SE",
                tolerance=margin,
                verdict=verdict,
                detail="; ".join(f"{m} {v:.2f}%" for m, v in zip(d.method, d.final_mean))
                + f" (final, mean of {n} seeds); best other: {best.method}; SE of the "
                f"difference {se:.2f} points",
                test=(
                    f"non-inferiority against the best other pruner (chosen as the "
                    f"largest mean): (difference + {margin:g}) {test}; SE unpaired over "
                    f"{n} seeds; units: accuracy points"
                ),
                detectable=det,
                false_pass=false_pass_z(k, n - 1),
                se=se,
                values={"sbp_sr": ours, "best": float(best.final_mean), "se": se},
            )
        )
    rows += _layer_claims(study, runs, p, layers)
    return frame(rows)


def _diff(st, rs, col):
    """Mean of ``col`` over Stable runs minus over ResNet runs, the unpaired SE, and n."""
    a, b = st[col].to_numpy(float), rs[col].to_numpy(float)
    n = int(min(len(a), len(b)))
    se = float(np.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))) if n >= 2 else np.nan
    return float(a.mean()), float(b.mean()), se, n


def _layer_claims(study, runs, p, layers):
    a = p.claims
    ratio_tol, min_seeds, k = float(a.uniform_ratio), int(a.min_seeds), float(a.z)
    layers = pd.DataFrame() if layers is None else layers
    per = seed_section_stats(layers, net="resnet32", runs=runs) if len(layers) else pd.DataFrame()
    if per.empty:
        return [
            row(
                study,
                "uniform_within_sections",
                "Stable ResNet keeps a more uniform "
                "per-layer fraction than ResNet within each section",
                SOURCE_F2,
                measured=np.nan,
                expected=f"spread ratio <= {ratio_tol:g}",
                tolerance=ratio_tol,
                verdict="inconclusive",
                detail="no layer reports of SNIP on ResNet32 and SBP-SR on Stable ResNet32",
                test="spread(ResNet) - spread(Stable) > k SE over seeds",
            )
        ]
    rows = []
    for (act, s), d in per.groupby(["activation", "sparsity"]):
        rs = d[d.variant == "ResNet32 (SNIP)"]
        st = d[d.variant == "Stable ResNet32 (SBP-SR)"]
        if rs.empty or st.empty:
            continue
        m_st, m_rs, se, n = _diff(st, rs, "spread")
        ratio = m_st / m_rs if m_rs > 0 else np.inf
        v, test, det = z_above(m_rs - m_st, se, k)
        if ratio > ratio_tol and v == "pass":
            v = "inconclusive"
        if n < min_seeds:
            v = "inconclusive"
        rows.append(
            row(
                study,
                f"uniform_within_sections[{act},s={s:g}]",
                f"Within each section, Stable ResNet32 (SBP-SR) keeps a more uniform "
                f"per-layer fraction than ResNet32 (SNIP) ({act}, sparsity {s:g})",
                SOURCE_F2,
                measured=ratio,
                expected=(
                    f"spread(Stable) / spread(ResNet) <= {ratio_tol:g}, the "
                    f"difference by more than {k:g} SE"
                ),
                tolerance=ratio_tol,
                verdict=v,
                detail=(
                    f"mean over sections of the std over layers of the kept fraction, "
                    f"mean over {n} seeds: Stable {m_st:.4g}, ResNet {m_rs:.4g}; "
                    f"difference {m_rs - m_st:.4g}, SE {se:.2g}"
                ),
                test=(
                    f"spread(ResNet) - spread(Stable): {test}; SE unpaired over {n} "
                    f"seeds (< {min_seeds}: inconclusive); a pass also needs "
                    f"spread(Stable) / spread(ResNet) <= {ratio_tol:g} (else "
                    "inconclusive); units: kept fraction (std)"
                ),
                detectable=det,
                false_pass=false_pass_z(k, n - 1),
                values={"stable": m_st, "resnet": m_rs, "se": se},
            )
        )
        m_st, m_rs, se, n = _diff(st, rs, "last_section_kept")
        v, test, det = z_above(m_st - m_rs, se, k)
        if n < min_seeds:
            v = "inconclusive"
        rows.append(
            row(
                study,
                f"deeper_layers_kept[{act},s={s:g}]",
                f"Stable ResNet32 (SBP-SR) prunes the deepest section less aggressively than "
                f"ResNet32 (SNIP) ({act}, sparsity {s:g})",
                "003 Fig. 2 caption",
                measured=m_st - m_rs,
                expected=f"kept(Stable, last section) - kept(ResNet) > {k:g} SE",
                tolerance=k * se if np.isfinite(se) else np.nan,
                verdict=v,
                detail=(
                    f"mean kept fraction of the last section, mean over {n} seeds: "
                    f"Stable {m_st:.4g}, ResNet {m_rs:.4g}; SE of the difference "
                    f"{se:.2g}"
                ),
                test=(
                    f"kept(Stable) - kept(ResNet): {test}; SE unpaired over {n} seeds "
                    f"(< {min_seeds}: inconclusive); units: kept fraction"
                ),
                detectable=det,
                false_pass=false_pass_z(k, n - 1),
                se=se,
                values={"stable": m_st, "resnet": m_rs, "se": se},
            )
        )
    return rows
