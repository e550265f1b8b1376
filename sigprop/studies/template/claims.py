"""The statistics of the template's claim (declared in ``CLAIMS``, ``__init__.py``): per
activation and sigma_w2, the fraction of layers whose measured q^l lies within ``z_max`` SE of
the iterated length map, and the smallest relative offset one layer's test resolves."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...claims.declared import build, result
from . import CLAIMS, SOURCE
from .analysis import summary


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, p) -> pd.DataFrame:
    k, want = p.claims.z_max, p.claims.within_fraction
    results = []
    for (act, sw), g in summary(runs, theory).groupby(["activation", "sigma_w2"]):
        frac = float(np.mean(np.abs(g.z) <= k))
        # the smallest relative offset from the map one layer's test resolves: k SE / theory
        rel = float(np.median(k * g.se / np.abs(g.theory)))
        results.append(
            result(
                "length_follows_q_map",
                f"{act}, sigma_w2={sw:g}",
                measured=frac,
                tolerance=0.0,
                verdict="pass" if frac >= want else "fail",
                detectable=rel,
                k=k,
                want=want,
                networks=int(g["size"].min()),
                layers=len(g),
                max_z=float(np.abs(g.z).max()),
            )
        )
    return build(p.study, CLAIMS, results, SOURCE)
