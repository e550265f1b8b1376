"""Study: pruning ResNets at initialization, Stable ResNet and SBP-SR (003 Secs. 3-4, App. G).

Paper: 003 Hayou, Ton, Doucet, Teh, "Robust Pruning at Initialization".  Every run is a
ResNet32/50/104 (doubled filters at paper scale) or its Stable ResNet (003 Prop. 2, Eq. 9:
residual branch scaled by ``1/sqrt(L)``, ``L`` = number of blocks) pruned at initialization by the
prune stage (``rules/prune.smk``: random, MBP, SNIP, GraSP, SynFlow; SBP-SR = SNIP on the Stable
ResNet, :mod:`sigprop.prune.sbp_sr`) and trained with SGD (lr 0.1, x0.1 at 1/2 and 3/4, Sec. 4.2).

Outputs
* Tables 1, 2, 9 and (paper scale) 3, 4, 5 (:func:`accuracy_table`, :func:`paper_table`): mean ± std over seeds of the final
  and best-eval test accuracy per (data set, activation, net, method, sparsity), with the paper's
  numbers beside them (``analysis.paper_numbers``, transcribed, :func:`paper_numbers`).
* Figs. 2 and 4 (:mod:`sigprop.figures.pruning_resnet`): per-layer kept fraction of SNIP on
  ResNet32 vs SBP-SR on Stable ResNet32, from the prune stage's layer reports.

Claims (tolerances in the study config, fixed before any result was seen):
1. ``sbp_sr_vs_snip``: at the highest sparsity of each (data set, activation, net), SBP-SR's mean
   final accuracy ≥ SNIP's − ``acc_margin`` (Table 1, Table 9, Sec. 4.2).
2. ``sbp_sr_best``: at the deepest net and highest sparsity, SBP-SR is within ``acc_margin`` of the
   best pruner (Table 2: "SBP-SR outperforms all other algorithms with ResNet104").
3. ``uniform_within_sections``: the within-section spread of the per-layer kept fraction is smaller
   for Stable ResNet32 + SNIP than for ResNet32 + SNIP (Sec. 3 after Prop. 2, Fig. 2).
4. ``deeper_layers_kept``: Stable ResNet keeps more of the last section (Fig. 2 caption).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..claims import frame, row
from ..figures.pruning_resnet import fig2, fig4, layer_profiles

TASK = "train"
FIGURES = {"pruning_resnet_kept_relu": fig2, "pruning_resnet_kept_tanh": fig4}
CAPTIONS = {
    "pruning_resnet_kept_relu": (
        "Percentage of weights kept per prunable layer (conv layers in order, shortcut convs and "
        "the readout included) after pruning at initialization: SNIP on ResNet32 (Kaiming init) "
        "vs SBP-SR (SNIP on Stable ResNet32, 003 Eq. 9), ReLU, one panel per sparsity; mean over "
        "seeds, band min-max; dotted lines: section boundaries (003 Fig. 2)."),
    "pruning_resnet_kept_tanh": (
        "As the ReLU figure for tanh ResNet32 / Stable ResNet32 (003 App. G, Fig. 4)."),
}
SOURCE_T1 = "003 Sec. 4.2, Tables 1, 9"
SOURCE_T2 = "003 Sec. 4.2, Table 2"
SOURCE_F2 = "003 Sec. 3 (after Prop. 2), Fig. 2"
METHODS = {"": "no pruning", "random": "Random Pruning", "magnitude": "MBP", "snip": "SNIP",
           "grasp": "GraSP", "synflow": "SynFlow", "sbp_sr": "SBP-SR"}
METHOD_ORDER = ["no pruning", "Random Pruning", "MBP", "SNIP", "GraSP", "GraSP-SR", "SynFlow",
                "SBP-SR", "Ordered phase Init", "EOC Init", "Chaotic phase Init", "EOC + ReScaling"]
N_BLOCKS = {"resnet32": 15, "resnet50": 24, "resnet104": 51}
GROUP = ["dataset", "activation", "net", "method", "sparsity"]


def theory_table(study: str, theory_cfg: dict, settings: list[dict]) -> pd.DataFrame:
    """The Stable ResNet branch scale ``1/sqrt(L)`` of 003 Eq. 9 per ResNet depth (L = blocks)."""
    rows = []
    for net, L in N_BLOCKS.items():
        rows.append({"study": study, "quantity": f"n_blocks[{net}]", "value": float(L)})
        rows.append({"study": study, "quantity": f"branch_scale[{net}]", "value": 1 / np.sqrt(L)})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------ tables


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
    from ..theory import meanfield
    c = float(meanfield.chi1(sigma_w2, sigma_b2, 1.0, activation))
    if abs(c - 1.0) <= tol:
        return "EOC Init"
    return "Ordered phase Init" if c < 1.0 else "Chaotic phase Init"


def net_and_method(arch: str, depth: int, pruner: str, rescale: bool, activation: str,
                   sigma_w2: float, sigma_b2: float) -> tuple[str, str]:
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
    rescale = (last["prune_rescale"] if "prune_rescale" in last
               else pd.Series(False, index=last.index))
    nm = [net_and_method(a, d, p, bool(r), act, sw, sb) for a, d, p, r, act, sw, sb in
          zip(last.arch, last.depth, last.pruner.fillna(""), rescale, last.activation,
              last.sigma_w2, last.sigma_b2)]
    out = pd.DataFrame({
        "dataset": last.dataset, "activation": last.activation,
        "net": [n for n, _ in nm], "method": [m for _, m in nm],
        "sparsity": last.sparsity.astype(float).round(6), "seed": last.seed,
        "final": 100 * last.value, "best": 100 * best.reindex(last.index)})
    return out.reset_index()


def accuracy_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean, std (ddof 1) and n over seeds of the final and best accuracy (%) per cell."""
    fb = final_best(runs)
    g = fb.groupby(GROUP, sort=False)
    t = g.agg(final_mean=("final", "mean"), final_std=("final", "std"),
              best_mean=("best", "mean"), best_std=("best", "std"), n=("seed", "nunique"))
    t = t.reset_index()
    t["method"] = pd.Categorical(t.method, [m for m in METHOD_ORDER if m in set(t.method)]
                                 + sorted(set(t.method) - set(METHOD_ORDER)))
    return t.sort_values(["dataset", "activation", "net", "method", "sparsity"],
                         ignore_index=True).astype({"method": str})


