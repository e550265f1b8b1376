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

Each claim is declared once in ``CLAIMS`` (statement, test, expected, detail, kind, source, with
slots that ``claims`` fills with the row's statistics).  Modules: ``measure`` (the three
simulations of a shard), ``theory`` (Eq. 87 curves, population moments), ``analysis`` (per-set,
per-sample and per-unit tables), ``figures``, ``claims`` (the statistics of each row).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ...contract import Claim, Figure, StudySpec
from ...params import ParamError, param, to_dict

PARTS = ("bounds", "sampling", "linear")

SOURCE_BOUNDS = "002 Sec. 8, Eq. 87, Figs. 8.1-8.2"
SOURCE_EQ85 = "002 Sec. 8, Eqs. 84-85 (proof Eqs. 93-96)"
SOURCE_EQ202 = "002 App. B, Eq. 202; Figs. 9.4-9.5"
SOURCE_SIDES = "002 Sec. 8, properties 3-4, Eqs. 81-82"
SOURCE_SAMPLING = "002 Secs. 9.3-9.4, Eqs. 103-108, Figs. 9.1-9.2"
SOURCE_LINEAR = "002 Secs. 2-3, Eqs. 8, 15-17, 22, 24-25"

# each claim once: what the paper states, how it is tested, what a pass expects and what the row
# reports; {slots} are filled by claims.py with the row's statistics.  Shared fragments: the
# simulated sets (Eq. 87), the samples per m (Figs. 9.1-9.2), the linear networks (Eqs. 24-25).
SETS = (
    "{n} sets of {width} outputs, s in [{s_lo:.2f}, {s_hi:.2f}], mu in [{mu_lo:.2f}, {mu_hi:.2f}]"
)
SAMPLES = "{n_lo}-{n_hi} samples per m, m = {ms}"
NETS = (
    "{nets} networks ({width} wide, {depth} hidden layers, keep {keep:g} hidden / {input_keep} "
    "inputs), {masks} masks per input; exact moments by theory.ensembles.linear_dropout_expectation"
)
INDEP = "{n_m} m values, each an independent run"
_NESTED = dict(
    expected="fraction >= that within {tighter} ({tight:.4f}), set by set",
    test="nesting of the Eq. 87 curves, set by set",
    detail=SETS + "; fraction within {q} {frac:.4f} (a looser curve than {tighter}: implied by "
    "bound1_eq87, not counted)",
    kind="sanity",
)
_SECOND_ORDER = dict(
    expected="median (E - NWGM)/approximation = 1",
    test="median ratio - 1 over {n} independent sets: {rule} (bootstrap SE of the median "
    "{bse:.3g}); units: ratio",
    detail="{n} sets with s <= {s_small:g} and |1-2E| >= {asym:g}; quartiles of the ratio "
    "{q1:.3f}-{q3:.3f}; median 1/(2E(1-E)) over these sets {inv:.3f} (the factor by which Eq. 85 "
    "drops the consistent second-order term, cf. Eq. 202)",
)
_ARGMAX = dict(
    expected="{formula:.6f}",
    test="argmax of our analytic curve against its closed form (no data)",
    detail="argmax of the tabulated curve on a grid of spacing {h:.1e}",
    kind="sanity",
    source=SOURCE_BOUNDS,
)
CLAIMS = {
    "bound1_eq87": Claim(
        statement="|E - NWGM| <~ E(1-E)|1-2E|/(1-2V) (Bound 1, the tightest curve of Eq. 87) for "
        "logistic outputs",
        expected=">= {thr:g} of the sets within the curve (the paper: 'well within the bounds', "
        "i.e. all sets, {want:g}, up to {ftol:g})",
        test="fraction of {n} independent sets within the curve minus {thr:g}: {rule} (binomial "
        "SE at {thr:g}: {bse:.4f}); units: fraction of sets",
        detail=SETS + "; within for the quarter with the largest s (s >= {s_q:.2f}): "
        "{frac_hi:.4f}; largest excess |E - NWGM| - bound {excess:.2e}; within Bound 2 "
        "{frac2:.4f}, within 2E(1-E)|1-2E| {frac3:.4f}",
        source=SOURCE_BOUNDS,
    ),
    "bound2_fig81": Claim(
        statement="Bound 2 E(1-E)|1-2E|/(1-2E(1-E)) (Fig. 8.1) holds for at least the sets within "
        "Bound 1 (Bound 1 <= Bound 2 since V <= E(1-E))",
        source=SOURCE_BOUNDS + " (Fig. 8.1)",
        **_NESTED,
    ),
    "bound3_fig82": Claim(
        statement="2E(1-E)|1-2E| (Fig. 8.2) holds for at least the sets within Bound 2 "
        "(1 - 2E(1-E) >= 1/2)",
        source=SOURCE_BOUNDS + " (Fig. 8.2)",
        **_NESTED,
    ),
    "eq85_second_order": Claim(
        statement="To second order E - NWGM ~ V(1-2E)/(1-2V) (Eq. 85)",
        source=SOURCE_EQ85,
        **_SECOND_ORDER,
    ),
    "eq202_second_order": Claim(
        statement="To second order (expansion around E) E - NWGM ~ E - (E - V/2E)/(1 - "
        "V/(2E(1-E))) (Eq. 202)",
        source=SOURCE_EQ202,
        **_SECOND_ORDER,
    ),
    "nwgm_side_eqs81_82": Claim(
        statement="If all O_i <= 0.5 then NWGM <= E; if all O_i >= 0.5 then NWGM >= E (Ky Fan's "
        "inequality: a theorem)",
        expected="all such sets (exact inequality)",
        test="exact inequality on every set",
        detail="{low} consistently low and {high} consistently high sets (of {n}); comparison to "
        "{atol:g}",
        kind="sanity",
        source=SOURCE_SIDES,
    ),
    "bound2_argmax": Claim(
        statement="The maximum of the Fig. 8.1 curve over [0, 0.5] is at E = 0.5 - sqrt(sqrt5 - "
        "2)/2",
        **_ARGMAX,
    ),
    "bound3_argmax": Claim(
        statement="The maximum of the Fig. 8.2 curve over [0, 0.5] is at E = 0.5 - sqrt(3)/6",
        **_ARGMAX,
    ),
    "corr_close_to_one": Claim(
        statement="The Pearson correlation between E_S and NWGM_S is close to 1",
        expected="r >= {r_min:g} at every m",
        test="r - {r_min:g} > {k:g} SE(r) at every m (fail if below -{k:g} SE at any m; "
        + INDEP
        + "); units: r",
        detail="min r at m = {m_min}; r = {rs}; SE(r) <= {r_se:.4f}; " + SAMPLES,
        source=SOURCE_SAMPLING + " (Fig. 9.2 left)",
    ),
    "corr_constant_in_m": Claim(
        statement="The Pearson correlation is roughly constant in the sample size m",
        expected="max r - min r <= {r_range:g}",
        test="{r_range:g} - (max r - min r): {rule} (SE of the range {se_range:.4f}; "
        + INDEP
        + "); units: r",
        detail="r from {r_first:.4f} (m = {m_first}) to {r_last:.4f} (m = {m_last}); SE of r <= "
        "{r_se:.4f}; " + SAMPLES,
        source=SOURCE_SAMPLING + " (Fig. 9.2 left)",
    ),
    "cov_decays_as_inv_m": Claim(
        statement="The covariance of E_S and NWGM_S decreases to 0 inversely to the sample size "
        "(order V/m) (holds by construction for means of m iid draws: a check of the sampler, "
        "not counted)",
        expected="log-log slope -1",
        test="slope + 1 (weighted log-log fit over {n_fit} independent m >= {fit_min}, SE "
        "{slope_se:.3g}): {rule}; units: slope",
        detail="fit over m >= {fit_min}; m Cov = {m_cov}; unweighted slope {slope_u:.3f}; "
        + SAMPLES,
        kind="sanity",
        source=SOURCE_SAMPLING + " (Eqs. 106-108, Fig. 9.2 right)",
    ),
    "var_nwgm_eq104": Claim(
        statement="Var(NWGM_S) ~ t^2 sigma_S^2 / m with t = sigma'(mu_S) (Eq. 104)",
        expected="{c2_eq104:.5g}",
        test="relative gap m Var(NWGM_S)/C2 - 1 at m = {m} ({n} samples, SE {rel_se:.3g}): "
        "{rule}; units: relative gap",
        detail="m Var(NWGM_S) at m = {m} ({n} samples), relative gap {rel:+.3f}; C1 = m Var(E_S) "
        "= {c1:.5g} vs sigma_O^2 = {var_o:.5g}",
        source=SOURCE_SAMPLING + " (Eq. 104)",
    ),
    "c1_equals_c2": Claim(
        statement="sigma_O^2 = C1 ~ C2 when sigma_O^2 is small (Var(E_S) ~ C1/m, Var(NWGM_S) ~ "
        "C2/m)",
        expected="C2/C1 - 1 = 0",
        test="C2/C1 - 1 at m = {m} (bootstrap SE over samples {se_c:.3g}): {rule}; units: "
        "relative gap",
        detail="at m = {m}: C1 = {c1:.5g}, C2 = {c2:.5g}; sigma_O^2 = {var_o:.5g} <= {small:g}",
        source=SOURCE_SAMPLING + " (Sec. 9.3)",
    ),
    "no_bias_at_half": Claim(
        statement="With mu_O = 0.5, NWGM_S and E_S have the same mean (sigma(mu_S) = mu_O); a "
        "symmetry: the distribution of O is symmetric about 1/2 and NWGM(1 - O) = 1 - NWGM(O)",
        expected="0",
        test="{rule}",
        detail="mean NWGM_S - E_S at m = {m}, {n} samples, SE {bias_se:.2e}",
        kind="sanity",
        source=SOURCE_SAMPLING + " (Sec. 9.3, Fig. 9.1)",
    ),
    "bias_small": Claim(
        statement="Away from 0.5 a bias NWGM_S - E_S appears but is small: smaller than the error "
        "sigma_O of a single random sample",
        expected="|bias| < sigma_O = {sd_o:.4f}",
        test="sigma_O - |bias| ({n} independent samples): {rule}; units: bias",
        detail="mean NWGM_S - E_S at m = {m} ({n} samples, SE {bias_se:.1e}); population "
        "sigma(mu_S) - mu_O = {eq104:.4f}; |bias|/sigma_O = {ratio:.3f}",
        source=SOURCE_SAMPLING + " (Sec. 9.3, Fig. 9.1; Sec. 8 end)",
    ),
    "nwgm_approx_normal": Claim(
        statement="NWGM_S is approximately normally distributed",
        expected="|skewness| <= {skew_max:g} and |excess kurtosis| <= {kurt_max:g}",
        test="{skew_max:g} - |skewness| > {k:g} SE (SE {se_sk:.3f}) and {kurt_max:g} - |excess "
        "kurtosis| > {k:g} SE (SE {se_ku:.3f}), {n} samples; fail if either is below -{k:g} SE; "
        "units: skewness",
        detail="m = {m}, {n} samples: skewness {skew:+.3f} (SE ~{se_sk:.3f}), excess kurtosis "
        "{kurt:+.3f} (SE ~{se_ku:.3f})",
        source=SOURCE_SAMPLING + " (Sec. 9.2, Eq. 104, Fig. 9.1)",
    ),
    **{
        cid: Claim(
            statement=statement + " (exact theorem checked by Monte Carlo)",
            expected=">= {want:g} of values within {k:g} SE of " + eq,
            test="fraction of |z| <= {k:g} over {n} values >= {want:g} (values of one network "
            "share its masks)",
            detail="{n} values; max |z| {max_abs_z:.2f}, RMS z {rms_z:.3f}; " + NETS,
            kind="sanity",
            source=SOURCE_LINEAR,
        )
        for cid, statement, eq in (
            (
                "linear_mean_eq24",
                "The dropout expectation of every unit of a deep linear network is the "
                "deterministic network with weights scaled by the keep probabilities",
                "Eq. 24",
            ),
            (
                "linear_var_eq25",
                "The dropout variances of a deep linear network follow the recursion of Eq. 25 "
                "(Eq. 16 for one layer)",
                "Eqs. 16, 25",
            ),
            (
                "linear_cov_eq25",
                "The dropout covariances of pairs of units follow the recursion of Eq. 25 "
                "(Eq. 17 for one layer)",
                "Eqs. 17, 25",
            ),
        )
    },
    "linear_unscaled_rejected": Claim(
        statement="Control: the test that accepts Eq. 24 rejects the unscaled network (Eq. 8: "
        "without multiplying the weights by the keep probabilities the expectation is wrong)",
        expected="< {want:g} of units within {k:g} SE of the unscaled network",
        test="power control of linear_mean_eq24: fraction of units within {k:g} SE of the "
        "unscaled network below {want:g} by more than {k:g} binomial SE over {n} units (pass), "
        "above it by more (fail), else inconclusive",
        detail="{n} units; median |z| of the unscaled network {med_naive:.1f} (Eq. 24: "
        "{med:.2f}); " + NETS,
        kind="control",
        source=SOURCE_LINEAR,
    ),
}


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
