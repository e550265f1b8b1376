"""Trend rows of a budget ladder (sigprop.claims.trend): the slope and its SE against a
simulation of noisy statistics, and the verdicts' rule, each able to come out either way."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from sigprop.claims import row, sanity
from sigprop.claims.trend import TREND_COLUMNS, critical, trend_rows, trend_verdict, weighted_slope

BUDGETS = [300.0, 1200.0, 4800.0]
PAPER = 60000.0


def _rung(values: dict, ses: dict | None = None, verdict="fail"):
    rows = [
        row(
            "s",
            cid,
            "a claim",
            "src",
            m,
            1.0,
            0.1,
            verdict,
            test="z",
            detectable=0.1,
            se=(ses or {}).get(cid, 0.05),
        )
        for cid, m in values.items()
    ]
    rows.append(sanity("s", "identity", "an identity", "src", 1.0, 1.0, 0.1, "pass"))
    return pd.DataFrame(rows)


def test_weighted_slope_and_its_se_match_a_simulation():
    """Across 4000 simulated ladders with known SEs, the fitted slopes average the true slope,
    their spread is the SE of the fit before inflation, chi-square has mean n - 2, and the stated
    SE is that SE times sqrt(max(1, chi2 / (n - 2)))."""
    rng = np.random.default_rng(0)
    x = np.log(BUDGETS + [19200.0])
    se = np.array([0.3, 0.1, 0.2, 0.05])
    w = 1 / se**2
    base = 1 / math.sqrt(np.sum(w * (x - np.sum(w * x) / np.sum(w)) ** 2))
    slopes, stated, chi2s = [], [], []
    for _ in range(4000):
        y = 0.7 + 0.25 * x + rng.normal(0, se)
        s, s_se, weighted, chi2 = weighted_slope(x, y, se)
        assert weighted
        slopes.append(s), stated.append(s_se), chi2s.append(chi2)
    slopes, stated, chi2s = map(np.array, (slopes, stated, chi2s))
    assert abs(slopes.mean() - 0.25) < 4 * base / math.sqrt(len(slopes))
    assert slopes.std(ddof=1) == pytest.approx(base, rel=0.05)
    assert chi2s.mean() == pytest.approx(2.0, rel=0.08)  # n - 2 = 2 df
    assert np.allclose(stated, base * np.sqrt(np.maximum(1, chi2s / 2)))


def test_a_ladder_the_line_does_not_fit_inflates_the_slope_se():
    """Three rungs with SE 0.01 whose middle rung sits 0.3 off the line: chi2 is far above its one
    degree of freedom, the slope's SE grows by sqrt(chi2), and the trend that the bare SE would
    call toward is inconclusive.  A ladder on its line keeps the bare SE."""
    x = np.log(BUDGETS)
    bare = 1 / math.sqrt(np.sum((x - x.mean()) ** 2) / 0.01**2)
    s, s_se, weighted, chi2 = weighted_slope(x, [0.2, 0.8, 0.5], [0.01] * 3)
    assert weighted and chi2 > 100
    assert s_se == pytest.approx(bare * math.sqrt(chi2))
    assert weighted_slope(x, 0.2 + 0.1 * x, [0.01] * 3)[1] == pytest.approx(bare)
    tables = [
        (f"r{i}", b, _rung({"c": m}, {"c": 0.01}))
        for i, (b, m) in enumerate(zip(BUDGETS, [0.2, 0.8, 0.5]))
    ]
    t = trend_rows(tables, PAPER, seeds=math.inf)  # even with the normal quantile
    assert t.chi2.iloc[0] == pytest.approx(chi2) and t.slope_se.iloc[0] == pytest.approx(s_se)
    assert s / bare > 3 and t.trend.iloc[0] == "inconclusive"


def test_unweighted_slope_se_matches_a_simulation_and_needs_three_points():
    rng = np.random.default_rng(1)
    x = np.log(BUDGETS + [19200.0, 76800.0])
    slopes, ses = [], []
    for _ in range(4000):
        s, s_se, weighted, chi2 = weighted_slope(x, 0.1 * x + rng.normal(0, 0.2, len(x)))
        assert not weighted and math.isnan(chi2)
        slopes.append(s), ses.append(s_se)
    # the residual SE estimates the spread of the slope (its square is unbiased for the variance)
    assert np.std(slopes, ddof=1) ** 2 == pytest.approx(np.mean(np.square(ses)), rel=0.08)
    assert math.isnan(weighted_slope(x[:2], [1.0, 2.0])[1])
    # a missing SE at one rung makes the whole fit unweighted
    assert not weighted_slope(x[:3], [1, 2, 3], [0.1, math.nan, 0.1])[2]


def test_needed_is_the_slope_that_reaches_the_papers_value_by_the_papers_budget():
    from sigprop.claims.trend import needed_slope

    assert needed_slope(1.0, 0.5, 300.0, PAPER) == pytest.approx(0.5 / math.log(PAPER / 300))
    assert needed_slope(-1.0, 0.5, 300.0, PAPER) == pytest.approx(1.5 / math.log(PAPER / 300))
    assert math.isnan(needed_slope(math.nan, 0.5, 300.0, PAPER))
    assert math.isnan(needed_slope(0.5, 0.5, 300.0, PAPER))  # already there
    # in a trend row: from the paper's value, not the claim's detectable effect (0.1) over the
    # ladder's span, nor the pass threshold
    tables = [
        (f"r{i}", b, _rung({"c": m})) for i, (b, m) in enumerate(zip(BUDGETS, [0.40, 0.41, 0.40]))
    ]
    t = trend_rows(tables, PAPER, {"c": {"side": "down", "value": 0.3, "paper": 0.0}}, seeds=3)
    assert t.reference.iloc[0] == "paper value" and t.expected.iloc[0] == 0.0
    assert t.needed.iloc[0] == pytest.approx(0.4 / math.log(PAPER / 300))
    t = trend_rows(tables, PAPER, {"c": {"side": "down", "value": 0.3}}, seeds=3)
    assert t.reference.iloc[0] == "pass threshold"
    assert t.needed.iloc[0] == pytest.approx(0.1 / math.log(PAPER / 300))


def test_a_zero_se_takes_the_smallest_positive_se_of_the_claim():
    from sigprop.claims.trend import floored_se

    assert floored_se([0.3, 0.0, 0.1]).tolist() == [0.3, 0.1, 0.1]
    assert floored_se([0.0, 0.0]).tolist() == [0.0, 0.0]  # none positive: unweighted
    assert math.isnan(floored_se([0.2, math.nan])[1])  # a missing SE stays missing
    tables = [
        (f"r{i}", b, _rung({"c": m}, {"c": se}))
        for i, (b, m, se) in enumerate(zip(BUDGETS, [0.2, 0.5, 0.8], [0.002, 0.0, 0.002]))
    ]
    t = trend_rows(tables, PAPER, seeds=3)
    assert t.weighted.iloc[0] and t.trend.iloc[0] == "toward" and t.se.iloc[0][1] == 0.0


def test_trend_verdict_rule():
    assert trend_verdict(0.5, 0.1, +1, 0.2, 3.0) == "toward"
    assert trend_verdict(-0.5, 0.1, +1, 0.2, 3.0) == "away"
    assert trend_verdict(0.5, 0.1, -1, 0.2, 3.0) == "away"
    assert trend_verdict(0.05, 0.05, +1, 0.2, 3.0) == "flat"  # 0.15 < 0.2 resolved
    assert trend_verdict(0.05, 0.1, +1, 0.2, 3.0) == "inconclusive"  # 0.3 > 0.2: not resolved
    assert trend_verdict(0.05, 0.05, 0, 0.2, 3.0) == "flat"  # on the value, stays
    assert trend_verdict(-0.5, 0.05, 0, 0.2, 3.0) == "away"  # on the value, leaves
    assert trend_verdict(math.nan, 0.05, 1, 0.2, 3.0) == "inconclusive"


def test_the_critical_value_is_students_t_with_the_seeds_degrees_of_freedom():
    from scipy import stats

    assert critical(True, 3, 3) == pytest.approx(stats.t.ppf(stats.norm.cdf(3.0), 2))
    assert 19 < critical(True, 3, 3) < 19.5  # 2 df at the 3-sigma level
    assert critical(True, 3, 11) == pytest.approx(stats.t.ppf(stats.norm.cdf(3.0), 10))
    assert critical(True, 3, math.inf) == 3.0  # known variances only
    assert critical(False, 3, 3) > 100  # unweighted: t with 1 df
    with pytest.raises(ValueError, match="degrees of freedom"):
        critical(True, 3, 1)


def test_three_rungs_of_three_seeds_do_not_read_toward_at_four_ses():
    """A slope 4 SEs from zero clears z = 3 but not the t quantile with 2 df (19.2): with SEs over
    3 seeds per rung it reads inconclusive, and toward only with SEs from many samples."""
    x = np.log(BUDGETS)
    se = 0.05
    slope_se = se / math.sqrt(np.sum((x - x.mean()) ** 2))
    ms = 0.2 + 4 * slope_se * (x - x[0])  # on the line: chi2 = 0
    tables = [(f"r{i}", b, _rung({"c": m}, {"c": se})) for i, (b, m) in enumerate(zip(BUDGETS, ms))]
    t = trend_rows(tables, PAPER, seeds=3)
    assert t.slope.iloc[0] / t.slope_se.iloc[0] == pytest.approx(4.0)
    assert t.crit.iloc[0] == pytest.approx(critical(True, 3, 3))
    assert t.trend.iloc[0] == "inconclusive"
    assert t.detectable_slope.iloc[0] == pytest.approx(t.crit.iloc[0] * t.slope_se.iloc[0])
    assert trend_rows(tables, PAPER, seeds=math.inf).trend.iloc[0] == "toward"
    # the fewest seeds of the fitted rungs decide
    assert trend_rows(tables, PAPER, seeds=[50, 50, 3]).crit.iloc[0] == t.crit.iloc[0]


def test_trend_rows_read_toward_away_flat_and_inconclusive():
    # expected 1.0; "up" starts below and climbs, "down" starts below and falls, "still" stays,
    # "noisy" moves but with SEs too wide to say
    values = [
        {"up": 0.2, "down": 0.2, "still": 0.5, "noisy": 0.5},
        {"up": 0.5, "down": 0.0, "still": 0.5, "noisy": 0.8},
        {"up": 0.8, "down": -0.2, "still": 0.501, "noisy": 0.4},
    ]
    ses = {"up": 0.002, "down": 0.002, "still": 0.001, "noisy": 0.5}
    tables = [(f"r{i}", b, _rung(v, ses)) for i, (b, v) in enumerate(zip(BUDGETS, values))]
    t = trend_rows(tables, PAPER, seeds=3)
    assert list(t.columns) == TREND_COLUMNS
    t = t.set_index("claim_id")
    assert "identity" not in t.index  # sanity rows have no trend
    assert t.trend.to_dict() == {
        "up": "toward",
        "down": "away",
        "still": "flat",
        "noisy": "inconclusive",
    }
    assert t.loc["up", "direction"] == 1 and t.loc["up", "weighted"]
    assert t.loc["up", "reference"] == "claim expected"
    up = t.loc["up"]
    assert up.detectable_slope == pytest.approx(up.crit * up.slope_se)
    assert t.loc["still", "needed"] == pytest.approx(0.5 / math.log(PAPER / 300))
    assert t.loc["up", "top_verdict"] == "fail" and t.loc["up", "top_rung"] == "r2"


def test_a_declared_direction_overrides_the_side_of_expected():
    values = [{"c": 0.4}, {"c": 0.2}, {"c": 0.0}]
    tables = [(f"r{i}", b, _rung(v)) for i, (b, v) in enumerate(zip(BUDGETS, values))]
    assert trend_rows(tables, PAPER, seeds=math.inf).trend.iloc[0] == "away"
    t = trend_rows(tables, PAPER, targets={"c*": {"side": "down", "value": -1.0}}, seeds=math.inf)
    assert t.trend.iloc[0] == "toward" and t.expected.iloc[0] == -1.0
    assert t.reference.iloc[0] == "pass threshold"


def test_the_direction_is_toward_the_papers_value_not_the_pass_side():
    """A statistic that passes beyond the paper's value and falls back toward it (still on the
    pass side) reads toward the paper; one that moves away from the threshold and toward the
    paper's value reads toward too; one past the paper's value moving further reads away."""
    falls = [
        (f"r{i}", b, _rung({"c": m}, {"c": 0.002}))
        for i, (b, m) in enumerate(zip(BUDGETS, [0.95, 0.8, 0.65]))
    ]
    tau = {"c": {"side": "up", "value": 0.3, "paper": 0.6}}  # Kendall tau >= 0.3
    t = trend_rows(falls, PAPER, tau, seeds=3)
    assert t.direction.iloc[0] == -1 and t.trend.iloc[0] == "toward"
    assert (
        trend_rows(falls, PAPER, {"c": {"side": "up", "value": 0.3}}, seeds=3).trend.iloc[0]
        == "away"
    )  # against the threshold's side
    rises = [
        (f"r{i}", b, _rung({"c": m}, {"c": 0.002}))
        for i, (b, m) in enumerate(zip(BUDGETS, [0.35, 0.45, 0.55]))
    ]
    assert trend_rows(rises, PAPER, tau, seeds=3).trend.iloc[0] == "toward"
    beyond = [
        (f"r{i}", b, _rung({"c": m}, {"c": 0.002}))
        for i, (b, m) in enumerate(zip(BUDGETS, [0.7, 0.8, 0.9]))
    ]
    assert trend_rows(beyond, PAPER, tau, seeds=3).trend.iloc[0] == "away"


def test_trend_rows_need_increasing_budgets_two_rungs_and_seeds():
    tables = [(f"r{i}", b, _rung({"c": 0.1 * i})) for i, b in enumerate(BUDGETS)]
    with pytest.raises(ValueError, match="increasing"):
        trend_rows(tables[::-1], PAPER, seeds=3)
    with pytest.raises(ValueError, match="two rungs"):
        trend_rows(tables[:1], PAPER, seeds=3)
    with pytest.raises(ValueError, match="seed counts"):
        trend_rows(tables, PAPER, seeds=[3, 3])
    with pytest.raises(TypeError, match="seeds"):
        trend_rows(tables, PAPER)


def _study_file(name="dropout_training"):
    from conftest import REPO

    from sigprop.config import load_yaml

    return load_yaml(REPO / f"config/studies/{name}.yaml")


@pytest.mark.parametrize(
    "edit, key",
    [
        (
            lambda lad: lad["targets"].update(
                {"x*": {"side": "down", "value": 0.02, "paper": "zero"}}
            ),
            "ladder.targets.x*.paper",
        ),
        (
            lambda lad: lad["targets"].update(
                {"x*": {"side": "down", "value": 0.02, "paper": 0.5}}
            ),
            "ladder.targets.x*.paper",
        ),  # on the fail side
        (
            lambda lad: lad["targets"].update({"x*": {"side": "up", "value": 0.9, "papr": 1.0}}),
            "ladder.targets.x*.papr",
        ),
        (lambda lad: lad.update(fixed="2026-11-26"), "ladder.fixed"),
        (
            lambda lad: lad.update(fixed={"commit": "HEAD", "date": "2026-11-26"}),
            "ladder.fixed.commit",
        ),
        (
            lambda lad: lad.update(fixed={"commit": "cad00f2", "date": "26/11/2026"}),
            "ladder.fixed.date",
        ),
        (
            lambda lad: lad.update(redeclared=[{"commit": "b649d14", "date": "2026-11-26"}]),
            "ladder.redeclared[0].what",
        ),
        (
            lambda lad: lad.update(
                redeclared=[{"commit": "zz", "date": "2026-11-26", "what": "x"}]
            ),
            "ladder.redeclared[0].commit",
        ),
        (lambda lad: lad["rungs"][1].update(seeds=5), "ladder.rungs[1].seeds"),  # blocks run 3
        (lambda lad: lad["rungs"][0].pop("seeds"), "ladder.rungs[0].seeds"),
    ],
)
def test_a_bad_target_declaration_or_seed_count_is_a_config_error_naming_its_key(edit, key):
    import copy
    import re

    from sigprop.config import ConfigError
    from sigprop.config.ladder import ladder_of

    cfg = copy.deepcopy(_study_file())
    ladder_of(cfg, "d.yaml")  # as committed: accepted
    edit(cfg["ladder"])
    with pytest.raises(ConfigError, match=re.escape(f"d.yaml: key '{key}'")):
        ladder_of(cfg, "d.yaml")


def test_committed_ladders_declare_their_commit_and_dropouts_redeclaration():
    from sigprop.config.ladder import declared_words, ladder_of

    lad = ladder_of(_study_file(), "d.yaml")
    assert lad.fixed.commit == "cad00f2"
    assert [d.commit for d in lad.redeclared] == ["b649d14", "cc43cc4"]
    words = declared_words(lad)
    assert "`cad00f2`" in words and "re-declared after rungs had run, at commit `b649d14`" in words
    assert "at commit `cc43cc4` (2026-11-28): ladder3 at 24,000 steps on 6 seeds" in words
    assert "before any" not in words
    assert "at commit `ed274ec` (2026-11-28): ladder4" in declared_words(
        ladder_of(_study_file("width_batch"), "w.yaml")
    )
    eoc = declared_words(ladder_of(_study_file("pruning_eoc"), "p.yaml"))
    assert "at commit `067d5b7` (2026-11-28): ladder4" in eoc
    assert "at commit `f93c13f` (2026-11-28): ladder4 declared again with 8 seeds" in eoc
    assert "re-declared after rungs had run, at commit `2156eda`" in declared_words(
        ladder_of(_study_file("training_speed"), "t.yaml")
    )
    assert (
        declared_words(ladder_of(_study_file("pruning_resnet"), "r.yaml"))
        == "Rungs declared at commit `902f99f` (2026-11-28)."
    )
