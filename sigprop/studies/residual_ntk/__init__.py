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
diagonals), ``analysis`` (panels, sample means and spreads), ``figures``, ``claims``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...contract import Figure, StudySpec
from ...params import param

SOURCE = "001 §4.3, Thms. 1-2, Fig. 2, Eqs. 25, 29"


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
