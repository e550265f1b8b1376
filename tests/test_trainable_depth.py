"""The trainable-depth analysis on synthetic run tables whose answer is known."""

import numpy as np
import pandas as pd
import pytest

from sigprop.registry import resolve
from sigprop.studies.trainable_depth import trainability
from sigprop.studies.trainable_depth.analysis import curve
from sigprop.studies.trainable_depth.claims import claims_table
from sigprop.studies.trainable_depth.figures import heatmap
from sigprop.studies.trainable_depth.theory import theory_table

CFG = {
    "name": "td",
    "analysis": {"metric": "train_acc"},
    "claims": {"trainable_fraction": 0.5, "error_tolerance": 0.02, "seed_z": 3.0},
}
P = resolve("trainable_depth", CFG, "quick")
SW2 = [1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0]
DEPTHS = [4, 8, 16, 24, 32, 48, 64, 96]


@pytest.fixture(scope="module")
def theory():
    p = resolve(
        "trainable_depth",
        {
            "theory": {
                "activation": "tanh",
                "sigma_b2": 0.05,
                "sigma_w2_range": [1.0, 4.0],
                "points": 61,
            }
        },
        "quick",
    )
    return theory_table("td", p, [{"keep_rate": 1.0}, {"keep_rate": 0.98}])


def _runs(theory, rule: str, seeds=(0, 1, 2), rules=None) -> pd.DataFrame:
    """A run table where exactly the cells with L <= rule(σ_w²) reach accuracy 0.95; one
    block per keep rate; ``rules`` (one per seed) overrides ``rule`` seed by seed."""
    rows = []
    for i, seed in enumerate(seeds):
        f = curve(theory, rules[i] if rules else rule)
        for rho in (1.0, 0.98):
            for sw in SW2:
                for d in DEPTHS:
                    acc = 0.95 if d <= f(rho, sw) else 0.11
                    rid = f"r{rho}{sw}{d}s{seed}"
                    for step, v in ((0, 0.1), (300, acc)):
                        rows.append(
                            dict(
                                study="td",
                                shard_id="s",
                                run_id=rid,
                                step=step,
                                metric="train_acc",
                                value=v,
                                keep_rate=rho,
                                sigma_w2=sw,
                                depth=d,
                                dataset="digits",
                                sigma_b2=0.05,
                                activation="tanh",
                                steps=300,
                                width=8,
                                seed=seed,
                                block=f"rho = {rho:g}",
                            )
                        )
    return pd.DataFrame(rows)


def test_theory_table_has_the_overlays(theory):
    assert set(theory.quantity) >= {"xi1", "xi2", "12xi1", "6xi2", "12xi2", "min_12xi1_12xi2"}
    t = theory[(theory.quantity == "min_12xi1_12xi2")]
    a = theory[theory.quantity == "12xi1"].value.to_numpy()
    b = theory[theory.quantity == "12xi2"].value.to_numpy()
    np.testing.assert_allclose(t.value.to_numpy(), np.minimum(a, b))


def test_claim_passes_when_the_boundary_is_min_12xi(theory):
    c = claims_table(_runs(theory, "min_12xi1_12xi2"), theory, P).set_index("claim_id")
    assert (c.verdict == "pass").all(), c[["measured", "detail"]]
    assert c.loc["boundary_min12xi_vs_6xi2[all]", "measured"] > 0.02


def test_claim_fails_when_the_boundary_is_6xi2(theory):
    c = claims_table(_runs(theory, "6xi2"), theory, P).set_index("claim_id")
    assert c.loc["boundary_min12xi_vs_6xi2[all]", "verdict"] == "fail"
    from sigprop.claims import check_table, values

    check_table(c.reset_index(), "test")
    v = values(c.loc["boundary_min12xi_vs_6xi2[all]"])  # the keys 000 Table 1 reads
    assert {"err_min_12xi1_12xi2", "err_6xi2", "cells"} <= set(v) and v["err_6xi2"] == 0
    assert v["n_seeds"] == 3


