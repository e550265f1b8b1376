"""pruning_eoc (003 Sec. 4.1, Figs. 3, 5): scheme classification, cells, claims, figure, config."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
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


def _runs(acc_fn, acts=("tanh",), depths=(2, 8, 32), sparsities=(0.5, 0.9)):
    """A merged run table: for each scheme a final test_acc from ``acc_fn(scheme, L, s)``."""
    rows = []
    for act in acts:
        eoc = derive({"activation": act, "sigma_b2": 0.05}, {"sigma_w2": {"chi1": 1.0}})["sigma_w2"]
        ordd = derive({"activation": act, "sigma_b2": 0.05}, {"sigma_w2": {"chi1": 0.5}})["sigma_w2"]
        for scheme, sw, resc in (("EOC + rescaling", eoc, True), ("EOC", eoc, False), ("ordered", ordd, False)):
            for L in depths:
                for s in sparsities:
                    rid = f"{act}{scheme}{L}{s}"
                    for step, v in ((0, 0.1), (300, acc_fn(scheme, L, s))):
                        rows.append({"run_id": rid, "step": step, "metric": "test_acc", "value": v,
                                         "activation": act, "sigma_w2": sw, "sigma_b2": 0.05, "keep_rate": 1.0,
                                         "depth": L, "sparsity": s, "prune_rescale": resc, "seed": 0})
                    rows.append(dict(rows[-1], metric="train_loss", value=1.0))
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
        return 0.1 if (L >= 8 and s >= 0.9) else 0.9
    return 0.9


def test_theory_chi_and_scheme_classification():
    runs = _runs(_paperlike, acts=("tanh", "elu", "relu"))
    th = _theory(runs)
    chi = th[th.quantity == "chi1"]
    assert np.allclose(sorted(chi.value.round(6).unique()), [0.5, 1.0], atol=1e-6)
    acc = st.final_accuracy(runs)
    assert len(acc) == len(runs.run_id.unique()) and (acc.acc != 0.1).any()  # the last step
    sch = st.schemes(acc, th)
    assert (sch[acc.prune_rescale] == "EOC + rescaling").all()
    expect = np.where(np.isclose(acc.sigma_w2, [meanfield.sigma_w2_for_chi1(1.0, 0.05, 1.0, a)
                                                for a in acc.activation]), "EOC", "ordered")
    assert (sch[~acc.prune_rescale] == expect[~acc.prune_rescale.to_numpy()]).all()


def test_claims_pass_on_paper_like_results_and_fail_otherwise():
    runs = _runs(_paperlike, acts=("tanh", "elu"))
    c = claims_table(runs, _theory(runs), _cfg()).set_index("claim_id")
    assert (c.verdict == "pass").all(), c[["measured", "detail"]]
    assert c.loc["rescaling_enlarges_trainable_region[tanh]", "measured"] == 2
    # ordered trainable in the region; rescaling no better than EOC; ordered better than EOC
    bad = _runs(lambda sch, L, s: {"ordered": 0.9, "EOC": 0.9, "EOC + rescaling": 0.1 if L == 32 else 0.9}[sch])
    c = claims_table(bad, _theory(bad), _cfg()).set_index("claim_id")
    assert c.loc["ordered_untrainable_region[tanh]", "verdict"] == "fail"
    assert c.loc["ordered_untrainable_region[tanh]", "measured"] == 0.0
    assert c.loc["rescaling_enlarges_trainable_region[tanh]", "verdict"] == "fail"
    # equal counts are not "more": fail
    eq = _runs(lambda sch, L, s: 0.9 if sch != "ordered" else 0.1)
    c = claims_table(eq, _theory(eq), _cfg()).set_index("claim_id")
    assert c.loc["rescaling_enlarges_trainable_region[tanh]", "verdict"] == "fail"
    assert c.loc["eoc_at_least_ordered[tanh]", "verdict"] == "pass"


def test_diverged_runs_count_as_untrainable_and_region_follows_scale():
    runs = _runs(lambda sch, L, s: np.nan if sch == "EOC + rescaling" else 0.9)
    cells = st.cell_table(runs, _theory(runs))
    r = cells[cells.scheme == "EOC + rescaling"]
    assert (r.acc == 0).all() and (r.n_diverged == 1).all()
    assert _cfg("quick").analysis.ordered_region == spec.Region(min_sparsity=0.5, min_depth=32)
    assert _cfg("paper").analysis.ordered_region.min_depth == 80
    # paper-scale region has no ordered cells in this small grid: the claim fails, not passes
    c = claims_table(runs, _theory(runs), _cfg("paper")).set_index("claim_id")
    assert c.loc["ordered_untrainable_region[tanh]", "verdict"] == "fail"


def test_figure_has_a_panel_per_activation_and_scheme():
    runs = _runs(_paperlike, acts=("tanh", "elu"))
    fig = registry.figure_function("pruning_eoc", "pruning_eoc_accuracy")(runs, _theory(runs), _cfg())
    visible = [ax for ax in fig.axes if ax.get_visible() and ax.get_title()]
    assert len(visible) == 6
    assert any("ordered" in ax.get_title() and ax.patches for ax in visible)  # region box
    assert spec.SPEC.figures["pruning_eoc_accuracy"].function == accuracy_grid.__name__


def test_config_quick_and_paper_grids():
    from sigprop.config import expand_runs, load_yaml
    cfg = load_yaml(ROOT / "config/studies/pruning_eoc.yaml")  # schema-validated
    runs = expand_runs(cfg, "quick")
    assert len(runs) == 54 and {r.pruner for r in runs} == {"snip"}
    eoc = [r for r in runs if r.prune_rescale]
    assert all(abs(meanfield.chi1(r.sigma_w2, r.sigma_b2, 1.0, r.activation) - 1) < 1e-6 for r in eoc)
    assert len(expand_runs(cfg, "paper")) == 3 * 3 * 6 * 9
    q = CFG["scales"]["quick"]["blocks"]
    assert [b["label"] for b in q] == list(st.SCHEMES)
    assert [b["fixed"].get("prune_rescale") for b in q] == [True, False, False]
    p = CFG["scales"]["paper"]["blocks"][0]
    assert p["grid"]["depth"] == [2, 20, 40, 60, 80, 100] and len(p["grid"]["sparsity"]) == 9
    assert p["fixed"]["lr"] == 0.001 and p["fixed"]["batch_size"] == 100 and p["fixed"]["steps"] == 10000
