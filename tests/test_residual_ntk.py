"""Empirical NTK of 001's ResNets / DenseNets (Eq. 1, Fig. 2) and the residual_ntk study."""

import matplotlib

matplotlib.use("Agg")

import json
from pathlib import Path

import jsonschema
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from sigprop import tables
from sigprop.config import build_study, load_yaml
from sigprop.nets import families
from sigprop.registry import resolve
from sigprop.runs import RunSpec, Shard, settings
from sigprop.studies.residual_ntk import SPEC, ntk
from sigprop.studies.residual_ntk import figures as study_figures
from sigprop.studies.residual_ntk.claims import claims_table
from sigprop.studies.residual_ntk.measure import measure
from sigprop.studies.residual_ntk.theory import theory_table
from sigprop.theory import kernels
from sigprop.train.engine import initial_state

ROOT = Path(__file__).resolve().parents[1]
CPU = torch.device("cpu")


def _runs(arch, width, depth, m=2, alphas=(0.3,), seeds=range(2), **kw):
    return tuple(
        RunSpec(
            arch=arch,
            dataset="gaussian",
            width=width,
            depth=depth,
            branch_depth=m,
            alpha=a,
            activation="relu",
            sigma_w2=2.0,
            sigma_b2=0.0,
            precision="float64",
            steps=1,
            eval_every=1,
            seed=s,
            **kw,
        )
        for a in alphas
        for s in seeds
    )


def _explicit_ntk(arch, runs, params, x1, x2, weights=slice(1, -1)):
    """``J(x1) J(x2)^T`` per model, with ``J`` materialized row by row: one autograd call
    per output ``f(x_i)`` of one model, gradients w.r.t. ``params[weights]`` flattened."""
    fam = families.get(arch)
    out = []
    for k in range(len(runs)):
        ps = [p[k : k + 1].clone().requires_grad_(True) for p in params]

        def jac(x, k=k, ps=ps):
            rows = []
            for i in range(x.shape[0]):
                y, _ = fam.apply(runs[k : k + 1], ps, [], x[i : i + 1][None], False, None, 0)
                g = torch.autograd.grad(y.sum(), ps[weights])
                rows.append(torch.cat([t.reshape(-1) for t in g]))
            return torch.stack(rows)

        out.append((jac(x1) @ jac(x2).T).detach().numpy())
    return np.stack(out)


@pytest.mark.parametrize("arch,m", [("resnet_fc", 2), ("resnet_fc", 3), ("densenet_fc", 1)])
def test_ntk_methods_equal_the_explicit_jacobian(arch, m):
    runs = _runs(arch, width=5, depth=3, m=m, alphas=(0.3, 1.7), seeds=range(2))
    params, _ = initial_state(Shard("t", runs), (6,), 1, CPU, torch.float64)
    gen = torch.Generator().manual_seed(0)
    x1 = torch.randn(3, 6, generator=gen, dtype=torch.float64)
    x2 = torch.randn(4, 6, generator=gen, dtype=torch.float64)
    want = _explicit_ntk(arch, runs, params, x1, x2)
    assert want.shape == (4, 3, 4) and np.abs(want).max() > 0.1
    for method in ntk.METHODS:
        got = ntk.empirical_ntk(runs, params, x1, x2, method)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-10)
    # per-model inputs [M, B, d]
    xs = torch.randn(4, 2, 6, generator=gen, dtype=torch.float64)
    got = ntk.empirical_ntk(runs, params, xs, xs)
    for k in range(4):
        np.testing.assert_allclose(
            got[k],
            _explicit_ntk(arch, runs[k : k + 1], [p[k : k + 1] for p in params], xs[k], xs[k])[0],
            rtol=0,
            atol=1e-10,
        )
    # W^s and W^f are excluded: the all-weights kernel differs
    every = _explicit_ntk(arch, runs, params, x1, x2, weights=slice(None))
    assert np.abs(every - want).max() > 0.1


