"""Training speed (000 Fig. 6): τ extraction, the collapse measure and the claims on synthetic
run tables whose answer is known, the figure, and the shipped config."""

import numpy as np
import pandas as pd
import pytest

from sigprop.registry import resolve
from sigprop.studies.training_speed import speed
from sigprop.studies.training_speed.analysis import theory_value
from sigprop.studies.training_speed.claims import claims_table
from sigprop.studies.training_speed.figures import tau_curves
from sigprop.studies.training_speed.theory import theory_table

CFG = {
    "name": "ts",
    "analysis": {"min_overlap_decades": 0.3, "grid_step_decades": 0.01, "control_depths": [125]},
    "claims": {
        "collapse_ratio": 0.5,
        "outlier_ratio": 2.0,
        "outlier_min_gap": 0.3,
        "paper_collapse_depth": {"0.99": 120, "0.98": 55},
        "paper_outlier_depth": {"0.99": 300, "0.98": 200},
        "seed_z": 3.0,
    },
}
P = resolve("training_speed", CFG, "quick")
LRS = 10 ** np.arange(-3.5, 0.01, 0.5)
T, EV = 300, 5


def _run(rho, depth, lr, tau, seed=0, diverged=False):
    """Rows of one run: its target_step (τ, or −1) and diverged_step."""
    base = {
        "study": "ts",
        "shard_id": "s",
        "run_id": f"r{rho}-{depth}-{lr:.3g}-{seed}",
        "keep_rate": rho,
        "depth": depth,
        "lr": lr,
        "seed": seed,
        "sigma_w2": 1.7,
        "sigma_b2": 0.05,
        "activation": "tanh",
        "width": 32,
        "steps": T,
        "eval_every": EV,
        "target_acc": 0.25,
        "batch_size": 128,
        "dataset": "digits",
        "optimizer": "sgd",
    }
    return [
        dict(base, step=0, metric="test_acc", value=0.1),
        dict(base, step=max(tau, 0), metric="target_step", value=float(tau)),
        dict(
            base,
            step=5 if diverged else -1,
            metric="diverged_step",
            value=5.0 if diverged else -1.0,
        ),
    ]


def _tau(A, x):
    """τ = A / x, rounded up to the evaluation grid; −1 beyond the step budget."""
    t = int(np.ceil(A / x / EV) * EV)
    return t if t <= T else -1


SEEDS = (0, 1, 2)


def _noise(rho, depth, seed, sd=0.05):
    """A fixed multiplicative jitter of τ per (ρ, depth, seed), so that statistics vary over
    seeds (an SE of 0 would make any effect significant)."""
    rng = np.random.default_rng([int(rho * 100), depth, seed])
    return float(np.exp(sd * rng.standard_normal()))


def _law(law, lr, depth, A_etaL=2.0, A_eta=0.5):
    return (A_etaL, lr * depth) if law == "etaL" else (A_eta, lr)


def _runs(law1="etaL", law_drop="eta", outlier_reaches=False, seeds=SEEDS):
    """ρ = 1 over L ∈ {6, 12, 24, 48} following τ = 2/(ηL) ('etaL') or τ = 0.5/η ('eta');
    ρ = 0.98 over L ∈ {6, 12, 24} following ``law_drop`` and an outlier L = 125 that never
    reaches p (or, with ``outlier_reaches``, follows the same law as the others); each seed
    jitters τ per depth by a few per cent."""
    rows = []
    for seed in seeds:
        for d in (6, 12, 24, 48):
            j = _noise(1.0, d, seed)
            for lr in LRS:
                A, x = _law(law1, lr, d)
                rows += _run(1.0, d, lr, _tau(A * j, x), seed)
        for d in (6, 12, 24, 125):
            j = _noise(0.98, d, seed)
            for lr in LRS:
                if d == 125 and not outlier_reaches:
                    tau = -1
                else:
                    A, x = _law(law_drop, lr, d)
                    tau = _tau(A * j, x)
                rows += _run(0.98, d, lr, tau, seed)
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def theory():
    return theory_table(
        "ts",
        P,
        [
            {"activation": "tanh", "sigma_w2": 1.760954641, "sigma_b2": 0.05, "keep_rate": 1.0},
            {"activation": "tanh", "sigma_w2": 1.725735548, "sigma_b2": 0.05, "keep_rate": 0.98},
        ],
    )


