"""Claims of the length and correlation maps with dropout (Huang et al. 2019, arXiv:1912.09132,
Sec. 3.1, Eqs. 2-4, Fig. 1): the joint test over the (rho, probe) points that share
instantiations, and the rho = 1 identity as a sanity row."""

import numpy as np
import pandas as pd
import pytest

from sigprop import registry
from sigprop.claims import check_table, tally, threshold_mismatches
from sigprop.studies.meanfield_maps import claims as mm_claims
from sigprop.tables import CLAIM_COLUMNS
from sigprop.theory import meanfield

SW, SB = 0.81, 0.25
Q_PROBES = [0.5, 1.0, 2.0, 4.0, 8.0]
C_PROBES = [0.0, 0.25, 0.5, 0.75, 1.0]
KEEPS = [1.0, 0.7]


def _params():
    cfg = {
        "name": "mm",
        "analysis": {
            "panels": [{"activation": "linear", "map": "q"}, {"activation": "relu", "map": "c"}]
        },
        "claims": {"n_boot": 500},
    }
    return registry.resolve("meanfield_maps", cfg, "quick").for_job("claims")


def _runs(n=20, rel_noise=0.02, q_shift=1.0, c_shift=1.0, c_one_gap=None, seed=0):
    """Synthetic instantiations scattered around Eqs. 2-4 (times ``*_shift``), with
    the per-instantiation noise shared by a seed's probes (as in one random layer)."""
    rng = np.random.default_rng(seed)
    rows = []

    def add(act, rho, s, metric, probe, value):
        rows.append(
            {
                "run_id": f"{act}-{rho}-{s}",
                "seed": s,
                "activation": act,
                "sigma_w2": SW,
                "sigma_b2": SB,
                "keep_rate": rho,
                "probe": probe,
                "metric": metric,
                "value": value,
            }
        )

    for rho in KEEPS:
        for s in range(n):
            common = rng.standard_normal()
            for i, q in enumerate(Q_PROBES):
                e = 1 + rel_noise * (0.7 * common + 0.7 * rng.standard_normal())
                add("linear", rho, s, "qmap_in", i, q)
                add(
                    "linear",
                    rho,
                    s,
                    "qmap_out",
                    i,
                    q_shift * float(meanfield.q_map(q, SW, SB, rho, "linear")) * e,
                )
            qc = float(meanfield.q_star(SW, SB, rho, "relu"))
            qc = qc if np.isfinite(qc) else 1000.0
            for i, c in enumerate(C_PROBES):
                th = float(meanfield.c_map(c, qc, SW, SB, rho, "relu"))
                if rho == 1.0 and c == 1.0:
                    out = 1.0  # identical probes, no mask: exactly 1
                elif c == 1.0 and c_one_gap is not None:
                    out = 1.0 - c_one_gap + 0.01 * rng.standard_normal()
                else:
                    out = c_shift * th * (1 + rel_noise * rng.standard_normal())
                add("relu", rho, s, "cmap_in", i, c)
                add("relu", rho, s, "cmap_out", i, out)
                add("relu", rho, s, "cmap_q", i, qc)
    return pd.DataFrame(rows)


def _table(runs):
    df = mm_claims.claims_table(runs, pd.DataFrame(), _params())
    assert list(df.columns) == CLAIM_COLUMNS
    check_table(df, "test")
    return df.set_index("claim_id")


def test_maps_agree_and_rho1_is_a_sanity_row():
    df = _table(_runs())
    for cid in ("q_map_matches_simulation[linear]", "c_map_matches_simulation[relu]"):
        r = df.loc[cid]
        assert r.kind == "claim" and r.verdict == "pass", r.detail
        assert r.measured <= r.tolerance and 0 < r.detectable < 0.05
        assert "joint max" in r.test and "20 shared instantiations" in r.test
    s = df.loc["c_star_below_one_iff_dropout[relu, rho=1]"]
    assert s.kind == "sanity" and s.verdict == "pass" and s.measured == 0.0
    # with dropout (rho < 1) c = 1 is not a fixed point by construction (independent masks):
    # a sanity row too, still decided by its own test, never counted
    c = df.loc["c_star_below_one_iff_dropout[relu, rho=0.7]"]
    assert c.kind == "sanity" and c.verdict == "pass" and c.measured > c.detectable > 0
    assert "holds by construction" in c.detail
    t = tally(df.reset_index())
    assert t["sanity"] == 2 and t["claims"] == 2 and t["pass"] == 2
    assert set(df[df.kind == "claim"].index) == {
        "q_map_matches_simulation[linear]",
        "c_map_matches_simulation[relu]",
    }


@pytest.mark.parametrize("shift", [1.05, 0.95])
def test_joint_test_fails_on_a_shifted_theory(shift):
    """A common 5 % offset from Eqs. 2-4 (about 10 SE at each point, above the detectable
    relative offset of ~2 %) fails the joint test."""
    df = _table(_runs(q_shift=shift, c_shift=shift))
    assert df.loc["q_map_matches_simulation[linear]", "verdict"] == "fail"
    assert df.loc["c_map_matches_simulation[relu]", "verdict"] == "fail"


def test_c_star_claim_can_fail_and_be_inconclusive():
    # c_out(1) above 1 with dropout: the (sanity) row fails, so it checks the apparatus
    assert (
        _table(_runs(c_one_gap=-0.05)).loc["c_star_below_one_iff_dropout[relu, rho=0.7]", "verdict"]
        == "fail"
    )
    # a gap within 3 SE of 0: the design cannot tell
    assert (
        _table(_runs(c_one_gap=0.002)).loc["c_star_below_one_iff_dropout[relu, rho=0.7]", "verdict"]
        == "inconclusive"
    )


def test_a_map_pass_needs_the_detectable_offset_within_the_margin():
    """The map claims are equivalences with a 10 % relative-offset margin (claims.margin): with
    noisy instantiations the joint test finds no deviation but could not have found one of 10 %
    (detectable > 0.10), so the row is inconclusive, not pass."""
    df = _table(_runs(rel_noise=0.3))
    for cid in ("q_map_matches_simulation[linear]", "c_map_matches_simulation[relu]"):
        r = df.loc[cid]
        assert r.margin == pytest.approx(0.1) and r.detectable > r.margin
        assert r.measured <= r.tolerance  # the joint test itself finds no deviation
        assert r.verdict == "inconclusive" and "cannot resolve the margin" in r.test
    # precise instantiations resolve the margin: pass
    r = _table(_runs()).loc["q_map_matches_simulation[linear]"]
    assert r.verdict == "pass" and r.detectable <= r.margin == pytest.approx(0.1)
    assert "equivalence margin 0.1" in r.test


def test_c_star_expected_names_only_what_its_test_applies():
    """The one-sided c* row (a sanity row) has no margin, and its expected text states the threshold the
    test applies (k SE), not a threshold ('c* < 1') it does not."""
    df = _table(_runs())
    r = df.loc["c_star_below_one_iff_dropout[relu, rho=0.7]"]
    assert np.isnan(r.margin)
    assert r.expected.startswith("1 - c_out(1) > 3 SE")
    assert threshold_mismatches(r.expected, r.test, r.tolerance) == []
