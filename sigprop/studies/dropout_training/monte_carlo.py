"""Monte Carlo over dropout (and dropin) masks of a logistic network (002 §§9, 11).

Paper: 002, Baldi & Sadowski 2014, "The dropout learning algorithm",
doi:10.1016/j.artint.2014.02.004.  Network convention as in :mod:`sigprop.theory.ensembles`
(dropout on units, 002 Eq. 49 / Eq. 98): ``weights[h]`` has shape
``(n_{h+1}, n_h)``, ``S^{h+1} = weights[h] (g^h(O^h)) + biases[h]``,
``O^{h+1} = sigma(S^{h+1})``, ``O^0 = x``, where the gate ``g^h`` applies the
selector ``delta^h ~ Bernoulli(keep[h])`` to the units of layer ``h``:

* dropout (002 Eq. 49): ``g(O) = delta O`` (a dropped unit sends 0);
* dropin (002 §11.6): ``g(O) = delta O + (1 - delta)`` (a "dropped" unit sends 1).

No rescaling by ``1/p`` at training time: the deterministic ensemble network
("W", 002 Eq. 98) multiplies each unit by its keep probability instead,
``U^{h+1} = weights[h] (p^h W^h) + b``; for dropin its analogue replaces each
gate by its expectation ``p W + (1 - p)``.

Everything is batched over the Monte Carlo samples: one input's ``n`` samples run as
one pass with a ``[n, units]`` tensor per layer (:func:`mc_forward`); the sums that
the statistics need are accumulated over chunks of samples (:func:`mc_input_stats`)
so that memory stays bounded at the paper's 10,000 samples per input.

Per hidden unit and input (002 §9): ``E = E(O)``, ``V = Var(O)``, ``NWGM =
sigma(E(S))`` (002 Eq. 39: the NWGM of logistic outputs is the logistic of the mean
input, here the sample mean over the masks, i.e. the NWGM of the sample), ``W`` (Eq. 98),
``E(sigma'(S))`` and ``sigma'(E(S))`` (Fig. 9.15), and the Monte Carlo standard errors
of ``E`` and of ``E - NWGM`` (delta method).  Per pair of units (Figs. 9.12-9.14):
``E(O_i O_j)``; for a connection ``j -> i``, ``W_ij`` = the deterministic activation of
``i`` with ``j`` removed from its inputs (Eq. 121), computed exactly as
``sigma(U_i - w_ij p_j W_j)``.
"""

from __future__ import annotations

import itertools
import math

import torch

MODES = ("dropout", "dropin")