# ------------------------------------------------------------------ τ extraction


def test_tau_table_marks_censored_and_diverged_runs():
    runs = pd.DataFrame(
        _run(1.0, 6, 0.01, 40) + _run(1.0, 6, 0.1, -1) + _run(1.0, 6, 1.0, -1, diverged=True)
    )
    t = speed.tau_table(runs).set_index("lr")
    assert t.loc[0.01, "tau"] == 40 and t.loc[0.01, "reached"]
    assert np.isinf(t.loc[0.1, "tau"]) and not t.loc[0.1, "reached"] and not t.loc[0.1, "diverged"]
    assert np.isinf(t.loc[1.0, "tau"]) and t.loc[1.0, "diverged"]


def test_tau_table_needs_target_step_rows():
    runs = pd.DataFrame(_run(1.0, 6, 0.01, 40))
    with pytest.raises(ValueError, match="target_step"):
        speed.tau_table(runs[runs.metric != "target_step"])


def test_curves_take_the_median_over_seeds_with_censoring():
    rows = _run(1.0, 6, 0.01, 40, 0) + _run(1.0, 6, 0.01, 60, 1) + _run(1.0, 6, 0.01, -1, 2)
    rows += _run(1.0, 6, 0.1, -1, 0) + _run(1.0, 6, 0.1, -1, 1) + _run(1.0, 6, 0.1, 10, 2)
    c = speed.curves(speed.tau_table(pd.DataFrame(rows))).set_index("lr")
    assert c.loc[0.01, "tau"] == 60 and c.loc[0.01, "reached"] and c.loc[0.01, "n_reached"] == 2
    assert not c.loc[0.1, "reached"] and c.loc[0.1, "n_seeds"] == 3


def test_log_tau_reads_zero_as_half_an_evaluation():
    np.testing.assert_allclose(speed.log_tau([0, 10, np.inf], 5), [np.log(2.5), np.log(10), np.inf])


# ------------------------------------------------------------------ collapse measure


def test_interpolation_never_bridges_a_censored_point():
    x = np.array([0.0, 1.0, 2.0, 3.0])
    y = np.array([1.0, 2.0, np.inf, 4.0])
    v = speed.interp_defined(np.array([0.5, 1.0, 1.5, 2.5, 3.0, 3.5]), x, y)
    np.testing.assert_allclose(v[:2], [1.5, 2.0])
    assert np.isnan(v[2]) and np.isnan(v[3]) and v[4] == 4.0 and np.isnan(v[5])


def _power_curves(law, depths=(6, 12, 24, 48), lrs=LRS):
    """Exact (unquantized) τ = 1/(ηL) or τ = 1/η: straight parallel lines in (log η, ln τ)."""
    rows = [
        {
            "keep_rate": 1.0,
            "depth": d,
            "lr": lr,
            "eval_every": EV,
            "steps": 10**9,
            "tau": 1.0 / (lr * d if law == "etaL" else lr),
        }
        for d in depths
        for lr in lrs
    ]
    c = pd.DataFrame(rows)
    c["reached"] = True
    return c


def test_dispersion_is_zero_for_the_collapsing_scaling_and_ln_ratio_for_the_other():
    depths = (6, 12, 24, 48)
    c = _power_curves("etaL", depths)
    assert speed.dispersion(c, True, 0.3)["D"] == pytest.approx(0.0, abs=1e-12)
    pairs = [np.log(b / a) for i, a in enumerate(depths) for b in depths[i + 1 :]]
    res = speed.dispersion(c, False, 0.3)
    assert res["D"] == pytest.approx(np.mean(pairs), rel=1e-9)
    assert res["n_compared"] == res["n_pairs"] == 6
    c = _power_curves("eta", depths)
    assert speed.dispersion(c, False, 0.3)["D"] == pytest.approx(0.0, abs=1e-12)
    assert speed.dispersion(c, True, 0.3)["D"] == pytest.approx(np.mean(pairs), rel=1e-9)


