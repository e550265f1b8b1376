"""Dropout ensemble averages without training: Baldi & Sadowski 2014, "The dropout learning
algorithm", Artificial Intelligence 210:78-122, doi:10.1016/j.artint.2014.02.004 (no arXiv id),
Secs. 2-3, 8, 9.2-9.4, Figs. 8.1-8.2, 9.1-9.2.

Three simulations, each made by grid blocks of the config; ``measure.simulations`` lists them,
each under its block's label, with its ``part`` (bounds, sampling or linear):

* **bounds** (Sec. 8, Eq. 87, Figs. 8.1-8.2): each run draws ``batch_size`` sets of
  ``width`` logistic outputs ``O_i = sigma(S_i)``, ``S_i ~ N(mu, s^2)`` (``mu``, ``s``
  uniform per set) and records every set's E, V, NWGM.  Theory: the curves of Eq. 87
  (:func:`sigprop.theory.ensembles.eq87_bounds`, :func:`~sigprop.theory.ensembles.eq87_argmax`).
* **sampling** (Secs. 9.3-9.4, Eqs. 103-108, Figs. 9.1-9.2): each run draws ``batch_size``
  samples of ``m = width`` values from one of the four distributions of the captions and
  records ``E_S`` and ``NWGM_S`` of every sample.  Theory: population moments and Eq. 104.
* **linear** (Secs. 2-3, Eqs. 15-17, 24-25): each run is its own initialized linear fc
  network with dropout on inputs (``input_keep``) and hidden units (``keep_rate``); the
  exact layer means/covariances are compared with ``batch_size`` dropout masks of one input.

The block label selects the simulation, so the study declares ``measure_reads_labels``: each
measure job receives the labels of its shard's runs (``p.labels``), and every label must name
a simulation (checked when the DAG is built).  Figures and claims read the label from the run
table's ``block`` column.

The simulation math is in :mod:`sigprop.studies.dropout_ensemble.monte_carlo`.  Measured rows: ``probe``
is the set / sample / unit (or unit pair ``i*k + j``) index, ``layer`` the network layer
(0 outside the linear part).

Claims (paper statements tested by simulation, each with its test and detectable effect):
Bound 1 of Eq. 87 holds for the simulated sets; Eqs. 85 and 202 approximate E - NWGM to second
order; for each distribution of Figs. 9.1-9.2 the correlation of E_S and NWGM_S is close to 1
and roughly constant in m, their covariance decays as 1/m, Var(NWGM_S) follows Eq. 104, C1 ~ C2
when sigma_O^2 is small, the bias away from 0.5 is below sigma_O, NWGM_S is roughly normal.
Sanity rows (hold if the apparatus is right, never tallied): Bound 2 and
2E(1-E)|1-2E| (Figs. 8.1-8.2) are looser than Bound 1; their maximisers against the closed
forms; Eqs. 81-82 (Ky Fan's inequality); no bias at mu_O = 0.5 (symmetry); the exact linear
moments of Eqs. 24-25 against Monte Carlo and the rejection of the unscaled network.

Findings recorded in the claims: the Eq. 85 second-order term underestimates E - NWGM by
the factor 2E(1-E) (Eq. 202 of App. B does not), see :mod:`sigprop.theory.ensembles`.

Modules: ``measure`` (the three simulations of a shard), ``theory`` (Eq. 87 curves, population
moments), ``analysis`` (per-set, per-sample and per-unit tables), ``figures``, ``claims``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ...contract import Figure, StudySpec
from ...params import ParamError, param, to_dict

PARTS = ("bounds", "sampling", "linear")

SOURCE_BOUNDS = "002 Sec. 8, Eq. 87, Figs. 8.1-8.2"
SOURCE_EQ85 = "002 Sec. 8, Eqs. 84-85 (proof Eqs. 93-96)"
SOURCE_EQ202 = "002 App. B, Eq. 202; Figs. 9.4-9.5"
SOURCE_SIDES = "002 Sec. 8, properties 3-4, Eqs. 81-82"
SOURCE_SAMPLING = "002 Secs. 9.3-9.4, Eqs. 103-108, Figs. 9.1-9.2"
SOURCE_LINEAR = "002 Secs. 2-3, Eqs. 8, 15-17, 22, 24-25"


@dataclass(frozen=True)
class Simulation:
    """One simulation: the part it belongs to and that part's parameters."""

    label: str = param("", doc="the label of the grid block whose runs it measures")
    part: Literal["bounds", "sampling", "linear"] | None = param(
        None, doc="bounds (Eq. 87), sampling (Figs. 9.1-9.2) or linear (Eqs. 24-25)"
    )
    mu: tuple[float, ...] | None = param(None, min_len=2, doc="bounds: range [lo, hi] of mu")
    sd: float | tuple[float, ...] | None = param(
        None, ge=0, doc="bounds: range [lo, hi] of the spread s; sampling (normal): the SD"
    )
    dist: Literal["uniform", "normal"] | None = param(
        None, doc="sampling: uniform on [low, high] or normal (mean, sd) truncated to (0, 1)"
    )
    low: float | None = param(None, ge=0, le=1, doc="sampling (uniform): lower end")
    high: float | None = param(None, ge=0, le=1, doc="sampling (uniform): upper end")
    mean: float | None = param(None, doc="sampling (normal): the mean before truncation")
    input_keep: float | None = param(
        None, gt=0, le=1, doc="linear: keep probability of the input units"
    )

    def __post_init__(self):
        where = f"measure.simulations '{self.label}'"
        if not self.label:
            raise ParamError(
                "key 'measure.simulations': every simulation needs a 'label' (the "
                "label of its grid block)"
            )
        if self.part is None:
            raise ParamError(f"{where}: 'part' missing (one of {', '.join(PARTS)})")
        need = {
            "bounds": ("mu", "sd"),
            "linear": ("input_keep",),
            "sampling": ("dist", "low", "high")
            if self.dist == "uniform"
            else ("dist", "mean", "sd"),
        }[self.part]
        missing = [k for k in need if getattr(self, k) is None]
        if missing:
            raise ParamError(f"{where}: part {self.part} needs {', '.join(missing)}")
        if self.part == "bounds" and not (
            isinstance(self.sd, tuple) and len(self.mu) == 2 and len(self.sd) == 2
        ):
            raise ParamError(f"{where}: mu and sd of the bounds part are ranges [lo, hi]")
        if self.part == "sampling" and self.dist == "normal" and not isinstance(self.sd, float):
            raise ParamError(f"{where}: sd of a normal distribution is one number")

    def spec(self) -> dict:
        """The simulation as the mapping :mod:`sigprop.studies.dropout_ensemble.monte_carlo` reads (the
        parameters that are set)."""
        return {k: v for k, v in to_dict(self).items() if v is not None}


