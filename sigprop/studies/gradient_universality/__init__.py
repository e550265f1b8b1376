"""The variance-mean law of the gradient metrics of dropout networks: Huang, Xu, Du, Zeng, Zhao
2019, "Mean field theory for deep dropout networks: digging up gradient backpropagation
deeply", arXiv:1912.09132, Sec. 4.2 "Emergence of Universality", Figs. 4-5.

A measurement at initialization, no training, identical to the study ``gradient_metrics``
(both use :func:`sigprop.measure.gradients.metric_rows`): random depth-L dropout networks
(000 Eq. 1) fed a pair of inputs at their mean-field fixed point, per-layer metrics
``g_aa``, ``g_ab`` and ``g~_ab`` of 000 Eq. (8) with the same weights and masks forward and
backward.

Analysis: for each group of networks (Fig. 4: activation x keep rate at one width;
Fig. 5: tanh, ρ = 0.9, per width) and metric, the mean ``m^l`` and variance
``V^l`` over the instantiations at every layer ``l``; the paper conjectures
``V ∝ m^2`` ("the universal power coefficient between the variance and mean is
2", 000 §4.2).  The claim per group is the power ``p`` of a least-squares line of
``log V^l`` on ``log m^l`` over the layers, with a bootstrap SE over the
instantiations.  ``p = 2`` over the layers means the relative fluctuation
``sqrt(V)/m`` is the same at every layer; where it grows with the distance from the
output the fitted power moves away from 2 (below 2 when ``m`` shrinks away from the
output, ``chi_1 < 1``; above 2 when it grows, ``chi_1 > 1``), and the claim fails.
A group passes when ``|p - 2| <= max(3 SE, 0.1)`` and ``3 SE <= 0.1`` (a larger SE cannot
resolve the power: inconclusive; 0.1 is the claim's equivalence margin), fails when
``|p - 2| > max(3 SE, 0.1)``.  Since ``p - 2`` is the slope of ``log(V/m^2)`` on ``log m``,
every row also reports the decades of ``m`` its layers span and the decades by which ``V/m^2``
drifts across them: ``|p - 2| ~ |drift| / span``, so the same drift moves the power less in a
group whose mean spans many decades (linear, ReLU) than in one that spans few (tanh, hard
tanh), and the span grows with the depth.  One measurement,
one counted row: at ρ = 1 with c* = 1 the two inputs coincide and g_ab = g~_ab = g_aa, and
the Fig. 5 group at the Fig. 4 width is the Fig. 4 tanh group, so those copies are sanity
rows (the identity checked on the data).  Per figure, a summary row (all its claim rows
together) and, per metric, the power of one line through the points of all groups together
(the collapse the figures show, dominated by the groups whose mean spans the most decades):
summaries, never counted.

Modules: ``measure``, ``theory`` (the conjectured power, fixed points and slopes),
``analysis`` (groups, variance-mean fits), ``figures``, ``claims``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...contract import Claim, Figure, StudySpec
from ...params import param

SOURCE = "000 §4.2, Figs. 4-5"
SOURCE_FIG4 = "000 §4.2, Fig. 4"
SOURCE_FIG5 = "000 §4.2, Fig. 5"

_GROUP = (
    "Var over instantiations of {label}^l ∝ (mean {label}^l)^2 across layers, {activation} "
    "(sigma_w^2 = {sigma_w2:g}), rho = {keep_rate:g}, N = {width}"
)
_TEST = (
    "|p - 2| <= max({k:g} bootstrap SE, {floor:g}) for the power p of a least-squares fit of log V "
    "on log m over {n_layers} layers (SE: bootstrap over {n_inst} instantiations); a pass needs "
    "{k:g} SE <= {floor:g}, else inconclusive; detectable in units of the power; p - 2 is the "
    "slope of log(V/m^2) on log m, so a drift of V/m^2 by D decades across layers over which m "
    "spans S decades shows as |p - 2| ~ D / S (exactly so where log m is linear in the layer): "
    "here m spans {span_decades:.2f} decades {where} {drift_decades:+.2f} decades across their "
    "layers (least-squares line of log10(V/m^2) on the layer, farthest minus nearest to the "
    "output), D / S = {ratio:.3f}; the test flags a drift only above {tol:.3g} x "
    "{span_decades:.2f} = {flag:.2f} decades"
)
_FIT = dict(
    statement=_GROUP,
    test=_TEST.replace("{where}", "over the fitted layers and V/m^2 drifts"),
    expected="p = {want:g}",
    detail=(
        "{n_layers} layers (L = {depth}), {n_inst} instantiations; bootstrap SE {boot_se:.3f}; "
        "fit V = {a:.3g} m^{p:.3f}; m spans {span_decades:.2f} ± {span_se:.2f} decades over the "
        "fitted layers; V/m^2 drifts {drift_decades:+.2f} ± {drift_se:.2f} decades across them "
        "(|drift| / span = {ratio:.3f}, |p - 2| = {off:.3f}); V/m^2 at l = 1: "
        "{rel_var_first:.3g}, at l = L: {rel_var_last:.3g}"
    ),
)
_POOLED = dict(
    test=_TEST.replace("{where}", "over all groups' points and the groups' V/m^2 drift a median of")
    + " (pooled fit)",
    expected="p = {want:g}",
    detail=(
        "one fit over {n_layers} points of {n_groups} groups (>= {n_inst} instantiations each); "
        "bootstrap SE {boot_se:.3f}; fit V = {a:.3g} m^{p:.3f}; m spans {span_decades:.1f} "
        "decades over all points; the groups' V/m^2 drift a median {drift_decades:+.2f} ± "
        "{drift_se:.2f} decades (the pooled fit is dominated by the groups whose m spans the "
        "most decades); a summary of the groups' points, which the group rows test"
    ),
    kind="summary",
)
_ALL = dict(
    test="conjunction of the figure's claim rows",
    expected="1 (every group consistent with p = 2)",
    detail="{n_pass} of {n} groups pass, {n_fail} fail, {n_unsure} inconclusive (each "
    "measurement once){listed}",
    kind="summary",
)
# each claim once; {slots} are filled by claims.py with the row's statistics
CLAIMS = {
    "power2": Claim(**_FIT, source=SOURCE_FIG4),
    "power2_width": Claim(**_FIT, source=SOURCE_FIG5),
    "power2_all_activations": Claim(
        "V ∝ m^2 for g_aa, g_ab, g~_ab regardless of activation and keep rate",
        **_ALL,
        source=SOURCE_FIG4,
    ),
    "power2_all_widths": Claim(
        "V ∝ m^2 for g_aa, g_ab, g~_ab regardless of the width N (tanh, rho = 0.9)",
        **_ALL,
        source=SOURCE_FIG5,
    ),
    "power2_pooled_activations": Claim(
        "All groups' points (V^l, m^l) of {label} collapse on V ∝ m^2, all activations and "
        "keep rates",
        **_POOLED,
        source=SOURCE_FIG4,
    ),
    "power2_pooled_widths": Claim(
        "All groups' points (V^l, m^l) of {label} collapse on V ∝ m^2, all widths (tanh, "
        "rho = 0.9)",
        **_POOLED,
        source=SOURCE_FIG5,
    ),
}
FIT_NOTES = {
    "fail": "; V/m^2 is not constant over the layers (it {trend} with the distance from the "
    "output), so V is not ∝ m^2 within the group",
    "unresolved": "; {k:g} SE = {k_se:.3f} > {floor:g}: the SE over {n_inst} instantiations "
    "cannot resolve the power (about {need} would)",
    "no fit": "; no fit or no SE",
}
"""What a group row's detail adds to the declared one when the group fails or is inconclusive."""
COPY = {
    "statement": _GROUP + " (a copy of {orig})",
    "expected": "the power of {orig}",
    "test": "identity: same measurement as {orig}",
    "detail": "{why}; max relative difference of the per-net values {dev:.1e}; counted once, as "
    "{orig} (verdict there: {there})",
}
"""The texts of a group row whose measurement repeats another row's (a sanity row)."""