def test_embedded_inputs_are_the_two_dimensional_net():
    """``embed``: the D-input net on the padded input is the d = 2 net with ``W^s[:, :2]`` and
    ``Sigma^0 = x.x'/2`` (Eq. 11)."""
    theta = np.linspace(0, np.pi, 7)
    x1, x2 = ntk.fig2_probe_inputs(theta, 16)
    np.testing.assert_allclose((x1 @ x2.T).numpy()[0] / 16, np.cos(theta) / 2, atol=1e-15)
    runs = _runs("densenet_fc", width=6, depth=2, seeds=range(3))
    params, _ = initial_state(Shard("t", runs), (16,), 1, CPU, torch.float64)
    small = [params[0][:, :, :2]] + params[1:]
    fam = families.get("densenet_fc")
    big_out, _ = fam.apply(runs, params, [], x2.expand(3, -1, -1), False, None, 0)
    _, x2_small = kernels.fig2_inputs(theta)
    small_out, _ = fam.apply(
        runs, small, [], torch.as_tensor(x2_small).expand(3, -1, -1), False, None, 0
    )
    torch.testing.assert_close(big_out, small_out, rtol=1e-12, atol=1e-12)


def test_measure_rows_and_homogeneity(tmp_path):
    runs = _runs("resnet_fc", width=8, depth=2, alphas=(0.3, 0.9), seeds=range(3))
    shard = Shard("rn", runs)
    params, buffers = initial_state(shard, (10,), 1, CPU, torch.float64)
    p = resolve(
        "residual_ntk", {"name": "rn", "measure": {"n_angles": 5, "fig2_input_dim": 2}}, "quick"
    )
    df = measure(shard, params, buffers, p)
    assert {
        "study",
        "shard_id",
        "run_id",
        "step",
        "metric",
        "value",
        "probe",
        "theta",
        "alpha",
        "branch_depth",
        "width",
        "depth",
    } <= set(df.columns)
    assert set(df.metric) == {"ntk", "ntk_diag"} and len(df) == 6 * (5 + 1)
    a = df[df.metric == "ntk"]
    assert sorted(a.probe.unique()) == list(range(5))
    np.testing.assert_allclose(np.sort(a.theta.unique()), np.linspace(0, np.pi, 5))
    # G is quadratic in the input scale (relu, no biases): Sigma^0 = 1 is twice Sigma^0 = 1/2
    g0 = a[a.probe == 0].set_index("run_id").value
    gd = df[df.metric == "ntk_diag"].set_index("run_id").value
    np.testing.assert_allclose(gd.loc[g0.index], 2 * g0, rtol=1e-12)
    path = tables.write_atomic(df, tmp_path / "s.parquet")
    assert len(tables.merge_runs([path])) == len(df)


def test_theory_table_quantities():
    th = resolve(
        "residual_ntk",
        {
            "measure": {"n_angles": 5, "fig2_input_dim": 2},
            "theory": {"max_depth": 6, "resnet": [{"branch_depth": 2, "alpha": 0.3}]},
        },
        "quick",
    )
    s = [{"activation": "relu", "sigma_w2": 2.0, "sigma_b2": 0.0, "keep_rate": 1.0}]
    t = theory_table("rn", th, s)
    assert set(tables.THEORY_COLUMNS) <= set(t.columns)

    def q(name, arch):
        return t[(t.quantity == name) & (t.arch == arch)].sort_values(["depth", "theta"])

    np.testing.assert_allclose(
        q("ntk_diag_eq25", "resnet_fc").value, q("ntk_diag_thm1", "resnet_fc").value, rtol=1e-7
    )
    np.testing.assert_allclose(
        q("ntk_diag_recursion", "densenet_fc").value,
        q("ntk_diag_thm2", "densenet_fc").value,
        rtol=1e-9,
    )
    L = np.arange(1, 7)
    np.testing.assert_allclose(
        q("ntk_diag_eq29", "densenet_fc").value, [np.sum(1 / (np.arange(1, n + 1) + 1)) for n in L]
    )
    # Fig. 2 angle 0 is the diagonal at Sigma^0 = 1/2
    ang = q("ntk_angle", "resnet_fc")
    np.testing.assert_allclose(
        ang[ang.theta == 0].value, 0.5 * kernels.resnet_ntk_diagonal(L, 2, 0.3), rtol=1e-7
    )
    assert len(ang) == 6 * 5
    with pytest.raises(ValueError, match="sigma_w2 = 2"):
        theory_table("rn", th, [{**s[0], "sigma_w2": 1.0}])


