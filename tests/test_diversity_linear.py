"""Study diversity_linear (004 Fig. 2, Figs. 3(a)/4(a)): linear SGD, the learning-rate protocol,
Thm. 6 draws, thresholds and rank trends, and a tiny end-to-end measure -> claims -> figures."""

import copy
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import jsonschema
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from scipy.stats import kendalltau

from sigprop import registry, tables
from sigprop.claims import check_table, kendall_tau, tau_null_law
from sigprop.claims.declared import build
from sigprop.config import build_study, load_yaml
from sigprop.data.prepare import prepare
from sigprop.data.sizes import width_for_params
from sigprop.runs import RunSpec, Shard, settings
from sigprop.studies.diversity_linear import (
    CLAIMS,
    SPEC,
    Measure,
    analysis,
    claims,
    figures,
    measure,
)
from sigprop.studies.diversity_linear import theory as theory_mod
from sigprop.theory import diversity as th

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "config" / "studies" / "diversity_linear.yaml"
DT = torch.float64


def _run(**kw):
    base = {
        "dataset": "synthetic_regression",
        "width": 4,
        "depth": 2,
        "activation": "linear",
        "sigma_b2": 0.0,
        "precision": "float64",
        "target_loss": 1e-12,
        "steps": 30,
        "eval_every": 2,
        "batch_size": 16,
        "seed": 0,
    }
    base.update(kw)
    return RunSpec(**base)


def _xy(n=128, d=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g, dtype=DT)
    w = torch.randn(d, 1, generator=g, dtype=DT) / d**0.5
    return x, x @ w


# ----------------------------------------------------------------- training


def test_linear_sgd_step_equals_autograd_sgd():
    g = torch.Generator().manual_seed(0)
    ws = [torch.randn(3, o, i, generator=g, dtype=DT) for i, o in ((6, 4), (4, 5), (5, 1))]
    xb = torch.randn(3, 7, 6, generator=g, dtype=DT)
    yb = torch.randn(3, 7, 1, generator=g, dtype=DT)
    lr = torch.tensor([0.1, 0.01, 0.0], dtype=DT).view(-1, 1, 1)
    ref = [w.clone().requires_grad_(True) for w in ws]
    h = xb
    for w in ref:
        h = torch.bmm(h, w.transpose(1, 2))
    grads = torch.autograd.grad((h - yb).pow(2).mean(dim=(1, 2)).sum(), ref)
    want = [w - lr * gr for w, gr in zip(ws, grads)]
    measure.linear_sgd_step(ws, xb, yb, lr)
    for a, b in zip(ws, want):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-14)


def test_full_loss_and_diversity_of_a_linear_net():
    x, y = _xy()
    ws = measure.initial_weights([_run(), _run(seed=1)], x.shape[1], DT, "cpu")
    assert [tuple(w.shape) for w in ws] == [(2, 4, 6), (2, 4, 4), (2, 1, 4)]
    h = x.expand(2, *x.shape)
    for w in ws:
        h = torch.bmm(h, w.transpose(1, 2))
    torch.testing.assert_close(measure.full_loss(ws, x, y), (h - y).pow(2).mean(dim=(1, 2)))
    div = measure.diversity(ws, x, y)
    assert div.shape == (2,) and ((div > 1 / x.shape[0]) & (div < 1)).all()


def test_train_group_protocol_and_independence_of_the_group():
    x, y = _xy()
    prot = Measure(lrs=(0.03125, 0.0625, 0.125, 0.25), lr_epochs=2)
    runs = [_run(seed=s) for s in range(3)]
    recs = measure.train_group(runs, x, y, prot, "cpu")
    alone = measure.train_group(runs[1:2], x, y, prot, "cpu")[0]
    for rec in recs:
        # the kept learning rate has the lowest training loss after lr_epochs epochs
        assert (
            rec["lr"]
            == prot.lrs[
                int(np.nanargmin(np.where(np.isfinite(rec["lr_loss"]), rec["lr_loss"], np.inf)))
            ]
        )
        assert rec["loss"][2] == pytest.approx(np.nanmin(rec["lr_loss"]), rel=1e-12)
        e = rec["epochs_to_target"]
        assert np.isfinite(e) and rec["loss"][int(e)] <= 1e-12
        assert all(v > 1e-12 for k, v in rec["loss"].items() if k < e)
        assert 0 in rec["diversity"] and all(k < e for k in rec["diversity"])
        assert all(k % 2 == 0 for k in rec["diversity"])
    # a run's numbers do not depend on the other runs of its group
    assert alone["epochs_to_target"] == recs[1]["epochs_to_target"] and alone["lr"] == recs[1]["lr"]
    for k, v in alone["loss"].items():
        assert v == pytest.approx(recs[1]["loss"][k], rel=1e-9, abs=1e-15)
    assert recs[0]["loss"][1] != recs[1]["loss"][1]  # seeds differ


