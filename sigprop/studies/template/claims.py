"""The claim: measured q^l follows the iterated length map within the standard error."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...claims import frame, row
from . import SOURCE
from .analysis import summary


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, p) -> pd.DataFrame:
    k, want = p.claims.z_max, p.claims.within_fraction
    rows = []
    for (act, sw), g in summary(runs, theory).groupby(["activation", "sigma_w2"]):
        frac = float(np.mean(np.abs(g.z) <= k))
        # the smallest relative offset from the map one layer's test resolves: k SE / theory
        rel = float(np.median(k * g.se / np.abs(g.theory)))
        rows.append(
            row(
                p.study,
                f"length_follows_q_map[{act}, sigma_w2={sw:g}]",
                "The length of the signal in each layer follows the iterated length map of Eq. 2",
                SOURCE,
                measured=frac,
                expected=f">= {want:g} of layers within {k:g} SE",
                tolerance=0.0,
                verdict="pass" if frac >= want else "fail",
                test=f"per layer |mean - theory| <= {k:g} SE over {int(g['size'].min())} "
                f"networks; pass when >= {want:g} of {len(g)} layers do (the layers "
                "share networks: not independent tests)",
                detectable=rel,
                detail=f"{len(g)} layers, {int(g['size'].min())} networks each; "
                f"max |z| {np.abs(g.z).max():.2f}",
            )
        )
    return frame(rows)
