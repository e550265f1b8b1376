"""Shared figure styles: colours that mean the same thing in every figure that uses them."""

from __future__ import annotations

# 000 (Huang et al. 2019, arXiv:1912.09132) Figs. 2-4: one colour per dropout keep rate rho
KEEP_RATE_COLOURS = {1.0: "tab:red", 0.9: "tab:green", 0.8: "tab:blue", 0.7: "tab:purple"}


def keep_rate_colour(rho, i):
    """The colour of keep rate ``rho`` (:data:`KEEP_RATE_COLOURS`), else matplotlib's ``C{i}``."""
    return KEEP_RATE_COLOURS.get(round(float(rho), 3), f"C{i}")
