"""width_batch study (004 Figs. 1, 3-5): epochs to target, lr tuning, thresholds and claims on
synthetic run tables with known answers (no training; the micro-batched engine is tested in
tests/test_shard_equivalence.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sigprop import registry
from sigprop.claims import check_table
from sigprop.config import expand_runs, load_yaml
from sigprop.data.sizes import train_size
from sigprop.studies.width_batch import SPEC, claims, figures
from sigprop.studies.width_batch import analysis as m

ROOT = Path(__file__).resolve().parents[1]
CFG = {"name": "width_batch", **load_yaml(ROOT / "config/studies/width_batch.yaml")}
# synthetic runs are labelled with the one block (panel) "all"
P_T = registry.resolve(
    "width_batch", {**CFG, "analysis": {**CFG["analysis"], "targets": {"all": 0.97}}}, "quick"
)
N = train_size("digits")  # 1347
C = 8  # micro-batch of the quick config


def _run(depth, width, b, lr, seed, acc_of_epoch, loss_of_epoch, evals=np.arange(0, 51)):  # noqa: B008
    """Rows of one run evaluated every 84 micro-steps (half an epoch of 8-example steps)."""
    rid = f"r{depth}_{width}_{b}_{lr}_{seed}"
    steps = evals * 84
    ep = m.model_epochs(steps, b, C, N)
    rows = []
    for st, e in zip(steps, ep):
        for metric, v in (("train_acc", acc_of_epoch(e)), ("train_loss", loss_of_epoch(e))):
            rows.append(
                dict(
                    run_id=rid,
                    step=int(st),
                    metric=metric,
                    value=float(v),
                    arch="fc",
                    dataset="digits",
                    depth=depth,
                    width=width,
                    head_depth=0,
                    head_width=0,
                    batch_size=b,
                    micro_batch=C,
                    lr=lr,
                    seed=seed,
                    block="all",
                )
            )
    return rows


def _runs(spec: dict) -> pd.DataFrame:
    """spec: {(depth, width): {batch: epochs needed at the best rate}}; the other rate is slower
    and has a higher loss at 2 epochs, so tuning must pick lr 0.1."""
    rows = []
    for (depth, width), need in spec.items():
        for b, e_need in need.items():
            for lr, slow in ((0.1, 1.0), (0.01, 3.0)):
                for seed in (0, 1):
                    e_hit = e_need * slow
                    rows += _run(
                        depth,
                        width,
                        b,
                        lr,
                        seed,
                        lambda e, h=e_hit: 0.99 if e >= h else 0.5,
                        lambda e, s=slow: s * np.exp(-e / 4),
                    )
    return pd.DataFrame(rows)


def test_model_epochs_counts_each_models_examples():
    # 8-example micro-steps; batch 512 drops 323 of 1347 examples per epoch
    assert m.model_epochs(168, 8, 8, N) == pytest.approx(1.0)
    assert m.model_epochs(128, 512, 8, N) == pytest.approx(1.0)
    assert m.model_epochs(10, 32, 0, N) == pytest.approx(10 / 42)  # no micro-batching


def test_quick_config_nets_have_the_fixed_parameter_count():
    runs = expand_runs(CFG, "quick")
    nets = sorted({(r.depth, r.width) for r in runs})
    assert nets == [(1, 54), (2, 36), (3, 30), (4, 26), (10, 17)]
    assert {r.seed for r in runs} == {0, 1, 2}  # >= 3 seeds for training claims
    assert {r.steps for r in runs} == {25 * (N // 8)} and {r.micro_batch for r in runs} == {8}


def test_per_run_tuning_and_epochs_to_target():
    runs = _runs({(1, 54): {8: 2.0, 512: 6.0}})
    pr = m.per_run(runs, P_T.analysis)
    assert set(pr.panel) == {"all"} and (pr.target == 0.97).all()
    fast = pr[(pr.lr == 0.1) & (pr.batch_size == 8)].iloc[0]
    assert fast.tune_loss == pytest.approx(np.exp(-0.5), rel=1e-9)  # at exactly 2 epochs
    assert fast.epochs == pytest.approx(2.0)
    t = m.tuned(pr).set_index("batch_size")
    # resolution: one evaluation, 84 x 8 examples = 0.66 epochs of batch 512 (1024 per epoch)
    assert (t.lr == 0.1).all() and 6.0 <= t.loc[512, "epochs"] <= 6.0 + 84 * 8 / 1024
    assert t.loc[8, "n_reached"] == 2


def test_tuning_picks_the_lowest_loss_rate_even_if_it_is_slower_to_target():
    """The protocol tunes on the 2-epoch loss, not on the epochs to target."""
    rows = []
    for lr, loss_scale, hit in ((0.1, 1.0, 9.0), (0.3, 2.0, 3.0)):
        for seed in (0, 1):
            rows += _run(
                1,
                54,
                64,
                lr,
                seed,
                lambda e, h=hit: 0.99 if e >= h else 0.1,
                lambda e, s=loss_scale: s / (1 + e),
            )
    t = m.tuned(m.per_run(pd.DataFrame(rows), P_T.analysis)).iloc[0]
    assert t.lr == 0.1 and t.epochs == pytest.approx(9.0, abs=0.5)


def test_threshold_and_largest_batch():
    b = [8, 16, 32, 64, 128]
    assert m.threshold(b, [2, 2, 2.5, 4, 9], 1.5) == 32
    assert np.isnan(m.threshold(b, [np.nan] * 5, 1.5))
    assert m.largest_within(b, [2, 2, 2.5, 4, np.nan], 3.0) == 32
    assert np.isnan(m.largest_within(b, [6, 7, 8, 9, 10], 5.0))


RANKS = (
    "threshold_grows_with_width",
    "wide_fewer_epochs_at_large_batch",
    "largest_batch_follows_diversity_bound",
)


def _many_nets(n=17, reverse=False):
    """``n`` nets of one panel (L = 1..n, K = 60, 58, ...): net i reaches the target in 1 epoch
    at batches 8 and 8 (n + 1 - i) (its B*) and in 11 + i epochs at batch 512 (above every
    budget but the largest: the largest batch within 10 epochs is B*); wider nets have the
    larger B* and need fewer epochs at batch 512 (``reverse``: the opposite).  17 untied items
    are the fewest at which a Kendall tau >= 0.3 has P(pass | random order) <= 0.05."""
    spec = {}
    for i in range(n):
        k = n - 1 - i if reverse else i
        spec[(1 + i, 60 - 2 * i)] = {8: 1.0, 8 * (n + 1 - k): 1.0, 512: 11.0 + k}
    return spec


def test_claims_pass_on_the_papers_pattern_and_fail_on_the_reverse():
    paper_like = {
        (1, 54): {8: 1, 16: 1, 32: 1, 64: 1, 128: 1, 256: 2, 512: 4},
        (2, 36): {8: 1, 16: 1, 32: 1, 64: 1, 128: 2, 256: 4, 512: 8},
        (3, 30): {8: 1, 16: 1, 32: 1, 64: 2, 128: 4, 256: 8, 512: 16},
        (4, 26): {8: 1, 16: 1, 32: 2, 64: 4, 128: 8, 256: 16, 512: 32},
    }
    table = claims.claims_table(_runs(paper_like), pd.DataFrame(), P_T)
    check_table(table, "width_batch test")  # every row names its test and its power
    c = table.set_index("claim_id")
    assert (c.kind == "claim").all()
    assert c.loc["threshold_exists[all]", "verdict"] == "pass"
    # 4 nets in the paper's order: a random order of 4 untied items reaches tau >= 1/3 with
    # P = 9/24 and tau = 1 with P = 1/24 <= 0.05, so the pass threshold is 1 and the full order
    # passes, with its chance under a random order stated
    for k in RANKS:
        r = c.loc[f"{k}[all]"]
        assert r.measured >= 0.3, (k, r.detail)
        assert "over 4 ordered items" in r.test and "significant at <= 0.05" in r.test
    for k in RANKS[:2]:  # untied
        r = c.loc[f"{k}[all]"]
        assert r.measured == pytest.approx(1.0) and r.verdict == "pass", (k, r.test)
        assert r.false_pass == pytest.approx(1 / 24) and r.detectable == pytest.approx(1.0), k
    assert c.loc["threshold_exists[all]", "detectable"] == pytest.approx(1 / 4)
    # the same pattern with 3 nets: a perfect order over 3 items is not evidence
    three = {k: v for k, v in paper_like.items() if k[0] != 3}
    c3 = claims.claims_table(_runs(three), pd.DataFrame(), P_T).set_index("claim_id")
    assert c3.loc["threshold_grows_with_width[all]", "measured"] == pytest.approx(1.0)
    assert c3.loc["threshold_grows_with_width[all]", "verdict"] == "inconclusive"
    # the widest net without the largest B* (the quick run's case before its fifth net): tau 1/3
    # of 3 items, inconclusive
    swap = dict(three)
    swap[(1, 54)], swap[(2, 36)] = three[(2, 36)], three[(1, 54)]
    c3 = claims.claims_table(_runs(swap), pd.DataFrame(), P_T).set_index("claim_id")
    assert c3.loc["threshold_grows_with_width[all]", "measured"] == pytest.approx(1 / 3)
    assert c3.loc["threshold_grows_with_width[all]", "verdict"] == "inconclusive"
    # reversed: the narrow deep net is the fastest at large batch, and no threshold anywhere
    reverse = {
        (1, 54): {b: 1 + b / 64 for b in (8, 64, 512)},
        (2, 36): {b: 1.0 for b in (8, 64, 512)},
        (3, 30): {b: 1.0 for b in (8, 64, 512)},
        (4, 26): {b: 1.0 for b in (8, 64, 512)},
    }
    c = claims.claims_table(_runs(reverse), pd.DataFrame(), P_T).set_index("claim_id")
    # a wrong sign over 4 nets, three of them tied, is not significant (tau-b -0.71, reached by
    # a quarter of the random orders with the ties kept: no fail is possible): inconclusive
    for k in ("wide_fewer_epochs_at_large_batch", "threshold_grows_with_width"):
        assert c.loc[f"{k}[all]", "measured"] < -0.3, k
        assert c.loc[f"{k}[all]", "verdict"] == "inconclusive", k
    assert c.loc["threshold_exists[all]", "measured"] == pytest.approx(0.25)
    assert c.loc["threshold_exists[all]", "verdict"] == "fail"
    # enough nets decide both ways: 17 untied nets in the paper's order pass every ordering
    # claim (P(pass | random order) = 0.046 <= 0.05), the reverse order fails them (a wrong
    # sign as rare under a random order)
    for reverse, want, tau in ((False, "pass", 1.0), (True, "fail", -1.0)):
        table = claims.claims_table(_runs(_many_nets(reverse=reverse)), pd.DataFrame(), P_T)
        check_table(table, "width_batch test")
        c = table.set_index("claim_id")
        assert c.loc["threshold_exists[all]", "verdict"] == "pass"
        for k in RANKS:
            r = c.loc[f"{k}[all]"]
            assert r.measured == pytest.approx(tau) and "over 17 ordered items" in r.test, k
            assert r.false_pass <= 0.05 and r.verdict == want, (k, r.false_pass, r.test)


def test_nets_tied_in_every_ordering_are_inconclusive_not_failed():
    """Every net needs the same epochs at every batch: B*, the epochs at the largest batch and
    the largest batch within the budget tie across the nets.  A tie everywhere is no order to
    test (Kendall's tau is undefined, not 0): the ordering claims are inconclusive, never a
    fail read off tau <= 0; the count claim is unaffected."""
    same = {b: e for b, e in zip((8, 16, 32, 64, 128, 256, 512), (1, 1, 1, 1, 2, 4, 8))}
    nets = {(1, 54): same, (2, 36): same, (3, 30): same, (4, 26): same}
    table = claims.claims_table(_runs(nets), pd.DataFrame(), P_T)
    check_table(table, "width_batch test")
    c = table.set_index("claim_id")
    for k in (
        "threshold_grows_with_width",
        "wide_fewer_epochs_at_large_batch",
        "largest_batch_follows_diversity_bound",
    ):
        r = c.loc[f"{k}[all]"]
        assert r.verdict == "inconclusive", (k, r.test)
        assert np.isnan(r.measured) and "single value" in r.test
    assert c.loc["threshold_exists[all]", "verdict"] == "pass"


def test_a_partial_tie_keeps_the_tie_aware_null():
    """Two of four nets share the largest B* (the widest among them): tau-b is still positive
    and the test names the ties and the null over random orders with the ties kept."""
    base = {8: 1, 16: 1, 32: 1, 64: 1, 128: 1, 256: 2, 512: 4}
    nets = {
        (1, 54): base,
        (2, 36): base,
        (3, 30): {8: 1, 16: 1, 32: 1, 64: 2, 128: 4, 256: 8, 512: 16},
        (4, 26): {8: 1, 16: 1, 32: 2, 64: 4, 128: 8, 256: 16, 512: 32},
    }
    c = claims.claims_table(_runs(nets), pd.DataFrame(), P_T).set_index("claim_id")
    r = c.loc["threshold_grows_with_width[all]"]
    assert "1 tie(s) in y" in r.test and "ties kept" in r.test
    # the null keeps the tie: P(pass | random order) is the share of the 24 orders of the
    # nets' B* (128, 128, 32, 16 over K = 54, 36, 30, 26) whose tau-b reaches 0.3
    from itertools import permutations

    from scipy.stats import kendalltau

    x, y = [54, 36, 30, 26], [128, 128, 32, 16]
    taus = np.array([kendalltau(x, q).statistic for q in permutations(y)])
    assert r.measured == pytest.approx(kendalltau(x, y).statistic) and r.measured > 0.3
    # the largest tau-b is reached by 2 of the 24 orders (the tied pair either way): P = 1/12
    # > 0.05, so no attainable tau is significant, no pass is possible, and the test says so
    assert r.measured == pytest.approx(taus.max())
    assert np.mean(taus >= taus.max() - 1e-12) == pytest.approx(2 / 24)
    assert r.verdict == "inconclusive" and "no pass possible" in r.test
    assert np.isnan(r.false_pass) and np.isnan(r.detectable)


def test_figures_build():
    import matplotlib.pyplot as plt

    runs = _runs({(1, 54): {8: 1, 64: 2, 512: 8}, (4, 26): {8: 2, 64: 5}})
    for name, spec in SPEC.figures.items():
        fig = getattr(figures, spec.function)(runs, pd.DataFrame(), P_T.for_job("figure"))
        assert len(fig.axes) >= 1, name
        plt.close(fig)
