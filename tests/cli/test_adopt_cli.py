"""`icectl migrate`, `icectl snapshot-table` and `icectl append --from-dir` through the CLI: a
Hive-style directory becomes a table whose rows, partitions and metrics come from the paths and
footers; bad layouts and values that contradict the files are refused with nothing written."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from clirun import icectl, icectl_json

from icectl.spec.hive_dirs import infer_partition_type
from icectl.spec.types import DATE, DOUBLE, INT, LONG, STRING, TIMESTAMPTZ, DecimalType
from icectl.table.table import Table


def _file(path: Path, table: pa.Table) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, str(path))
    return path


def _rows(ids, names) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "name": pa.array(names, pa.string())})


def _scan(location, *args: str) -> list[dict]:
    r = icectl("scan", str(location), *args, "--format", "jsonl")
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]

def _tree(root: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for dirpath, _dirs, names in os.walk(root):
        for n in names:
            st = (Path(dirpath) / n).stat()
            out[str((Path(dirpath) / n).relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return out


@pytest.fixture
def hive(tmp_path) -> Path:
    """Nested k=v directories with edge values, a _SUCCESS marker, a hidden file and a text file."""
    root = tmp_path / "hive"
    _file(root / "k=-5" / "d=1969-12-31" / "part-0.parquet", _rows([1, 2], ["a", "b"]))
    _file(root / "k=__HIVE_DEFAULT_PARTITION__" / "d=1900-01-01" / "part-0.parquet", _rows([3], ["c"]))
    _file(root / "k=7" / "d=2024-02-29" / "000000_0", _rows([4], ["d"]))  # Hive's names: no extension
    (root / "_SUCCESS").write_text("")
    (root / "k=7" / ".part-0.parquet.crc").write_bytes(b"crc")
    (root / "k=7" / "d=2024-02-29" / "notes.txt").write_text("not data")
    return root


def test_migrate_in_place(hive) -> None:
    out = icectl_json("migrate", str(hive), "--property", "owner=ops", "--json")
    assert out["location"] == str(hive) and out["mode"] == "migrate"
    assert out["schema"] == "id long, name string, k int, d date"
    assert out["partition-spec"] == "k AS k, d AS d" or "k" in out["partition-spec"]
    assert out["field-ids"] == "name-mapping"
    assert (out["added-files"], out["added-records"]) == (3, 4)
    assert out["properties"] == {"owner": "ops", "migrated": "true"}
    ignored = {Path(i["path"]).name: i["reason"] for i in out["ignored-files"]}
    assert ignored == {"_SUCCESS": "hidden", ".part-0.parquet.crc": "hidden", "notes.txt": "not a Parquet file"}
    md = Table.load(str(hive)).metadata
    assert json.loads(md.properties["schema.name-mapping.default"])[0]["names"] == ["id"]
    assert (hive / "metadata" / "v2.metadata.json").exists()
    rows = _scan(str(hive))
    got = sorted((r["id"], r["name"], r["k"], r["d"]) for r in rows)
    assert got == [(1, "a", -5, "1969-12-31"), (2, "b", -5, "1969-12-31"), (3, "c", None, "1900-01-01"),
                   (4, "d", 7, "2024-02-29")]
    # the partition columns come from the paths, so filters on them select by partition
    assert sorted(r["id"] for r in _scan(str(hive), "--filter", "k = -5")) == [1, 2]
    assert [r["id"] for r in _scan(str(hive), "--filter", "k is null")] == [3]
    assert [r["id"] for r in _scan(str(hive), "--filter", "d < '1950-01-01'")] == [3]
    entries = icectl_json("inspect", "entries", str(hive), "--json")
    files = [e["data-file"] for e in entries]  # metrics from the footers, by the table's ids
    assert len(files) == 3 and all(f["value-counts"] == {"1": f["record-count"], "2": f["record-count"]}
                                   and set(f["lower-bounds"]) == {"1", "2"} for f in files)
    # a second migrate of the same directory: a table is there already
    again = icectl("migrate", str(hive))
    assert again.exit_code == 4 and "already" in again.stderr


def test_snapshot_table_leaves_the_source_alone_and_disables_gc(hive, tmp_path) -> None:
    before = _tree(hive)
    loc = tmp_path / "wh" / "db" / "snap"
    out = icectl_json("snapshot-table", str(hive), str(loc), "--json")
    assert out["properties"] == {"snapshot": "true", "gc.enabled": "false"} and out["location"] == str(loc)
    assert _tree(hive) == before
    assert sorted(r["id"] for r in _scan(str(loc))) == [1, 2, 3, 4]
    # no command deletes the source's files: expire, orphans --delete, maintain, drop --purge
    for argv in (["expire", str(loc), "--older-than", "2100-01-01"],
                 ["orphans", str(loc), "--older-than", "2000-01-01", "--delete"],
                 ["drop", str(loc), "--purge"]):
        r = icectl(*argv)
        assert r.exit_code == 5 and "gc.enabled=false" in r.stderr, (argv, r.output)
    r = icectl("maintain", str(loc), "--json")
    assert r.exit_code in (0, 10, 15), r.output
    assert _tree(hive) == before
    # by identifier in a warehouse
    out = icectl_json("snapshot-table", str(hive), "db.snap2", "-w", str(tmp_path / "wh"), "--json")
    assert out["location"] == str(tmp_path / "wh" / "db" / "snap2")


@pytest.mark.parametrize("where", ["same", "inside", "outside-of"])
def test_snapshot_table_must_not_overlap_the_source(hive, where) -> None:
    loc = {"same": hive, "inside": hive / "snap", "outside-of": hive.parent}[where]
    before = _tree(hive.parent)
    r = icectl("snapshot-table", str(hive), str(loc))
    assert r.exit_code == 5 and len(r.stderr.strip().splitlines()) == 1, r.output
    assert _tree(hive.parent) == before


def test_partition_value_contradicting_the_file_is_refused(tmp_path) -> None:
    root = tmp_path / "bad"
    _file(root / "k=1" / "a.parquet", pa.table({"id": [1], "k": pa.array([1], pa.int32())}))
    _file(root / "k=2" / "b.parquet", pa.table({"id": [2], "k": pa.array([3], pa.int32())}))
    before = _tree(tmp_path)
    r = icectl("migrate", str(root))
    assert r.exit_code == 5, r.output
    assert "its path says k=2 but its rows have k=3" in r.stderr
    assert _tree(tmp_path) == before  # nothing written: no metadata/


def test_partition_column_in_the_files_too(tmp_path) -> None:
    root = tmp_path / "both"
    _file(root / "k=1" / "a.parquet", pa.table({"id": [1], "k": pa.array([1], pa.int64())}))
    _file(root / "k=-2" / "b.parquet", pa.table({"id": [2], "k": pa.array([-2], pa.int64())}))
    out = icectl_json("migrate", str(root), "--json")
    assert out["schema"] == "id long, k long"  # the file's column, not a second one
    assert sorted(r["k"] for r in _scan(str(root))) == [-2, 1]


def test_the_schema_is_the_union_of_the_files(tmp_path) -> None:
    """Later partitions with an added column and a widened type (as an evolving Hive table has):
    the union, the wider type; older files read the added column as null."""
    root = tmp_path / "evolved"
    _file(root / "d=2024-01-01" / "a.parquet", pa.table({"id": pa.array([1], pa.int32()), "v": [1.5]}))
    _file(root / "d=2024-01-02" / "b.parquet", pa.table({"id": pa.array([2**40], pa.int64()), "v": [2.5],
                                                         "note": ["new"]}))
    out = icectl_json("migrate", str(root), "--json")
    assert out["schema"] == "id long, v double, note string, d date"
    rows = sorted((r["id"], r["note"], r["d"]) for r in _scan(root))
    assert rows == [(1, None, "2024-01-01"), (2**40, "new", "2024-01-02")]
    bad = tmp_path / "clash"
    _file(bad / "d=1" / "a.parquet", pa.table({"id": pa.array([1], pa.int64())}))
    _file(bad / "d=2" / "b.parquet", pa.table({"id": ["x"]}))
    before = _tree(tmp_path)
    r = icectl("migrate", str(bad))
    assert r.exit_code == 5 and "does not fit column 'id'" in r.stderr, r.output
    assert _tree(tmp_path) == before


@pytest.mark.parametrize("layout, message", [
    ({"k=1/a.parquet": 1, "b.parquet": 2}, "conflicting partition directories"),
    ({"k=1/a.parquet": 1, "j=1/b.parquet": 2}, "conflicting partition directories"),
    ({"k=1/data/a.parquet": 1}, "is not a partition directory"),
    ({"k=1/k=2/a.parquet": 1}, "repeated"),
    ({"_SUCCESS": 0}, "no Parquet data files"),
])
def test_bad_layouts_are_refused(tmp_path, layout, message) -> None:
    root = tmp_path / "d"
    for rel, i in layout.items():
        if rel.endswith(".parquet"):
            _file(root / rel, _rows([i], ["x"]))
        else:
            root.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text("")
    before = _tree(tmp_path)
    for argv in (["migrate", str(root)], ["snapshot-table", str(root), str(tmp_path / "t")]):
        r = icectl(*argv)
        assert r.exit_code == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.output
        assert _tree(tmp_path) == before


def test_files_with_field_ids_keep_them(tmp_path) -> None:
    root = tmp_path / "ids"
    schema = pa.schema([pa.field("x", pa.int64(), metadata={b"PARQUET:field_id": b"7"}),
                        pa.field("y", pa.string(), metadata={b"PARQUET:field_id": b"3"})])
    _file(root / "p=a b" / "f.parquet", pa.table({"x": [1], "y": ["u"]}, schema=schema))
    _file(root / "p=c%2Fd" / "f.parquet", pa.table({"x": [2], "y": ["v"]}, schema=schema))
    _file(root / "p=e+f" / "f.parquet", pa.table({"x": [3], "y": ["w"]}, schema=schema))
    out = icectl_json("migrate", str(root), "--json")
    assert out["field-ids"] == "files"
    md = Table.load(str(root)).metadata
    assert [(f.field_id, f.name) for f in md.schema.fields] == [(7, "x"), (3, "y"), (8, "p")]
    assert md.last_column_id == 8 and "schema.name-mapping.default" not in md.properties
    rows = sorted((r["x"], r["y"], r["p"]) for r in _scan(str(root)))
    # Hive's escaping: %XX only (a space is a space, a plus a plus)
    assert rows == [(1, "u", "a b"), (2, "v", "c/d"), (3, "w", "e+f")]


def test_append_from_dir(tmp_path, hive) -> None:
    loc = str(tmp_path / "t")
    assert icectl("create", loc, "--schema", "id long, name string, k int, d date", "--partition", "k, d").exit_code == 0
    r = icectl("append", loc, "--from-dir", str(hive), "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["added-files"] == 3 and "skipped" in r.stderr
    assert sorted(x["id"] for x in _scan(loc, "--filter", "k = -5")) == [1, 2]
    # again: the files are in the table already (Java's check_duplicate_files)
    before = Table.load(loc).metadata_location
    again = icectl("append", loc, "--from-dir", str(hive))
    assert again.exit_code == 5 and "already in the table" in again.stderr
    assert Table.load(loc).metadata_location == before
    # a directory key that is not a partition field, and a partitioned directory into an
    # unpartitioned table, are refused
    other = tmp_path / "other"
    _file(other / "j=1" / "x.parquet", _rows([5], ["e"]))
    r = icectl("append", loc, "--from-dir", str(other))
    assert r.exit_code == 5 and "not partition fields" in r.stderr
    flat = str(tmp_path / "flat")
    assert icectl("create", flat, "--schema", "id long, name string").exit_code == 0
    r = icectl("append", flat, "--from-dir", str(hive))
    assert r.exit_code == 5 and "unpartitioned" in r.stderr
    assert icectl("append", flat, "--from-dir", str(tmp_path / "missing")).exit_code == 3


@pytest.mark.parametrize("values, expected", [
    (["1", "-5", "007", "+3"], INT),
    (["1", "4294967296"], LONG),
    (["-9223372036854775808"], LONG),
    (["9223372036854775808"], DecimalType(19, 0)),
    (["1", "123456789012345678901234"], DecimalType(24, 0)),
    (["1" * 39], DOUBLE),  # too many digits for a decimal: Double.parseDouble takes it
    (["1.5", "-0.0", "NaN", "Infinity", "2", "1e3"], DOUBLE),
    (["1969-12-31", "2024-02-29"], DATE),
    (["2024-02-30"], STRING),  # not a date
    (["2024-01-02 10:00:00", "1969-12-31 23:59:59.123456"], TIMESTAMPTZ),
    (["2024-01-02", "2024-01-02 10:00:00"], TIMESTAMPTZ),
    (["1", "2024-01-02"], STRING),
    (["4294967296", "1.5"], STRING),
    (["123456789012345678901234", "1.5"], STRING),
    (["__HIVE_DEFAULT_PARTITION__"], STRING),
    (["__HIVE_DEFAULT_PARTITION__", "3"], INT),
    (["null", "3"], STRING),
    (["a b", "3"], STRING),
])
def test_partition_type_inference(values, expected) -> None:
    assert infer_partition_type(values) == expected


def test_pyiceberg_reads_a_migrated_table(hive) -> None:
    """A peer reads the partition columns from the paths (identity partition values) and the
    other columns through the name mapping, as icectl does."""
    from pyiceberg.table import StaticTable

    icectl_json("migrate", str(hive), "--json")
    t = StaticTable.from_metadata(Table.load(str(hive)).metadata_location)
    rows = sorted(((r["id"], r["name"], r["k"], str(r["d"])) for r in t.scan().to_arrow().to_pylist()), key=repr)
    assert rows == sorted(((r["id"], r["name"], r["k"], r["d"]) for r in _scan(hive)), key=repr)
    assert sorted(r["id"] for r in t.scan(row_filter="k = -5").to_arrow().to_pylist()) == [1, 2]
