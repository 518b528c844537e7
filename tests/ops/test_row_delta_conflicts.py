"""A delete or upsert that loses the commit race is re-validated against the new head: it
commits when nothing it read changed (and, serializable, no matching data arrived), otherwise it
fails with CommitConflict (exit 6) and leaves no file behind.

The race is made deterministic: the operation runs on a Table object loaded before the other
writer committed, so it plans on the old snapshot, loses its first commit attempt and retries on
the new head."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from icectl.errors import CommitConflict
from icectl.ops.delete.merge_on_read import delete_rows
from icectl.ops.delete.equality import delete_equality
from icectl.ops.delete.upsert import upsert_rows
from icectl.ops.write.rows import write_rows
from icectl.table.commit.row_delta import row_delta_operation
from icectl.table.table import Table

from support.tables import MOR, empty_table, ten_rows, with_files
from tests.ops.ops_support import files_on_disk as _files, rows as _rows

SNAPSHOT_ISOLATION = {**MOR, "write.delete.isolation-level": "snapshot"}


def _table(tmp_path: Path, props: dict = MOR, fv: int = 2) -> Table:
    t = empty_table(tmp_path / "t", "id long, cat string", partition="cat", format_version=fv,
                    properties=props)
    return with_files(t, 1, ten_rows)


def _append(t: Table, ids: list[int], cat: str) -> None:
    write_rows(Table.load(t.location), pa.table({"id": pa.array(ids, pa.int64()), "cat": [cat] * len(ids)}))


def _head(t: Table):
    return Table.load(t.location).metadata.current_snapshot()


def test_operation_derived_as_the_reference() -> None:
    assert row_delta_operation(adds_data=True, adds_deletes=False, removes_data=False) == "append"
    assert row_delta_operation(adds_data=False, adds_deletes=True, removes_data=False) == "delete"
    assert row_delta_operation(adds_data=False, adds_deletes=False, removes_data=True) == "delete"
    assert row_delta_operation(adds_data=True, adds_deletes=True, removes_data=False) == "overwrite"
    assert row_delta_operation(adds_data=True, adds_deletes=False, removes_data=True) == "overwrite"


@pytest.mark.parametrize("fv", [2, 3])
def test_append_to_another_partition_lets_the_delete_commit(tmp_path: Path, fv: int) -> None:
    t = _table(tmp_path, fv=fv)
    stale = Table.load(t.location)
    _append(t, [1, 2], "c")  # id 1 again, but in partition c: cannot match cat = 'a'
    moved = _head(t)
    r = delete_rows(stale, "cat = 'a' and id in (1, 3)")
    assert r.committed and r.deleted_positions == 2
    assert r.parent_snapshot_id != moved.snapshot_id  # planned on the old head ...
    assert _head(t).parent_snapshot_id == moved.snapshot_id  # ... committed on the new one
    assert sorted(x for x, c in _rows(t) if c == "a") == [0, 2, 4]
    assert sorted(x for x, c in _rows(t) if c == "c") == [1, 2]


def test_file_removed_meanwhile_is_a_conflict_nothing_left(tmp_path: Path) -> None:
    t = _table(tmp_path)
    stale = Table.load(t.location)
    delete_rows(Table.load(t.location), "cat = 'a'")  # drops the 'a' data file whole
    before = _files(t)
    with pytest.raises(CommitConflict, match="was removed by snapshot"):
        delete_rows(stale, "id = 1")
    assert _files(t) == before
    assert _rows(t) == [(i, "b") for i in range(5, 10)]


@pytest.mark.parametrize("props", [MOR, SNAPSHOT_ISOLATION], ids=["serializable", "snapshot"])
def test_new_delete_for_a_read_file_is_a_conflict_at_every_level(tmp_path: Path, props: dict) -> None:
    t = _table(tmp_path, props)
    stale = Table.load(t.location)
    delete_rows(Table.load(t.location), "id = 2")  # a position delete for the 'a' file
    before = _files(t)
    with pytest.raises(CommitConflict, match="for data file"):
        delete_rows(stale, "id = 1")
    assert _files(t) == before


def test_v3_concurrent_deletion_vector_is_a_conflict(tmp_path: Path) -> None:
    t = _table(tmp_path, fv=3)
    stale = Table.load(t.location)
    delete_rows(Table.load(t.location), "id = 2")
    before = _files(t)
    with pytest.raises(CommitConflict):
        delete_rows(stale, "id = 1")
    assert _files(t) == before
    assert 1 in [i for i, _ in _rows(t)] and 2 not in [i for i, _ in _rows(t)]


def test_new_matching_data_conflicts_only_when_serializable(tmp_path: Path) -> None:
    t = _table(tmp_path / "s")
    stale = Table.load(t.location)
    _append(t, [1], "a")
    before = _files(t)
    with pytest.raises(CommitConflict, match="may hold rows"):
        delete_rows(stale, "id = 1")
    assert _files(t) == before

    t = _table(tmp_path / "n", SNAPSHOT_ISOLATION)
    stale = Table.load(t.location)
    _append(t, [1], "a")
    r = delete_rows(stale, "id = 1")
    assert r.committed
    # snapshot isolation: the row that arrived meanwhile was not seen, so it stays
    assert sorted(i for i, c in _rows(t) if c == "a") == [0, 1, 2, 3, 4]


def test_upsert_and_equality_delete_retry_and_conflict(tmp_path: Path) -> None:
    t = _table(tmp_path / "s")
    stale = Table.load(t.location)
    _append(t, [7], "a")  # another key: the upsert of key 1 commits on top
    r = upsert_rows(stale, pa.table({"id": pa.array([1], pa.int64()), "cat": ["a"]}), "id,cat")
    assert r.committed and _head(t).summary["operation"] == "overwrite"
    assert sorted(i for i, c in _rows(t) if c == "a") == [0, 1, 2, 3, 4, 7]

    stale, stale2 = Table.load(t.location), Table.load(t.location)
    _append(t, [3], "a")  # the same key arrives meanwhile: serializable refuses
    before = _files(t)
    with pytest.raises(CommitConflict, match="may hold rows"):
        upsert_rows(stale, pa.table({"id": pa.array([3], pa.int64()), "cat": ["a"]}), "id,cat")
    with pytest.raises(CommitConflict, match="may hold rows"):
        delete_equality(stale2, "id,cat",
                        pa.table({"id": pa.array([3], pa.int64()), "cat": ["a"]}))
    assert _files(t) == before

    t = _table(tmp_path / "n", SNAPSHOT_ISOLATION)
    stale = Table.load(t.location)
    _append(t, [3], "a")
    r = upsert_rows(stale, pa.table({"id": pa.array([3], pa.int64()), "cat": ["a"]}), "id,cat")
    assert r.committed
    # the deletes have the higher sequence number: both older rows with key 3 are gone
    assert sorted(i for i, c in _rows(t) if c == "a") == [0, 1, 2, 3, 4]


# A child process runs the real CLI with another writer's commit injected just before the
# delete's (or upsert's) commit: the lost race as a user meets it.
_RACE = """
import sys
import pyarrow as pa
import icectl.table.commit.row_delta as rd
from icectl.ops.write.rows import write_rows
from icectl.table.table import Table