def test_seeds_that_disagree_leave_the_claim_inconclusive(theory):
    """Two seeds follow min(12ξ1, 12ξ2), one follows 6ξ2: the seed mean favours min(12ξ1,
    12ξ2), but not by 3 SE over seeds."""
    runs = _runs(theory, "", rules=["min_12xi1_12xi2", "min_12xi1_12xi2", "6xi2"])
    c = claims_table(runs, theory, P).set_index("claim_id")
    r = c.loc["boundary_min12xi_vs_6xi2[all]"]
    assert r.measured > 0.02 and r.verdict == "inconclusive", r.detail
    assert r.detectable > r.measured


def test_one_seed_has_no_standard_error_and_no_verdict(theory):
    c = claims_table(_runs(theory, "min_12xi1_12xi2", seeds=(0,)), theory, P)
    assert (c.verdict == "inconclusive").all()


def test_the_standard_error_is_at_least_one_cell_per_seed():
    from sigprop.studies.trainable_depth.claims import decide

    # identical differences over 3 seeds (sample SE 0): one cell of 30 is not enough
    assert decide(1 / 30, 0.0, 3, 30, 3.0, 0.02)[0] == "inconclusive"
    verdict, margin, se = decide(2 / 30, 0.0, 3, 30, 3.0, 0.02)
    assert verdict == "pass" and se == pytest.approx(1 / (30 * np.sqrt(3)))
    assert margin == pytest.approx(3 * se)
    assert decide(-2 / 30, 0.0, 3, 30, 3.0, 0.02)[0] == "fail"
    assert decide(0.05, 0.0, 3, 1000, 3.0, 0.02)[1] == pytest.approx(0.02)  # the tolerance floor


def test_a_mean_on_its_margin_is_not_above_it_whatever_the_rounding():
    """Four seeds over 12 cells where the 6ξ2 rule misses 1, 3, 1 and 1 cells more than the
    other: the mean, 1.5 cells, equals the margin of 3 SE at the one-cell floor exactly; as a
    difference of fit errors in floating point it lands one ulp above (0.12500000000000003
    against 0.125), which must not read as a pass."""
    from sigprop.studies.trainable_depth.claims import decide

    err_min = np.array([2, 0, 2, 2]) / 12
    err_6 = np.array([3, 3, 3, 3]) / 12
    mean = float(np.mean(err_6 - err_min))
    assert mean > 0.125  # the rounding this test is about
    verdict, margin, _ = decide(mean, 0.0, 4, 12, 3.0, 0.02)
    assert margin == pytest.approx(0.125) and verdict == "inconclusive"
    assert decide(-mean, 0.0, 4, 12, 3.0, 0.02)[0] == "inconclusive"
    assert decide(mean + 1 / 48, 0.0, 4, 12, 3.0, 0.02)[0] == "pass"  # a quarter cell more


def test_a_grid_where_the_two_bounds_agree_detects_nothing(theory):
    """Depths 4-16 only: both 6ξ2 and min(12ξ1, 12ξ2) lie above every depth in every σ_w²
    column, so both rules call every cell trainable and their fit errors are equal whatever
    trains (the comparison is censored by the depth grid).  Detectable is inf, not the one-cell
    SE floor, and no row can pass or fail."""
    from sigprop.claims import check_table, values
    from sigprop.studies.trainable_depth.claims import disagreement

    runs = _runs(theory, "min_12xi1_12xi2")
    runs = runs[runs.depth <= 16]
    c = claims_table(runs, theory, P).set_index("claim_id")
    assert (c.verdict == "inconclusive").all()
    assert np.isinf(c.detectable).all(), c[["detectable", "test"]]
    assert all(values(r)["disagreement"] == 0 for _, r in c.iterrows())
    assert "detectable = inf" in c.test.iloc[0]
    check_table(c.reset_index(), "test")
    # the full grid: the rules disagree on some cells, so the rows keep a finite resolution
    cells = trainability.trainable(
        trainability.final_accuracy(_runs(theory, "6xi2", seeds=(0,)), "train_acc", 0.1), 0.5, 0.1
    )
    assert 0 < disagreement(cells, curve(theory, "6xi2"), curve(theory, "min_12xi1_12xi2")) < 1
    full = claims_table(_runs(theory, "6xi2"), theory, P)
    assert np.isfinite(full.detectable).all()