@dataclass(frozen=True)
class Measure:
    simulations: tuple[Simulation, ...] = param(
        (), doc="the simulations, one per block label (the order of the sampling panels)"
    )
    cov_units: int = param(
        8, ge=1, doc="covariances of all pairs among the first cov_units units of each linear layer"
    )

    def __post_init__(self):
        labels = [s.label for s in self.simulations]
        twice = sorted({x for x in labels if labels.count(x) > 1})
        if twice:
            raise ParamError(f"key 'measure.simulations': label(s) {twice} given twice")


@dataclass(frozen=True)
class Theory:
    points: int = param(2001, ge=2, doc="E grid of the Eq. 87 curves on [0, 1]")


@dataclass(frozen=True)
class BoundsAnalysis:
    min_asymmetry: float = param(
        0.1, ge=0, le=1, doc="Eqs. 85 / 202 compared on sets with |1 - 2E| >= min_asymmetry"
    )
    plot_points: int = param(4000, ge=1, doc="points drawn per panel (the claims use all)")


@dataclass(frozen=True)
class SamplingAnalysis:
    hist_m: int = param(100, ge=1, doc="Fig. 9.1: the sample size m of the histograms")
    r_min: float = param(0.9, ge=-1, le=1, doc="Pearson r 'close to 1': r >= r_min at every m")


@dataclass(frozen=True)
class Analysis:
    bounds: BoundsAnalysis = param(BoundsAnalysis)
    sampling: SamplingAnalysis = param(SamplingAnalysis)


@dataclass(frozen=True)
class LinearClaims:
    within_fraction: float = param(
        0.95,
        gt=0,
        le=1,
        doc="Eqs. 24-25 hold when at least this fraction of units (pairs) is within z_max SE",
    )


@dataclass(frozen=True)
class BoundsClaims:
    within_fraction: float = param(
        1.0, gt=0, le=1, doc="fraction of sets within each Eq. 87 curve ..."
    )
    fraction_tolerance: float = param(0.05, ge=0, lt=1, doc="... up to this tolerance")
    small_spread: float = param(
        0.3, gt=0, doc="Eqs. 85 / 202 tested on sets with s <= this (second-order regime)"
    )
    ratio_tolerance: float = param(0.1, gt=0, doc="|median (E - NWGM)/approximation - 1| <= this")


@dataclass(frozen=True)
class SamplingClaims:
    r_range_max: float = param(0.05, gt=0, doc="'roughly constant': max r - min r over m")
    cov_slope_tolerance: float = param(
        0.1, gt=0, doc="Cov(E_S, NWGM_S) ~ V/m: log-log slope -1 within this ..."
    )
    fit_min_m: int = param(5, ge=1, doc="... fitted over m >= fit_min_m")
    var_rel_tolerance: float = param(
        0.1, gt=0, doc="Eq. 104 / C1 ~ C2: relative tolerance at the largest m"
    )
    small_variance: float = param(
        0.01,
        gt=0,
        doc="'C1 ~ C2 if sigma_O^2 is small': tested on distributions with sigma_O^2 <= this",
    )
    skew_max: float = param(0.3, gt=0, doc="'approximately normal': |skewness| of NWGM_S <= this")
    kurtosis_max: float = param(0.5, gt=0, doc="... and |excess kurtosis| <= this")


