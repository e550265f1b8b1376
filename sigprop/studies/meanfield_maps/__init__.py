"""The iterated length and correlation maps with dropout: Huang, Xu, Du, Zeng, Zhao 2019, "Mean
field theory for deep dropout networks: digging up gradient backpropagation deeply",
arXiv:1912.09132, Sec. 3.1, Eqs. 2-4, Fig. 1.

A measurement at initialization, no training: for each panel of the caption (linear and tanh
length maps, ReLU and erf correlation maps) and keep rates rho in {1, 0.7, 0.4}, one random
dropout layer of many instantiations maps probe inputs of known (q, c) to outputs; the theory
curves are Eqs. 2-4 from :mod:`sigprop.theory.meanfield`.  Note the caption's sigma_w, sigma_b
are standard deviations (sigma_w = 0.5 gives sigma_w^2 = 0.25; a linear map with
sigma_w^2 = 0.5 and rho = 0.4 would have no fixed point).

Claims (:mod:`.claims`): each map matches simulation (one joint test over the panel's
(rho, probe) points, which share the instantiations; a pass needs the detectable relative
offset <= ``claims.margin``, 10 %); with dropout (rho < 1) c = 1 is not a
fixed point (1 - c_out(1) > 3 SE); at rho = 1, c_out(1) = 1 exactly (a sanity row).

Modules: ``measure`` (the layer maps of a shard), ``theory`` (Eqs. 2-4 and the fixed points),
``analysis`` (simulation against theory per probe), ``figures``, ``claims``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ...contract import Claim, Figure, StudySpec
from ...params import param

SOURCE = "000 §3.1, Eqs. 2-4, Fig. 1"

# each claim once; {slots} are filled by claims.py with the row's statistics
_MAP = dict(
    expected="max |z| <= {crit:.2f} (bootstrap {level:g} critical value)",
    detail="{points} (rho, probe) points sharing {n} instantiations (seeds); max |z| {T:.2f}, "
    "bootstrap p = {p:.2f}; max relative error {rel:.2e}; detectable: a common relative offset "
    "of {det:.3f}",
)


def _matches(m: str, eq: str) -> Claim:
    """The claim that the ``m``-map of Eq. ``eq`` matches simulation (one per panel)."""
    return Claim(
        statement=f"The {m}-map of Eq. {eq} matches simulated {{act}} dropout networks within "
        "the standard error at every (rho, probe) point",
        test=f"joint max |mean - Eq. {eq}| / SE over {{points}} (rho, probe) points, bootstrap "
        "over {n} shared instantiations ({n_boot} resamples), pass at T <= the {level:g} "
        "quantile; detectable in relative offset from theory",
        **_MAP,
    )


_GAP = "1 - c_out at c_in = 1, mean over {n} instantiations (SE {gap_se:.2e}); theory {theory:.4f}"
CLAIMS = {
    "q_map_matches_simulation": _matches("q", "2"),
    "c_map_matches_simulation": _matches("c", "3-4"),
    "c_star_below_one_iff_dropout": Claim(
        statement="c* = 1 only at rho = 1; with dropout c* < 1",
        expected="1 - c_out(1) > {k:g} SE (c = 1 is not a fixed point: c* below 1 with dropout)",
        test="{rule}, SE over instantiations",
        detail=_GAP + "; holds by construction: two identical inputs under independent dropout "
        "masks differ whenever rho < 1, so c = 1 cannot be a fixed point (a check of the "
        "apparatus, not counted)",
        kind="sanity",
    ),
}
C_STAR_WITHOUT_DROPOUT = dict(
    expected="0 (c* = 1 without dropout)",
    test="identity: 1 - c_out = 0 at rho = 1 (no mask, identical probes)",
    detail=_GAP + "; rho = 1: the two probes are one input with one mask, so c_out = 1 "
    "identically (an identity of the apparatus, not evidence)",
)
"""The texts of the ``c_star_below_one_iff_dropout`` row at rho = 1: an identity, not a test."""


@dataclass(frozen=True)
class Measure:
    q_probes: tuple[float, ...] = param(
        (0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 10.0, 12.0, 15.0),
        gt=0,
        min_len=1,
        doc="input lengths q of the length map",
    )
    c_probes: tuple[float, ...] = param(
        (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
        ge=-1,
        le=1,
        min_len=1,
        doc="input correlations c of the correlation map",
    )
    q_cap: float = param(
        1000.0,
        gt=0,
        doc="correlation maps are probed at q*, or at this length where q* is infinite",
    )


@dataclass(frozen=True)
class Theory:
    points: int = param(200, ge=2, doc="points of each theory curve")
    q_max: float | None = param(None, gt=0, doc="length maps drawn on [0, q_max] (default 2.5 q*)")


@dataclass(frozen=True)
class Panel:
    activation: str = param("tanh", doc="the panel's activation (its block's runs)")
    map: Literal["q", "c"] = param("q", doc="q: the length map; c: the correlation map")


@dataclass(frozen=True)
class Analysis:
    panels: tuple[Panel, ...] = param(
        (Panel("linear", "q"), Panel("tanh", "q"), Panel("relu", "c"), Panel("erf", "c")),
        min_len=1,
        doc="Fig. 1's panels, in order",
    )


@dataclass(frozen=True)
class Claims:
    z_max: float = param(3.0, gt=0, doc="c* < 1 with dropout when 1 - c_out(1) > z_max SE")
    joint_level: float = param(
        0.95,
        gt=0,
        lt=1,
        doc="a map matches simulation when the largest "
        "|z| over its points is below this quantile "
        "of its bootstrap null",
    )
    n_boot: int = param(
        2000, ge=100, doc="bootstrap resamples of the instantiations for the joint test"
    )
    margin: float = param(
        0.1,
        gt=0,
        doc="equivalence margin of the map-vs-simulation claims: "
        "the largest common relative offset from Eqs. 2-4 they "
        "tolerate; a pass needs the joint test's detectable "
        "relative offset <= this (else inconclusive)",
    )


SPEC = StudySpec(
    task="measure",
    source=SOURCE,
    figures={
        "meanfield_maps": Figure(
            "figure",
            (
                "One-layer length map q^l(q^{l-1}) (linear, tanh) and correlation map c^l(c^{l-1}) at q* "
                "(ReLU, erf) with keep rates ρ (000 Fig. 1). Lines: 000 Eqs. 2–4 by quadrature/closed "
                "form; dots: mean over random instantiations with ±1 standard error; diamonds: fixed "
                "points q*, c*; dashed: the unity line."
            ),
            claims=(
                "q_map_matches_simulation*",
                "c_map_matches_simulation*",
                "c_star_below_one_iff_dropout*",
            ),
        )
    },
    measure=Measure,
    theory=Theory,
    analysis=Analysis,
    claims=Claims,
)
