"""Mean-field theory of deep dropout networks vs simulations of finite random networks.

Paper: ../shared/seeds/000 (Huang et al.), Section 3:
Eq. (1) network, Eq. (2) q-map, Eqs. (3)-(4) c-map, Eq. (5)/(10) chi_1, chi_2 and
Eq. (6) depth scale.  Every function of sigprop.theory.meanfield is compared with
a torch simulation of wide fully connected networks

    z^l = (1/rho) W^l (p^l * phi(z^{l-1})) + b^l,   W ~ N(0, sw/N), b ~ N(0, sb),

with an independent Bernoulli(rho) keep-mask per layer and per input (so the two
inputs of a pair have independent masks), started from Gaussian layer-0
pre-activations of prescribed length q0 and correlation c0.

Statistics.  N = 2000 units, S = 4 independent networks (seeds), 30 layers.
All cases of the table below run through the same standard-normal matrices
(scaled by sqrt(sw/N) per case), so one matrix multiplication per layer serves
every case; each case is then an exact sample of its own ensemble.  The
finite-width fluctuation of a layer average of N units is ~sqrt(2/N) = 3.2%
relative; it is common to all inputs of one network (same W, b), so it averages
only over networks and layers, not over inputs.  Each tolerance below is stated
with the noise estimate it is based on; all are >= 3 of those standard errors.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch

from sigprop.nets.activations import get as torch_activation
from sigprop.theory import meanfield as M

# torch emits this once, from its own forward-AD decompositions (torch.func.jvp)
pytestmark = pytest.mark.filterwarnings(
    "ignore:`torch.jit.script` is deprecated:DeprecationWarning"
)

N = 2000
SEEDS = (11, 12, 13, 14)
DEPTH = 30
NQ = 8  # single inputs started off the fixed point (q trajectory)
P = 16  # pairs per group
Q0 = 2.0  # initial length of the single inputs
DELTA = 0.05  # offset of the B pairs below c* (geometric-rate measurement)

SB = 0.05
CASES = [("tanh", sw, SB, rho) for sw in (1.0, 2.0, 3.0) for rho in (1.0, 0.98, 0.9)]
CASES += [("relu", 1.5, SB, 0.9), ("erf", 2.0, SB, 1.0)]
EOC_CASE = ("tanh", float(M.edge_of_chaos_sigma_w2(SB, 0.9, "tanh")), SB, 0.9)
ALL_CASES = CASES + [EOC_CASE]


def _ids(cases):
    return [f"{a}-sw{sw:.3g}-rho{r}" for a, sw, _, r in cases]


# --------------------------------------------------------------------------- simulation


def _layout():
    """Column layout of one case: Q singles | a | b (c*) | b' (c* - DELTA) | b'' (c_far)."""
    sl = {"q": slice(0, NQ)}
    for k, name in enumerate(("a", "b", "b1", "b2")):
        sl[name] = slice(NQ + k * P, NQ + (k + 1) * P)
    return sl, NQ + 4 * P


