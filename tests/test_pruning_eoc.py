"""pruning_eoc (003 Sec. 4.1, Figs. 3, 5): scheme classification, cells, claims, figure, config."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest
import yaml

matplotlib.use("Agg")

from sigprop import registry
from sigprop.config import derive
from sigprop.studies import pruning_eoc as spec
from sigprop.studies.pruning_eoc import analysis as st
from sigprop.studies.pruning_eoc.claims import claims_table
from sigprop.studies.pruning_eoc.figures import accuracy_grid
from sigprop.studies.pruning_eoc.theory import theory_table
from sigprop.theory import meanfield

ROOT = Path(__file__).resolve().parents[1]
CFG = yaml.safe_load((ROOT / "config/studies/pruning_eoc.yaml").read_text())


def _runs(
    acc_fn, acts=("tanh",), depths=(2, 8, 32), sparsities=(0.5, 0.9), seeds=(0, 1, 2), dense=0.9
):
    """A merged run table: for each scheme a final test_acc from ``acc_fn(scheme, L, s)`` (or
    ``acc_fn(scheme, L, s, seed)``) plus a small seed-dependent jitter, and an unpruned ordered
    control per depth with accuracy ``dense`` (a number or ``f(L)``; None: no control)."""
    import inspect

    nargs = len(inspect.signature(acc_fn).parameters)
    rows = []

    def add(rid, act, sw, L, s, resc, seed, v):
        for step, val in ((0, 0.1), (300, v)):
            rows.append(
                {
                    "run_id": rid,
                    "step": step,
                    "metric": "test_acc",
                    "value": val,
                    "activation": act,
                    "sigma_w2": sw,
                    "sigma_b2": 0.05,
                    "keep_rate": 1.0,
                    "depth": L,
                    "sparsity": s,
                    "prune_rescale": resc,
                    "seed": seed,
                }
            )
        rows.append(dict(rows[-1], metric="train_loss", value=1.0))

    for act in acts:
        eoc = derive({"activation": act, "sigma_b2": 0.05}, {"sigma_w2": {"chi1": 1.0}})["sigma_w2"]
        ordd = derive({"activation": act, "sigma_b2": 0.05}, {"sigma_w2": {"chi1": 0.9}})[
            "sigma_w2"
        ]
        for seed in seeds:
            jit = 0.002 * seed
            for scheme, sw, resc in (
                ("EOC + rescaling", eoc, True),
                ("EOC", eoc, False),
                ("ordered", ordd, False),
            ):
                for L in depths:
                    for s in sparsities:
                        v = acc_fn(scheme, L, s) if nargs == 3 else acc_fn(scheme, L, s, seed)
                        add(f"{act}{scheme}{L}{s}{seed}", act, sw, L, s, resc, seed, v + jit)
            if dense is not None:
                for L in depths:
                    v = dense(L) if callable(dense) else dense
                    add(f"{act}dense{L}{seed}", act, ordd, L, 0.0, False, seed, v + jit)
    return pd.DataFrame(rows)


def _theory(runs):
    settings = runs[st.SETTING].drop_duplicates().to_dict("records")
    return theory_table("pruning_eoc", _cfg(), settings)


def _cfg(scale="quick"):
    return registry.resolve("pruning_eoc", CFG, scale)


def _paperlike(scheme, L, s):
    if scheme == "ordered":
        return 0.1 if L >= 32 and s >= 0.5 else 0.9
    if scheme == "EOC":
        return 0.1 if (L >= 32 and s >= 0.9) else 0.9
    return 0.9


def test_theory_chi_and_scheme_classification():
    runs = _runs(_paperlike, acts=("tanh", "elu", "relu"))
    th = _theory(runs)
    chi = th[th.quantity == "chi1"]
    assert np.allclose(sorted(chi.value.round(6).unique()), [0.9, 1.0], atol=1e-6)
    acc = st.final_accuracy(runs)
    assert len(acc) == len(runs.run_id.unique()) and (acc.acc != 0.1).any()  # the last step
    sch = st.schemes(acc, th)
    assert (sch[acc.prune_rescale] == "EOC + rescaling").all()
    expect = np.where(
        np.isclose(
            acc.sigma_w2, [meanfield.sigma_w2_for_chi1(1.0, 0.05, 1.0, a) for a in acc.activation]
        ),
        "EOC",
        "ordered",
    )
    assert (sch[~acc.prune_rescale] == expect[~acc.prune_rescale.to_numpy()]).all()


def test_claims_pass_on_paper_like_results_and_fail_otherwise():
    from sigprop.claims import check_table

    runs = _runs(_paperlike, acts=("tanh", "elu"))
    c = claims_table(runs, _theory(runs), _cfg())
    check_table(c, "pruning_eoc")  # every row annotated: test, detectable
    assert (c.kind == "claim").all()
    c = c.set_index("claim_id")
    assert (c.verdict == "pass").all(), c[["measured", "detail"]]
    assert c.loc["rescaling_enlarges_trainable_region[tanh]", "measured"] == pytest.approx(1)
    assert c.loc["eoc_more_trainable_than_ordered[tanh]", "measured"] == pytest.approx(1)
    assert "our choice" in c.loc["ordered_untrainable_region[tanh]", "claim"]
    assert "our choice" in c.loc["eoc_more_trainable_than_ordered[tanh]", "claim"]
    # ordered trainable in the region; rescaling worse than EOC; ordered better than EOC
    bad = _runs(
        lambda sch, L, s: {
            "ordered": 0.9,
            "EOC": 0.1 if L == 32 else 0.9,
            "EOC + rescaling": 0.1 if L >= 8 else 0.9,
        }[sch]
    )
    c = claims_table(bad, _theory(bad), _cfg()).set_index("claim_id")
    assert c.loc["ordered_untrainable_region[tanh]", "verdict"] == "fail"
    assert c.loc["ordered_untrainable_region[tanh]", "measured"] == 0.0
    assert c.loc["rescaling_enlarges_trainable_region[tanh]", "verdict"] == "fail"
    assert c.loc["eoc_more_trainable_than_ordered[tanh]", "verdict"] == "fail"
    # equal counts are not "more": inconclusive (the difference is within its SE), never pass
    eq = _runs(lambda sch, L, s: 0.9 if sch != "ordered" else 0.1)
    c = claims_table(eq, _theory(eq), _cfg()).set_index("claim_id")
    assert c.loc["rescaling_enlarges_trainable_region[tanh]", "verdict"] == "inconclusive"
    assert c.loc["eoc_more_trainable_than_ordered[tanh]", "verdict"] == "pass"


def test_ordered_claim_needs_a_dense_control_that_trains():
    """The ordered-phase claim tests pruning only where the unpruned net with the same init
    trains: a dense control at chance makes the region untestable (inconclusive), a missing
    control too, and one seed gives no SE (inconclusive)."""
    untrainable = _runs(_paperlike, dense=lambda L: 0.1 if L == 32 else 0.9)
    c = claims_table(untrainable, _theory(untrainable), _cfg()).set_index("claim_id")
    r = c.loc["ordered_untrainable_region[tanh]"]
    assert r.verdict == "inconclusive" and "not a test of pruning" in r.detail
    none = _runs(_paperlike, dense=None)
    c = claims_table(none, _theory(none), _cfg()).set_index("claim_id")
    assert c.loc["ordered_untrainable_region[tanh]", "verdict"] == "inconclusive"
    one = _runs(_paperlike, seeds=(0,))
    c = claims_table(one, _theory(one), _cfg()).set_index("claim_id")
    assert (c.verdict == "inconclusive").all()
    # a pruned cell at chance but within noise of its control: not a pass
    noisy = _runs(
        lambda sch, L, s, seed: 0.1 if sch == "ordered" and L == 32 else 0.9, dense=lambda L: 0.9
    )
    noisy.loc[
        (noisy.sparsity == 0)
        & (noisy.depth == 32)
        & (noisy.step == 300)
        & (noisy.metric == "test_acc"),
        "value",
    ] = [0.55, 0.1, 0.1]
    c = claims_table(noisy, _theory(noisy), _cfg()).set_index("claim_id")
    assert c.loc["ordered_untrainable_region[tanh]", "verdict"] == "inconclusive"


def test_counts_per_seed():
    runs = _runs(lambda sch, L, s, seed: 0.9 if (sch != "EOC" or L < 32 or seed == 0) else 0.1)
    n = st.trainable_counts(runs, _theory(runs), 0.5).set_index(["scheme", "seed"])["count"]
    assert n["EOC", 0] == 6 and n["EOC", 1] == 4 and n["EOC + rescaling", 2] == 6


def test_diverged_runs_count_as_untrainable_and_region_follows_scale():
    runs = _runs(lambda sch, L, s: np.nan if sch == "EOC + rescaling" else 0.9)
    cells = st.cell_table(runs, _theory(runs))
    r = cells[cells.scheme == "EOC + rescaling"]
    assert (r.acc == 0).all() and (r.n_diverged == 3).all()
    assert cells[cells.dense].scheme.eq("ordered").all() and len(cells[cells.dense]) == 3
    assert _cfg("quick").analysis.ordered_region == spec.Region(min_sparsity=0.5, min_depth=32)
    assert _cfg("paper").analysis.ordered_region.min_depth == 80
    # paper-scale region has no ordered cells in this small grid: the claim cannot pass
    c = claims_table(runs, _theory(runs), _cfg("paper")).set_index("claim_id")
    assert c.loc["ordered_untrainable_region[tanh]", "verdict"] == "inconclusive"


def test_figure_has_a_panel_per_activation_and_scheme():
    runs = _runs(_paperlike, acts=("tanh", "elu"))
    fig = registry.figure_function("pruning_eoc", "pruning_eoc_accuracy")(
        runs, _theory(runs), _cfg()
    )
    visible = [ax for ax in fig.axes if ax.get_visible() and ax.get_title()]
    assert len(visible) == 6
    assert any("ordered" in ax.get_title() and ax.patches for ax in visible)  # region box
    assert spec.SPEC.figures["pruning_eoc_accuracy"].function == accuracy_grid.__name__


def test_config_quick_and_paper_grids():
    from sigprop.config import expand_runs, load_yaml

    cfg = load_yaml(ROOT / "config/studies/pruning_eoc.yaml")  # schema-validated
    runs = expand_runs(cfg, "quick")
    assert len(runs) == 189 and {r.pruner for r in runs} == {"snip", ""}
    assert {r.seed for r in runs} == {0, 1, 2}
    dense = [r for r in runs if not r.pruner]
    assert len(dense) == 27 and {r.sparsity for r in dense} == {0.0}
    assert all(
        abs(meanfield.chi1(r.sigma_w2, r.sigma_b2, 1.0, r.activation) - 0.9) < 1e-6 for r in dense
    )
    eoc = [r for r in runs if r.prune_rescale]
    assert all(
        abs(meanfield.chi1(r.sigma_w2, r.sigma_b2, 1.0, r.activation) - 1) < 1e-6 for r in eoc
    )
    assert len(expand_runs(cfg, "paper")) == 3 * (3 * 3 * 6 * 9 + 3 * 6)
    q = CFG["scales"]["quick"]["blocks"]
    assert [b["label"] for b in q] == list(st.SCHEMES) + ["ordered dense"]
    assert [b["fixed"].get("prune_rescale") for b in q] == [True, False, False, False]
    assert cfg["design"]["changes"][0]["affects"]
    p = CFG["scales"]["paper"]["blocks"][0]
    assert p["grid"]["depth"] == [2, 20, 40, 60, 80, 100] and len(p["grid"]["sparsity"]) == 9
    assert (
        p["fixed"]["lr"] == 0.001
        and p["fixed"]["batch_size"] == 100
        and p["fixed"]["steps"] == 10000
    )


def test_regime_and_figures_cover_every_claim():
    """One-sided claims (no margin); every claim id matches one depends_on pattern (disjoint:
    the claims job reads them sorted) and the figure; the quick scale's regime reaches each
    claim, the paper scale is the paper's setup."""
    from fnmatch import fnmatchcase

    from sigprop.claims import reading
    from sigprop.claims.reading import AXES

    runs = _runs(_paperlike, acts=("tanh", "elu", "relu"))
    c = claims_table(runs, _theory(runs), _cfg())
    assert c.margin.isna().all()
    dep = CFG["depends_on"]
    for cid in c.claim_id:
        assert len([pat for pat in dep if fnmatchcase(cid, pat)]) == 1, cid
        assert any(f.shows(cid) for f in spec.SPEC.figures.values()), cid
    assert all(set(a) <= set(AXES) for a in dep.values())
    q = reading.apply(c, "quick", CFG["scales"]["quick"]["regime"], dep)
    assert q.regime.str.startswith("data:").all() and q.regime.str.contains("steps:").all()
    assert not CFG["scales"]["paper"].get("regime")


