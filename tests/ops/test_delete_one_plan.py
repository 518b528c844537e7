"""One model from plan to commit (issue 21, item 1): a planned file gives its real DataFile and
manifest entry from the plan's columns, and deletes, ``delete --equality`` and upsert read and
commit from one plan, the filter parsed once, no manifest read again by the operation."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from icectl.ops.metadata.create import create_table
from icectl.ops.delete.merge_on_read import delete_rows
from icectl.ops.delete.equality import delete_equality
from icectl.ops.delete.upsert import upsert_rows
from icectl.ops.write.rows import write_rows
from icectl.scan.planner import plan_scan
from icectl.spec.manifests import DATA, POSITION_DELETES
from icectl.table.table import Table
from support.tables import empty_table, with_files
from tests.ops.ops_support import PlanCounts, id_rows, live_entries_by_key

DAY = 86_400_000_000  # microseconds


def _table(tmp_path: Path, fv: int = 2, mode: str = "merge-on-read",
           partition: str = "cat", schema: str = "id long, cat string, d date, x double") -> Table:
    # edges: a null partition, a pre-1970 date, negative ids, NaN and -0.0
    writes = [pa.table({
        "id": pa.array([-3, -2, -1, 0, 1], pa.int64()),
        "cat": ["a", "a", None, None, "b"],
        "d": pa.array([-400, -1, 0, 1, 19000], pa.date32()),
        "x": pa.array([float("nan"), -0.0, 0.0, None, 1.5], pa.float64())}), pa.table({
        "id": pa.array([10, 11, 12], pa.int64()), "cat": ["a", None, "b"],
        "d": pa.array([-5000, 5, 6], pa.date32()), "x": pa.array([2.0, 3.0, None], pa.float64())})]
    t = empty_table(tmp_path / "t", schema, partition=partition, format_version=fv,
                    properties={"write.delete.mode": mode})
    return with_files(t, len(writes), writes.__getitem__)


def _same_entry(mine, theirs, manifest_path: str, metric_ids: set[int]) -> None:
    """The planned entry equals the record reader's on every field the plan decodes."""
    assert (mine.status, mine.snapshot_id, mine.sequence_number, mine.file_sequence_number) == \
        (theirs.status, theirs.snapshot_id, theirs.sequence_number, theirs.file_sequence_number)
    a, b = mine.data_file, theirs.data_file
    for name in ("content", "file_path", "file_format", "partition", "record_count",
                 "file_size_in_bytes", "key_metadata", "split_offsets", "equality_ids",
                 "sort_order_id", "first_row_id", "referenced_data_file", "content_offset",
                 "content_size_in_bytes", "spec_id"):
        assert getattr(a, name) == getattr(b, name), name
    assert a.manifest_path == manifest_path and b.manifest_path in (None, manifest_path)
    # the metrics of the columns the plan decoded (at least the filter's; a cached decoding
    # may hold more), each equal to the record reader's
    for name in ("value_counts", "null_value_counts", "nan_value_counts", "lower_bounds",
                 "upper_bounds"):
        got, want = getattr(a, name), getattr(b, name) or {}
        assert {k: want.get(k) for k in got} == got, name
        assert {k for k in want if k in metric_ids} <= set(got), name


@pytest.mark.parametrize("fv", [2, 3])
def test_planned_files_and_their_deletes_are_the_manifest_entries(tmp_path: Path, fv: int) -> None:
    t = _table(tmp_path, fv)
    delete_rows(t, "id = -2 or id = 11")  # position deletes / deletion vectors to attach
    t = Table.load(t.location)
    theirs = live_entries_by_key(t)
    plan = plan_scan(t, "x > -1.0 and d < '1970-01-03'")  # fields 4 (x) and 3 (d) decoded
    assert plan.files
    for p in plan.files:
        e, mpath = theirs[(DATA, p.path, None)]
        assert p.data_file().manifest_path == mpath == p.manifest_path
        _same_entry(p.manifest_entry(), e, mpath, {3, 4})
        for d in p.deletes:
            de, dpath = theirs[(POSITION_DELETES, d.path, d.content_offset)]
            _same_entry(plan.delete_entry(d), de, dpath, set())
            assert plan.delete_file(d).is_deletion_vector == (fv == 3)
    assert any(p.deletes for p in plan.files)
    # the partitions, null and all, and the data sequence numbers of both appends
    assert {p.partition for p in plan.files} == {("a",), (None,)}  # "b": d is too late
    assert len({p.manifest_entry().sequence_number for p in plan.files}) == 2


@pytest.mark.parametrize("fv,mode", [(2, "merge-on-read"), (3, "merge-on-read"),
                                     (2, "copy-on-write"), (3, "copy-on-write")])