def _simulate_all(cases, theory, seeds=SEEDS):
    """Run every case for every seed; returns per-case arrays [seed, layer, ...].

    Batch-first layout: the state of a case is Z of shape (columns, N), so that
    the slices of the shared product are contiguous."""
    sl, ncol = _layout()
    dt = torch.float32
    width = ncol + P  # rows of one case in the shared product: inputs + tangents
    out = {c: {k: [] for k in ("qcol", "cA", "cB", "cC", "jvp")} for c in cases}
    buf = torch.empty(width * len(cases), N, dtype=dt)
    for seed in seeds:
        g = torch.Generator().manual_seed(seed)

        def rn(*shape):
            return torch.randn(*shape, generator=g, dtype=dt)  # noqa: B023 (used in this pass)

        state = {}
        for c in cases:
            act, sw, sb, rho = c
            qs, cs, cfar = theory[c]["q_star"], theory[c]["c_star"], theory[c]["c_far"]
            ea, xi = rn(P, N), rn(P, N)

            def zb(cc, qs=qs, ea=ea, xi=xi):
                return float(np.sqrt(qs)) * (cc * ea + float(np.sqrt(max(0.0, 1 - cc * cc))) * xi)

            Z = torch.cat(
                [
                    float(np.sqrt(Q0)) * rn(NQ, N),
                    float(np.sqrt(qs)) * ea,
                    zb(cs),
                    zb(cs - DELTA),
                    zb(cfar),
                ],
                0,
            )
            state[c] = {"Z": Z, "V": rn(P, N), "rec": {k: [] for k in out[c]}}
            _record(state[c], sl, np.nan)
        for _ in range(DEPTH):
            G = rn(N, N)
            gb = rn(1, N)
            for k, c in enumerate(cases):
                act, sw, sb, rho = c
                phi = torch_activation(act)
                st = state[c]
                scale = float(np.sqrt(sw / N)) / rho
                rows = buf[k * width : (k + 1) * width]
                if rho < 1:
                    m = (torch.rand(NQ + 2 * P, N, generator=g) < rho).to(dt) * scale
                    mb = m[NQ + P :]
                    mask = torch.cat([m[: NQ + P], mb, mb, mb], 0)  # b, b', b'' share masks
                    ma = m[NQ : NQ + P]
                else:
                    mask = ma = torch.tensor(scale, dtype=dt)
                torch.mul(phi(st["Z"]), mask, out=rows[:ncol])
                # Jacobian-vector product of the activation at the a inputs, mask held fixed
                _, dy = torch.func.jvp(phi, (st["Z"][sl["a"]],), (st["V"],))
                torch.mul(dy, ma, out=rows[ncol:])
            res = buf @ G.T
            for k, c in enumerate(cases):
                st = state[c]
                rows = res[k * width : (k + 1) * width]
                st["Z"] = rows[:ncol] + float(np.sqrt(c[2])) * gb
                V = rows[ncol:]
                ratio = ((V * V).sum() / (st["V"] * st["V"]).sum()).item()
                st["V"] = V / V.norm(dim=1, keepdim=True) * float(np.sqrt(N))
                _record(st, sl, ratio)
        for c in cases:
            for k, v in state[c]["rec"].items():
                out[c][k].append(np.array(v))
    return {c: {k: np.stack(v) for k, v in d.items()} for c, d in out.items()}


def _record(st, sl, ratio):
    # float32 sums over N = 2000 units: relative rounding ~1e-6, far below the
    # finite-width noise (~1e-2) of every statistic
    Z = st["Z"]
    n2 = (Z * Z).sum(1)
    rec = st["rec"]
    rec["qcol"].append((n2 / N).double().numpy())
    za = Z[sl["a"]]

    def corr(name):
        return ((za * Z[sl[name]]).sum(1) / torch.sqrt(n2[sl["a"]] * n2[sl[name]])).double().numpy()

    rec["cA"].append(corr("b"))
    rec["cB"].append(corr("b1"))
    rec["cC"].append(corr("b2"))
    rec["jvp"].append(ratio)


@pytest.fixture(scope="module")
def theory():
    th = {}
    for c in ALL_CASES:
        act, sw, sb, rho = c
        s = M.fixed_point_summary(sw, sb, rho, act)
        d = {k: (v.item() if v.dtype.kind == "f" else str(v)) for k, v in s.items()}
        d["c_far"] = 0.2 if d["c_star"] > 0.5 else 0.9
        th[c] = d
    return th


@pytest.fixture(scope="module")
def sims(theory):
    # One intra-op thread: ~1.6x slower on 2 idle cores (15 s instead of 9 s), but
    # OpenMP threads spinning at barriers made runs 4x slower when the machine
    # was shared with another job.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        t0 = time.perf_counter()
        res = _simulate_all(ALL_CASES, theory)
        res["_seconds"] = time.perf_counter() - t0
    finally:
        torch.set_num_threads(threads)
    return res


