"""Network width, depth and large-batch training at a fixed parameter count: Chen, Wang, Zhao,
Papailiopoulos & Koutris 2018, "The Effect of Network Width on the Performance of Large-batch
Training", arXiv:1806.03791, Sec. 5, Figs. 1, 3, 4, 5 and Table 1.

For a fixed number of weights p, nets of depth L and width K (``d_in K + (L-1) K^2 + K d_out =
p``, the config's ``derived: {width: {params: p}}``) are trained by SGD at batch sizes
2^5..2^12.  Per (net, batch) the learning rate is tuned by the paper's protocol (the grid rate
with the lowest training loss after 2 epochs) and the epochs to reach the Table 1 training
accuracy are read at that rate.

All rates, batch sizes and seeds of a net train in one micro-batched shard
(``RunSpec.micro_batch``) for the whole epoch budget; a model's epoch count at step t is
``t c / ((n // b) b)`` (c examples per micro-step, batch b, n training examples, last partial
batch dropped), see :func:`~sigprop.studies.width_batch.analysis.model_epochs`.  A panel is
one block of the config (its ``label``, the run table's ``block`` column): one architecture on
one data set, with its own target accuracy (``analysis.targets``).

Outputs (``figures``):

* ``width_batch_epochs`` (Figs. 1, 3): epochs to target against batch size, one curve per net;
* ``width_batch_heatmap`` (Fig. 4): the same as a depth x batch heat map;
* ``width_batch_largest`` (Fig. 5): the largest batch reaching the target within a few epoch
  budgets, per net, with the linear-net theory's diversity bound (Thm. 3, equal widths, text after
  it) as the theory curve on a second axis.

Claims (tolerances in ``claims:``, fixed before any result was seen), per panel:

1. ``threshold_exists`` (Sec. 5 finding 1): a batch threshold B* (the largest batch whose
   epochs are within ``analysis.threshold_factor`` of the net's fewest) below the largest
   batch, for at least ``min_fraction`` of the nets that reached the target;
2. ``threshold_grows_with_width`` (finding 2): Kendall's tau between width K and B* >= ``min_tau``
   over the nets that have a B*;
3. ``wide_fewer_epochs_at_large_batch`` (finding 3): at the largest batch, Kendall's tau between
   K and minus the epochs >= ``min_tau`` (a net that never reached the target counts as slowest);
4. ``largest_batch_follows_diversity_bound`` (Secs. 3-4: larger diversity allows larger batches):
   Kendall's tau between the Thm. 3 bound and the largest batch within the middle budget of
   ``analysis.budgets`` >= ``min_tau``.  The bound is proven for linear nets only; here it
   ranks ReLU nets.

Claims 2-4 are ordering claims tested by :func:`sigprop.claims.rank_claim` (Kendall's tau-b,
its null law over random orders with ties kept): pass at the smallest attainable tau >=
``min_tau`` that a random order reaches at most 5 % of the time, fail at the mirrored threshold,
inconclusive otherwise, with fewer than 4 ordered items (nets), or when every net
ties (no order to test); the quick scale has 5 nets (depths 1, 2, 3, 4, 10) and 3 seeds
(the config's ``design.changes``).  All four rows are ``claim`` rows; none is a sanity check.
All are one-sided (a count above a fraction, an order), so none has an equivalence margin.

Modules: ``theory`` (empty: the bound is per net), ``analysis`` (epochs to target, tuning,
thresholds, the bound), ``figures``, ``claims``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...contract import Claim, Figure, StudySpec
from ...params import NoParams, param

SOURCE = "004 Sec. 5, Figs. 1, 3-5"

_RANK = "{rank} (items: nets; y averaged over seeds)"  # the test of rank_claim, per panel
CLAIMS = {
    "threshold_exists": Claim(
        statement="A batch threshold exists beyond which more epochs are needed",
        expected="fraction of nets with B* < largest batch >= {frac:g}",
        test="count: fraction of the {n} nets with a B* whose B* is below the largest batch >= "
        "{frac:g} (B*: epochs, mean over seeds, within {factor:g} x the net's fewest); "
        "resolution one net",
        detail="B* = largest batch with epochs <= {factor:g} x fewest; {nets}",
        source=SOURCE + " (finding 1)",
    ),
    "threshold_grows_with_width": Claim(
        statement="The batch threshold grows with width (at a fixed parameter count)",
        expected="Kendall tau(K, B*) >= {need:g}",
        test=_RANK,
        detail="{nets} (nan: no batch reached the target, no B*: left out)",
        source=SOURCE + " (finding 2)",
    ),
    "wide_fewer_epochs_at_large_batch": Claim(
        statement="At the largest batch, wider nets need fewer epochs",
        expected="Kendall tau(K, -epochs at b={batch:g}) >= {need:g}",
        test=_RANK,
        detail="{nets} (nan: not reached within the budget, ranked slowest)",
        source=SOURCE + " (finding 3)",
    ),
    "largest_batch_follows_diversity_bound": Claim(
        statement="Nets with larger gradient diversity (004 Thm. 3 bound) reach the target with "
        "larger batches within {budget:g} epochs",
        expected="Kendall tau(bound, largest batch) >= {need:g}",
        test=_RANK,
        detail="{nets} (nan: no batch within the budget, ranked lowest); the bound is proven for "
        "linear nets, these are ReLU nets",
        source="004 Secs. 3-4, Thm. 3, Fig. 5",
    ),
}


@dataclass(frozen=True)
class Analysis:
    tune_epochs: float = param(
        2.0,
        gt=0,
        doc="the paper's tuning protocol: the rate with the "
        "lowest training loss after this many epochs",
    )
    threshold_factor: float = param(
        1.5, ge=1, doc="B*: the largest batch whose epochs <= this x the net's fewest epochs"
    )
    budgets: tuple[float, ...] = param(
        (10.0,),
        gt=0,
        min_len=1,
        doc="Fig. 5: largest batch reaching the target within "
        "these many epochs (the middle one for the claim)",
    )
    targets: dict[str, float] = param(
        {}, ge=0, le=1, doc="004 Table 1 training accuracy to reach, per panel (block label)"
    )
    default_target: float | None = param(
        None,
        ge=0,
        le=1,
        doc="target of a panel not in targets (default: none, the target is never reached)",
    )


@dataclass(frozen=True)
class Claims:
    min_fraction: float = param(
        0.75,
        ge=0,
        le=1,
        doc="'for almost all nets': a threshold B* < the largest batch in this fraction",
    )
    min_tau: float = param(
        0.3, gt=0, le=1, doc="ordering claims pass when Kendall's tau >= min_tau"
    )


SPEC = StudySpec(
    task="train",
    source=SOURCE,
    figures={
        "width_batch_epochs": Figure(
            "epochs_curves",
            (
                "Epochs to reach the target training accuracy (the panel's 004 Table 1 value) against "
                "batch size, for nets of depth L and width K with about the same number of weights (004 "
                "Figs. 1, 3). Each point uses the learning rate tuned by the paper's protocol (lowest "
                "training loss after 2 epochs) and is the mean over seeds; open markers at the top: the "
                "target was not reached within the epoch budget. Dotted verticals: each net's batch "
                "threshold B* (largest batch within the threshold factor of the net's fewest epochs)."
            ),
            claims=(
                "threshold_exists*",
                "threshold_grows_with_width*",
                "wide_fewer_epochs_at_large_batch*",
            ),
        ),
        "width_batch_heatmap": Figure(
            "epochs_heatmap",
            (
                "Epochs to the target training accuracy by depth L (width K in brackets) and batch size, "
                "as 004 Fig. 4; blank: not reached within the budget."
            ),
            claims=("wide_fewer_epochs_at_large_batch*", "threshold_exists*"),
        ),
        "width_batch_largest": Figure(
            "largest_batch_plot",
            (
                "Largest batch size that reaches the target training accuracy within a fixed number of "
                "epochs, per net (004 Fig. 5), coloured lines and left axis (crosses on the bottom line: "
                "no batch size reached it in time). Black dashed, right axis (theory): the "
                "lower bound of 004 Thm. 3 (equal widths, text after it) on the gradient-diversity ratio of "
                "a linear net with the same input size, widths and depth, 1 / ((L-1)/(2(K-1)) + 2/(d-1)) "
                "with L counting weight layers; the paper proves it for linear nets only."
            ),
            claims=("largest_batch_follows_diversity_bound*",),
        ),
    },
    theory=NoParams,
    analysis=Analysis,
    claims=Claims,
)