def _tiny_cfg():
    fixed = {
        "dataset": "gaussian",
        "activation": "relu",
        "sigma_w2": 2.0,
        "sigma_b2": 0.0,
        "precision": "float64",
        "steps": 1,
        "eval_every": 1,
    }
    blocks = [
        {
            "label": "Fig. 2 ResNet",
            "fixed": {**fixed, "arch": "resnet_fc", "depth": 2, "branch_depth": 2, "alpha": 0.5},
            "grid": {"width": [16, 256], "seed": list(range(24))},
        },
        {
            "label": "Fig. 2 DenseNet",
            "fixed": {**fixed, "arch": "densenet_fc", "depth": 2},
            "grid": {"width": [16, 256], "seed": list(range(24))},
        },
        {
            "label": "diagonal ResNet",
            "fixed": {**fixed, "arch": "resnet_fc", "width": 32, "branch_depth": 2, "alpha": 0.5},
            "grid": {"depth": [1, 3], "seed": list(range(64))},
        },
        {
            "label": "diagonal DenseNet",
            "fixed": {**fixed, "arch": "densenet_fc", "width": 32},
            "grid": {"depth": [1, 3], "seed": list(range(64))},
        },
    ]
    return {
        "name": "residual_ntk",
        "paper": "001",
        "kind": "residual_ntk",
        "title": "tiny",
        "measure": {"n_angles": 8, "fig2_input_dim": 2},
        "theory": {"max_depth": 3, "resnet": [{"branch_depth": 2, "alpha": 0.5}]},
        "analysis": {"faint_samples": 3},
        "claims": {
            "z_max": 3.0,
            "within_fraction": 0.95,
            "fraction_tolerance": 0.05,
            "n_boot": 50,
            "n_boot_joint": 500,
        },
        "scales": {"quick": {"blocks": blocks}, "paper": {"blocks": blocks}},
    }


@pytest.fixture(scope="module")
def measured():
    cfg = _tiny_cfg()
    st = build_study("residual_ntk", "tiny.yaml", cfg, "quick", 64)
    frames = []
    for sh in st.shards:
        params, buffers = initial_state(sh, (12,), 1, CPU, torch.float64)
        frames.append(measure(sh, params, buffers, st.params.for_job("measure")))
    runs = pd.concat(frames, ignore_index=True)
    runs["block"] = runs.run_id.map(st.labels)  # as the merge labels the runs
    theory = theory_table("residual_ntk", st.params.for_job("theory"), settings(st.runs))
    return runs, theory, st.params


def _with_claims(p, **kw):
    """The claims job's parameters with some ``claims:`` keys replaced."""
    import dataclasses

    p = p.for_job("claims")
    return dataclasses.replace(p, claims=dataclasses.replace(p.claims, **kw))


