"""Pointwise activations by name (torch).  The theory side has its own numpy registry
in :mod:`sigprop.theory.activations`; the names are the same."""

from __future__ import annotations

import torch

ACTIVATIONS = {
    "linear": lambda x: x,
    "tanh": torch.tanh,
    "relu": torch.relu,
    "hard_tanh": lambda x: torch.clamp(x, -1.0, 1.0),
    "erf": torch.erf,
    "sigmoid": torch.sigmoid,
    "elu": torch.nn.functional.elu,
}


def get(name: str):
    try:
        return ACTIVATIONS[name]
    except KeyError:
        raise ValueError(f"unknown activation '{name}'; known: {sorted(ACTIVATIONS)}") from None
