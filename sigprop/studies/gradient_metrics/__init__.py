"""Gradient metrics of deep dropout networks without gradient independence: Huang, Xu, Du,
Zeng, Zhao 2019, "Mean field theory for deep dropout networks: digging up gradient
backpropagation deeply", arXiv:1912.09132, Sec. 4.1-4.2, Eqs. 8, 10-13, Figs. 2-3.

A measurement at initialization, no training: every model is a random depth-L
dropout network (000 Eq. 1) fed a pair of inputs at its mean-field fixed point;
the per-layer metrics ``g_aa``, ``g_ab`` and ``g~_ab`` of 000 Eq. (8) are
computed exactly from autograd deltas with the same weights forward and backward
(:mod:`sigprop.measure.gradients`).  Theory: 000 Eq. (12) (linear nets) from
:mod:`sigprop.theory.gradients`, and the slopes ``chi_1`` (Eq. 10) and ``chi_2``
from :mod:`sigprop.theory.meanfield`, for the laws ``g^l ∝ chi^(L-l)``
(Eqs. 11 and 13) anchored at the measured last layer.

Claims: (1) Eq. (12) predicts the mean of ``g_aa`` in linear nets (one joint test over
the layers, which share the instantiations; a pass needs its detectable relative offset
<= ``claims.margin``, 10 %); (2) in linear nets with ρ < 1 the mean of
``g_ab`` decays per layer at ``chi_1``, not ``chi_2``, away from the output; (3) for ReLU,
tanh and hard tanh the per-layer decay rates of ``g_aa`` and ``g~_ab`` equal ``chi_1``
(000 Fig. 3, conjecture Eq. 13), inconclusive where 3 SE exceed the 2 % tolerance.  Where
ρ = 1 and c* = 1 the two inputs coincide and ``g~_ab = g_aa``: that row is a sanity row
(an identity), not evidence for ``g_ab ~ xi_1``.

Modules: ``measure`` (the metrics of a shard), ``theory`` (Eq. 12 and the slopes),
``analysis`` (per-layer profiles and decay rates), ``figures``, ``claims``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...contract import Claim, Figure, StudySpec
from ...params import param

SOURCE = "000 §4.1-4.2, Eqs. 8, 10-13, Figs. 2-3"

_RATE = dict(
    statement="{label}^l = {label}^{{l+1}} chi_1 for {activation} dropout networks",
    test="|rate - chi1| <= max({k:g} bootstrap SE, {rtol:g} chi1 = {floor:.4f}) (per-layer decay "
    "factor)",
    expected="chi1 = {chi1:.4f}",
    detail="fit of log mean over layers {first}-{last} (L = {depth}), {n} instantiations; "
    "bootstrap SE {boot_se:.4f}; tolerance max({k:g} SE, {rtol:g} chi1); chi2 = {chi2:.4f}; "
    "c* = {c_star:.4f}",
    source="000 §4.2, Eq. 13, Fig. 3",
)
# each claim once; {slots} are filled by claims.py with the row's statistics
CLAIMS = {
    "eq12_predicts_g_aa": Claim(
        "Eq. 12 predicts the mean g_aa^l of linear dropout networks at every layer",
        test="joint max |mean - Eq. 12| / SE over {layers} layers, bootstrap over {n} shared "
        "instantiations ({joint_boot} resamples), pass at T <= the {level:g} quantile; "
        "detectable in relative offset from Eq. 12",
        expected="max |z| <= {crit:.2f} (bootstrap {level:g} critical value)",
        detail="L = {depth}, {layers} layers sharing {n} instantiations; max |z| {T:.2f}, "
        "bootstrap p = {p:.2f}; max |log ratio| {max_log_ratio:.3f}; ratio at l = 1: "
        "{ratio_first:.3f}, at l = L: {ratio_last:.3f}; detectable: a common relative offset "
        "of {offset:.3f}",
        source="000 §4.1, Eqs. 8, 12, Fig. 2(a)",
    ),
    "g_ab_follows_chi1": Claim(
        "Away from the output the mean g_ab^l of linear dropout networks decays per layer at "
        "chi_1 = sigma_w^2/rho (Eq. 13), not at chi_2 = sigma_w^2",
        test="|rate - chi1| <= {k:g} bootstrap SE and closer to chi1 than to chi2 (per-layer "
        "decay factor); resolves chi1 from chi2 when {k:g} SE < |chi1 - chi2| / 2 = "
        "{half_gap:.4f}",
        expected="chi1 = {chi1:.4f} (chi2 = {chi2:.4f})",
        detail="fit of log mean g_ab over layers {first}-{last} (>= {gab_from} from the output "
        "L = {depth}), {n} instantiations; bootstrap SE {boot_se:.4f}; |r - chi1| = "
        "{off1:.4f}, |r - chi2| = {off2:.4f}",
        source="000 §4.1, Eq. 13, Fig. 2(b-d)",
    ),
    "g_aa_decays_at_chi1": Claim(**_RATE),
    "g_ab_abs_decays_at_chi1": Claim(**_RATE),
}
NOTES = {
    "g_ab test": "; here {k:g} SE = {k_se:.4f}: cannot resolve",
    "rate test": "; {k:g} SE > {rtol:g} chi1: the design cannot resolve the tolerance",
    "rate detail": "; {k:g} SE = {k_se:.4f} > {rtol:g} chi1 = {floor:.4f}: the {n} "
    "instantiations cannot resolve the tolerance (about {need} would)",
}
"""What a row's test or detail adds to the declared one where its design cannot resolve the
claim's tolerance."""
GAB_TOO_FEW = {
    "statement": "g_ab^l = g_ab^{{l+1}} chi_1, not chi_2",
    "expected": "chi1 = {chi1:.4f}",
    "detail": "fewer than 3 layers at least {gab_from} from the output",
}
"""The texts of a ``g_ab_follows_chi1`` row with fewer than 3 layers to fit."""
COPY = {
    "statement": _RATE["statement"] + " (rho = 1, c* = 1: equals the g_aa claim)",
    "expected": "the g_aa rate (g~_ab = g_aa when c* = 1)",
    "test": "identity: g~_ab = g_aa at every layer (relative {rtol_id:g})",
    "detail": _RATE["detail"] + "; max relative |g~_ab - g_aa| over nets and layers {dev:.1e}: "
    "the same measurement as g_aa_decays_at_chi1, not evidence for g_ab ~ xi1",
}
"""The texts of a ``g_ab_abs_decays_at_chi1`` row where c* = 1 without dropout (a sanity row:
g~_ab = g_aa)."""


