"""`icectl delete`: metadata-only drops, merge-on-read position deletes, refusals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icectl.errors import InvalidInput, UnsupportedFeature
from icectl.io import avro
from icectl.ops.delete_rows import delete_rows
from icectl.ops.write import write_rows
from icectl.scan.reader import open_scan
from icectl.spec.manifests import DELETED, POSITION_DELETES
from icectl.spec.values import from_bytes
from icectl.spec.types import STRING
from icectl.table.table import Table

from tests.ops.test_write import make_table


def _rows(table: Table, filt: str | None = None) -> list[tuple]:
    scan = open_scan(Table.load(table.location), filt)
    out = []
    for b in scan.batches():
        out += list(zip(*(b.column(i).to_pylist() for i in range(b.num_columns))))
    return sorted(out)


def _entries(table: Table):
    t = Table.load(table.location)
    snap = t.metadata.current_snapshot()
    out = []
    for m in avro.load_manifest_list(t.io, snap.manifest_list, t.metadata.format_version):
        out += [(m.content, e) for e in avro.load_manifest(t.io, m)]
    return out


def _files(table: Table) -> set[str]:
    return {str(p) for p in Path(table.location).rglob("*") if p.is_file()}


@pytest.fixture()
def table(tmp_path: Path) -> Table:
    t = make_table(tmp_path, "id long, cat string", partition="cat")
    write_rows(t, pa.table({"id": pa.array(range(0, 10), pa.int64()),
                            "cat": ["a"] * 5 + ["b"] * 5}))
    return Table.load(t.location)


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


def test_copy_on_write_and_v3_refused_nothing_written(tmp_path: Path, table: Table) -> None:
    before = _files(table)
    with pytest.raises(UnsupportedFeature, match="merge-on-read"):
        delete_rows(table, "id = 1", mode="copy-on-write")
    assert _files(table) == before
    t3 = make_table(tmp_path / "v3", "id long", fv=3)
    write_rows(t3, pa.table({"id": pa.array([1, 2], pa.int64())}))
    t3 = Table.load(t3.location)
    with pytest.raises(UnsupportedFeature, match="v3"):
        delete_rows(t3, "id = 1")
    r = delete_rows(t3, "id > 0")  # a whole-file delete needs no deletion vector
    assert r.committed and _rows(t3) == []


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "icectl", *args], capture_output=True, text=True)


def test_cli_delete_json_and_unknown_column(table: Table) -> None:
    before = _files(table)
    p = _cli("delete", table.location, "--filter", "nosuch = 1")
    assert p.returncode == 2 and p.stdout == ""
    assert len(p.stderr.strip().splitlines()) == 1 and "nosuch" in p.stderr
    assert _files(table) == before
    p = _cli("delete", table.location, "--filter", "id = 4", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["committed"] and out["deleted-positions"] == 1 and out["operation"] == "delete"
    assert (4, "a") not in _rows(table)
    p = _cli("delete", table.location, "--filter", "id = 5", "--mode", "copy-on-write")
    assert p.returncode == 9 and "merge-on-read" in p.stderr
