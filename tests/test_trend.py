"""Trend rows of a budget ladder (sigprop.claims.trend): the slope and its SE against a
simulation of noisy statistics, and the verdicts' rule, each able to come out either way."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from sigprop.claims import row, sanity
from sigprop.claims.trend import (TREND_COLUMNS, critical, trend_rows, trend_verdict,
                                  weighted_slope)

BUDGETS = [300.0, 1200.0, 4800.0]
PAPER = 60000.0


def _rung(values: dict, ses: dict | None = None, verdict="fail"):
    rows = [row("s", cid, "a claim", "src", m, 1.0, 0.1, verdict, test="z", detectable=0.1,
                se=(ses or {}).get(cid, 0.05)) for cid, m in values.items()]
    rows.append(sanity("s", "identity", "an identity", "src", 1.0, 1.0, 0.1, "pass"))
    return pd.DataFrame(rows)


def test_weighted_slope_and_its_se_match_a_simulation():
    """Across 4000 simulated ladders with known SEs, the fitted slopes average the true slope
    and their spread is the SE the fit states."""
    rng = np.random.default_rng(0)
    x = np.log(BUDGETS + [19200.0])
    se = np.array([0.3, 0.1, 0.2, 0.05])
    slopes, stated = [], []
    for _ in range(4000):
        y = 0.7 + 0.25 * x + rng.normal(0, se)
        s, s_se, weighted = weighted_slope(x, y, se)
        assert weighted
        slopes.append(s), stated.append(s_se)
    slopes = np.array(slopes)
    assert np.allclose(stated, stated[0])
    assert abs(slopes.mean() - 0.25) < 4 * stated[0] / math.sqrt(len(slopes))
    assert slopes.std(ddof=1) == pytest.approx(stated[0], rel=0.05)


def test_unweighted_slope_se_matches_a_simulation_and_needs_three_points():
    rng = np.random.default_rng(1)
    x = np.log(BUDGETS + [19200.0, 76800.0])
    slopes, ses = [], []
    for _ in range(4000):
        s, s_se, weighted = weighted_slope(x, 0.1 * x + rng.normal(0, 0.2, len(x)))
        assert not weighted
        slopes.append(s), ses.append(s_se)
    # the residual SE estimates the spread of the slope (its square is unbiased for the variance)
    assert np.std(slopes, ddof=1) ** 2 == pytest.approx(np.mean(np.square(ses)), rel=0.08)
    assert math.isnan(weighted_slope(x[:2], [1.0, 2.0])[1])
    # a missing SE at one rung makes the whole fit unweighted
    assert not weighted_slope(x[:3], [1, 2, 3], [0.1, math.nan, 0.1])[2]


def test_needed_slope_falls_back_on_the_distance_to_the_target():
    from sigprop.claims.trend import needed_slope
    assert needed_slope(0.3, 1.0, 0.5, BUDGETS, PAPER) == pytest.approx(0.3 / math.log(16))
    assert needed_slope(math.nan, 1.0, 0.5, BUDGETS, PAPER) == pytest.approx(
        0.5 / math.log(PAPER / 300))
    assert math.isnan(needed_slope(math.nan, math.nan, 0.5, BUDGETS, PAPER))


def test_a_zero_se_takes_the_smallest_positive_se_of_the_claim():
    from sigprop.claims.trend import floored_se
    assert floored_se([0.3, 0.0, 0.1]).tolist() == [0.3, 0.1, 0.1]
    assert floored_se([0.0, 0.0]).tolist() == [0.0, 0.0]          # none positive: unweighted
    assert math.isnan(floored_se([0.2, math.nan])[1])             # a missing SE stays missing
    tables = [(f"r{i}", b, _rung({"c": m}, {"c": se})) for i, (b, m, se) in
              enumerate(zip(BUDGETS, [0.2, 0.5, 0.8], [0.02, 0.0, 0.02]))]
    t = trend_rows(tables, PAPER)
    assert t.weighted.iloc[0] and t.trend.iloc[0] == "toward" and t.se.iloc[0][1] == 0.0


def test_trend_verdict_rule():
    assert trend_verdict(0.5, 0.1, +1, 0.2, 3.0) == "toward"
    assert trend_verdict(-0.5, 0.1, +1, 0.2, 3.0) == "away"
    assert trend_verdict(0.5, 0.1, -1, 0.2, 3.0) == "away"
    assert trend_verdict(0.05, 0.05, +1, 0.2, 3.0) == "flat"            # 0.15 < 0.2 resolved
    assert trend_verdict(0.05, 0.1, +1, 0.2, 3.0) == "inconclusive"     # 0.3 > 0.2: not resolved
    assert trend_verdict(0.05, 0.05, 0, 0.2, 3.0) == "flat"             # on the value, stays
    assert trend_verdict(-0.5, 0.05, 0, 0.2, 3.0) == "away"             # on the value, leaves
    assert trend_verdict(math.nan, 0.05, 1, 0.2, 3.0) == "inconclusive"
    assert critical(True, 3) == 3.0 and critical(False, 3) > 100      # t with one df


def test_trend_rows_read_toward_away_flat_and_inconclusive():
    # expected 1.0; "up" starts below and climbs, "down" starts below and falls, "still" stays,
    # "noisy" moves but with SEs too wide to say
    values = [{"up": 0.2, "down": 0.2, "still": 0.5, "noisy": 0.5},
              {"up": 0.5, "down": 0.0, "still": 0.5, "noisy": 0.8},
              {"up": 0.8, "down": -0.2, "still": 0.51, "noisy": 0.4}]
    ses = {"up": 0.02, "down": 0.02, "still": 0.01, "noisy": 0.5}
    tables = [(f"r{i}", b, _rung(v, ses)) for i, (b, v) in enumerate(zip(BUDGETS, values))]
    t = trend_rows(tables, PAPER)
    assert list(t.columns) == TREND_COLUMNS
    t = t.set_index("claim_id")
    assert "identity" not in t.index                       # sanity rows have no trend
    assert t.trend.to_dict() == {"up": "toward", "down": "away", "still": "flat",
                                 "noisy": "inconclusive"}
    assert t.loc["up", "direction"] == 1 and t.loc["up", "weighted"]
    assert t.loc["up", "detectable_slope"] == pytest.approx(3 * t.loc["up", "slope_se"])
    # needed: the detectable effect (0.1) over the ladder's span of ln budget
    assert t.loc["still", "needed"] == pytest.approx(0.1 / math.log(4800 / 300))
    assert t.loc["up", "top_verdict"] == "fail" and t.loc["up", "top_rung"] == "r2"


def test_a_declared_direction_overrides_the_side_of_expected():
    values = [{"c": 0.4}, {"c": 0.2}, {"c": 0.0}]
    tables = [(f"r{i}", b, _rung(v)) for i, (b, v) in enumerate(zip(BUDGETS, values))]
    assert trend_rows(tables, PAPER).trend.iloc[0] == "away"
    t = trend_rows(tables, PAPER, targets={"c*": {"side": "down", "value": -1.0}})
    assert t.trend.iloc[0] == "toward" and t.expected.iloc[0] == -1.0


def test_trend_rows_need_increasing_budgets_and_two_rungs():
    tables = [(f"r{i}", b, _rung({"c": 0.1 * i})) for i, b in enumerate(BUDGETS)]
    with pytest.raises(ValueError, match="increasing"):
        trend_rows(tables[::-1], PAPER)
    with pytest.raises(ValueError, match="two rungs"):
        trend_rows(tables[:1], PAPER)