# --------------------------------------------------------------------------- q-map, q*


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_q_map_one_step(case, sims):
    """Eq. (2): q^l measured vs q_map(q^{l-1} measured), every column, layer, seed.

    One-step noise ~sqrt(2/N) = 3.2% per network and layer (common to its
    columns); averaged over S * DEPTH = 120 independent (network, layer) draws the
    standard error is ~0.3%.  Tolerance 1% (largest deviation seen over 4 x 4
    seeds x 12 cases: 0.35%)."""
    act, sw, sb, rho = case
    q = sims[case]["qcol"]  # [seed, layer, col]
    pred = M.q_map(q[:, :-1], sw, sb, rho, act)
    ratio = (q[:, 1:] / pred).mean()
    assert abs(ratio - 1) < 0.01, ratio


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_q_trajectory_and_q_star(case, sims, theory):
    """Eq. (2) iterated: measured q^l of inputs started at q0 = 2 follows
    trajectory(); inputs started at q* stay at q*.

    Fluctuations accumulate along the trajectory: per network ~3.2% per layer
    (common W, b) plus the dropout-mask noise of the 8 inputs, damped by the slope
    s of the map: std ~3.2% / sqrt(1 - s^2) per network, i.e. ~3% for tanh/erf
    (s <= 0.6) and ~4.5% for the relu case (s = 0.83, relu^2 has kurtosis 6, so the
    mask noise is larger).  Over S = 4 networks: 1.5% (tanh/erf) and 2.3% (relu)
    per layer.  Tolerances 8% and 15% on every layer (>= 5 sigma, enough for the
    maximum over 31 correlated layers).  q*: mean over layers 5..30 and 4
    networks of inputs started at q* (correlation time ~1/(1 - s^2) <= 3.3 layers,
    so ~30 independent draws): ~1% standard error; tolerance 3%."""
    act, sw, sb, rho = case
    sl, _ = _layout()
    qcol = sims[case]["qcol"]
    qt, _ = M.trajectory(Q0, 0.5, DEPTH, sw, sb, rho, act)
    meas = qcol[:, :, sl["q"]].mean(axis=(0, 2))
    np.testing.assert_allclose(meas, qt, rtol=0.15 if act == "relu" else 0.08)
    qs = theory[case]["q_star"]
    assert abs(qt[-1] / qs - 1) < 0.05  # the theory trajectory itself reaches q*
    stat = qcol[:, 5:, NQ : NQ + 2 * P].mean()
    assert abs(stat / qs - 1) < 0.03, (stat, qs)