@dataclass(frozen=True)
class Theory:
    layers_from_output: int = param(
        200, ge=0, doc="Eq. 12 tabulated for L - l = 0..this (serves every depth up to it)"
    )


@dataclass(frozen=True)
class Analysis:
    last_layers_window: int = param(15, ge=1, doc="Fig. 2(c) shows the layers l > L - this")


@dataclass(frozen=True)
class Claims:
    z_max: float = param(3.0, gt=0, doc="decay rates agree within z_max bootstrap SE")
    joint_level: float = param(
        0.95,
        gt=0,
        lt=1,
        doc="Eq. 12 agrees when the largest |z| over "
        "the layers is below this quantile of its "
        "bootstrap null",
    )
    joint_n_boot: int = param(
        2000, ge=100, doc="bootstrap resamples of the instantiations for the joint Eq. 12 test"
    )
    gab_fit_min_from_output: int = param(
        25, ge=0, doc="g_ab decay fitted on layers at least this far from the output"
    )
    fit_min_from_output: int = param(
        5, ge=0, doc="Fig. 3 decay rates fitted on layers at least this far from the output"
    )
    rate_rel_tolerance: float = param(
        0.02,
        gt=0,
        doc="Fig. 3: |rate - chi1| <= max(z_max SE, "
        "this fraction of chi1); a pass needs "
        "z_max SE <= this fraction of chi1",
    )
    n_boot: int = param(
        200, ge=2, doc="bootstrap resamples of the instantiations for the rates' SE"
    )
    margin: float = param(
        0.1,
        gt=0,
        doc="equivalence margin of the Eq. 12 claims: the largest "
        "common relative offset of mean g_aa^l from Eq. 12 they "
        "tolerate; a pass needs the joint test's detectable "
        "relative offset <= this (else inconclusive)",
    )


SPEC = StudySpec(
    task="measure",
    source=SOURCE,
    figures={
        "gradient_metrics_linear": Figure(
            "fig2",
            (
                "Gradient metrics of random linear dropout networks (000 Fig. 2, sigma_w^2 = 0.5, "
                "sigma_b^2 = 0.1), mean over instantiations (dashed, ±1 SE band) against theory (solid). "
                "(a) g_aa^l with 000 Eq. 12; (b) g_ab^l (absolute value per network, then mean) with Eq. 12; "
                "(c) g_ab^l in the last layers; (d) g_ab^l with the law chi_1^(L-l) anchored at the measured "
                "last layer (dotted: chi_2^(L-l))."
            ),
            claims=("eq12_predicts_g_aa*", "g_ab_follows_chi1*"),
        ),
        "gradient_metrics_activations": Figure(
            "fig3",
            (
                "g_aa^l (solid), g~_ab^l (dashed) and chi_1^(L-l) anchored at the measured last-layer g_aa "
                "(dotted) for ReLU (sigma_w^2 = 1.0), tanh and hard tanh (sigma_w^2 = 1.4), sigma_b^2 = 0.1, "
                "per keep rate rho (000 Fig. 3); mean over instantiations; chi_1 from 000 Eq. 10 at q*."
            ),
            claims=("g_aa_decays_at_chi1*", "g_ab_abs_decays_at_chi1*"),
        ),
    },
    theory=Theory,
    analysis=Analysis,
    claims=Claims,
)
