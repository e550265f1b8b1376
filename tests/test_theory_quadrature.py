"""Quadrature rules and activation expectations of sigprop.theory (000 Section 3 integrals).

Paper: ../shared/seeds/000, Eqs. (2), (3), (5), (10) and chi_2
after Eq. (6) are Gaussian integrals; here the numerical rules are checked against
closed forms (linear, erf, relu, hard_tanh, elu) and adaptive scipy quadrature (tanh).
"""

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import erf

from sigprop.theory import activations as A
from sigprop.theory import quadrature as Q

QS = np.array([0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0])
CS = np.array([-0.99, -0.5, 0.0, 0.3, 0.7, 0.9, 0.99, 0.999999, 1.0])


def _erf2(q):
    return 2 / np.pi * np.arcsin(2 * q / (1 + 2 * q))


def _derf2(q):
    return 4 / np.pi / np.sqrt(1 + 4 * q)


def _quad1(fun, q, points=()):
    """Adaptive reference for E[fun(sqrt(q) z)], split at the given z break points."""
    pts = sorted({-12.0, 12.0, *[p for p in points if -12 < p < 12]})
    tot = 0.0
    for a, b in zip(pts[:-1], pts[1:]):
        tot += quad(
            lambda z: fun(np.sqrt(q) * z) * np.exp(-z * z / 2) / np.sqrt(2 * np.pi),
            a,
            b,
            epsabs=1e-15,
            epsrel=1e-13,
            limit=400,
        )[0]
    return tot


# ------------------------------------------------------------------ 1-D


def test_linear_exact_both_rules():
    # Polynomials: Gauss-Hermite is exact; the Gaussian-weighted grid is exact to
    # exp(-2 pi^2 / h^2) < 1e-20 for h <= 0.4.
    for rule in (Q.gauss_hermite_1d, Q.gauss_expect_1d):
        np.testing.assert_allclose(rule(lambda u: u * u, QS), QS, rtol=1e-12)
        np.testing.assert_allclose(rule(lambda u: u**4, QS), 3 * QS**2, rtol=1e-12)


def test_erf_1d_grid_rule_all_q():
    # Default rule of the package: 1e-6 required, ~1e-10 achieved for q <= 50.
    np.testing.assert_allclose(Q.gauss_expect_1d(lambda u: erf(u) ** 2, QS), _erf2(QS), rtol=1e-8)
    np.testing.assert_allclose(
        Q.gauss_expect_1d(lambda u: 4 / np.pi * np.exp(-2 * u * u), QS), _derf2(QS), rtol=1e-8
    )


def test_erf_1d_gauss_hermite_where_it_converges():
    # Plain Gauss-Hermite (deg 300) meets 1e-6 only for q <~ 10 (module docstring):
    # the integrand varies on the scale 1/sqrt(q) while the nodes near 0 are
    # spaced ~pi/sqrt(2 deg).
    ok = QS <= 10
    np.testing.assert_allclose(
        Q.gauss_hermite_1d(lambda u: erf(u) ** 2, QS[ok]), _erf2(QS[ok]), rtol=1e-6
    )
    np.testing.assert_allclose(
        Q.gauss_hermite_1d(lambda u: 4 / np.pi * np.exp(-2 * u * u), QS[ok]),
        _derf2(QS[ok]),
        rtol=1e-6,
    )
    # ... and fails at q = 50, which is why it is not the default.
    bad = Q.gauss_hermite_1d(lambda u: 4 / np.pi * np.exp(-2 * u * u), 50.0)
    assert abs(bad / _derf2(50.0) - 1) > 1e-3


@pytest.mark.parametrize("q", [0.1, 1.0, 3.0, 10.0, 50.0, 100.0])
def test_tanh_1d_against_adaptive_quad(q):
    ref_phi2 = _quad1(lambda u: np.tanh(u) ** 2, q, points=(0.0,))
    ref_dphi2 = _quad1(lambda u: (1 - np.tanh(u) ** 2) ** 2, q, points=(0.0,))
    assert A.expect_phi2("tanh", q) == pytest.approx(ref_phi2, rel=1e-8)
    assert A.expect_dphi2("tanh", q) == pytest.approx(ref_dphi2, rel=1e-7)