def test_diverged_runs_count_as_chance_and_boundary(theory):
    runs = _runs(theory, "6xi2", seeds=(0,))
    runs.loc[runs.index[-1], "value"] = np.nan  # a diverged run
    acc = trainability.final_accuracy(runs, "train_acc", chance=0.1)
    assert acc.n_diverged.sum() == 1 and acc.acc.min() == pytest.approx(0.1)
    cells = trainability.trainable(acc, 0.5, 0.1)
    assert len(cells) == len(acc) and not cells.trainable[acc.n_diverged.to_numpy() > 0].any()


def test_heatmap_figure_builds(theory):
    import matplotlib

    fig = heatmap(_runs(theory, "12xi1"), theory, P)
    assert isinstance(fig, matplotlib.figure.Figure)
    panels = [ax for ax in fig.axes if ax.get_title().startswith("rho = ")]
    assert len(panels) == 2 and all(len(ax.lines) == 3 for ax in panels)


def test_panels_are_the_config_blocks(theory):
    """Panels (000 Fig. 7 (a)-(h)) come from block labels (the run table's ``block``): two
    blocks with one keep rate but different initializations give two panels, each with its own
    claim row and fit errors."""
    from sigprop.claims import values
    from sigprop.config import expand_blocks

    fixed = {
        "arch": "fc",
        "dataset": "digits",
        "width": 8,
        "activation": "tanh",
        "sigma_b2": 0.05,
        "keep_rate": 1.0,
        "steps": 300,
        "eval_every": 300,
    }
    grid = {"depth": DEPTHS, "sigma_w2": SW2, "seed": [0, 1, 2]}
    cfg = {
        **CFG,
        "scales": {
            "quick": {
                "blocks": [
                    {"label": "(a) gaussian", "fixed": {**fixed, "init": "gaussian"}, "grid": grid},
                    {
                        "label": "(c) orthogonal",
                        "fixed": {**fixed, "init": "orthogonal"},
                        "grid": grid,
                    },
                ]
            }
        },
    }
    p = resolve("trainable_depth", cfg, "quick")
    f6, fmin = curve(theory, "6xi2"), curve(theory, "min_12xi1_12xi2")
    rows = []
    for r, label in expand_blocks(cfg, "quick"):
        rule = f6 if r.init == "gaussian" else fmin  # (a) follows 6ξ2, (c) min(12ξ1, 12ξ2)
        acc = 0.95 if r.depth <= rule(1.0, r.sigma_w2) else 0.11
        for step, v in ((0, 0.1), (300, acc)):
            rows.append(
                dict(
                    study="td",
                    shard_id="s",
                    run_id=r.run_id,
                    step=step,
                    metric="train_acc",
                    value=v,
                    **r.as_dict(),
                    block=label,
                )
            )
    c = claims_table(pd.DataFrame(rows), theory, p).set_index("claim_id")
    assert list(c.index) == [
        "boundary_min12xi_vs_6xi2[all]",
        "boundary_min12xi_vs_6xi2[(a)]",
        "boundary_min12xi_vs_6xi2[(c)]",
    ]
    assert c.loc["boundary_min12xi_vs_6xi2[(a)]", "verdict"] == "fail"
    assert c.loc["boundary_min12xi_vs_6xi2[(c)]", "verdict"] == "pass"
    v = values(c.loc["boundary_min12xi_vs_6xi2[(a)]"])
    assert (
        v["err_6xi2"] == 0
        and v["err_min_12xi1_12xi2"] > 0.02
        and v["cells"] == len(SW2) * len(DEPTHS)
    )
    fig = heatmap(pd.DataFrame(rows), theory, p)
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible() and ax.get_title()]
    assert [t.split(chr(10))[0] for t in titles] == ["(a) gaussian", "(c) orthogonal"]