def test_unreachable_target_and_divergence_are_recorded():
    x, y = _xy()
    runs = [_run(steps=3, eval_every=1)]
    rec = measure.train_group(runs, x, y, Measure(lrs=(1e-4,), lr_epochs=2), "cpu")[0]
    assert np.isnan(rec["epochs_to_target"]) and rec["diverged"] == 0.0
    assert sorted(rec["loss"]) == [0, 1, 2, 3] and sorted(rec["diversity"]) == [0, 1, 2, 3]
    rec = measure.train_group(
        runs, x, y, Measure(lrs=(50.0,), lr_epochs=2, divergence_loss=1e3), "cpu"
    )[0]
    assert rec["diverged"] == 1.0 and np.isnan(rec["epochs_to_target"])


# ----------------------------------------------------------------- Thm. 6 draws


def test_init_draws_match_thm6_and_are_keyed_by_run():
    run = _run(width=3, depth=1)
    num, den = measure.init_draws(run, 64, 4, 400, "cpu")
    rho, se = analysis._ratio_of_means(num.numpy(), den.numpy(), 64)
    widths = theory_mod.theory_widths(4, [3], 1)
    exact = float(th.linear_expected_ratio(widths, 64)[0])
    assert abs(rho - exact) <= 4 * se, (rho, se, exact)
    # ... and reject a wrong expectation: Thm. 6's ratio at n = 2 is far off
    assert abs(rho - float(th.linear_expected_ratio(widths, 2)[0])) > 10 * se
    again = measure.init_draws(run, 64, 4, 400, "cpu")[0]
    other = measure.init_draws(_run(width=3, depth=1, seed=1), 64, 4, 400, "cpu")[0]
    torch.testing.assert_close(num, again, rtol=0, atol=0)
    assert not torch.allclose(num, other)


# ----------------------------------------------------------------- analysis helpers


def test_threshold_rule():
    an = registry.resolve("diversity_linear", load_yaml(CONFIG), "quick").analysis
    assert (an.threshold.flat_factor, an.threshold.growth_factor) == (1.5, 2.0)
    b = np.array([4, 8, 16, 32, 64])
    t = analysis.threshold(b, np.array([2, 2, 3, 8, 30.0]), an)
    assert t["exists"] and t["threshold"] == 16 and t["e_min"] == 2
    t = analysis.threshold(b, np.array([2, 2, 3, 3, 3.0]), an)  # flat everywhere
    assert not t["exists"] and t["threshold"] == 64
    t = analysis.threshold(b, np.array([2, 4, 8, 16, np.inf]), an)  # grows from the start
    assert t["exists"] and t["threshold"] == 4
    assert not analysis.threshold(b, np.full(5, np.inf), an)["exists"]


