"""Accuracy per run and per cell, and per-layer kept fractions, of Hayou et al. 2021
(arXiv:2002.08797) Secs. 3-4 (Tables 1-5, 9; Figs. 2, 4), shared by the tables, the figures and
the claims."""

from __future__ import annotations

import numpy as np
import pandas as pd

METHODS = {
    "": "no pruning",
    "random": "Random Pruning",
    "magnitude": "MBP",
    "snip": "SNIP",
    "grasp": "GraSP",
    "synflow": "SynFlow",
    "sbp_sr": "SBP-SR",
}
METHOD_ORDER = [
    "no pruning",
    "Random Pruning",
    "MBP",
    "SNIP",
    "GraSP",
    "GraSP-SR",
    "SynFlow",
    "SBP-SR",
    "Ordered phase Init",
    "EOC Init",
    "Chaotic phase Init",
    "EOC + ReScaling",
]
N_BLOCKS = {"resnet32": 15, "resnet50": 24, "resnet104": 51}
GROUP = ["dataset", "activation", "net", "method", "sparsity"]


def method_of(arch: str, pruner: str, rescale: bool = False) -> str:
    """003's row label: SBP-SR = SNIP on a Stable ResNet, GraSP-SR = GraSP on one (Table 2)."""
    if pruner == "grasp" and arch.startswith("stable_"):
        return "GraSP-SR"
    if pruner == "snip" and rescale:
        return "EOC + ReScaling"
    return METHODS.get(pruner, pruner)


def init_phase(activation: str, sigma_w2: float, sigma_b2: float, tol: float = 1e-3) -> str:
    """003 Table 4's row label for an unrescaled V-CNN: the phase of its initialization by
    χ1 (003 Sec. 2, the edge of chaos is χ1 = 1; :func:`sigprop.theory.meanfield.chi1`)."""
    from ...theory import meanfield

    c = float(meanfield.chi1(sigma_w2, sigma_b2, 1.0, activation))
    if abs(c - 1.0) <= tol:
        return "EOC Init"
    return "Ordered phase Init" if c < 1.0 else "Chaotic phase Init"


def net_and_method(
    arch: str,
    depth: int,
    pruner: str,
    rescale: bool,
    activation: str,
    sigma_w2: float,
    sigma_b2: float,
) -> tuple[str, str]:
    """003's (net, row label) of a run: ResNets drop ``stable_`` (their method says SBP-SR /
    GraSP-SR); a V-CNN is named by its depth (``vcnn100``) and labelled by its initialization
    (Table 4: ordered phase / EOC / EOC + ReScaling)."""
    if arch == "vcnn":
        label = "EOC + ReScaling" if rescale else init_phase(activation, sigma_w2, sigma_b2)
        return f"vcnn{int(depth)}", label
    return arch.replace("stable_", ""), method_of(arch, pruner, rescale)


def final_best(runs: pd.DataFrame, metric: str = "test_acc") -> pd.DataFrame:
    """Per run: test accuracy (%) at the last evaluation (``final``) and its maximum over the
    evaluations (``best``, the best-epoch accuracy), with the run's fields."""
    d = runs[runs.metric == metric].dropna(subset=["value"])
    last = d.sort_values("step").groupby("run_id").tail(1).set_index("run_id")
    best = d.groupby("run_id").value.max()
    rescale = (
        last["prune_rescale"] if "prune_rescale" in last else pd.Series(False, index=last.index)
    )
    nm = [
        net_and_method(a, d, p, bool(r), act, sw, sb)
        for a, d, p, r, act, sw, sb in zip(
            last.arch,
            last.depth,
            last.pruner.fillna(""),
            rescale,
            last.activation,
            last.sigma_w2,
            last.sigma_b2,
        )
    ]
    out = pd.DataFrame(
        {
            "dataset": last.dataset,
            "activation": last.activation,
            "net": [n for n, _ in nm],
            "method": [m for _, m in nm],
            "sparsity": last.sparsity.astype(float).round(6),
            "seed": last.seed,
            "final": 100 * last.value,
            "best": 100 * best.reindex(last.index),
        }
    )
    return out.reset_index()