# --------------------------------------------------------------------------- c-map, c*


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_c_map_one_step(case, sims):
    """Eqs. (3)-(4): c^l measured vs c_map(c^{l-1}, q^{l-1}) for the pairs.

    A pair correlation estimated from N units fluctuates by ~(1 - c^2)/sqrt(N)
    <= 0.022 per layer; the one-step residuals of 3 groups x 16 pairs x 29 layers
    x 4 networks are partly correlated (shared W), conservatively ~100 effective
    draws: standard error <= 0.002.  Tolerance 0.006 on the mean residual
    (largest seen over 4 x 4 seeds x 12 cases: 0.0015)."""
    act, sw, sb, rho = case
    sl, _ = _layout()
    sim = sims[case]
    qcol = sim["qcol"]
    qa = qcol[:, :, sl["a"]]
    res = []
    for grp, name in (("cA", "b"), ("cB", "b1"), ("cC", "b2")):
        c = sim[grp]
        qpair = 0.5 * (qa + qcol[:, :, sl[name]])
        pred = M.c_map(c[:, :-1], qpair[:, :-1], sw, sb, rho, act)
        res.append(c[:, 1:] - pred)
    resid = np.mean(res)
    assert abs(resid) < 0.006, resid


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_c_trajectory_and_c_star(case, sims, theory):
    """c^l of pairs started at (q*, c_far) follows trajectory(); pairs started at
    (q*, c*) stay at c*; and where the theory has converged (|c^30 - c*| < 1e-3)
    the far pairs have converged to c* as well.

    Pair noise ~(1 - c^2)/sqrt(N) <= 0.022 per layer, accumulating like an AR(1)
    process with coefficient chi2 (std <= 0.022/sqrt(1 - chi2^2) <= 0.08 for
    chi2 = 0.96 per pair); the 16 pairs of one network share W, so the network
    average has std ~0.02 at worst and the 4-network mean ~0.01: tolerance 0.04
    per layer on the trajectory.  Stationary mean over layers 5..30: per-network
    std measured 0.011 at worst (chaotic rho = 1 cases, correlation time
    (1 + chi2)/(1 - chi2) ~ 18 layers), no detectable finite-width bias (< 0.002),
    so the 4-network mean has standard error <= 0.006: tolerance 0.025.  Converged
    end point (average of the last 5 layers): tolerance 0.03."""
    act, sw, sb, rho = case
    sim, th = sims[case], theory[case]
    cs = th["c_star"]
    _, ct = M.trajectory(th["q_star"], th["c_far"], DEPTH, sw, sb, rho, act)
    meas = sim["cC"].mean(axis=(0, 2))
    np.testing.assert_allclose(meas, ct, atol=0.04, rtol=0)
    stat = sim["cA"][:, 5:].mean()
    assert abs(stat - cs) < 0.025, (stat, cs)
    if abs(ct[-1] - cs) < 1e-3:
        assert abs(sim["cC"][:, -5:].mean() - cs) < 0.03
    if rho < 1:
        # dropout: c* < 1 in both phases, and the simulation sees it
        assert cs < 0.99
        assert 1 - stat > 0.03
    elif th["phase"] == "ordered":
        assert cs == 1.0
    else:
        assert cs < 0.9 and 1 - stat > 0.1


def test_c_star_cases_cover_the_claims(theory):
    """The case table contains c* < 1 at rho < 1 in the ordered phase, and c* < 1
    for tanh at rho = 1 in the chaotic phase (000 text below Eq. 4)."""
    ordered_dropout = [c for c in CASES if c[3] < 1 and theory[c]["phase"] == "ordered"]
    chaotic_plain = [
        c for c in CASES if c[0] == "tanh" and c[3] == 1 and theory[c]["phase"] == "chaotic"
    ]
    assert ordered_dropout and all(theory[c]["c_star"] < 1 for c in ordered_dropout)
    assert chaotic_plain and all(theory[c]["c_star"] < 1 for c in chaotic_plain)


# --------------------------------------------------------------------------- chi1, chi2, xi