def test_panels_split_a_block_by_keep_rate_and_need_the_block_column(theory):
    """A block spanning several keep rates is one panel per keep rate (one theory curve each);
    a run table without the merge's ``block`` column is refused."""
    runs = _runs(theory, "6xi2").assign(block="block 0")
    assert set(trainability.add_panels(runs).panel) == {"block 0, rho = 1", "block 0, rho = 0.98"}
    c = claims_table(runs, theory, P)
    assert list(c.claim_id) == [
        "boundary_min12xi_vs_6xi2[all]",
        "boundary_min12xi_vs_6xi2[block0,rho=0.98]",
        "boundary_min12xi_vs_6xi2[block0,rho=1]",
    ]
    with pytest.raises(ValueError, match="block"):
        trainability.add_panels(runs.drop(columns="block"))


def test_jobs_read_only_their_sections(theory):
    """The figure job draws without the claim thresholds, the theory job without the analysis;
    a sigma_w2_range that is not [low, high] is refused with its key."""
    import matplotlib

    from sigprop.params import ParamError

    fig = heatmap(_runs(theory, "12xi1"), theory, P.for_job("figure"))
    matplotlib.pyplot.close(fig)
    p = resolve("trainable_depth", {"theory": {"points": 11}}, "quick").for_job("theory")
    assert len(theory_table("td", p, [{"keep_rate": 1.0}])) == 11 * 10
    for bad in ([1.0, 2.0, 3.0], [2.0, 1.0]):
        with pytest.raises(ParamError, match="theory.sigma_w2_range"):
            resolve("trainable_depth", {"theory": {"sigma_w2_range": bad}}, "quick")


def test_shipped_quick_config_has_three_seeds_stacked_per_depth():
    """>= 3 seeds per cell (a training claim needs an SE over seeds); the seeds train in the shards of their depth (shard_size
    72 holds the four 450-step panels x 6 σ_w² x 3 seeds), so the shard count is unchanged."""
    import jsonschema
    import yaml

    from sigprop.config import build_study, load_yaml

    path = "config/studies/trainable_depth.yaml"
    cfg = load_yaml(path)
    with open("workflow/schemas/study.schema.yaml") as f:
        jsonschema.validate(cfg, yaml.safe_load(f))
    st = build_study("trainable_depth", path, cfg, "quick", 64)
    cells = {}
    for r in st.runs:
        cells.setdefault((st.labels[r.run_id], r.depth, r.sigma_w2), set()).add(r.seed)
    assert len(cells) == 240 and all(v == {0, 1, 2} for v in cells.values())
    assert len(st.shards) == 20


def test_rows_carry_the_standard_error_that_decides_them(theory):
    """``se`` is the SE over seeds that :func:`decide` used (at least one cell per seed: the
    floor 1 / (cells √n) where the seeds agree exactly) and ``detectable`` is max(seed_z SE,
    error_tolerance) wherever the grid does not censor the comparison; with one seed there is
    no SE."""
    from sigprop.claims import values

    c = claims_table(_runs(theory, "6xi2"), theory, P)
    assert np.isfinite(c.se).all() and (c.se > 0).all(), c[["claim_id", "se"]]
    np.testing.assert_allclose(c.detectable, np.maximum(3.0 * c.se, 0.02))
    for _, r in c.iterrows():
        assert r.se == pytest.approx(values(r)["se_diff"])
        assert r.se == pytest.approx(1 / (values(r)["cells"] * np.sqrt(3)))
    # seeds that disagree: the SE over seeds, above the floor
    mixed = claims_table(
        _runs(theory, "", rules=["min_12xi1_12xi2", "min_12xi1_12xi2", "6xi2"]), theory, P
    )
    assert all(
        r.se == pytest.approx(values(r)["se_diff"]) and r.se > 1 / (values(r)["cells"] * np.sqrt(3))
        for _, r in mixed.iterrows()
    )
    one = claims_table(_runs(theory, "min_12xi1_12xi2", seeds=(0,)), theory, P)
    assert one.se.isna().all()