def test_dispersion_skips_pairs_that_barely_overlap():
    c = _power_curves("eta", (6, 48), lrs=[1e-3, 1e-2])
    c2 = c.copy()
    c2.loc[c2.depth == 48, "lr"] = c2.loc[c2.depth == 48, "lr"] * 10**0.8  # overlap 0.2 decades
    res = speed.dispersion(c2, False, 0.3)
    assert res["n_compared"] == 0 and np.isnan(res["D"])
    assert speed.dispersion(c2, False, 0.1)["n_compared"] == 1


def test_outlier_gap_counts_a_censored_outlier_as_a_lower_bound():
    c = _power_curves("eta", (6, 12, 125), lrs=[0.01, 0.1])
    c["steps"] = 300
    c.loc[c.depth == 125, "tau"] = np.inf
    g = speed.outlier_gap(c, 125)
    expect = np.mean([np.log(300 / 100), np.log(300 / 10)])
    assert g["D_out"] == pytest.approx(expect) and g["D_in"] == pytest.approx(0.0)
    assert g["out_reached"] == 0 and g["out_points"] == 2


# ------------------------------------------------------------------ claims


def _control(trains: bool, seeds=SEEDS) -> pd.DataFrame:
    """ρ = 1 at the outlier depth L = 125: trains like the shallow ρ = 0.98 nets (τ = 0.5/η)
    or never reaches p."""
    rows = []
    for seed in seeds:
        j = _noise(1.0, 125, seed)
        for lr in LRS:
            rows += _run(1.0, 125, lr, _tau(0.5 * j, lr) if trains else -1, seed)
    return pd.DataFrame(rows)


def test_claims_pass_when_the_runs_follow_the_paper(theory):
    runs = pd.concat([_runs(), _control(trains=True)], ignore_index=True)
    c = claims_table(runs, theory, P).set_index("claim_id")
    assert list(c.index) == [
        "collapse_etaL[rho=1]",
        "collapse_eta[rho=0.98]",
        "outlier_departs[rho=0.98]",
    ]
    assert (c.verdict == "pass").all(), c[["measured", "detail"]]
    assert "55" in c.loc["collapse_eta[rho=0.98]", "detail"]  # the paper's depth vs ξ2 is stated
    assert "ξ2" in c.loc["collapse_eta[rho=0.98]", "detail"]
    assert "3 seeds" in c.loc["collapse_etaL[rho=1]", "detail"]
    # every decided row states its power, and the SE is over seeds (not zero)
    assert np.isfinite(c.detectable).all() and (c.detectable > 0).all()
    from sigprop.claims import check_table

    check_table(c.reset_index(), "test")


def test_claims_fail_when_the_runs_follow_the_other_scaling(theory):
    c = claims_table(_runs(law1="eta", law_drop="etaL", outlier_reaches=True), theory, P).set_index(
        "claim_id"
    )
    assert c.loc["collapse_etaL[rho=1]", "verdict"] == "fail"
    assert c.loc["collapse_eta[rho=0.98]", "verdict"] == "fail"


def test_a_collapse_in_eta_that_the_dropout_free_control_shares_is_not_evidence(theory):
    """ρ = 1 collapses in η as well (as on digits at quick scale): the ρ < 1 curves
    collapse in η, but no better than the control at the same depths, so the claim is
    inconclusive, not a pass; the measured effect is the difference of the ln ratios."""
    c = claims_table(_runs(law1="eta", law_drop="eta"), theory, P).set_index("claim_id")
    assert c.loc["collapse_etaL[rho=1]", "verdict"] == "fail"
    r = c.loc["collapse_eta[rho=0.98]"]
    assert r.verdict == "inconclusive", r.detail
    assert "collapses in η as well" in r.detail
    assert np.isfinite(r.detectable) and abs(r.measured) <= r.detectable  # δ within noise


def test_one_seed_gives_no_standard_error_and_no_verdict(theory):
    runs = pd.concat([_runs(seeds=(0,)), _control(trains=True, seeds=(0,))], ignore_index=True)
    c = claims_table(runs, theory, P)
    assert (c.verdict == "inconclusive").all(), c[["claim_id", "verdict"]]


def test_outlier_claim_fails_when_the_deep_net_collapses_too(theory):
    c = claims_table(_runs(outlier_reaches=True), theory, P).set_index("claim_id")
    assert c.loc["outlier_departs[rho=0.98]", "verdict"] == "fail"