def test_an_activation_003_does_not_train_gives_rows_beyond_the_paper():
    """003 trains tanh (Fig. 3) and ELU (Fig. 5) nets: the ReLU panel's rows are ours, of kind
    beyond, with a source saying so, and never in 003's tally."""
    from sigprop.claims import BEYOND, check_table, tally

    runs = _runs(_paperlike, acts=("tanh", "relu"))
    c = claims_table(runs, _theory(runs), _cfg())
    check_table(c, "pruning_eoc", paper="003")
    relu = c[c.claim_id.str.endswith("[relu]")]
    assert len(relu) == 3 and (relu.kind == "beyond").all()
    assert relu.source.str.startswith(BEYOND).all() and relu.source.str.contains("relu").all()
    assert (c[c.claim_id.str.endswith("[tanh]")].kind == "claim").all()
    t = tally(c)
    assert (t["claims"], t["beyond"]) == (3, 3)


def test_count_rows_carry_the_standard_error_of_the_difference():
    """The cell-count rows carry the unpaired SE over seeds of the mean count difference that
    z_above uses (detectable = max(z SE, 1 / seeds)); the ordered-phase row measures a fraction
    of cells and has none."""

    def acc(sch, L, s, seed):
        if sch == "EOC" and s == 0.9 and (L == 32 or (L == 8 and seed == 0)):
            return 0.1
        if sch == "ordered" and ((L >= 32 and s >= 0.5) or (L == 8 and s == 0.9 and seed == 1)):
            return 0.1
        return 0.9

    runs = _runs(acc)
    c = claims_table(runs, _theory(runs), _cfg()).set_index("claim_id")
    counts = c.loc[
        ["rescaling_enlarges_trainable_region[tanh]", "eoc_more_trainable_than_ordered[tanh]"]
    ]
    assert np.isfinite(counts.se).all() and (counts.se > 0).all(), counts[["se"]]
    np.testing.assert_allclose(counts.detectable, np.maximum(3.0 * counts.se, 1 / 3))
    from sigprop.claims import values

    assert all(values(r)["se"] == pytest.approx(r.se) for _, r in counts.iterrows())
    assert np.isnan(c.loc["ordered_untrainable_region[tanh]", "se"])
