"""Claims of Hayou et al. 2021 (arXiv:2002.08797) Secs. 3-4: SBP-SR against SNIP and the other
pruners (Tables 1, 2, 9), and the Stable ResNet's more uniform per-layer kept fraction (Fig. 2)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...claims import frame, row
from .analysis import N_BLOCKS, accuracy_table, layer_profiles, section_spread

SOURCE_T1 = "003 Sec. 4.2, Tables 1, 9"
SOURCE_T2 = "003 Sec. 4.2, Table 2"
SOURCE_F2 = "003 Sec. 3 (after Prop. 2), Fig. 2"


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, p,
                 layers: pd.DataFrame | None = None) -> pd.DataFrame:
    study = p.study
    a = p.claims
    margin, min_seeds = 100 * float(a.acc_margin), int(a.min_seeds)
    acc = accuracy_table(runs)
    rows = []
    for (ds, act, net), d in acc[acc.method.isin(["SNIP", "SBP-SR"])].groupby(
            ["dataset", "activation", "net"]):
        both = d.pivot_table(index="sparsity", columns="method", values="final_mean").dropna()
        if both.empty or set(both.columns) != {"SNIP", "SBP-SR"}:
            continue
        s = both.index.max()
        n = int(d[d.sparsity == s].n.min())
        diff = both.loc[s, "SBP-SR"] - both.loc[s, "SNIP"]
        verdict = "inconclusive" if n < min_seeds else ("pass" if diff >= -margin else "fail")
        rows.append(row(study, f"sbp_sr_vs_snip[{ds},{act},{net},s={s:g}]",
                        f"At sparsity {s:g}, SBP-SR (Stable ResNet) is at least as accurate as "
                        f"SNIP on {net} ({act}, {ds})", SOURCE_T1, measured=diff,
                        expected=f"acc(SBP-SR) - acc(SNIP) >= -{margin:g} points", tolerance=margin,
                        verdict=verdict,
                        detail=(f"final test accuracy, mean of {n} seeds: SBP-SR "
                                f"{both.loc[s, 'SBP-SR']:.2f}%, SNIP {both.loc[s, 'SNIP']:.2f}%"),
                        values={"sbp_sr": both.loc[s, "SBP-SR"], "snip": both.loc[s, "SNIP"]}))
    pr = acc[(acc.activation == "relu") & (acc.method != "no pruning")]
    for ds, d in pr.groupby("dataset"):
        net = max(d.net.unique(), key=lambda x: N_BLOCKS.get(x, 0))
        d = d[d.net == net]
        d = d[d.sparsity == d.sparsity.max()]
        if "SBP-SR" not in set(d.method) or d.method.nunique() < 2:
            continue
        best = d.loc[d.final_mean.idxmax()]
        ours = float(d[d.method == "SBP-SR"].final_mean.iloc[0])
        gap = ours - float(best.final_mean)
        n = int(d.n.min())
        verdict = "inconclusive" if n < min_seeds else ("pass" if gap >= -margin else "fail")
        rows.append(row(study, f"sbp_sr_best[{ds},{net},s={best.sparsity:g}]",
                        f"SBP-SR is the best pruner on the deepest net ({net}, {ds}) at sparsity "
                        f"{best.sparsity:g}", SOURCE_T2, measured=gap,
                        expected=f"acc(SBP-SR) - max over pruners >= -{margin:g} points",
                        tolerance=margin, verdict=verdict,
                        detail="; ".join(f"{m} {v:.2f}%" for m, v in zip(d.method, d.final_mean))
                        + f" (final, mean of {n} seeds)",
                        values={"sbp_sr": ours, "best": float(best.final_mean)}))
    rows += _layer_claims(study, runs, p, layers)
    return frame(rows)


def _layer_claims(study, runs, p, layers):
    a = p.claims
    ratio_tol, min_seeds = float(a.uniform_ratio), int(a.min_seeds)
    layers = pd.DataFrame() if layers is None else layers
    prof = layer_profiles(layers, net="resnet32", runs=runs) if len(layers) else pd.DataFrame()
    if prof.empty:
        return [row(study, "uniform_within_sections", "Stable ResNet keeps a more uniform "
                    "per-layer fraction than ResNet within each section", SOURCE_F2,
                    measured=np.nan, expected=f"spread ratio <= {ratio_tol:g}",
                    tolerance=ratio_tol, verdict="inconclusive",
                    detail="no layer reports of SNIP on ResNet32 and SBP-SR on Stable ResNet32")]
    sp = section_spread(prof)
    rows = []
    for (act, s), d in sp.groupby(["activation", "sparsity"]):
        d = d.set_index("variant")
        if not {"ResNet32 (SNIP)", "Stable ResNet32 (SBP-SR)"} <= set(d.index):
            continue
        r, st = d.loc["ResNet32 (SNIP)"], d.loc["Stable ResNet32 (SBP-SR)"]
        n = int(min(r.n_seeds, st.n_seeds))
        ratio = st.spread / r.spread if r.spread > 0 else np.inf
        v = "inconclusive" if n < min_seeds else ("pass" if ratio <= ratio_tol else "fail")
        rows.append(row(study, f"uniform_within_sections[{act},s={s:g}]",
                        f"Within each section, Stable ResNet32 (SBP-SR) keeps a more uniform "
                        f"per-layer fraction than ResNet32 (SNIP) ({act}, sparsity {s:g})",
                        SOURCE_F2, measured=ratio,
                        expected=f"spread(Stable) / spread(ResNet) <= {ratio_tol:g}",
                        tolerance=ratio_tol, verdict=v,
                        detail=(f"mean over sections of the std over layers of the kept fraction "
                                f"(mean of {n} seeds): Stable {st.spread:.4g}, ResNet {r.spread:.4g}"),
                        values={"stable": st.spread, "resnet": r.spread}))
        diff = st.last_section_kept - r.last_section_kept
        v = "inconclusive" if n < min_seeds else ("pass" if diff > 0 else "fail")
        rows.append(row(study, f"deeper_layers_kept[{act},s={s:g}]",
                        f"Stable ResNet32 (SBP-SR) prunes the deepest section less aggressively than "
                        f"ResNet32 (SNIP) ({act}, sparsity {s:g})", "003 Fig. 2 caption",
                        measured=diff, expected="kept(Stable, last section) - kept(ResNet) > 0",
                        tolerance=0.0, verdict=v,
                        detail=(f"mean kept fraction of the last section: Stable "
                                f"{st.last_section_kept:.4g}, ResNet {r.last_section_kept:.4g}"),
                        values={"stable": st.last_section_kept, "resnet": r.last_section_kept}))
    return rows