def paper_numbers(cfg: dict) -> pd.DataFrame:
    """The transcribed reference values: table, dataset, activation, net, method, sparsity,
    paper_mean, paper_std (003 Tables 1-5, 9; file ``analysis.paper_numbers``)."""
    import yaml
    rel = cfg.get("analysis", {}).get("paper_numbers", "config/pruning_resnet_paper_numbers.yaml")
    path = Path(rel)
    if not path.exists():  # the workflow runs in its working copy; tests run anywhere
        path = Path(__file__).resolve().parents[2] / rel
    rows = []
    for r in yaml.safe_load(path.read_text())["rows"]:
        for s, (m, sd) in r["acc"].items():
            rows.append({"table": str(r["table"]), "dataset": r["dataset"],
                         "activation": r["activation"], "net": r["net"], "method": r["method"],
                         "sparsity": round(float(s), 6), "paper_mean": float(m),
                         "paper_std": np.nan if sd is None else float(sd)})
    return pd.DataFrame(rows)


TABLE_SPECS = {
    # table id: (methods shown, sparsities shown (None: all measured), title)
    "1": (["SNIP", "SBP-SR"], None,
          "003 Table 1: test accuracy (%) of SNIP and SBP-SR on ResNets, CIFAR-10"),
    "2": (METHOD_ORDER, None,
          "003 Table 2: test accuracy (%) after pruning, CIFAR-10 and CIFAR-100"),
    "9": (["SNIP", "SBP-SR"], None,
          "003 Table 9: test accuracy (%) with ReLU and tanh, CIFAR-10"),
    "3": (["SBP-SR", "SNIP", "GraSP", "SynFlow"], None,
          "003 Table 3: test accuracy (%) on Tiny ImageNet, ResNet32/50/104"),
    "4": (["Ordered phase Init", "EOC Init", "EOC + ReScaling"], None,
          "003 Table 4: test accuracy (%) of tanh V-CNN on MNIST, SNIP at 50% sparsity"),
    "5": (["SNIP", "SynFlow", "EOC + ReScaling"], None,
          "003 Table 5: test accuracy (%) of VGG16 and 3xVGG16 on CIFAR-10"),
}
# Tables 3-5 exist at paper scale only (Tiny ImageNet, MNIST V-CNN, CIFAR-10 VGG): their rows
# are selected by these (data set, nets) and listed with every paper cell, ours or not.
PAPER_SCALE_TABLES = {"3": ("tiny_imagenet", ("resnet32", "resnet50", "resnet104")),
                      "4": ("mnist", ("vcnn10", "vcnn50", "vcnn100")),
                      "5": ("cifar10", ("vgg16", "vgg16x3"))}