@pytest.mark.parametrize("q", [0.05, 0.5, 2.0, 10.0])
def test_sigmoid_1d_against_adaptive_quad(q):
    # the sigmoid grid is twice as coarse as tanh's (poles twice as far): ~5e-9
    assert A.expect_phi2("sigmoid", q) == pytest.approx(
        _quad1(lambda u: A.get("sigmoid").phi(u) ** 2, q, points=(0.0,)), rel=1e-9
    )
    assert A.expect_dphi2("sigmoid", q) == pytest.approx(
        _quad1(lambda u: A.get("sigmoid").dphi(u) ** 2, q, points=(0.0,)), rel=2e-8
    )


@pytest.mark.parametrize("name", ["hard_tanh", "elu"])
@pytest.mark.parametrize("q", [0.05, 0.5, 2.0, 10.0])
def test_kinked_1d_closed_forms_against_split_quad(name, q):
    # Reference: adaptive quad split at the kinks (z = +-1/sqrt(q) for hard_tanh,
    # z = 0 for elu), where it is accurate to ~1e-13.
    a = A.get(name)
    pts = (-1 / np.sqrt(q), 1 / np.sqrt(q)) if name == "hard_tanh" else (0.0,)
    assert A.expect_phi2(name, q) == pytest.approx(
        _quad1(lambda u: a.phi(u) ** 2, q, pts), rel=1e-10
    )
    assert A.expect_dphi2(name, q) == pytest.approx(
        _quad1(lambda u: a.dphi(u) ** 2, q, pts), rel=1e-10
    )


def test_relu_1d_exact_by_symmetry():
    # relu(u)^2 + relu(-u)^2 = u^2 and both rules are symmetric with no node at 0,
    # so the kink costs nothing in 1-D.
    a = A.get("relu")
    for rule in (Q.gauss_hermite_1d, Q.gauss_expect_1d):
        np.testing.assert_allclose(rule(lambda u: a.phi(u) ** 2, QS), QS / 2, rtol=1e-12)
        np.testing.assert_allclose(rule(lambda u: a.dphi(u) ** 2, QS), 0.5, rtol=1e-12)


# ------------------------------------------------------------------ 2-D


def _erf_pp(q1, q2, c):
    k = c * np.sqrt(q1 * q2)
    return 2 / np.pi * np.arcsin(2 * k / np.sqrt((1 + 2 * q1) * (1 + 2 * q2)))


def _erf_dd(q1, q2, c):
    k = c * np.sqrt(q1 * q2)
    return 4 / np.pi / np.sqrt((1 + 2 * q1) * (1 + 2 * q2) - 4 * k * k)