def test_outlier_claim_without_a_control_at_its_depth_is_inconclusive(theory):
    c = claims_table(_runs(), theory, P).set_index("claim_id")
    r = c.loc["outlier_departs[rho=0.98]"]
    assert r.verdict == "inconclusive" and "no ρ = 1 run at L = 125" in r.detail


def test_a_dropout_free_control_that_trains_keeps_the_outlier_claim(theory):
    runs = pd.concat([_runs(), _control(trains=True)], ignore_index=True)
    c = claims_table(runs, theory, P).set_index("claim_id")
    assert c.loc["outlier_departs[rho=0.98]", "verdict"] == "pass"
    assert "control ρ = 1 at L = 125" in c.loc["outlier_departs[rho=0.98]", "detail"]
    # the control is not part of panel (a)'s collapse set
    assert "L ∈ {6, 12, 24, 48}" in c.loc["collapse_etaL[rho=1]", "detail"]


def test_a_dropout_free_control_that_departs_too_makes_the_outlier_claim_inconclusive(theory):
    runs = pd.concat([_runs(), _control(trains=False)], ignore_index=True)
    c = claims_table(runs, theory, P).set_index("claim_id")
    r = c.loc["outlier_departs[rho=0.98]"]
    assert r.verdict == "inconclusive"
    # neither reaches p anywhere: both D are the same censoring bound, e is not measured
    assert "censored" in r.detail and "3 of 3 paired seeds left out" in r.detail
    assert np.isnan(r.measured) and np.isinf(r.detectable)  # nothing detectable


def _control_at_bound(seeds=SEEDS, at_T=((2, 0),)) -> pd.DataFrame:
    """ρ = 1 at L = 125 that never reaches p, except that it reaches it at the last evaluation
    (τ = T, which counts as the censoring bound) at the (seed, learning-rate index) pairs
    ``at_T``: the quick run's ρ = 0.98 case."""
    rows = []
    for seed in seeds:
        for i, lr in enumerate(LRS):
            rows += _run(1.0, 125, lr, T if (seed, i) in at_T else -1, seed)
    return pd.DataFrame(rows)


def test_a_control_censored_at_the_same_bound_gives_detectable_inf_not_zero(theory):
    """Both the deep ρ < 1 net and its ρ = 1 control sit at the censoring bound in every seed,
    the control reaching p once only at τ = T (as at quick scale for ρ = 0.98): the per-seed
    excess e = D_out − D_ctrl is 0 in every seed with SE 0 by construction.  That is no
    resolution: detectable is inf (it was 0), e is not measured, and the row cannot pass or
    fail."""
    runs = pd.concat([_runs(), _control_at_bound()], ignore_index=True)
    c = claims_table(runs, theory, P).set_index("claim_id")
    r = c.loc["outlier_departs[rho=0.98]"]
    assert "reached p at 1/" in r.detail  # the control did reach p, at τ = T
    assert np.isinf(r.detectable) and np.isnan(r.measured)
    assert r.verdict == "inconclusive" and "censored" in r.detail
    from sigprop.claims import check_table, values

    assert values(r)["censored"] == 1.0
    check_table(c.reset_index(), "test")


def test_a_seed_censored_on_both_sides_is_left_out_of_the_excess(theory):
    """The control trains in seeds 0 and 1 and never reaches p in seed 2, where the deep net is
    censored too: seed 2 carries no information on e and is left out; e over seeds 0 and 1
    still decides (a pass, the control collapsing with the shallow nets)."""
    ctrl = pd.concat(
        [_control(trains=True, seeds=(0, 1)), _control(trains=False, seeds=(2,))], ignore_index=True
    )
    c = claims_table(pd.concat([_runs(), ctrl], ignore_index=True), theory, P).set_index("claim_id")
    r = c.loc["outlier_departs[rho=0.98]"]
    assert "1 of 3 paired seeds left out" in r.detail and "over 2 seeds" in r.detail
    assert np.isfinite(r.detectable) and r.detectable > 0
    assert r.verdict == "pass", r.detail


