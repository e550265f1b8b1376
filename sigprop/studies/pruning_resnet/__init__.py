"""Pruning ResNets at initialization, Stable ResNet and SBP-SR: Hayou, Ton, Doucet & Teh 2021,
"Robust Pruning at Initialization", arXiv:2002.08797, Secs. 3-4, App. G.

Every run is a ResNet32/50/104 (doubled filters at paper scale) or its Stable ResNet (003
Prop. 2, Eq. 9: residual branch scaled by ``1/sqrt(L)``, ``L`` = number of blocks) pruned at
initialization by the prune stage (``rules/prune.smk``: random, MBP, SNIP, GraSP, SynFlow;
SBP-SR = SNIP on the Stable ResNet, :mod:`sigprop.prune.sbp_sr`) and trained with SGD (lr 0.1,
x0.1 at 1/2 and 3/4, Sec. 4.2).

Outputs
* Tables 1, 2, 9 and (paper scale) 3, 4, 5 (``tables``: :func:`.tables.paper_table` on
  :func:`.analysis.accuracy_table`): mean ± std over seeds of the final and best-eval test
  accuracy per (data set, activation, net, method, sparsity), with the paper's numbers beside
  them (``analysis.paper_numbers``, transcribed, :func:`.tables.paper_numbers`).
* Figs. 2 and 4 (``figures``): per-layer kept fraction of SNIP on ResNet32 vs SBP-SR on Stable
  ResNet32, from the prune stage's layer reports.

Claims (tolerances in the study config, fixed before any result was seen; the tests use standard
errors over seeds, and each difference is decided at ``z`` SE):
1. ``sbp_sr_vs_snip``: at the highest sparsity of each (data set, activation, net), SBP-SR's mean
   final accuracy > SNIP's − ``acc_margin`` by ``z`` SE (non-inferiority; Table 1, Table 9,
   Sec. 4.2).
2. ``sbp_sr_best``: at the deepest net and highest sparsity, SBP-SR > the best other pruner −
   ``acc_margin`` by ``z`` SE (Table 2: "SBP-SR outperforms all other algorithms with ResNet104").
3. ``uniform_within_sections``: the within-section spread of the per-layer kept fraction is smaller
   for Stable ResNet32 + SNIP than for ResNet32 + SNIP by ``z`` SE over seeds (Sec. 3 after
   Prop. 2, Fig. 2).
4. ``deeper_layers_kept``: Stable ResNet keeps more of the last section, by ``z`` SE over seeds
   (Fig. 2 caption).

Modules: ``theory`` (the Stable ResNet branch scale), ``analysis`` (accuracy per run and cell,
per-layer kept fractions), ``tables``, ``figures``, ``claims``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...contract import Claim, Figure, StudySpec
from ...params import param

# the study tables: 003 Tables 1, 2, 9 and, at paper scale, 3, 4, 5 (``tables.py``)
TABLES = ("table1", "table2", "table9", "table3", "table4", "table5")
_SEEDS = "SE unpaired over {n} seeds (< {min_seeds}"
CLAIMS = {
    "sbp_sr_vs_snip": Claim(
        statement="At sparsity {s:g}, SBP-SR (Stable ResNet) is at least as accurate as SNIP on "
        "{net} ({act}, {ds})",
        expected="acc(SBP-SR) - acc(SNIP) > -{acc_margin:g} points by {k:g} SE",
        test="non-inferiority: (difference + {acc_margin:g}) {z_test}; " + _SEEDS + " seeds: "
        "inconclusive); units: accuracy points",
        detail="final test accuracy, mean of {n} seeds: SBP-SR {sbp_sr:.2f}%, SNIP {snip:.2f}%; SE "
        "of the difference {err:.2f} points",
        source="003 Sec. 4.2, Tables 1, 9",
    ),
    "sbp_sr_best": Claim(
        statement="SBP-SR is the best pruner on the deepest net ({net}, {ds}) at sparsity {s:g}",
        expected="acc(SBP-SR) - best other pruner > -{acc_margin:g} points by {k:g} SE",
        test="non-inferiority against the best other pruner (chosen as the largest mean): "
        "(difference + {acc_margin:g}) {z_test}; SE unpaired over {n} seeds; units: accuracy "
        "points",
        detail="{accs} (final, mean of {n} seeds); best other: {best_method}; SE of the difference "
        "{err:.2f} points",
        source="003 Sec. 4.2, Table 2",
    ),
    "uniform_within_sections": Claim(
        statement="Within each section, Stable ResNet32 (SBP-SR) keeps a more uniform per-layer "
        "fraction than ResNet32 (SNIP) ({act}, sparsity {s:g})",
        expected="spread(Stable) / spread(ResNet) <= {ratio:g}, the difference by more than "
        "{k:g} SE",
        test="spread(ResNet) - spread(Stable): {z_test}; " + _SEEDS + ": inconclusive); a pass "
        "also needs spread(Stable) / spread(ResNet) <= {ratio:g} (else inconclusive); units: kept "
        "fraction (std)",
        detail="mean over sections of the std over layers of the kept fraction, mean over {n} "
        "seeds: Stable {stable:.4g}, ResNet {resnet:.4g}; difference {diff:.4g}, SE {err:.2g}",
        source="003 Sec. 3 (after Prop. 2), Fig. 2",
    ),
    "deeper_layers_kept": Claim(
        statement="Stable ResNet32 (SBP-SR) prunes the deepest section less aggressively than "
        "ResNet32 (SNIP) ({act}, sparsity {s:g})",
        expected="kept(Stable, last section) - kept(ResNet) > {k:g} SE",
        test="kept(Stable) - kept(ResNet): {z_test}; " + _SEEDS + ": inconclusive); units: kept "
        "fraction",
        detail="mean kept fraction of the last section, mean over {n} seeds: Stable {stable:.4g}, "
        "ResNet {resnet:.4g}; SE of the difference {err:.2g}",
        source="003 Fig. 2 caption",
    ),
}


@dataclass(frozen=True)
class Analysis:
    paper_numbers: str = param(
        "config/pruning_resnet_paper_numbers.yaml",
        doc="the transcribed reference values of 003's tables (a path "
        "relative to the working directory, else to the repository)",
    )
    fig_sparsities: tuple[float, ...] = param(
        (0.9, 0.98, 0.995),
        ge=0,
        lt=1,
        doc="Fig. 2 / Fig. 4 panels (those present in the runs; all present when none is)",
    )


@dataclass(frozen=True)
class Claims:
    acc_margin: float = param(
        0.01,
        ge=0,
        le=1,
        doc="SBP-SR may trail SNIP / the best pruner by this much accuracy (a fraction)",
    )
    min_seeds: int = param(2, ge=1, doc="a claim with fewer seeds per cell is inconclusive")
    uniform_ratio: float = param(1.0, gt=0, doc="spread(Stable ResNet) / spread(ResNet) <= this")
    z: float = param(
        3.0,
        gt=0,
        doc="a difference of means over seeds counts when it exceeds z standard errors (unpaired)",
    )


SPEC = StudySpec(
    task="train",
    source="003 Secs. 3-4, App. G: Figs. 2, 4, Tables 1-5, 9",
    figures={
        "pruning_resnet_kept_relu": Figure(
            "fig2",
            (
                "Percentage of weights kept per prunable layer (conv layers in order, shortcut convs and "
                "the readout included) after pruning at initialization: SNIP on ResNet32 (Kaiming init) "
                "vs SBP-SR (SNIP on Stable ResNet32, 003 Eq. 9), ReLU, one panel per sparsity; mean over "
                "seeds, band min-max; dotted lines: section boundaries (003 Fig. 2)."
            ),
            claims=("uniform_within_sections?relu*", "deeper_layers_kept?relu*"),
        ),
        "pruning_resnet_kept_tanh": Figure(
            "fig4",
            ("As the ReLU figure for tanh ResNet32 / Stable ResNet32 (003 App. G, Fig. 4)."),
            claims=("uniform_within_sections?tanh*", "deeper_layers_kept?tanh*"),
        ),
    },
    tables=TABLES,
    analysis=Analysis,
    claims=Claims,
)
