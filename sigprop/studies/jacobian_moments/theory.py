"""Theory of the Jacobian moments (Littwin & Wolf 2020, arXiv:2001.10460): Eq. 152 for Fig. 4;
for Fig. 5 the infinite-width means (Eq. 25, Thm. 2's recursion H_L, 2L) and the scaling shapes
of Eqs. 40, 42 (and 187) and exp(5 beta)."""

from __future__ import annotations

import numpy as np
import pandas as pd


def fig5_alpha(depth, a: float, m: int):
    """Cor. 1 / Fig. 5 ``alpha = a L^{-1/m}`` (0.3/sqrt(L) for m = 2), rounded as the config."""
    from ...theory.finite_width import resnet_alpha_cor1

    return np.array([float(f"{v:.10g}") for v in np.atleast_1d(resnet_alpha_cor1(depth, m, a))])


def theory_table(study: str, p, settings: list[dict]) -> pd.DataFrame:
    """Curves on ``L = 1..theory.depth_max``.

    Fig. 4 (keys arch, alpha, branch_depth, depth): ``f2_eq152``.  Fig. 5 (keys arch,
    depth, width = c L, and for the ResNet alpha, branch_depth): ``mean_J2`` (Eq. 25,
    Thm. 2 recursion H_L, vanilla 2L), ``var_shape`` (Eq. 40, Eq. 42, mean^2 exp(5 beta))
    and ``ratio_shape`` (= var_shape / mean_J2^2 for ResNet and DenseNet, exp(5 beta) for
    the vanilla net): shapes, defined up to a constant; for the DenseNet also
    ``ratio_shape_eq187`` / ``var_shape_eq187``, Eq. 187 with ``H_L^2`` in place of Eq. 42's
    ``log(L)^2``.  ``c4``: the weights' 4th moment.
    """
    from ...theory import finite_width as fw
    from ...theory import kernels

    th = p.theory
    L = np.arange(1, int(th.depth_max) + 1)
    rows = [pd.DataFrame([{"study": study, "quantity": "c4", "value": float(th.c4)}])]
    f4 = th.fig4
    m4 = int(f4.branch_depth)
    for a in f4.alpha:
        rows.append(
            pd.DataFrame(
                {
                    "study": study,
                    "quantity": "f2_eq152",
                    "arch": "resnet_fc",
                    "alpha": float(a),
                    "branch_depth": m4,
                    "depth": L,
                    "value": a**m4 * (1 + a**m4) ** (L - 1.0),
                }
            )
        )
    f5 = th.fig5
    c, a5, m5 = int(f5.width_per_depth), float(f5.resnet_a), int(f5.branch_depth)
    n = c * L
    al = fig5_alpha(L, a5, m5)
    mean = {
        "resnet_fc": kernels.resnet_ntk_diagonal(L, m5, al),
        "densenet_fc": kernels.densenet_ntk_diagonal(L, form="recursion"),
        "fc": 2.0 * L,
    }
    ratio = {
        "resnet_fc": fw.resnet_variance(L, n, m5, al) / mean["resnet_fc"] ** 2,
        "densenet_fc": fw.densenet_variance(L, n) / mean["densenet_fc"] ** 2,
        "fc": fw.vanilla_relu_moment_ratio(L, n),
    }
    for arch in ("resnet_fc", "densenet_fc", "fc"):
        keys = {"study": study, "arch": arch, "depth": L, "width": n}
        if arch == "resnet_fc":
            keys.update(alpha=al, branch_depth=m5)
        for q, v in (
            ("mean_J2", mean[arch]),
            ("ratio_shape", ratio[arch]),
            ("var_shape", ratio[arch] * mean[arch] ** 2),
        ):
            rows.append(pd.DataFrame({**keys, "quantity": q, "value": np.asarray(v, float)}))
    # DenseNet, Eq. 187 before its last step: (e^{5/n} - 1) (sum_k 1/k)^2 = (e^{5/n} - 1) H_L^2,
    # which Eq. 42 writes as log(L)^2 (equal only asymptotically)
    h2 = mean["densenet_fc"] ** 2
    for q, v in (
        ("ratio_shape_eq187", np.expm1(5.0 / n)),
        ("var_shape_eq187", np.expm1(5.0 / n) * h2),
    ):
        rows.append(
            pd.DataFrame(
                {
                    "study": study,
                    "arch": "densenet_fc",
                    "depth": L,
                    "width": n,
                    "quantity": q,
                    "value": v,
                }
            )
        )
    return pd.concat(rows, ignore_index=True)
