"""Change reads (`icectl changes`) and incremental scans (`icectl scan --from-snapshot`) against
a model of the rows each snapshot inserted and deleted: appends, merge-on-read deletes (position
deletes v2, deletion vectors v3), equality deletes, upserts (update pairs with --key),
copy-on-write rewrites (carry-overs left out), compaction skipped, --net."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest

from icectl.errors import InvalidInput, UnsupportedFeature, ValidationError
from icectl.ops.read.changes import read_changes
from icectl.ops.maintain.compact import CompactOptions, compact_table
from icectl.ops.delete.merge_on_read import delete_rows
from icectl.ops.delete.equality import delete_equality
from icectl.ops.delete.upsert import upsert_rows
from icectl.ops.write.rows import write_rows
from icectl.scan.reader import open_scan
from icectl.table.table import Table

from support.tables import MOR, empty_table
from clirun import icectl


def _head(t: Table) -> int:
    return Table.load(t.location).metadata.current_snapshot_id


def _changes(t: Table, start: int | None, end: int | None = None, **kw) -> list[tuple]:
    r = read_changes(Table.load(t.location), start, end, **kw)
    names = r.rows.column_names
    assert names[-3:] == ["_change_type", "_change_ordinal", "_commit_snapshot_id"]
    return sorted(tuple(row.values()) for row in r.rows.to_pylist())


def _build(tmp_path: Path, fv: int) -> tuple[Table, list[int]]:
    t = empty_table(tmp_path / "t", "id long, cat string, v string", partition="cat",
                    format_version=fv, properties=MOR)
    write_rows(t, pa.table({"id": pa.array(range(10), pa.int64()), "cat": ["a"] * 5 + ["b"] * 5,
                            "v": [f"v{i}" for i in range(10)]}))
    snaps = [_head(t)]
    write_rows(Table.load(t.location), pa.table({"id": pa.array([10, 11], pa.int64()),
                                                  "cat": ["a", "b"], "v": ["v10", "v11"]}))
    snaps.append(_head(t))
    delete_rows(Table.load(t.location), "id = 3", mode="merge-on-read")          # position delete / DV
    snaps.append(_head(t))
    upsert_rows(Table.load(t.location), pa.table({"id": pa.array([4], pa.int64()), "cat": ["b"],
                                                   "v": ["new4"]}), "id")  # moves to another partition
    snaps.append(_head(t))
    delete_rows(Table.load(t.location), "id = 7", mode="copy-on-write")          # rewrite: carry-overs
    snaps.append(_head(t))
    compact_table(Table.load(t.location), options=CompactOptions(rewrite_all=True))  # replace: skipped
    snaps.append(_head(t))
    delete_equality(Table.load(t.location), "id,cat", pa.table({"id": pa.array([10], pa.int64()),
                                                                "cat": ["a"]}))
    snaps.append(_head(t))
    return t, snaps


@pytest.mark.parametrize("fv", [2, 3])
def test_changes_of_every_kind_of_snapshot(tmp_path: Path, fv: int) -> None:
    t, s = _build(tmp_path, fv)
    ops = [Table.load(t.location).metadata.snapshot_by_id(i).operation for i in s]
    assert ops == ["append", "append", "delete", "overwrite", "overwrite", "replace", "delete"]
    got = _changes(t, s[0])
    assert got == sorted([
        (10, "a", "v10", "INSERT", 0, s[1]), (11, "b", "v11", "INSERT", 0, s[1]),
        (3, "a", "v3", "DELETE", 1, s[2]),
        (4, "a", "v4", "DELETE", 2, s[3]), (4, "b", "new4", "INSERT", 2, s[3]),
        (7, "b", "v7", "DELETE", 3, s[4]),
        (10, "a", "v10", "DELETE", 4, s[6]),
    ])
    keyed = _changes(t, s[0], keys=["id"])
    assert (4, "a", "v4", "UPDATE_BEFORE", 2, s[3]) in keyed
    assert (4, "b", "new4", "UPDATE_AFTER", 2, s[3]) in keyed
    assert len(keyed) == len(got)
    # net: 10 inserted then deleted in the range is gone
    net = _changes(t, s[0], net=True)
    assert net == sorted([r for r in got if r[0] != 10])
    # a sub-range, ending at a given snapshot; from the first snapshot when no start is given
    assert _changes(t, s[1], s[3]) == sorted([(3, "a", "v3", "DELETE", 0, s[2]),
                                             (4, "a", "v4", "DELETE", 1, s[3]),
                                             (4, "b", "new4", "INSERT", 1, s[3])])
    first = _changes(t, None, s[0])
    assert len(first) == 10 and all(r[3] == "INSERT" and r[5] == s[0] for r in first)


def test_update_pairs_need_a_unique_key_and_net_excludes_keys(tmp_path: Path) -> None:
    t, s = _build(tmp_path, 2)
    with pytest.raises(InvalidInput, match="net changes cannot be combined"):
        read_changes(Table.load(t.location), s[0], net=True, keys="id")
    # 'cat' is no key: the copy-on-write snapshot deletes row 7 only (carry-overs are gone), but
    # the first append inserts five rows per cat: fine (no deletes); deleting 2 rows of one cat
    # in one snapshot is refused
    delete_rows(Table.load(t.location), "id in (0, 1)", mode="merge-on-read")
    with pytest.raises(InvalidInput, match="the key columns must identify a row"):
        read_changes(Table.load(t.location), s[-1], keys="cat")
    with pytest.raises(ValidationError, match="not an ancestor"):
        read_changes(Table.load(t.location), s[-1], s[0])


def _scan_rows(t: Table, **kw) -> list[tuple]:
    scan = open_scan(Table.load(t.location), **kw)
    out = []
    for b in scan.batches():
        out += list(zip(*(b.column(i).to_pylist() for i in range(b.num_columns))))
    return sorted(out)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return icectl(*args)



def test_cli_incremental_scan_and_changes(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "t", "id long, cat string", partition="cat", properties=MOR)
    write_rows(t, pa.table({"id": pa.array([1, 2], pa.int64()), "cat": ["a", "b"]}))
    a = _head(t)
    write_rows(Table.load(t.location), pa.table({"id": pa.array([3], pa.int64()), "cat": ["a"]}))
    b = _head(t)
    write_rows(Table.load(t.location), pa.table({"id": pa.array([4, 5], pa.int64()), "cat": ["c", "a"]}))
    c = _head(t)
    p = _cli("scan", t.location, "--from-snapshot", str(a), "--format", "jsonl")
    assert p.returncode == 0, p.stderr
    assert sorted(json.loads(x)["id"] for x in p.stdout.splitlines()) == [3, 4, 5]
    p = _cli("scan", t.location, "--from-snapshot", str(a), "--to-snapshot", str(b), "--format", "csv")
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["id,cat", "3,a"]
    p = _cli("scan", t.location, "--to-snapshot", str(b))
    assert p.returncode == 2 and p.stderr.splitlines() == [
        "icectl: error: --from-snapshot: an incremental read needs the snapshot to start after"]
    p = _cli("scan", t.location, "--from-snapshot", str(a), "--ref", "main")
    assert p.returncode == 2 and p.stderr.startswith("icectl: error: --from-snapshot: an incremental read "), p.stderr
    delete_rows(Table.load(t.location), "id = 3", mode="merge-on-read")
    p = _cli("scan", t.location, "--from-snapshot", str(a))
    assert p.returncode == 9 and "'delete' snapshot" in p.stderr, p.stderr
    with pytest.raises(UnsupportedFeature):
        from icectl.scan.plan_setup import check_append_range
        check_append_range(Table.load(t.location).metadata, a)
    p = _cli("changes", t.location, "--from", str(b), "--format", "jsonl")
    assert p.returncode == 0, p.stderr
    rows = [json.loads(x) for x in p.stdout.splitlines()]
    d = _head(t)
    assert sorted((r["id"], r["_change_type"], r["_change_ordinal"], r["_commit_snapshot_id"])
                  for r in rows) == [(3, "DELETE", 1, d), (4, "INSERT", 0, c), (5, "INSERT", 0, c)]
    p = _cli("changes", t.location, "--from", str(b), "--count")
    assert p.returncode == 0 and p.stdout.strip() == "3"
    p = _cli("changes", t.location, "--from", str(b), "--net", "--key", "id")
    assert p.returncode == 2 and "--net and --key" in p.stderr
    p = _cli("changes", t.location, "--from", str(b), "--format", "csv", "--key", "id")
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[0] == "id,cat,_change_type,_change_ordinal,_commit_snapshot_id"


def test_changes_read_older_files_with_the_current_schema(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "t", "id long, v string", properties=MOR)
    write_rows(t, pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"]}))
    start = _head(t)
    write_rows(Table.load(t.location), pa.table({"id": pa.array([3], pa.int64()), "v": ["c"]}))
    for args in (["schema", "rename", t.location, "v", "val"],
                 ["schema", "add", t.location, "extra", "int"]):
        p = _cli(*args)
        assert p.returncode == 0, p.stderr
    write_rows(Table.load(t.location), pa.table({"id": pa.array([4], pa.int64()), "val": ["d"],
                                                  "extra": pa.array([7], pa.int32())}))
    delete_rows(Table.load(t.location), "id = 1", mode="merge-on-read")
    r = read_changes(Table.load(t.location), start)
    assert r.rows.column_names[:3] == ["id", "val", "extra"]
    got = sorted((x["id"], x["val"], x["extra"], x["_change_type"], x["_change_ordinal"])
                 for x in r.rows.to_pylist())
    assert got == [(1, "a", None, "DELETE", 2), (3, "c", None, "INSERT", 0),
                   (4, "d", 7, "INSERT", 1)]
