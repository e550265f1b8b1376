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

from ...contract import Figure, StudySpec
from ...params import param

# the study tables: 003 Tables 1, 2, 9 and, at paper scale, 3, 4, 5 (``tables.py``)
TABLES = ("table1", "table2", "table9", "table3", "table4", "table5")


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
