"""pruning_resnet study (003 Hayou et al., Figs. 2/4, Tables 1, 2, 9): tables, claims, figures.

Synthetic run tables and layer reports with known answers; no training (fast)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sigprop import registry as study_registry
from sigprop import tables
from sigprop.config import build_study, load_yaml
from sigprop.data import catalog, embedded
from sigprop.runs import runs_digest
from sigprop.steps import analysis as analysis_steps
from sigprop.studies import pruning_resnet as spec
from sigprop.studies.pruning_resnet import analysis, claims, figures
from sigprop.studies.pruning_resnet import tables as study_tables

ROOT = Path(__file__).resolve().parents[1]
CFG_PATH = ROOT / "config/studies/pruning_resnet.yaml"


@pytest.fixture(scope="module")
def cfg_dict():
    return {"name": "pruning_resnet", **load_yaml(CFG_PATH)}


@pytest.fixture(scope="module")
def cfg(cfg_dict):
    """The study's parameters (quick scale)."""
    return study_registry.resolve("pruning_resnet", cfg_dict, "quick")


def _runs(
    accs: dict,
    dataset="cifar10",
    activation="relu",
    steps=(0, 10, 20),
    depth=10,
    sigma_w2=2.0,
    sigma_b2=0.0,
    prune_rescale=False,
) -> pd.DataFrame:
    """accs: {(arch, pruner, sparsity, seed): [test_acc at each step]}."""
    rows = []
    for (arch, pruner, sp, seed), vals in accs.items():
        rid = f"r{arch}{pruner}{sp}{seed}{activation}" + (
            f"{depth}{sigma_w2}{prune_rescale}"
            if (depth, sigma_w2, prune_rescale) != (10, 2.0, False)
            else ""
        )
        for st, v in zip(steps, vals):
            rows.append(
                dict(
                    study="pruning_resnet",
                    shard_id=f"s{arch}{activation}",
                    run_id=rid,
                    step=st,
                    metric="test_acc",
                    value=v,
                    arch=arch,
                    dataset=dataset,
                    activation=activation,
                    pruner=pruner,
                    sparsity=sp,
                    seed=seed,
                    depth=depth,
                    sigma_w2=sigma_w2,
                    sigma_b2=sigma_b2,
                    prune_rescale=prune_rescale,
                )
            )
    return pd.DataFrame(rows)


def test_digits_images_is_digits_as_images():
    a, b = embedded.digits(), embedded.digits_images()
    assert catalog.get("digits_images").input_shape == (1, 8, 8) == b[0].shape[1:]
    np.testing.assert_array_equal(a[0], b[0].reshape(len(b[0]), 64))
    np.testing.assert_array_equal(a[3], b[3])


def test_final_best_and_mean_std():
    runs = _runs(
        {("resnet32", "snip", 0.9, s): [0.1, 0.9 - 0.01 * s, 0.8 - 0.02 * s] for s in range(3)}
        | {("stable_resnet32", "sbp_sr", 0.9, s): [0.1, 0.5, 0.7] for s in range(3)}
        | {("stable_resnet32", "grasp", 0.9, 0): [0.1, 0.2, 0.3]}
    )
    fb = analysis.final_best(runs).set_index(["method", "seed"])
    assert fb.loc[("SNIP", 2), "final"] == pytest.approx(76.0)
    assert fb.loc[("SNIP", 2), "best"] == pytest.approx(88.0)
    assert fb.loc[("GraSP-SR", 0), "net"] == "resnet32"
    t = analysis.accuracy_table(runs).set_index("method")
    assert t.loc["SNIP", "final_mean"] == pytest.approx(78.0)
    assert t.loc["SNIP", "final_std"] == pytest.approx(2.0)
    assert t.loc["SBP-SR", "best_mean"] == pytest.approx(70.0) and t.loc["SBP-SR", "n"] == 3
    assert list(t.index) == ["SNIP", "GraSP-SR", "SBP-SR"]  # the paper's row order


