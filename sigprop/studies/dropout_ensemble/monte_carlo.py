"""Monte Carlo of dropout ensembles (002, Baldi & Sadowski 2014): arrays in, arrays out.

Three simulations, each batched (all values of a set, all repetitions of a sampling
experiment, all dropout masks of an input: one array pass):

* Sec. 8, Eq. 87, Figs. 8.1-8.2: sets of logistic outputs ``O_i = sigma(S_i)``,
  ``S_i ~ N(mu, s^2)`` with a random ``(mu, s)`` per set, equal weights ``P_i = 1/m``;
  :func:`set_parameters`, :func:`logistic_sets`, :func:`set_statistics` (E, V, NWGM).
* Sec. 9.3-9.4, Figs. 9.1-9.2: the sampling distributions of ``E_S`` and ``NWGM_S`` for
  samples of ``m`` values from a distribution on (0, 1); :func:`draw_values`,
  :func:`sampling_experiment`, :func:`population_moments` (Eqs. 103-104 inputs),
  :func:`pearson_cov`.
* Secs. 2-3, Eqs. 15-17, 24-25: a deep linear network with dropout on its units;
  :func:`linear_mc` (torch, counter-based masks from :mod:`sigprop.nets.rng`) against
  :func:`exact_linear_moments` (:func:`sigprop.theory.ensembles.linear_dropout_expectation`).

torch is imported only inside the network functions, so study modules may import this one.

Papers cited by prefix: 002 = Baldi, Sadowski (2014), doi:10.1016/j.artint.2014.02.004.
"""

from __future__ import annotations

import numpy as np
from scipy import integrate, special

from ...theory import ensembles

# numpy streams of a run (independent of one another, derived from the run key)
STREAM_BOUNDS = 11
STREAM_SAMPLING = 12
STREAM_INPUT = 13


def generator(key: int, stream: int) -> np.random.Generator:
    """A numpy generator that depends only on a run's key and a stream id."""
    return np.random.default_rng(np.random.SeedSequence([int(key), int(stream)]))


def open_uniform(rng: np.random.Generator, shape) -> np.ndarray:
    """Uniform numbers in the open interval (0, 1) (53-bit grid, never 0 or 1)."""
    return (rng.integers(0, 2**52, size=shape).astype(float) + 0.5) * 2.0**-52


# ----------------------------------------------------------------- Sec. 8: sets of outputs


def set_parameters(rng: np.random.Generator, n_sets: int, mu_range, sd_range):
    """``mu ~ U(mu_range)`` and ``s ~ U(sd_range)`` of ``n_sets`` sets."""
    return rng.uniform(*mu_range, size=n_sets), rng.uniform(*sd_range, size=n_sets)


def logistic_sets(rng: np.random.Generator, mu: np.ndarray, sd: np.ndarray, m: int) -> np.ndarray:
    """Sets of ``m`` logistic outputs ``O = sigma(S)``, ``S ~ N(mu, s^2)`` i.i.d. within a set:
    ``O [len(mu), m]``.  Consecutive calls continue the generator's normal stream, so drawing
    the sets in chunks gives the same numbers as one call."""
    mu, sd = np.asarray(mu, float), np.asarray(sd, float)
    s = mu[:, None] + sd[:, None] * rng.standard_normal((len(mu), m))
    return ensembles.logistic(s)


def set_statistics(O: np.ndarray) -> dict:
    """Per set (last axis, equal weights): ``E``, ``V``, ``NWGM`` (Sec. 8, Eqs. 35-37),
    ``E_minus_NWGM`` and the extremes ``O_min``, ``O_max`` (for Eqs. 81-82)."""
    w = ensembles.weighted_means(O, axis=-1)
    return {
        "E": w["E"],
        "V": w["V"],
        "NWGM": w["NWGM"],
        "E_minus_NWGM": w["E"] - w["NWGM"],
        "O_min": O.min(-1),
        "O_max": O.max(-1),
    }


def bound_fraction(diff: np.ndarray, bound: np.ndarray, atol: float = 1e-12) -> float:
    """Fraction of sets with ``|E - NWGM| <= bound`` (Eq. 87)."""
    return float(np.mean(np.abs(diff) <= bound + atol))


# ----------------------------------------------------------------- Sec. 9: sampling distributions


def _check_spec(spec: dict) -> None:
    kind = spec.get("dist")
    if kind == "uniform":
        if not 0.0 <= spec["low"] < spec["high"] <= 1.0:
            raise ValueError(f"uniform distribution needs 0 <= low < high <= 1, got {spec}")
    elif kind == "normal":
        if not spec["sd"] > 0:
            raise ValueError(f"normal distribution needs sd > 0, got {spec}")
    else:
        raise ValueError(f"unknown distribution '{kind}' (known: uniform, normal)")


def _trunc(spec: dict):
    """Normal ``spec`` truncated to (0, 1): its standardized bounds and their CDFs."""
    a, b = (0.0 - spec["mean"]) / spec["sd"], (1.0 - spec["mean"]) / spec["sd"]
    return a, b, special.ndtr(a), special.ndtr(b)