def test_kendall_and_trend():
    assert np.isnan(kendall_tau([1, 2, 3], [5, 5, 5]))  # all tied: no order, not tau 0
    assert np.isnan(kendall_tau([1, 1, 1], [1, 2, 3]))
    assert kendall_tau([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(2 / 3)
    df = pd.DataFrame({"w": [1, 2, 3, 1, 2, 3], "d": [1, 1, 1, 2, 2, 2], "v": [1, 2, 3, 3, 2, 1.0]})
    tau, desc = claims.trend(df, "w", "v", "d")
    assert tau == pytest.approx(0.0) and "per d" in desc
    one = pd.DataFrame({"w": [10, 20, 30], "d": [3, 2, 1], "v": [1.0, 2, 3]})  # one w per d
    tau, desc = claims.trend(one, "w", "v", "d")
    assert tau == pytest.approx(1.0) and "over all" in desc


def test_tanh2_sums_match_autograd():
    """The Thm. 2 Monte Carlo's closed-form per-example gradients equal torch autograd's."""
    d, K, n = 5, 4, 7
    num, den = theory_mod.tanh2_sums(d, K, n, 1, np.random.default_rng(3))
    rng = np.random.default_rng(3)  # the same draw, in the same order
    W1, T1 = (torch.from_numpy(a) for a in rng.standard_normal((2, K, d)))
    w2, t2 = (torch.from_numpy(a) for a in rng.standard_normal((2, K)))
    X = torch.from_numpy(rng.standard_normal((n, d)))
    y = torch.tanh(X @ T1.T) @ t2
    gs = []
    for i in range(n):
        a, b = W1.clone().requires_grad_(True), w2.clone().requires_grad_(True)
        loss = 0.5 * (torch.tanh(a @ X[i]) @ b - y[i]) ** 2
        gs.append(torch.cat([g.reshape(-1) for g in torch.autograd.grad(loss, (a, b))]))
    G = torch.stack(gs)
    assert num[0] == pytest.approx(n * float((G**2).sum()), rel=1e-10)
    assert den[0] == pytest.approx(float((G.sum(0) ** 2).sum()), rel=1e-10)


def test_group_rank_levels_and_verdicts():
    # one group of 3 untied items: tau in {-1, -1/3, 1/3, 1}, each order 1/6
    law3 = tau_null_law([1, 2, 3], [1, 2, 3])
    null = claims.mean_tau_null([law3])
    assert sorted(null) == pytest.approx([-1, -1 / 3, 1 / 3, 1])
    assert null[1.0] == pytest.approx(1 / 6) and sum(null.values()) == pytest.approx(1)
    # 4 groups of 3 (width trends per depth): the mean's law sums to 1, P(mean = 1) = 6^-4
    four = claims.mean_tau_null([law3] * 4)
    assert sum(four.values()) == pytest.approx(1) and four[1.0] == pytest.approx(6.0**-4)
    df = pd.DataFrame({"w": [1, 2, 3] * 4, "d": np.repeat([1, 2, 3, 4], 3)})
    up = claims.group_rank(df.assign(v=df.w + 0.1 * df.d), "w", "v", "d", 0.6)
    assert up["verdict"] == "pass" and up["measured"] == pytest.approx(1.0)
    assert up["detectable"] == pytest.approx(2 / 3)  # smallest attainable mean >= 0.6
    assert up["false_pass"] == pytest.approx(sum(v for k, v in four.items() if k >= 0.6 - 1e-12))
    down = claims.group_rank(df.assign(v=-df.w), "w", "v", "d", 0.6)
    # a wrong sign as large as a pass needs, and significant under random orders: fail
    assert down["verdict"] == "fail" and down["measured"] == pytest.approx(-1.0)
    assert "fail at <= -0.667 (P = 0.0316)" in down["test"]
    assert "significant at <= 0.05 under a random order within groups" in down["test"]
    mixed = claims.group_rank(
        df.assign(v=np.where(df.d <= 2, df.w, -df.w + 0.5 * (df.w == 1))), "w", "v", "d", 0.6
    )
    assert mixed["verdict"] == "inconclusive" and mixed["measured"] < 0.6
    # three of four groups reversed (mean -0.5): a wrong sign smaller than min_tau is no evidence
    # against the ordering: inconclusive (it failed under the old rule, at any tau < 0)
    most = claims.group_rank(
        df.assign(v=np.where(df.d <= 3, -df.w, df.w) * 1.0), "w", "v", "d", 0.6
    )
    assert most["measured"] == pytest.approx(-0.5) and most["verdict"] == "inconclusive"
    # the depth trend with the paper's sign (falls): sign -1
    assert (
        claims.group_rank(df.assign(v=-df.d + 0.01 * df.w), "d", "v", "w", 0.6, -1)["verdict"]
        == "pass"
    )
    # 2 groups of 2 widths: a random order reaches mean tau = 1 with P = 1/4, so a claim cannot
    # pass on them; a sanity row (a theorem's monotone curve, no random-order null) can
    small = pd.DataFrame({"w": [1, 2, 1, 2], "d": [1, 1, 2, 2]}).assign(v=lambda f: f.w + f.d)
    weak = claims.group_rank(small, "w", "v", "d", 0.6)
    assert weak["measured"] == pytest.approx(1.0) and weak["verdict"] == "inconclusive"
    assert "no pass possible" in weak["test"] and np.isnan(weak["false_pass"])
    ident = claims.group_rank(small, "w", "v", "d", 0.6, significance=False)
    assert ident["verdict"] == "pass" and ident["detectable"] == pytest.approx(1.0)
    # one value of x (found by the paper-scale smoke run: one net per block): no order to test,
    # inconclusive instead of a ZeroDivisionError in the null distribution
    one = claims.group_rank(
        pd.DataFrame({"w": [4, 4], "v": [1.0, 2.0], "d": [1, 2]}), "w", "v", "d", 0.6
    )
    assert one["verdict"] == "inconclusive" and not np.isfinite(one["detectable"])


def test_ties_never_fail_an_ordering_claim():
    """A group whose y takes one value (the same largest batch at every width, read on a grid of
    powers of 2) holds no order: it is left out, not scored tau 0; when every group is tied the
    claim is inconclusive; a mean of exactly 0 is inconclusive; only a wrong sign as large as a
    pass needs, and significant under random orders, fails."""
    df = pd.DataFrame({"w": [4, 16, 64] * 4, "d": np.repeat([1, 2, 3, 4], 3)})
    flat = df.assign(v=128.0)
    r = claims.group_rank(flat, "w", "v", "d", 0.6)
    assert r["verdict"] == "inconclusive" and "tied within every group" in r["test"]
    # three tied depths and one rising one: the tied ones are left out, not averaged in as 0
    v = np.where(df.d == 1, [64.0, 128, 256] * 4, 128.0)
    part = claims.group_rank(df.assign(v=v), "w", "v", "d", 0.6)
    assert (
        part["measured"] == pytest.approx(1.0) and "left out, tied in v: d 2, 3, 4" in part["desc"]
    )
    assert part["verdict"] == "inconclusive"  # 3 items left: fewer than 4
    # opposite signs that cancel: no order either way
    zero = claims.group_rank(
        df.assign(v=np.where(df.d <= 2, df.w, -df.w) * 1.0), "w", "v", "d", 0.6
    )
    assert zero["measured"] == pytest.approx(0.0) and zero["verdict"] == "inconclusive"
    # a partial tie keeps its tied pair in the null law: the levels are those of tau-b with ties
    law = tau_null_law([4, 16, 64], [128, 256, 256])
    assert sorted(np.round(law["levels"], 6)) == pytest.approx(
        sorted(
            np.round(
                [
                    kendalltau([4, 16, 64], p).statistic
                    for p in ([128, 256, 256], [256, 128, 256], [256, 256, 128])
                ],
                6,
            )
        )
    )


def test_tie_aware_null_matches_a_simulation():
    """tau_null_law with ties (exact enumeration at n <= 8) against random orders."""
    x, y = np.arange(7.0), np.array([1, 1, 2, 2, 2, 3, 5.0])
    law = tau_null_law(x, y)
    assert law["method"] == "exact"
    rng = np.random.default_rng(1)
    sims = np.array([kendalltau(x, rng.permutation(y)).statistic for _ in range(4000)])
    for lv, p in zip(law["levels"], law["probs"]):
        seen = np.mean(np.isclose(sims, lv, atol=1e-9))
        assert abs(seen - p) <= 5 * np.sqrt(p * (1 - p) / 4000) + 1e-3, lv


def test_window_diversity_compares_nets_over_the_same_progress():
    """Two runs whose diversity falls the same way in progress but that reach the target at very
    different speeds get the same window average; the mean over all measurements does not."""
    target = 1e-12

    def run(epochs_to_target):
        ep = np.arange(epochs_to_target + 1)
        loss = np.exp(np.log(1.0) + (np.log(target) - np.log(1.0)) * ep / epochs_to_target)
        prog = ep / epochs_to_target
        div = np.exp(-2.0 * prog)  # diversity falls with progress alone
        meas = ep[::2]
        return meas, div[meas], ep, loss

    fast, slow = run(4), run(40)
    a = analysis.window_diversity(*fast, target, 0.5, 5)
    b = analysis.window_diversity(*slow, target, 0.5, 5)
    assert a == pytest.approx(b, rel=1e-9)
    assert np.mean(fast[1]) != pytest.approx(np.mean(slow[1]), rel=0.05)
    # a run whose measurements stop before the window's end is not comparable: NaN
    assert np.isnan(analysis.window_diversity(fast[0][:1], fast[1][:1], *fast[2:], target, 0.5, 5))


def test_one_width_per_depth_makes_the_width_rows_sanity_twins():
    nets = pd.DataFrame({"depth": [1, 2, 3, 4], "width": [485, 111, 82, 68]})
    assert claims.twin_of(nets, "width", "depth", "depth", "width")
    # the paper scale's ten nets: scipy's tau-b is -0.9999999999999999 there, not -1
    ten = pd.DataFrame({"depth": range(1, 11), "width": [485, 111, 82, 68, 59, 53, 49, 46, 43, 40]})
    assert claims.twin_of(ten, "width", "depth", "depth", "width")
    free = pd.DataFrame({"depth": [1, 1, 2, 2], "width": [4, 16, 4, 16]})
    assert not claims.twin_of(free, "width", "depth", "depth", "width")
    rows = [
        claims._tau(
            f"threshold_{c}",
            "",
            dict(measured=m, verdict="pass", test="t", detectable=0.6, desc="d"),
            0.6,
        )
        for c, m in (
            ("rises_with_width", 0.8),
            ("falls_with_depth", -0.8),
            ("rises_with_width", 0.7),
        )
    ]
    out = build("s", CLAIMS, [claims._twin(rows[0], rows[1]), rows[1]]).set_index("claim_id")
    assert dict(zip(out.index, zip(out.kind, out.verdict))) == {
        "threshold_rises_with_width": ("sanity", "pass"),
        "threshold_falls_with_depth": ("claim", "pass"),
    }
    assert out.test["threshold_rises_with_width"].startswith("identity: the same measurement as")
    assert out.detail["threshold_rises_with_width"].endswith("+0.8 against -0.8; d")
    # an ordering that is not its twin's with the sign flipped fails the identity
    assert build("s", CLAIMS, [claims._twin(rows[2], rows[1])]).verdict[0] == "fail"
    # the orderings of a pair become twins where the nets have one width per depth, only there
    pair = ("threshold_rises_with_width", "threshold_falls_with_depth")
    kinds = [
        build("s", CLAIMS, claims._orderings(d, pair, "", "threshold", 0.6)).kind.tolist()
        for d in (nets.assign(threshold=[64.0, 32, 16, 8]), free.assign(threshold=[8.0, 16, 4, 8]))
    ]
    assert kinds == [["sanity", "claim"], ["claim", "claim"]]


def test_one_group_of_ten_nets_is_decided_not_left_inconclusive():
    """Paper scale's ten nets of equal parameter count (one width per depth) form one group of
    10: the ordering claim passes, fails or stays inconclusive by its rule, with its power."""
    df = pd.DataFrame({"d": np.arange(1, 11), "w": [485, 111, 82, 68, 59, 53, 49, 46, 43, 40]})
    falls = claims.group_rank(df.assign(v=-df.d + 0.3 * np.sin(df.d)), "d", "v", "w", 0.6, -1)
    assert falls["verdict"] == "pass" and falls["measured"] == pytest.approx(-1.0)
    assert "P(pass | random order within groups) = 0.0" in falls["test"]
    rises = claims.group_rank(df.assign(v=-df.d), "d", "v", "w", 0.6)
    assert rises["verdict"] == "fail"
    # a wrong sign short of -0.6 (tau -5/9 over 10 nets) is inconclusive, not fail
    short = claims.group_rank(df.assign(v=[10, 9, 8, 7, 6, 1, 2, 3, 4, 5]), "d", "v", "w", 0.6)
    assert short["measured"] == pytest.approx(-5 / 9) and short["verdict"] == "inconclusive"
    noise = claims.group_rank(df.assign(v=[3, 1, 4, 1.5, 5, 9, 2, 6, 5.5, 3.5]), "d", "v", "w", 0.6)
    assert noise["verdict"] == "inconclusive" and 0 < noise["measured"] < 0.6


def _fig2_nets(largest, div_train):
    """Paper scale's ten nets of equal parameter count (one width per depth) with the initial
    diversity falling with the depth, the given largest batches and [train] diversity."""
    return pd.DataFrame(
        {
            "depth": np.arange(1, 11),
            "width": [485, 111, 82, 68, 59, 53, 49, 46, 43, 40],
            "div_init": 1.0 / np.arange(1, 11),
            "div_train": div_train,
            "largest_batch": np.asarray(largest, float),
            "window_runs": 5,
            "runs": 5,
        }
    )


def _fig2(nets, p):
    """The Fig. 2 rows of ``nets``, by claim id."""
    rows = build(p.study, CLAIMS, claims._fig2_claims(nets, p)).to_dict("records")
    return {r["claim_id"]: r for r in rows}


def test_largest_batch_rising_with_a_diversity_monotone_in_depth_is_a_summary_twin():
    """With the initial diversity monotone in the depth, largest_batch_rises_with_diversity[init]
    orders the nets as largest_batch_falls_with_depth does: the same |tau| (not a coarse value
    that unrelated orderings share), so it is a summary row that names its twin, never counted
    twice; a [train] diversity in another order stays a claim."""
    cfg = {"name": "diversity_linear", **load_yaml(CONFIG)}
    p = registry.resolve("diversity_linear", cfg, "paper").for_job("claims")
    largest = [4096, 4096, 2048, 2048, 1024, 512, 512, 256, 128, 64]  # ties: tau-b 0.977...
    div_train = [3.0, 1, 4, 1.5, 5, 9, 2, 6, 5.5, 3.5]
    rows = _fig2(_fig2_nets(largest, div_train), p)
    falls = rows["largest_batch_falls_with_depth"]
    init = rows["largest_batch_rises_with_diversity[init]"]
    assert falls["kind"] == "claim" and not claims.coarse(falls["measured"])
    assert init["measured"] == pytest.approx(-falls["measured"], abs=1e-12)
    assert init["kind"] == "summary" and init["verdict"] == "pass"
    assert "|tau| equals that of largest_batch_falls_with_depth" in init["detail"]
    assert "not counted" in init["detail"]
    train = rows["largest_batch_rises_with_diversity[train]"]
    assert train["kind"] == "claim" and abs(train["measured"]) != pytest.approx(
        abs(falls["measured"])
    )
    # untied largest batches: tau = -1 is coarse (any two perfect orders share it): no twin
    # is read off it, the row stays a claim
    untied = _fig2(_fig2_nets(2.0 ** np.arange(12, 2, -1), div_train), p)
    assert untied["largest_batch_rises_with_diversity[init]"]["kind"] == "claim"
    assert untied["largest_batch_rises_with_diversity[init]"]["measured"] == pytest.approx(1.0)


# ----------------------------------------------------------------- end to end


def _tiny_cfg():
    cfg = load_yaml(CONFIG)
    cfg["theory"].update(
        d_in=6, width_max=16, depth_max=3, thm2_widths=[3, 12], thm2_n=64, thm2_draws=40
    )
    cfg["scales"]["quick"]["measure"].update(lrs=[0.0625, 0.125, 0.25], n_train=128, init_draws=8)
    cfg["scales"]["paper"]["measure"].update(lrs=[0.1], n_train=128, init_draws=8)
    cfg["analysis"]["fig2_epochs"] = 6
    cfg["claims"]["margin"] = 0.5  # 48 draws resolve a ~13 % offset, not the default 10 %
    b = cfg["scales"]["quick"]["blocks"][0]
    b["fixed"].update(steps=40, eval_every=2)
    b["grid"] = {"width": [3, 12], "depth": [1, 2], "batch_size": [4, 16, 64], "seed": [0, 1]}
    return cfg


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("div") / "synthetic_regression.npz"
    prepare(
        "synthetic_regression",
        path,
        options={"n_train": 256, "n_test": 0, "d_in": 6, "d_out": 1, "teacher_width": 6},
    )
    cfg = _tiny_cfg()
    s = build_study("diversity_linear", CONFIG, cfg, "quick", 64)
    p = s.params.for_job("measure")
    frames = [measure.measure(sh, None, None, p, data_path=str(path)) for sh in s.shards]
    runs = pd.concat(frames, ignore_index=True)
    theory = theory_mod.theory_table(
        "diversity_linear", s.params.for_job("theory"), settings(s.runs)
    )
    return s, runs, theory


def test_measure_rows_and_theory_table(tiny):
    s, runs, theory = tiny
    assert len(s.shards) == 4 and len(runs.run_id.unique()) == 24
    assert set(tables.RUN_COLUMNS) <= set(runs.columns)
    assert not runs.duplicated(tables.RUN_KEY + ["probe", "layer"]).any()
    assert {
        "train_loss",
        "diversity",
        "epochs_to_target",
        "lr",
        "lr_loss",
        "lr_candidate",
        "init_num",
        "init_den",
        "n_train",
        "d_in",
    } <= set(runs.metric)
    assert (runs[runs.metric == "n_train"].value == 128).all()
    assert set(tables.THEORY_COLUMNS) <= set(theory.columns)
    assert {
        "sq_norm_thm8",
        "inner_thm6",
        "ratio_inf_thm6",
        "bound_thm3",
        "thm2_ratio_mc",
        "thm2_ratio_mc_se",
        "thm2_order",
        "thm2_draws",
        "thm2_n",
    } == set(theory.quantity)
    t = theory[(theory.quantity == "bound_thm3") & (theory.depth == 2) & (theory.width == 12)]
    assert float(t.value.iloc[0]) == pytest.approx(
        float(th.linear_equal_width_lower_bound(6, 12, 3))
    )


def test_claims_and_figures(tiny):
    s, runs, theory = tiny
    table = claims.claims_table(runs, theory, s.params.for_job("claims"))
    check_table(table, "diversity_linear test")  # every claim row names its test and power
    t = table.set_index("claim_id")
    v = t.verdict
    assert set(v) <= {"pass", "fail", "inconclusive"} and len(v) == 18
    for cid in (
        "thm3_bound_holds",
        "thm6_expectation",
        "diversity_rises_with_width[thm6]",
        "diversity_falls_with_depth[thm6]",
        "thm1_two_layer_order",
        "thm2_two_layer_tanh_order",
    ):
        assert v[cid] == "pass", t.detail[cid]
    # theorem consequences and Theta statements are sanity rows, never tallied
    sanity_ids = {
        "thm3_bound_holds",
        "diversity_rises_with_width[thm6]",
        "diversity_falls_with_depth[thm6]",
        "thm1_two_layer_order",
        "thm2_two_layer_tanh_order",
    }
    assert set(t.index[t.kind == "sanity"]) == sanity_ids
    assert t.kind["thm6_expectation"] == "claim"
    decided = t[(t.kind == "claim") & t.verdict.isin(["pass", "fail"])]
    assert np.isfinite(decided.detectable).all() and (decided.test.str.len() > 0).all()
    for _name, spec in SPEC.figures.items():
        assert spec.caption
        fig = getattr(figures, spec.function)(runs, theory, s.params.for_job("figure"))
        assert all(ax.get_title() for ax in fig.axes if ax.get_label() != "<colorbar>")
        plt.close(fig)


def test_thm6_passes_only_when_its_test_resolves_the_margin(tiny):
    """An equivalence claim with a detectable offset above its margin cannot pass."""
    import dataclasses

    s, runs, theory = tiny
    p = s.params.for_job("claims")
    strict = dataclasses.replace(p, claims=dataclasses.replace(p.claims, margin=0.01))
    t = claims.claims_table(runs, theory, strict).set_index("claim_id")
    assert t.verdict["thm6_expectation"] == "inconclusive"
    assert t.detectable["thm6_expectation"] > 0.01 and t.margin["thm6_expectation"] == 0.01
    assert "equivalence margin 0.01" in t.test["thm6_expectation"]


def test_claims_fail_on_a_wrong_measurement(tiny):
    s, runs, theory = tiny
    bad = runs.copy()
    m = bad.metric == "init_den"
    bad.loc[m, "value"] = bad.loc[m, "value"] * 3.0  # 3x the inner products: rho / 3
    p = s.params.for_job("claims")
    v = claims.claims_table(bad, theory, p).set_index("claim_id").verdict
    assert v["thm6_expectation"] == "fail"
    # a Thm. 2 Monte Carlo far below its order (a wrong gradient would do this) fails the sanity row
    low = theory.copy()
    m = low.quantity.isin(["thm2_ratio_mc", "thm2_ratio_mc_se"])
    low.loc[m, "value"] = low.loc[m, "value"] * 0.1
    assert (
        claims.claims_table(runs, low, p).set_index("claim_id").verdict["thm2_two_layer_tanh_order"]
        == "fail"
    )
    with pytest.raises(ValueError, match="d_in"):
        claims.claims_table(runs, theory.assign(d_in=7), p)


def test_config_validates_and_expands_at_both_scales():
    cfg = load_yaml(CONFIG)
    schema = yaml.safe_load((REPO / "workflow" / "schemas" / "study.schema.yaml").read_text())
    jsonschema.validate(cfg, schema)
    q = build_study("diversity_linear", CONFIG, copy.deepcopy(cfg), "quick", 64)
    assert len(q.runs) == 3 * 4 * 9 * 3 and len(q.shards) == 12
    assert all(
        r.activation == "linear" and r.precision == "float64" and r.sigma_b2 == 0 for r in q.runs
    )
    p = build_study("diversity_linear", CONFIG, copy.deepcopy(cfg), "paper", 64)
    nets = sorted({(r.depth, r.width) for r in p.runs})
    assert [d for d, _ in nets] == list(range(1, 11)) and len(p.runs) == 10 * 8 * 5
    for depth, width in nets:  # 004 Sec. 5: d_in K + (L-1) K^2 + K d_out ~ 16k (d_in = 32)
        assert width == width_for_params(16000, depth, "synthetic_regression")
        assert abs(32 * width + (depth - 1) * width**2 + width - 16000) < 400
    assert {r.batch_size for r in p.runs} == {2**k for k in range(5, 13)}
    prot = p.params.measure
    assert prot.n_train == 10000 and len(prot.lrs) == 13
    assert q.params.measure.n_train == 1024 and len(q.params.measure.lrs) == 9
    assert max(w for _, w in nets) <= cfg["theory"]["width_max"]
    assert max(d for d, _ in nets) <= cfg["theory"]["depth_max"]


def test_measure_rejects_other_nets(tiny):
    s, _, _ = tiny
    sh = Shard("diversity_linear", (_run(activation="tanh"),))
    with pytest.raises(ValueError, match="linear"):
        measure.measure(sh, None, None, s.params.for_job("measure"), data_path="unused")


def test_figure_draws_when_no_run_reaches_the_progress_window(tiny):
    """A smoke run trains a few steps: no run's measurements reach the window's end, so the
    diversity during training is NaN for every net; the figure still draws (and says so)."""
    s, runs, theory = tiny
    early = runs[~((runs.metric == "diversity") & (runs.step > 0))]
    nt = analysis.net_table(early, s.params.for_job("figure").analysis)
    assert nt.div_train.isna().all()
    fig = figures.fig2(early, theory, s.params.for_job("figure"))
    fig.canvas.draw()
    assert "no net has runs" in " ".join(t.get_text() for t in fig.axes[3].texts)
    plt.close(fig)