def test_paper_numbers_transcribed_and_joined(cfg, tmp_path):
    p = study_tables.paper_numbers(cfg)
    one = p[
        (p.table == "1") & (p.net == "resnet104") & (p.method == "SBP-SR") & (p.sparsity == 0.995)
    ]
    assert one.paper_mean.tolist() == [87.47] and one.paper_std.tolist() == [0.23]
    # Table 2: 2 data sets x (3 dense cells + ResNet32 7 methods x 3 + ResNet50/104 6 methods x 3 x 2)
    assert len(p[p.table == "2"]) == 2 * (3 + 7 * 3 + 2 * 6 * 3)
    runs = _runs(
        {("resnet104", "snip", 0.995, s): [0.1, 0.3, 0.3] for s in range(3)}
        | {("stable_resnet104", "sbp_sr", 0.995, s): [0.1, 0.8, 0.8] for s in range(3)}
    )
    tabs = study_tables.build_tables(runs, cfg)
    t1 = tabs["1"].set_index("method")
    assert t1.loc["SNIP", "paper_mean"] == 33.63 and t1.loc[
        "SBP-SR", "final_mean"
    ] == pytest.approx(80)
    assert tabs["2"].paper_mean.isna().all()  # Table 2 stops at 98%
    assert list(spec.SPEC.tables) == ["table1", "table2", "table9", "table3", "table4", "table5"]
    runs_path = tmp_path / "metrics.parquet"
    tables.write_atomic(
        runs,
        runs_path,
        {"kind": "metrics", "study": "pruning_resnet", "runs": runs_digest(runs.run_id.unique())},
    )
    for name in list(spec.SPEC.tables):
        out = [tmp_path / f"{name}.{e}" for e in ("parquet", "md", "csv")]
        expect = json.dumps(
            {
                "study": "pruning_resnet",
                "n_runs": runs.run_id.nunique(),
                "runs": runs_digest(runs.run_id.unique()),
            }
        )
        analysis_steps.study_table(
            "pruning_resnet",
            name,
            cfg.for_job("table").to_json(),
            expect,
            str(runs_path),
            *map(str, out),
        )
        assert all(q.exists() for q in out)
    assert "paper_mean" in (tmp_path / "table1.md").read_text()
    assert "33.63" in (tmp_path / "table1.csv").read_text()
    with pytest.raises(KeyError, match="no table"):
        study_tables.build_table("table7", runs, cfg)


def test_paper_scale_tables_3_4_5_list_every_paper_cell_beside_ours(cfg):
    """Tables 3-5 (003): all paper cells are listed (ours NaN where not run); V-CNN rows are
    labelled by their initialization's phase (chi1 of 003 Sec. 2) and named by depth."""
    p = study_tables.paper_numbers(cfg)
    assert [len(p[p.table == t]) for t in "345"] == [36, 9, 18]
    t3 = p[
        (p.table == "3") & (p.net == "resnet104") & (p.method == "SBP-SR") & (p.sparsity == 0.95)
    ]
    assert t3.paper_mean.tolist() == [57.9] and t3.paper_std.tolist() == [0.31]
    # tanh V-CNN, sigma_b2 = 0.05: sigma_w2 = 1.0 is ordered (chi1 < 1), 1.76095 is the EOC
    vc = dict(dataset="mnist", activation="tanh", sigma_b2=0.05)
    runs = pd.concat(
        [
            _runs(
                {("vcnn", "snip", 0.5, s): [0.1, 0.1, 0.1] for s in range(2)},
                depth=50,
                sigma_w2=1.0,
                **vc,
            ),
            _runs(
                {("vcnn", "snip", 0.5, s): [0.1, 0.9, 0.97] for s in range(2)},
                depth=50,
                sigma_w2=1.76095,
                **vc,
            ),
            _runs(
                {("vcnn", "snip", 0.5, s): [0.1, 0.9, 0.99] for s in range(2)},
                depth=50,
                sigma_w2=1.76095,
                prune_rescale=True,
                **vc,
            ),
            _runs({("resnet32", "snip", 0.9, 0): [0.1, 0.5, 0.6]}),
        ]
    )  # CIFAR-10: not in Table 4
    t4 = study_tables.build_tables(runs, cfg)["4"]
    assert len(t4) == 9 and set(t4.net) == {"vcnn10", "vcnn50", "vcnn100"}
    got = t4[t4.n > 0].set_index("method")
    assert list(got.index) == ["Ordered phase Init", "EOC Init", "EOC + ReScaling"]
    assert got.final_mean.tolist() == pytest.approx([10.0, 97.0, 99.0])
    assert got.paper_mean.tolist() == [10.0, 98.75, 98.90] and (got.net == "vcnn50").all()
    assert t4[t4.n == 0].final_mean.isna().all()
    t5 = study_tables.build_tables(runs, cfg)["5"]
    assert len(t5) == 18 and (t5.n == 0).all() and t5.final_mean.isna().all()
    assert analysis.init_phase("tanh", 3.0, 0.05) == "Chaotic phase Init"