def accuracy_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean, std (ddof 1) and n over seeds of the final and best accuracy (%) per cell."""
    fb = final_best(runs)
    g = fb.groupby(GROUP, sort=False)
    t = g.agg(
        final_mean=("final", "mean"),
        final_std=("final", "std"),
        best_mean=("best", "mean"),
        best_std=("best", "std"),
        n=("seed", "nunique"),
    )
    t = t.reset_index()
    t["method"] = pd.Categorical(
        t.method,
        [m for m in METHOD_ORDER if m in set(t.method)] + sorted(set(t.method) - set(METHOD_ORDER)),
    )
    return t.sort_values(
        ["dataset", "activation", "net", "method", "sparsity"], ignore_index=True
    ).astype({"method": str})


# ------------------------------------------------------------------ layer reports

VARIANTS = {
    ("resnet", "snip"): "ResNet32 (SNIP)",
    ("stable_resnet", "sbp_sr"): "Stable ResNet32 (SBP-SR)",
}


def sections(shapes: pd.Series) -> np.ndarray:
    """Section index (0, 1, 2: stage of the CIFAR ResNet) of each prunable layer from its weight
    shape ``c_out x c_in x k x k``, by its output channels; -1 for the stem (first layer), the
    1x1 shortcut convs and the linear readout, which are plotted but left out of the
    within-section statistics."""
    parts = [s.split("x") for s in shapes]
    is3 = np.array([len(p) == 4 and p[2] == "3" for p in parts])
    c_out = np.array([int(p[0]) for p in parts])
    widths = sorted(set(c_out[is3]))
    sec = np.array([widths.index(c) if ok else -1 for c, ok in zip(c_out, is3)])
    if len(sec):
        sec[0] = -1
    return sec


def _variant_rows(
    layers: pd.DataFrame, net: str = "resnet32", runs: pd.DataFrame | None = None
) -> pd.DataFrame:
    """The layer-report rows of SNIP on ``net`` and SBP-SR on its Stable version, with
    ``variant`` and ``activation`` (taken from ``runs`` by ``run_id`` when missing)."""
    d = layers
    if "activation" not in d.columns:
        if runs is None:
            d = d.assign(activation="relu")
        else:
            act = runs.drop_duplicates("run_id").set_index("run_id").activation
            d = d.assign(activation=d.run_id.map(act))
    keep = np.zeros(len(d), bool)
    label = np.full(len(d), "", object)
    for (prefix, pruner), name in VARIANTS.items():
        m = (
            d.arch == prefix + net[len("resnet") :] if prefix == "stable_resnet" else d.arch == net
        ).to_numpy() & (d.pruner == pruner).to_numpy()
        keep |= m
        label[m] = name
    return d[keep].assign(variant=label[keep])


def layer_profiles(
    layers: pd.DataFrame, net: str = "resnet32", runs: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Per (activation, sparsity, variant, layer): mean / min / max over seeds of the kept
    fraction, the section, and ``n`` seeds.  ``layers``: the prune stage's layer reports; its
    ``activation`` column is taken from ``runs`` (by ``run_id``) when missing."""
    d = _variant_rows(layers, net, runs)
    if d.empty:
        return pd.DataFrame(
            columns=[
                "activation",
                "sparsity",
                "variant",
                "layer",
                "kept",
                "kept_min",
                "kept_max",
                "n",
                "section",
            ]
        )
    g = d.groupby(["activation", "sparsity", "variant", "layer"])
    prof = g.agg(
        kept=("kept_fraction", "mean"),
        kept_min=("kept_fraction", "min"),
        kept_max=("kept_fraction", "max"),
        n=("run_id", "nunique"),
        weight_shape=("weight_shape", "first"),
    ).reset_index()
    prof["section"] = prof.groupby(["activation", "sparsity", "variant"]).weight_shape.transform(
        lambda s: sections(s)
    )
    return prof


def seed_section_stats(
    layers: pd.DataFrame, net: str = "resnet32", runs: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Per (activation, sparsity, variant, run): the Fig. 2 statistics of one pruned network
    (003 Sec. 3): ``spread``, the mean over sections of the within-section std (ddof 0) of the
    per-layer kept fraction, and ``last_section_kept``, the mean kept fraction of the last
    section's layers.  Their spread over runs (seeds) gives the standard errors of the claims."""
    d = _variant_rows(layers, net, runs)
    out = []
    for (act, sp, var, rid), r in d.groupby(["activation", "sparsity", "variant", "run_id"]):
        r = r.sort_values("layer")
        sec = sections(r.weight_shape)
        body = r.assign(section=sec)[sec >= 0]
        spread = body.groupby("section").kept_fraction.std(ddof=0).mean()
        last = body[body.section == body.section.max()].kept_fraction.mean()
        out.append(
            {
                "activation": act,
                "sparsity": sp,
                "variant": var,
                "run_id": rid,
                "spread": spread,
                "last_section_kept": last,
            }
        )
    return pd.DataFrame(
        out, columns=["activation", "sparsity", "variant", "run_id", "spread", "last_section_kept"]
    )