def test_censored_pairs_and_zero_spread():
    from sigprop.studies.training_speed.claims import censored_pairs, resolution

    both = {0: True, 1: True, 2: True}
    cp = censored_pairs(both, both, {0: 0.0, 1: 0.0, 2: 0.0})
    assert cp["censored"] and cp["left_out"] == [0, 1, 2] and np.isnan(cp["mean_se"][0])
    # informative seeds whose differences have zero spread: censored as well
    cp = censored_pairs({0: True, 1: False, 2: False}, both, {0: 0.0, 1: 0.4, 2: 0.4})
    assert cp["censored"] and cp["informative"] == [1, 2]
    cp = censored_pairs({0: True, 1: False, 2: False}, both, {0: 0.0, 1: 0.4, 2: 0.5})
    assert not cp["censored"] and cp["mean_se"][0] == pytest.approx(0.45)
    assert resolution(3.0, 0.0) == np.inf and np.isnan(resolution(3.0, np.nan))
    assert resolution(3.0, 0.1) == pytest.approx(0.3)


def test_band_verdict_needs_the_mean_k_standard_errors_inside_the_band():
    from sigprop.studies.training_speed.claims import band_verdict

    lcr = np.log(0.5)
    assert band_verdict(-1.0, 0.05, 3, 3.0, lcr, 0.0) == "pass"
    assert band_verdict(-1.0, 0.2, 3, 3.0, lcr, 0.0) == "inconclusive"  # -1 + 0.6 > ln 0.5
    assert band_verdict(0.5, 0.1, 3, 3.0, lcr, 0.0) == "fail"
    assert band_verdict(0.2, 0.1, 3, 3.0, lcr, 0.0) == "inconclusive"
    assert band_verdict(-1.0, 0.05, 1, 3.0, lcr, 0.0) == "inconclusive"
    # seeds that agree exactly (SE 0) resolve nothing
    assert band_verdict(-1.0, 0.0, 3, 3.0, lcr, 0.0) == "inconclusive"
    # the mirrored fail threshold (collapse_fail_ratio = collapse_ratio): a ratio resolved
    # between 0.5 and 1 fails, which the threshold at a ratio of 1 leaves undecided
    assert band_verdict(-0.04, 0.174, 6, 3.0, lcr, lcr) == "fail"  # -0.56 >= ln 0.5
    assert band_verdict(-0.04, 0.174, 6, 3.0, lcr, 0.0) == "inconclusive"
    assert band_verdict(-0.3, 0.174, 6, 3.0, lcr, lcr) == "inconclusive"  # -0.82 < ln 0.5


def test_the_collapse_fail_ratio_is_read_from_the_config_and_checked():
    from sigprop.params import ParamError

    assert P.claims.collapse_fail_ratio == 0.5  # the default: the pass threshold mirrored
    one = resolve(
        "training_speed", {**CFG, "claims": {**CFG["claims"], "collapse_fail_ratio": 1}}, "quick"
    )
    assert one.claims.collapse_fail_ratio == 1.0
    with pytest.raises(ParamError, match="claims.collapse_fail_ratio"):
        resolve(
            "training_speed",
            {**CFG, "claims": {**CFG["claims"], "collapse_fail_ratio": 0.4}},
            "quick",
        )


# ------------------------------------------------------------------ theory, figure, config


def test_theory_table_on_the_critical_line(theory):
    from sigprop.tables import THEORY_COLUMNS

    assert set(THEORY_COLUMNS) <= set(theory.columns)
    chi1 = theory[theory.quantity == "chi1"].value.to_numpy()
    np.testing.assert_allclose(chi1, 1.0, atol=1e-8)
    assert np.isinf(theory_value(theory, 1.0, "xi2"))
    xi2 = theory_value(theory, 0.98, "xi2")
    assert 5 < xi2 < 20
    assert theory_value(theory, 0.98, "12xi2") == pytest.approx(12 * xi2)


def test_figure_has_three_panels_per_row(theory):
    import matplotlib

    fig = tau_curves(_runs(), theory, P)
    assert isinstance(fig, matplotlib.figure.Figure)
    assert len(fig.axes) == 4  # synthetic runs: two keep rates, two rows
    titles = [ax.get_title() for ax in fig.axes]
    assert sum(t.startswith("(") for t in titles) == 2
    assert fig.axes[0].get_xlabel() == r"$\eta L$" and fig.axes[1].get_xlabel() == r"$\eta$"
    matplotlib.pyplot.close(fig)


