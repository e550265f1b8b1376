"""Statistics of the claims of Hayou, Ton, Doucet & Teh 2021, "Robust Pruning at Initialization"
(arXiv:2002.08797) Secs. 3-4, declared in ``CLAIMS`` (``__init__.py``): SBP-SR against SNIP and
the other pruners (Tables 1, 2, 9), and the Stable ResNet's more uniform per-layer kept fraction
and less pruned last section (Sec. 3, Fig. 2).  Every comparison is a difference of means over
seeds with its standard error (unpaired), decided by :func:`sigprop.claims.z_above` at
``claims.z`` SE: the accuracy claims are non-inferiority tests (SBP-SR - other > -acc_margin),
the layer claims one-sided ("smaller", "larger")."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...claims import false_pass_z, z_above
from ...claims.declared import build, result
from . import CLAIMS
from .analysis import N_BLOCKS, accuracy_table, seed_section_stats


def _z(claim, qualifier, effect, err, n, a, values, hold=False, **kw):
    """The row of a difference ``effect`` with SE ``err`` over ``n`` seeds, decided at
    ``claims.z`` SE; inconclusive below ``claims.min_seeds`` seeds, or when ``hold`` stops a
    pass.  The named ``values`` (but their SE) also fill the declared texts."""
    k, min_seeds = float(a.z), int(a.min_seeds)
    verdict, z_test, det = z_above(effect, err, k)
    if (hold and verdict == "pass") or n < min_seeds:
        verdict = "inconclusive"
    fields = {c: x for c, x in values.items() if c != "se"}
    return result(
        claim,
        qualifier,
        verdict=verdict,
        detectable=det,
        values=values,
        false_pass=false_pass_z(k, n - 1),
        z_test=z_test,
        n=n,
        k=k,
        err=err,
        min_seeds=min_seeds,
        **fields,
        **kw,
    )


def claims_table(
    runs: pd.DataFrame, theory: pd.DataFrame, p, layers: pd.DataFrame | None = None
) -> pd.DataFrame:
    a = p.claims
    margin = 100 * float(a.acc_margin)
    acc = accuracy_table(runs)
    acc["se"] = acc.final_std / np.sqrt(acc.n)
    results = []
    for (ds, act, net), d in acc[acc.method.isin(["SNIP", "SBP-SR"])].groupby(
        ["dataset", "activation", "net"]
    ):
        both = d.pivot_table(index="sparsity", columns="method", values="final_mean").dropna()
        if both.empty or set(both.columns) != {"SNIP", "SBP-SR"}:
            continue
        s = both.index.max()
        at = d[d.sparsity == s].set_index("method")
        diff = both.loc[s, "SBP-SR"] - both.loc[s, "SNIP"]
        se = float(np.hypot(at.loc["SBP-SR", "se"], at.loc["SNIP", "se"]))
        v = {"sbp_sr": both.loc[s, "SBP-SR"], "snip": both.loc[s, "SNIP"], "se": se}
        f = dict(measured=diff, tolerance=margin, se=se, acc_margin=margin, s=s, net=net, act=act)
        q = f"{ds},{act},{net},s={s:g}"
        results.append(
            _z("sbp_sr_vs_snip", q, diff + margin, se, int(at.n.min()), a, v, ds=ds, **f)
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
        v = {"sbp_sr": ours, "best": float(best.final_mean), "se": se}
        accs = "; ".join(f"{m} {x:.2f}%" for m, x in zip(d.method, d.final_mean))
        f = dict(measured=gap, tolerance=margin, se=se, acc_margin=margin, s=best.sparsity, net=net)
        q = f"{ds},{net},s={best.sparsity:g}"
        results.append(
            _z(
                "sbp_sr_best",
                q,
                gap + margin,
                se,
                int(d.n.min()),
                a,
                v,
                ds=ds,
                accs=accs,
                best_method=best.method,
                **f,
            )
        )
    return build(p.study, CLAIMS, results + _layer_claims(runs, a, layers))


def _diff(st, rs, col):
    """Mean of ``col`` over Stable runs minus over ResNet runs, the unpaired SE, and n."""
    a, b = st[col].to_numpy(float), rs[col].to_numpy(float)
    n = int(min(len(a), len(b)))
    se = float(np.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))) if n >= 2 else np.nan
    return float(a.mean()), float(b.mean()), se, n


def _layer_claims(runs, a, layers):
    ratio_tol, k = float(a.uniform_ratio), float(a.z)
    layers = pd.DataFrame() if layers is None else layers
    per = seed_section_stats(layers, net="resnet32", runs=runs) if len(layers) else pd.DataFrame()
    if per.empty:
        texts = dict(
            statement="Stable ResNet keeps a more uniform per-layer fraction than ResNet "
            "within each section",
            expected="spread ratio <= {ratio:g}",
            detail="no layer reports of SNIP on ResNet32 and SBP-SR on Stable ResNet32",
            test="spread(ResNet) - spread(Stable) > k SE over seeds",
        )
        return [
            result(
                "uniform_within_sections",
                measured=np.nan,
                tolerance=ratio_tol,
                verdict="inconclusive",
                texts=texts,
                ratio=ratio_tol,
            )
        ]
    results = []
    for (act, s), d in per.groupby(["activation", "sparsity"]):
        rs = d[d.variant == "ResNet32 (SNIP)"]
        st = d[d.variant == "Stable ResNet32 (SBP-SR)"]
        if rs.empty or st.empty:
            continue
        q = f"{act},s={s:g}"
        m_st, m_rs, se, n = _diff(st, rs, "spread")
        ratio = m_st / m_rs if m_rs > 0 else np.inf
        v = {"stable": m_st, "resnet": m_rs, "se": se}
        f = dict(measured=ratio, tolerance=ratio_tol, ratio=ratio_tol, diff=m_rs - m_st)
        results.append(
            _z(
                "uniform_within_sections",
                q,
                m_rs - m_st,
                se,
                n,
                a,
                v,
                hold=ratio > ratio_tol,
                act=act,
                s=s,
                **f,
            )
        )
        m_st, m_rs, se, n = _diff(st, rs, "last_section_kept")
        v = {"stable": m_st, "resnet": m_rs, "se": se}
        tol = k * se if np.isfinite(se) else np.nan
        f = dict(measured=m_st - m_rs, tolerance=tol, se=se, act=act, s=s)
        results.append(_z("deeper_layers_kept", q, m_st - m_rs, se, n, a, v, **f))
    return results
