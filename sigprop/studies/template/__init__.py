"""Template study: copy this package to start a new one (docs/adding-a-study.md).

It measures, at initialization, the length of the signal through the hidden layers of random
fully connected networks, q^l = mean_i (z_i^l)^2 for inputs of mean square q^0, and draws it
against the iterated length map of Huang, Xu, Du, Zeng, Zhao 2019, "Mean field theory for deep
dropout networks: digging up gradient backpropagation deeply", arXiv:1912.09132, Eq. 2 (at
keep rate 1, Poole et al.'s map): q^1 = sigma_w^2 q^0 + sigma_b^2, then
q^{l+1} = sigma_w^2 E[phi(sqrt(q^l) u)^2] + sigma_b^2.  One figure, one claim.

What a study package holds (the contract: sigprop/contract.py):

- this file: ``SPEC``, the declared claims ``CLAIMS`` and the parameter types of the study
  file's sections, nothing heavy;
- ``measure.py``: the measurement of one shard of initialized models (task "measure");
- ``theory.py``: the theory table on the runs' settings;
- ``analysis.py``: summaries shared by the figure and the claim;
- ``figures.py``: one function per figure;
- ``claims.py``: the statistics of each declared claim, built into the claims table
  (:func:`sigprop.claims.declared.build`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...contract import Claim, Figure, StudySpec
from ...params import param

SOURCE = "000 Eq. 2 (keep rate 1)"

# each claim once: what the paper states, how it is tested, what a pass expects and what the row
# reports; {slots} are filled by claims.py with the row's statistics
CLAIMS = {
    "length_follows_q_map": Claim(
        statement="The length of the signal in each layer follows the iterated length map of Eq. 2",
        expected=">= {want:g} of layers within {k:g} SE",
        test="per layer |mean - theory| <= {k:g} SE over {networks} networks; pass when "
        ">= {want:g} of {layers} layers do (the layers share networks: not independent tests)",
        detail="{layers} layers, {networks} networks each; max |z| {max_z:.2f}",
    )
}


@dataclass(frozen=True)
class Measure:
    q0: float = param(1.0, gt=0, doc="mean square of the input vectors")
    inputs: int = param(8, ge=1, doc="input vectors per model (pairs of orthogonal vectors)")


@dataclass(frozen=True)
class Theory:
    depth_max: int = param(20, ge=1, doc="layers of the theory curve")


@dataclass(frozen=True)
class Claims:
    z_max: float = param(3.0, gt=0, doc="a layer agrees when |mean - theory| <= z_max SE")
    within_fraction: float = param(0.9, gt=0, le=1, doc="... for at least this fraction")


SPEC = StudySpec(
    task="measure",
    source=SOURCE,
    figures={
        "template": Figure(
            "length_by_layer",
            (
                "Length q^l of the signal in each hidden layer of random fully connected networks "
                "(dots: mean over networks, ±1 standard error) and the iterated length map of 000 "
                "Eq. 2 at keep rate 1 (lines), per σ_w²."
            ),
            claims=("length_follows_q_map*",),
        )
    },
    measure=Measure,
    theory=Theory,
    claims=Claims,
)
