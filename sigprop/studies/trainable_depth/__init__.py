"""Trainable depth of dropout networks: Huang, Xu, Du, Zeng, Zhao 2019, "Mean field theory for
deep dropout networks: digging up gradient backpropagation deeply", arXiv:1912.09132, §5.2,
Fig. 7 and Table 1 (after Schoenholz et al. 2017, Fig. 5).

tanh fully connected nets over a depth × σ_w² grid at fixed σ_b², in the eight panels (a)-(h)
of 000 Fig. 7 (keep rate, initialization, optimizer, data set, step budget); a panel is the
``label:`` of the grid blocks that made its runs (the run table's ``block`` column).  Theory:
the depth scales ξ1 = 1/|ln χ1| (000 Eqs. 10-11) and ξ2 = 1/|ln χ2| (000 Eq. 6) from
:mod:`sigprop.theory.meanfield`; the paper's empirical bound L ≤ min(12ξ1, 12ξ2) (000 Table 1,
"realistic condition") against Schoenholz et al.'s 6ξ2 ("independent assumption").

Claims (``claims``): ``boundary_min12xi_vs_6xi2[all]`` and one row per panel: the seed mean of
err(6ξ2) − err(min(12ξ1, 12ξ2)), the fractions of (σ_w², L) cells each bound misclassifies,
is above max(3 SE over seeds, the tolerance): a one-sided comparison, no equivalence margin.
Where the two rules disagree on at most that margin of the cells (both curves beyond the depth
grid), no outcome could decide: the row is inconclusive with detectable = inf.

Modules: ``theory`` (the depth scales on a σ_w² grid), ``analysis`` (the theory curves as
functions of (ρ, σ_w²)), ``figures`` (the heatmaps), ``claims`` (which bound fits the
trainable region); the trainability of a grid is :mod:`sigprop.studies.trainable_depth.trainability`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...contract import Claim, Figure, StudySpec
from ...params import ParamError, param

SOURCE = "000 §5.2, Table 1, Fig. 7"

# the claim once; {slots} are filled by claims.py with the row's statistics
_DETAIL = (
    "{where}: misclassified cells (seed mean): min(12ξ1,12ξ2) {err_min_12xi1_12xi2:.3f}, 6ξ2 "
    "{err_6xi2:.3f} over {cells} cells; difference per seed {per_seed}, mean {mean:+.3f} ± "
    "{se_diff:.3f} (SE used); trainable = {metric} ≥ chance + {fraction:g}·(best of the panel and "
    "seed − chance); the rules disagree on {disagreement:.3f} of the cells"
)
CLAIMS = {
    "boundary_min12xi_vs_6xi2": Claim(
        statement="The trainable region's boundary follows min(12ξ1, 12ξ2) better than 6ξ2",
        test="seed mean of err(6ξ2) − err(min(12ξ1,12ξ2)) over {n_seeds} seeds: pass above "
        "max({k:g} SE, {tol:g}), fail below minus that; SE over seeds, at least one cell per seed "
        "(1/({cells}·√{n_seeds})); units: fraction of cells; the two rules disagree on "
        "{disagreement:.3g} of the cells (the largest |difference| attainable): when that is <= "
        "the margin no difference can pass or fail and nothing is detectable (detectable = inf)",
        expected="> 0 (err(6ξ2) − err(min(12ξ1,12ξ2)), seed mean)",
        detail=_DETAIL,
    )
}
UNRESOLVABLE = (
    _DETAIL + ", at most the margin {bound:.3f}: the depth and σ_w² grid cannot separate the two "
    "bounds here"
)
"""The detail of a row whose two rules disagree on at most its margin of the cells."""


@dataclass(frozen=True)
class Theory:
    activation: str = param("tanh", doc="activation of the mean-field curves")
    sigma_b2: float = param(0.05, ge=0, doc="σ_b² of the mean-field curves")
    sigma_w2_range: tuple[float, ...] = param(
        (1.0, 4.0), gt=0, min_len=2, doc="[low, high] of the σ_w² grid of the curves"
    )
    points: int = param(301, ge=2, doc="points of the σ_w² grid")

    def __post_init__(self):
        lo_hi = self.sigma_w2_range
        if len(lo_hi) != 2 or not lo_hi[0] < lo_hi[1]:
            raise ParamError(
                f"key 'theory.sigma_w2_range': expected [low, high] with low < high, "
                f"got {list(lo_hi)}"
            )


@dataclass(frozen=True)
class Analysis:
    metric: str = param(
        "train_acc",
        doc="accuracy metric of the heatmaps and the claims "
        "(the paper's heatmaps show training accuracy)",
    )


@dataclass(frozen=True)
class Claims:
    trainable_fraction: float = param(
        0.5,
        ge=0,
        le=1,
        doc="a cell is trainable when its accuracy is >= chance + "
        "this fraction of (panel best - chance)",
    )
    error_tolerance: float = param(
        0.02, ge=0, lt=1, doc="fit errors of the two bounds closer than this are 'inconclusive'"
    )
    seed_z: float = param(
        3.0,
        gt=0,
        doc="standard errors over seeds that decide a claim (3 SE "
        "with 3 seeds is about the one-sided 95 % point of "
        "Student's t with 2 degrees of freedom, 2.92)",
    )


SPEC = StudySpec(
    task="train",
    source=SOURCE,
    figures={
        "trainable_depth": Figure(
            "heatmap",
            (
                "Accuracy after the step budget of tanh networks over depth L and σ_w² (σ_b² fixed), "
                "panels (a)-(h) as in 000 Fig. 7 (keep rate, initialization, optimizer, data, steps in "
                "each title). Lines: mean-field depth scales from Gauss–Hermite "
                "quadrature, 12ξ1 (white solid), 6ξ2 (green dashed), 12ξ2 (white dashed)."
            ),
            claims=("boundary_min12xi_vs_6xi2*",),
        )
    },
    theory=Theory,
    analysis=Analysis,
    claims=Claims,
)
