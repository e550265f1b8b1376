"""The sampled NTK of random ResNets and DenseNets against Littwin & Wolf 2020, "Residual
Tangent Kernels", arXiv:2001.10460, Thms. 1-2 (Fig. 2, Eqs. 25, 29).

A measurement at initialization: for every model (families ``resnet_fc`` = 001 Eq. 8 and
``densenet_fc`` = Eq. 19 with ``sigma_w2 = 2``, i.e. ``q = sqrt(2) phi(y)``), the empirical
NTK ``G(x, x') = <df(x)/dW, df(x')/dW>`` over the hidden weights (Eq. 1; ``W^s, W^f`` fixed, §4.3)
by NTK-vector products (:mod:`sigprop.studies.residual_ntk.ntk`):

* metric ``ntk``, ``probe = j``: ``G(x, x'_j)`` for Fig. 2's ``x = [1, 0]``,
  ``x'_j = [cos t_j, sin t_j]``, ``t_j = linspace(0, pi, n_angles)``, with Eq. (11)
  ``Sigma^0 = x.x'/d`` at ``d = measure.fig2_input_dim`` (2, as the paper's inputs);
* metric ``ntk_diag``: ``G(x, x)`` at ``Sigma^0(x, x) = 1``, the normalization of Eqs. (25), (29).

Theory (:mod:`sigprop.theory.kernels`): Thm. 1 ``resnet_ntk`` (Eq. 63 summed form,
``sigma_recursion='eq15'`` as the architecture implies), Thm. 2 ``densenet_ntk``, the ResNet
diagonal Eq. (25) ``resnet_ntk_diagonal`` and the DenseNet diagonal in two forms: the printed
Eq. (29) ``sum_{l=1}^L 1/(l+1)`` and the value of Eqs. (26)-(27) themselves, ``H_L = sum 1/l``
(``densenet_ntk_diagonal(form=...)``; the kernels module docstring, note 5, derives why).

Claims: (1) per Fig. 2 panel (arch x width) the sample mean over inits matches Thm. 1 / 2 at the
angles: one joint test per panel (the angles share the panel's initializations), the largest
|z| over the angles against its bootstrap critical value over initializations
(:func:`sigprop.claims.max_abs_z_bootstrap`, ``claims.n_boot_joint``); (2) per architecture the
spread (SD over inits, averaged over angles) scales as ``n^(-1/2)`` (the ``O(1/n)`` variance of
001 Thms. 5-6 at leading order; Fig. 2's caption: wider nets vary less): the exponent
``beta = -ln(SD ratio) / ln(n_wide / n_narrow)`` equals 1/2 within ``max(z_max SE,
exponent_tolerance)``; (3) the diagonal mean against depth matches Eq. (25) per (m, alpha);
(4) it matches the printed Eq. (29); (5) it matches ``H_L`` ((3)-(5): at least
``within_fraction - fraction_tolerance`` of the depths within ``z_max`` SE; the depths are
independent nets).  Every row is a ``claim`` with its test and detectable effect
(:mod:`sigprop.claims`); the equivalence claims pass only when their detectable effect is within
their margin (``claims.margin``, a relative offset, for (1) and (3)-(5);
``claims.exponent_tolerance``, in exponent units, for (2)).
Runs whose block label (``runs.block``) starts with ``Fig. 2`` make the angle panels,
``diagonal`` the depth sweeps.

Modules: ``measure`` (the sampled kernels of a shard), ``theory`` (Thms. 1-2 and the
diagonals), ``analysis`` (panels, sample means and spreads), ``figures``, ``claims`` (the
statistics of the claims declared in ``CLAIMS``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...contract import Claim, Figure, StudySpec
from ...params import param

SOURCE = "001 §4.3, Thms. 1-2, Fig. 2, Eqs. 25, 29"

# each claim once; {slots} are filled by claims.py with the row's statistics
_DIAGONAL = dict(
    expected=">= {floor:g} of the {depths} depths with |mean - theory| <= {k:g} SE",
    test="fraction of the {depths} depths (independent nets, {n_min}-{n_max} inits each) with "
    "|mean - theory| <= {k:g} SE must be >= {floor:g} (here: {need} of {depths}); detectable: the "
    "common relative offset from theory that puts more than {spare} depth(s) beyond {k:g} SE",
    detail="{cells}; {n_min}-{n_max} inits per depth",
)
CLAIMS = {
    "fig2_mean_matches_theory": Claim(
        statement="The mean sampled G(x, x'(theta)) of the {label} (L = {depth}, width {width}) "
        "equals the {thm} kernel at all {angles} angles",
        test="joint test over the {angles} angles that share {n_inits} initializations: T = max "
        "|mean - theory| / SE <= the 95 % quantile of T bootstrapped over initializations "
        "({n_boot} resamples, recentred at the sample means); detectable: critical value x "
        "median relative SE (a common relative offset)",
        expected="max_theta |mean - theory| / SE <= its 95 % bootstrap critical value",
        detail="{n_inits} inits shared by the {angles} angles; T = max |z| = {T:.2f} at theta = "
        "{theta:.3f}, critical value {crit:.2f} (p = {p:.3f}); mean z {mean_z:+.2f}; mean / "
        "theory in [{lo:.3f}, {hi:.3f}]; max |mean - theory| / K(x, x) {max_rel_dev:.4f}; mean "
        "offset over angles / K(x, x) {mean_offset:+.4f} ± {mean_offset_se:.4f} (z {off_z:+.2f}, "
        "not the verdict); angles within {k:g} SE (uncorrected, not the verdict): {within:.2f}",
        source="001 §4.3, Thms. 1-2 (Eqs. 23, 26), Fig. 2",
    ),
    "fig2_spread_scales_as_inv_sqrt_width": Claim(
        statement="The SD over initializations of G from the {family} scales as n^(-1/2) "
        "(variance O(1/n)): the exponent fitted between n = {nn} and n = {nw} is 1/2",
        test="beta = -ln(SD ratio wide/narrow) / ln({nw}/{nn}); SE by the delta method from the "
        "bootstrap SE of the ratio ({n_boot} resamples of the initializations of each width; the "
        "two widths are independent nets): beta - 0.5 {rule}; detectable in exponent units",
        expected="exponent beta = 0.5",
        detail="SD over inits averaged over angles: {sd_narrow:.4g} (n = {nn}, {inits_n} inits), "
        "{sd_wide:.4g} (n = {nw}, {inits_w} inits); ratio {ratio:.4f} ± {ratio_se:.4f} (bootstrap "
        "SE; sqrt({nn}/{nw}) = {sqrt_width_ratio:.4f}); beta = {beta:.4f} ± {beta_se:.4f}, "
        "(beta - 1/2) / SE = {beta_z:+.2f}",
        source="001 Fig. 2 caption; Thms. 5-6 (Eqs. 40, 42)",
    ),
    "eq25_resnet_diagonal": Claim(
        statement="The mean diagonal G(x, x) of the {label} against depth equals Eq. 25, "
        "m L alpha^m (1+alpha^m)^(L-1)",
        source="001 Thm. 1, Eq. 25 (proof Eqs. 64-67)",
        **_DIAGONAL,
    ),
    "eq29_densenet_diagonal_printed": Claim(
        statement="The mean diagonal G(x, x) of the DenseNet against depth equals the printed "
        "Eq. 29, sum_{{l=1}}^L 1/(l+1)",
        source="001 Thm. 2, Eq. 29 (proof Eqs. 85-93)",
        **_DIAGONAL,
    ),
    "densenet_diagonal_harmonic": Claim(
        statement="The mean diagonal G(x, x) of the DenseNet against depth equals H_L = "
        "sum_{{l=1}}^L 1/l, the value of Eqs. 26-27 (m^{{L+1,L}} = 1, Eq. 81)",
        source="001 Thm. 2, Eqs. 26-27, 81 (sigprop.theory.kernels note 5)",
        **_DIAGONAL,
    ),
}
EQ29_CONTRADICTED = (
    "the measurement contradicts the printed Eq. 29 and agrees with H_L = sum 1/l (Eqs. 26-27 "
    "themselves): measured/Eq. 29 = {ratios} vs H_L/Eq. 29 = {hl_ratios}; " + _DIAGONAL["detail"]
)
"""The detail of ``eq29_densenet_diagonal_printed`` when it fails and H_L holds."""


@dataclass(frozen=True)
class Measure:
    n_angles: int = param(20, ge=2, doc="Fig. 2's angles: theta = linspace(0, pi, n_angles)")
    fig2_input_dim: float = param(
        2.0, gt=0, doc="d of Eq. 11 for the Fig. 2 inputs: Sigma^0(x, x') = x.x'/d"
    )


@dataclass(frozen=True)
class ResNetSetting:
    branch_depth: int = param(2, ge=1, doc="m, the branch depth")
    alpha: float = param(0.3, gt=0, doc="the branch scale alpha")


@dataclass(frozen=True)
class Theory:
    max_depth: int = param(64, ge=1, doc="theory tabulated for L = 1..max_depth")
    resnet: tuple[ResNetSetting, ...] = param((), doc="(m, alpha) of every ResNet run")


@dataclass(frozen=True)
class Analysis:
    faint_samples: int = param(
        5, ge=0, doc="individual inits (the first seeds) drawn faintly per Fig. 2 panel"
    )


@dataclass(frozen=True)
class Claims:
    z_max: float = param(
        3.0, gt=0, doc="theory agrees at a point when |mean - theory| <= z_max SE of the mean"
    )
    within_fraction: float = param(
        0.95,
        gt=0,
        le=1,
        doc="... for at least this fraction of the depths (less fraction_tolerance)",
    )
    fraction_tolerance: float = param(
        0.05, ge=0, lt=1, doc="pass when the fraction >= within_fraction - this"
    )
    n_boot: int = param(
        500, ge=0, doc="bootstrap resamples (over inits) for the SE of the SD ratio"
    )
    n_boot_joint: int = param(
        2000,
        ge=100,
        doc="bootstrap resamples (over inits) of the joint "
        "max |z| test over a Fig. 2 panel's angles",
    )
    margin: float = param(
        0.1,
        gt=0,
        doc="equivalence margin of the 'theory equals measurement' "
        "claims (Fig. 2 means, diagonals): the largest common "
        "relative offset from theory they tolerate; a pass needs "
        "the detectable offset <= this",
    )
    exponent_tolerance: float = param(
        0.1,
        gt=0,
        doc="the spread's exponent equals 1/2 when "
        "|beta - 1/2| <= max(z_max SE, this); also "
        "its equivalence margin (exponent units)",
    )


SPEC = StudySpec(
    task="measure",
    source=SOURCE,
    figures={
        "residual_ntk_angles": Figure(
            "angles_figure",
            (
                "Sampled NTK G(x, x') over the hidden weights of random ReLU ResNets (001 Eq. 8, m = 2) "
                "and DenseNets (Eq. 19) against the angle theta of x' = [cos theta, sin theta], x = [1, 0] "
                "(Sigma^0 = x.x'/2, Eq. 11 with d = 2), at two widths (001 Fig. 2; red: narrow, green: "
                "wide). Thin faint lines: individual initializations; coloured line and band: mean ± 1 SE "
                "over initializations; black: Thm. 1 / Thm. 2."
            ),
            claims=("fig2_*",),
        ),
        "residual_ntk_diagonal": Figure(
            "diagonal_figure",
            (
                "Diagonal G(x, x) (Sigma^0(x, x) = 1) against depth L, mean ± 1 SE over initializations "
                "(markers). (a) ResNets per (m, alpha) with 001 Eq. 25, m L alpha^m (1 + alpha^m)^(L-1) "
                "(lines). (b) DenseNets with the printed Eq. 29, sum_l 1/(l+1) (dashed), and the value of "
                "Eqs. 26-27, H_L = sum_l 1/l (solid)."
            ),
            claims=("eq25_*", "eq29_*", "densenet_diagonal_*"),
        ),
    },
    measure=Measure,
    theory=Theory,
    analysis=Analysis,
    claims=Claims,
)
