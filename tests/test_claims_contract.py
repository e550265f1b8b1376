"""The claims contract: kinds of row (claims, beyond the paper, sanity, summaries), tallies that
count only claims, every claim naming its test and detectable effect, equivalence claims passing
only within their margin, sources inside the paper, power helpers checked against simulation,
exploratory rows from a study's design changes, how a verdict reads at its scale and regime, and
a referee's summary with both scales that parses as reStructuredText."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from sigprop import claims as C
from sigprop.claims import reading
from sigprop.claims.render import to_html
from sigprop.claims.summary import escape, referee_summary
from sigprop.tables import CLAIM_COLUMNS


def _row(cid, verdict="pass", kind="claim", test="z test", detectable=0.1, claim="x"):
    if kind == "sanity":
        return C.sanity("s", cid, claim, "000", 1.0, "1", 0.0, verdict)
    return C.row(
        "s", cid, claim, "000", 1.0, "1", 0.0, verdict, kind=kind, test=test, detectable=detectable
    )


def test_check_table_accepts_a_well_formed_table():
    df = C.frame(
        [_row("a"), _row("b", "inconclusive", detectable=np.nan), _row("c", kind="sanity")]
    )
    C.check_table(df, "study s")
    assert list(df.columns) == list(CLAIM_COLUMNS)


@pytest.mark.parametrize(
    "rows, message",
    [
        ([_row("a", test="")], "does not name its test"),
        ([_row("a", detectable=np.nan)], "no detectable effect"),
        ([_row("a", "fail", detectable=np.inf)], "no detectable effect"),
        ([_row("a"), _row("a")], "appears twice"),
        ([{**_row("a"), "kind": "evidence"}], "kind 'evidence'"),
        ([_row("a", "maybe")], "verdict 'maybe'"),
    ],
)
def test_check_table_names_the_study_and_the_claim(rows, message):
    with pytest.raises(ValueError) as e:
        C.check_table(C.frame(rows), "study s (sigprop/studies/s/claims.py)")
    assert "study s" in str(e.value) and message in str(e.value)


def test_tally_never_counts_sanity_rows():
    df = C.frame(
        [_row("a"), _row("b", "fail"), _row("c", kind="sanity"), _row("d", "fail", kind="sanity")]
    )
    t = C.tally(df)
    assert (t["claims"], t["pass"], t["fail"], t["sanity"], t["sanity_failing"]) == (2, 1, 1, 2, 1)


def test_html_puts_sanity_checks_in_their_own_section_and_tallies_claims_only():
    df = C.frame([_row("a"), _row("sane", kind="sanity")])
    html = to_html(df)
    claims_part, sanity_part = html.split("Sanity checks (identities")
    assert "<td>a</td>" in claims_part and "<td>sane</td>" in sanity_part
    assert "1 claims: 1 supported" in html and "1 sanity checks, not counted" in html


def test_power_controls_are_apart_from_claims_and_state_their_power():
    """A control row names its test and detectable effect like a claim, is never tallied, and
    an underpowered control reads as such, not as a failing sanity check."""
    ctl = C.control(
        "s",
        "k",
        "the test rejects a wrong value",
        "000",
        0.2,
        "< 0.5",
        0.0,
        "inconclusive",
        test="fraction below 0.5 by 2 SE",
        detectable=0.3,
    )
    df = C.frame(
        [
            _row("a"),
            ctl,
            C.control(
                "s",
                "k2",
                "x",
                "000",
                0.0,
                "< 0.5",
                0.0,
                "pass",
                test="fraction below 0.5 by 2 SE",
                detectable=0.1,
            ),
        ]
    )
    C.check_table(df, "study s")
    t = C.tally(df)
    assert (
        t["claims"],
        t["control"],
        t["control_pass"],
        t["control_underpowered"],
        t["sanity"],
        t["sanity_failing"],
    ) == (1, 2, 1, 1, 0, 0)
    html = to_html(df)
    assert (
        "1 claims: 1 supported" in html
        and "2 power controls, not counted (1 pass, 1 underpowered, 0 fail)" in html
        and "Power controls (" in html
    )
    with pytest.raises(ValueError, match="no detectable effect"):
        C.check_table(C.frame([{**ctl, "verdict": "pass", "detectable": np.nan}]), "study s")


@pytest.mark.parametrize(
    "offset, n, want", [(4.0, 200, "pass"), (0.0, 200, "fail"), (2.0, 12, "inconclusive")]
)
def test_the_fraction_control_against_simulation(offset, n, want):
    """below_fraction on simulated z scores of a wrong model: far from the truth (offset 4 SE)
    the fraction within 2 SE is small and the control passes; with no offset (the 'wrong' model
    is right: no power) about 95 % lie within and it fails; at the threshold (offset 2 SE: half within) with few
    units it cannot tell.  Each case holds in at least 95 % of 400 simulated designs."""
    rng = np.random.default_rng(7)
    got = []
    for _ in range(400):
        z = rng.standard_normal(n) + offset
        verdict, detectable = C.below_fraction(np.mean(np.abs(z) <= 2), n, 0.5, 2.0)
        assert detectable == pytest.approx(2 * np.sqrt(0.25 / n))
        got.append(verdict)
    assert np.mean(np.array(got) == want) >= 0.95, (offset, n, {v: got.count(v) for v in set(got)})


def test_z_helpers_state_their_power():
    assert C.z_within(0.25, 0.1, 3) == ("pass", "|deviation| <= max(3 SE, 0)", pytest.approx(0.3))
    assert C.z_within(0.35, 0.1, 3)[0] == "fail"
    assert C.z_within(0.05, 0.01, 3, floor=0.1)[2] == pytest.approx(0.1)
    assert C.z_within(0.0, np.nan, 3)[0] == "inconclusive"
    assert C.z_above(0.31, 0.1, 3)[0] == "pass"
    assert C.z_above(0.1, 0.1, 3)[0] == "inconclusive"  # within noise: the design cannot tell
    assert C.z_above(-0.31, 0.1, 3)[0] == "fail"
    assert C.z_above(0.5, 0.1, 3)[2] == pytest.approx(0.3)
    # a count difference equal to k SE up to rounding lies on the boundary: not a pass
    assert C.z_above(1.0 + 1e-15, 1 / 3, 3)[0] == "inconclusive"
    assert C.z_above(-(1.0 + 1e-15), 1 / 3, 3)[0] == "inconclusive"
    assert C.exceeds(0.12500000000000003, 0.125) is False
    assert C.exceeds(0.1251, 0.125) is True


def test_kendall_levels_and_the_three_item_rule():
    assert np.allclose(C.kendall_levels(3), [-1, -1 / 3, 1 / 3, 1])
    r3 = C.rank_claim([1, 2, 3], [1, 2, 3], 0.3)
    assert r3["measured"] == pytest.approx(1.0) and r3["verdict"] == "inconclusive"
    assert "fewer than 4" in r3["test"]
    # a stated reason admits 3 items, but a random order of 3 reaches tau = 1 with P = 1/6:
    # no attainable tau is significant, so no pass is possible
    r3r = C.rank_claim([1, 2, 3], [1, 2, 3], 0.3, reason="the paper has 3 nets")
    assert r3r["verdict"] == "inconclusive" and "no pass possible" in r3r["test"]
    assert np.isnan(r3r["detectable"])
    # 4 items: P(tau >= 2/3) = 4/24 > 0.05, P(tau = 1) = 1/24: a pass needs the full order
    r4 = C.rank_claim([1, 2, 3, 4], [1, 2, 4, 3], 0.3)
    assert r4["verdict"] == "inconclusive" and r4["measured"] == pytest.approx(2 / 3)
    assert r4["detectable"] == pytest.approx(1.0)
    assert r4["false_pass"] == pytest.approx(1 / 24)
    full = C.rank_claim([1, 2, 3, 4], [1, 2, 3, 4], 0.3)
    assert full["verdict"] == "pass" and full["false_pass"] == pytest.approx(1 / 24)
    r = C.row(
        "s",
        "c",
        "rises",
        "001",
        full["measured"],
        "tau >= 0.3",
        0.3,
        full["verdict"],
        test=full["test"],
        detectable=full["detectable"],
        false_pass=full["false_pass"],
    )
    assert r["verdict"] == "pass"
    # a wrong sign fails where it is as significant as a pass must be: 4 reversed items
    # (P = 1/24) ...
    assert C.rank_claim([1, 2, 3, 4], [4, 3, 2, 1], 0.3)["verdict"] == "fail"
    # ... and 6 reversed items at 0.6, whose threshold is -0.733 (P(tau <= -0.6) = 49/720 =
    # 0.068 > 0.05, P(tau <= -0.733) = 20/720)
    r6 = C.rank_claim(range(6), range(6)[::-1], 0.6)
    assert r6["verdict"] == "fail" and r6["detectable"] == pytest.approx(1 - 8 / 30)
    r6 = C.rank_claim(range(6), range(6)[::-1], 0.7)
    assert r6["verdict"] == "fail" and r6["false_pass"] == pytest.approx(20 / 720)
    # a small wrong sign (tau = -1/3 over 6 items) is no evidence against the ordering
    assert C.rank_claim(range(6), [1, 0, 3, 2, 5, 4][::-1], 0.7)["verdict"] == "inconclusive"
    # between 0 and the threshold: the design cannot tell
    assert C.rank_claim([1, 2, 3, 4], [1, 2, 4, 3], 0.99)["verdict"] == "inconclusive"


def test_a_rank_pass_is_the_significant_threshold_and_a_random_order_rarely_reaches_it():
    # 5 untied items: tau >= 0.3 has P = 0.242 under a random order, tau >= 0.8 has 5/120, so
    # the pass threshold is 0.8 and a perfect order passes (under a threshold of 0.3 alone it
    # would pass a random order a quarter of the time)
    r = C.rank_claim(range(5), range(5), 0.3)
    assert r["verdict"] == "pass" and r["detectable"] == pytest.approx(0.8)
    assert r["false_pass"] == pytest.approx(5 / 120)
    assert C.rank_claim(range(5), [0, 2, 1, 4, 3], 0.3)["verdict"] == "inconclusive"  # 0.6
    # 10 untied items: the threshold is the smallest level whose upper tail is <= 0.05, and the
    # level below it has a tail above 0.05
    law = C.kendall_law(10)
    total = sum(law.values())
    r10 = C.rank_claim(range(10), range(10), 0.3)
    t = r10["detectable"]
    at = min((v for v in law if float(v) >= t - 1e-9), key=float)
    below = max((v for v in law if float(v) < t - 1e-9), key=float)

    def tail(v):
        return sum(c for w, c in law.items() if w >= v) / total

    assert tail(at) <= 0.05 and r10["false_pass"] == pytest.approx(float(tail(at)))
    assert tail(below) > 0.05 and t >= 0.3
    # simulation: over random orders of 7 tied items (scipy's tau-b, not the project's) the
    # share reaching the pass threshold matches false_pass, <= 0.05
    from scipy.stats import kendalltau

    rng = np.random.default_rng(0)
    x = np.arange(7)
    y = np.array([1, 1, 2, 3, 3, 4, 5])
    r7 = C.rank_claim(x, y, 0.3)
    fp, at = r7["false_pass"], r7["detectable"]
    taus = np.array([kendalltau(x, rng.permutation(y)).statistic for _ in range(4000)])
    passes = np.mean(taus >= at - 1e-9)
    assert r7["verdict"] == "pass" and fp <= 0.05
    assert abs(passes - fp) < 4 * np.sqrt(fp * (1 - fp) / 4000)


def test_false_pass_over_the_limit_is_refused_by_the_table_check():
    r = C.row("s", "c", "rises", "001", 0.8, "tau >= 0.6", 0.6, "pass", test="t", detectable=0.6)
    df = C.frame([r])
    df.loc[0, "false_pass"] = 0.3
    with pytest.raises(ValueError, match="false_pass 0.3 above 0.05"):
        C.check_table(df, "x")


@pytest.mark.parametrize("n, min_tau", [(4, 0.3), (5, 0.3), (6, 0.5), (10, 0.3)])
def test_kendall_null_pass_probability_matches_simulation(n, min_tau):
    """The chance an ordering claim passes with no association, against random orders."""
    from scipy.stats import kendalltau

    rng = np.random.default_rng(0)
    sims = 4000
    hits = sum(
        kendalltau(np.arange(n), rng.permutation(n)).statistic >= min_tau - 1e-12
        for _ in range(sims)
    )
    p = C.kendall_null_pass(n, min_tau)
    assert abs(hits / sims - p) <= 4 * np.sqrt(p * (1 - p) / sims)  # exact law at every n


def test_kendall_law_equals_enumeration_and_a_simulation():
    """The inversion-count recursion gives the law of Kendall's tau that brute-force enumeration
    of the n! orders gives (n <= 7), and at n = 10 (paper scale: one group of 10 nets, 3.6M
    orders) the frequencies of 200,000 random orders lie within 5 SE of it."""
    import math
    from collections import Counter
    from fractions import Fraction

    for n in range(2, 8):
        brute = Counter()
        for perm in itertools.permutations(range(n)):
            disc = sum(perm[i] > perm[j] for i in range(n) for j in range(i + 1, n))
            brute[1 - Fraction(4 * disc, n * (n - 1))] += 1
        assert C.kendall_law(n) == brute
    n, sims = 10, 200_000
    counts = C.kendall_inversion_counts(n)
    assert sum(counts) == math.factorial(n)
    perms = np.argsort(np.random.default_rng(0).random((sims, n)), axis=1)
    inv = sum((perms[:, i] > perms[:, j]).astype(int) for i in range(n) for j in range(i + 1, n))
    seen = Counter(inv.tolist())
    for k, c in enumerate(counts):
        p = c / math.factorial(n)
        assert abs(seen.get(k, 0) / sims - p) <= 5 * math.sqrt(p * (1 - p) / sims) + 1e-12, k


def _correlated(rng, n_init, points, shift=0.0):
    """Per-initialization values at several points that share the initialization: a common
    random effect per initialization plus independent noise."""
    common = rng.normal(size=(n_init, 1))
    return 1.0 + shift + 0.2 * common + 0.1 * rng.normal(size=(n_init, points))


def test_joint_bootstrap_test_holds_its_level_and_detects_an_offset():
    """Calibration by simulation: with theory true, max |z| exceeds the 95 % bootstrap critical
    value in about 5 % of data sets (< 12 % of 120 here); offset by 3 SE at every point it is
    caught nearly always."""
    rng = np.random.default_rng(1)
    theory = np.ones(20)
    false = sum(
        C.max_abs_z_bootstrap(_correlated(rng, 32, 20), theory, n_boot=400, seed=i)["p"] < 0.05
        for i in range(120)
    )
    assert false / 120 < 0.12
    se = np.sqrt(0.2**2 + 0.1**2) / np.sqrt(32)
    caught = sum(
        C.max_abs_z_bootstrap(_correlated(rng, 32, 20, shift=4 * se), theory, n_boot=400, seed=i)[
            "p"
        ]
        < 0.05
        for i in range(40)
    )
    assert caught / 40 > 0.8
    r = C.max_abs_z_bootstrap(_correlated(rng, 32, 20), theory, n_boot=400)
    assert r["crit"] > 2.0 and 0 < r["detectable"] < 0.2


def test_design_changes_mark_matching_claims_exploratory_at_their_scale():
    design = {
        "fixed": "2026-11-21",
        "changes": [
            {
                "date": "2026-11-22",
                "scale": "quick",
                "what": "grid",
                "why": "w",
                "before": "b",
                "affects": ["threshold_*"],
            },
            {
                "date": "2026-11-22",
                "scale": "paper",
                "what": "grid",
                "why": "w",
                "before": "b",
                "affects": ["*"],
            },
        ],
    }
    quick = C.design_changes(design, "quick")
    assert len(quick) == 1
    df = C.mark_exploratory(C.frame([_row("threshold_exists[a]"), _row("other")]), quick)
    assert df.exploratory.tolist() == [True, False]


def test_referee_summary_reads_as_restructuredtext_without_warnings():
    from docutils.core import publish_doctree
    from docutils.nodes import system_message

    df = C.frame(
        [
            _row("c_star[*, rho=1]", claim="c* = 1 at rho_1 | `x`"),
            _row("b", "fail"),
            _row("i", "inconclusive", detectable=np.nan),
            _row("sane", kind="sanity"),
        ]
    )
    df.loc[1, "exploratory"] = True
    df = reading.apply(df, "quick", {"data": "8x8 digits, not MNIST"}, {"c_star*": []})
    text = referee_summary(
        "000 Huang et al.",
        "arXiv:1912.09132",
        df,
        {
            "s": {
                "title": "A study",
                "scale": "quick",
                "datasets": ["digits"],
                "description": "Digits instead of MNIST; width 64 *not* 300.",
                "fixed": "2026-11-21",
                "regime": {"data": "8x8 digits, not MNIST"},
                "changes": [{"date": "2026-11-22", "what": "seeds 1 -> 3"}],
                "fragile": [{"date": "2026-11-26", "claims": ["b"], "proposal": "6 seeds"}],
            }
        },
    )
    tree = publish_doctree(text, settings_overrides={"report_level": 5, "halt_level": 5})
    assert not list(tree.findall(system_message)), text
    plain = text.replace("\\", "")
    assert (
        "not robust (a change of training arithmetic alone flipped the verdict, 2026-11-26): "
        "``b`` — 6 seeds"
    ) in plain, plain
    first = plain.splitlines()[0]
    # the first line names the scale and data of every count, and the paper scale
    assert (
        "quick scale (1 of 1 study; 8×8 digits (scikit-learn)): 3 claims: 1 supported, "
        "1 not supported (0 contradict the paper, 1 not reproduced at quick scale), "
        "1 inconclusive" in first
    ), first
    assert "paper scale: no committed verdicts" in first
    for want in (
        "Claims, at both scales (3)",
        "Sanity checks, not counted (1)",
        "quick **not reproduced at quick scale (data)** (data: 8x8 digits, not MNIST)",
        "design fixed 2026-11-21",
        "seeds 1 -> 3",
        "(exploratory)",
    ):
        assert want in plain, want


def test_summary_puts_the_committed_paper_scale_verdicts_beside_this_run():
    run = reading.apply(
        C.frame([_row("a", "fail"), _row("b")]), "quick", {"steps": "300, not 2000"}, {}
    )
    paper = reading.apply(
        C.frame([_row("a"), _row("b", "fail"), _row("c")]),
        "paper",
        {},
        {},
        [["*", "exact: an equality within sampling error"]],
    )
    prov = {
        "s": {
            "date": "2026-11-24",
            "commit": "abcdef1234567",
            "runs": 10,
            "wall_s": 60,
            "machine": {"cores": 2},
            "datasets": ["gaussian"],
        }
    }
    info = {
        "s": {
            "title": "A study",
            "scale": "quick",
            "datasets": ["digits"],
            "description": "",
            "fixed": "2026-11-21",
            "regime": {"steps": "300, not 2000"},
        }
    }
    text = referee_summary("000 Huang et al.", "arXiv", run, info, paper, prov).replace("\\", "")
    first = text.splitlines()[0]
    assert (
        "paper scale, committed (1 of 1 study, 2026-11-24; Gaussian inputs): 3 claims: 2 "
        "supported, 1 not supported (1 contradict the paper), "
        "0 inconclusive"
    ) in first, first
    assert (
        "``a`` (000): quick **not reproduced at quick scale (steps)** (steps: 300, not 2000); paper "
        "**supported**" in text
    )
    assert (
        "``b`` (000): quick **supported at quick scale (steps)** (steps: 300, not 2000); "
        "paper **contradicts the paper**" in text
    )
    assert "``c`` (000): quick –; paper **supported**" in text
    assert "Paper scale committed 2026-11-24 at commit ``abcdef1234``" in text


def test_a_fail_reads_by_its_regime():
    # in the paper's regime a fail contradicts the paper only on the paper's own terms
    assert reading.reading("fail", "", "quick", "exact: a sign") == "contradicts the paper"
    assert reading.reading("fail", "", "quick", "paper: 000 Fig. 3") == "contradicts the paper"
    assert reading.reading("fail", "", "quick", "ours: 0.1") == "departs beyond our tolerance"
    assert reading.reading("fail", "", "quick") == "departs beyond our tolerance"
    assert (
        reading.reading("fail", "depth: 40, not 200", "quick", "exact: x")
        == "not reproduced at quick scale (depth)"
    )
    # a pass outside the paper's regime is qualified like a fail
    assert (
        reading.reading("pass", "depth: 40, not 200; data: digits", "quick")
        == "supported at quick scale (depth, data)"
    )
    assert reading.reading("pass", "", "quick") == "supported"
    assert (
        reading.reading("fail", "", "paper", "unverified: Table 7 not reproduced") == "unverified"
    )
    assert (
        reading.reading("pass", "", "paper", "unverified: Table 7 not reproduced") == "unverified"
    )
    regime = {"depth": "L = 40; the paper's 200", "data": "digits"}
    assert reading.claim_regime("x[1]", regime, {"x*": ["width"]}) == ""
    assert (
        reading.claim_regime("x[1]", regime, {"x*": ["depth"]}) == "depth: L = 40; the paper's 200"
    )
    assert reading.claim_regime("y", regime, {"x*": ["width"]}).startswith("data: digits; depth")
    df = reading.apply(
        C.frame([_row("x[1]", "fail"), _row("s", "fail", kind="sanity")]),
        "quick",
        regime,
        {"x*": ["depth"]},
    )
    assert df.regime.tolist() == ["depth: L = 40; the paper's 200", ""]
    t = C.tally(df)
    assert (t["fail"], t["fail_out_of_regime"], t["fail_in_regime"]) == (1, 1, 0)
    assert df.reading.tolist() == ["not reproduced at quick scale (depth)", "sanity: fail"]


def test_tolerance_sources_decide_contradiction_and_unverified_rows_are_not_tallied():
    rows = C.frame(
        [_row("p[a]", "fail"), _row("p[b]", "fail"), _row("q", "fail"), _row("u", "pass")]
    )
    df = reading.apply(
        rows,
        "paper",
        {},
        {},
        [
            ["p[[]a*", "exact: an equality"],
            ["p*", "ours: |p - 2| <= 0.1"],
            ["u", "unverified: Table 7 not reproduced"],
        ],
    )
    assert df.tolerance_source.tolist() == [
        "exact: an equality",
        "ours: |p - 2| <= 0.1",
        "",
        "unverified: Table 7 not reproduced",
    ]
    assert df.reading.tolist()[:2] == ["contradicts the paper", "departs beyond our tolerance"]
    with pytest.raises(ValueError, match="claim q does not say where its tolerance comes from"):
        C.check_sources(df, "x")
    t = C.tally(df)
    assert (t["claims"], t["fail_contradicts"], t["fail_departs"], t["unverified"]) == (3, 1, 2, 1)


def test_the_schema_names_the_same_regime_axes_as_the_code():
    import yaml
    from conftest import REPO

    schema = yaml.safe_load((REPO / "workflow/schemas/study.schema.yaml").read_text())
    assert tuple(schema["$defs"]["regime"]["properties"]) == reading.AXES
    assert (
        tuple(schema["properties"]["depends_on"]["additionalProperties"]["items"]["enum"])
        == reading.AXES
    )


def test_an_equivalence_pass_needs_its_margin_resolved():
    ok = C.row(
        "s",
        "eq",
        "x",
        "000 Eq. 1",
        1.0,
        "= 1",
        0.0,
        "pass",
        test="joint z",
        detectable=0.05,
        margin=0.1,
    )
    assert ok["verdict"] == "pass" and "equivalence margin 0.1" in ok["test"]
    weak = C.row(
        "s",
        "eq",
        "x",
        "000 Eq. 1",
        1.0,
        "= 1",
        0.0,
        "pass",
        test="joint z",
        detectable=0.3,
        margin=0.1,
    )
    assert weak["verdict"] == "inconclusive" and "cannot resolve the margin" in weak["test"]
    failing = C.row(
        "s",
        "eq",
        "x",
        "000 Eq. 1",
        1.0,
        "= 1",
        0.0,
        "fail",
        test="joint z",
        detectable=0.3,
        margin=0.1,
    )
    assert failing["verdict"] == "fail"  # a deviation seen is seen, whatever the power
    forged = C.frame([{**ok, "detectable": 0.3}])
    with pytest.raises(ValueError, match="above its margin"):
        C.check_table(forged, "study s")


def test_claims_lie_in_their_paper_and_beyond_rows_say_so():
    ours = C.beyond(
        "s",
        "k",
        "x",
        "our test of 001's remark",
        -0.5,
        "< 0",
        0.1,
        "pass",
        test="z",
        detectable=0.1,
    )
    assert ours["kind"] == "beyond" and ours["source"].startswith(C.BEYOND)
    df = C.frame([_row("a"), ours])
    C.check_table(df, "study s", paper="000")
    t = C.tally(df)
    assert (t["claims"], t["beyond"]) == (1, 1)
    other = C.frame([{**_row("a"), "source": "001 Thm. 1"}])
    with pytest.raises(ValueError, match="outside paper 000"):
        C.check_table(other, "study s", paper="000")
    mislabelled = C.frame([{**ours, "kind": "claim"}])
    with pytest.raises(ValueError, match="of kind 'beyond'"):
        C.check_table(mislabelled, "study s")


def test_expected_may_not_promise_another_threshold_than_the_test_applies():
    bad = C.frame(
        [
            C.row(
                "s",
                "f",
                "x",
                "000",
                1.0,
                ">= 0.95 of the depths",
                0.05,
                "pass",
                test="fraction of depths within 3 SE must be >= 0.9",
                detectable=0.1,
            )
        ]
    )
    with pytest.raises(ValueError, match="names the threshold 0.95"):
        C.check_table(bad, "study s")
    good = C.frame(
        [
            C.row(
                "s",
                "f",
                "x",
                "000",
                1.0,
                ">= 0.9 of the depths",
                0.05,
                "pass",
                test="fraction of depths within 3 SE must be >= 0.9",
                detectable=0.1,
            )
        ]
    )
    C.check_table(good, "study s")
    assert C.threshold_mismatches("> 3 SE (one-sided)", "effect > 3 SE") == []
    assert C.threshold_mismatches("> 0", "pass above 3 SE") == []


def test_rank_claim_never_fails_on_a_tie():
    tied = C.rank_claim([1, 2, 3, 4], [5, 5, 5, 5], 0.6)
    assert tied["verdict"] == "inconclusive" and "single value" in tied["test"]
    zero = C.rank_claim([1, 2, 3, 4], [1, 2, 2, 1], 0.6)  # tau-b exactly 0 from ties
    assert zero["measured"] == pytest.approx(0.0) and zero["verdict"] == "inconclusive"
    wrong = C.rank_claim([1, 2, 3, 4], [2, 2, 1, 1], 0.6)
    # a wrong sign that a random order reaches often (4 items, ties) is no evidence either way
    assert wrong["verdict"] == "inconclusive" and "tie(s) in y" in wrong["test"]
    wrong = C.rank_claim(range(8), [4, 4, 3, 3, 2, 2, 1, 1], 0.6)
    assert wrong["verdict"] == "fail" and "tie(s) in y" in wrong["test"]


def test_escape_keeps_markup_characters_literal():
    assert escape("a*b_c `d` |e|") == r"a\*b\_c \`d\` \|e\|"


def test_shipped_studies_state_when_their_design_was_fixed():
    import yaml
    from conftest import REPO

    for path in sorted((REPO / "config/studies").glob("*.yaml")):
        d = yaml.safe_load(path.read_text())["design"]
        assert len(d["fixed"]) == 10, path
        for c in d.get("changes") or []:
            assert c["date"] >= d["fixed"], f"{path}: a change dated before the design was fixed"
            assert c["affects"] and c["before"].strip(), path


def test_study_design_json_for_the_claims_job():
    import yaml
    from conftest import REPO

    from sigprop.config import build_study

    path = REPO / "config/studies/meanfield_maps.yaml"
    cfg = yaml.safe_load(path.read_text())
    cfg["design"]["changes"] = [
        {
            "date": "2026-11-22",
            "scale": "paper",
            "what": "w",
            "why": "y",
            "before": "b",
            "affects": ["*"],
        }
    ]
    s = build_study("meanfield_maps", str(path), cfg, "quick", 64, 0)
    d = json.loads(s.design())
    assert (d["fixed"], d["scale"], d["changes"], d["paper"]) == ("2026-11-21", "quick", [], "000")
    assert d["regime"] == cfg["scales"]["quick"].get("regime", {})
    assert d["depends_on"] == reading.pairs(cfg.get("depends_on"))
    # the first matching pattern wins in the study file's order, after the JSON round trip
    cfg["depends_on"] = {"z_first[*": ["width"], "*": ["data"]}
    cfg["scales"]["quick"]["regime"] = {"width": "narrow", "data": "digits"}
    d = json.loads(build_study("meanfield_maps", str(path), cfg, "quick", 64, 0).design())
    assert reading.claim_regime("z_first[1]", d["regime"], d["depends_on"]) == "width: narrow"
    assert reading.claim_regime("other", d["regime"], d["depends_on"]) == "data: digits"
    info = s.summary_info()
    assert info["scale"] == "quick" and info["datasets"] and info["description"]


def test_claims_doc_regenerates_and_checks_the_verdict_tables(tmp_path, capsys):
    from sigprop import tables
    from sigprop.cli import main

    paper = tmp_path / "results/papers/000"
    paper.mkdir(parents=True)
    df = C.frame([_row("a"), _row("sane", kind="sanity")])
    tables.write_atomic(df, paper / "claims.parquet")
    doc = tmp_path / "papers.md"
    doc.write_text(
        "# Papers\n\n<!-- claims:000:quick:start -->\nold\n<!-- claims:000:quick:end -->\n"
        "\nProse stays.\n"
    )
    res = str(tmp_path / "results")
    assert main(["claims-doc", str(doc), "--results", res, "--check"]) == 1
    assert main(["claims-doc", str(doc), "--results", res]) == 0
    text = doc.read_text()
    assert "\nold\n" not in text and "Prose stays." in text
    assert "| s | a | claim | 000 | supported | – |" in text
    assert "1 claims: 1 supported" in text and "1 sanity checks (0 not passing)" in text
    assert main(["claims-doc", str(doc), "--results", res, "--check"]) == 0
    tables.write_atomic(C.frame([_row("a", "fail")]), paper / "claims.parquet")
    assert main(["claims-doc", str(doc), "--results", res, "--check"]) == 1
    assert "rerun `sigprop claims-doc" in capsys.readouterr().err


def test_claims_doc_fills_one_papers_block_from_a_run_of_that_paper_alone(tmp_path, capsys):
    """A run of one paper's studies has only that paper's claims: ``--paper`` fills its block and
    leaves the other papers' blocks as they were; without it the missing table is an error."""
    from sigprop import tables
    from sigprop.cli import main

    paper = tmp_path / "results/papers/000"
    paper.mkdir(parents=True)
    tables.write_atomic(C.frame([_row("a")]), paper / "claims.parquet")
    doc = tmp_path / "papers.md"
    other = "<!-- claims:001:quick:start -->\nkept\n<!-- claims:001:quick:end -->\n"
    doc.write_text(
        "<!-- claims:000:quick:start -->\nold\n<!-- claims:000:quick:end -->\n\n" + other
    )
    res = str(tmp_path / "results")
    assert main(["claims-doc", str(doc), "--results", res]) == 2
    assert "papers/001/claims.parquet" in capsys.readouterr().err
    assert main(["claims-doc", str(doc), "--results", res, "--paper", "000"]) == 0
    text = doc.read_text()
    assert "\nold\n" not in text and "| s | a | claim | 000 | supported | – |" in text
    assert text.endswith(other)
    assert main(["claims-doc", str(doc), "--results", res, "--paper", "002"]) == 2
    assert "claims:002:quick:start" in capsys.readouterr().err