@pytest.mark.parametrize("scale", ["quick", "ladder5", "paper"])
def test_shipped_config_expands_on_the_critical_line(scale):
    import jsonschema
    import yaml

    from sigprop.config import build_study, load_yaml
    from sigprop.theory import meanfield

    path = "config/studies/training_speed.yaml"
    cfg = load_yaml(path)
    with open("workflow/schemas/study.schema.yaml") as f:
        jsonschema.validate(cfg, yaml.safe_load(f))
    st = build_study("training_speed", path, cfg, scale, 64)
    assert {r.keep_rate for r in st.runs} == {1.0, 0.99, 0.98}
    assert all(r.target_acc == 0.25 and r.activation == "tanh" for r in st.runs)
    for rho in (1.0, 0.99, 0.98):
        sw = {r.sigma_w2 for r in st.runs if r.keep_rate == rho}
        assert len(sw) == 1
        assert float(meanfield.chi1(sw.pop(), 0.05, rho, "tanh")) == pytest.approx(1.0, abs=1e-8)
        depths = sorted({r.depth for r in st.runs if r.keep_rate == rho})
        assert len(depths) >= 3
        # where the scale compares, every deep comparison depth of a keep rate < 1 has a
        # dropout-free control
        if rho < 1 and resolve("training_speed", cfg, scale).analysis.compare_deepest:
            assert max(depths) in {r.depth for r in st.runs if r.keep_rate == 1.0}
    # >= 3 seeds at every (keep rate, depth, learning rate) point: a training claim needs an SE
    per_point = {}
    for r in st.runs:
        per_point.setdefault((r.keep_rate, r.depth, r.lr), set()).add(r.seed)
    assert all(len(v) >= 3 for v in per_point.values())
    an = resolve("training_speed", cfg, scale).analysis
    if scale == "quick":  # no comparison depth: every depth is a collapse depth
        assert not an.compare_deepest and max(r.depth for r in st.runs) == 32
        assert len(st.runs) == 198 and len(st.shards) == 4  # the seeds share their depth's shard
    if scale == "ladder5":  # a rung compares again, with its controls
        assert an.compare_deepest and set(an.control_depths) == {125, 170}
        assert {r.depth for r in st.runs if r.keep_rate == 1.0} >= {125, 170}
    if scale == "paper":
        assert {r.dataset for r in st.runs} == {"cifar10"}
        assert {(r.width, r.batch_size, r.steps) for r in st.runs} == {(400, 1000, 1000)}
        assert max(r.depth for r in st.runs if r.keep_rate == 0.98) == 200


def test_figure_with_all_three_keep_rates(theory):
    import matplotlib

    runs = _runs()
    r99 = _runs(outlier_reaches=False)
    r99 = r99[r99.keep_rate == 0.98].assign(keep_rate=0.99)
    r99["run_id"] = r99.run_id + "b"
    th = pd.concat(
        [
            theory,
            theory_table(
                "ts",
                P,
                [
                    {
                        "activation": "tanh",
                        "sigma_w2": 1.743345095,
                        "sigma_b2": 0.05,
                        "keep_rate": 0.99,
                    }
                ],
            ),
        ]
    )
    fig = tau_curves(pd.concat([runs, r99]), th, P)
    top = [ax for ax in fig.axes if ax.get_title().startswith("(")]
    assert [t.get_title()[:3] for t in top] == ["(a)", "(b)", "(c)"]
    assert len(fig.axes) == 6
    c = claims_table(pd.concat([runs, r99]), th, P)
    assert len(c) == 5
    matplotlib.pyplot.close(fig)


def test_jobs_read_only_their_sections(theory):
    """The figure job (measure, theory, analysis) draws without the claim thresholds; the theory
    job needs no analysis; claim keys under analysis and keys that are no keep rates are refused."""
    import matplotlib

    from sigprop.params import ParamError

    fig = tau_curves(_runs(), theory, P.for_job("figure"))
    matplotlib.pyplot.close(fig)
    th = theory_table(
        "ts",
        P.for_job("theory"),
        [{"activation": "tanh", "sigma_w2": 1.760954641, "sigma_b2": 0.05, "keep_rate": 1.0}],
    )
    assert len(th) == 8
    with pytest.raises(ParamError, match="analysis.collapse_ratio"):
        resolve("training_speed", {"analysis": {"collapse_ratio": 0.5}}, "quick")
    with pytest.raises(ParamError, match="paper_outlier_depth"):
        resolve("training_speed", {"claims": {"paper_outlier_depth": {"rho": 300}}}, "quick")