def draw_values(rng: np.random.Generator, spec: dict, shape) -> np.ndarray:
    """Values in (0, 1) from ``spec``: ``{dist: uniform, low, high}`` or ``{dist: normal, mean,
    sd}``; the normal is truncated to (0, 1) (the paper's N(0.5, 0.1) and N(0.25, 0.05) leave
    it with probability ~6e-7).  Inverse-CDF sampling of open uniforms."""
    _check_spec(spec)
    u = open_uniform(rng, shape)
    if spec["dist"] == "uniform":
        x = spec["low"] + (spec["high"] - spec["low"]) * u
    else:
        _, _, fa, fb = _trunc(spec)
        x = spec["mean"] + spec["sd"] * special.ndtri(fa + u * (fb - fa))
    return np.clip(x, 1e-300, np.nextafter(1.0, 0.0))


def sampling_experiment(rng: np.random.Generator, spec: dict, m: int, reps: int) -> dict:
    """``reps`` independent samples of ``m`` values (one ``[reps, m]`` array): per sample the
    empirical expectation ``E_S`` and ``NWGM_S`` with weights ``1/m`` (Sec. 9.3, Figs. 9.1-9.2)."""
    w = ensembles.weighted_means(draw_values(rng, spec, (reps, m)), axis=-1)
    return {"E_S": w["E"], "NWGM_S": w["NWGM"]}


def density(spec: dict):
    """Density on (0, 1) of ``spec`` and its support."""
    _check_spec(spec)
    if spec["dist"] == "uniform":
        lo, hi = spec["low"], spec["high"]
        return (lambda o: 1.0 / (hi - lo)), (lo, hi)
    _, _, fa, fb = _trunc(spec)
    z = fb - fa
    return (
        lambda o: (
            np.exp(-0.5 * ((o - spec["mean"]) / spec["sd"]) ** 2)
            / (np.sqrt(2 * np.pi) * spec["sd"] * z)
        )
    ), (0.0, 1.0)


def population_moments(spec: dict) -> dict:
    """Population ``mu_O``, ``var_O`` (``C_1`` of Sec. 9.3) and, with ``S = logit(O)``,
    ``mu_S``, ``var_S``; Eq. 104's NWGM mean ``sigma(mu_S)`` and ``C_2 = t^2 var_S`` with slope
    ``t = sigma'(mu_S)``.  By quadrature of the density of ``spec``."""
    f, (lo, hi) = density(spec)
    pts = [spec["mean"]] if spec["dist"] == "normal" and lo < spec["mean"] < hi else None

    def q(g):
        return integrate.quad(
            lambda o: g(o) * f(o), lo, hi, points=pts, limit=200, epsabs=1e-13, epsrel=1e-11
        )[0]

    def logit(o):
        return np.log(o) - np.log1p(-o)

    mu_o = q(lambda o: o)
    var_o = q(lambda o: (o - mu_o) ** 2)
    mu_s = q(logit)
    var_s = q(lambda o: (logit(o) - mu_s) ** 2)
    sig = float(ensembles.logistic(mu_s))
    t = sig * (1.0 - sig)
    return {
        "mu_O": mu_o,
        "var_O": var_o,
        "mu_S": mu_s,
        "var_S": var_s,
        "nwgm_mean_eq104": sig,
        "C2_eq104": t * t * var_s,
    }


def pearson_cov(x: np.ndarray, y: np.ndarray) -> dict:
    """Pearson ``r`` and covariance of paired samples, with standard errors: ``r`` by the Fisher
    transform (``se = (1 - r^2)/sqrt(n - 3)``), the covariance by the sample SD of the centred
    products over ``sqrt(n)``."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    n = len(x)
    dx, dy = x - x.mean(), y - y.mean()
    prod = dx * dy
    cov = prod.sum() / (n - 1)
    r = prod.sum() / np.sqrt((dx * dx).sum() * (dy * dy).sum())
    return {
        "r": float(r),
        "r_se": float((1 - r * r) / np.sqrt(max(n - 3, 1))),
        "cov": float(cov),
        "cov_se": float(prod.std(ddof=1) / np.sqrt(n)),
        "n": n,
    }


def skew_kurtosis(x: np.ndarray) -> tuple[float, float]:
    """Sample skewness and excess kurtosis (moment estimators)."""
    d = np.asarray(x, float) - np.mean(x)
    s2 = np.mean(d * d)
    return float(np.mean(d**3) / s2**1.5), float(np.mean(d**4) / s2**2 - 3.0)


def loglog_slope(x: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope of ``log y`` against ``log x``."""
    return float(np.polyfit(np.log(np.asarray(x, float)), np.log(np.asarray(y, float)), 1)[0])


# ----------------------------------------------------------------- Secs. 2-3: deep linear networks