def test_pooled_summaries_are_shown_apart_and_never_tallied():
    df = C.frame(
        [
            _row("a[p1]"),
            _row("a[p2]", "fail"),
            C.pooled("s", "a[all]", "x", "000", 0.5, ">0", 0.0, "pass", test="pooled"),
        ]
    )
    t = C.tally(df)
    assert (t["claims"], t["pass"], t["fail"], t["summary"]) == (2, 1, 1, 1)
    html = to_html(df)
    assert "Pooled summaries" in html and "<td>a[all]</td>" in html.split("Pooled summaries")[1]
    C.check_table(df, "study s")


def test_docs_table_marks_the_claims_a_study_file_calls_fragile():
    from sigprop.claims.doc_tables import block

    df = C.frame([_row("a[(g)]", "fail"), _row("b", "fail"), _row("c[x]")])
    df = reading.apply(df, "quick", {"data": "digits"}, {})
    info = {
        "s": {
            "scale": "quick",
            "datasets": ["digits"],
            "fragile": [{"date": "2026-11-26", "claims": ["a[(g)]", "c*"], "proposal": "6 seeds"}],
        }
    }
    text = block("000", "quick", df, "x.parquet", info=info)
    lines = {ln.split("|")[2].strip(): ln for ln in text.splitlines() if ln.startswith("| s |")}
    assert "(fragile)" in lines["a[(g)]"] and "(fragile)" in lines["c[x]"]
    assert "(fragile)" not in lines["b"]


def test_twins_are_found_by_their_measured_values():
    rows = [_row("a"), _row("b"), _row("c")]
    rows[0]["measured"], rows[1]["measured"], rows[2]["measured"] = 0.80873608, -0.80873608, 0.5
    df = C.frame(rows)
    assert C.twin_pairs(df) == [("s:a", "s:b", -0.80873608)]
    df.loc[1, "kind"] = "summary"  # counted once: no twin left
    assert C.twin_pairs(df) == []
    coarse = C.frame([_row("a"), _row("b")])  # 1.0 and 1.0: shares by chance
    assert C.twin_pairs(coarse) == [] and C.coarse(2 / 3) and not C.coarse(0.80873608)


def test_false_pass_of_a_one_sided_test():
    from scipy import stats

    assert C.false_pass_z(3.0) == pytest.approx(stats.norm.sf(3.0))
    assert C.false_pass_z(3.0, 2) == pytest.approx(0.0477, abs=1e-4)  # 3 seeds
    assert np.isnan(C.false_pass_z(3.0, 0))  # 1 seed: no SE
