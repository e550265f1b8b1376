"""Gradient metrics of dropout networks at initialization (000 Figs. 2-3, Eqs. 8 and 12)."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import torch

from sigprop import registry
from sigprop.claims import check_table, max_abs_z_bootstrap
from sigprop.measure.gradients import fixed_point_inputs, gradient_metrics
from sigprop.nets import activations, fc
from sigprop.runs import RunSpec, Shard
from sigprop.studies.gradient_metrics import CLAIMS, NOTES, SPEC
from sigprop.studies.gradient_metrics import analysis as gm_analysis
from sigprop.studies.gradient_metrics import claims as gm_claims
from sigprop.studies.gradient_metrics import figures as gm_figures
from sigprop.studies.gradient_metrics import measure as gm_measure
from sigprop.studies.gradient_metrics import theory as gm_theory
from sigprop.theory import gradients as tg
from sigprop.train.engine import initial_state

KEYS = ["activation", "sigma_w2", "sigma_b2", "keep_rate"]


def _shard(act, sw, keeps, seeds, width, depth, name="t"):
    runs = tuple(
        RunSpec(
            arch="fc",
            dataset="gaussian",
            width=width,
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
        for k in keeps
        for s in seeds
    )
    return Shard(name, runs)


def test_metrics_equal_the_materialized_weight_gradients():
    shard = _shard("tanh", 1.4, [1.0, 0.7], range(2), width=9, depth=3)
    runs = shard.runs
    params, _ = initial_state(shard, (7,), 2, torch.device("cpu"), torch.float64)
    g = gradient_metrics(params, runs)
    # explicit: dE_a/dW^l by autograd through fc.preactivations (same masks), materialized
    ps = [p.clone().requires_grad_(True) for p in params]
    x = activations.get("tanh")(fixed_point_inputs(runs, 7))
    keys = torch.tensor([r.key for r in runs])
    keep = torch.tensor([r.keep_rate for r in runs], dtype=torch.float64)
    zL = fc.preactivations(ps, x, "tanh", keep, keys, step=0)[-2]  # last hidden layer
    ws = ps[0:-2:2]
    ga = torch.autograd.grad(zL[:, 0].pow(2).sum(), ws, retain_graph=True)
    gb = torch.autograd.grad(zL[:, 1].pow(2).sum(), ws)
    for l, (a, b) in enumerate(zip(ga, gb)):
        want = {
            "g_aa": 0.5 * (a.pow(2).mean((1, 2)) + b.pow(2).mean((1, 2))),
            "g_ab": (a * b).mean((1, 2)).abs(),
            "g_ab_abs": (a * b).abs().mean((1, 2)),
        }
        for k, v in want.items():
            np.testing.assert_allclose(g[k][:, l], v.numpy(), rtol=1e-10, atol=0)
    assert g["g_aa"].shape == (len(runs), 3)
    # dropout makes the two inputs' gradients differ: g~_ab > g_ab somewhere
    assert np.all(g["g_ab_abs"] >= g["g_ab"] - 1e-15) and np.any(g["g_ab_abs"] > 1.01 * g["g_ab"])


def test_g_aa_agrees_with_eq_12_in_linear_nets():
    L, n = 8, 40
    shard = _shard("linear", 0.5, [0.8], range(n), width=120, depth=L)
    params, _ = initial_state(shard, (120,), 1, torch.device("cpu"), torch.float64)
    g = gradient_metrics(params, shard.runs)["g_aa"]
    mean, se = g.mean(0), g.std(0, ddof=1) / np.sqrt(n)
    th = tg.g_aa(np.arange(1, L + 1), L, 0.5, 0.1, 0.8)
    z = (mean - th) / se
    # 8 correlated comparisons of means over 40 networks: |z| < 4 fails by chance with p < 1e-3
    assert np.abs(z).max() < 4, z
    np.testing.assert_allclose(mean[-1], th[-1], rtol=0.15)
    # the claim's joint test over the layers (shared networks): passes on Eq. 12, fails on
    # Eq. 12 shifted by twice its detectable relative offset
    j = max_abs_z_bootstrap(g, th, n_boot=1000)
    assert j["n"] == n and j["T"] <= j["crit"] and 0 < j["detectable"] < 0.5, j
    shifted = max_abs_z_bootstrap(g, th * (1 + 2 * j["detectable"]), n_boot=1000)
    assert shifted["T"] > shifted["crit"], shifted


def test_rate_verdict_states_its_power():
    k, rtol, chi1 = 3.0, 0.02, 0.5  # scientific tolerance 0.01
    v, det, unresolved = gm_claims.rate_verdict(0.505, 0.002, chi1, k, rtol)
    assert v == "pass" and det == 0.01 and not unresolved
    assert "bootstrap SE" in CLAIMS["g_aa_decays_at_chi1"].test
    assert gm_claims.rate_verdict(0.52, 0.002, chi1, k, rtol)[0] == "fail"
    # 3 SE = 0.012 > 0.01: a rate right at chi1 cannot be told from one 2 % off (the row's test
    # then adds the note that says so)
    v, det, unresolved = gm_claims.rate_verdict(0.5, 0.004, chi1, k, rtol)
    assert v == "inconclusive" and det == 0.012 and unresolved
    assert "cannot resolve" in NOTES["rate test"]
    assert gm_claims.rate_verdict(0.53, 0.004, chi1, k, rtol)[0] == "fail"
    assert gm_claims.rate_verdict(np.nan, 0.001, chi1, k, rtol)[0] == "inconclusive"


def test_study_measure_theory_claims_and_figures():
    cfg = {
        "name": "gm",
        "theory": {"layers_from_output": 20},
        "claims": {"gab_fit_min_from_output": 2, "fit_min_from_output": 2, "n_boot": 20},
    }
    p = registry.resolve("gradient_metrics", cfg, "quick")
    frames = []
    for _i, (act, sw, keeps) in enumerate([("linear", 0.5, [1.0, 0.8]), ("relu", 1.0, [1.0, 0.9])]):
        shard = _shard(act, sw, keeps, range(4), width=16, depth=6, name="gm")
        params, buffers = initial_state(shard, (10,), 3, torch.device("cpu"), torch.float64)
        df = gm_measure.measure(shard, params, buffers, p.for_job("measure"))
        frames.append(df)
    runs = pd.concat(frames, ignore_index=True)
    assert {
        "study",
        "shard_id",
        "run_id",
        "step",
        "metric",
        "value",
        "probe",
        "layer",
        "keep_rate",
        "activation",
    } <= set(runs.columns)
    assert set(runs.metric) == {"g_aa", "g_ab", "g_ab_abs", "g_ab_signed"}
    assert (runs.step == 0).all() and (runs.probe == 0).all()
    assert sorted(runs.layer.unique()) == list(range(1, 7))
    assert (
        len(runs) == 16 * 6 * 4
        and np.isfinite(runs.value).all()
        and (runs.value[runs.metric != "g_ab_signed"] >= 0).all()
    )
    settings = [dict(zip(KEYS, t)) for t in runs[KEYS].drop_duplicates().itertuples(index=False)]
    theory = gm_theory.theory_table("gm", p.for_job("theory"), settings)
    assert {"q_star", "c_star", "chi1", "chi2", "g_aa_eq12", "g_ab_eq12"} <= set(theory.quantity)
    lin = {"activation": "linear", "sigma_w2": 0.5, "sigma_b2": 0.1, "keep_rate": 0.8, "depth": 6}
    np.testing.assert_allclose(
        gm_analysis.theory_curve(theory, lin, "g_aa_eq12", np.arange(1, 7)),
        tg.g_aa(np.arange(1, 7), 6, 0.5, 0.1, 0.8),
    )
    assert np.isclose(gm_analysis.theory_value(theory, lin, "chi1"), 0.5 / 0.8)
    claims = gm_claims.claims_table(runs, theory, p.for_job("claims"))
    ids = list(claims.claim_id)
    assert sum(i.startswith("eq12_predicts_g_aa") for i in ids) == 2
    assert ids.count("g_ab_follows_chi1[linear, rho=0.8]") == 1
    assert (
        "g_aa_decays_at_chi1[relu, rho=0.9]" in ids
        and "g_ab_abs_decays_at_chi1[relu, rho=0.9]" in ids
    )
    assert set(claims.verdict) <= {"pass", "fail", "inconclusive"}
    check_table(claims, "gradient_metrics test")
    by = claims.set_index("claim_id")
    # rho = 1, c* = 1: both inputs coincide, g~_ab = g_aa exactly: a sanity row, never evidence
    same = by.loc["g_ab_abs_decays_at_chi1[relu, rho=1]"]
    assert same.kind == "sanity" and same.verdict == "pass"
    assert same.measured == by.loc["g_aa_decays_at_chi1[relu, rho=1]", "measured"]
    assert by.loc["g_ab_abs_decays_at_chi1[relu, rho=0.9]", "kind"] == "claim"
    assert (by[by.kind == "claim"].test.str.len() > 0).all()
    assert by.loc["eq12_predicts_g_aa[linear, rho=0.8]", "test"].startswith("joint max")
    # every claim states its margin: 10 % relative offset for Eq. 12, the existing rules for the
    # rates (rate_rel_tolerance chi1; |chi1 - chi2| / 2)
    eq12 = by[by.index.str.startswith("eq12_predicts_g_aa")]
    assert (eq12.margin == 0.1).all()
    assert not ((eq12.verdict == "pass") & (eq12.detectable > 0.1)).any()
    chi = {q: gm_analysis.theory_value(theory, lin, q) for q in ("chi1", "chi2")}
    assert by.loc["g_ab_follows_chi1[linear, rho=0.8]", "margin"] == pytest.approx(
        abs(chi["chi1"] - chi["chi2"]) / 2
    )
    relu = {"activation": "relu", "sigma_w2": 1.0, "sigma_b2": 0.1, "keep_rate": 0.9}
    assert by.loc["g_aa_decays_at_chi1[relu, rho=0.9]", "margin"] == pytest.approx(
        0.02 * gm_analysis.theory_value(theory, relu, "chi1")
    )
    assert np.isnan(by.loc["g_ab_abs_decays_at_chi1[relu, rho=1]", "margin"])  # sanity row
    assert set(SPEC.figures) == {"gradient_metrics_linear", "gradient_metrics_activations"}
    for fig in SPEC.figures.values():
        assert fig.caption
        plt.close(getattr(gm_figures, fig.function)(runs, theory, p.for_job("figure")))


def _eq12_runs(rel_noise: float, n: int = 30, L: int = 20, seed: int = 0) -> tuple:
    """Synthetic g_aa of linear nets (rho = 1) scattered multiplicatively around Eq. 12, with
    a per-network factor shared by the layers (as the layers of one net share it)."""
    p = registry.resolve(
        "gradient_metrics", {"name": "gm", "theory": {"layers_from_output": L}}, "quick"
    )
    s = {"activation": "linear", "sigma_w2": 0.5, "sigma_b2": 0.1, "keep_rate": 1.0}
    theory = gm_theory.theory_table("gm", p.for_job("theory"), [s])
    layers = np.arange(1, L + 1)
    th = tg.g_aa(layers, L, 0.5, 0.1, 1.0)
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        z = 0.7 * rng.standard_normal() + 0.7 * rng.standard_normal(L)
        v = th * np.exp(rel_noise * z - (rel_noise * 0.99) ** 2 / 2)
        rows += [
            {
                **s,
                "depth": L,
                "run_id": f"r{i}",
                "metric": "g_aa",
                "layer": int(l),
                "value": float(x),
            }
            for l, x in zip(layers, v)
        ]
    return pd.DataFrame(rows), theory, p.for_job("claims")


def test_eq12_pass_needs_the_detectable_offset_within_the_margin():
    """Eq. 12 is an equivalence claim with a 10 % relative-offset margin: the joint test that
    finds no deviation passes only when it could have found one of 10 %."""
    runs, theory, p = _eq12_runs(0.03)
    r = (
        gm_claims.claims_table(runs, theory, p)
        .set_index("claim_id")
        .loc["eq12_predicts_g_aa[linear, rho=1]"]
    )
    assert r.verdict == "pass" and r.detectable <= r.margin == 0.1
    runs, theory, p = _eq12_runs(0.6)
    df = gm_claims.claims_table(runs, theory, p)
    check_table(df, "gradient_metrics test")
    r = df.set_index("claim_id").loc["eq12_predicts_g_aa[linear, rho=1]"]
    assert r.measured <= r.tolerance  # the joint test finds no deviation
    assert r.detectable > 0.1 and r.verdict == "inconclusive"
    assert "cannot resolve the margin" in r.test