location, ids, cat = sys.argv[1], [int(x) for x in sys.argv[2].split(",")], sys.argv[3]
original = rd.RowDeltaProducer.commit

def commit(self):
    write_rows(Table.load(location), pa.table({"id": pa.array(ids, pa.int64()), "cat": [cat] * len(ids)}))
    return original(self)

rd.RowDeltaProducer.commit = commit
sys.argv = ["icectl", *sys.argv[4:]]
from icectl.cli.app import main
main()
"""


def _race(t: Table, ids: str, cat: str, *args: str):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-c", _RACE, t.location, ids, cat, *args],
                          capture_output=True, text=True)


def test_cli_lost_race_exit_codes(tmp_path: Path) -> None:
    t = _table(tmp_path)
    p = _race(t, "1", "c", "delete", t.location, "--filter", "cat = 'a' and id = 1",
              "--mode", "merge-on-read", "--json")
    assert p.returncode == 0, p.stderr
    assert sorted(i for i, c in _rows(t) if c == "a") == [0, 2, 3, 4]

    before = _files(t)
    p = _race(t, "2", "a", "delete", t.location, "--filter", "id = 2", "--mode", "merge-on-read")
    assert p.returncode == 6, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "may hold rows" in lines[0] and p.stdout == ""
    after = _files(t)
    assert len(after - before) > 0  # the other writer's data file and metadata ...
    assert not [f for f in after - before if f.endswith("-deletes.parquet")]  # ... but none of ours

    rows = tmp_path / "up.csv"
    rows.write_text("id,cat\n3,a\n")
    before = _files(t)
    p = _race(t, "3", "a", "upsert", str(t.location), str(rows), "--key", "id,cat")
    assert p.returncode == 6 and "may hold rows" in p.stderr
    new = _files(t) - before
    assert not [f for f in new if f.endswith("-deletes.parquet")]
    assert len([f for f in new if f.endswith(".parquet")]) == 1  # only the other writer's
    # ... and its metadata: one metadata.json, one manifest list, one manifest (none of ours)
    meta = sorted(Path(f).name for f in new if "/metadata/" in f)
    assert len(meta) == 3 and sum(n.startswith("snap-") for n in meta) == 1, meta

