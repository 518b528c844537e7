"""The replace / overwrite producers: which delete files a rewrite removes, sequence numbers,
validation against the starting snapshot."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from icectl.errors import CommitConflict
from icectl.spec.manifests import ADDED, DATA, EQUALITY_DELETES, POSITION_DELETES, DataFile
from icectl.table.commit.row_delta import RowDeltaProducer
from icectl.table.commit.rewrite import OverwriteFilesProducer, RewriteFilesProducer
from icectl.table.table import Table

from support.tables import empty_table, with_files
from tests.ops.ops_support import live_entries

PATH_ID = 2147483546


def _table(tmp_path: Path) -> Table:
    t = empty_table(tmp_path / "t", "id long, cat string", partition="cat",
                    properties={"write.delete.mode": "merge-on-read"})
    return with_files(t, 2, lambda i: {"id": pa.array([1, 2, 3, 4], pa.int64()),
                                       "cat": ["a", "a", "b", "b"]})


def _data(t: Table) -> list[DataFile]:
    return [e.data_file for c, e in live_entries(t.location) if e.data_file.content == DATA]


def _delete(t: Table, name: str, content: int, cat: str, *, lo: str | None = None,
            hi: str | None = None, referenced: str | None = None) -> DataFile:
    bounds = {} if lo is None else {"lower_bounds": {PATH_ID: lo.encode()},
                                    "upper_bounds": {PATH_ID: hi.encode()}}
    f = DataFile(content=content, file_path=str(Path(t.location, "data", name)),
                 file_format="PARQUET", partition=(cat,), record_count=1, file_size_in_bytes=10,
                 equality_ids=(1,) if content == EQUALITY_DELETES else None,
                 referenced_data_file=referenced, spec_id=0, **bounds)
    RowDeltaProducer(t, t.metadata.current_snapshot_id, added_deletes=[(f, f"cat={cat}")]).commit()
    return f


def test_only_deletes_nothing_can_need_are_removed(tmp_path: Path) -> None:
    t = _table(tmp_path)
    a1, a2 = sorted((f for f in _data(t) if f.partition == ("a",)), key=lambda f: f.file_path)
    b1, b2 = sorted((f for f in _data(t) if f.partition == ("b",)), key=lambda f: f.file_path)
    _delete(t, "pos-a1.parquet", POSITION_DELETES, "a", referenced=a1.file_path)
    _delete(t, "pos-a-range.parquet", POSITION_DELETES, "a", lo=a1.file_path, hi=a2.file_path)
    _delete(t, "pos-b1.parquet", POSITION_DELETES, "b", lo=b1.file_path, hi=b1.file_path)
    _delete(t, "eq-a.parquet", EQUALITY_DELETES, "a")
    _delete(t, "eq-b.parquet", EQUALITY_DELETES, "b")
    t = Table.load(t.location)
    start = t.metadata.current_snapshot()
    new = DataFile(content=DATA, file_path=str(Path(t.location, "data", "cat=a", "new.parquet")),
                   file_format="PARQUET", partition=("a",), record_count=4,
                   file_size_in_bytes=100, spec_id=0)
    p = RewriteFilesProducer(t, starting_snapshot_id=start.snapshot_id,
                             removed=[a1.file_path, a2.file_path], added=[(new, "cat=a")])
    p.commit()
    left = sorted(Path(e.data_file.file_path).name for _, e in live_entries(t.location)
                  if e.data_file.content != DATA)
    # partition a was rewritten whole: its deletes are gone; b's stay (b1 is still live)
    assert left == ["eq-b.parquet", "pos-b1.parquet"]
    assert sorted(Path(f.file_path).name for f in p.removed_deletes) == [
        "eq-a.parquet", "pos-a-range.parquet", "pos-a1.parquet"]
    added = [e for _, e in live_entries(t.location) if e.data_file.file_path == new.file_path]
    assert added[0].status == ADDED and added[0].sequence_number == start.sequence_number
    s = t.metadata.current_snapshot().summary
    assert s["operation"] == "replace" and s["removed-equality-delete-files"] == "1"
    assert s["removed-position-delete-files"] == "2" and s["deleted-data-files"] == "2"


def test_a_delete_still_needed_by_a_file_left_out_stays(tmp_path: Path) -> None:
    t = _table(tmp_path)
    a1, a2 = sorted((f for f in _data(t) if f.partition == ("a",)), key=lambda f: f.file_path)
    _delete(t, "pos-a-range.parquet", POSITION_DELETES, "a", lo=a1.file_path, hi=a2.file_path)
    _delete(t, "eq-a.parquet", EQUALITY_DELETES, "a")
    t = Table.load(t.location)
    p = RewriteFilesProducer(t, starting_snapshot_id=t.metadata.current_snapshot_id,
                             removed=[a1.file_path])
    p.commit()
    assert p.removed_deletes == []  # a2 is older than both and inside the path bounds


def test_lost_race_validation(tmp_path: Path) -> None:
    t = _table(tmp_path)
    a1 = sorted((f for f in _data(t) if f.partition == ("a",)), key=lambda f: f.file_path)[0]
    stale = Table.load(t.location)
    start = stale.metadata.current_snapshot_id
    _delete(Table.load(t.location), "eq-late.parquet", EQUALITY_DELETES, "a")
    # a rewrite keeping the starting sequence number ignores new equality deletes ...
    RewriteFilesProducer(Table.load(t.location), starting_snapshot_id=start,
                         removed=[a1.file_path]).commit()
    # ... a copy-on-write overwrite does not; and a removed input is a conflict
    t2 = _table(tmp_path / "two")
    b1 = [f for f in _data(t2) if f.partition == ("b",)][0]
    start = t2.metadata.current_snapshot_id
    _delete(Table.load(t2.location), "eq-late.parquet", EQUALITY_DELETES, "b")
    with pytest.raises(CommitConflict, match="equality"):
        OverwriteFilesProducer(Table.load(t2.location), starting_snapshot_id=start,
                               removed=[b1.file_path]).commit()
    RewriteFilesProducer(Table.load(t2.location), starting_snapshot_id=start,
                         removed=[b1.file_path]).commit()
    with pytest.raises(CommitConflict, match="removed|no longer live"):
        RewriteFilesProducer(Table.load(t2.location), starting_snapshot_id=start,
                             removed=[b1.file_path]).commit()