def paper_table(acc: pd.DataFrame, paper: pd.DataFrame, table: str) -> pd.DataFrame:
    """One of 003's Tables 1 / 2 / 9 from :func:`accuracy_table`: our cells (activation ReLU
    only for Tables 1-2) with the paper's mean/std beside them where the paper gives the cell
    (matched on data set, activation, net, method, sparsity; NaN otherwise)."""
    methods, _, _ = TABLE_SPECS[table]
    ours = acc[acc.method.isin(methods)]
    if table in ("1", "2"):
        ours = ours[ours.activation == "relu"]
    p = paper[paper.table == table].drop(columns="table")
    if table in PAPER_SCALE_TABLES:
        dataset, nets = PAPER_SCALE_TABLES[table]
        ours = ours[(ours.dataset == dataset) & ours.net.isin(nets)]
        out = ours.merge(p, on=GROUP, how="outer")
        out["n"] = out["n"].fillna(0).astype("int64")
        order = {m: i for i, m in enumerate(methods)}
        out = out.sort_values(["net", "method", "sparsity"],
                              key=lambda c: c.map(order) if c.name == "method" else
                              (c.map({n: i for i, n in enumerate(nets)}) if c.name == "net" else c),
                              ignore_index=True)
    else:
        out = ours.merge(p, on=GROUP, how="left")
    out.insert(0, "table", table)
    return out


def build_tables(runs: pd.DataFrame, cfg: dict) -> dict[str, pd.DataFrame]:
    """Tables 1, 2 and 9 as DataFrames (one per table id)."""
    acc, paper = accuracy_table(runs), paper_numbers(cfg)
    return {t: paper_table(acc, paper, t) for t in TABLE_SPECS}


TABLES = [f"table{t}" for t in TABLE_SPECS]


def build_table(name: str, runs: pd.DataFrame, cfg: dict) -> tuple[pd.DataFrame, str]:
    """One of :data:`TABLES` (``table1`` ... ``table9``) and its title, for the
    workflow's ``study_table`` rule (Parquet, Markdown, CSV)."""
    t = name.removeprefix("table")
    if t not in TABLE_SPECS:
        raise KeyError(f"pruning_resnet has no table '{name}' (known: {TABLES})")
    return build_tables(runs, cfg)[t], TABLE_SPECS[t][2]


# ------------------------------------------------------------------ layer reports


def section_spread(prof: pd.DataFrame) -> pd.DataFrame:
    """Per (activation, sparsity, variant): mean over sections of the within-section std of the
    per-layer mean kept fraction, and the mean kept fraction of the last section (Fig. 2)."""
    out = []
    for (act, sp, var), d in prof.groupby(["activation", "sparsity", "variant"]):
        body = d[d.section >= 0]
        spread = body.groupby("section").kept.std(ddof=0).mean()
        last = body[body.section == body.section.max()].kept.mean()
        out.append({"activation": act, "sparsity": sp, "variant": var, "spread": spread,
                    "last_section_kept": last, "n_seeds": int(d.n.min())})
    return pd.DataFrame(out)


# ------------------------------------------------------------------ claims


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, cfg: dict,
                 layers: pd.DataFrame | None = None) -> pd.DataFrame:
    study = cfg.get("name", "pruning_resnet")
    a = cfg.get("analysis", {})
    margin, min_seeds = 100 * float(a["acc_margin"]), int(a["min_seeds"])
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
    rows += _layer_claims(study, runs, cfg, layers)
    return frame(rows)


def _layer_claims(study, runs, cfg, layers):
    a = cfg.get("analysis", {})
    ratio_tol, min_seeds = float(a["uniform_ratio"]), int(a["min_seeds"])
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