@pytest.mark.parametrize("case", ALL_CASES, ids=_ids(ALL_CASES))
def test_chi1_jacobian_growth(case, sims, theory):
    """Eq. (10): chi1 = per-layer growth of ||J v||^2, J the layer Jacobian with
    the dropout mask held fixed: J = (1/rho) W diag(p) diag(phi'(z)), and
    E[p / rho^2] = 1/rho gives the 1/rho of Eq. (10).

    Per (network, layer, tangent) the ratio has relative std ~sqrt(2/N) times
    a kurtosis factor of phi'^2 p / rho (<= ~3); 16 tangents x 30 layers x 4
    networks -> standard error < 0.4%.  Tolerance 2% (the first layers, before q
    settles, are excluded).  The edge-of-chaos case must give 1."""
    act, sw, sb, rho = case
    meas = sims[case]["jvp"][:, 2:].mean()
    x1 = theory[case]["chi1"]
    assert abs(meas / x1 - 1) < 0.02, (meas, x1)
    if case == EOC_CASE:
        assert abs(x1 - 1) < 1e-10
        assert abs(meas - 1) < 0.02


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_chi2_from_geometric_convergence_of_c(case, sims, theory):
    """Eq. (6): |c^l - c*| ~ chi2^l.  Measured from D^l = c_A^l - c_B^l, pairs
    started at c* and c* - 0.05 with common random numbers (same a input, same
    noise direction and mask for b and b'), so D^l -> 0 at the rate chi2 and the
    finite-width bias of c* cancels.  The rate is exp(slope of a least-squares fit
    of log D^l) over the layers where the theory predicts D^l / D^0 >= 0.15.

    Nonlinearity of the c-map at the finite offset: the same fit on the theory
    trajectory differs from chi2 by < 0.01 (asserted; 0.006 for relu, whose
    c-map has a (1 - c)^{3/2} term, < 0.002 for tanh/erf).  Noise: D has an absolute
    floor ~0.003/sqrt(S) once b, b' decorrelate, i.e. up to 10-20% of D at the
    end of the window, giving ~1-2% on the rate; tolerance 0.03 absolute on chi2
    (and hence on xi2 = 1/|ln chi2| through the same numbers)."""
    act, sw, sb, rho = case
    th = theory[case]
    cs, x2 = th["c_star"], th["chi2"]
    _, cB = M.trajectory(th["q_star"], cs - DELTA, DEPTH, sw, sb, rho, act)
    d_th = cs - cB
    K = int(np.max(np.flatnonzero(d_th / d_th[0] >= 0.15)))
    assert K >= 2
    layers = np.arange(K + 1)
    rate_th = np.exp(np.polyfit(layers, np.log(d_th[: K + 1]), 1)[0])
    assert abs(rate_th - x2) < 0.01, (rate_th, x2)
    d = (sims[case]["cA"] - sims[case]["cB"]).mean(axis=(0, 2))[: K + 1]
    assert np.all(d > 0)
    rate = np.exp(np.polyfit(layers, np.log(d), 1)[0])
    assert abs(rate - x2) < 0.03, (rate, x2)
    # xi2 = 1/|ln chi2| is monotone in chi2 on (0, 1): the measured depth scale lies
    # within the image of the same interval
    xi_meas = 1 / abs(np.log(rate))
    assert th["xi2"] == pytest.approx(1 / abs(np.log(x2)), rel=1e-12)
    assert 1 / abs(np.log(x2 - 0.03)) <= xi_meas <= 1 / abs(np.log(min(x2 + 0.03, 0.999)))


def test_simulation_ran_all_cases(sims):
    # all 12 cases x 4 networks x 30 layers share one matrix product per layer
    # (~9 s on 2 idle cores); the duration is reported, not asserted, since the
    # test machine may be shared
    print(f"simulation: {sims['_seconds']:.1f} s")
    for c in ALL_CASES:
        assert sims[c]["qcol"].shape == (len(SEEDS), DEPTH + 1, _layout()[1])


# --------------------------------------------------------------------------- pure theory checks


def test_summary_relations_and_vectorization():
    sw = np.linspace(1.0, 4.0, 200)
    rho = np.array([[1.0], [0.98], [0.9]])
    t0 = time.perf_counter()
    s = M.fixed_point_summary(sw, SB, rho, "tanh")
    assert time.perf_counter() - t0 < 2.0
    for k in ("q_star", "c_star", "chi1", "chi2", "xi1", "xi2", "phase"):
        assert s[k].shape == (3, 200)
    # chi2 = chi1 where c* = 1 (rho = 1, ordered); c* < 1 for every rho < 1
    one = s["c_star"] == 1
    np.testing.assert_allclose(s["chi2"][one], s["chi1"][one], rtol=1e-14)
    assert np.all(s["c_star"][1:] < 1)
    assert np.all(one[0] == (s["chi1"][0] <= 1))
    np.testing.assert_array_equal(s["phase"] == "ordered", s["chi1"] < 1)
    np.testing.assert_allclose(s["xi1"], 1 / np.abs(np.log(s["chi1"])))
    # the fixed points are fixed points
    q, c = s["q_star"], s["c_star"]
    np.testing.assert_allclose(M.q_map(q, sw, SB, rho, "tanh"), q, rtol=1e-13)
    np.testing.assert_allclose(M.c_map(c, q, sw, SB, rho, "tanh"), c, atol=1e-12)
    # scalar in, scalar out; functions agree with the summary
    assert isinstance(M.q_star(2.0, SB, 0.9, "tanh"), float)
    assert M.chi2(sw[7], SB, 0.9, "tanh") == pytest.approx(s["chi2"][2, 7], rel=1e-12)
    assert M.xi2(sw[7], SB, 0.9, "tanh") == pytest.approx(s["xi2"][2, 7], rel=1e-12)


