"""004 Thm. 6 / Thm. 3 (Chen, Wang, Zhao, Papailiopoulos & Koutris 2018, arXiv:1806.03791) for
linear nets of equal hidden widths: the expectations behind the E-ratio and its lower bound; and a
Monte Carlo of 004 Thm. 2 (2-layer tanh nets), whose ratio of expectations has no closed form."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...theory import diversity as th


def theory_widths(d: int, width, depth: int) -> np.ndarray:
    """004 Thm. 3/6 widths ``(K_0 = d, K_1, ..., K_{L-1})`` of a net with ``depth`` hidden layers."""
    K = np.atleast_1d(np.asarray(width, float))
    return np.concatenate(
        [np.full((K.size, 1), float(d)), np.repeat(K[:, None], depth, axis=1)], axis=1
    )


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
        vals = {
            "sq_norm_thm8": th.linear_sq_norm_expectation(w),
            "inner_thm6": th.linear_inner_expectation(w),
            "ratio_inf_thm6": th.linear_expected_ratio(w),
            "bound_thm3": th.linear_lower_bound(w),
        }
        for q, v in vals.items():
            rows.append(
                pd.DataFrame(
                    {
                        "study": study,
                        "quantity": q,
                        "value": np.asarray(v, float),
                        "width": K.astype(int),
                        "depth": depth,
                        "d_in": d,
                    }
                )
            )
    rows.append(thm2_table(study, p))
    return pd.concat(rows, ignore_index=True)


def tanh2_sums(d: int, K: int, n: int, draws: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Per draw, ``n sum_i ||grad f_i||^2`` and ``||sum_i grad f_i||^2`` of a 2-layer tanh net
    ``f(x) = w2 . tanh(W1 x)`` (004 Thm. 2's net: odd, bounded, monotone activation) with the
    square loss ``(f(x) - y)^2 / 2`` against a tanh teacher of the same widths; student and
    teacher weights N(0, 1), inputs N(0, I_d) (the setting of 004 App. C used for Thm. 6).
    Closed-form per-example gradients: ``d/dw2 = e h``, ``d/dW1 = e (w2 * (1 - h^2)) x^T``."""
    num = np.empty(draws)
    den = np.empty(draws)
    for s in range(draws):
        W1, T1 = rng.standard_normal((2, K, d))
        w2, t2 = rng.standard_normal((2, K))
        X = rng.standard_normal((n, d))
        H = np.tanh(X @ W1.T)  # (n, K)
        e = H @ w2 - np.tanh(X @ T1.T) @ t2  # residuals (n,)
        U = w2 * (1.0 - H**2)  # (n, K): d f / d (W1 x)
        num[s] = n * np.sum(e**2 * ((H**2).sum(1) + (U**2).sum(1) * (X**2).sum(1)))
        den[s] = np.sum((H.T @ e) ** 2) + np.sum(((U * e[:, None]).T @ X) ** 2)
    return num, den


def thm2_table(study: str, p) -> pd.DataFrame:
    """004 Thm. 2 by Monte Carlo: ``rho = E[n sum_i ||grad f_i||^2] / E[||sum_i grad f_i||^2]``
    (``thm2_ratio_mc``, delta-method SE ``thm2_ratio_mc_se``) of the 2-layer tanh net of
    :func:`tanh2_sums` at widths ``theory.thm2_widths``, ``d = d_in``, ``n = theory.thm2_n``,
    ``theory.thm2_draws`` draws (seed ``theory.thm2_seed``), and the order of its lower bound
    ``K d^2 / (K d + K + d)`` (``thm2_order``, constants set to 1: Thm. 2 is an Omega statement)."""
    d, n, S = int(p.theory.d_in), int(p.theory.thm2_n), int(p.theory.thm2_draws)
    rng = np.random.default_rng(int(p.theory.thm2_seed))
    out = []
    for K in p.theory.thm2_widths:
        num, den = tanh2_sums(d, int(K), n, S, rng)
        a, b = num.mean(), den.mean()
        r = a / b
        c = np.cov(num, den, ddof=1)
        se = r * np.sqrt(max((c[0, 0] / a**2 + c[1, 1] / b**2 - 2 * c[0, 1] / (a * b)) / S, 0.0))
        for q, v in (
            ("thm2_ratio_mc", r),
            ("thm2_ratio_mc_se", se),
            ("thm2_order", float(th.two_layer_nonlinear_order(K, d))),
            ("thm2_draws", float(S)),
            ("thm2_n", float(n)),
        ):
            out.append(
                {
                    "study": study,
                    "quantity": q,
                    "value": float(v),
                    "width": int(K),
                    "depth": 1,
                    "d_in": d,
                }
            )
    return pd.DataFrame(out)