def test_delete_parses_the_filter_once_and_plans_once(tmp_path: Path, monkeypatch, fv: int,
                                                      mode: str) -> None:
    t = _table(tmp_path, fv, mode)
    if mode == "merge-on-read":  # the second delete merges into the deletion vectors of the first
        delete_rows(t, "id = 0")
    counts = PlanCounts(monkeypatch)
    r = delete_rows(Table.load(t.location), "cat = 'a' or id in (-1, 1, 12)")
    assert (counts.parsed, counts.planned) == (1, 1)
    assert counts.ops_manifest_reads == []  # the operation's files came from its plan
    assert r.committed and r.mode == mode
    assert id_rows(t) == ([11] if mode == "merge-on-read" else [0, 11])
    if mode == "merge-on-read":
        # the two 'a' files dropped whole (unread), positions in the null and 'b' files
        assert len(r.removed_data_files) == 2 and r.deleted_positions == 3
    before = id_rows(t)
    counts.parsed = counts.planned = 0
    dry = delete_rows(Table.load(t.location), "id >= 11", dry_run=True)
    assert (counts.parsed, counts.planned) == (1, 1) and not dry.committed
    assert dry.removed_data_files or dry.files_with_row_deletes
    assert id_rows(t) == before


@pytest.mark.parametrize("fv", [2, 3])
def test_keyed_deletes_and_upsert_plan_once_and_read_no_manifest(tmp_path: Path, monkeypatch,
                                                                  fv: int) -> None:
    # the key (id) does not determine the partition (cat): the rows are found and their
    # positions deleted, from one plan
    t = _table(tmp_path, fv)
    counts = PlanCounts(monkeypatch)
    r = delete_equality(t, "id", pa.table({"id": pa.array([-3, 12, 99], pa.int64())}))
    assert r.method in ("position-deletes", "deletion-vectors") and r.deleted_rows == 2
    assert counts.planned == 1 and counts.parsed == 0 and counts.ops_manifest_reads == []
    assert id_rows(t) == [-2, -1, 0, 1, 10, 11]
    counts.planned = 0
    u = upsert_rows(Table.load(t.location), pa.table({
        "id": pa.array([-2, 50], pa.int64()), "cat": ["z", "z"],
        "d": pa.array([1, 2], pa.date32()), "x": pa.array([0.5, 0.5], pa.float64())}), "id")
    assert u.replaced_rows == 1 and counts.planned == 1 and counts.ops_manifest_reads == []
    assert id_rows(t) == [-2, -1, 0, 1, 10, 11, 50]
    entries = live_entries_by_key(t)
    if fv == 3:  # one deletion vector per data file: the upsert's merged into the earlier one
        dvs = [f for (c, _, _), (e, _) in entries.items() if c == POSITION_DELETES
               for f in [e.data_file]]
        assert len({f.referenced_data_file for f in dvs}) == len(dvs)


@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
@pytest.mark.parametrize("race,level,conflicts", [
    ("b", "serializable", False),  # another partition: the partition projection rules it out
    ("a", "serializable", True),  # no column metrics: new data in the partition may match
    ("a", "snapshot", False),  # snapshot isolation: new data never conflicts
])
def test_both_delete_modes_share_one_conflict_check(tmp_path: Path, monkeypatch, mode: str,
                                                    race: str, level: str, conflicts: bool) -> None:
    """One isolation-level parser and one serializable check (table/commit/validation.py) for both
    modes: copy-on-write used to check column metrics only, so without metrics any new file
    conflicted."""
    from icectl.errors import CommitConflict
    from icectl.ops.delete import copy_on_write as delete_cow
    from icectl.ops.delete import merge_on_read as delete_rows_mod

    loc = str(tmp_path / "t")
    create_table(loc, schema_text="id long, cat string", partition_text="cat",
                 properties={"write.delete.mode": mode, "write.metadata.metrics.default": "none",
                             "write.delete.isolation-level": level})
    write_rows(Table.load(loc), pa.table({"id": pa.array([1, 2, 3], pa.int64()),
                                          "cat": ["a", "a", "b"]}))

    def append() -> None:
        write_rows(Table.load(loc), pa.table({"id": pa.array([1], pa.int64()), "cat": [race]}))

    def racing(real):
        def run(*a, **k):
            got = real(*a, **k)
            append()
            return got
        return run

    if mode == "merge-on-read":
        monkeypatch.setattr(delete_rows_mod, "write_row_deletes", racing(delete_rows_mod.write_row_deletes))
    else:
        monkeypatch.setattr(delete_cow, "_run", racing(delete_cow._run))
    if conflicts:
        with pytest.raises(CommitConflict, match="may hold rows the operation.s filter selects"):
            delete_rows(Table.load(loc), "cat = 'a' and id = 1")
        assert id_rows(Table.load(loc)) == [1, 1, 2, 3]  # only the racing append landed
    else:
        r = delete_rows(Table.load(loc), "cat = 'a' and id = 1")
        assert r.committed and r.mode == mode
        assert id_rows(Table.load(loc)) == [1, 2, 3]  # the racing row stays, the old one is gone
