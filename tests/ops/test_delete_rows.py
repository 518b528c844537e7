"""`icectl delete`: metadata-only drops, merge-on-read position deletes, refusals."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icectl.errors import NotFound, UnsupportedFeature
from icectl.ops.delete.merge_on_read import delete_rows
from icectl.ops.write.rows import write_rows
from icectl.scan.reader import open_scan
from icectl.spec.manifests import DELETED, POSITION_DELETES
from icectl.spec.values import from_bytes
from icectl.spec.types import STRING
from icectl.table.table import Table

from support.tables import MOR, empty_table, small_files
from tests.ops.ops_support import entries as _entries, files_on_disk as _files, rows as _rows
from clirun import icectl

@pytest.fixture()
def table(tmp_path: Path) -> Table:
    return small_files(tmp_path / "t", 1)


def test_partition_proves_whole_file_dropped_unread(table: Table) -> None:
    r = delete_rows(table, "cat = 'a'")
    assert r.committed and len(r.removed_data_files) == 1 and r.removed_records == 5
    assert r.position_delete_files == () and r.summary["operation"] == "delete"
    assert r.summary["deleted-data-files"] == "1" and r.summary["deleted-records"] == "5"
    assert _rows(table) == [(i, "b") for i in range(5, 10)]
    removed = [e for _, e in _entries(table) if e.status == DELETED]
    assert [e.data_file.file_path for e in removed] == list(r.removed_data_files)


def test_metrics_prove_whole_file_dropped(table: Table) -> None:
    r = delete_rows(table, "id >= 5")  # the 'b' file's bounds are 5..9: strict match
    assert len(r.removed_data_files) == 1 and r.deleted_positions == 0
    assert _rows(table) == [(i, "a") for i in range(5)]


def test_merge_on_read_position_deletes(table: Table) -> None:
    r = delete_rows(table, "id in (1, 3, 7)")
    assert r.committed and r.removed_data_files == () and r.deleted_positions == 3
    assert len(r.position_delete_files) == 2  # one per data file
    s = r.summary
    assert s["operation"] == "delete"
    assert s["added-position-delete-files"] == "2" and s["added-delete-files"] == "2"
    assert s["added-position-deletes"] == "3" and s["total-position-deletes"] == "3"
    assert _rows(table) == [(i, c) for i, c in [(0, "a"), (2, "a"), (4, "a"), (5, "b"),
                                                (6, "b"), (8, "b"), (9, "b")]]
    deletes = [e for c, e in _entries(table) if c == 1]
    assert len(deletes) == 2
    for e in deletes:
        f = e.data_file
        assert f.content == POSITION_DELETES and f.file_format == "PARQUET"
        lo = from_bytes(STRING, f.lower_bounds[2147483546])
        assert lo == from_bytes(STRING, f.upper_bounds[2147483546]) == f.referenced_data_file
        t = pq.read_table(f.file_path)
        ids = [fl.metadata[b"PARQUET:field_id"] for fl in t.schema]
        assert ids == [b"2147483546", b"2147483545"]
        assert t.column("pos").to_pylist() == sorted(t.column("pos").to_pylist())
    # deleting again: already-deleted rows are not counted again
    r2 = delete_rows(Table.load(table.location), "id in (1, 2)")
    assert r2.deleted_positions == 1


def test_dry_run_writes_nothing(table: Table) -> None:
    before = _files(table)
    r = delete_rows(table, "id = 2 or cat = 'b'", dry_run=True)
    assert not r.committed and r.deleted_positions == 1 and len(r.removed_data_files) == 1
    assert _files(table) == before


def test_v1_row_deletes_refused_nothing_written(tmp_path: Path) -> None:
    t1 = empty_table(tmp_path / "v1" / "t", "id long", format_version=1, properties=MOR)
    write_rows(t1, pa.table({"id": pa.array([1, 2], pa.int64())}))
    t1 = Table.load(t1.location)
    before = _files(t1)
    with pytest.raises(UnsupportedFeature, match="v2"):
        delete_rows(t1, "id = 1")
    assert _files(t1) == before
    r = delete_rows(t1, "id > 0")  # a whole-file delete needs no delete file
    assert r.committed and _rows(t1) == []


def test_v3_deletion_vectors_merged_with_the_previous_one(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "v3" / "t", "id long, cat string", partition="cat", format_version=3,
                    properties=MOR)
    write_rows(t, pa.table({"id": pa.array(range(10), pa.int64()), "cat": ["a"] * 5 + ["b"] * 5}))
    r = delete_rows(Table.load(t.location), "id in (1, 6)")
    assert r.deleted_positions == 2 and len(set(r.position_delete_files)) == 1
    assert r.position_delete_files[0].endswith(".puffin")
    r = delete_rows(Table.load(t.location), "id in (2, 6)")
    assert r.deleted_positions == 1  # 6 was deleted already
    assert r.summary["removed-dvs"] == "1" and r.summary["added-dvs"] == "1"
    dvs = [e.data_file for c, e in _entries(t) if c == 1 and e.status != DELETED]
    assert len(dvs) == 2  # one per data file: the 'a' file's DV replaced by the merged one
    assert sorted(f.record_count for f in dvs) == [1, 2]
    assert {f.file_format for f in dvs} == {"PUFFIN"}
    assert _rows(t) == [(i, "a" if i < 5 else "b") for i in (0, 3, 4, 5, 7, 8, 9)]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return icectl(*args)



def test_cli_delete_json_and_unknown_column(table: Table) -> None:
    before = _files(table)
    p = _cli("delete", table.location, "--filter", "nosuch = 1")
    assert p.returncode == 3 and p.stdout == ""  # an unknown column is not found, in every command
    assert len(p.stderr.strip().splitlines()) == 1 and "nosuch" in p.stderr
    assert _files(table) == before
    p = _cli("delete", table.location, "--filter", "id = 4", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["committed"] and out["deleted-positions"] == 1 and out["operation"] == "delete"
    assert (4, "a") not in _rows(table)
    p = _cli("delete", table.location, "--filter", "id = 5", "--mode", "copy-on-write", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["mode"] == "copy-on-write" and out["operation"] == "overwrite"
    assert (5, "b") not in _rows(table) and out["position-delete-files"] == []


def test_deletion_vector_writer_round_trips_through_the_reader() -> None:
    import json as _json
    import random
    import struct

    from icectl.io.formats.puffin import (DV_BLOB_TYPE, PuffinBlob, deletion_vector_blob,
                                  parse_deletion_vector, puffin_file)

    rng = random.Random(7)
    cases = [[0], [5, 65535, 65536, 2**32 + 3, 2**40], rng.sample(range(150_000), 9_000)]
    for values in cases:  # arrays, an 8 KiB bitmap container, several 32-bit buckets
        assert parse_deletion_vector(deletion_vector_blob(values)) == sorted(values)
    blobs = [PuffinBlob(DV_BLOB_TYPE, deletion_vector_blob(v), (2147483645,), {"cardinality": str(len(v))})
             for v in cases]
    data, placed = puffin_file(blobs)
    assert data[:4] == data[-4:] == b"PFA1" and data[-8:-4] == b"\0\0\0\0"
    (n,) = struct.unpack("<I", data[-12:-8])
    footer = _json.loads(data[-12 - n:-12])
    assert data[-16 - n:-12 - n] == b"PFA1"
    for b, meta, v in zip(placed, footer["blobs"], cases):
        assert (meta["offset"], meta["length"]) == (b.offset, b.length)
        assert meta["snapshot-id"] == meta["sequence-number"] == -1
        assert parse_deletion_vector(data[b.offset:b.offset + b.length]) == sorted(v)


def test_branch_delete_and_conflict_leaves_nothing(table: Table) -> None:
    from icectl.errors import CommitConflict

    p = _cli("branch", "create", table.location, "dev")
    assert p.returncode == 0, p.stderr
    r = delete_rows(Table.load(table.location), "id = 0", branch="dev")
    assert r.committed and r.branch == "dev"
    assert (0, "a") in _rows(table)  # main is untouched
    stale = Table.load(table.location)
    before = _files(table)
    # a row matching the filter arrives meanwhile: serializable isolation refuses the delete
    write_rows(Table.load(table.location), pa.table({"id": pa.array([1], pa.int64()), "cat": ["a"]}))
    after_write = _files(table)
    assert after_write != before
    with pytest.raises(CommitConflict, match="run it again"):
        delete_rows(stale, "id = 1")
    assert _files(table) == after_write  # the position delete file written was removed
    with pytest.raises(NotFound, match="nosuch"):  # a missing ref is "not found" (exit 3)
        delete_rows(Table.load(table.location), "id = 1", branch="nosuch")


@pytest.mark.parametrize("partition", [None, "void(u)", "u", "bucket(4, u)", "s.v"])
@pytest.mark.parametrize("fv", [2, 3])
def test_merge_on_read_delete_of_a_table_with_uuid_columns(tmp_path: Path, partition: str | None,
                                                           fv: int) -> None:
    """icectl writes uuid columns as Arrow's uuid extension type (Parquet fixed[16] with the UUID
    logical type); the position finder reads them with the partition metadata column, whose
    tuple may hold a uuid (identity, void) - found by the differential fuzzer."""
    import uuid

    t = empty_table(tmp_path / "t",
                    "id long, u uuid, s struct<v: uuid>, l list<uuid>, m map<uuid, uuid>",
                    partition=partition, properties=MOR, format_version=fv)
    us = [uuid.UUID(int=i * 0x1234567890ABCDEF) for i in range(6)]
    rows = pa.table({
        "id": pa.array(range(6), pa.int64()),
        "u": pa.array([None if i == 2 else str(us[i]) for i in range(6)]),
        "s": pa.array([None if i == 3 else {"v": None if i == 4 else str(us[i])} for i in range(6)]),
        "l": pa.array([None if i == 1 else [str(us[i]), None] for i in range(6)]),
        "m": pa.array([None if i == 5 else [(str(us[i]), None if i % 2 else str(us[0]))] for i in range(6)],
                      pa.map_(pa.string(), pa.string())),
    })
    write_rows(t, rows)
    delete_rows(Table.load(t.location), "id in (0, 2, 3)", mode="merge-on-read")
    got = _rows(Table.load(t.location))
    assert [g[0] for g in got] == [1, 4, 5]
    assert got[0][1] == us[1] and got[0][3] is None and got[2][4] is None
    assert got[1][2] == {"v": None} and got[1][4] == [(us[4], us[0])]
    assert _rows(Table.load(t.location), f"u = uuid '{us[5]}'")[0][0] == 5
    # the metadata columns (_partition holds the uuid partition value) read back
    scan = open_scan(Table.load(t.location), None, with_metadata=True)
    batches = list(scan.batches())
    assert sum(b.num_rows for b in batches) == 3
    if partition == "u":
        parts = sorted((str(p["u"]) for b in batches for p in b.column("_partition").to_pylist()))
        assert parts == sorted(str(us[i]) for i in (1, 4, 5))