def test_c_star_against_iteration_and_criticality():
    # away from criticality plain iteration of the map converges: same answer
    sw = np.array([1.0, 2.0, 3.0, 4.0])
    rho = np.array([[1.0], [0.95], [0.7]])
    for act in ("tanh", "erf", "relu", "hard_tanh"):
        q = M.q_star(sw, SB, rho, act)
        c = M.c_star(sw, SB, rho, act, q=q)
        fin = np.isfinite(q)
        _, ct = M.trajectory(np.where(fin, q, 1.0), 0.5, 4000, sw, SB, rho, act)
        slow = (M.chi2(sw, SB, rho, act) > 0.995) | ~fin
        np.testing.assert_allclose(ct[-1][~slow], c[~slow], atol=1e-9)
    # at and near the edge of chaos (rho = 1): c* = 1 on the ordered side,
    # continuous and < 1 on the chaotic side, where iteration would need ~1/eps steps
    e = float(M.edge_of_chaos_sigma_w2(SB, 1.0, "tanh"))
    d = np.array([-1e-3, -1e-7, 0.0, 1e-9, 1e-7, 1e-5, 1e-3])
    c = M.c_star(e + d, SB, 1.0, "tanh")
    assert np.all(c[:2] == 1.0)
    # at the computed edge itself chi1 - 1 is 0 to within an ulp, and which side of it the
    # root lands on depends on the last bit (vectorized and scalar evaluation differ there):
    # c* is 1 there to the root finder's accuracy near a double root (~sqrt(eps))
    assert c[2] >= 1 - 1e-7
    assert np.all(np.diff(c[2:]) <= 0) and np.all(c[3:] < 1)
    # near criticality 1 - c* ~ 2 (chi1 - 1) / c_map''(1): linear in the distance
    r = (1 - c[5]) / (1 - c[4])
    assert 80 < r < 120
    np.testing.assert_allclose(
        M.c_map(c, M.q_star(e + d, SB, 1.0, "tanh"), e + d, SB, 1.0, "tanh"), c, atol=1e-13
    )


@pytest.mark.parametrize("act", ["tanh", "erf", "hard_tanh", "sigmoid"])
def test_c_star_below_one_iff_chaotic_at_rho_1(act):
    # rho = 1: c* < 1 exactly where chi1 > 1 (000, Eq. 5 and the text after it),
    # on a fine grid through the edge of chaos.  (Not for relu / linear, whose
    # length map diverges on the chaotic side; their scale-free c-map keeps c* = 1.
    # elu's 2-D integrals are quadrature, see the quadrature module.)
    e = float(M.edge_of_chaos_sigma_w2(0.1, 1.0, act))
    sw = e * np.linspace(0.5, 1.5, 201)
    s = M.fixed_point_summary(sw, 0.1, 1.0, act)
    clear = np.abs(s["chi1"] - 1) > 1e-9
    np.testing.assert_array_equal((s["c_star"] < 1)[clear], (s["chi1"] > 1)[clear])