def _layers(arch, pruner, act_kept: dict, seeds=(0, 1, 2), base=4) -> pd.DataFrame:
    """A ResNet32-like report: stem, 3 sections of 10 3x3 convs, 2 shortcuts, readout."""
    shapes = [f"{base}x1x3x3"] + [f"{base}x{base}x3x3"] * 10
    shapes += [f"{2 * base}x{base}x3x3", f"{2 * base}x{2 * base}x3x3", f"{2 * base}x{base}x1x1"]
    shapes += [f"{2 * base}x{2 * base}x3x3"] * 8
    shapes += [
        f"{4 * base}x{2 * base}x3x3",
        f"{4 * base}x{4 * base}x3x3",
        f"{4 * base}x{2 * base}x1x1",
    ]
    shapes += [f"{4 * base}x{4 * base}x3x3"] * 8 + [f"10x{4 * base}"]
    rows = []
    for sp, kept in act_kept.items():
        for s in seeds:
            for i, sh in enumerate(shapes):
                rows.append(
                    dict(
                        run_id=f"{arch}{pruner}{sp}{s}",
                        arch=arch,
                        pruner=pruner,
                        sparsity=sp,
                        seed=s,
                        layer=i,
                        weight_shape=sh,
                        kept_fraction=kept(i),
                        shard_id="x",
                    )
                )
    return pd.DataFrame(rows)


def test_sections_from_shapes():
    rep = _layers("resnet32", "snip", {0.9: lambda i: 0.5})
    sec = analysis.sections(rep[rep.seed == 0].weight_shape)
    assert sec[0] == -1 and list(sec[1:11]) == [0] * 10 and sec[13] == -1 and sec[-1] == -1
    assert (sec == 1).sum() == 10 and (sec == 2).sum() == 10


def test_layer_claims_pass_and_fail(cfg):
    # ResNet decreasing within sections, Stable flat: uniform claim passes; the reversed case fails
    def steep(i):
        return 0.9 - 0.02 * (i % 11)

    def flat(i):
        return 0.6

    runs = _runs(
        {("resnet32", "snip", 0.9, s): [0.1, 0.5, 0.5] for s in range(3)}
        | {("stable_resnet32", "sbp_sr", 0.9, s): [0.1, 0.5, 0.5] for s in range(3)}
    )
    for res, stab, want in ((steep, flat, "pass"), (flat, steep, "fail")):
        layers = pd.concat(
            [
                _layers("resnet32", "snip", {0.9: res}),
                _layers("stable_resnet32", "sbp_sr", {0.9: stab}),
            ]
        )
        layers = layers.assign(
            run_id=[
                f"r{a}{p}{sp}{s}relu"
                for a, p, sp, s in zip(layers.arch, layers.pruner, layers.sparsity, layers.seed)
            ]
        )
        c = claims.claims_table(runs, pd.DataFrame(), cfg, layers=layers).set_index("claim_id")
        assert c.loc["uniform_within_sections[relu,s=0.9]", "verdict"] == want
        assert c.loc["sbp_sr_vs_snip[cifar10,relu,resnet32,s=0.9]", "verdict"] == "pass"
        fig = figures.fig2(runs, pd.DataFrame(), cfg, layers=layers)
        assert len(fig.axes) == 1
        import matplotlib.pyplot as plt

        plt.close(fig)


def test_accuracy_claims_fail_when_snip_wins(cfg):
    runs = _runs(
        {("resnet32", "snip", sp, s): [0.1, 0.9, 0.9] for s in range(3) for sp in (0.9, 0.98)}
        | {
            ("stable_resnet32", "sbp_sr", sp, s): [0.1, 0.8, 0.8]
            for s in range(3)
            for sp in (0.9, 0.98)
        }
        | {("resnet32", "synflow", 0.98, s): [0.1, 0.95, 0.95] for s in range(2)}
    )
    c = claims.claims_table(runs, pd.DataFrame(), cfg, layers=pd.DataFrame()).set_index("claim_id")
    r = c.loc["sbp_sr_vs_snip[cifar10,relu,resnet32,s=0.98]"]
    assert r.verdict == "fail" and r.measured == pytest.approx(-10.0)
    assert c.loc["sbp_sr_best[cifar10,resnet32,s=0.98]", "measured"] == pytest.approx(-15.0)
    assert c.loc["uniform_within_sections", "verdict"] == "inconclusive"


