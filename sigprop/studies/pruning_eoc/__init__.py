"""Trainability of pruned FFNNs at EOC, EOC + rescaling and ordered-phase init: Hayou, Ton,
Doucet & Teh 2021, "Robust Pruning at Initialization", arXiv:2002.08797, Sec. 4.1, Figs. 3, 5.

FFNNs pruned at initialization by sensitivity-based pruning (SNIP score ``|W dL/dW|``,
Sec. 2.2) to sparsity ``s`` and trained; test accuracy over depth ``L`` x ``s`` for three
initializations: on the edge of chaos (``chi = 1``), on the EOC with the rescaling trick
(Prop. 1, Eq. 7, Alg. 1; variance-preserving form, see :mod:`sigprop.theory.pruning`), and in
the ordered phase (``chi < 1``).  Fig. 3 is tanh, Fig. 5 (App. H) ELU; ReLU is added here.
Runs are pruned and trained by the workflow's prune and train stages; the scheme of a run is
read from its fields: ``prune_rescale`` (EOC + rescaling) or the phase of its
``(sigma_w2, sigma_b2)`` (``chi_1`` of :mod:`sigprop.theory.meanfield`).

Claims (thresholds in the study config, ``analysis`` and ``claims``; every difference carries a
standard error over seeds and passes when it exceeds ``claims.z`` SE):
(1) ordered-phase init is untrainable after pruning in the paper's region "s > 40% and L > 60"
    (Sec. 4.1), tested on the config's ``analysis.ordered_region`` (set per scale; quick
    scale: a scaled region of its small grid) and only on the region's cells where an unpruned
    control with the same init trains (so that the claim tests pruning, not depth); the
    ordered phase's chi_1 is our choice (the paper gives no sigma's);
(2) rescaling enlarges the trainable region: more trainable (s, L) cells with
    EOC + rescaling than with EOC alone (Sec. 4.1, Prop. 1), per seed;
(3) EOC init has more trainable cells than ordered-phase init (Sec. 4.1, Thm. 1: "For an EOC
    initialization, the set (s, L) ... becomes larger"), per seed.

Modules: ``theory`` (chi_1 and q* per setting), ``analysis`` (final accuracy per run, init
scheme, cells), ``figures``, ``claims``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...contract import Claim, Figure, StudySpec
from ...params import param

SOURCE = "003 Sec. 4.1, Figs. 3, 5"
_COUNT_TEST = (
    "trainable-cell count per seed (final test acc >= threshold); mean difference {z_test}, SE "
    "over {n} seeds; units: cells (resolution 1/{n})"
)
_COUNTS = "trainable cells per seed ({n} seeds): {a} {ca} of {ta}, {b} {cb} of {tb}; SE {err:.3g}"
CLAIMS = {
    "ordered_untrainable_region": Claim(
        statement="Ordered-phase init ({act}, chi_1 = {chi:.3g}, our choice: the paper gives no "
        "ordered-phase sigma's) is untrainable after SNIP pruning in the region s >= "
        "{region.min_sparsity:g}, L >= {region.min_depth} (paper: s > 40% and L > 60), where the "
        "unpruned net with the same init trains",
        expected=">= {want:g} of the testable region cells untrainable (acc <= {untrain:g}) and "
        "below the dense control by > {k:g} SE",
        test="per region cell whose dense control trains (mean acc >= {train:g}): pruned mean acc "
        "<= {untrain:g} and drop = acc(dense) - acc(pruned) > {k:g} SE over seeds (z_above); pass "
        "when >= {want:g} of those cells pass, fail when one trains (pruned mean acc >= "
        "{train:g}); units: accuracy",
        detail="{cells}",
    ),
    "rescaling_enlarges_trainable_region": Claim(
        statement="The rescaling trick (Prop. 1) gives more trainable (s, L) cells than EOC init "
        "alone ({act})",
        expected="> {k:g} SE more trainable cells",
        test=_COUNT_TEST,
        detail=_COUNTS + "; mean accuracy over the grid: {means}; diverged runs (counted as "
        "accuracy 0): {diverged}",
    ),
    "eoc_more_trainable_than_ordered": Claim(
        statement="EOC init has more trainable (s, L) cells after pruning than ordered-phase init "
        "({act}, ordered chi_1 = {chi:.3g}, our choice) (Thm. 1: the trainable set 'becomes "
        "larger' at the EOC)",
        expected="> {k:g} SE more trainable cells",
        test=_COUNT_TEST,
        detail=_COUNTS,
    ),
}


@dataclass(frozen=True)
class Region:
    """003 Sec. 4.1: "untrainable when s > 40% and L > 60", i.e. s >= 0.5, L >= 80 on the
    paper's grid."""

    min_sparsity: float = param(0.5, ge=0, le=1, doc="the region: cells with sparsity >= this ...")
    min_depth: int = param(80, ge=1, doc="... and depth >= this")


@dataclass(frozen=True)
class Analysis:
    metric: str = param(
        "test_acc", doc="the run-table metric whose final value is a cell's accuracy"
    )
    trainable_acc: float = param(
        0.5,
        ge=0,
        le=1,
        doc="a cell is trainable when its mean final accuracy >= this ('x' below it in the figure)",
    )
    ordered_region: Region = param(
        Region,
        doc="where the claims expect ordered-phase init to "
        "be untrainable (set per scale; the figure's "
        "dashed box); default: the paper's grid",
    )


@dataclass(frozen=True)
class Claims:
    untrainable_acc: float = param(
        0.2, ge=0, le=1, doc="a cell is untrainable when its mean final accuracy <= this"
    )
    untrainable_fraction: float = param(
        1.0,
        ge=0,
        le=1,
        doc="fraction of the ordered region's "
        "testable cells (where the dense "
        "control trains) that must be "
        "untrainable",
    )
    z: float = param(
        3.0,
        gt=0,
        doc="a difference (dense - pruned accuracy, trainable-cell "
        "counts) counts when it exceeds z standard errors over seeds",
    )
    paper_activations: tuple[str, ...] = param(
        ("elu", "tanh"),
        min_len=1,
        doc="the activations 003 trains (Figs. 3, 5); the claims for others are beyond the paper",
    )


SPEC = StudySpec(
    task="train",
    source=SOURCE,
    figures={
        "pruning_eoc_accuracy": Figure(
            "accuracy_grid",
            (
                "Final test accuracy of FFNNs pruned at initialization by SNIP (003 Sec. 2.2) over depth L "
                "(rows of each panel) and sparsity s (columns), mean over seeds, for EOC init + rescaling "
                "(003 Prop. 1 / Alg. 1, variance-preserving), EOC init and ordered-phase init (columns of "
                "panels), one row of panels per activation (003 Fig. 3: tanh; Fig. 5: ELU; ReLU added). "
                "Cells are marked 'x' when below the study's trainability threshold; the dashed box is the "
                "region where the claims expect ordered-phase init to be untrainable; the ordered panels' "
                "s = 0 column is the unpruned control with the same init (its chi_1 is our choice). A run "
                "whose loss diverged (NaN) counts as accuracy 0."
            ),
            claims=(
                "ordered_untrainable_region*",
                "rescaling_enlarges_trainable_region*",
                "eoc_more_trainable_than_ordered*",
            ),
        )
    },
    analysis=Analysis,
    claims=Claims,
)
