"""Theory of the sampled NTK: Littwin & Wolf 2020 (arXiv:2001.10460) Thm. 1 / Thm. 2 against
the angle of Fig. 2, and the diagonals against depth (Eq. 25, the printed Eq. 29 and ``H_L``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...theory import kernels


def angles(n: int) -> np.ndarray:
    """Fig. 2's angles: ``n`` values evenly spaced in ``[0, pi]``."""
    return np.linspace(0.0, np.pi, int(n))


def _check_settings(settings: list[dict]) -> None:
    for s in settings:
        if s.get("activation") != "relu" or not np.isclose(s.get("sigma_w2", np.nan), 2.0):
            raise ValueError(
                f"001's kernels are for relu with q = sqrt(2) phi (sigma_w2 = 2); got {s}"
            )


def theory_table(study: str, p, settings: list[dict]) -> pd.DataFrame:
    """Thm. 1 / Thm. 2 against theta (``ntk_angle``) and the diagonals against depth, for
    ``L = 1..theory.max_depth``, every ResNet ``(m, alpha)`` of ``theory.resnet`` and the
    DenseNet.

    Quantities: ``ntk_angle`` (key ``theta``); ResNet ``ntk_diag_eq25`` (Eq. 25) and
    ``ntk_diag_thm1`` (Thm. 1's recursion at ``x = x'``); DenseNet ``ntk_diag_eq29`` (printed),
    ``ntk_diag_recursion`` (``H_L``) and ``ntk_diag_thm2`` (Thm. 2's recursion at ``x = x'``).
    Diagonals at ``Sigma^0 = 1``; angles at ``Sigma^0 = x.x'/measure.fig2_input_dim``.
    """
    _check_settings(settings)
    theta = angles(p.measure.n_angles)
    d_eff = float(p.measure.fig2_input_dim)
    L_max = int(p.theory.max_depth)
    x1, x2 = kernels.fig2_inputs(theta)  # d = 2: Sigma^0 = x.x'/2
    x1, x2 = x1 * np.sqrt(2.0 / d_eff), x2 * np.sqrt(2.0 / d_eff)
    one = np.array([[1.0]])  # d = 1: Sigma^0(x, x) = 1
    depths = np.arange(1, L_max + 1)
    rows = []

    def add(quantity, values, **keys):
        rows.append(
            pd.DataFrame(
                {"study": study, "quantity": quantity, **keys, "value": np.asarray(values, float)}
            )
        )

    for spec in p.theory.resnet:
        m, a = int(spec.branch_depth), float(spec.alpha)
        base = {"arch": "resnet_fc", "branch_depth": m, "alpha": a}
        for L in depths:
            add("ntk_angle", kernels.resnet_ntk(x1, x2, L, m, a)[0], **base, depth=L, theta=theta)
        add(
            "ntk_diag_eq25",
            kernels.resnet_ntk_diagonal(depths, m, a),
            **base,
            depth=depths,
            theta=np.nan,
        )
        add(
            "ntk_diag_thm1",
            [kernels.resnet_ntk(one, one, L, m, a)[0, 0] for L in depths],
            **base,
            depth=depths,
            theta=np.nan,
        )
    base = {"arch": "densenet_fc", "branch_depth": np.nan, "alpha": np.nan}
    for L in depths:
        add("ntk_angle", kernels.densenet_ntk(x1, x2, L)[0], **base, depth=L, theta=theta)
    for q, form in (("ntk_diag_eq29", "paper"), ("ntk_diag_recursion", "recursion")):
        add(q, kernels.densenet_ntk_diagonal(depths, form=form), **base, depth=depths, theta=np.nan)
    add(
        "ntk_diag_thm2",
        [kernels.densenet_ntk(one, one, L)[0, 0] for L in depths],
        **base,
        depth=depths,
        theta=np.nan,
    )
    return pd.concat(rows, ignore_index=True)