def fc_layers(params, model: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Weights ``(n_out, n_in)`` and biases of model ``model`` of a stacked fc shard
    (:mod:`sigprop.nets.fc` layout ``[W_0, b_0, W_1, b_1, ...]``), as float64 numpy."""
    ws = [params[i][model].detach().cpu().double().numpy() for i in range(0, len(params), 2)]
    bs = [
        params[i][model].detach().cpu().double().numpy().reshape(-1)
        for i in range(1, len(params), 2)
    ]
    return ws, bs


def layer_keeps(input_keep: float, hidden_keep: float, n_layers: int) -> list[float]:
    """Keep probability of the units feeding each weight matrix: the inputs, then the hidden
    units (002 Eq. 22, dropout on every non-output unit; the output units are not dropped)."""
    return [float(input_keep)] + [float(hidden_keep)] * (n_layers - 1)


def exact_linear_moments(weights, biases, keeps, x) -> dict:
    """Exact mean and covariance of every layer (002 Eqs. 15-17, 24-25), by
    :func:`sigprop.theory.ensembles.linear_dropout_expectation` (O(n^3) per layer)."""
    return ensembles.linear_dropout_expectation(weights, biases, list(keeps), x)


def unscaled_means(weights, biases, x) -> list[np.ndarray]:
    """The deliberately wrong expectation: the full network without the keep probabilities
    (Eq. 8 says the weights must be multiplied by p); means of every layer."""
    h, out = np.asarray(x, float), []
    for w, b in zip(weights, biases):
        h = w @ h + b
        out.append(h)
    return out


def input_vector(key: int, d: int) -> np.ndarray:
    """A run's input ``I``: ``d`` values uniform on (0, 1) (nonnegative, like pixel intensities)."""
    return open_uniform(generator(key, STREAM_INPUT), d)


def linear_mc(
    weights, biases, keeps, x, n_samples: int, key: int, cov_units: int = 8, device: str = "cpu"
) -> list[dict]:
    """Monte Carlo of a deep linear dropout network (Eq. 22) for one input, all ``n_samples``
    masks in one pass: ``S^{h+1} = W^h (delta^h * S^h) + b^h`` on a ``[n_samples, n_h]`` tensor.

    ``delta^h_j = 1[u < keeps[h]]`` with ``u`` counter-based uniforms of the run ``key``
    (:func:`sigprop.nets.rng.uniform`, stream DROPOUT, counter ``(h << 40) + index``), so the
    masks are the same on any device.  Per layer ``1..L``: sample ``mean`` and its ``mean_se``,
    unbiased ``var`` and ``var_se`` (SD of the centred squares over ``sqrt(N)``), and for the
    first ``cov_units`` units the sample covariance of pairs ``i < j`` with its SE (``cov``,
    ``cov_se``, pair indices ``pair_i``, ``pair_j``).
    """
    import torch

    from ...nets import rng as crng

    dev = torch.device(device)
    keys = torch.tensor([int(key)], dtype=torch.int64, device=dev)
    h = torch.as_tensor(np.asarray(x, float), device=dev).expand(n_samples, -1)
    n = float(n_samples)
    out = []
    with torch.no_grad():
        for layer, (w, b, p) in enumerate(zip(weights, biases, keeps)):
            d = h.shape[1]
            idx = (layer << 40) + torch.arange(n_samples * d, dtype=torch.int64, device=dev)
            mask = crng.uniform(keys, crng.STREAM_DROPOUT, idx, torch.float64)[0] < p
            h = torch.addmm(
                torch.as_tensor(b, device=dev),
                h * mask.view(n_samples, d).to(h.dtype),
                torch.as_tensor(w, device=dev).T,
            )
            mean = h.mean(0)
            c = h - mean
            sq = c * c
            var = sq.sum(0) / (n - 1)
            k = min(int(cov_units), h.shape[1])
            ii, jj = np.triu_indices(k, 1)
            prod = c[:, ii] * c[:, jj]
            out.append(
                {
                    "mean": mean.cpu().numpy(),
                    "mean_se": (var / n).sqrt().cpu().numpy(),
                    "var": var.cpu().numpy(),
                    "var_se": (sq.std(0) / n**0.5).cpu().numpy(),
                    "cov": (prod.sum(0) / (n - 1)).cpu().numpy(),
                    "cov_se": (prod.std(0) / n**0.5).cpu().numpy() if len(ii) else np.zeros(0),
                    "pair_i": ii,
                    "pair_j": jj,
                }
            )
    return out


def z_scores(measured, se, expected) -> np.ndarray:
    """``(measured - expected) / se``; 0 where both the gap and the SE vanish (a unit that
    dropout cannot move), infinite where only the SE does."""
    measured, se, expected = (np.asarray(a, float) for a in (measured, se, expected))
    gap = measured - expected
    with np.errstate(divide="ignore", invalid="ignore"):
        z = gap / se
    tiny = np.abs(gap) <= 1e-12 * np.maximum(1.0, np.abs(expected))
    return np.where(se > 0, z, np.where(tiny, 0.0, np.inf))


def within_fraction(z: np.ndarray, k: float) -> float:
    """Fraction of ``|z| <= k`` (NaN z count as outside)."""
    z = np.asarray(z, float)
    return float(np.mean(np.abs(np.nan_to_num(z, nan=np.inf)) <= k)) if z.size else np.nan