def test_config_builds_at_both_scales(cfg_dict):
    q = build_study("pruning_resnet", CFG_PATH, cfg_dict, "quick", 64)
    p = build_study("pruning_resnet", CFG_PATH, cfg_dict, "paper", 64)
    assert {r.dataset for r in q.runs} == {"digits_images"}
    assert {r.pruner for r in q.runs} == {
        "",
        "random",
        "magnitude",
        "snip",
        "grasp",
        "synflow",
        "sbp_sr",
    }
    assert all(r.arch.startswith("stable_") for r in p.runs if r.pruner == "sbp_sr")
    c10 = [
        r for r in p.runs if r.dataset == "cifar10" and r.arch.endswith("resnet104") and r.pruner
    ]
    assert {r.sparsity for r in c10} == {0.9, 0.95, 0.98, 0.995, 0.999} and {
        r.width for r in c10
    } == {32}
    assert {r.steps for r in p.runs if r.dataset == "cifar100"} == {250 * 391}
    assert {r.dataset for r in p.runs} == {"cifar10", "cifar100", "tiny_imagenet", "mnist"}


def test_layer_claims_need_a_difference_beyond_noise(cfg):
    """A last-section difference of about one weight, within its SE over seeds, is
    inconclusive (not pass); the same difference with no seed-to-seed spread passes; every
    claim row names its test and detectable effect."""
    from sigprop.claims import check_table

    runs = _runs(
        {("resnet32", "snip", 0.98, s): [0.1, 0.5, 0.5] for s in range(3)}
        | {("stable_resnet32", "sbp_sr", 0.98, s): [0.1, 0.6, 0.6] for s in range(3)}
    )

    def layers_for(stable_last):
        parts = []
        for s in range(3):
            res = _layers(
                "resnet32", "snip", {0.98: lambda i: 0.002 if i < 22 else 0.0005}, seeds=(s,)
            )
            stab = _layers(
                "stable_resnet32",
                "sbp_sr",
                {0.98: lambda i, s=s: 0.002 if i < 22 else stable_last[s]},
                seeds=(s,),
            )
            parts += [res, stab]
        out = pd.concat(parts)
        return out.assign(
            run_id=[
                f"r{a}{p}{sp}{s}relu"
                for a, p, sp, s in zip(out.arch, out.pruner, out.sparsity, out.seed)
            ]
        )

    noisy = claims.claims_table(
        runs, pd.DataFrame(), cfg, layers=layers_for([0.0001, 0.0012, 0.0004])
    )
    check_table(noisy, "pruning_resnet")
    r = noisy.set_index("claim_id").loc["deeper_layers_kept[relu,s=0.98]"]
    assert r.measured == pytest.approx(0.0000667, rel=1e-2) and r.verdict == "inconclusive"
    assert "SE" in r.test and np.isfinite(r.detectable) and r.detectable > abs(r.measured)
    clean = claims.claims_table(
        runs, pd.DataFrame(), cfg, layers=layers_for([0.0006, 0.0006, 0.0006])
    )
    assert clean.set_index("claim_id").loc["deeper_layers_kept[relu,s=0.98]", "verdict"] == "pass"
    reverse = claims.claims_table(
        runs, pd.DataFrame(), cfg, layers=layers_for([0.0001, 0.0001, 0.0001])
    )
    assert reverse.set_index("claim_id").loc["deeper_layers_kept[relu,s=0.98]", "verdict"] == "fail"
    assert (noisy.kind == "claim").all() and noisy.test.str.len().gt(0).all()