def test_claims_on_a_tiny_measurement(measured):
    runs, theory, p = measured
    claims = claims_table(runs, theory, p.for_job("claims"))
    assert list(claims.columns) == tables.CLAIM_COLUMNS
    by = claims.set_index("claim_id")
    ids = set(by.index)
    assert {
        f"fig2_mean_matches_theory[{a}, n={n}]"
        for a in ("resnet_fc", "densenet_fc")
        for n in (16, 256)
    } <= ids
    # one measured SD ratio per architecture, one claim: its exponent (no 'shrinks' row)
    assert not any(i.startswith("fig2_spread_shrinks") for i in ids)
    for a in ("resnet_fc", "densenet_fc"):
        r = by.loc[f"fig2_spread_scales_as_inv_sqrt_width[{a}]"]
        v = json.loads(r["values"])
        np.testing.assert_allclose(r["measured"], -np.log(v["ratio"]) / np.log(256 / 16))
        assert r["expected"] == "exponent beta = 0.5" and r["margin"] == 0.1
        assert r["verdict"] != "fail"  # the nets' SD does scale as n^(-1/2)
    assert {
        "eq25_resnet_diagonal[m=2, alpha=0.5]",
        "eq29_densenet_diagonal_printed",
        "densenet_diagonal_harmonic",
    } <= ids
    assert set(claims.verdict) <= {"pass", "fail", "inconclusive"}
    # the claims contract: every row a claim of 001 with its test and, when decided, its power
    from sigprop.claims import check_table

    check_table(claims, "tiny residual_ntk", paper="001")
    assert (claims.kind == "claim").all() and (claims.test.str.len() > 0).all()
    # every equivalence claim states its margin (0.1: a relative offset, or exponent units)
    assert (claims.margin == 0.1).all()
    fig2 = by.loc[[i for i in by.index if i.startswith("fig2_mean_matches_theory")]]
    assert fig2.test.str.contains("joint test over the 8 angles").all()
    assert np.isfinite(fig2.detectable.astype(float)).all() and (fig2.detectable > 0).all()
    # the joint test's statistic is the largest |z| over the angles, its tolerance the critical value
    v = fig2.apply(lambda r: json.loads(r["values"]), axis=1)
    np.testing.assert_allclose(fig2.measured.astype(float), [x["max_abs_z"] for x in v])
    # below the critical value: a pass when the design resolves the 0.1 margin, else inconclusive
    below = fig2.measured <= fig2.tolerance
    assert (fig2.verdict[~below] == "fail").all()
    assert (
        fig2.verdict[below] == np.where(fig2.detectable[below] <= 0.1, "pass", "inconclusive")
    ).all()
    # the diagonal rows state the threshold the test applies: within_fraction - tolerance
    for cid in ("eq25_resnet_diagonal[m=2, alpha=0.5]", "densenet_diagonal_harmonic"):
        assert by.loc[cid, "expected"].startswith(">= 0.9 of the 2 depths")
        assert "must be >= 0.9" in by.loc[cid, "test"]
    # the printed Eq. 29 (1/2 at L = 1) is rejected, H_L (1 at L = 1) and Eq. 25 are not; this
    # tiny design cannot resolve a 10 % offset, so those are inconclusive, and pass with a
    # margin the design resolves
    assert by.loc["eq29_densenet_diagonal_printed", "verdict"] == "fail"
    assert "contradicts the printed Eq. 29" in by.loc["eq29_densenet_diagonal_printed", "detail"]
    loose = claims_table(runs, theory, _with_claims(p, margin=1.0)).set_index("claim_id")
    for cid in ("densenet_diagonal_harmonic", "eq25_resnet_diagonal[m=2, alpha=0.5]"):
        assert by.loc[cid, "detectable"] > 0.1 and by.loc[cid, "verdict"] == "inconclusive"
        assert loose.loc[cid, "verdict"] == "pass"
    assert loose.loc["eq29_densenet_diagonal_printed", "verdict"] == "fail"
    # a wrong kernel (15 % too large) is caught at width 256
    wrong = theory.assign(
        value=np.where(theory.quantity == "ntk_angle", 1.15 * theory.value, theory.value)
    )
    bad = claims_table(runs, wrong, p.for_job("claims")).set_index("claim_id")
    assert bad.loc["fig2_mean_matches_theory[resnet_fc, n=256]", "verdict"] == "fail"
    assert bad.loc["fig2_mean_matches_theory[densenet_fc, n=256]", "verdict"] == "fail"
    # a common offset of the size the joint test states it detects is caught (and one much
    # smaller is not): the stated power is the power the test has
    key = "fig2_mean_matches_theory[densenet_fc, n=256]"
    det = by.loc[key, "detectable"]
    dense = (theory.quantity == "ntk_angle") & (theory.arch == "densenet_fc")
    for f, want in ((1 + 2 * det, "fail"), (1 + det / 20, "pass")):
        shifted = theory.assign(value=np.where(dense, f * theory.value, theory.value))
        got = claims_table(runs, shifted, _with_claims(p, margin=1.0)).set_index("claim_id")
        assert got.loc[key, "verdict"] == want, (f, got.loc[key, "detail"])


