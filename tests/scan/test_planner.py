"""plan_scan end to end on tables icectl writes (no Spark): pruning of manifests and files,
residuals, deletes of every kind, time travel, incremental appends, explain, options."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from icectl.errors import InvalidInput, NotFound, ValidationError
from icectl.expr.expressions import AlwaysTrue
from icectl.io.manifest.columns import clear_cache
from icectl.ops.metadata.create import create_table
from icectl.scan import plan_scan
from icectl.spec.manifests import DATA, EQUALITY_DELETES, POSITION_DELETES, DataFile
from icectl.spec.types import LONG
from icectl.spec.values import to_bytes
from icectl.table.table import Table
from support.files import commit
from support.tables import empty_table

DAY = 19723  # 2024-01-01


def _data(path: str, day: int, lo: int, hi: int, *, cat: str = "a", rc: int = 10,
          size: int = 1000, spec_id: int = 0, part: tuple | None = None) -> DataFile:
    return DataFile(DATA, path, "PARQUET", part if part is not None else (day,), rc, size,
                    value_counts={1: rc, 3: rc}, null_value_counts={1: 0, 3: 0},
                    lower_bounds={1: to_bytes(LONG, lo), 3: cat.encode()},
                    upper_bounds={1: to_bytes(LONG, hi), 3: cat.encode()},
                    split_offsets=(4,), spec_id=spec_id)


DAYS = {"schema": "id long, ts timestamptz, cat string", "partition": "days(ts)"}  # the tables' shape


def plan(t: Table, text: str | None = None, **kw: Any):
    clear_cache()
    return plan_scan(Table.load(t.location), text, **kw)


def paths(result) -> list[str]:
    return sorted(f.path for f in result.files)


def test_manifest_and_file_pruning_with_residuals(tmp_path) -> None:
    t = empty_table(tmp_path / "t", **DAYS)
    commit(t, [_data("d0a", DAY, 0, 9), _data("d0b", DAY, 10, 19)])
    commit(t, [_data("d1a", DAY + 1, 20, 29, cat="b")])
    r = plan(t)
    assert paths(r) == ["d0a", "d0b", "d1a"] and isinstance(r.filter, AlwaysTrue)
    assert all(isinstance(f.residual, AlwaysTrue) for f in r.files)
    r = plan(t, "ts >= '2024-01-02T00:00:00+00:00'", explain=True)
    assert paths(r) == ["d1a"]
    assert r.manifests_skipped == 1 and r.manifests_scanned == 1
    skipped = [m for m in r.manifests if not m.kept]
    assert "ts_day" in skipped[0].reason or "upper" in skipped[0].reason
    # a whole-day filter leaves no residual; a partial one does
    assert str(r.files[0].residual) == "true"
    r = plan(t, "ts > '2024-01-02T05:00:00+00:00'")
    assert paths(r) == ["d1a"] and "ts" in str(r.files[0].residual)
    # metrics pruning, and explain reasons for files
    r = plan(t, "id >= 10 and id < 15", explain=True)
    assert paths(r) == ["d0b"]
    reasons = {d.path: d for d in r.file_decisions}
    assert not reasons["d0a"].kept and not reasons["d1a"].kept and reasons["d0b"].kept
    assert "id" in reasons["d0a"].reason
    assert r.data_files_total == 3
    assert plan(t, "cat = 'b'").files[0].path == "d1a"
    assert paths(plan(t, "false")) == []


def test_deletes_of_every_kind(tmp_path) -> None:
    t = empty_table(tmp_path / "t", **DAYS, format_version=2)
    commit(t, [_data("d1", DAY, 0, 9), _data("d2", DAY, 10, 19), _data("d3", DAY + 1, 20, 29)])
    path_bound = {2147483546: b"d1"}
    pos_scoped = DataFile(POSITION_DELETES, "pos-d1", "PARQUET", (DAY,), 1, 50,
                          lower_bounds=path_bound, upper_bounds=path_bound)
    pos_part = DataFile(POSITION_DELETES, "pos-day0", "PARQUET", (DAY,), 2, 60,
                        lower_bounds={2147483546: b"d1"}, upper_bounds={2147483546: b"d2"})
    eq_part = DataFile(EQUALITY_DELETES, "eq-day1", "PARQUET", (DAY + 1,), 1, 70,
                       equality_ids=(1,), value_counts={1: 1}, null_value_counts={1: 0},
                       lower_bounds={1: to_bytes(LONG, 25)}, upper_bounds={1: to_bytes(LONG, 25)})
    eq_miss = DataFile(EQUALITY_DELETES, "eq-miss", "PARQUET", (DAY + 1,), 1, 70,
                       equality_ids=(1,), value_counts={1: 1}, null_value_counts={1: 0},
                       lower_bounds={1: to_bytes(LONG, 99)}, upper_bounds={1: to_bytes(LONG, 99)})
    commit(t, [], [pos_scoped, pos_part, eq_part, eq_miss], op="delete")
    # a file added after the deletes: position deletes of the same sequence number would apply,
    # but these are older
    commit(t, [_data("d4", DAY, 30, 39)])
    r = plan(t)
    got = {f.path: sorted(d.path for d in f.deletes) for f in r.files}
    assert got == {"d1": ["pos-d1", "pos-day0"], "d2": ["pos-day0"], "d3": ["eq-day1"], "d4": []}
    assert r.delete_files_total == 4 and len(r.delete_files) == 3
    # a delete whose partition cannot match is not even read
    r = plan(t, "ts < '2024-01-02T00:00:00+00:00'")
    assert {f.path for f in r.files} == {"d1", "d2", "d4"}
    # tasks carry the delete weight
    tasks = r.tasks()
    assert sum(len(x.splits) for x in tasks) == 3


def test_global_equality_deletes_and_evolved_spec(tmp_path) -> None:
    loc = str(tmp_path / "u")
    create_table(loc, schema_text="id long, ts timestamptz, cat string", format_version=2)
    t = Table.load(loc)
    commit(t, [_data("u1", DAY, 0, 9, part=())])
    g = DataFile(EQUALITY_DELETES, "global-eq", "PARQUET", (), 1, 10, equality_ids=(3,))
    commit(t, [], [g], op="delete")
    commit(t, [_data("u2", DAY, 10, 19, part=())])
    got = {f.path: [d.path for d in f.deletes] for f in plan(t).files}
    assert got == {"u1": ["global-eq"], "u2": []}


def test_time_travel_and_incremental(tmp_path) -> None:
    t = empty_table(tmp_path / "t", **DAYS)
    s1 = commit(t, [_data("a", DAY, 0, 9)])
    s2 = commit(t, [_data("b", DAY, 10, 19)])
    s3 = commit(t, [_data("c", DAY + 1, 20, 29)])
    assert paths(plan(t, snapshot_id=s1)) == ["a"]
    assert paths(plan(t, snapshot_id=s2)) == ["a", "b"]
    md = Table.load(t.location).metadata
    log = {e.snapshot_id: e.timestamp_ms for e in md.snapshot_log}
    assert paths(plan(t, as_of=log[s2])) == ["a", "b"] or log[s2] == log[s3]
    assert paths(plan(t, as_of=str(log[s1]))) in (["a"], ["a", "b"], ["a", "b", "c"])
    with pytest.raises(NotFound):
        plan(t, as_of=log[s1] - 10_000)
    assert paths(plan(t, ref="main")) == ["a", "b", "c"]
    assert paths(plan(t, from_snapshot=s1, to_snapshot=s3)) == ["b", "c"]
    assert paths(plan(t, from_snapshot=s2)) == ["c"]
    assert paths(plan(t, "id < 15", from_snapshot=s1)) == ["b"]
    with pytest.raises(ValidationError):
        plan(t, from_snapshot=s3, to_snapshot=s1)
    with pytest.raises(NotFound):
        plan(t, snapshot_id=12345)
    with pytest.raises(NotFound):
        plan(t, ref="nope")
    with pytest.raises(InvalidInput):
        plan(t, snapshot_id=s1, ref="main")


def test_options_and_errors(tmp_path) -> None:
    t = empty_table(tmp_path / "t", **DAYS)
    commit(t, [_data("a", DAY, 0, 9, size=300), _data("b", DAY, 10, 19, size=300)])
    r = plan(t, columns=["ID", "cat"])
    assert r.columns == ("id", "cat")
    with pytest.raises(NotFound):  # an unknown column
        plan(t, columns=["nope"])
    with pytest.raises(NotFound):  # no column ID when names are case sensitive
        plan(t, "ID = 1", case_sensitive=True)
    assert paths(plan(t, "ID = 1")) == ["a"]
    with pytest.raises(InvalidInput):
        plan(t, "id = ")
    with pytest.raises(InvalidInput):
        plan(t, split_size=0)
    # small split size and open cost: one task per split, lookback 1
    r = plan(t, split_size=100, open_file_cost=1, lookback=1)
    assert [[(f.path, s, n) for f, s, n in task.splits] for task in r.tasks()] == [
        [("a", 4, 296)], [("b", 4, 296)]]
    # large split size: both in one task
    r = plan(t, split_size=10_000, open_file_cost=1)
    assert len(r.tasks()) == 1
    # an empty table plans nothing
    loc = str(tmp_path / "empty")
    create_table(loc, schema_text="id long")
    e = plan_scan(Table.load(loc))
    assert e.files == [] and e.snapshot_id is None


def test_v1_table_and_deleted_entries(tmp_path) -> None:
    t = empty_table(tmp_path / "t", **DAYS, format_version=1)
    commit(t, [_data("a", DAY, 0, 9), replace(_data("b", DAY, 10, 19), record_count=0)])
    r = plan(t, "id >= 0")
    assert paths(r) == ["a"]  # a file without rows never matches a filter
    assert paths(plan(t)) == ["a", "b"]
    assert all(f.data_sequence_number == 0 for f in plan(t).files)