def test_edge_of_chaos():
    sb = np.array([0.0, 0.05, 0.5, 2.0])
    rho = np.array([[1.0], [0.9], [0.5]])
    for act in ("tanh", "erf", "relu", "hard_tanh", "elu", "sigmoid"):
        e = M.edge_of_chaos_sigma_w2(sb, rho, act)
        assert e.shape == (3, 4)
        np.testing.assert_allclose(M.chi1(e, sb, rho, act), 1.0, atol=1e-8)
    np.testing.assert_allclose(
        M.edge_of_chaos_sigma_w2(sb, rho, "relu"), 2 * rho + 0 * sb, rtol=1e-12
    )
    np.testing.assert_allclose(
        M.edge_of_chaos_sigma_w2(sb, rho, "linear"), rho + 0 * sb, rtol=1e-12
    )
    # sigma_b2 = 0: q* = 0 on the ordered side, so chi1 = sw phi'(0)^2 / rho
    np.testing.assert_allclose(M.edge_of_chaos_sigma_w2(0.0, rho, "tanh"), rho, rtol=1e-9)
    np.testing.assert_allclose(
        M.edge_of_chaos_sigma_w2(0.0, rho, "erf"), np.pi / 4 * rho, rtol=1e-9
    )
    # Schoenholz et al. (2017), Fig. 1: tanh, sigma_b2 = 0.05 -> sigma_w2 ~ 1.76
    assert M.edge_of_chaos_sigma_w2(0.05, 1.0, "tanh") == pytest.approx(1.7610, abs=2e-4)


def test_q_star_special_cases():
    # linear: closed form sb / (1 - sw/rho) and divergence beyond rho; relu: 2 rho
    np.testing.assert_allclose(M.q_star(0.5, 0.1, 1.0, "linear"), 0.2, rtol=1e-13)
    assert M.q_star(1.2, 0.1, 1.0, "linear") == np.inf
    np.testing.assert_allclose(M.q_star(1.5, 0.05, 0.9, "relu"), 0.05 / (1 - 1.5 / 1.8), rtol=1e-13)
    assert M.q_star(2.0, 0.05, 0.9, "relu") == np.inf
    # sigma_b2 = 0 with odd phi: 0 in the ordered phase, positive beyond sw = rho
    assert M.q_star(0.8, 0.0, 1.0, "tanh") == 0.0
    q = M.q_star(1.5, 0.0, 1.0, "tanh")
    assert q > 0.1 and M.q_map(q, 1.5, 0.0, 1.0, "tanh") == pytest.approx(q, rel=1e-13)
    with pytest.raises(ValueError):
        M.q_star(1.0, 0.05, 1.5, "tanh")  # rho is a keep rate
    with pytest.raises(ValueError):
        M.q_star(1.0, 0.05, 1.0, "swish")
    q, c = M.trajectory(np.array([1.0, 2.0]), 0.3, 5, np.ones((3, 1)), SB, 0.9, "erf")
    assert q.shape == c.shape == (6, 3, 2)


def test_sigma_w2_for_chi1_hits_other_targets():
    # chi1 lines other than the edge of chaos (used by config 'derived: sigma_w2: {chi1: v}')
    t = np.array([0.5, 0.9, 1.0, 1.2, 2.0])
    for act in ("tanh", "erf", "relu", "hard_tanh"):
        sw = M.sigma_w2_for_chi1(t, 0.05, 0.9, act)
        np.testing.assert_allclose(M.chi1(sw, 0.05, 0.9, act), t, rtol=1e-9)
    np.testing.assert_allclose(M.sigma_w2_for_chi1(t, 0.1, 0.8, "relu"), 2 * 0.8 * t, rtol=1e-12)
    np.testing.assert_allclose(
        M.sigma_w2_for_chi1(1.0, 0.05, 0.9, "tanh"),
        M.edge_of_chaos_sigma_w2(0.05, 0.9, "tanh"),
        rtol=0,
    )
    with pytest.raises(ValueError, match="positive"):
        M.sigma_w2_for_chi1(0.0, 0.05, 0.9, "tanh")