def test_erf_2d_grid_rule_against_closed_form():
    q1 = QS[:, None]
    q2 = 0.6 * QS[:, None]
    c = CS[None, :]
    e = A.get("erf")
    pp = Q.gauss_expect_2d(e.phi, e.phi, q1, q2, c)
    dd = Q.gauss_expect_2d(e.dphi, e.dphi, q1, q2, c)
    assert pp.shape == dd.shape == (QS.size, CS.size)
    # absolute 1e-9 (E[phi phi] vanishes at c = 0), relative 1e-8 for the derivative
    np.testing.assert_allclose(pp, _erf_pp(q1, q2, c), rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(dd, _erf_dd(q1, q2, c), rtol=1e-8)
    # the closed forms registered in activations agree with these formulas
    np.testing.assert_allclose(
        A.expect_phiphi("erf", q1, q2, c), _erf_pp(q1, q2, c), rtol=1e-13, atol=1e-15
    )
    np.testing.assert_allclose(A.expect_dphidphi("erf", q1, q2, c), _erf_dd(q1, q2, c), rtol=1e-13)


def test_erf_2d_gauss_hermite_small_q():
    q1 = np.array([0.1, 0.5, 1.0, 2.0])[:, None]
    c = CS[None, :]
    e = A.get("erf")
    np.testing.assert_allclose(
        Q.gauss_hermite_2d(e.phi, e.phi, q1, q1, c), _erf_pp(q1, q1, c), rtol=1e-6, atol=1e-9
    )
    np.testing.assert_allclose(
        Q.gauss_hermite_2d(e.dphi, e.dphi, q1, q1, c), _erf_dd(q1, q1, c), rtol=1e-6
    )


def test_tanh_2d_grid_against_high_degree_gauss_hermite():
    # For q <= 2 Gauss-Hermite with 400 nodes per axis is converged to ~1e-13
    # (it is for erf, whose strip of analyticity is comparable), an independent
    # reference for the grid rule.
    t = A.get("tanh")
    q1 = np.array([0.3, 1.0, 2.0])[:, None]
    q2 = np.array([0.5, 1.5, 1.0])[:, None]
    c = np.array([-0.8, 0.0, 0.5, 0.95, 1.0])[None, :]
    for f in (t.phi, t.dphi):
        ref = Q.gauss_hermite_2d(f, f, q1, q2, c, deg=400)
        np.testing.assert_allclose(Q.gauss_expect_2d(f, f, q1, q2, c), ref, rtol=1e-9, atol=1e-12)


def test_2d_collapses_to_1d_at_c_equal_1():
    # The property the c-map relies on to keep c = 1 an exact fixed point at rho = 1.
    t = A.get("tanh")
    q = np.array([0.01, 0.3, 1.0, 4.0, 30.0])
    np.testing.assert_allclose(
        Q.gauss_expect_2d(t.phi, t.phi, q, q, 1.0),
        Q.gauss_expect_1d(lambda u: t.phi(u) ** 2, q),
        rtol=1e-14,
    )
    np.testing.assert_allclose(
        A.expect_phiphi("tanh", q, q, 1.0), A.expect_phi2("tanh", q), rtol=1e-14
    )


def test_relu_2d_uniform_grid_is_only_second_order():
    # The uniform grid (method='uniform') does not follow the kink on the line
    # c z1 + s z2 = 0: the error is O(h^2) instead of spectral, ~1e-3 of the
    # scale sqrt(q1 q2) at the default spacing.  This is why activations with
    # breakpoints use the breakpoint rule by default (next tests).
    r = A.get("relu")
    q1 = np.array([0.5, 2.0, 10.0])[:, None]
    c = CS[None, :]
    exact = A.expect_phiphi("relu", q1, q1, c)
    approx = A.expect_phiphi("relu", q1, q1, c, closed_form=False, method="uniform")
    np.testing.assert_allclose(approx / q1, exact / q1, atol=5e-3)
    assert np.max(np.abs(approx - exact) / q1) > 1e-5
    # ... and the error falls at least like h^2 when the spacing is refined 2x.
    qq, cc = 1.0, 0.3
    e1 = abs(
        Q.gauss_expect_2d(r.phi, r.phi, qq, qq, cc, h=0.2) - A.expect_phiphi("relu", qq, qq, cc)
    )
    e2 = abs(
        Q.gauss_expect_2d(r.phi, r.phi, qq, qq, cc, h=0.1) - A.expect_phiphi("relu", qq, qq, cc)
    )
    assert e2 < e1 / 3.0
    # arc-cosine closed forms: c = 1 gives the 1-D values, c = 0 the product of means
    np.testing.assert_allclose(A.expect_phiphi("relu", 2.0, 2.0, 1.0), 1.0, rtol=1e-15)
    np.testing.assert_allclose(
        A.expect_phiphi("relu", 2.0, 3.0, 0.0), np.sqrt(6.0) / (2 * np.pi), rtol=1e-15
    )
    np.testing.assert_allclose(
        A.expect_dphidphi("relu", 2.0, 3.0, [0.0, 1.0, -1.0]), [0.25, 0.5, 0.0], atol=1e-15
    )


# Grid of the acceptance check for the breakpoint rule: q1, q2 in [0.1, 50],
# c in [-0.99, 0.99] (broadcast to 7 x 7 x 9 elements).
QG = np.array([0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 50.0])
CG = np.array([-0.99, -0.9, -0.5, -0.2, 0.0, 0.3, 0.7, 0.9, 0.99])
Q1G, Q2G, CGG = QG[:, None, None], QG[None, :, None], CG[None, None, :]


@pytest.mark.parametrize("name", ["relu", "hard_tanh", "elu"])
def test_breakpoint_rule_1d_against_closed_forms(name):
    # Default quadrature for activations with breakpoints: composite
    # Gauss-Legendre split at k / sqrt(q).  Measured max relative error over
    # q in [0.01, 100]: relu 3e-14 / 1e-15, hard_tanh 2e-14 / 2e-16,
    # elu 4e-14 / 2e-15 (E[phi^2] / E[phi'^2]).
    q = np.concatenate([QS, [100.0]])
    np.testing.assert_allclose(
        A.expect_phi2(name, q, closed_form=False), A.expect_phi2(name, q), rtol=1e-12
    )
    np.testing.assert_allclose(
        A.expect_dphi2(name, q, closed_form=False), A.expect_dphi2(name, q), rtol=1e-12
    )


@pytest.mark.parametrize("name", ["relu", "hard_tanh"])
def test_breakpoint_rule_2d_against_closed_forms(name):
    # relu: arc-cosine kernels; hard_tanh: the Price's-theorem forms.  Measured
    # over the 7 x 7 x 9 grid: relu E[phi phi] 1.3e-11 relative (2.8e-14 of the
    # scale sqrt(E[phi(u1)^2] E[phi(u2)^2])), E[phi' phi'] 4.4e-12 relative;
    # hard_tanh 9.2e-12 of the scale (E[phi phi] vanishes at c = 0), E[phi' phi']
    # 5.0e-12 relative.  The acceptance criterion is 1e-6; the uniform grid is
    # off by 4e-3 (E[phi phi], of the scale) and 0.6 / 0.17 (E[phi' phi']).
    pp = A.expect_phiphi(name, Q1G, Q2G, CGG, closed_form=False)
    dd = A.expect_dphidphi(name, Q1G, Q2G, CGG, closed_form=False)
    assert pp.shape == dd.shape == (QG.size, QG.size, CG.size)
    scale = np.sqrt(A.expect_phi2(name, Q1G) * A.expect_phi2(name, Q2G))
    exact_pp = A.expect_phiphi(name, Q1G, Q2G, CGG)
    np.testing.assert_allclose(pp / scale, exact_pp / scale, rtol=1e-9, atol=1e-10)
    nz = np.broadcast_to(exact_pp != 0, pp.shape)  # hard_tanh: 0 at c = 0 (odd phi)
    assert np.max(np.abs(pp[nz] / exact_pp[nz] - 1)) < 1e-9
    np.testing.assert_allclose(dd, A.expect_dphidphi(name, Q1G, Q2G, CGG), rtol=1e-9)


def _elu_2d_reference(f, q1, q2, c):
    """Adaptive nested scipy quad of E[f(u1) f(u2)], inner split at the kink of
    f(u2) (z2 = -c z1 / s), outer at the kink of f(u1) (z1 = 0)."""
    from scipy.stats import norm

    s = np.sqrt(1 - c * c)

    def inner(z1):
        zk = -c * z1 / s
        pts = sorted({-12.0, 12.0, *([zk] if abs(zk) < 12 else [])})
        return sum(
            quad(
                lambda z2: f(np.sqrt(q2) * (c * z1 + s * z2)) * norm.pdf(z2),
                a,
                b,
                epsabs=1e-15,
                epsrel=1e-13,
                limit=200,
            )[0]
            for a, b in zip(pts[:-1], pts[1:])
        )

    return sum(
        quad(
            lambda z1: f(np.sqrt(q1) * z1) * norm.pdf(z1) * inner(z1),
            a,
            b,
            epsabs=1e-14,
            epsrel=1e-12,
            limit=200,
        )[0]
        for a, b in ((-12.0, 0.0), (0.0, 12.0))
    )


@pytest.mark.parametrize(
    "q1,q2,c", [(0.5, 0.5, 0.3), (2.0, 1.0, -0.7), (10.0, 10.0, 0.9), (50.0, 20.0, 0.99)]
)
def test_elu_2d_breakpoint_rule_against_adaptive_reference(q1, q2, c):
    # elu has no 2-D closed form.  Measured against the nested adaptive
    # reference at these points: <= 2.5e-15 relative for both E[phi phi] and
    # E[phi' phi'] (the uniform grid: 2e-5 / 5e-3).
    e = A.get("elu")
    for f, expect in ((e.phi, A.expect_phiphi), (e.dphi, A.expect_dphidphi)):
        assert expect("elu", q1, q2, c) == pytest.approx(_elu_2d_reference(f, q1, q2, c), rel=1e-9)


@pytest.mark.parametrize("name", ["relu", "hard_tanh", "elu"])
def test_breakpoint_rule_2d_equals_1d_at_c_equal_1(name):
    # The quadrature c-map relies on this (elu: q_aa' by the 1-D rule, q_ab' by
    # the 2-D one): at c = 1, q1 = q2 the two rules agree bit for bit.
    q = np.array([0.0, 0.01, 0.3, 1.0, 4.0, 30.0, 1e4, 1e100])
    np.testing.assert_array_equal(
        A.expect_phiphi(name, q, q, 1.0, closed_form=False),
        A.expect_phi2(name, q, closed_form=False),
    )
    np.testing.assert_array_equal(
        A.expect_dphidphi(name, q, q, 1.0, closed_form=False),
        A.expect_dphi2(name, q, closed_form=False),
    )
    # and c -> 1, c = -1 join continuously / match the mirrored 1-D integral
    a = A.get(name)
    qq = np.array([0.3, 4.0])
    near = A.expect_phiphi(name, qq, 2 * qq, 1 - 1e-10, closed_form=False)
    at = A.expect_phiphi(name, qq, 2 * qq, 1.0, closed_form=False)
    np.testing.assert_allclose(near, at, rtol=1e-6)
    minus = A.expect_phiphi(name, qq, 2 * qq, -1.0, closed_form=False)
    ref = [
        _quad1(
            lambda u, r=np.sqrt(2): a.phi(u) * a.phi(-r * u),  # noqa: B008
            v,
            points=sorted(
                {k / np.sqrt(v) for k in a.breakpoints}
                | {-k / np.sqrt(2 * v) for k in a.breakpoints}
            ),
        )
        for v in qq
    ]
    np.testing.assert_allclose(minus, ref, rtol=1e-10)


def test_breakpoint_rule_edge_cases():
    # q = 0 (all mass at u = 0), c = 0 (independent), unequal q, broadcasting.
    r = A.get("relu")
    h = A.get("hard_tanh")
    assert Q.breakpoint_expect_1d(lambda u: r.phi(u) ** 2, 0.0, [0.0]) == 0.0
    out = Q.breakpoint_expect_2d(
        h.dphi,
        h.dphi,
        np.ones((4, 1, 1)),
        np.ones((1, 3, 1)),
        np.array([0.0, 0.5]),
        [-1.0, 1.0],
        [-1.0, 1.0],
    )
    assert out.shape == (4, 3, 2)
    np.testing.assert_allclose(out[..., 0], erf(1 / np.sqrt(2)) ** 2, rtol=1e-12)
    np.testing.assert_allclose(
        A.expect_dphidphi("hard_tanh", 0.0, [0.0, 1.0], 0.3, closed_form=False),
        [1.0, erf(1 / np.sqrt(2))],
        rtol=1e-12,
    )
    # no breakpoints: a plain composite Gauss-Legendre rule
    assert Q.breakpoint_expect_1d(lambda u: u**4, 2.0) == pytest.approx(12.0, rel=1e-12)
    with pytest.raises(ValueError):
        A.expect_phi2("relu", 1.0, closed_form=False, method="simpson")


def _hard_tanh_pp_reference(q1, q2, c):
    """E[clip(u1) clip(u2)] by adaptive quad over z1 of clip(u1) E[clip(u2) | z1],
    the conditional mean of a clipped Gaussian in closed form; split at the kinks."""
    from scipy.stats import norm

    s = np.sqrt(1 - c * c)

    def cond(z1):
        m, sig = np.sqrt(q2) * c * z1, np.sqrt(q2) * s
        al, be = (1 - m) / sig, (-1 - m) / sig
        return (
            -norm.cdf(be)
            + norm.sf(al)
            + m * (norm.cdf(al) - norm.cdf(be))
            + sig * (norm.pdf(be) - norm.pdf(al))
        )

    a = 1 / np.sqrt(q1)
    f = lambda z: norm.pdf(z) * np.clip(np.sqrt(q1) * z, -1, 1) * cond(z)  # noqa: E731
    pts = [-12, -a, a, 12]
    return sum(
        quad(f, pts[i], pts[i + 1], epsabs=1e-15, epsrel=1e-13, limit=400)[0] for i in range(3)
    )


@pytest.mark.parametrize("q1,q2", [(0.05, 0.05), (0.7, 0.7), (3.0, 1.8), (30.0, 30.0)])
def test_hard_tanh_2d_semi_analytic(q1, q2):
    # Price's-theorem forms (activations module) against an independent adaptive
    # reference (1e-9: the reference's own tolerance is ~1e-13) and, for the
    # derivative, the bivariate-normal rectangle probability P(|u1| < 1, |u2| < 1).
    from scipy.stats import multivariate_normal

    for c in (-0.9, -0.2, 0.3, 0.8, 0.99, 0.99999):
        assert A.expect_phiphi("hard_tanh", q1, q2, c) == pytest.approx(
            _hard_tanh_pp_reference(q1, q2, c), abs=1e-9
        )
    c = 0.6
    k = c * np.sqrt(q1 * q2)
    mvn = multivariate_normal(mean=[0, 0], cov=[[q1, k], [k, q2]])
    rect = mvn.cdf([1, 1]) - mvn.cdf([1, -1]) - mvn.cdf([-1, 1]) + mvn.cdf([-1, -1])
    assert A.expect_dphidphi("hard_tanh", q1, q2, c) == pytest.approx(rect, abs=1e-7)
    # c = 1, q1 = q2: the 1-D closed forms
    np.testing.assert_allclose(
        A.expect_phiphi("hard_tanh", q1, q1, 1.0), A.expect_phi2("hard_tanh", q1), rtol=1e-11
    )
    np.testing.assert_allclose(
        A.expect_dphidphi("hard_tanh", q1, q1, 1.0), A.expect_dphi2("hard_tanh", q1), rtol=1e-11
    )
    # the grid rule converges to it only algebraically (jumps/kinks): 1e-2 / 3e-3
    h = A.get("hard_tanh")
    assert (
        abs(
            Q.gauss_expect_2d(h.phi, h.phi, q1, q2, 0.5) - A.expect_phiphi("hard_tanh", q1, q2, 0.5)
        )
        < 3e-3
    )
    assert (
        abs(
            Q.gauss_expect_2d(h.dphi, h.dphi, q1, q2, 0.5)
            - A.expect_dphidphi("hard_tanh", q1, q2, 0.5)
        )
        < 3e-2
    )


def test_broadcasting_and_scalars():
    t = A.get("tanh")
    out = Q.gauss_expect_2d(t.phi, t.phi, np.ones((4, 1, 1)), np.ones((1, 3, 1)), np.zeros(2))
    assert out.shape == (4, 3, 2)
    assert np.ndim(Q.gauss_expect_1d(np.tanh, 1.0)) == 0
    assert Q.gauss_hermite_1d(np.tanh, np.ones((2, 5))).shape == (2, 5)
    assert A.expect_dphidphi("relu", 1.0, np.ones(3), 0.5).shape == (3,)
    with pytest.raises(ValueError):
        Q.gauss_expect_1d(np.tanh, -1.0)


def test_registry():
    assert set(A.names()) == {"linear", "relu", "tanh", "hard_tanh", "erf", "sigmoid", "elu"}
    with pytest.raises(ValueError, match="known"):
        A.expect_phi2("swish", 1.0)
    x = np.linspace(-3, 3, 13) + 0.01
    for n in A.names():
        a = A.get(n)
        h = 1e-6
        np.testing.assert_allclose(a.dphi(x), (a.phi(x + h) - a.phi(x - h)) / (2 * h), atol=1e-6)
