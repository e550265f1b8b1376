import dataclasses

import pytest

from sigprop.runs import RunSpec, Shard, make_shards


def test_run_id_hashes_only_non_default_fields():
    a = RunSpec(depth=5, sigma_w2=2.0)
    assert a.run_id == RunSpec(sigma_w2=2.0, depth=5).run_id
    assert a.run_id != RunSpec(depth=5, sigma_w2=2.5).run_id
    # a field at its default value does not enter the hash: ids survive new defaulted fields
    assert a.non_default() == {"depth": 5, "sigma_w2": 2.0}
    assert RunSpec(depth=5, sigma_w2=2.0, keep_rate=1.0).run_id == a.run_id


def test_run_id_is_stable_across_versions():
    # pinned: changing the hashing scheme would silently orphan every cached result
    assert (
        RunSpec(depth=5, sigma_w2=2.0).run_id
        == "r" + __import__("hashlib").sha256(b'{"depth":5,"sigma_w2":2.0}').hexdigest()[:12]
    )


def test_int_and_float_spellings_give_one_id():
    assert RunSpec.from_dict({"sigma_w2": 2}).run_id == RunSpec.from_dict({"sigma_w2": 2.0}).run_id


def test_from_dict_rejects_unknown_and_mistyped_fields():
    with pytest.raises(ValueError, match="sigma_w"):
        RunSpec.from_dict({"sigma_w": 1.0})
    with pytest.raises(TypeError, match="depth"):
        RunSpec.from_dict({"depth": "10"})


def test_shards_group_by_shape_and_keep_grid_order():
    runs = [RunSpec(depth=d, sigma_w2=s) for d in (2, 3) for s in (1.0, 2.0, 3.0)]
    shards = make_shards("st", runs, shard_size=2)
    assert [len(s.runs) for s in shards] == [2, 1, 2, 1]
    assert all(len({r.depth for r in s.runs}) == 1 for s in shards)
    # editing one value in place changes only the shard holding it
    runs2 = [
        dataclasses.replace(r, sigma_w2=3.5) if (r.depth, r.sigma_w2) == (3, 3.0) else r
        for r in runs
    ]
    ids1 = {s.shard_id for s in shards}
    ids2 = {s.shard_id for s in make_shards("st", runs2, shard_size=2)}
    assert len(ids1 - ids2) == 1 and len(ids2 - ids1) == 1


def test_computed_shards_are_kept_when_a_grid_grows():
    """Lengthening a list (seeds, a sigma_w^2) after a run keeps every computed shard: the new
    runs get shards of their own.  Without the computed shards, grid-order chunking would cut
    the longer grid differently and every shard of the group would change."""

    def grid(seeds, sigmas):
        return [
            RunSpec(depth=d, sigma_w2=s, seed=k)
            for d in (2, 3)
            for s in sigmas
            for k in range(seeds)
        ]

    before = make_shards("st", grid(3, (1.0, 2.0)), shard_size=4)
    computed = [[r.run_id for r in s.runs] for s in before]
    for longer in (grid(5, (1.0, 2.0)), grid(3, (1.0, 2.0, 3.0)), grid(5, (1.0, 1.5, 2.0))):
        after = make_shards("st", longer, 4, computed)
        old = {r.run_id for r in grid(3, (1.0, 2.0))}
        new_shards = [s for s in after if s.shard_id not in {b.shard_id for b in before}]
        assert {b.shard_id for b in before} <= {s.shard_id for s in after}
        assert all(r.run_id not in old for s in new_shards for r in s.runs)
        assert sorted(r.run_id for s in after for r in s.runs) == sorted({r.run_id for r in longer})
        assert all(len(s.runs) <= 4 and len({r.depth for r in s.runs}) == 1 for s in after)
        fresh = {s.shard_id for s in make_shards("st", longer, 4)}
        assert not {b.shard_id for b in before} <= fresh  # grid order alone moves them
    # without computed shards, or with the same ones, the grid's own sharding
    assert make_shards("st", grid(3, (1.0, 2.0)), 4, computed) == before
    # a computed shard that lost a run, or is larger than the size now allowed, is re-cut
    shorter = [r for r in grid(3, (1.0, 2.0)) if r.seed != 0]
    kept = {b.shard_id for b in before if all(r.seed != 0 for r in b.runs)}
    assert (
        kept
        and {b.shard_id for b in before}
        & {s.shard_id for s in make_shards("st", shorter, 4, computed)}
        == kept
    )
    assert all(len(s.runs) <= 2 for s in make_shards("st", grid(3, (1.0, 2.0)), 2, computed))


def test_computed_shards_read_back_from_the_shard_tables(tmp_path):
    import pandas as pd

    from sigprop import tables

    shards = make_shards("st", [RunSpec(depth=3, seed=k) for k in range(5)], shard_size=2)
    folder = tmp_path / "st" / "runs"
    folder.mkdir(parents=True)
    for s in shards:
        df = pd.DataFrame(
            {"study": "st", "shard_id": s.shard_id, "run_id": [r.run_id for r in s.runs]}
        )
        tables.write_atomic(df, folder / f"{s.shard_id}.parquet", tables.shard_stamp(s))
    members = {tuple(r.run_id for r in s.runs) for s in shards}
    assert set(tables.computed_shards(tmp_path, "st")) == members and len(shards) == 3
    # a table renamed to another shard's id, one without a stamp, or unreadable: left out
    first = shards[0]
    (folder / f"{first.shard_id}.parquet").rename(folder / "s000000000000.parquet")
    pd.DataFrame({"run_id": ["x"]}).to_parquet(folder / "s111111111111.parquet")
    (folder / "s222222222222.parquet").write_text("not parquet")
    got = tables.computed_shards(tmp_path, "st")
    assert set(got) == members - {tuple(r.run_id for r in first.runs)}
    assert tables.computed_shards(tmp_path, "other") == []


def test_shard_json_round_trip_and_tamper_check():
    shard = Shard("st", (RunSpec(depth=3), RunSpec(depth=3, seed=1)))
    assert Shard.from_json(shard.to_json()) == shard
    bad = shard.to_json().replace(shard.shard_id, "s000000000000")
    with pytest.raises(ValueError, match="mismatch"):
        Shard.from_json(bad)
