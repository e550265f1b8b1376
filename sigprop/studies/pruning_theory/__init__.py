"""Layer collapse of pruning at initialization: Hayou, Ton, Doucet & Teh 2021, "Robust Pruning
at Initialization", arXiv:2002.08797, Sec. 2.2 (Fig. 1, Thm. 1) and App. E (Prop. 4, Table 7).

A measurement at initialization, no training: FFNNs of depth ``L`` and width ``N`` are scored
by their run's pruner on a class-balanced batch (as the prune stage does,
:func:`sigprop.prune.stage.shard_masks`), and per model the job records

* ``kept_fraction_neuron`` (keys ``layer``, 1-based, and ``probe`` = the 1-based neuron index,
  since ``probe`` and ``layer`` are the run table's row keys): the fraction of a
  neuron's incoming weights kept at the run's ``sparsity`` (003 Fig. 1: SBP,
  L = N = 100, s = 70%, EOC vs chaotic phase);
* ``s_cr``, ``s_cr_layer``: the exact critical sparsity of the run's one-shot
  pruner (smallest sparsity at which a layer is fully pruned, definition above
  Thm. 1), from :func:`sigprop.prune.critical_sparsity_from_scores`, and the
  (0-based, among prunable layers) layer that empties first;
* ``s_cr_gamma`` (key ``probe`` = gamma; magnitude runs only): ``s_cr`` of
  magnitude pruning of the network whose prunable layer ``gamma_layer`` (default 0:
  the input layer, 003 App. E, Table 7's ``alpha_1 = gamma``) has weight variance
  ``sigma_w2 / (gamma N)`` and every other layer ``sigma_w2 / N`` (003 Sec. 2.1:
  ``W^l ~ N(0, sigma_w2 / v_l)``, ``v_l = alpha_l N``), obtained by rescaling that
  layer's magnitude scores (:func:`.measure.alpha_scale`; magnitude ranks are
  invariant to a common scale, so this is exactly magnitude pruning of that
  network); ``s_cr_gamma_layer`` is the layer that empties first (Prop. 4 assumes
  it is ``l0``).

Theory: ``chi_1`` (003's ``chi = f'(1)``), Thm. 1's bound with the natural log
(the theorem) and with log10 (the 27% quoted after it), Prop. 4's bound as printed
(``gamma Q_x``) and with ``sqrt(gamma)`` (:mod:`sigprop.theory.pruning`), with
``zeta_l0 = M_l0 / N^2`` of the input layer (``theory.zeta_l0``: d N / N^2 = d / N).

Claims (each row names its test and the smallest effect it detects): (1) Fig. 1: at
the EOC no layer is fully pruned at s = 70%; (2) in the chaotic phase (chi = 2, our
choice: the paper gives no sigma's) some layer is; (3) Thm. 1: mean empirical s_cr <=
the bound in the ordered phase where the bound is below 1 (chi's other than the
example's kappa = 0.2 are our choice); (4) s_cr decreases as chi moves away from 1 and
is largest on the EOC; (5) the paper's example (kappa = 0.2: 22% measured); (6) Prop.
4's bound as printed against the empirical s_cr of Table 7's setting, and (7) Table 7's
printed empirical values.  Sanity (shown apart, not tallied): Prop. 4 with
``sqrt(gamma)``, our corrected reading, against the same measurement.

Modules: ``measure`` (kept fractions and critical sparsities of a shard), ``theory``
(chi_1, kappa, Thm. 1 and Prop. 4 bounds), ``analysis`` (per-run and per-setting summaries),
``figures``, ``claims``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...contract import Claim, Figure, StudySpec
from ...params import param

SOURCE_FIG1 = "003 Sec. 2.2, Fig. 1"
SOURCE_THM1 = "003 Thm. 1, Sec. 2.2 (text after it)"
SOURCE_TAB7 = "003 App. E, Prop. 4, Table 7"
TABLE7 = {"gamma": [2.0, 5.0, 10.0], "bound": [5.77, 0.81, 0.72], "empirical": [1.0, 0.79, 0.69]}
_FIG1 = "fully pruned layers counted in each of the seeds: "
_BOUND = (
    "upper bound: fail when mean s_cr > bound {b:.4f} + {z:g} SE over {r.n} seeds (a violation "
    "larger than that is detected); units: s_cr"
)
_EQUIV = "over {r.n} seeds; inconclusive when {z:g} SE exceeds the tolerance; units: s_cr"
_GAMMA = (
    "{r.n} seeds, SE {r.se:.4f}; l0 = {where}, zeta_l0 = {zeta:g}; l0 empties first in "
    "{r.l0_first:.0%} of seeds"
)
_STATE = "SBP at s = {s:g} of a depth-{depth} {act} FFNN at {phase} init (chi = {chi:.3g}) prunes "
_DETAIL = "fully pruned layers per seed: {per_seed} of {layers}"
CLAIMS = {
    "fig1_eoc_layer_collapse": Claim(
        statement=_STATE + "no layer entirely",
        expected="0 fully pruned layers in every seed",
        test=_FIG1 + "0 fully pruned layers in every seed passes (one emptied layer in one seed "
        "fails); units: layers",
        detail=_DETAIL,
        source=SOURCE_FIG1,
    ),
    "fig1_chaotic_layer_collapse": Claim(
        statement=_STATE + "some layer entirely",
        expected=">= 1 fully pruned layer in every seed",
        test=_FIG1 + ">= 1 fully pruned layer in every seed passes (a seed with none fails); the "
        "chaotic phase's chi = 2 is our choice (the paper gives no sigma's); units: layers",
        detail=_DETAIL + "; chi = {chi:.3g} is our choice",
        source=SOURCE_FIG1,
    ),
    "thm1_bound_holds": Claim(
        statement="Thm. 1: E[s_cr] of SBP <= (1 + ln(kappa L N^2)/kappa)/L in the ordered phase "
        "(L = {r.depth}, N = {r.width}, chi = {r.chi1:.3g})",
        expected="<= {r.bound_ln:.4f} (natural-log bound)",
        test=_BOUND,
        detail="{r.n} seeds, SE {r.se:.4f}; kappa = {r.kappa:.4f}; log10 bound "
        "{r.bound_log10:.4f}; the O(1/(kappa^2 sqrt(L N^2))) remainder is not included; {whose}",
        source=SOURCE_THM1,
    ),
    "thm1_scr_grows_towards_eoc": Claim(
        statement="s_cr of SBP decreases the farther chi is from 1 (Thm. 1) and is largest on the "
        "EOC",
        expected="mean s_cr strictly increasing in chi over the ordered settings and EOC mean > "
        "all",
        test="ordering over {n} items (chi's and the EOC): pass only at Kendall tau = 1 (strictly "
        "increasing means, EOC largest), P(pass | random order) = {null:.3f}; fail only at tau = "
        "-1 (the reverse order, as rare under a random order), else inconclusive; fewer than 4 "
        "items: inconclusive; units: tau",
        detail="mean s_cr by chi: {by_chi}; EOC: {eoc:.4f}; Kendall tau {tau:.2f}; smallest step "
        "between neighbours {gap_z:.1f} SE; the ordered chi's other than kappa = 0.2 are our "
        "choice",
        source=SOURCE_THM1,
    ),
    "thm1_example_kappa_0.2": Claim(
        statement="Text after Thm. 1: for L = N = 100 and kappa = 0.2, E[s_cr] ~ 22% over 10 "
        "simulations (bound ~ 27%) (the same measured s_cr as the thm1_bound_holds row at this "
        "chi: it corroborates that claim and is not counted)",
        expected="0.22",
        test="|mean s_cr - 0.22| <= {tol:g} " + _EQUIV,
        detail="kappa = {r.kappa:.4f}, L = {r.depth}, N = {r.width}, {r.n} seeds (SE {r.se:.4f}); "
        "our bound: ln {r.bound_ln:.4f}, log10 {r.bound_log10:.4f} (the paper's 27% is the log10 "
        "form)",
        kind="summary",
        source=SOURCE_THM1,
    ),
    "prop4_bound_holds": Claim(
        statement="Prop. 4 ({what}): E[s_cr] of magnitude pruning <= the bound (L = N = 100, "
        "alpha_1 = gamma)",
        expected="<= {b:.4f}",
        test=_BOUND,
        detail=_GAMMA + "; Table 7 prints bound {r.table7_bound:g}",
        source=SOURCE_TAB7,
    ),
    "table7_empirical": Claim(
        statement="Table 7's empirical E[s_cr] of magnitude pruning (10 simulations) is reproduced",
        expected="{r.table7_empirical:g}",
        test="|mean s_cr - Table 7| <= {tol:g} " + _EQUIV,
        detail=_GAMMA + "; Prop. 4 bound printed {r.bound:.4f}, sqrt(gamma) {r.bound_sqrt:.4f}; "
        "Table 7 bound {r.table7_bound:g}; data: digits (64 inputs), not MNIST",
        source=SOURCE_TAB7,
    ),
}
SQRT_GAMMA = (
    "sanity, not tallied: our corrected reading of Prop. 4 (the std ratio is sqrt(gamma), not "
    "gamma), not the paper's statement; the same measurement is tallied against the printed bound "
    "and Table 7; " + _BOUND
)


@dataclass(frozen=True)
class Measure:
    gammas: tuple[float, ...] = param(
        tuple(TABLE7["gamma"]),
        gt=0,
        doc="Table 7's gammas: alpha_l0 of the magnitude runs' s_cr_gamma",
    )
    gamma_layer: int = param(
        0,
        ge=0,
        doc="prunable layer l0 (0-based; 0 = the input layer, "
        "Table 7's alpha_1) whose variance is sigma_w2 / "
        "(gamma N)",
    )


@dataclass(frozen=True)
class Theory:
    depth: int = param(100, ge=1, doc="L of Thm. 1 / Prop. 4 (the runs' depth)")
    width: int = param(100, ge=1, doc="N of Thm. 1 / Prop. 4 (the runs' width)")
    eoc_tolerance: float = param(1e-6, ge=0, doc="no Thm. 1 bound where |chi_1 - 1| <= this")
    gammas: tuple[float, ...] = param(tuple(TABLE7["gamma"]), gt=0, doc="gammas of Prop. 4's bound")
    zeta_l0: float = param(
        1.0, gt=0, doc="M_l0 / N^2 of Prop. 4's layer l0 (the input layer: d / N, d its fan-in)"
    )


@dataclass(frozen=True)
class Analysis:
    eoc_tolerance: float = param(1e-3, ge=0, doc="|chi_1 - 1| <= this: EOC")
    fig1_sparsity: float = param(0.7, ge=0, lt=1, doc="the sparsity of Fig. 1's runs")


@dataclass(frozen=True)
class Claims:
    z_max: float = param(3.0, gt=0, doc="bounds hold when mean s_cr <= bound + z_max SE")
    example_kappa: float = param(0.2, gt=0, doc="kappa of the example after Thm. 1")
    example_kappa_tol: float = param(
        0.002, ge=0, doc="a setting is the example when |kappa - example_kappa| <= this"
    )
    example_tolerance: float = param(0.05, gt=0, doc="|mean s_cr - 0.22| <= this")
    table7_tolerance: float = param(0.05, gt=0, doc="|mean s_cr - Table 7 empirical| <= this")


SPEC = StudySpec(
    task="measure",
    source="003 Sec. 2.2, Fig. 1, Thm. 1; App. E, Prop. 4, Table 7",
    figures={
        "pruning_theory_fig1": Figure(
            "fig1_kept_per_neuron",
            (
                "Fraction of each neuron's incoming weights kept after SBP (SNIP) at 70% sparsity of a "
                "randomly initialized tanh FFNN (003 Fig. 1: depth 100, width 100); pixel (layer, neuron), "
                "first seed; left EOC init (chi = 1), right chaotic init. Black rows are fully pruned layers; "
                "the top row is the 10-unit output layer (blank beyond its 10 neurons)."
            ),
            claims=("fig1_*",),
        ),
        "pruning_theory_scr": Figure(
            "fig_scr",
            (
                "(a) Critical sparsity s_cr of SBP (SNIP) over chi = f'(1) (003 Thm. 1; ordered phase "
                "chi < 1, EOC chi = 1, chaotic chi > 1), mean ± SE over seeds (grey points: seeds), against "
                "Thm. 1's bound with ln (the theorem) and log10 (the 27% quoted after it); no bound on the "
                "EOC, bounds above 1 are vacuous and off scale. (b) s_cr of magnitude pruning with "
                "one layer's alpha = gamma (003 Prop. 4, Table 7) against Prop. 4's bound as printed "
                "(gamma Q_x), with sqrt(gamma), and Table 7's printed values."
            ),
            claims=("thm1_*", "prop4_*", "table7_*"),
        ),
    },
    measure=Measure,
    theory=Theory,
    analysis=Analysis,
    claims=Claims,
)
