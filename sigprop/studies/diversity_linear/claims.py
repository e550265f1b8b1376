"""Claims of 004 Thms. 3/6 (initialization), Fig. 2 and the Sec. 5 findings (Chen, Wang, Zhao,
Papailiopoulos & Koutris 2018, arXiv:1806.03791), and sanity rows for Thms. 1-3.

Kinds: ``thm6_expectation`` and the trained-net rows are ``claim`` rows.  Sanity rows (shown
apart, never tallied): ``thm3_bound_holds`` (Eq. 4.1 follows algebraically from Thm. 6, which
``thm6_expectation`` checks), ``diversity_rises_with_width[thm6]`` /
``diversity_falls_with_depth[thm6]`` (the same init draws as ``thm6_expectation``; the Thm. 6
curve is monotone, so the trend follows once Thm. 6 holds), ``thm1_two_layer_order`` and
``thm2_two_layer_tanh_order`` (004 Thms. 1-2 are Theta / Omega statements with unspecified
constants: no finite grid can refute them; checked against the band of constants of
tests/test_theory_diversity.py).  Where the nets have one width per depth (paper scale: a fixed
parameter count), a "rises with width" row and its "falls with depth" twin are one measurement
(width falls as depth rises, so the two taus are equal and opposite): the depth row is the claim,
the width row a sanity identity (:func:`twin_of`).

Ordering claims ("rises with" / "falls with") are the mean over groups (e.g. depths) of Kendall's
tau-b across the other variable (:func:`group_rank`): pass at ``claims.tau_min``, fail at a
wrong sign as large and as significant, inconclusive in between and at exactly zero (the rule
of :func:`sigprop.claims.rank_claim`).  A
group whose y takes a single value (a tie across the whole group) holds no order and is left
out, not counted as tau 0.  The test string states the attainable levels of the mean and its
chance of passing when the order within each group is random, ties kept
(:func:`sigprop.claims.tau_null_law` per group, convolved over groups).

The "[train]" diversity is averaged over a window of matched training progress
(:func:`sigprop.studies.diversity_linear.analysis.window_diversity`), so that every net is
compared over the same part of its training."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...claims import (
    FALSE_PASS_MAX,
    coarse,
    frame,
    kendall_tau,
    pooled,
    rank_claim,
    rank_verdict,
    row,
    sanity,
    tau_null_law,
)
from ...theory import diversity as th
from .analysis import batch_table, init_table, net_table

SOURCE_FIG2 = "004 Sec. 5, Fig. 2"
SOURCE_THM = "004 Sec. 4, Thm. 3 (Eq. 4.1); App. C, Thm. 6"
SOURCE_THRESH = "004 Sec. 5 (findings 1-3), Figs. 3(a), 4(a)"
MAX_NULL_COMBINATIONS = 10**7  # most level combinations the null law of a mean tau convolves


def trend(df: pd.DataFrame, x: str, y: str, by: str) -> tuple[float, str]:
    """Mean over groups ``by`` of Kendall tau-b(x, y), over the groups with >= 2 values of x
    and more than one value of y (a group tied in y holds no order); without such a group and
    when no group has two values of x (e.g. nets of fixed parameter count, one width per
    depth), tau-b over all rows.  Returns (tau, description)."""
    d = df[[x, y, by]]
    taus = {k: kendall_tau(g[x], g[y]) for k, g in d.groupby(by)}
    tied = [k for k, g in d.groupby(by) if g[x].nunique() >= 2 and g[y].nunique() < 2]
    taus = {k: v for k, v in taus.items() if np.isfinite(v)}
    note = (f"; left out, tied in {y}: {by} " + ", ".join(map(str, tied))) if tied else ""
    if taus:
        return float(np.mean(list(taus.values()))), (
            f"tau-b per {by}: " + ", ".join(f"{k}: {v:+.2f}" for k, v in taus.items()) + note
        )
    if any(g[x].nunique() >= 2 for _, g in d.groupby(by)):
        return np.nan, f"every {by} with two values of {x} is tied in {y}{note}"
    return kendall_tau(d[x], d[y]), f"tau-b over all {len(d)} nets (no {by} with two values of {x})"


def mean_tau_null(laws: list[dict]) -> dict:
    """The law of the mean over groups of Kendall's tau when the order within each group is
    random (ties kept): the convolution of the groups' laws (:func:`sigprop.claims.tau_null_law`,
    each ``{"levels", "probs"}``), as ``{mean: probability}``."""
    dist = {0.0: 1.0}
    for law in laws:
        nxt: dict[float, float] = {}
        for a, pa in dist.items():
            for b, pb in zip(law["levels"], law["probs"]):
                key = round(a + float(b), 9)  # equal sums reached in another order merge
                nxt[key] = nxt.get(key, 0.0) + pa * float(pb)
        dist = nxt
    g = max(len(laws), 1)
    out: dict[float, float] = {}
    for k, v in dist.items():
        key = round(k / g, 9)
        out[key] = out.get(key, 0.0) + v
    return out


def _groups(d: pd.DataFrame, x: str, y: str, by: str) -> list[pd.DataFrame]:
    """The groups an ordering over ``x`` is tested in: those with >= 2 values of x and more than
    one value of y; when no group has two values of x, all rows as one group."""
    gs = [g for _, g in d.groupby(by) if g[x].nunique() >= 2]
    if not gs:
        return [d] if d[y].nunique() >= 2 else []
    return [g for g in gs if g[y].nunique() >= 2]


def group_rank(df: pd.DataFrame, x: str, y: str, by: str, tau_min: float, sign: int = +1) -> dict:
    """An ordering claim as the mean over groups ``by`` of Kendall tau-b(x, y) (:func:`trend`):
    ``sign * tau >= tau_min`` passes and ``sign * tau <= -tau_min`` fails, each stated with its
    chance under a random order within the groups (a fail only where that is at most 5 %:
    :func:`sigprop.claims.rank_verdict`; a pass's chance is ``false_pass``, which
    :func:`sigprop.claims.row` holds to 5 %); in between is inconclusive, and so is a mean of
    exactly 0 (no order either way).  Groups tied in y are
    left out; when every group is, the claim is inconclusive (a tie is no evidence against the
    ordering: the batch sizes and thresholds are read on a grid of powers of 2).  Returns measured, verdict, test, detectable (the smallest
    attainable ``sign * mean tau`` >= tau_min, in tau) and the description."""
    tau, desc = trend(df, x, y, by)
    d = df[[x, y, by]].dropna()
    if d[x].nunique() < 2:
        return dict(
            measured=tau,
            verdict="inconclusive",
            detectable=np.nan,
            desc=desc,
            test=f"Kendall tau-b({x}, {y}): fewer than 2 distinct values of {x}, no order to test",
        )
    groups = _groups(d, x, y, by)
    if not groups:
        return dict(
            measured=tau,
            verdict="inconclusive",
            detectable=np.nan,
            desc=desc,
            test=(
                f"Kendall tau-b({x}, {y}) per {by}: {y} is tied within every group, "
                "no order to test (a tie is not evidence against the ordering)"
            ),
        )
    laws = [tau_null_law(g[x], g[y]) for g in groups]
    if np.prod([len(lw["levels"]) for lw in laws], dtype=float) > MAX_NULL_COMBINATIONS:
        return dict(
            measured=tau,
            verdict="inconclusive",
            detectable=np.nan,
            desc=desc,
            test=f"mean Kendall tau-b over {len(groups)} groups: null law not computed "
            "(too many attainable values)",
        )
    null = mean_tau_null(laws)
    oriented = {sign * k: v for k, v in null.items()}
    reach = np.array(sorted(k for k in oriented if k >= tau_min - 1e-12))
    detectable = float(reach.min()) if reach.size else np.nan
    p_pass = sum(v for k, v in oriented.items() if k >= tau_min - 1e-12)
    p_fail = sum(v for k, v in oriented.items() if k <= -tau_min + 1e-12)
    sizes = [int(g[x].nunique()) for g in groups]
    n_items = int(sum(sizes))
    ties = sum(len(g) - g[y].nunique() for g in groups)
    sampled = any(lw["method"] == "sampled" for lw in laws)
    test = (
        f"mean over {len(groups)} group(s) ({by}) of Kendall tau-b({x}, {y}), "
        f"{'>=' if sign > 0 else '<='} {sign * tau_min:+g}; {n_items} ordered items in groups "
        f"of {sizes}; smallest attainable mean >= {tau_min:g}: {detectable:.3g}; "
        f"P(pass | random order within groups) = {p_pass:.3f}"
        f"{' (ties kept: ' + str(ties) + ' tied value(s) in ' + y + ')' if ties else ''}"
        f"{' (null law sampled)' if sampled else ''}; fail at a wrong sign as large "
        f"({'<=' if sign > 0 else '>='} {-sign * tau_min:+g}) only when significant "
        f"(its P under a random order within groups = {p_fail:.3f}; significant at <= "
        f"{FALSE_PASS_MAX:g}), else inconclusive; groups tied in {y} left out"
    )
    if not np.isfinite(tau):
        verdict = "inconclusive"
    elif n_items < 4:
        verdict, test = "inconclusive", test + "; fewer than 4 items"
    elif not reach.size:
        verdict, test = "inconclusive", test + "; no attainable value reaches the threshold"
    else:
        verdict = rank_verdict(sign * tau, tau_min, p_pass, p_fail)
    return dict(
        measured=tau,
        verdict=verdict,
        test=test,
        detectable=detectable,
        desc=desc,
        false_pass=float(p_pass),
    )


def twin_of(df: pd.DataFrame, x: str, other: str, by_x: str, by_other: str) -> bool:
    """Whether the ordering over ``x`` (grouped by ``by_x``) is the same measurement as the one
    over ``other`` (grouped by ``by_other``): neither has a group with two values of its
    variable (both fall back to one tau over all nets) and ``x`` is a strictly monotone function
    of ``other`` over the nets (one width per depth), so the two taus are equal up to sign."""
    d = df[[x, other]].drop_duplicates()
    single = all(g[x].nunique() < 2 for _, g in df.groupby(by_x)) and all(
        g[other].nunique() < 2 for _, g in df.groupby(by_other)
    )
    if not single or len(d) < 2 or d[x].nunique() != len(d) or d[other].nunique() != len(d):
        return False
    t = kendall_tau(d[x], d[other])
    return bool(np.isfinite(t) and abs(abs(t) - 1.0) < 1e-9)


def _tau_claim(
    study, cid, claim, source, r: dict, tau_min, sign=+1, extra="", kind="claim"
) -> dict:
    exp = f"tau-b {'>=' if sign > 0 else '<='} {sign * tau_min:+g}"
    desc = r["desc"] + extra
    fn = {"claim": row, "sanity": sanity, "summary": pooled}[kind]
    kw = {"kind": kind, "false_pass": r.get("false_pass", np.nan)} if kind == "claim" else {}
    return fn(
        study,
        cid,
        claim,
        source,
        measured=r["measured"],
        expected=exp,
        tolerance=tau_min,
        verdict=r["verdict"],
        detail=desc if np.isfinite(r["measured"]) else f"no rank correlation computable; {desc}",
        test=r["test"],
        detectable=r["detectable"],
        **kw,
    )


def _twin_row(rows: list[dict], measured: float) -> str | None:
    """The claim row among ``rows`` whose measured tau has the same magnitude as ``measured``
    (to 12 digits, and not a :func:`sigprop.claims.coarse` value that unrelated orderings can
    share): the same ordering of the same nets measured twice, or None."""
    if not np.isfinite(measured) or coarse(measured):
        return None
    for r in rows:
        m = r["measured"]
        if (
            r["kind"] == "claim"
            and np.isfinite(m)
            and round(abs(m), 12) == round(abs(measured), 12)
        ):
            return r["claim_id"]
    return None


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, p) -> pd.DataFrame:
    """Claims of 004 Thms. 3/6 (initialization), Fig. 2 and the Sec. 5 findings (see the config)."""
    study = p.study
    nt = net_table(runs, p.analysis)
    rows = _init_claims(study, init_table(runs, theory), p, runs, theory)
    if len(nt):
        rows += _fig2_claims(study, nt, p) + _threshold_claims(study, nt, batch_table(runs), p)
    return frame(rows)


def depth1_bs(runs: pd.DataFrame) -> pd.DataFrame:
    """Per init draw of the depth-1 (2-layer, 004 Thm. 1) nets: ``bs = n init_num / init_den``
    (B_S = n Delta_S of that draw), with width, n and d."""
    r = runs[runs.metric.isin(["init_num", "init_den"]) & (runs.depth == 1)]
    if not len(r):
        return pd.DataFrame(columns=["width", "bs", "n", "d"])
    n = float(runs[runs.metric == "n_train"].value.iloc[0])
    d = float(runs[runs.metric == "d_in"].value.iloc[0])
    w = r.pivot_table(index=["width", "run_id", "probe"], columns="metric", values="value")
    return pd.DataFrame(
        {
            "width": w.index.get_level_values("width").astype(int),
            "bs": n * w.init_num.to_numpy() / w.init_den.to_numpy(),
            "n": n,
            "d": d,
        }
    )


def _init_claims(
    study: str, it: pd.DataFrame, p, runs: pd.DataFrame, theory: pd.DataFrame
) -> list[dict]:
    tau_min, k = float(p.claims.tau_min), float(p.claims.z_max)
    want = float(p.claims.within_fraction)
    if not len(it):
        return []
    rows = []
    for cid, claim, x, by, sign in (
        (
            "diversity_rises_with_width[thm6]",
            (
                "At N(0,1) initialization (004's setting) the "
                "E-ratio (n x gradient diversity) rises with the width"
            ),
            "width",
            "depth",
            +1,
        ),
        (
            "diversity_falls_with_depth[thm6]",
            ("At N(0,1) initialization (004's setting) the E-ratio falls with the depth"),
            "depth",
            "width",
            -1,
        ),
    ):
        r = group_rank(it, x, "rho", by, tau_min, sign)
        rows.append(
            _tau_claim(
                study,
                cid,
                claim + " (004 Thm. 3 and its discussion)",
                SOURCE_THM,
                r,
                tau_min,
                sign,
                extra=(
                    f"; {int(it.draws.min())}+ draws per net; sanity: the same "
                    "draws as thm6_expectation, and the Thm. 6 curve is monotone "
                    "in width and depth, so the trend follows once Thm. 6 holds"
                ),
                kind="sanity",
            )
        )
    z_b = (it.rho - it.bound) / it.rho_se
    ok_b = bool((it.rho + k * it.rho_se >= it.bound).all())
    worst = it.loc[z_b.idxmin()]
    rows.append(
        sanity(
            study,
            "thm3_bound_holds",
            "The Thm. 3 (Eq. 4.1) lower bound holds for the "
            "E-ratio rho = E[n sum ||grad f_i||^2] / E[||sum grad f_i||^2] of every net",
            SOURCE_THM,
            measured=float(z_b.min()),
            expected="rho >= bound (z >= -k)",
            tolerance=k,
            verdict="pass" if ok_b else "fail",
            detail=(
                f"min over {len(it)} nets of (rho - bound)/SE at width "
                f"{int(worst.width)}, depth {int(worst.depth)}: rho = {worst.rho:.4g} "
                f"± {worst.rho_se:.2g}, bound = {worst.bound:.4g}; n = {int(worst.n)}, "
                f"d = {int(worst.d)} (the bound is for n -> infinity; Thm. 6 at this n "
                f"is {worst.thm6:.4g}); bound/rho from "
                f"{(it.bound / it.rho).min():.2f} to {(it.bound / it.rho).max():.2f}; "
                "sanity: Eq. 4.1 follows algebraically from Thm. 6 (checked by "
                "thm6_expectation) and the same draws"
            ),
            test=f"min over nets of (rho - bound) / SE >= -{k:g}",
        )
    )
    margin = float(p.claims.margin)
    z6 = (it.rho - it.thm6) / it.rho_se
    frac = float(np.mean(np.abs(z6) <= k))
    rel = it.rho / it.thm6 - 1
    rel_se = float((it.rho_se / it.rho).median())
    rows.append(
        row(
            study,
            "thm6_expectation",
            "Thm. 6 gives the expected sums of squared "
            "per-example gradient norms and of inner products (their ratio at the "
            "data set's n) of linear nets at N(0,1) initialization",
            SOURCE_THM,
            measured=frac,
            expected=f">= {want:g} of nets with |rho - Thm. 6| <= {k:g} SE",
            tolerance=want,
            verdict="pass" if frac >= want else "fail",
            detail=(
                f"{len(it)} nets, {int(it.draws.min())}-{int(it.draws.max())} draws "
                f"each; max |z| {np.nanmax(np.abs(z6)):.2f}; rho/Thm. 6 - 1 from "
                f"{rel.min():+.3f} to {rel.max():+.3f} (median {rel.median():+.3f}); "
                f"SE/rho median {rel_se:.3f}"
            ),
            test=(
                f"per net |rho - Thm. 6| <= {k:g} SE (delta method over independent "
                f"draws; the nets' draws are independent), for >= {want:g} of the "
                f"{len(it)} nets; detectable: relative offset of rho from Thm. 6 "
                f"({k:g} x the median SE/rho)"
            ),
            detectable=k * rel_se,
            margin=margin,
        )
    )
    rows += _two_layer_sanity(study, depth1_bs(runs), theory)
    return rows


def _two_layer_sanity(study: str, d1: pd.DataFrame, theory: pd.DataFrame) -> list[dict]:
    """004 Thms. 1-2 (Theta / Omega statements with unspecified constants, so sanity rows):
    Thm. 1 on the depth-1 init draws (B_S = n Delta_S per draw), Thm. 2 on the theory job's
    Monte Carlo of 2-layer tanh nets.  Both against the band of constants [0.5, 5] / [0.5, 4]
    of tests/test_theory_diversity.py (for a lower bound only the low side can refute)."""
    rows = []
    if len(d1):
        ratios = {
            int(K): float(
                np.quantile(g.bs, 0.1) / th.two_layer_linear_order(g.n.iloc[0], K, g.d.iloc[0])
            )
            for K, g in d1.groupby("width")
        }
        lo = min(ratios.values())
        n, d = int(d1.n.iloc[0]), int(d1.d.iloc[0])
        rows.append(
            sanity(
                study,
                "thm1_two_layer_order",
                "004 Thm. 1: for a 2-layer linear net, B_S = n Delta_S "
                ">= Theta(nKd) / Theta(Kn + dn + Kd) with constant probability",
                "004 Sec. 3, Thm. 1",
                measured=lo,
                expected="10% quantile of B_S / (nKd/(Kn+dn+Kd)) >= 0.5 at every width",
                tolerance=0.5,
                verdict="pass" if lo >= 0.5 else "fail",
                detail=(
                    f"depth 1 (L = 2), n = {n}, d = {d}, draws per width "
                    f"{int(d1.groupby('width').size().min())}; q10(B_S)/order per width: "
                    + ", ".join(f"K{K}: {v:.2f}" for K, v in ratios.items())
                    + "; sanity: Thm. 1 hides its constants, so no finite grid can refute it; the "
                    "band is that of tests/test_theory_diversity.py"
                ),
                test="min over widths of q10(B_S) / order >= 0.5",
            )
        )
    t = theory[theory.quantity.astype(str).str.startswith("thm2_")] if "quantity" in theory else []
    if len(t):
        w = t.pivot_table(index="width", columns="quantity", values="value")
        ratio = w.thm2_ratio_mc / w.thm2_order
        low = ((w.thm2_ratio_mc + 3 * w.thm2_ratio_mc_se) / w.thm2_order).min()
        rows.append(
            sanity(
                study,
                "thm2_two_layer_tanh_order",
                "004 Thm. 2: for a 2-layer net with an odd, "
                "bounded, monotone activation (tanh), E[n sum ||grad f_i||^2] / E[||sum grad f_i||^2] "
                ">= Omega(K d^2 / (K d + K + d))",
                "004 Sec. 3, Thm. 2",
                measured=float(ratio.min()),
                expected="rho / order >= 0.5 at every width (within 3 SE)",
                tolerance=0.5,
                verdict="pass" if low >= 0.5 else "fail",
                detail=(
                    f"Monte Carlo (theory job): d = {int(t.d_in.iloc[0])}, "
                    f"n = {int(w.thm2_n.iloc[0])}, {int(w.thm2_draws.iloc[0])} draws per width; "
                    "rho (± SE) / order per width: "
                    + ", ".join(
                        f"K{int(K)}: {r.thm2_ratio_mc:.3g} ± {r.thm2_ratio_mc_se:.2g} / "
                        f"{r.thm2_order:.3g}"
                        for K, r in w.iterrows()
                    )
                    + "; sanity: an Omega statement with unspecified constants; the band is that "
                    "of tests/test_theory_diversity.py"
                ),
                test="min over widths of (rho + 3 SE) / order >= 0.5",
            )
        )
    return rows


def _fig2_claims(study: str, nt: pd.DataFrame, p) -> list[dict]:
    tau_min, budget = float(p.claims.tau_min), float(p.analysis.fig2_epochs)
    nt = nt.fillna({"largest_batch": 0.0})  # no converging batch size: below every batch
    rows = []
    for cid, claim, x, by, sign, y in (
        (
            "diversity_rises_with_width[train]",
            ("The gradient diversity during training rises with the width (Fig. 2(a))"),
            "width",
            "depth",
            +1,
            "div_train",
        ),
        (
            "diversity_falls_with_depth[train]",
            ("The gradient diversity during training falls with the depth (Fig. 2(a))"),
            "depth",
            "width",
            -1,
            "div_train",
        ),
        (
            "diversity_rises_with_width[init]",
            (
                "The gradient diversity of the trained nets "
                "at their initialization (fc init, the data set) rises with the width"
            ),
            "width",
            "depth",
            +1,
            "div_init",
        ),
        (
            "diversity_falls_with_depth[init]",
            (
                "The gradient diversity of the trained nets "
                "at their initialization falls with the depth"
            ),
            "depth",
            "width",
            -1,
            "div_init",
        ),
        (
            "largest_batch_rises_with_width",
            (
                f"The largest batch size converging to the loss "
                f"target within {budget:g} epochs rises with the width (Fig. 2(b))"
            ),
            "width",
            "depth",
            +1,
            "largest_batch",
        ),
        (
            "largest_batch_falls_with_depth",
            (
                f"The largest batch size converging within "
                f"{budget:g} epochs falls with the depth (Sec. 1: deeper nets are less amenable to "
                "large-batch training)"
            ),
            "depth",
            "width",
            -1,
            "largest_batch",
        ),
    ):
        r = group_rank(nt, x, y, by, tau_min, sign)
        desc = ""
        if y == "largest_batch":
            desc += (
                "; no converging batch counts as 0; a group tied in the largest batch is "
                "left out; largest batch per net "
                + ", ".join(
                    f"K{int(r.width)}L{int(r.depth)}: {r.largest_batch:g}" for r in nt.itertuples()
                )
            )
        elif y == "div_train":
            w = p.analysis.div_window
            desc += (
                f"; diversity per run averaged over matched progress 0 to {w.progress:g} of "
                f"the log-loss decrease to the target ({int(w.points)} points interpolated "
                "between measurements), per net the mean over the runs that reach it: "
                + ", ".join(
                    f"K{int(q.width)}L{int(q.depth)} {int(q.window_runs)}/{int(q.runs)}"
                    for q in nt.itertuples()
                )
            )
        rows.append(_tau_claim(study, cid, claim, SOURCE_FIG2, r, tau_min, sign, extra=desc))
    rows = _twins(
        rows,
        nt,
        [
            ("diversity_rises_with_width[train]", "diversity_falls_with_depth[train]"),
            ("diversity_rises_with_width[init]", "diversity_falls_with_depth[init]"),
            ("largest_batch_rises_with_width", "largest_batch_falls_with_depth"),
        ],
    )
    for which, col in (("train", "div_train"), ("init", "div_init")):
        rc = rank_claim(nt[col], nt.largest_batch, tau_min)
        rc["desc"] = (
            f"tau-b over {len(nt)} nets (no converging batch counts as 0); largest "
            f"batch from {nt.largest_batch.min():g} to {nt.largest_batch.max():g}"
        )
        cid = f"largest_batch_rises_with_diversity[{which}]"
        claim = (
            "The largest batch size converging within the budget grows with the gradient "
            f"diversity ({'averaged over training' if which == 'train' else 'at initialization'}"
            "; Fig. 2(c))"
        )
        twin = _twin_row(rows, rc["measured"])
        if twin is not None:
            rc["desc"] += (
                f"; |tau| equals that of {twin} (the same ordering of the same nets: "
                "the initial diversity is monotone in the depth here), so it "
                "corroborates that claim and is not counted"
            )
        rows.append(
            _tau_claim(
                study,
                cid,
                claim,
                SOURCE_FIG2,
                rc,
                tau_min,
                kind="summary" if twin is not None else "claim",
            )
        )
    return rows


def _threshold_claims(study: str, nt: pd.DataFrame, bt: pd.DataFrame, p) -> list[dict]:
    tau_min, want = float(p.claims.tau_min), float(p.claims.within_fraction)
    th_cfg = p.analysis.threshold
    frac = float(nt.has_threshold.mean())
    bad = nt[~nt.has_threshold]
    rows = [
        row(
            study,
            "batch_threshold_exists",
            "For every net there is a batch-size "
            "threshold B*: up to B* the epochs to the target stay near their minimum, "
            "beyond it they grow",
            SOURCE_THRESH,
            measured=frac,
            expected=f">= {want:g} of nets",
            tolerance=want,
            verdict="pass" if frac >= want else "fail",
            detail=(
                f"flat: epochs <= max({th_cfg.flat_factor} e_min, e_min + 1)"
                f"; growth: epochs at the largest batch >= "
                f"{th_cfg.growth_factor} e_min; B* per net "
                + ", ".join(
                    f"K{int(r.width)}L{int(r.depth)}: {r.threshold:g}" for r in nt.itertuples()
                )
                + (
                    "; no threshold: "
                    + ", ".join(f"K{int(r.width)}L{int(r.depth)}" for r in bad.itertuples())
                    if len(bad)
                    else ""
                )
            ),
            test=(
                f"count: fraction of the {len(nt)} nets with a threshold (median epochs over "
                f"seeds) >= {want:g}; resolution one net"
            ),
            detectable=1.0 / len(nt) if len(nt) else np.nan,
        )
    ]
    r = group_rank(nt[nt.has_threshold], "width", "threshold", "depth", tau_min)
    rows.append(
        _tau_claim(
            study,
            "threshold_rises_with_width",
            "The batch threshold B* rises with the width",
            SOURCE_THRESH,
            r,
            tau_min,
        )
    )
    r = group_rank(nt[nt.has_threshold], "depth", "threshold", "width", tau_min, -1)
    rows.append(
        _tau_claim(
            study,
            "threshold_falls_with_depth",
            "The observed threshold B* becomes smaller when the network becomes deeper",
            "004 Sec. 1 (contribution); Sec. 5, Fig. 3",
            r,
            tau_min,
            -1,
        )
    )
    rows = _twins(
        rows, nt[nt.has_threshold], [("threshold_rises_with_width", "threshold_falls_with_depth")]
    )
    top = bt[bt.batch_size == bt.batch_size.max()].copy()
    top["ep"] = top["median"].replace(np.inf, np.nan).fillna(top.budget + 1)
    r = group_rank(top, "width", "ep", "depth", tau_min, -1)
    rows.append(
        _tau_claim(
            study,
            "wider_fewer_epochs_at_large_batch",
            "At the largest batch "
            f"size ({int(bt.batch_size.max())}) wider nets need fewer epochs to "
            "the target",
            SOURCE_THRESH,
            r,
            tau_min,
            -1,
            extra="; unconverged runs ranked as budget + 1 (a depth tied at the "
            "largest batch is left out)",
        )
    )
    return rows


def _twins(rows: list[dict], nets: pd.DataFrame, pairs: list[tuple[str, str]]) -> list[dict]:
    """Where the nets have one width per depth (:func:`twin_of`), each "rises with width" row of
    ``pairs`` repeats its "falls with depth" twin's measurement: it becomes a sanity row that
    checks the identity tau(width, y) = -tau(depth, y) on the data, never tallied."""
    if not twin_of(nets, "width", "depth", "depth", "width"):
        return rows
    by_id = {r["claim_id"]: r for r in rows}
    out = []
    for r in rows:
        pair = next((pr for pr in pairs if pr[0] == r["claim_id"]), None)
        if pair is None or pair[1] not in by_id:
            out.append(r)
            continue
        twin = by_id[pair[1]]
        a, b = float(r["measured"]), float(twin["measured"])
        same = bool(np.isfinite(a) and np.isfinite(b) and abs(a + b) <= 1e-12) or (
            not np.isfinite(a) and not np.isfinite(b)
        )
        out.append(
            sanity(
                r["study"],
                r["claim_id"],
                r["claim"],
                r["source"],
                measured=a,
                expected=f"= -tau of {pair[1]}",
                tolerance=1e-12,
                verdict="pass" if same else "fail",
                detail=(
                    f"one width per depth (width falls as depth rises), so this "
                    f"ordering is the measurement of {pair[1]} with the sign "
                    f"flipped: {a:+.4g} against {b:+.4g}; {r['detail']}"
                ),
                test=f"identity: the same measurement as {pair[1]} (one width per depth)",
            )
        )
    return out
