"""Variance-mean law of the gradient metrics (000 §4.2, Figs. 4-5)."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from sigprop import registry
from sigprop.claims import check_table, tally
from sigprop.claims import values as claim_values
from sigprop.config import build_study
from sigprop.runs import RunSpec, Shard, settings
from sigprop.studies.gradient_universality import SPEC, Claims
from sigprop.studies.gradient_universality import analysis as study
from sigprop.studies.gradient_universality import claims as gu_claims
from sigprop.studies.gradient_universality import figures as gu_figures
from sigprop.studies.gradient_universality import measure as gu_measure
from sigprop.studies.gradient_universality import theory as gu_theory
from sigprop.tables import CLAIM_COLUMNS
from sigprop.train.engine import initial_state

ROOT = Path(__file__).resolve().parents[1]
AN = {"z_max": 3.0, "abs_tolerance": 0.1, "min_layers": 3}
CL = Claims(**AN)


def gu_values(r) -> dict:
    return claim_values(pd.Series({"values": r.values}))


def _lognormal_layers(p: float, a: float, n: int, layers: int, seed: int) -> np.ndarray:
    """``[n, layers]`` lognormal samples with mean ``m_l`` and variance ``a m_l^p``."""
    m = np.geomspace(1e-4, 1.0, layers)
    s2 = np.log1p(a * m ** (p - 2.0))
    mu = np.log(m) - s2 / 2
    rng = np.random.default_rng(seed)
    return np.exp(mu + np.sqrt(s2) * rng.standard_normal((n, layers)))


@pytest.mark.parametrize("p", [2.0, 1.5])
def test_fit_recovers_a_known_power(p):
    v = _lognormal_layers(p, 0.05 if p == 2 else 0.005, n=4000, layers=25, seed=1)
    f = study.power_and_se([v], n_boot=40)
    assert f["n_layers"] == 25 and f["n_inst"] == 4000
    assert abs(f["p"] - p) < 0.05, f
    assert 0 < f["se"] < 0.05
    tol, verdict = gu_claims.verdict(f["p"], f["se"], f["n_layers"], 2.0, CL)
    assert verdict == ("pass" if p == 2 else "fail")
    assert tol == pytest.approx(max(3 * f["se"], 0.1))
    # m spans 4 decades (1e-4 at l = 1 to 1 at l = 25); V/m^2 ∝ m^(p - 2) drifts by
    # (2 - p) x 4 decades from the nearest to the farthest layer: |p - 2| = drift / span
    assert f["span_decades"] == pytest.approx(4.0, abs=0.05) and 0 < f["span_se"] < 0.05
    assert f["drift_decades"] == pytest.approx((2 - p) * 4.0, abs=0.15)
    assert 0 < f["drift_se"] < 0.15
    assert abs(f["p"] - 2) == pytest.approx(abs(f["drift_decades"]) / f["span_decades"], abs=0.04)


def test_span_and_drift_are_what_the_power_reads():
    """p - 2 is the least-squares slope of log(V/m^2) on log m: where log m is linear in the
    layer, |p - 2| = |drift| / span exactly (span: decades of m over the fitted layers; drift:
    the line of log10(V/m^2) on the layer, farthest minus nearest to the output)."""
    layers = np.arange(1, 41)
    m = 0.6 ** (40 - layers)  # chi_1 = 0.6: m shrinks away from the output
    V = 0.3 * m**1.8  # V/m^2 = 0.3 m^-0.2 grows away from the output
    span = study.span_decades(m, V)
    drift = study.drift_decades(m, V, layers)
    assert span == pytest.approx(39 * np.log10(1 / 0.6))
    assert drift == pytest.approx(0.2 * span) and drift > 0
    p, _, _ = study.fit_power(m, V)
    assert abs(p - 2) == pytest.approx(drift / span)
    # the same drift over a mean that spans a tenth of the decades moves p ten times as far
    m2 = 0.95 ** (40 - layers)
    V2 = 0.3 * m2**2 * 10 ** (drift * (40 - layers) / 39)
    assert study.drift_decades(m2, V2, layers) == pytest.approx(drift)
    p2 = study.fit_power(m2, V2)[0]
    assert abs(p2 - 2) == pytest.approx(drift / study.span_decades(m2, V2))
    assert abs(p2 - 2) > 5 * abs(p - 2)
    # layers without a fit (m or V <= 0) are left out of both, as out of the fit
    V3 = V.copy()
    V3[0] = 0.0
    assert study.span_decades(m, V3) == pytest.approx(38 * np.log10(1 / 0.6))
    assert np.isnan(study.drift_decades(m[:1], V[:1]))


def test_fit_power_skips_nonpositive_points_and_needs_three():
    m = np.array([1e-3, 1e-2, 0.0, 1e-1, 1.0])
    V = 0.3 * m**2
    V[1] = -1.0
    p, a, n = study.fit_power(m, V)
    assert n == 3 and p == pytest.approx(2.0) and a == pytest.approx(0.3)
    assert np.isnan(study.fit_power(m[:2], V[:2])[0])
    assert np.isnan(study.fit_power(np.ones(4), np.ones(4))[0])
    # a power the SE cannot resolve passes no claim
    assert gu_claims.verdict(2.2, 0.5, 10, 2.0, CL)[1] == "inconclusive"
    assert gu_claims.verdict(0.0, 0.5, 10, 2.0, CL)[1] == "fail"
    # no fit, or no SE: nothing to decide on
    assert gu_claims.verdict(np.nan, 0.01, 10, 2.0, CL)[1] == "inconclusive"
    assert gu_claims.verdict(1.98, np.nan, 10, 2.0, CL)[1] == "inconclusive"
    assert gu_claims.verdict(1.98, 0.01, 2, 2.0, CL)[1] == "inconclusive"


def test_a_pass_needs_the_se_to_resolve_the_tolerance():
    """p = 1.61 with SE 0.154 (power2_width[g_ab_abs, N=50] at quick scale) was within
    max(3 SE, 0.1) = 0.46 of 2 and passed; 3 SE > 0.1 cannot resolve the power: inconclusive."""
    tol, v = gu_claims.verdict(1.614, 0.154, 40, 2.0, CL)
    assert v == "inconclusive" and tol == pytest.approx(0.462)
    assert gu_claims.verdict(1.95, 0.02, 40, 2.0, CL) == (0.1, "pass")
    assert gu_claims.verdict(1.85, 0.02, 40, 2.0, CL)[1] == "fail"
    # at exactly 3 SE = 0.1 the design resolves its tolerance
    assert gu_claims.verdict(2.05, 0.1 / 3, 40, 2.0, CL)[1] == "pass"
    assert gu_claims.verdict(2.05, 0.1 / 3 + 1e-6, 40, 2.0, CL)[1] == "inconclusive"


def _shard(act, sw, keeps, widths, seeds, depth=6):
    runs = tuple(
        RunSpec(
            arch="fc",
            dataset="gaussian",
            width=w,
            depth=depth,
            activation=act,
            sigma_w2=sw,
            sigma_b2=0.1,
            keep_rate=k,
            precision="float64",
            steps=1,
            eval_every=1,
            seed=s,
        )
        for w in widths
        for k in keeps
        for s in seeds
    )
    return Shard("gu", runs)


@pytest.fixture(scope="module")
def measured():
    cfg = {
        "name": "gu",
        "theory": {"power": 2.0},
        "analysis": {"widths": {"activation": "tanh", "sigma_w2": 1.4, "keep_rate": 0.9}},
        "claims": {**AN, "n_boot": 20},
    }
    p = registry.resolve("gradient_universality", cfg, "quick")
    shards = [
        _shard("linear", 0.5, [1.0, 0.8], [16], range(6)),
        _shard("tanh", 1.4, [0.9], [16], range(6)),
        _shard("tanh", 1.4, [0.9], [8], range(6)),
    ]
    frames = []
    for sh in shards:
        params, buffers = initial_state(sh, (10,), 1, torch.device("cpu"), torch.float64)
        frames.append(gu_measure.measure(sh, params, buffers, p.for_job("measure")))
    runs = pd.concat(frames, ignore_index=True)
    theory = gu_theory.theory_table(
        "gu", p.for_job("theory"), settings([r for sh in shards for r in sh.runs])
    )
    return runs, theory, p


def test_theory_table(measured):
    _, theory, _ = measured
    assert {"study", "quantity", "value"} <= set(theory.columns)
    assert study.expected_power(theory) == 2.0
    lin = theory[(theory.activation == "linear") & np.isclose(theory.keep_rate, 0.8)]
    assert float(lin[lin.quantity == "chi1"].value.iloc[0]) == pytest.approx(0.5 / 0.8)
    assert float(lin[lin.quantity == "q_star"].value.iloc[0]) == pytest.approx(
        0.1 / (1 - 0.5 / 0.8)
    )
    assert {"q_star", "c_star", "chi1", "chi2"} <= set(theory.quantity)


def test_claims_rows_and_verdicts(measured):
    runs, theory, p = measured
    assert set(runs.metric) == {"g_aa", "g_ab", "g_ab_abs", "g_ab_signed"}
    assert [g["width"] for g in study.fig4_groups(runs)] == [16, 16, 16]
    assert [g["width"] for g in study.fig5_groups(runs, p.for_job("figure"))] == [8, 16]
    claims = gu_claims.claims_table(runs, theory, p.for_job("claims"))
    assert list(claims.columns) == CLAIM_COLUMNS
    ids = list(claims.claim_id)
    # Fig. 4: 3 groups x 3 metrics + overall + 3 pooled; Fig. 5: 2 widths x 3 metrics + overall + 3 pooled
    assert len(ids) == len(set(ids)) == 9 + 1 + 3 + 6 + 1 + 3
    assert "power2[g_ab_abs, linear, rho=0.8]" in ids and "power2[g_aa, tanh, rho=0.9]" in ids
    assert "power2_width[g_ab, N=8]" in ids and "power2_pooled_widths[g_aa]" in ids
    assert set(claims.verdict) <= {"pass", "fail", "inconclusive"}
    check_table(claims, "gradient_universality test")
    by = claims.set_index("claim_id")
    kinds = by.kind.to_dict()
    # one measurement, one counted row: rho = 1, c* = 1 linear nets have g_ab = g~_ab = g_aa
    # (both inputs coincide), and the Fig. 5 group at the Fig. 4 width (16) is the Fig. 4 tanh
    # group: those copies are sanity rows that check the identity on the data
    copies = [
        "power2[g_ab, linear, rho=1]",
        "power2[g_ab_abs, linear, rho=1]",
        "power2_width[g_aa, N=16]",
        "power2_width[g_ab, N=16]",
        "power2_width[g_ab_abs, N=16]",
    ]
    assert all(kinds[c] == "sanity" for c in copies) and (by.loc[copies, "verdict"] == "pass").all()
    assert np.allclose(
        by.loc[copies[:2], "measured"], by.loc["power2[g_aa, linear, rho=1]", "measured"]
    )
    assert np.allclose(
        by.loc[copies[2:], "measured"],
        by.loc[
            [
                "power2[g_aa, tanh, rho=0.9]",
                "power2[g_ab, tanh, rho=0.9]",
                "power2[g_ab_abs, tanh, rho=0.9]",
            ],
            "measured",
        ],
    )
    summaries = [i for i in ids if i.startswith(("power2_all", "power2_pooled"))]
    assert all(kinds[i] == "summary" for i in summaries) and len(summaries) == 8
    # one group of nets is one measurement: the study file's corroborations make its g_ab and
    # g~_ab rows (measured on the same nets) summary rows that corroborate its g_aa claim
    assert (claims.kind == "claim").sum() == 10  # before the declaration is applied
    import yaml
    from conftest import REPO

    from sigprop.claims import reading

    cfg = yaml.safe_load((REPO / "config/studies/gradient_universality.yaml").read_text())
    claims = reading.apply(claims, "quick", {}, {}, cfg["tolerance_sources"], cfg["corroborations"])
    kinds = claims.set_index("claim_id").kind.to_dict()
    counted = claims[claims.kind == "claim"]
    assert len(counted) == 4 and tally(claims)["claims"] == 4 and tally(claims)["sanity"] == 5
    assert counted.claim_id.str.startswith(("power2[g_aa, ", "power2_width[g_aa, ")).all()
    assert set(counted.claim_id) == {
        "power2[g_aa, linear, rho=1]",
        "power2[g_aa, linear, rho=0.8]",
        "power2[g_aa, tanh, rho=0.9]",
        "power2_width[g_aa, N=8]",
    }
    fit_ids = claims.claim_id.str.startswith(("power2[", "power2_width["))
    corroborate = claims[fit_ids & (claims.kind == "summary")]
    assert len(corroborate) == 6
    assert not corroborate.claim_id.str.contains("[g_aa, ", regex=False).any()
    assert corroborate.claim.str.contains(
        "(corroboration, not counted: the g_ab and g~_ab powers", regex=False
    ).all()
    # the fitted-power rows, counted or corroborating, all follow the same test
    groups = claims[fit_ids & claims.kind.isin(["claim", "summary"])]
    assert len(groups) == 10
    assert np.isfinite(groups.measured).all() and (groups.tolerance >= 0.1).all()
    assert (groups.detectable == groups.tolerance).all() and groups.test.str.contains("3 SE").all()
    assert groups.detail.str.contains("6 layers").all()
    # every group row is an equivalence with margin abs_tolerance and states, next to the power,
    # the span of m and the drift of V/m^2 (values and test text)
    assert (groups.margin == 0.1).all()
    assert not ((groups.verdict == "pass") & (groups.detectable > groups.margin)).any()
    assert groups.test.str.contains("m spans").all() and groups.test.str.contains("drifts").all()
    assert groups.test.str.contains(r"\|p - 2\| ~ D / S").all()
    for r in groups.itertuples():
        v = gu_values(r)
        assert {"span_decades", "drift_decades", "span_se", "drift_se", "drift_over_span"} <= set(v)
        assert v["span_decades"] > 0 and np.isfinite(v["drift_decades"])
        assert f"m spans {v['span_decades']:.2f} decades" in r.test
        assert f"{v['drift_decades']:+.2f} decades" in r.test
    pooled_rows = by[by.index.str.startswith("power2_pooled")]
    assert (pooled_rows.kind == "summary").all() and (pooled_rows.margin == 0.1).all()
    assert pooled_rows.test.str.contains("median").all()
    assert all("span_decades" in gu_values(r) for r in pooled_rows.itertuples())
    assert np.isnan(by.loc["power2_all_activations", "margin"])
    assert by.loc[copies, "margin"].isna().all()
    fig4 = groups[groups.claim_id.str.startswith("power2[")]
    overall = by.loc["power2_all_activations"]
    assert overall.measured == pytest.approx(np.mean(fig4.verdict == "pass"))
    want = (
        "fail"
        if (fig4.verdict == "fail").any()
        else "inconclusive"
        if (fig4.verdict == "inconclusive").any()
        else "pass"
    )
    assert overall.verdict == want
    # the Fig. 5 summary counts the width-16 groups once each, with their Fig. 4 verdicts
    fig5 = [
        (i, by.loc[i, "verdict"])
        for i in ids
        if i.startswith("power2_width[") and kinds[i] in ("claim", "summary")
    ]
    fig5 += [
        (i, by.loc[i, "verdict"])
        for i in (
            "power2[g_aa, tanh, rho=0.9]",
            "power2[g_ab, tanh, rho=0.9]",
            "power2[g_ab_abs, tanh, rho=0.9]",
        )
    ]
    w = by.loc["power2_all_widths"]
    assert f"of {len(fig5)} groups" in w.detail
    assert w.measured == pytest.approx(np.mean([v == "pass" for _, v in fig5]))


def test_figures(measured):
    runs, theory, p = measured
    assert set(SPEC.figures) == {
        "gradient_universality_activations",
        "gradient_universality_widths",
    }
    for spec_fig in SPEC.figures.values():
        assert spec_fig.caption
        fig = getattr(gu_figures, spec_fig.function)(runs, theory, p.for_job("figure"))
        assert len(fig.axes) == 3
        assert all(ax.get_xscale() == "log" and ax.get_yscale() == "log" for ax in fig.axes)
        plt.close(fig)


@pytest.mark.parametrize(
    "scale,n_fig4,widths,depth",
    [("quick", 12, [50, 100, 200], 40), ("paper", 12, [100, 200, 500, 1000], 200)],
)
def test_shipped_config_expands(scale, n_fig4, widths, depth):
    cfg = yaml.safe_load((ROOT / "config/studies/gradient_universality.yaml").read_text())
    st = build_study("gradient_universality", "gradient_universality.yaml", cfg, scale, 64)
    assert st.kind == "gradient_universality"
    df = pd.DataFrame([r.as_dict() for r in {r.run_id: r for r in st.runs}.values()])
    assert (df.depth == depth).all() and (df.dataset == "gaussian").all()
    assert len(study.fig4_groups(df)) == n_fig4
    assert [g["width"] for g in study.fig5_groups(df, st.params.for_job("figure"))] == widths
    for sh in st.shards:
        assert len({r.activation for r in sh.runs}) == 1


def test_copy_rows_check_their_identity(measured):
    """A sanity copy is not a free pass: if g_ab stopped equalling g_aa at rho = 1, c* = 1
    (e.g. the two inputs were not the same), the sanity row fails."""
    runs, theory, p = measured
    bad = runs.copy()
    hit = (bad.metric == "g_ab") & (bad.activation == "linear") & np.isclose(bad.keep_rate, 1.0)
    bad.loc[hit, "value"] = bad.loc[hit, "value"] * 1.01
    by = gu_claims.claims_table(bad, theory, p.for_job("claims")).set_index("claim_id")
    row = by.loc["power2[g_ab, linear, rho=1]"]
    assert row.kind == "sanity" and row.verdict == "fail"
    assert by.loc["power2[g_ab_abs, linear, rho=1]", "verdict"] == "pass"
