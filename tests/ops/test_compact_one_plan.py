"""Compaction on the one plan model (issue 21, item 1): ``icectl compact`` and ``compact
--deletes`` plan once, read the rows through the plan's files (with the delete files the planner
attached) and commit the planned files with their manifest as hint; the dangling-delete rule has
one home (``table/delete_index.is_dangling``); the replace commit merges manifests as Iceberg
Java's RewriteFiles does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icectl.io.manifest import records as avro
from icectl.ops.maintain.compact import CompactOptions, compact_table, plan_compaction
from icectl.ops.maintain.compact_deletes import compact_deletes
from icectl.ops.delete.merge_on_read import delete_rows
from icectl.spec.manifests import (
    ADDED,
    DATA,
    EQUALITY_DELETES,
    MANIFEST_DATA,
    POSITION_DELETES,
    DataFile,
)
from icectl.spec.reserved import DELETE_FILE_PATH_ID
from icectl.table.delete_index import LiveDataFiles, is_dangling
from icectl.table.commit.rewrite import RewriteFilesProducer
from icectl.table.table import Table
from support.tables import MOR, empty_table, with_files
from tests.ops.ops_support import InProcess, PlanCounts, id_rows, live_entries_by_key, record_manifests_opened

NO_MERGE = {"commit.manifest-merge.enabled": "false"}


def _table(tmp_path: Path, fv: int, partition: str | None, appends: int = 6,
           properties: dict | None = None) -> Table:
    """``appends`` appends of 50 rows each (one manifest each), ids ascending; edges in the
    rows: a null and a NaN in x, -0.0, negative ids, a pre-1970 date."""
    def rows(i: int) -> pa.Table:
        ids = list(range(i * 50 - 100, i * 50 - 50))
        return pa.table({
            "id": pa.array(ids, pa.int64()),
            "cat": [None if k % 5 == 0 else "ab"[k % 2] for k in ids],
            "d": pa.array([k * 7 for k in ids], pa.date32()),
            "x": pa.array([None if k % 11 == 0 else float("nan") if k % 13 == 0
                           else -0.0 if k == -1 else k / 4 for k in ids], pa.float64())})

    t = empty_table(tmp_path / "t", "id long, cat string, d date, x double", partition=partition,
                    format_version=fv, properties={**MOR, **(properties or {})})
    return with_files(t, appends, rows)


def _manifests(t: Table) -> list:
    t = Table.load(t.location)
    return avro.load_manifest_list(t.io, t.metadata.current_snapshot().manifest_list,
                                   t.metadata.format_version)


@pytest.mark.parametrize("fv", [2, 3])
def test_compaction_plans_once_and_commits_the_planned_files(tmp_path: Path, monkeypatch,
                                                             fv: int) -> None:
    # unpartitioned: partition summaries cannot tell the six manifests apart, only the plan's
    # hint can; merging off, so the commit reads nothing but what it rewrites
    t = _table(tmp_path, fv, None, properties=NO_MERGE)
    delete_rows(t, "id in (-99, -60, 5)")  # deletes in two of the files compacted, one not
    before = id_rows(t)
    counts = PlanCounts(monkeypatch)
    opened = record_manifests_opened(monkeypatch, RewriteFilesProducer)
    r = compact_table(Table.load(t.location), "id < 0",
                      CompactOptions(min_input_files=2), engine=InProcess())
    assert (counts.parsed, counts.planned) == (1, 1)
    assert counts.ops_manifest_reads == []
    assert r.committed and r.rewritten_data_files == 2 and r.added_data_files == 1
    # the two data manifests holding the files, and the delete manifest (its deletes of the
    # replaced files are removed with them); none of the other four data manifests
    assert opened == [3]
    assert id_rows(t) == before
    entries = live_entries_by_key(t)
    data = [e for (c, _, _), (e, _) in entries.items() if c == DATA]
    assert len(data) == 5
    snap = Table.load(t.location).metadata.current_snapshot()
    (new,) = [e for e in data if e.snapshot_id == snap.snapshot_id]
    assert new.status == ADDED
    assert new.data_file.record_count == 100 - 2  # ids -100..-1 less the two deleted
    deletes = [e for (c, _, _), (e, _) in entries.items() if c != DATA]
    # the replaced files' deletes went with them; the one for id 5 stays
    assert len(deletes) == 1


def test_the_tasks_read_the_plans_files_with_their_deletes(tmp_path: Path) -> None:
    t = _table(tmp_path, 2, "cat", appends=3)
    delete_rows(t, "id = -98 or id = -3")
    t = Table.load(t.location)
    _, _, groups = plan_compaction(t, None, CompactOptions(rewrite_all=True, min_input_files=1))
    assert groups
    for g in groups:
        inputs = [f for task in g.tasks for f in task.inputs]
        assert [f.path for f in inputs] == [p.path for p in g.files]
        for f, p in zip(inputs, g.files):
            assert f.deletes == p.deletes  # the planner's delete files, as attached
            assert f.data_sequence_number == p.data_sequence_number
            assert f.file_size_in_bytes == p.file_size_in_bytes
            assert str(f.residual) == "true"  # read whole
            d = p.data_file()  # what the commit removes: the file as its manifest lists it
            assert d.manifest_path == p.manifest_path and d.spec_id == p.spec_id
    # a null partition is a group of its own
    assert (None,) in {g.partition for g in groups}
    assert any(f.deletes for g in groups for f in g.files)


@pytest.mark.parametrize("fv", [2, 3])
def test_compacting_delete_files_plans_once_and_reads_no_manifest(tmp_path: Path, monkeypatch,
                                                                  fv: int) -> None:
    t = _table(tmp_path, fv, "cat", appends=3)
    for k in (-99, -98, -60, -59, 1, 2, 3, 4, 5, 6):  # many small delete files (v2)
        delete_rows(Table.load(t.location), f"id = {k}")
    delete_rows(Table.load(t.location), "id >= 0")  # the last append's files gone: dangling
    before = id_rows(t)
    counts = PlanCounts(monkeypatch)
    r = compact_deletes(Table.load(t.location), engine=InProcess(), min_input_files=2)
    assert counts.planned == 1 and counts.ops_manifest_reads == []
    assert r.committed and r.dangling_delete_files
    assert bool(r.rewritten_delete_files) == (fv == 2)  # deletion vectors are never merged
    assert id_rows(t) == before
    live_paths = {p for (c, p, _) in live_entries_by_key(t) if c == DATA}
    for (c, _, _), (e, _) in live_entries_by_key(t).items():
        if c == POSITION_DELETES and e.data_file.referenced_data_file is not None:
            assert e.data_file.referenced_data_file in live_paths


# -- the dangling rule ---------------------------------------------------------------------------


def _delete(content: int, partition: tuple, spec_id: int = 1, target: str | None = None,
            lo: str | None = None, hi: str | None = None) -> DataFile:
    bounds = lambda v: {DELETE_FILE_PATH_ID: v.encode()} if v is not None else None  # noqa: E731
    return DataFile(content, "del.parquet", "PARQUET", partition, 1, 10, spec_id=spec_id,
                    referenced_data_file=target, lower_bounds=bounds(lo), upper_bounds=bounds(hi),
                    equality_ids=(1,) if content == EQUALITY_DELETES else None)


def _live(*files: tuple[int, tuple, str, int]) -> LiveDataFiles:
    live = LiveDataFiles()
    for spec_id, partition, path, seq in files:
        live.add(spec_id, partition, path, seq)
    return live


@pytest.mark.parametrize("f,seq,live,dangling", [
    # a delete naming its data file: dangling when the file is gone or newer than the delete
    (_delete(POSITION_DELETES, ("a",), target="f1"), 5, _live((1, ("a",), "f1", 5)), False),
    (_delete(POSITION_DELETES, ("a",), target="f1"), 5, _live((1, ("a",), "f1", 6)), True),
    (_delete(POSITION_DELETES, ("a",), target="f1"), 5, _live((1, ("a",), "f2", 1)), True),
    (_delete(POSITION_DELETES, ("a",), lo="f1", hi="f1"), 5, _live((1, ("a",), "f1", 2)), False),
    (_delete(POSITION_DELETES, ("a",), lo="f1", hi="f1"), 5, _live((1, ("a",), "f2", 2)), True),
    # a partition-wide position delete: a live file at or below its sequence number, of its
    # spec and partition, within its file_path bounds
    (_delete(POSITION_DELETES, ("a",)), 5, _live((1, ("a",), "x", 5)), False),
    (_delete(POSITION_DELETES, ("a",)), 5, _live((1, ("a",), "x", 6), (1, ("b",), "y", 1)), True),
    (_delete(POSITION_DELETES, ("a",)), 5, _live((0, ("a",), "x", 1)), True),  # other spec
    (_delete(POSITION_DELETES, ("a",), lo="m", hi="p"), 5, _live((1, ("a",), "z", 1)), True),
    (_delete(POSITION_DELETES, ("a",), lo="m", hi="p"), 5, _live((1, ("a",), "n", 1)), False),
    (_delete(POSITION_DELETES, (None,)), 5, _live((1, (None,), "x", 5)), False),  # null partition
    (_delete(POSITION_DELETES, (None,)), 5, _live((1, ("a",), "x", 1)), True),
    # -0.0 and 0.0 are two partitions
    (_delete(POSITION_DELETES, (-0.0,)), 5, _live((1, (0.0,), "x", 1)), True),
    (_delete(POSITION_DELETES, (-0.0,)), 5, _live((1, (-0.0,), "x", 1)), False),
    (_delete(POSITION_DELETES, (float("nan"),)), 5, _live((1, (float("nan"),), "x", 1)), False),
    # an equality delete: a strictly older live file in its partition
    (_delete(EQUALITY_DELETES, ("a",)), 5, _live((1, ("a",), "x", 4)), False),
    (_delete(EQUALITY_DELETES, ("a",)), 5, _live((1, ("a",), "x", 5)), True),
    (_delete(EQUALITY_DELETES, ("a",)), 5, _live((1, ("b",), "x", 1)), True),
    (_delete(EQUALITY_DELETES, (-0.0,)), 5, _live((1, (0.0,), "x", 1)), True),
    # a global one (unpartitioned spec 0): anywhere in the table
    (_delete(EQUALITY_DELETES, (), spec_id=0), 5, _live((1, ("b",), "x", 4)), False),
    (_delete(EQUALITY_DELETES, (), spec_id=0), 5, _live((1, ("b",), "x", 5)), True),
    (_delete(EQUALITY_DELETES, (), spec_id=0), 5, _live(), True),
    (_delete(DATA, ("a",)), 5, _live(), False),  # not a delete file
])
def test_dangling_rule(f: DataFile, seq: int, live: LiveDataFiles, dangling: bool) -> None:
    assert is_dangling(f, seq, live, {0}) is dangling


def test_dangling_global_equality_delete_with_unread_older_files() -> None:
    f = _delete(EQUALITY_DELETES, (), spec_id=0)
    live = _live((1, ("b",), "x", 9))
    assert is_dangling(f, 5, live, {0})
    live.floor = 3  # files not added here may be older than the delete
    assert not is_dangling(f, 5, live, {0})
    live.floor = 5
    assert is_dangling(f, 5, live, {0})


@pytest.mark.parametrize("fv", [2, 3])
def test_both_compactions_find_the_same_dangling_deletes(tmp_path: Path, monkeypatch,
                                                         fv: int) -> None:
    """One rule: the delete files a data compaction removes with the files it replaces are
    those ``compact --deletes`` finds dangling once the same files are replaced without them."""
    found = []
    for name, with_dangling in (("a", True), ("b", False)):
        t = _table(tmp_path / name, fv, "cat", appends=3)
        for k in (-99, -98, -61, 1):  # per-file position deletes or deletion vectors
            delete_rows(Table.load(t.location), f"id = {k}")
        real = RewriteFilesProducer.__init__

        def init(self, *a: Any, real: Any = real, keep: bool = with_dangling, **k: Any) -> None:
            k.setdefault("remove_dangling_deletes", keep)
            real(self, *a, **k)

        monkeypatch.setattr(RewriteFilesProducer, "__init__", init)
        before = id_rows(t)
        r = compact_table(Table.load(t.location), "id < 0",
                          CompactOptions(rewrite_all=True, min_input_files=1), engine=InProcess())
        monkeypatch.undo()
        assert r.committed and id_rows(t) == before
        if with_dangling:
            found.append(r.removed_delete_files)
        else:
            assert r.removed_delete_files == 0
            d = compact_deletes(Table.load(t.location), engine=InProcess())
            assert id_rows(t) == before
            found.append(len(d.dangling_delete_files))
        # what is left: only the delete file of id 1 (its file was not rewritten)
        left = [e for (c, _, _), (e, _) in live_entries_by_key(t).items() if c != DATA]
        assert len(left) == 1
    assert found[0] == found[1] > 0


# -- merging on compaction -----------------------------------------------------------------------


@pytest.mark.parametrize("props,expected", [
    ({"commit.manifest.min-count-to-merge": "3"}, 1),  # all data manifests merged into one
    # below the default count of 100: the new one, the five untouched and the two rewritten
    # with their entries deleted (the reference keeps them for this snapshot too)
    ({}, 1 + 7),
    (dict(NO_MERGE, **{"commit.manifest.min-count-to-merge": "3"}), 1 + 7),
])
def test_compaction_commit_merges_manifests(tmp_path: Path, props: dict, expected: int) -> None:
    t = _table(tmp_path, 2, None, appends=7, properties=props)
    start = Table.load(t.location).metadata.current_snapshot()
    before = id_rows(t)
    kept_seqs = sorted(e.sequence_number for (c, p, _), (e, _) in live_entries_by_key(t).items()
                       if c == DATA)[2:]  # the first two appends' files are replaced
    r = compact_table(Table.load(t.location), "id < 0",
                      CompactOptions(rewrite_all=True, min_input_files=2), engine=InProcess())
    assert r.committed and r.rewritten_data_files == 2
    data = [m for m in _manifests(t) if m.content == MANIFEST_DATA]
    assert len(data) == expected
    assert id_rows(t) == before
    # merged or not, the new file keeps the starting snapshot's data sequence number and gets
    # the new snapshot's file sequence number; the others keep theirs
    t = Table.load(t.location)
    snap = t.metadata.current_snapshot()
    entries = [e for (c, _, _), (e, _) in live_entries_by_key(t).items() if c == DATA]
    (new,) = [e for e in entries if e.snapshot_id == snap.snapshot_id]
    assert (new.sequence_number, new.file_sequence_number) == (start.sequence_number,
                                                               snap.sequence_number)
    assert sorted(e.sequence_number for e in entries if e is not new) == kept_seqs
    assert snap.summary["operation"] == "replace"
    assert snap.summary["deleted-data-files"] == "2" and snap.summary["added-data-files"] == "1"
