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

from ...contract import Claim, Figure, StudySpec
from ...params import param

SOURCE = "001 §5.1, Thms. 4-6, Figs. 4-5, Eq. 152"

# each claim once; {slots} are filled by claims.py with the row's statistics
_THM3 = "001 §5.1, Thm. 3, Eqs. 36, 38"
_PAIRED = "max |z| of the paired differences <= its 95 % bootstrap critical value"
_POINTS = (
    "{points} (depth, k, h) points, depths {depths}, {n_min}-{n_max} networks per depth "
    "({n_used} used per depth in the joint bootstrap)"
)
_SLOPE = (
    "log-log slope of Var/E^2 over {n_depths} depths (independent networks; SE from {n_boot} "
    "bootstrap resamples per depth): "
)
_DEPTHS = (
    "depths {depths}, {networks} networks each; Var/E^2 = {ratios}; bootstrap SE of the slope "
    "{slope_se:.3f}; slope of the predicted shape over the same depths {pslope:.3f}{eq187}"
)
_DECREASES = dict(
    expected="log-log slope < 0 by more than {k:g} SE",
    test=_SLOPE + "pass if slope < -{k:g} SE, fail if slope >= 0, else inconclusive; "
    "detectable: {k:g} SE (slope units)",
    detail=_DEPTHS + "; inconclusive when negative but within the SE band",
    source="001 §5.1, Thms. 5-6, Cors. 1-2, Fig. 5",
)
_KERNEL = Claim(
    statement="{a} changes its empirical NTK less than {b} during SGD (depth {L}, width {n})",
    expected="rel. change difference < 0 by more than {k:g} SE",
    test="difference of mean relative NTK change between two independent groups of trained "
    "networks ({a_n} and {b_n} seeds), SE = hypot of the SEs over seeds: pass if < -{k:g} SE, "
    "fail if >= 0, else inconclusive; detectable: {k:g} SE (relative change units)",
    detail="||Theta_T - Theta_0||_F / ||Theta_0||_F: {a} {a_rel:.4g} ± {a_se:.2g} ({a_n} nets, "
    "train MSE {a_l0:.3g} -> {a_l1:.3g}, {a_div} diverged); {b} {b_rel:.4g} ± {b_se:.2g} ({b_n} "
    "nets, MSE {b_l0:.3g} -> {b_l1:.3g}, {b_div} diverged)",
    kind="beyond",
    source="our test of 001's §6 remark that residual nets operate closer to the kernel regime "
    "(001 measures no training)",
)
CLAIMS = {
    "thm4_1_second_moment": Claim(
        statement="E||df/dW^(k,h)||^2 = E f_(k)^2 (reduced network) at every depth, branch k and "
        "matrix h",
        expected=_PAIRED,
        test="paired J2 - f2 per network; joint test over all (depth, k, h) points: T = max |z| <= "
        "the 95 % quantile of T bootstrapped over networks ({nb} resamples, recentred; the "
        "matrices of a depth share its networks, depths are independent); detectable: critical "
        "value x median paired SE / E f_(k)^2 (a common relative offset of E||J||^2 from "
        "E f_(k)^2)",
        detail=_POINTS + "; T = {T:.2f}, critical value {crit:.2f} (p = {pval:.3f}); E J2 / E f2 "
        "per point in [{lo:.3f}, {hi:.3f}], pooled {pooled:.3f}; points within {k:g} paired SE "
        "(uncorrected, not the verdict): {within:.2f}",
        source="001 §5.1, Thm. 4.1, Fig. 4(a)",
    ),
    "thm4_2_fourth_moment_bounds": Claim(
        statement="E f_(k)^4 / c4 <= E||df/dW^(k,h)||^4 <= E f_(k)^4 at every depth, branch k and "
        "matrix h",
        expected="largest one-sided z of a bound violation <= the joint critical value "
        "(c4 = {c4:g})",
        test="paired J4 - f4/c4 and J4 - f4 per network; one-sided z of the violation at each of "
        "the 2 x {P} bound points, its maximum against the bootstrap 95 % critical value of "
        "max |z| over all of them ({nb} resamples over networks; two-sided, so conservative); "
        "detectable: critical value x median SE / E f_(k)^4 (relative to the upper bound); its "
        "margin is the band between the bounds, 1 - 1/c4 = {band:.3f}: a design that cannot "
        "resolve a violation that large is inconclusive",
        detail=_POINTS + "; largest violation z {T:+.2f} (negative: every point inside), critical "
        "value {crit:.2f}; below f4/c4 by > {k:g} SE: {below}, above f4 by > {k:g} SE: {above}; "
        "E J4 / E f4 per point in [{lo:.3f}, {hi:.3f}], pooled {pooled:.3f} (bounds "
        "{inv_c4:.3f}, 1)",
        source="001 §5.1, Thm. 4.2, Fig. 4(b)",
    ),
    "eq152_reduced_output_mean": Claim(
        statement="E f_(k)^2 = alpha^m (1 + alpha^m)^(L-1) Sigma^0 for the reduced ResNet "
        "(Sigma^0 = x.x/d = 1)",
        expected="max |z| over (depth, k) <= its 95 % bootstrap critical value",
        test="f_(k)^2 per network against Eq. 152; joint test over all (depth, k) points: T = "
        "max |z| <= the 95 % quantile of T bootstrapped over networks ({nb} resamples); "
        "detectable: critical value x median relative SE (a common relative offset)",
        detail="{points} (depth, k) points, depths {depths}, {n_used} networks per depth; T = "
        "{T:.2f}, critical value {crit:.2f} (p = {pval:.3f}); mean / Eq. 152 in [{lo:.3f}, "
        "{hi:.3f}]; points within {k:g} SE (uncorrected, not the verdict): {within:.2f}",
        source="001 App. A.6, Eq. 152",
    ),
    "thm3_moments_equal": Claim(
        statement="E f_(k)^{m} = E (f^k)^{m}: the reduced network's output and the full output's "
        "paths through W^k have equal moments (Eq. 38)",
        expected=_PAIRED,
        test="paired f_(k)^{m} - (f^k)^{m} per network; joint max |z| over all (depth, k) points "
        "against its 95 % bootstrap critical value ({nb} resamples over networks); detectable: "
        "critical value x median paired SE / E f_(k)^{m} (a common relative offset)",
        detail="{points} (depth, k) points, depths {depths}, {networks} networks per depth; T = "
        "{T:.2f}, critical value {crit:.2f} (p = {pval:.3f}); pooled E f_(k)^{m} / E (f^k)^{m} = "
        "{pooled:.3f}",
        source=_THM3,
    ),
    "thm3_paths_through_both_branch_matrices": Claim(
        statement="Eq. 36's f^k is the same through W^{{k,1}} and W^{{k,2}} (every path of branch "
        "k crosses both)",
        expected="relative difference <= 1e-9",
        test="identity of the measurement (Euler sums over the two matrices of a branch)",
        detail="largest relative difference over {points} (depth, k) points and every network",
        kind="sanity",
        source=_THM3,
    ),
    "fig5_vanilla_flat": Claim(
        statement="The vanilla (ReLU, He init) network's Var(||J||^2)/E^2 stays constant with "
        "depth when n = 10 L (fixed L/n; Hanin & Nica)",
        expected="log-log slope 0",
        test=_SLOPE + "pass if |slope| <= {flat:g} and {k:g} SE <= {flat:g} (the design resolves "
        "the tolerance); fail if |slope| - {k:g} SE > {flat:g}; else inconclusive; detectable: "
        "{k:g} SE (slope units), the slope the design resolves",
        detail=_DEPTHS + "; {k:g} SE = {kse:.3f} against the tolerance {flat:g}",
        source=_DECREASES["source"],
    ),
    "fig5_resnet_decreases": Claim(
        statement="The ResNet's Var(||J||^2)/E^2 decreases with depth when n = 10 L (convergence "
        "to the NTK; Thm. 5, Cor. 1)",
        **_DECREASES,
    ),
    "fig5_densenet_decreases": Claim(
        statement="The DenseNet's Var(||J||^2)/E^2 decreases with depth when n = 10 L "
        "(convergence to the NTK; Thm. 6, Cor. 2)",
        **_DECREASES,
    ),
    "kernel_resnet_scaled_below_vanilla": _KERNEL,
    "kernel_densenet_below_vanilla": _KERNEL,
    "kernel_resnet_scaled_below_constant_alpha": _KERNEL,
}


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
