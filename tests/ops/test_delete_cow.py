"""`icectl delete --mode copy-on-write`: files holding matching rows rewritten without them,
one overwrite (or delete) snapshot, no delete files, conflicts leave nothing behind."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest

from icectl.errors import CommitConflict
from icectl.ops.delete.copy_on_write import delete_copy_on_write
from icectl.ops.delete.merge_on_read import delete_rows
from icectl.ops.write.rows import write_rows
from icectl.spec.manifests import DATA
from icectl.table.table import Table

from support.tables import empty_table, small_files
from tests.ops.ops_support import InProcess, files_on_disk, live_entries, rows
from clirun import icectl


def test_default_mode_is_copy_on_write_and_rewrites_only_matching_files(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "t", "id long, cat string", partition="cat")  # no write.delete.mode
    for i in range(3):
        write_rows(Table.load(t.location), pa.table({
            "id": pa.array(range(i * 10, i * 10 + 10), pa.int64()), "cat": ["a"] * 5 + ["b"] * 5}))
    before = [e.data_file.file_path for _, e in live_entries(t.location)]
    r = delete_rows(Table.load(t.location), "id in (1, 13, 27)")
    assert r.mode == "copy-on-write" and r.committed
    assert r.summary["operation"] == "overwrite"
    assert r.summary["deleted-data-files"] == "3" and r.summary["added-data-files"] == "2"
    assert r.summary["deleted-records"] == "15" and r.summary["added-records"] == "12"
    assert r.position_delete_files == () and r.deleted_positions == 3
    after = [e.data_file for _, e in live_entries(t.location)]
    assert {f.content for f in after} == {DATA}  # no delete files
    kept = set(before) - set(r.files_with_row_deletes)
    assert len(kept) == 3 and kept <= {f.file_path for f in after}  # untouched files stay
    assert len(r.added_data_files) == 2  # one per partition: the kept rows written together
    assert rows(t.location) == sorted((i, "a" if i % 10 < 5 else "b") for i in range(30)
                                      if i not in (1, 13, 27))


def test_whole_files_dropped_give_a_delete_snapshot(tmp_path: Path) -> None:
    t = small_files(tmp_path / "t", n=2, properties={"write.delete.mode": "copy-on-write"})
    before = files_on_disk(t.location)
    r = delete_rows(Table.load(t.location), "cat = 'a'")
    assert r.summary["operation"] == "delete" and r.removed_records == 10
    assert r.added_data_files == () and len(r.removed_data_files) == 2
    assert all("/metadata/" in f for f in files_on_disk(t.location) - before)  # no data written
    # every row of a file matching (but not provable from metadata: the file's bounds 5..9 do
    # not prove an `in` list): the file goes, nothing added
    r = delete_rows(Table.load(t.location), "id in (5, 6, 7, 8, 9)")
    assert r.summary["operation"] == "delete" and r.summary["deleted-data-files"] == "1"
    assert len(r.rewritten_data_files) == 1 and not r.added_data_files
    assert rows(t.location) == [(i, "b") for i in range(15, 20)]


def test_existing_position_deletes_are_applied_and_their_files_removed(tmp_path: Path) -> None:
    t = small_files(tmp_path / "t", n=2)  # merge-on-read first
    delete_rows(Table.load(t.location), "id in (0, 11)")
    assert any(c == 1 for c, _ in live_entries(t.location))
    r = delete_copy_on_write(Table.load(t.location), "id in (2, 12)")
    assert r.summary["removed-position-delete-files"] == "2"
    assert all(c == 0 for c, _ in live_entries(t.location))
    assert rows(t.location) == sorted((i, "a" if i % 10 < 5 else "b") for i in range(20)
                                      if i not in (0, 11, 2, 12))


def test_no_matching_row_commits_nothing(tmp_path: Path) -> None:
    t = small_files(tmp_path / "t", n=2, properties={"write.delete.mode": "copy-on-write"})
    before = files_on_disk(t.location)
    r = delete_rows(Table.load(t.location), "id = 3 and cat = 'b'")  # bounds may match, no row
    assert not r.committed and files_on_disk(t.location) == before
    r = delete_rows(Table.load(t.location), "id = 3", dry_run=True)
    assert not r.committed and r.files_with_row_deletes and files_on_disk(t.location) == before


def test_concurrent_matching_append_is_a_conflict_at_serializable(tmp_path: Path) -> None:
    t = small_files(tmp_path / "t", n=2, properties={"write.delete.mode": "copy-on-write"})
    initial = files_on_disk(t.location)
    added: set[str] = set()

    def concurrent() -> None:
        b = files_on_disk(t.location)
        write_rows(Table.load(t.location), pa.table({"id": pa.array([3], pa.int64()), "cat": ["a"]}))
        added.update(files_on_disk(t.location) - b)

    with pytest.raises(CommitConflict, match="run it again"):
        delete_copy_on_write(Table.load(t.location), "id = 3", engine=InProcess(after=concurrent))
    assert files_on_disk(t.location) == initial | added
    # at snapshot isolation new data does not conflict
    p = _cli("properties", "set", t.location, "write.delete.isolation-level=snapshot")
    assert p.returncode == 0, p.stderr
    write_rows(Table.load(t.location), pa.table({"id": pa.array([3], pa.int64()), "cat": ["a"]}))
    r = delete_copy_on_write(Table.load(t.location), "id = 4", engine=InProcess(
        after=lambda: write_rows(Table.load(t.location), pa.table({
            "id": pa.array([4], pa.int64()), "cat": ["a"]}))))
    assert r.committed and (4, "a") in rows(t.location)  # the concurrent row is not deleted


def test_cli_copy_on_write(tmp_path: Path) -> None:
    t = small_files(tmp_path / "t", n=2)
    p = _cli("delete", t.location, "--filter", "id in (4, 5)", "--mode", "copy-on-write",
             "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["mode"] == "copy-on-write" and out["operation"] == "overwrite"
    assert len(out["added-data-files"]) == 2 and len(out["rewritten-data-files"]) == 2
    assert out["position-delete-files"] == [] and out["deleted-positions"] == 2
    p = _cli("delete", t.location, "--filter", "id = 1", "--mode", "sideways")
    assert p.returncode == 2 and "sideways" in p.stderr and p.stdout == ""


def _cli(*args: str) -> subprocess.CompletedProcess:
    return icectl(*args)



def test_filter_on_a_struct_field(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "t", "id long, loc struct<city: string, zip: int>")
    write_rows(Table.load(t.location), pa.table({
        "id": pa.array([1, 2, 3, 4], pa.int64()),
        "loc": [{"city": "a", "zip": 1}, {"city": "b", "zip": 2}, None, {"city": "a", "zip": 4}]}))
    r = delete_rows(Table.load(t.location), "loc.city = 'a' and loc.zip > 1")
    assert r.summary["operation"] == "overwrite" and r.deleted_positions == 1
    assert [row[0] for row in rows(t.location)] == [1, 2, 3]


def test_a_file_its_metrics_prove_is_dropped_unread_as_merge_on_read_drops_it(tmp_path: Path) -> None:
    """The whole-file proof is the same in both modes: bounds 5..9 prove `id >= 5 and id <= 9`
    for every row of the file, so copy-on-write removes it without reading or rewriting it."""
    t = small_files(tmp_path / "t", n=2, properties={"write.delete.mode": "copy-on-write"})
    before = files_on_disk(t.location)
    r = delete_rows(Table.load(t.location), "id >= 5 and id <= 9")
    assert r.summary["operation"] == "delete" and r.summary["deleted-data-files"] == "1"
    assert len(r.removed_data_files) == 1 and r.rewritten_data_files == () and r.added_data_files == ()
    assert r.removed_records == 5 and r.deleted_positions == 0
    assert all("/metadata/" in f for f in files_on_disk(t.location) - before)  # no data written
    assert rows(t.location) == sorted([(i, "a") for i in (0, 1, 2, 3, 4, 10, 11, 12, 13, 14)]
                                      + [(i, "b") for i in (15, 16, 17, 18, 19)])