# ------------------------------------------------------- a point chosen by its q* (derived rule)


@pytest.mark.parametrize(
    "act,rho,q_target", [("tanh", 1.0, 0.5), ("tanh", 0.9, 1.2), ("erf", 1.0, 2.0)]
)
def test_point_for_q_star_holds_its_length_and_chi1_in_simulated_nets(act, rho, q_target):
    """000 Eqs. 2 and 10: at the (sigma_w2, sigma_b2) solved for q* on the line chi1 = 1,
    simulated wide dropout layers keep the length q* from layer to layer and grow a random
    perturbation's squared norm by chi1 = 1 per layer (the layer Jacobian with its dropout mask
    held): each within 4 SE over 12 independent nets, whose SE resolves a 5 % offset."""
    from sigprop.theory import activations as A

    sw, sb = M.point_for_q_star(q_target, rho, act, chi1_target=1.0)
    assert np.isfinite(sb) and sb >= 0
    gen = np.random.default_rng(7)
    n, depth, nets = 1500, 4, 12
    phi, dphi = A.get(act).phi, A.get(act).dphi
    q_net, g_net = [], []
    for _ in range(nets):
        h = gen.standard_normal(n) * np.sqrt(q_target)
        q_seen, growth = [], []
        for _ in range(depth):
            w = gen.standard_normal((n, n)) * np.sqrt(sw / n)
            mask = (gen.random(n) < rho) / rho
            v = gen.standard_normal(n)
            growth.append(np.sum((w @ (mask * dphi(h) * v)) ** 2) / np.sum(v**2))
            h = w @ (mask * phi(h)) + gen.standard_normal(n) * np.sqrt(sb)
            q_seen.append(np.mean(h**2))
        q_net.append(np.mean(q_seen) / q_target)
        g_net.append(np.mean(growth))
    for x in (np.array(q_net), np.array(g_net)):
        se = x.std(ddof=1) / np.sqrt(nets)
        assert 4 * se < 0.05 and abs(x.mean() - 1) <= 4 * se, (x.mean(), se)
    assert M.chi1(sw, sb, rho, act) == pytest.approx(1.0, rel=1e-6)
    assert M.q_star(sw, sb, rho, act) == pytest.approx(q_target, rel=1e-6)
    # sigma_w2 given: only sigma_b2 solved; a sigma_w2 too large for this q* has none
    sw2, sb2 = M.point_for_q_star(q_target, rho, act, sigma_w2=0.5 * sw)
    assert sw2 == pytest.approx(0.5 * sw) and M.q_star(sw2, sb2, rho, act) == pytest.approx(
        q_target, rel=1e-6
    )
    assert np.isnan(M.point_for_q_star(q_target, rho, act, sigma_w2=50.0)[1])


def test_derived_q_star_rule_solves_both_fields_on_the_chi1_line():
    from sigprop.config.grid import derive
    from sigprop.theory import meanfield

    run = {"activation": "tanh", "keep_rate": 1.0}
    out = derive(run, {"sigma_w2": {"chi1": 1.0}, "sigma_b2": {"q_star": 0.5}})
    assert meanfield.chi1(out["sigma_w2"], out["sigma_b2"], 1.0, "tanh") == pytest.approx(1, 1e-8)
    assert meanfield.q_star(out["sigma_w2"], out["sigma_b2"], 1.0, "tanh") == pytest.approx(
        0.5, rel=1e-8
    )
    alone = derive({**run, "sigma_w2": 1.2}, {"sigma_b2": {"q_star": 0.5}})
    assert set(alone) == {"sigma_b2"}
    with pytest.raises(ValueError, match="no sigma_b2 >= 0 gives q\\* = 0.5"):
        derive({**run, "sigma_w2": 50.0}, {"sigma_b2": {"q_star": 0.5}})