@dataclass(frozen=True)
class Theory:
    power: float = param(2.0, gt=0, doc="the conjectured power p of V ∝ m^p (000 §4.2: 2)")


@dataclass(frozen=True)
class Fig5Setting:
    """The runs of 000 Fig. 5 (one group per width): a setting field left null selects any
    value."""

    activation: str | None = param("tanh", doc="activation of the Fig. 5 runs")
    sigma_w2: float | None = param(1.4, gt=0, doc="sigma_w^2 of the Fig. 5 runs")
    sigma_b2: float | None = param(None, ge=0, doc="sigma_b^2 of the Fig. 5 runs (null: any)")
    keep_rate: float | None = param(0.9, gt=0, le=1, doc="keep rate of the Fig. 5 runs")


@dataclass(frozen=True)
class Analysis:
    widths: Fig5Setting = param(Fig5Setting, doc="the Fig. 5 setting, drawn at every width")


@dataclass(frozen=True)
class Claims:
    z_max: float = param(3.0, gt=0, doc="tolerance = max(z_max * bootstrap SE, abs_tolerance)")
    abs_tolerance: float = param(
        0.1,
        gt=0,
        doc="smallest tolerance on the power; a pass needs z_max * SE <= this (else inconclusive)",
    )
    min_layers: int = param(
        3, ge=2, doc="a fit needs at least this many layers with m > 0 and V > 0"
    )
    n_boot: int = param(200, ge=2, doc="bootstrap resamples of the instantiations for the SE of p")


SPEC = StudySpec(
    task="measure",
    source=SOURCE,
    figures={
        "gradient_universality_activations": Figure(
            "fig4",
            (
                "Variance V^l over network instantiations against the mean m^l of the gradient metrics, one "
                "point per layer l, for linear (sigma_w^2 = 0.5), ReLU (1.0), tanh and hard tanh (1.4) dropout "
                "networks, sigma_b^2 = 0.1 (000 Fig. 4): (a) g_aa, (b) g_ab (absolute value per network), "
                "(c) g~_ab. Colour: keep rate rho; marker: activation; black line: the conjectured law "
                "V ∝ m^2 (through the median of V/m^2). Legend: the power p of a least-squares fit of "
                "log V on log m per group."
            ),
            claims=("power2[[]*", "power2_all_activations", "power2_pooled_activations*"),
        ),
        "gradient_universality_widths": Figure(
            "fig5",
            (
                "As the activations figure for tanh dropout networks with sigma_w^2 = 1.4, sigma_b^2 = 0.1, "
                "rho = 0.9 and different widths N (000 Fig. 5; colour: width). Black line: V ∝ m^2; "
                "legend: fitted powers."
            ),
            claims=("power2_width*", "power2_all_widths", "power2_pooled_widths*"),
        ),
    },
    theory=Theory,
    analysis=Analysis,
    claims=Claims,
)