def test_regime_and_figures_cover_every_claim(cfg, cfg_dict):
    """One-sided claims (no margin); each claim id matches one depends_on pattern (disjoint: the
    claims job reads them sorted); the layer claims are in the figures (the accuracy claims are
    in the tables); the quick regime reaches every claim, the paper scale is the paper's."""
    from fnmatch import fnmatchcase

    from sigprop.claims import reading
    from sigprop.claims.reading import AXES

    runs = pd.concat(
        [
            _runs(
                {
                    (a, p, sp, s): [0.1, 0.5, 0.5]
                    for s in range(3)
                    for sp in (0.9, 0.98)
                    for a, p in (("resnet32", "snip"), ("stable_resnet32", "sbp_sr"))
                },
                activation=act,
            )
            for act in ("relu", "tanh")
        ],
        ignore_index=True,
    )
    layers = pd.concat(
        [
            _layers(
                "resnet32", "snip", {sp: lambda i: 0.9 - 0.02 * (i % 11) for sp in (0.9, 0.98)}
            ),
            _layers("stable_resnet32", "sbp_sr", {sp: lambda i: 0.6 for sp in (0.9, 0.98)}),
        ]
    )
    layers = pd.concat([layers.assign(activation=act) for act in ("relu", "tanh")])
    layers = layers.assign(
        run_id=[
            f"r{a}{p}{sp}{s}{act}"
            for a, p, sp, s, act in zip(
                layers.arch, layers.pruner, layers.sparsity, layers.seed, layers.activation
            )
        ]
    )
    c = claims.claims_table(runs, pd.DataFrame(), cfg, layers=layers)
    ids = set(c.claim_id)
    assert {
        "uniform_within_sections[tanh,s=0.98]",
        "deeper_layers_kept[relu,s=0.9]",
        "sbp_sr_vs_snip[cifar10,tanh,resnet32,s=0.98]",
    } <= ids
    assert c.margin.isna().all()
    u = c.set_index("claim_id").loc["uniform_within_sections[relu,s=0.9]"]
    assert "spread(Stable) / spread(ResNet) <= 1" in u.test
    dep = cfg_dict["depends_on"]
    for cid in ids:
        assert len([pat for pat in dep if fnmatchcase(cid, pat)]) == 1, cid
        shown = [n for n, f in spec.SPEC.figures.items() if f.shows(cid)]
        assert shown == (
            []
            if cid.startswith("sbp_sr")
            else ["pruning_resnet_kept_tanh" if "tanh" in cid else "pruning_resnet_kept_relu"]
        )
    assert all(set(a) <= set(AXES) for a in dep.values())
    q = reading.apply(c, "quick", cfg_dict["scales"]["quick"]["regime"], dep).set_index("claim_id")
    assert "steps:" not in q.regime["deeper_layers_kept[relu,s=0.9]"]  # masks at init
    assert "steps:" in q.regime["sbp_sr_vs_snip[cifar10,tanh,resnet32,s=0.98]"]
    assert not cfg_dict["scales"]["paper"].get("regime")


def test_difference_rows_carry_the_standard_error_that_decides_them(cfg):
    """The accuracy and last-section rows carry the unpaired SE over seeds of their difference
    (detectable = z SE); the spread row measures a ratio and has none."""
    runs = _runs(
        {("resnet32", "snip", 0.98, s): [0.1, 0.5, 0.5 + 0.01 * s] for s in range(3)}
        | {("stable_resnet32", "sbp_sr", 0.98, s): [0.1, 0.6, 0.6 - 0.02 * s] for s in range(3)}
        | {("resnet32", "synflow", 0.98, s): [0.1, 0.55, 0.55 + 0.03 * s] for s in range(3)}
    )
    layers = []
    for s, last in enumerate((0.0001, 0.0012, 0.0004)):
        layers += [
            _layers("resnet32", "snip", {0.98: lambda i: 0.002 if i < 22 else 0.0005}, seeds=(s,)),
            _layers(
                "stable_resnet32",
                "sbp_sr",
                {0.98: lambda i, last=last: 0.002 if i < 22 else last},
                seeds=(s,),
            ),
        ]
    layers = pd.concat(layers)
    layers = layers.assign(
        run_id=[
            f"r{a}{p}{sp}{s}relu"
            for a, p, sp, s in zip(layers.arch, layers.pruner, layers.sparsity, layers.seed)
        ]
    )
    c = claims.claims_table(runs, pd.DataFrame(), cfg, layers=layers).set_index("claim_id")
    ids = [
        "sbp_sr_vs_snip[cifar10,relu,resnet32,s=0.98]",
        "sbp_sr_best[cifar10,resnet32,s=0.98]",
        "deeper_layers_kept[relu,s=0.98]",
    ]
    d = c.loc[ids]
    assert np.isfinite(d.se).all() and (d.se > 0).all(), d[["se"]]
    np.testing.assert_allclose(d.detectable, 3.0 * d.se)
    from sigprop.claims import values

    assert all(values(r)["se"] == pytest.approx(r.se) for _, r in d.iterrows())
    assert np.isnan(c.loc["uniform_within_sections[relu,s=0.98]", "se"])
