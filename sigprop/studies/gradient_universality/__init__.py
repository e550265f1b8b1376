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

from ...contract import Figure, StudySpec
from ...params import param

SOURCE = "000 §4.2, Figs. 4-5"


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
