"""004 Thm. 6 / Thm. 3 (Chen, Wang, Zhao, Papailiopoulos & Koutris 2018, arXiv:1806.03791) for
linear nets of equal hidden widths: the expectations behind the E-ratio and its lower bound."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...theory import diversity as th


def theory_widths(d: int, width, depth: int) -> np.ndarray:
    """004 Thm. 3/6 widths ``(K_0 = d, K_1, ..., K_{L-1})`` of a net with ``depth`` hidden layers."""
    K = np.atleast_1d(np.asarray(width, float))
    return np.concatenate([np.full((K.size, 1), float(d)), np.repeat(K[:, None], depth, axis=1)], axis=1)


def theory_table(study: str, p, settings: list[dict]) -> pd.DataFrame:
    """004 Thm. 6 / Thm. 3 for equal hidden widths ``K = 2 .. width_max`` and ``depth = 1 ..
    depth_max`` hidden layers (``L = depth + 1``), input dimension ``d_in``:

    ``sq_norm_thm8`` (E||grad f_i||^2, A), ``inner_thm6`` (E<grad f_i, grad f_j>, C): the
    finite-n E-ratio is ``n A / (A + (n - 1) C)`` (:func:`~sigprop.theory.diversity.linear_expected_ratio`);
    ``ratio_inf_thm6`` = A / C; ``bound_thm3`` = Eq. 4.1 (intended reading).
    """
    d = int(p.theory.d_in)
    K = np.arange(2, int(p.theory.width_max) + 1, dtype=float)
    rows = []
    for depth in range(1, int(p.theory.depth_max) + 1):
        w = theory_widths(d, K, depth)
        vals = {"sq_norm_thm8": th.linear_sq_norm_expectation(w),
                "inner_thm6": th.linear_inner_expectation(w),
                "ratio_inf_thm6": th.linear_expected_ratio(w),
                "bound_thm3": th.linear_lower_bound(w)}
        for q, v in vals.items():
            rows.append(pd.DataFrame({"study": study, "quantity": q, "value": np.asarray(v, float),
                                      "width": K.astype(int), "depth": depth, "d_in": d}))
    return pd.concat(rows, ignore_index=True)