def test_a_margin_the_design_cannot_resolve_makes_a_pass_inconclusive(measured):
    """The same measurement, the same test statistics: with a margin above every detectable
    offset the equivalence claims pass; with one below it they are inconclusive (never fail),
    and the test text says why."""
    runs, theory, p = measured
    loose = claims_table(runs, theory, _with_claims(p, margin=10.0, exponent_tolerance=2.0))
    tight = claims_table(runs, theory, _with_claims(p, margin=1e-4, exponent_tolerance=1e-4))
    lo, ti = loose.set_index("claim_id"), tight.set_index("claim_id")
    passed = lo.index[lo.verdict == "pass"]
    assert len(passed) >= 6
    assert (ti.loc[passed, "verdict"] == "inconclusive").all()
    assert ti.loc[passed, "test"].str.contains("the design cannot resolve the margin").all()
    np.testing.assert_allclose(ti.loc[passed, "measured"], lo.loc[passed, "measured"])
    assert ti.loc["eq29_densenet_diagonal_printed", "verdict"] == "fail"


def test_spread_exponent_and_its_delta_method_se():
    from sigprop.studies.residual_ntk.analysis import spread_exponent

    b, se = spread_exponent(np.sqrt(50 / 500), 0.02, 50, 500)
    np.testing.assert_allclose(b, 0.5)
    np.testing.assert_allclose(se, 0.02 / (np.sqrt(0.1) * np.log(10)))
    assert spread_exponent(0.1, 0.01, 50, 500)[0] == pytest.approx(1.0)
    for bad in (
        (0.0, 0.1, 50, 500),
        (-0.2, 0.1, 50, 500),
        (np.nan, 0.1, 50, 500),
        (0.3, 0.1, 50, 50),
    ):
        assert all(np.isnan(spread_exponent(*bad)))


def test_spread_claim_fails_an_inverse_width_spread(measured):
    """Shrinking the wide nets' deviations from their mean by another sqrt(16/256) makes the
    SD scale as 1/n (exponent 1): the exponent claim fails; untouched it does not."""
    runs, theory, p = measured
    fig2 = runs.block.str.startswith("Fig. 2") & (runs.metric == "ntk") & (runs.width == 256)
    mean = runs[fig2].groupby(["arch", "theta"]).value.transform("mean")
    squeezed = runs.copy()
    squeezed.loc[fig2, "value"] = mean + (runs.loc[fig2, "value"] - mean) * 0.25
    got = claims_table(squeezed, theory, p.for_job("claims")).set_index("claim_id")
    for a in ("resnet_fc", "densenet_fc"):
        r = got.loc[f"fig2_spread_scales_as_inv_sqrt_width[{a}]"]
        assert r["measured"] == pytest.approx(1.0, abs=0.3) and r["verdict"] == "fail", r["detail"]


