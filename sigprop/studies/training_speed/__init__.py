"""Training speed on the critical line χ1 = 1: Huang, Xu, Du, Zeng, Zhao 2019, "Mean field
theory for deep dropout networks: digging up gradient backpropagation deeply",
arXiv:1912.09132, §5.1, Fig. 6.

tanh fully connected networks with σ_w² on χ1 = 1 (000 Eq. 10; the config's
``derived: {sigma_w2: {chi1: 1.0}}``) are trained by SGD over a log-spaced
learning-rate grid and several depths L, for keep rates ρ ∈ {1, 0.99, 0.98}.
Each run stops when its test accuracy reaches p (``target_acc``); τ is that
step (:mod:`sigprop.studies.training_speed.speed`).  The paper's findings (000 Fig. 6 and
§5.1): without dropout the curves collapse as τ = f1(ηL) (panel a); with
ρ = 0.99 (0.98) they collapse as τ = f2(η), without rescaling, up to L = 120
(55), and a deeper net (L = 300, 200) departs (panels b, c).

Theory: per keep rate, the mean-field fixed point at the runs' σ_w² (q*, c*,
χ1 = 1, χ2) and the depth scale ξ2 = 1/|ln χ2| (000 Eq. 6) with 6ξ2 and 12ξ2
(000 Table 1), from :mod:`sigprop.theory.meanfield`; ξ1 = 1/|ln χ1| is
infinite on this line.  For ρ = 1, χ2 = 1 as well and ξ2 = ∞.

Claims (``claims``; each statistic per seed, judged on its seed mean with its SE over seeds):

* ``collapse_etaL[rho=1]``: without dropout the curves collapse in ηL (Fig. 6(a)).
* ``collapse_eta[rho=ρ]``: with dropout they collapse in η, compared with the dropout-free
  control (ρ = 1) at the same depths: a pass needs the collapse in η and a ln-ratio better than
  the control's by more than its SE (Fig. 6(b), (c)).
* ``outlier_departs[rho=ρ]``: the deep comparison net departs, by more than the dropout-free
  control at the same depth departs from the same curves.  Where both sit at the censoring
  bound (never below the step budget), their departures are the same lower bound: such seeds
  are left out, and with fewer than 2 left the row is inconclusive with detectable = inf.

All three are one-sided (a ratio below a bound by k SE, an excess above k SE): none is an
equivalence claim, so none has a margin.

Modules: ``theory`` (the fixed point and ξ2 per setting), ``analysis`` (the panels: collapse
set, comparison depth, controls; theory look-ups), ``figures`` (τ against η or ηL),
``claims`` (the statistics of the collapse and departure claims declared in ``CLAIMS``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...contract import Claim, Figure, StudySpec
from ...params import ParamError, param

SOURCE = "000 §5.1, Fig. 6"

_ZERO_SE = (
    "an SE of 0 over seeds (seeds agreeing exactly) is no resolution: inconclusive, "
    "detectable = inf"
)
_CURVES = (
    "{depths}, {seeds} seeds: D(η) = {d_eta:.3g} ± {d_eta_se:.3g}, D(ηL) = {d_etaL:.3g} ± "
    "{d_etaL_se:.3g} (seed mean ± SE); {n_cens}/{n_points} (L, η) points never reached p = "
    "{target:g} in {T} steps in at least half the seeds (censored points enter no D)"
)
# each claim once; {slots} are filled by claims.py with the row's statistics (per keep rate ρ)
CLAIMS = {
    "collapse_etaL": Claim(
        statement="Without dropout the τ(η) curves of different depths collapse when η is "
        "rescaled by L: τ = f1(ηL)",
        expected="mean ln(D(ηL)/D(η)) ≤ ln {cr:g} = {lcr:.3f}",
        test="seed mean of r = ln(D(ηL)/D(η)) over {n} seeds: pass when mean + {k:g} SE ≤ ln "
        "{cr:g}, fail when mean − {k:g} SE ≥ ln {fr:g} (ln ratio of dispersions); " + _ZERO_SE,
        detail=_CURVES + "; r = {m:.3g} ± {m_se:.3g} (geometric-mean ratio {ratio:.3g})",
    ),
    "collapse_eta": Claim(
        statement="With dropout ρ = {rho:g} the τ(η) curves of depths up to L = {top} collapse "
        "without rescaling, τ = f2(η), where the dropout-free curves do not (paper: up to L = "
        "{paper})",
        expected="ln(D(η)/D(ηL)) ≤ ln {cr:g} and δ = ln-ratio of the ρ = 1 control minus that "
        "of ρ = {rho:g} > {k:g} SE",
        test="seed means over {n} seeds: r = ln(D(η)/D(ηL)) must satisfy mean + {k:g} SE ≤ ln "
        "{cr:g} (fail at mean − {k:g} SE ≥ ln {fr:g}), and δ = r(ρ = 1 control, same depths) − r, "
        "paired by seed, must exceed {k:g} SE (fail below −{k:g} SE); measured and "
        "detectable: δ (ln ratio of dispersions); " + _ZERO_SE,
        detail=_CURVES + "; depth scale ξ2 = {xi2:.3g} (6ξ2 = {xi2_6:.3g}, 12ξ2 = "
        "{xi2_12:.3g}): collapse set up to L = {top} = {top_xi2:.2g} ξ2 here{paper_xi2}; "
        "r(ρ = {rho:g}) = {m:.3g} ± {m_se:.3g} (geometric-mean ratio {ratio:.3g}), r(ρ = 1 "
        "control, same depths) = {m1:.3g} ± {se1:.3g}, δ = {dm:.3g} ± {dse:.3g} over {dn} "
        "seeds: {why}",
    ),
    "outlier_departs": Claim(
        statement="With dropout ρ = {rho:g} a deeper net (L = {o}; paper: L = {paper}) departs "
        "from the collapsed τ(η) curve, which the dropout-free net at that depth does not",
        expected="mean D_out ≥ {orat:g}·mean D_in, ≥ {ogap:g}, D_out − D_in > {k:g} SE; e = "
        "D_out − D_ctrl (ρ = 1 at L = {o}) > {k:g} SE",
        test="seed means over {n} seeds: the deep net departs (mean D_out ≥ {orat:g} mean D_in "
        "and ≥ {ogap:g}, and D_out − D_in > {k:g} SE; fail when mean D_out ≤ mean D_in or "
        "D_out − D_in < −{k:g} SE), and its excess over the ρ = 1 control e = D_out − D_ctrl, "
        "paired by seed, > {k:g} SE; measured and detectable: e (ln τ). Censoring: a seed "
        "where the deep net and its control both sit at the censoring bound (τ ≥ T at every "
        "η) has both D equal to the same lower bound and is left out of e; with fewer than 2 "
        "informative seeds, or informative differences of zero spread, nothing is detectable "
        "(detectable = inf) and the row is inconclusive",
        detail="L = {o} = {o_xi2:.2g} ξ2 against {depths}: D_out = {d_out:.3g} ± "
        "{d_out_se:.3g}, D_in = {d_in:.3g} ± {d_in_se:.3g}, D_out − D_in = {gap:.3g} ± "
        "{gap_se:.3g} (seed mean ± SE); L = {o} reached p = {target:g} at {reached}/{points} "
        "(seed, η) points within {T} steps (a censored point counts as ln(T/τ_j), a lower "
        "bound){control}: {why}",
    ),
}


@dataclass(frozen=True)
class Analysis:
    # see sigprop.studies.training_speed.speed for the definitions
    min_overlap_decades: float = param(
        0.3,
        ge=0,
        doc="two depth curves are compared only where both "
        "reached p over at least this many decades of x",
    )
    grid_step_decades: float = param(
        0.01, gt=0, doc="the curves are interpolated (in log x, ln τ) on a grid of this spacing"
    )
    control_depths: tuple[int, ...] = param(
        (),
        ge=1,
        doc="ρ = 1 depths that are dropout-free controls "
        "for the ρ < 1 comparison depths (drawn, not "
        "in panel (a)'s collapse set)",
    )
    compare_deepest: bool = param(
        True,
        doc="ρ < 1: the deepest of at least three depths is the comparison depth of "
        "outlier_departs (false: a scale without a comparison depth, whose outlier rows say "
        "so and are inconclusive)",
    )


def _check_keep_rates(mapping: dict, where: str) -> None:
    for k in mapping:
        try:
            ok = 0 < float(k) <= 1
        except ValueError:
            ok = False
        if not ok:
            raise ParamError(f"key 'claims.{where}.{k}': keys are keep rates in (0, 1]")


@dataclass(frozen=True)
class Claims:
    collapse_ratio: float = param(
        0.5,
        gt=0,
        le=1,
        doc="a collapse claim passes when D(predicted scaling) <= "
        "this times D(other scaling), by the seed mean of the ln ratio plus k SE",
    )
    collapse_fail_ratio: float = param(
        0.5,
        gt=0,
        le=1,
        doc="a collapse claim fails when the seed mean of ln(D(predicted scaling) / D(other "
        "scaling)) minus k SE is at or above ln of this: the ratio is resolved above it "
        "(at least collapse_ratio; equal to it, the pass threshold mirrored)",
    )
    outlier_ratio: float = param(
        2.0,
        ge=1,
        doc="the outlier claim passes when D_out >= this "
        "times D_in and D_out >= outlier_min_gap; it "
        "fails at <= 1",
    )
    outlier_min_gap: float = param(0.3, ge=0, doc="in ln τ units")
    seed_z: float = param(
        3.0,
        gt=0,
        doc="standard errors over seeds that decide a claim (3 SE "
        "with 3 seeds is about the one-sided 95 % point of "
        "Student's t with 2 degrees of freedom, 2.92)",
    )
    paper_collapse_depth: dict[str, int] = param(
        {},
        ge=1,
        doc="keep rate -> the paper's last collapsing depth (Fig. 6(b), (c)), quoted in details",
    )
    paper_outlier_depth: dict[str, int] = param(
        {}, ge=1, doc="keep rate -> the paper's departing comparison depth, quoted in details"
    )

    def __post_init__(self):
        if self.collapse_fail_ratio < self.collapse_ratio:
            raise ParamError(
                f"key 'claims.collapse_fail_ratio': {self.collapse_fail_ratio:g} is below "
                f"claims.collapse_ratio {self.collapse_ratio:g}: a ratio between them would "
                "both pass and fail"
            )
        _check_keep_rates(self.paper_collapse_depth, "paper_collapse_depth")
        _check_keep_rates(self.paper_outlier_depth, "paper_outlier_depth")


SPEC = StudySpec(
    task="train",
    source=SOURCE,
    figures={
        "training_speed": Figure(
            "tau_curves",
            (
                "Steps τ for tanh networks on the critical line χ1 = 1 to reach test accuracy p, against "
                "the learning rate (000 Fig. 6). Top row, the paper's scalings: (a) ρ = 1 against ηL, "
                "(b) ρ = 0.99 and (c) ρ = 0.98 against η; colours run from the shallowest (black) to the "
                "deepest collapse-set depth (green), the deep comparison depth of each ρ < 1 in blue (in "
                "(a), light/dark blue: dropout-free controls at those depths, where run), and "
                "the legend gives each depth in units of the mean-field depth scale ξ2 = 1/|ln χ2| "
                "(Gauss–Hermite quadrature; ξ2 = ∞ at ρ = 1). Open triangles above the dotted line: runs "
                "that never reached p within the step budget (censored, τ > T); crosses: diverged runs. "
                "Bottom row, faint: the other scaling (η for ρ = 1, ηL for ρ < 1) for comparison. "
                "D: the dispersion of the depth curves (mean pairwise |Δ ln τ| on their overlap)."
            ),
            claims=("collapse_etaL*", "collapse_eta*", "outlier_departs*"),
        )
    },
    analysis=Analysis,
    claims=Claims,
    eval_splits=(
        "test",
    ),  # τ reads test accuracy only; the training-set pass was 38 % of a deep shard
)
