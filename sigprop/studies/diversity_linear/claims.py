"""The statistics of the claims of 004 Thms. 3/6 (initialization), Fig. 2 and the Sec. 5
findings (Chen, Wang, Zhao, Papailiopoulos & Koutris 2018, arXiv:1806.03791), and of the sanity
rows for Thms. 1-3; the claims themselves are declared in ``CLAIMS`` (``__init__.py``).

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
the width row a sanity identity (:func:`twin_of`, :func:`_twin`).

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
    kendall_tau,
    level_verdict,
    level_words,
    rank_claim,
    significant_levels,
    tau_null_law,
)
from ...claims.declared import build, result
from ...theory import diversity as th
from . import CLAIMS, COUNTED_TWICE, SOURCE, SOURCE_THM, TWIN, VARIANTS
from .analysis import batch_table, init_table, net_table

DIVERSITY = ("diversity_rises_with_width", "diversity_falls_with_depth")
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


def group_rank(
    df: pd.DataFrame,
    x: str,
    y: str,
    by: str,
    tau_min: float,
    sign: int = +1,
    significance: bool = True,
) -> dict:
    """An ordering claim as the mean over groups ``by`` of Kendall tau-b(x, y) (:func:`trend`),
    tested against its null law under a random order within the groups: it passes where
    ``sign * tau`` reaches the smallest attainable mean ``>= tau_min`` that a random order reaches
    at most 5 % of the time, fails at the mirrored threshold on the wrong side
    (:func:`sigprop.claims.significant_levels`), and is inconclusive in between; so is a mean of
    exactly 0 (no order either way).  Groups tied in y are left out; when every group is, the
    claim is inconclusive (a tie is no evidence against the ordering: the batch sizes and
    thresholds are read on a grid of powers of 2).  Returns measured, verdict, test, detectable
    (the smallest ``sign * mean tau`` that passes, NaN when none can), ``false_pass`` (the
    chance a random order passes) and the description.  ``significance=False`` (a sanity row:
    the trend of a curve a theorem makes monotone, where a random order is no null) passes at
    the smallest attainable mean ``>= tau_min`` and fails at the mirrored one, whatever their
    chance under a random order."""
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
    lv = np.array(sorted(oriented))
    probs = np.array([oriented[k] for k in lv])
    pass_at, p_pass, fail_at, p_fail = significant_levels(
        lv, probs, tau_min, FALSE_PASS_MAX if significance else 1.0
    )
    detectable = pass_at
    sizes = [int(g[x].nunique()) for g in groups]
    n_items = int(sum(sizes))
    ties = sum(len(g) - g[y].nunique() for g in groups)
    sampled = any(lw["method"] == "sampled" for lw in laws)
    test = (
        f"mean over {len(groups)} group(s) ({by}) of Kendall tau-b({x}, {y}), "
        f"{'>=' if sign > 0 else '<='} {sign * tau_min:+g} and significant at <= "
        f"{FALSE_PASS_MAX:g} under a random order within groups; {n_items} ordered items in "
        f"groups of {sizes}: "
        f"{level_words(pass_at, p_pass, fail_at, p_fail, tau_min, sign, 'random order within groups')}"
        "; else inconclusive"
        f"{' (ties kept: ' + str(ties) + ' tied value(s) in ' + y + ')' if ties else ''}"
        f"{' (null law sampled)' if sampled else ''}; groups tied in {y} left out"
    )
    if n_items < 4 and np.isfinite(tau):
        verdict, test = "inconclusive", test + "; fewer than 4 items"
    else:
        verdict = level_verdict(sign * tau, pass_at, fail_at)
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


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, p) -> pd.DataFrame:
    """Claims of 004 Thms. 3/6 (initialization), Fig. 2 and the Sec. 5 findings (see the config)."""
    nt = net_table(runs, p.analysis)
    results = _init_claims(init_table(runs, theory), p, runs, theory)
    if len(nt):
        results += _fig2_claims(nt, p) + _threshold_claims(nt, batch_table(runs), p)
    return build(p.study, CLAIMS, results, SOURCE)


def _tau(claim, qualifier, r: dict, tau_min, *, kind=None, source=None, texts=None, **fields):
    """The row of an ordering ``r`` (:func:`group_rank` or :func:`sigprop.claims.rank_claim`):
    a claim row holds its pass to the chance of passing under a random order (``false_pass``)."""
    cid = f"{claim}[{qualifier}]" if qualifier else claim
    counted = (kind or CLAIMS[claim].kind) == "claim"
    return result(
        claim,
        qualifier,
        measured=r["measured"],
        tolerance=tau_min,
        verdict=r["verdict"],
        detectable=r["detectable"],
        false_pass=r.get("false_pass", np.nan) if counted else np.nan,
        kind=kind,
        source=source,
        texts=VARIANTS.get(cid) if texts is None else texts,
        tau_min=tau_min,
        test=r["test"],
        desc=r.get("desc", ""),
        no_tau="" if np.isfinite(r["measured"]) else "no rank correlation computable; ",
        **fields,
    )


def _orderings(
    df: pd.DataFrame, pair: tuple[str, str], q: str, y: str, tau_min: float, twins=True, **kw
) -> list[dict]:
    """The rows of the claims ``pair`` ("rises with width", "falls with depth"), qualifier ``q``,
    of ``y`` over the nets ``df`` (:func:`group_rank`); where ``twins`` and the nets have one
    width per depth (:func:`twin_of`), the width row repeats the depth row's measurement
    (:func:`_twin`)."""
    significance = kw.get("kind") != "sanity"
    rises, falls = (
        _tau(c, q, group_rank(df, x, y, by, tau_min, sign, significance), tau_min, **kw)
        for c, x, by, sign in zip(pair, ("width", "depth"), ("depth", "width"), (1, -1))
    )
    if twins and twin_of(df, "width", "depth", "depth", "width"):
        rises = _twin(rises, falls)
    return [rises, falls]


def _twin(r: dict, twin: dict) -> dict:
    """The "rises with width" row ``r`` whose nets have one width per depth, as the sanity row
    that checks the identity tau(width, y) = -tau(depth, y) against its "falls with depth"
    ``twin`` (never tallied; the texts ``TWIN``, ahead of its own detail)."""
    a, b = float(r["stats"]["measured"]), float(twin["stats"]["measured"])
    same = bool(np.isfinite(a) and np.isfinite(b) and abs(a + b) <= 1e-12) or (
        not np.isfinite(a) and not np.isfinite(b)
    )
    c = r["claim"]
    detail = TWIN["detail"] + r["texts"].get("detail", CLAIMS[c].detail)
    return result(
        c,
        r["claim_id"][len(c) + 1 : -1],
        measured=a,
        tolerance=1e-12,
        verdict="pass" if same else "fail",
        kind="sanity",
        source=r["source"],
        texts={**r["texts"], **TWIN, "detail": detail},
        **r["fields"],
        twin=twin["claim_id"],
        tau=a,
        twin_tau=b,
    )


def _twin_row(results: list[dict], measured: float) -> str | None:
    """The claim row among ``results`` whose measured tau has the same magnitude as
    ``measured`` (to 12 digits, and not a :func:`sigprop.claims.coarse` value that unrelated
    orderings can share): the same ordering of the same nets measured twice, or None."""
    if not np.isfinite(measured) or coarse(measured):
        return None
    for r in results:
        m = r["stats"]["measured"]
        if (
            (r["kind"] or CLAIMS[r["claim"]].kind) == "claim"
            and np.isfinite(m)
            and round(abs(m), 12) == round(abs(measured), 12)
        ):
            return r["claim_id"]
    return None


def _init_claims(it: pd.DataFrame, p, runs: pd.DataFrame, theory: pd.DataFrame) -> list[dict]:
    tau_min, k = float(p.claims.tau_min), float(p.claims.z_max)
    want = float(p.claims.within_fraction)
    if not len(it):
        return []
    out = _orderings(
        it,
        DIVERSITY,
        "thm6",
        "rho",
        tau_min,
        twins=False,
        kind="sanity",
        source=SOURCE_THM,
        draws=int(it.draws.min()),
    )
    z_b = (it.rho - it.bound) / it.rho_se
    worst = it.loc[z_b.idxmin()]
    out.append(
        result(
            "thm3_bound_holds",
            measured=float(z_b.min()),
            tolerance=k,
            verdict="pass" if bool((it.rho + k * it.rho_se >= it.bound).all()) else "fail",
            k=k,
            nets=len(it),
            width=int(worst.width),
            depth=int(worst.depth),
            rho=worst.rho,
            rho_se=worst.rho_se,
            bound=worst.bound,
            n=int(worst.n),
            d=int(worst.d),
            thm6=worst.thm6,
            lo=(it.bound / it.rho).min(),
            hi=(it.bound / it.rho).max(),
        )
    )
    z6 = (it.rho - it.thm6) / it.rho_se
    frac = float(np.mean(np.abs(z6) <= k))
    rel = it.rho / it.thm6 - 1
    rel_se = float((it.rho_se / it.rho).median())
    out.append(
        result(
            "thm6_expectation",
            measured=frac,
            tolerance=want,
            verdict="pass" if frac >= want else "fail",
            detectable=k * rel_se,
            margin=float(p.claims.margin),
            k=k,
            want=want,
            nets=len(it),
            dmin=int(it.draws.min()),
            dmax=int(it.draws.max()),
            max_z=np.nanmax(np.abs(z6)),
            lo=rel.min(),
            hi=rel.max(),
            med=rel.median(),
            rel_se=rel_se,
        )
    )
    return out + _two_layer_sanity(depth1_bs(runs), theory)


def _two_layer_sanity(d1: pd.DataFrame, theory: pd.DataFrame) -> list[dict]:
    """004 Thms. 1-2 (Theta / Omega statements with unspecified constants, so sanity rows):
    Thm. 1 on the depth-1 init draws (B_S = n Delta_S per draw), Thm. 2 on the theory job's
    Monte Carlo of 2-layer tanh nets.  Both against the band of constants [0.5, 5] / [0.5, 4]
    of tests/test_theory_diversity.py (for a lower bound only the low side can refute)."""
    out = []
    if len(d1):
        ratios = {
            int(K): float(
                np.quantile(g.bs, 0.1) / th.two_layer_linear_order(g.n.iloc[0], K, g.d.iloc[0])
            )
            for K, g in d1.groupby("width")
        }
        lo = min(ratios.values())
        out.append(
            result(
                "thm1_two_layer_order",
                measured=lo,
                tolerance=0.5,
                verdict="pass" if lo >= 0.5 else "fail",
                n=int(d1.n.iloc[0]),
                d=int(d1.d.iloc[0]),
                draws=int(d1.groupby("width").size().min()),
                ratios=", ".join(f"K{K}: {v:.2f}" for K, v in ratios.items()),
            )
        )
    t = theory[theory.quantity.astype(str).str.startswith("thm2_")] if "quantity" in theory else []
    if len(t):
        w = t.pivot_table(index="width", columns="quantity", values="value")
        low = ((w.thm2_ratio_mc + 3 * w.thm2_ratio_mc_se) / w.thm2_order).min()
        out.append(
            result(
                "thm2_two_layer_tanh_order",
                measured=float((w.thm2_ratio_mc / w.thm2_order).min()),
                tolerance=0.5,
                verdict="pass" if low >= 0.5 else "fail",
                d=int(t.d_in.iloc[0]),
                n=int(w.thm2_n.iloc[0]),
                draws=int(w.thm2_draws.iloc[0]),
                ratios=", ".join(
                    f"K{int(K)}: {r.thm2_ratio_mc:.3g} ± {r.thm2_ratio_mc_se:.2g} / "
                    f"{r.thm2_order:.3g}"
                    for K, r in w.iterrows()
                ),
            )
        )
    return out


def _nets(nt: pd.DataFrame, col: str) -> str:
    return ", ".join(
        f"K{int(r.width)}L{int(r.depth)}: {getattr(r, col):g}" for r in nt.itertuples()
    )


def _fig2_claims(nt: pd.DataFrame, p) -> list[dict]:
    tau_min, budget = float(p.claims.tau_min), float(p.analysis.fig2_epochs)
    nt = nt.fillna({"largest_batch": 0.0})  # no converging batch size: below every batch
    w = p.analysis.div_window
    runs = ", ".join(
        f"K{int(q.width)}L{int(q.depth)} {int(q.window_runs)}/{int(q.runs)}"
        for q in nt.itertuples()
    )
    out = (
        _orderings(
            nt,
            DIVERSITY,
            "train",
            "div_train",
            tau_min,
            progress=w.progress,
            points=int(w.points),
            runs=runs,
        )
        + _orderings(nt, DIVERSITY, "init", "div_init", tau_min)
        + _orderings(
            nt,
            ("largest_batch_rises_with_width", "largest_batch_falls_with_depth"),
            "",
            "largest_batch",
            tau_min,
            budget=budget,
            nets=_nets(nt, "largest_batch"),
        )
    )
    claim = "largest_batch_rises_with_diversity"
    for q in ("train", "init"):
        rc = rank_claim(nt[f"div_{q}"], nt.largest_batch, tau_min)
        twin = _twin_row(out, rc["measured"])
        texts = VARIANTS.get(f"{claim}[{q}]", {})
        if twin is not None:
            texts = {**texts, "detail": CLAIMS[claim].detail + COUNTED_TWICE}
        out.append(
            _tau(
                claim,
                q,
                rc,
                tau_min,
                kind="summary" if twin is not None else None,
                texts=texts,
                twin=twin,
                count=len(nt),
                lo=nt.largest_batch.min(),
                hi=nt.largest_batch.max(),
            )
        )
    return out


def _threshold_claims(nt: pd.DataFrame, bt: pd.DataFrame, p) -> list[dict]:
    tau_min, want = float(p.claims.tau_min), float(p.claims.within_fraction)
    th_cfg = p.analysis.threshold
    frac = float(nt.has_threshold.mean())
    bad = nt[~nt.has_threshold]
    out = [
        result(
            "batch_threshold_exists",
            measured=frac,
            tolerance=want,
            verdict="pass" if frac >= want else "fail",
            detectable=1.0 / len(nt) if len(nt) else np.nan,
            want=want,
            count=len(nt),
            flat=th_cfg.flat_factor,
            growth=th_cfg.growth_factor,
            nets=_nets(nt, "threshold"),
            missing=(
                "; no threshold: "
                + ", ".join(f"K{int(r.width)}L{int(r.depth)}" for r in bad.itertuples())
                if len(bad)
                else ""
            ),
        )
    ] + _orderings(
        nt[nt.has_threshold],
        ("threshold_rises_with_width", "threshold_falls_with_depth"),
        "",
        "threshold",
        tau_min,
    )
    top = bt[bt.batch_size == bt.batch_size.max()].copy()
    top["ep"] = top["median"].replace(np.inf, np.nan).fillna(top.budget + 1)
    r = group_rank(top, "width", "ep", "depth", tau_min, -1)
    batch = int(bt.batch_size.max())
    return out + [_tau("wider_fewer_epochs_at_large_batch", "", r, tau_min, batch=batch)]
