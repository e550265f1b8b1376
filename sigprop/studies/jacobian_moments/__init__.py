"""Moments of the Jacobian squared norm at initialization: Littwin & Wolf 2020, "Residual
Tangent Kernels", arXiv:2001.10460, Figs. 4-5, Thms. 4-6.

A measurement at initialization, no training (:mod:`sigprop.studies.jacobian_moments.jacobians`): for one
fixed input with ``x.x/d = 1`` per network, the scalar output ``f``, the per-matrix
``||J^k||^2 = ||df/dW^k||^2`` (NTK parameterization), ``||J||^2`` (their sum over the hidden
matrices, 001 Eq. 35) and, for the ResNet, the reduced-network outputs ``f_(k)`` (001 Def. 1,
Eq. 150).

001 Fig. 4 (ResNet, m = 2, alpha = 0.3, varying depth): Thm. 4.1 ``E||J^k||^2 = E f_(k)^2``
and Thm. 4.2 ``E f_(k)^4 / c_4 <= E||J^k||^4 <= E f_(k)^4`` at every (depth, matrix) point;
also the closed form of the reduced mean, Eq. 152: ``E f_(k)^2 = alpha^m (1+alpha^m)^(L-1)``.
The matrices of one depth share its networks, so each of these is ONE joint test over all
(depth, k, h) points (the largest |z| against its bootstrap critical value over networks,
:func:`sigprop.claims.max_abs_z_bootstrap`); Thm. 4.2 is inconclusive when the test cannot
resolve a violation as small as the band ``1 - 1/c4`` between its bounds (its margin); Thm. 4.1,
Eq. 152 and Thm. 3 pass only when the detectable common relative offset is within
``claims.margin``.

001 Fig. 5 (width n = 10 L; ResNet m = 2, alpha = 0.3/sqrt(L); DenseNet; vanilla ReLU):
the fluctuation of ``||J||^2 = G(x,x)`` against depth.  The figure's y axis is "variance";
its caption says the vanilla variance "remains constant due to the fixed ratio between
depth and width", which holds for the normalized ``Var/E^2`` (Hanin & Nica's
``E[K^2]/E[K]^2 ~ exp(5 beta)``, beta = L/n fixed), not for ``Var`` itself (the vanilla
mean grows like L, so ``Var`` grows like L^2).  The claims therefore use ``Var/E^2``; the
figure also shows ``Var``.  The vanilla "flat" claim passes only when 3 SE of the slope fit in its
tolerance (its margin; else inconclusive).  Scalings (``sigprop.theory.finite_width``; all "up to a constant"):
Eq. 40 (ResNet) and Eq. 42 (DenseNet) divided by the squared infinite-width means (Eq. 25;
Thm. 2's recursion H_L), and ``exp(5 beta)`` (vanilla).  The overlay draws each shape with its
constant fitted at ONE depth (the largest measured), so only the shape is compared.

Beyond 001 (runs with ``steps > 1``, blocks labelled ``Kernel ...``): the relative change of the
empirical NTK during a short SGD run.  Runs are split into the panels by their block label
(``runs.block``: ``Fig. 5 ...``, ``Kernel ...``, the rest Fig. 4).

Modules: ``measure`` (the Jacobian moments, or the kernel change, of a shard), ``theory``
(Eq. 152, the Fig. 5 means and scaling shapes), ``analysis`` (panels, moments, bootstrap
statistics), ``figures``, ``claims``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ...contract import Figure, StudySpec
from ...params import param

SOURCE = "001 §5.1, Thms. 4-6, Figs. 4-5, Eq. 152"


@dataclass(frozen=True)
class Measure:
    chunk: int = param(
        32, ge=1, execution=True, doc="networks per batched Jacobian computation (Figs. 4-5)"
    )
    chunk_mb: int = param(
        2000,
        ge=1,
        execution=True,
        doc="fewer networks per batch where their float64 weights and "
        "gradients would exceed this many MB",
    )
    kernel_probes: int = param(
        8, ge=1, doc="kernel regime: the NTK on the first this many test inputs of the data set"
    )


@dataclass(frozen=True)
class Fig4Theory:
    alpha: tuple[float, ...] = param((0.3,), gt=0, doc="alphas of Eq. 152's curves")
    branch_depth: int = param(2, ge=1, doc="m of Eq. 152's curves")


@dataclass(frozen=True)
class Fig5Theory:
    width_per_depth: int = param(10, ge=1, doc="Fig. 5's width n = width_per_depth * L")
    resnet_a: float = param(0.3, gt=0, doc="Fig. 5's ResNet alpha = resnet_a L^(-1/m)")
    branch_depth: int = param(2, ge=1, doc="m of Fig. 5's ResNet")


@dataclass(frozen=True)
class Theory:
    depth_max: int = param(64, ge=1, doc="theory curves tabulated for L = 1..depth_max")
    c4: float = param(3.0, gt=0, doc="fourth moment of the weights (001 Thm. 4.2)")
    fig4: Fig4Theory = param(Fig4Theory, doc="Eq. 152: E f_(k)^2 = alpha^m (1 + alpha^m)^(L-1)")
    fig5: Fig5Theory = param(Fig5Theory, doc="Fig. 5: n = c L, alpha = a / L^(1/m)")


@dataclass(frozen=True)
class Kernel:
    resnet_a: float = param(
        0.3,
        gt=0,
        doc="the depth-scaled ResNet has alpha = resnet_a "
        "L^(-1/m), the constant one alpha = resnet_a",
    )
    branch_depth: int = param(2, ge=1, doc="m of the kernel-regime ResNets")


@dataclass(frozen=True)
class Analysis:
    z_max: float = param(
        3.0,
        gt=0,
        doc="a point agrees when |difference| <= z_max SE (paired over runs); also Fig. 4's titles",
    )
    n_boot: int = param(400, ge=2, doc="bootstrap resamples of the runs (per depth) for slope SEs")
    overlay_anchor: Literal["largest", "smallest"] = param(
        "largest", doc="Fig. 5 scaling shapes: constant fitted at this depth only"
    )
    kernel: Kernel = param(Kernel, doc="kernel regime in training (beyond 001)")


@dataclass(frozen=True)
class Claims:
    within_fraction: float = param(
        0.95, gt=0, le=1, doc="... for at least this fraction of the points"
    )
    fraction_tolerance: float = param(
        0.05, ge=0, lt=1, doc="pass when the fraction >= within_fraction - this"
    )
    flat_slope_tolerance: float = param(
        0.25, gt=0, doc="vanilla: |log-log slope of Var/E^2 vs L| <= this is 'flat'"
    )
    n_boot_joint: int = param(
        2000,
        ge=100,
        doc="bootstrap resamples (over networks) of the joint max |z| tests over Fig. 4's points",
    )
    margin: float = param(
        0.1,
        gt=0,
        doc="equivalence margin of the joint 'two moments are "
        "equal' / 'theory equals measurement' tests (Thm. 4.1, "
        "Eq. 152, Thm. 3): the largest common relative offset "
        "they tolerate; a pass needs the detectable offset <= "
        "this",
    )


SPEC = StudySpec(
    task="measure",
    source=SOURCE,
    figures={
        "jacobian_moments_fig4": Figure(
            "fig4",
            (
                "Per-matrix Jacobian norm against the reduced network (001 Fig. 4): ResNet, m = 2, "
                "alpha = 0.3, one input per network. (a) E||J^k||^2 for every branch matrix W^{k,h} "
                "(circles h = 1, triangles h = 2, all k of a depth spread around it) and E f_(k)^2 "
                "(squares), with 001 Eq. 152 alpha^m (1+alpha^m)^(L-1) (line); (b) the same for "
                "E||J^k||^4, E f_(k)^4 and E f_(k)^4 / c_4; (c) E||J^k||^2 / E f_(k)^2 per point, "
                "±3 paired SE (Thm. 4.1: 1); (d) E||J^k||^4 / E f_(k)^4 with the Thm. 4.2 bounds "
                "1/c_4 and 1 (dashed)."
            ),
            claims=("thm4_*", "eq152_*", "thm3_*"),
        ),
        "jacobian_moments_fig5": Figure(
            "fig5",
            (
                "Fluctuation of the Jacobian squared norm ||J||^2 = G(x,x) against depth L at width "
                "n = 10 L (001 Fig. 5): ResNet (m = 2, alpha = 0.3/sqrt(L)), DenseNet, vanilla ReLU net "
                "(He init). (a) Var/E^2 with bootstrap SE and the predicted scalings (dashed: ResNet "
                "Eq. 40 / Eq. 25^2, DenseNet Eq. 42 / H_L^2, vanilla exp(5 L/n) of Hanin & Nica), each "
                "known only up to a constant, fitted at the largest depth; dotted: DenseNet with Eq. 187's "
                "(sum_k 1/k)^2 = H_L^2 in place of its limit log(L)^2; (b) Var itself with Eqs. "
                "40, 42 and E^2 exp(5 beta) likewise; (c) E||J||^2 with the infinite-width values "
                "(Eq. 25, Thm. 2's recursion H_L, 2L for the vanilla net)."
            ),
            claims=("fig5_*",),
        ),
        "jacobian_moments_kernel": Figure(
            "fig_kernel",
            (
                "Beyond 001: relative change of the empirical NTK (over the hidden weights, summed over "
                "the 10 logits, on 8 test inputs) after a short minibatch SGD run on digits (MSE to one-hot "
                "targets, hidden weights trained, step lr = eta / mean diagonal of the initial per-logit "
                "NTK), for ResNets with alpha = a/sqrt(L) (001 Cor. 1 / Fig. 5 scaling) and constant alpha "
                "= a, a DenseNet and a vanilla ReLU net of equal width and depth. (a) relative change, "
                "mean ± SE over networks; (b) training MSE before and after."
            ),
            claims=("kernel_*",),
        ),
    },
    measure=Measure,
    theory=Theory,
    analysis=Analysis,
    claims=Claims,
)
