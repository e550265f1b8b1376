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

from ...contract import Figure, StudySpec
from ...params import param

SOURCE = "000 §4.1-4.2, Eqs. 8, 10-13, Figs. 2-3"


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
