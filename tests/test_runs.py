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
    assert RunSpec(depth=5, sigma_w2=2.0).run_id == "r" + __import__("hashlib").sha256(
        b'{"depth":5,"sigma_w2":2.0}').hexdigest()[:12]


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
    runs2 = [dataclasses.replace(r, sigma_w2=3.5) if (r.depth, r.sigma_w2) == (3, 3.0) else r for r in runs]
    ids1 = {s.shard_id for s in shards}
    ids2 = {s.shard_id for s in make_shards("st", runs2, shard_size=2)}
    assert len(ids1 - ids2) == 1 and len(ids2 - ids1) == 1


def test_shard_json_round_trip_and_tamper_check():
    shard = Shard("st", (RunSpec(depth=3), RunSpec(depth=3, seed=1)))
    assert Shard.from_json(shard.to_json()) == shard
    bad = shard.to_json().replace(shard.shard_id, "s000000000000")
    with pytest.raises(ValueError, match="mismatch"):
        Shard.from_json(bad)