def test_figures(measured):
    runs, theory, p = measured
    n_axes = {"residual_ntk_angles": 4, "residual_ntk_diagonal": 2}
    assert set(SPEC.figures) == set(n_axes)
    for name, spec in SPEC.figures.items():
        assert spec.caption
        fig = getattr(study_figures, spec.function)(runs, theory, p.for_job("figure"))
        assert len(fig.axes) == n_axes[name]
        plt.close(fig)
    # every claim is linked to the figure that shows it
    claims = claims_table(runs, theory, p.for_job("claims"))
    shown = {c: [n for n, f in SPEC.figures.items() if f.shows(c)] for c in claims.claim_id}
    assert all(shown.values()), shown
    assert all(v == ["residual_ntk_angles"] for c, v in shown.items() if c.startswith("fig2_"))


@pytest.mark.parametrize("scale,depth,inits", [("quick", 3, 32), ("paper", 10, 200)])
def test_shipped_config_expands(scale, depth, inits):
    path = ROOT / "config/studies/residual_ntk.yaml"
    cfg = load_yaml(path)
    jsonschema.validate(
        cfg, yaml.safe_load((ROOT / "workflow/schemas/study.schema.yaml").read_text())
    )
    st = build_study("residual_ntk", path, cfg, scale, 64)
    assert st.kind == "residual_ntk" and cfg["paper"] == "001" and SPEC.task == "measure"
    labels = st.labels
    df = pd.DataFrame([{**r.as_dict(), "label": labels[r.run_id]} for r in st.runs])
    assert (df.activation == "relu").all() and np.allclose(df.sigma_w2, 2.0)
    fig2 = df[df.label.str.startswith("Fig. 2")]
    assert set(fig2.arch) == {"resnet_fc", "densenet_fc"} and set(fig2.width) == {50, 500}
    assert (fig2.depth == depth).all() and (fig2[fig2.arch == "resnet_fc"].branch_depth == 2).all()
    assert (fig2.groupby(["arch", "width"]).size() == inits).all()
    assert cfg["measure"]["n_angles"] == 20 and st.params.measure.n_angles == 20
    # every run has theory rows: depth tabulated, ResNet (m, alpha) listed
    assert df.depth.max() <= cfg["theory"]["max_depth"]
    listed = {(s["branch_depth"], s["alpha"]) for s in cfg["theory"]["resnet"]}
    res = df[df.arch == "resnet_fc"]
    assert set(zip(res.branch_depth, res.alpha)) <= listed
    assert df.label.str.startswith("diagonal").any()


@pytest.mark.parametrize("scale", ["quick", "paper"])
def test_shipped_regime_and_axes(scale):
    """The diagonal claims test means that are exact at every width and depth (Thm. 4.1), so a
    fail of the printed Eq. 29 contradicts the paper at both scales; the Fig. 2 claims depend on
    the depth and alpha that 001 does not state for Fig. 2 (alpha only for the ResNet)."""
    from sigprop.claims.reading import claim_axes, claim_regime, reading, tolerance_source

    cfg = load_yaml(ROOT / "config/studies/residual_ntk.yaml")
    regime, dep = cfg["scales"][scale].get("regime") or {}, cfg["depends_on"]
    for cid in (
        "eq29_densenet_diagonal_printed",
        "densenet_diagonal_harmonic",
        "eq25_resnet_diagonal[m=2, alpha=1]",
    ):
        assert claim_axes(cid, dep) == () and claim_regime(cid, regime, dep) == ""
    # the diagonal means are exact, so the study file declares no tolerance beyond sampling error
    src = tolerance_source("eq29_densenet_diagonal_printed", cfg["tolerance_sources"])
    assert src.startswith("exact:") and "Thm. 4.1" in src
    assert (
        reading("fail", claim_regime("eq29_densenet_diagonal_printed", regime, dep), scale, src)
        == "contradicts the paper"
    )
    res = claim_regime("fig2_mean_matches_theory[resnet_fc, n=50]", regime, dep)
    dense = claim_regime("fig2_spread_scales_as_inv_sqrt_width[densenet_fc]", regime, dep)
    assert "depth:" in res and "alpha" in res and "depth:" in dense and "alpha" not in dense
    assert "samples" not in res and "width" not in regime