def test_a_keep_rate_with_one_depth_is_reported_inconclusive_not_skipped(theory):
    """Found by the paper-scale smoke run (2 runs per block, so one depth per keep rate): the
    claims table came out empty.  Every keep rate now gets its row, inconclusive."""
    runs = _runs()
    one = runs[runs.depth.isin([6])]
    c = claims_table(one, theory, P).set_index("claim_id")
    assert {"collapse_etaL[rho=1]", "collapse_eta[rho=0.98]", "outlier_departs[rho=0.98]"} <= set(
        c.index
    )
    assert (c.verdict == "inconclusive").all()
    assert c.loc["outlier_departs[rho=0.98]", "test"].startswith("not computed")
    from sigprop.claims import check_table

    check_table(c.reset_index(), "test")


def test_a_scale_without_comparison_depth_collapses_every_depth_and_says_so(theory):
    """``analysis.compare_deepest`` off: the deepest ρ < 1 depth joins the collapse set, and each
    outlier row is there, inconclusive, saying that nothing was computed."""
    off = resolve(
        "training_speed",
        {**CFG, "analysis": {**CFG["analysis"], "compare_deepest": False}},
        "quick",
    )
    assert off.analysis.compare_deepest is False and P.analysis.compare_deepest is True
    runs = _runs()
    on_c = claims_table(runs, theory, P).set_index("claim_id")
    off_c = claims_table(runs, theory, off).set_index("claim_id")
    assert set(on_c.index) == set(off_c.index)
    rows = [i for i in off_c.index if i.startswith("outlier_departs")]
    assert rows and (off_c.loc[rows, "verdict"] == "inconclusive").all()
    assert off_c.loc[rows, "test"].str.startswith("not computed").all()
    assert off_c.loc[rows, "measured"].isna().all()
    assert not on_c.loc[rows, "test"].str.startswith("not computed").any()
    # the comparison depth joins the collapse set: the collapse rows name it
    deep = max(runs[runs.keep_rate < 1].depth)
    eta = [i for i in off_c.index if i.startswith("collapse_eta[")]
    assert all(str(deep) in off_c.loc[i, "detail"].split(":")[0] for i in eta)
    assert not any(str(deep) in on_c.loc[i, "detail"].split(":")[0] for i in eta)
    from sigprop.claims import check_table

    check_table(off_c.reset_index(), "test")


def test_rows_carry_the_standard_error_of_their_measured_effect(theory):
    """``se`` is the SE over seeds of the measured statistic (r for ρ = 1, δ and e for ρ < 1)
    and ``detectable`` is seed_z of it; with one seed, or a censored excess, there is none."""
    runs = pd.concat([_runs(), _control(trains=True)], ignore_index=True)
    c = claims_table(runs, theory, P).set_index("claim_id")
    assert np.isfinite(c.se).all() and (c.se > 0).all(), c[["se"]]
    np.testing.assert_allclose(c.detectable, 3.0 * c.se)
    from sigprop.claims import values

    assert c.loc["collapse_etaL[rho=1]", "se"] == pytest.approx(
        values(c.loc["collapse_etaL[rho=1]"])["se"]
    )
    assert c.loc["collapse_eta[rho=0.98]", "se"] == pytest.approx(
        values(c.loc["collapse_eta[rho=0.98]"])["se_delta"]
    )
    one = claims_table(
        pd.concat([_runs(seeds=(0,)), _control(trains=True, seeds=(0,))], ignore_index=True),
        theory,
        P,
    )
    assert one.se.isna().all()
    censored = claims_table(
        pd.concat([_runs(), _control_at_bound()], ignore_index=True), theory, P
    ).set_index("claim_id")
    assert np.isnan(censored.loc["outlier_departs[rho=0.98]", "se"])