@dataclass(frozen=True)
class Claims:
    z_max: float = param(
        3.0, gt=0, doc="a simulated value agrees with an exact one within z_max SE"
    )
    linear: LinearClaims = param(LinearClaims)
    bounds: BoundsClaims = param(BoundsClaims)
    sampling: SamplingClaims = param(SamplingClaims)


def check(p, labels: set) -> None:
    """Every grid block names one of ``measure.simulations`` (when the DAG is built)."""
    known = {s.label for s in p.measure.simulations}
    missing = sorted(labels - known)
    if missing:
        raise ParamError(
            f"key 'measure.simulations': no simulation for the block label(s) "
            f"{missing} (known: {sorted(known)})"
        )


SPEC = StudySpec(
    task="measure",
    measure_reads_labels=True,
    check=check,
    source="002 Secs. 2-3, 8, 9.2-9.4; Figs. 8.1-8.2, 9.1-9.2",
    figures={
        "dropout_bounds": Figure(
            "bounds_figure",
            (
                "002 Figs. 8.1-8.2 (Eq. 87 as printed): (a) the curve E(1-E)|1-2E|/(1-2E(1-E)) (Bound 2) "
                "and (b) 2E(1-E)|1-2E|, with their maxima on [0, 0.5] at E = 0.5 - sqrt(sqrt5 - 2)/2 and "
                "0.5 - sqrt(3)/6 (dotted). Points: simulated sets of logistic outputs O = sigma(S), "
                "S ~ N(mu, s^2) with mu, s uniform per set (colour: s), at their measured E and |E - NWGM|. "
                "(c) measured E - NWGM against the second-order approximations Eq. 85, "
                "V(1-2E)/(1-2V), and Eq. 202 (App. B), for sets with |1-2E| >= 0.1; dashed: equality. "
                "The simulation supports the curves as (approximate) bounds on |E - NWGM| for the spreads "
                "drawn: the few points above a curve are sets with large s. It does not support Eq. 85 "
                "as an approximation: the measured difference is larger by about 1/(2E(1-E)), which "
                "Eq. 202 accounts for (see the claims)."
            ),
            claims=("bound*", "eq85_*", "eq202_*", "nwgm_side_*"),
        ),
        "dropout_sampling": Figure(
            "sampling_figure",
            (
                "002 Figs. 9.1-9.2. Left (Fig. 9.1): histograms of NWGM_S (filled) and E_S (line) over "
                "repeated samples of m values with weights 1/m from U[0,1] (upper left), U[0,0.5] (lower "
                "left), N(0.5, 0.1) (upper right) and N(0.25, 0.05) (lower right), normals truncated to "
                "(0,1); ticks: population mean mu_O (black) and Eq. 104's NWGM mean sigma(mu_S) (red). "
                "Right (Fig. 9.2): Pearson correlation (dashed: the claims' threshold r = 0.9) and "
                "covariance between E_S and NWGM_S against the sample size m, each from the repeated "
                "samples at that m; dotted: the 1/m law through the largest m. Error bars: ±1 SE "
                "(Fisher transform for r). The simulation supports the paper's statements: r is close "
                "to 1 and varies little with m, the covariance falls as 1/m; for U[0,0.5] r decreases "
                "slowly with m (see the claims for the tolerances)."
            ),
            claims=(
                "corr_*",
                "cov_decays_*",
                "var_nwgm_*",
                "c1_equals_c2*",
                "bias_small*",
                "no_bias_at_half*",
                "nwgm_approx_normal*",
            ),
        ),
        "dropout_linear": Figure(
            "linear_figure",
            (
                "002 Secs. 2-3: deep linear networks with dropout on the inputs (p = 0.8) and hidden units "
                "(keep rate), Eq. 22, one random input per network. (a) Monte Carlo mean of every unit of "
                "every layer against the exact expectation of Eq. 24 (dots) and against the unscaled "
                "network that ignores the keep probabilities (grey crosses); (b) Monte Carlo variances "
                "against Eqs. 16/25; (c) covariances of all pairs among the first units of each layer "
                "against Eqs. 17/25, both divided by the exact sqrt(V_i V_j); (d) z-scores "
                "(MC - exact)/SE of means, variances and covariances with the standard normal density. "
                "All dropout masks of an input are drawn in one batched tensor pass. The simulation "
                "supports the exact recursions; the unscaled network is rejected."
            ),
            claims=("linear_*",),
        ),
    },
    measure=Measure,
    theory=Theory,
    analysis=Analysis,
    claims=Claims,
)
