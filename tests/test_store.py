"""The results store checks what it reads, and writes leave nothing behind (issue: a shard table
filed under the wrong name was merged as if it were right; a full disk left temporary files).

Unit tests of the checks in sigprop.tables, sigprop.atomic and sigprop.train.engine; the same
faults through a real workflow run are in tests/test_faults.py."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import torch

from sigprop import atomic, tables
from sigprop.runs import RunSpec, Shard, runs_digest
from sigprop.steps.logs import explain_failure
from sigprop.train import engine


def _shard(study="s", seeds=(0, 1), width=4) -> Shard:
    return Shard(study, tuple(RunSpec(width=width, depth=1, seed=i) for i in seeds))


def _table(tmp_path: Path, shard: Shard, name: str | None = None) -> Path:
    long = pd.DataFrame(
        {"model": list(range(len(shard.runs))), "step": 0, "metric": "train_acc", "value": 0.5}
    )
    return tables.write_atomic(
        tables.run_rows(shard, long, "cpu"),
        tmp_path / "runs" / f"{name or shard.shard_id}.parquet",
        tables.shard_stamp(shard),
    )


def _manifest(study: str, shards: list[Shard]) -> dict:
    return {
        "study": study,
        "rule": "train_shard",
        "shards": {s.shard_id: [[r.run_id, "block 0"] for r in s.runs] for s in shards},
    }


def test_a_shard_table_under_its_own_name_merges_with_labels(tmp_path):
    a, b = _shard(seeds=(0, 1)), _shard(seeds=(2, 3))
    df = tables.merge_runs([_table(tmp_path, a), _table(tmp_path, b)], _manifest("s", [a, b]))
    assert df.run_id.nunique() == 4 and set(df.block) == {"block 0"}


def test_a_shard_table_filed_under_another_shards_name_is_refused_naming_both(tmp_path):
    a, b = _shard(seeds=(0, 1)), _shard(seeds=(2, 3))
    wrong = _table(tmp_path, a, name=b.shard_id)  # a's rows under b's name
    with pytest.raises(tables.TableError) as e:
        tables.merge_runs([_table(tmp_path, a), wrong], _manifest("s", [a, b]))
    msg = str(e.value)
    assert str(wrong) in msg and f"shard {a.shard_id}" in msg and f"shard {b.shard_id}" in msg
    assert f"snakemake --force {wrong}" in msg


def test_a_shard_table_of_another_grid_or_study_is_refused(tmp_path):
    a = _shard(seeds=(0, 1, 2))
    other_grid = _shard(seeds=(0, 1))  # fewer runs: another shard id
    f = _table(tmp_path, other_grid, name=a.shard_id)
    with pytest.raises(tables.TableError, match=r"1 of its runs missing"):
        tables.merge_runs([f], _manifest("s", [a]))
    g = _table(tmp_path, _shard(study="residual_ntk", seeds=(0, 1, 2)), name=a.shard_id)
    with pytest.raises(
        tables.TableError,
        match=r"holds study residual_ntk.*expects shard "
        rf"{a.shard_id} of study s",
    ):
        tables.merge_runs([g], _manifest("s", [a]))


def test_readers_check_the_merged_table_theory_and_claims(tmp_path):
    a = _shard(seeds=(0, 1))
    merged = tables.merge_runs([_table(tmp_path, a)], _manifest("s", [a]))
    expect = {"study": "s", "n_runs": 2, "runs": runs_digest(r.run_id for r in a.runs)}
    tables.check_runs_table(merged, "m.parquet", expect)
    with pytest.raises(
        tables.TableError,
        match=r"m.parquet: holds study s, shard .*, 1 runs.*"
        r"expects the 2 runs of study s.*snakemake --force "
        r"m.parquet",
    ):
        tables.check_runs_table(merged[merged.run_id == a.runs[0].run_id], "m.parquet", expect)
    with pytest.raises(
        tables.TableError,
        match=r"t.parquet: holds rows of study other; the "
        r"workflow expects study s",
    ):
        tables.check_study_column(pd.DataFrame({"study": ["other"]}), "t.parquet", "s", "theory")
    # a claims table in the wrong study's folder stops the paper's merge
    from sigprop.claims import frame, row

    p = tmp_path / "s" / "claims.parquet"
    p.parent.mkdir()
    frame([row("other", "c", "c", "src", 1.0, "", 0.0, "pass")]).to_parquet(p)
    with pytest.raises(tables.TableError, match="holds rows of study other"):
        tables.concat_claims([p], ["s"])


def test_weights_and_masks_of_another_shard_are_refused(tmp_path):
    a, b = _shard(seeds=(0, 1)), _shard(seeds=(2, 3))
    params = [torch.zeros(2, 3)]
    engine.save_state(params, [], a, tmp_path / "init.pt")
    with pytest.raises(
        ValueError,
        match=rf"holds the initial parameters of shard {a.shard_id}; "
        rf"the workflow expects shard {b.shard_id}.*snakemake --force "
        rf"{tmp_path / 'init.pt'}",
    ):
        engine.load_state(tmp_path / "init.pt", b)
    engine.save_masks([None], a, tmp_path / "m.pt")
    with pytest.raises(
        ValueError,
        match=rf"holds the masks of shard {a.shard_id}.*snakemake "
        rf"--force {tmp_path / 'm.pt'}",
    ):
        engine.load_masks(tmp_path / "m.pt", b)


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".tmp" in p.name)


@pytest.mark.parametrize("writer", ["parquet", "torch", "text"])
def test_a_write_that_fails_leaves_nothing_and_a_full_disk_says_so(tmp_path, monkeypatch, writer):
    """An injected ENOSPC in the middle of each kind of write."""
    target = tmp_path / f"out.{writer}"
    real_replace = os.replace

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(atomic.DiskFullError, match=rf"no space left on device writing {target}"):
        if writer == "parquet":
            tables.write_atomic(pd.DataFrame({"x": [1.0]}), target)
        elif writer == "torch":
            engine._atomic_save({"x": torch.zeros(3)}, target)
        else:
            atomic.write_text(target, "hello")
    monkeypatch.setattr(os, "replace", real_replace)
    assert not target.exists() and _leftovers(tmp_path) == []


def test_any_error_during_a_write_removes_the_temporary_file(tmp_path):
    class Boom(RuntimeError):
        pass

    with pytest.raises(Boom):
        with atomic.target(tmp_path / "x.bin") as tmp:
            tmp.write_bytes(b"half")
            raise Boom("serializer failed")
    assert list(tmp_path.iterdir()) == []


def _mount_tmpfs(folder: Path, size: str) -> bool:
    if os.geteuid() != 0 or not shutil.which("mount"):
        return False
    folder.mkdir(parents=True, exist_ok=True)
    p = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True
    )
    return p.returncode == 0


def test_a_real_full_disk_leaves_no_temporary_file(tmp_path):
    """On a 600 KB tmpfs (where mounting is allowed): torch.save of a 2 MB tensor fails with a
    message that says the disk is full and names the file; nothing is left on the disk."""
    disk = tmp_path / "small"
    if not _mount_tmpfs(disk, "600k"):
        pytest.skip(
            "mounting a tmpfs needs root and CAP_SYS_ADMIN here; the injected ENOSPC "
            "tests above cover the same code"
        )
    try:
        with pytest.raises(atomic.DiskFullError, match=r"no space left on device writing "):
            engine._atomic_save({"w": torch.zeros(512, 1024)}, disk / "ckpt.pt")
        with pytest.raises(atomic.DiskFullError):
            tables.write_atomic(
                pd.DataFrame({"x": range(200_000)}).astype(float), disk / "t.parquet"
            )
        assert list(disk.iterdir()) == []
        engine._atomic_save({"w": torch.zeros(8)}, disk / "small.pt")  # room is still there
        assert [p.name for p in disk.iterdir()] == ["small.pt"]
    finally:
        subprocess.run(["umount", str(disk)], capture_output=True)


def test_a_checkpoint_of_another_shard_is_never_resumed(tmp_path, caplog):
    from sigprop.data.embedded import digits
    from sigprop.data.prepare import Dataset

    a = Shard("s", (RunSpec(width=4, depth=1, steps=4, eval_every=2, batch_size=8, seed=0),))
    b = Shard("s", (RunSpec(width=4, depth=1, steps=4, eval_every=2, batch_size=8, seed=1),))
    x, y, xt, yt = digits()
    data = engine.to_data(
        Dataset(x, y, xt, yt, {"name": "digits", "task": "classification", "n_classes": 10}),
        torch.device("cpu"),
        torch.float32,
    )
    ckpt = tmp_path / "ckpt.pt"
    p, bufs = engine.initial_state(a, (64,), 10, torch.device("cpu"), torch.float32)
    t = engine.ShardTrainer(
        a, data, p, torch.device("cpu"), buffers=bufs, checkpoint=ckpt, checkpoint_every=2
    )
    t.step = 2
    t._save_checkpoint()
    p, bufs = engine.initial_state(b, (64,), 10, torch.device("cpu"), torch.float32)
    t = engine.ShardTrainer(
        b, data, p, torch.device("cpu"), buffers=bufs, checkpoint=ckpt, checkpoint_every=2
    )
    with caplog.at_level("WARNING"):
        t._maybe_resume()
    assert t.step == 0 and "of another shard" in caplog.text


def test_a_vanished_file_gets_a_plain_explanation():
    log = (
        "MissingOutputException in rule prepare_dataset:\nJob 3 completed successfully, but "
        "some output files are missing. Missing files after 5 seconds. This might be due to "
        "filesystem latency.\nresults/data/gaussian.npz\n"
    )
    note = explain_failure(log)
    assert "results/data/gaussian.npz" in note and "run `snakemake` again" in note
    assert explain_failure("Error in rule claims: ValueError") == ""


def test_manifest_and_expect_json_are_what_the_checks_read():
    from conftest import tiny_study

    from sigprop.config import build_study

    st = build_study("trainable_depth", "f.yaml", tiny_study(), "quick", 2)
    m = json.loads(st.manifest())
    assert m["rule"] == "train_shard" and set(m["shards"]) == {s.shard_id for s in st.shards}
    e = json.loads(st.expect())
    assert e == {
        "study": "trainable_depth",
        "n_runs": len(st.runs),
        "runs": runs_digest(r.run_id for r in st.runs),
    }


def test_temporary_files_of_dead_processes_are_removed_at_the_next_start(tmp_path):
    """A job killed with SIGKILL leaves .<file>.tmp<pid>.pdf behind; the next run removes it
    (once nothing has touched it for the orphan age), never the file of a living process."""
    import os
    import subprocess
    import time

    from sigprop import atomic

    dead = subprocess.Popen(["true"])
    dead.wait()
    figs = tmp_path / "results" / "s" / "figures"
    figs.mkdir(parents=True)
    orphan = figs / f".f.pdf.tmp{dead.pid}.pdf"
    mine = figs / f".g.png.tmp{os.getpid()}.png"
    fresh = figs / f".h.png.tmp{dead.pid}.png"
    keep = figs / "f.pdf"
    for p in (orphan, mine, fresh, keep):
        p.write_bytes(b"x")
    old = time.time() - 2 * atomic.ORPHAN_AGE_S
    for p in (orphan, mine, keep):
        os.utime(p, (old, old))
    assert atomic.remove_orphans(tmp_path / "results") == [orphan]
    assert not orphan.exists() and mine.exists() and fresh.exists() and keep.exists()


def _claims_table(path, study="s", scale="quick", runs="abc", rows=1):
    from sigprop.claims import frame, row

    df = frame(
        [
            row(study, f"c{i}", "c", "000 Eq. 1", 1.0, "", 0.0, "pass", test="t", detectable=0.1)
            for i in range(rows)
        ]
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    return tables.write_atomic(
        df, path, {"kind": "claims", "study": study, "scale": scale, "runs": runs, "smoke": False}
    )


def test_a_claims_table_of_another_scale_or_grid_or_none_is_refused(tmp_path):
    """The paper's merge checks each claims table's stamp against this run: the same study's
    paper-scale table copied into results/ (before: its 17 values shown as this run's), a
    table of another grid, an empty table, a table written by another tool."""
    want = {"s": {"kind": "claims", "study": "s", "scale": "quick", "runs": "abc", "smoke": False}}
    ok = _claims_table(tmp_path / "ok" / "claims.parquet")
    assert len(tables.concat_claims([ok], ["s"], want)) == 1
    paper = _claims_table(tmp_path / "paper" / "claims.parquet", scale="paper")
    with pytest.raises(
        tables.TableError,
        match=r"paper/claims.parquet: was made for scale 'paper'; "
        r"the workflow expects scale 'quick'.*snakemake --force",
    ):
        tables.concat_claims([paper], ["s"], want)
    grid = _claims_table(tmp_path / "grid" / "claims.parquet", runs="other")
    with pytest.raises(tables.TableError, match="was made for runs 'other'"):
        tables.concat_claims([grid], ["s"], want)
    empty = _claims_table(tmp_path / "empty" / "claims.parquet", rows=0)
    with pytest.raises(tables.TableError, match="empty/claims.parquet: holds no rows"):
        tables.concat_claims([empty], ["s"], want)
    foreign = tmp_path / "foreign" / "claims.parquet"
    foreign.parent.mkdir()
    pd.read_parquet(ok).to_parquet(foreign)
    with pytest.raises(tables.TableError, match="carries no stamp"):
        tables.concat_claims([foreign], ["s"], want)


def test_a_claims_page_of_another_study_is_refused(tmp_path):
    from sigprop.claims.render import to_html
    from sigprop.steps.analysis import check_claims_pages

    a = _claims_table(tmp_path / "a" / "claims.parquet", study="s")
    b = _claims_table(tmp_path / "b" / "claims.parquet", study="s", rows=2)
    for t in (a, b):
        df = pd.read_parquet(t)
        (t.parent / "claims.html").write_text(to_html(df, table=tables.content_digest(df)))
    check_claims_pages([a, b], [a.parent / "claims.html", b.parent / "claims.html"])
    shutil.copy(b.parent / "claims.html", a.parent / "claims.html")
    with pytest.raises(tables.TableError, match=r"a/claims.html: was not rendered from .*a/claims"):
        check_claims_pages([a], [a.parent / "claims.html"])


def test_a_shard_table_with_rows_deleted_is_refused(tmp_path):
    """Rows deleted after the job wrote the table, run ids intact (before: merged with exit 0,
    two verdicts moved): re-saved by pandas it has no stamp; edited keeping the stamp, its
    rows and content no longer match it."""
    import pyarrow.parquet as pq

    a = _shard(seeds=(0, 1, 2))

    def table():  # an evaluation at steps 0 and 10 for each run
        long = pd.DataFrame(
            {"model": [0, 1, 2] * 2, "step": [0] * 3 + [10] * 3, "metric": "test_acc", "value": 0.5}
        )
        return tables.write_atomic(
            tables.run_rows(a, long, "cpu"),
            tmp_path / "runs" / f"{a.shard_id}.parquet",
            tables.shard_stamp(a),
        )

    path = table()
    df = pd.read_parquet(path)
    df[~((df.step == 10) & (df.run_id == df.run_id.iloc[0]))].to_parquet(path)
    with pytest.raises(tables.TableError, match="carries no stamp"):
        tables.merge_runs([path], _manifest("s", [a]))
    path = table()
    t = pq.read_table(path)
    pq.write_table(t.slice(1), path)  # the stamp kept, one row gone
    with pytest.raises(tables.TableError, match=r"changed after it was written \(5 rows"):
        tables.merge_runs([path], _manifest("s", [a]))