def split_params(
    params: list[torch.Tensor], m: int
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Model ``m``'s weights ``[(out, in)]`` and biases ``[(out,)]`` from the stacked fc
    parameters ``[W_0 (M, out, in), b_0 (M, 1, out), ...]`` (:mod:`sigprop.nets.fc`)."""
    ws = [params[i][m].detach().clone() for i in range(0, len(params), 2)]
    bs = [params[i][m].detach().reshape(-1).clone() for i in range(1, len(params), 2)]
    return ws, bs


def layer_keeps(n_weights: int, input_keep: float, hidden_keep: float) -> list[float]:
    """Keep probability of the units feeding each weight matrix: the inputs, then the hidden
    layers (002 §9.5: 0.8 for the input layer, 0.5 for the hidden layers)."""
    return [float(input_keep)] + [float(hidden_keep)] * (n_weights - 1)


def gate(o: torch.Tensor, mask: torch.Tensor, mode: str) -> torch.Tensor:
    """Gated outputs: ``delta O`` (dropout, Eq. 49) or ``delta O + 1 - delta`` (dropin, §11.6)."""
    if mode == "dropout":
        return o * mask
    if mode == "dropin":
        return o * mask + (1.0 - mask)
    raise ValueError(f"unknown mode '{mode}'; known: {MODES}")


def mean_gate(o: torch.Tensor, p: float, mode: str) -> torch.Tensor:
    """Expectation of the gate over ``delta``: ``p O`` (dropout, Eq. 98) or ``p O + 1 - p``."""
    if mode == "dropout":
        return p * o
    if mode == "dropin":
        return p * o + (1.0 - p)
    raise ValueError(f"unknown mode '{mode}'; known: {MODES}")


def draw_masks(
    gen: torch.Generator,
    n: int,
    dims: list[int],
    keeps: list[float],
    dtype=torch.float64,
    device="cpu",
) -> list[torch.Tensor]:
    """Selectors ``delta^h`` for ``n`` samples: one ``[n, dims[h]]`` tensor of 0/1 per layer."""
    return [
        (torch.rand((n, d), generator=gen, dtype=dtype, device=device) < p).to(dtype)
        for d, p in zip(dims, keeps)
    ]


def mc_forward(weights, biases, x: torch.Tensor, masks: list[torch.Tensor], mode: str = "dropout"):
    """Forward pass of ``n`` masked sub-networks at once (Eq. 49): ``x`` is one input ``[d_0]``
    (or ``[n, d_0]``), ``masks[h]`` ``[n, n_h]``.  Returns the lists ``S`` and ``O`` of
    ``[n, n_{h+1}]`` tensors, one per weight matrix (the last one is the output layer)."""
    n = masks[0].shape[0]
    a = x.expand(n, -1) if x.dim() == 1 else x
    S, O = [], []
    for w, b, mask in zip(weights, biases, masks):
        s = torch.addmm(b, gate(a, mask, mode), w.T)
        a = torch.sigmoid(s)
        S.append(s)
        O.append(a)
    return S, O


def det_forward(weights, biases, x: torch.Tensor, keeps: list[float], mode: str = "dropout"):
    """Deterministic ensemble network (Eq. 98; :func:`sigprop.theory.ensembles.deterministic_forward`
    in torch, batched over inputs ``x`` ``[B, d_0]``).  Returns the lists ``U`` and ``W``."""
    a = x
    U, W = [], []
    for w, b, p in zip(weights, biases, keeps):
        u = torch.addmm(b, mean_gate(a, p, mode), w.T)
        a = torch.sigmoid(u)
        U.append(u)
        W.append(a)
    return U, W


# ------------------------------------------------------------------ statistics


def unit_sums(S: torch.Tensor, O: torch.Tensor) -> dict:
    """Sums over the samples (axis 0) of ``O, O^2, S, S^2, O S, sigma'(S) = O(1 - O)``."""
    return {
        "n": S.shape[0],
        "O": O.sum(0),
        "O2": (O * O).sum(0),
        "S": S.sum(0),
        "S2": (S * S).sum(0),
        "OS": (O * S).sum(0),
        "dsig": (O * (1.0 - O)).sum(0),
    }


def add_sums(a: dict | None, b: dict) -> dict:
    return b if a is None else {k: a[k] + b[k] for k in a}


def unit_stats(sums: dict, W: torch.Tensor) -> dict:
    """Per-unit statistics from :func:`unit_sums` and the deterministic ``W`` of the same units.

    ``E, V`` (population variance over the samples), ``NWGM = sigma(mean S)`` (Eq. 39),
    ``W``, ``ES``, ``VS``, ``Esp = E(sigma'(S))``, ``spE = sigma'(E(S))`` (Fig. 9.15),
    ``se_e = sqrt(V/n)`` (the SE of ``E``, hence of ``E - W``) and ``se_nwgm``, the SE of
    ``E - NWGM`` by the delta method: ``Var(O - sigma'(ES) S) / n``.
    """
    n = sums["n"]
    E = sums["O"] / n
    V = torch.clamp(sums["O2"] / n - E * E, min=0.0)
    ES = sums["S"] / n
    VS = torch.clamp(sums["S2"] / n - ES * ES, min=0.0)
    cov = sums["OS"] / n - E * ES
    nw = torch.sigmoid(ES)
    g = nw * (1.0 - nw)
    var_d = torch.clamp(V - 2.0 * g * cov + g * g * VS, min=0.0)
    return {
        "E": E,
        "V": V,
        "NWGM": nw,
        "W": W,
        "ES": ES,
        "VS": VS,
        "Esp": sums["dsig"] / n,
        "spE": g,
        "se_e": torch.sqrt(V / n),
        "se_nwgm": torch.sqrt(var_d / n),
    }


def connected_w_removed(
    U_i: torch.Tensor, w_ij: torch.Tensor, p_j: float, W_j: torch.Tensor, mode: str = "dropout"
) -> torch.Tensor:
    """Eq. 121: ``W_ij`` = deterministic activation of unit ``i`` with unit ``j`` removed from its
    inputs, ``sigma(U_i - w_ij * mean_gate(W_j))`` (exact, not the Taylor form of Eq. 122)."""
    return torch.sigmoid(U_i - w_ij * mean_gate(W_j, p_j, mode))


def mc_input_stats(
    weights,
    biases,
    x: torch.Tensor,
    keeps: list[float],
    n: int,
    gen: torch.Generator,
    mode: str = "dropout",
    chunk: int = 0,
    pairs: dict | None = None,
    quantiles: tuple[float, ...] = (),
) -> dict:
    """Monte Carlo statistics of one input ``x`` ``[d_0]`` over ``n`` mask samples.

    Runs :func:`mc_forward` on chunks of ``chunk`` samples (0: all at once) and returns
    ``{"units": [unit_stats per layer], "pairs": {...}, "quantiles": [...] }``.
    ``pairs`` maps a name to ``(layer_a, idx_a, layer_b, idx_b)`` (0-based indices into the
    list of layers of :func:`mc_forward`); the result holds ``E(O^a_i O^b_j)`` per pair.
    ``quantiles`` (needs a single chunk): per unit and layer, the sample quantiles of ``O``.
    """
    dims = [w.shape[1] for w in weights]
    dtype, device = weights[0].dtype, weights[0].device
    chunk = n if chunk <= 0 else min(chunk, n)
    if quantiles and chunk < n:
        raise ValueError("quantiles need all samples in one chunk")
    sums = [None] * len(weights)
    psum = {k: None for k in (pairs or {})}
    qs = []
    done = 0
    while done < n:
        c = min(chunk, n - done)
        masks = draw_masks(gen, c, dims, keeps, dtype, device)
        S, O = mc_forward(weights, biases, x, masks, mode)
        sums = [add_sums(a, unit_sums(s, o)) for a, s, o in zip(sums, S, O)]
        for k, (la, ia, lb, ib) in (pairs or {}).items():
            v = (O[la][:, ia] * O[lb][:, ib]).sum(0)
            psum[k] = v if psum[k] is None else psum[k] + v
        if quantiles:
            q = torch.tensor(quantiles, dtype=dtype, device=device)
            qs = [torch.quantile(o, q, dim=0) for o in O]
        done += c
    _, W = det_forward(weights, biases, x[None, :], keeps, mode)
    units = [unit_stats(s, w[0]) for s, w in zip(sums, W)]
    return {"units": units, "pairs": {k: v / n for k, v in psum.items()}, "quantiles": qs}


def seeded_generator(key: int, stream: int, device="cpu") -> torch.Generator:
    """A generator whose seed depends on a run's key and a stream number only."""
    g = torch.Generator(device=device)
    g.manual_seed((int(key) * 1_000_003 + int(stream) * 7_919) % (2**62))
    return g


def mc_cost(n_samples: int, widths: list[int]) -> float:
    """Multiply-adds of one input's Monte Carlo pass: ``n * sum n_h n_{h+1}``."""
    return float(n_samples) * math.fsum(a * b for a, b in itertools.pairwise(widths))
