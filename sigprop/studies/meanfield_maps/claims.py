"""Claims of Huang et al. 2019 (arXiv:1912.09132) Sec. 3.1: the maps of Eqs. 2-4 match
simulation, and c* = 1 only without dropout."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...claims import frame, row
from . import SOURCE
from .analysis import summary


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, p) -> pd.DataFrame:
    study, c = p.study, p.claims
    k, want, tol = c.z_max, c.within_fraction, c.fraction_tolerance
    rows = []
    for panel in p.analysis.panels:
        act, kind = panel.activation, panel.map
        s = summary(runs[runs.activation == act], theory, kind)
        frac = float(np.mean(np.abs(s.z) <= k))
        verdict = "pass" if frac >= want - tol else "fail"
        rel = np.max(np.abs(s["mean"] - s.theory) / np.maximum(np.abs(s.theory), 1e-12))
        rows.append(row(study, f"{kind}_map_matches_simulation[{act}]",
                        f"The {kind}-map of Eq. {'2' if kind == 'q' else '3-4'} matches simulated "
                        f"{act} dropout networks within the standard error",
                        SOURCE, measured=frac, expected=f">= {want:g} of points within {k:g} SE",
                        tolerance=tol, verdict=verdict,
                        detail=(f"{len(s)} (rho, probe) points, {int(s.n.min())}-{int(s.n.max())} "
                                f"instantiations each; max |z| {np.abs(s.z).max():.2f}; max "
                                f"relative error {rel:.2e}")))
        if kind != "c":
            continue
        top = s[np.isclose(s.x, 1.0)]
        for r in top.itertuples():
            gap, se = 1.0 - r.mean, r.se
            if r.keep_rate == 1.0:
                ok = abs(gap) <= k * se + 1e-12
                expected = "0 (c* = 1 without dropout)"
            else:
                ok = gap > k * se
                expected = f"> {k:g} SE (c* < 1 with dropout)"
            rows.append(row(study, f"c_star_below_one_iff_dropout[{act}, rho={r.keep_rate:g}]",
                            "c* = 1 only at rho = 1; with dropout c* < 1", SOURCE, measured=gap,
                            expected=expected, tolerance=k * se, verdict="pass" if ok else "fail",
                            detail=f"1 - c_out at c_in = 1, mean over {int(r.n)} instantiations "
                                   f"(SE {se:.2e}); theory {1 - r.theory:.4f}"))
    return frame(rows)
