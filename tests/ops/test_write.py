"""`write_rows`: input reading and casting, vectorized transforms equal to the spec's, partition
paths and file names, sorting, rolling, metrics, one snapshot, refusals that leave nothing."""

from __future__ import annotations

import datetime as dt
import io
import json
import uuid
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icectl.errors import InvalidInput, NotFound, ValidationError
from icectl.io.manifest import records as avro
from icectl.io.formats.parquet_write import COMPRESSION, TARGET_FILE_SIZE, ParquetWriteOptions
from icectl.ops.compute import conform_to_schema, partition_groups, sort_indices
from icectl.ops.write.rows import write_rows
from icectl.spec.schema import Schema
from icectl.spec.transforms import parse_transform
from icectl.spec.types import DATE, DOUBLE, LONG, STRING, NestedField
from icectl.spec.values import from_bytes
from icectl.table.table import Table
from support.tables import empty_table

# -- tables ------------------------------------------------------------------------------------


def data_files(table: Table) -> list[Path]:
    return sorted(Path(table.location, "data").rglob("*.parquet"))


def live_entries(table: Table):
    table = Table.load(table.location)
    snap = table.metadata.current_snapshot()
    out = []
    for m in avro.load_manifest_list(table.io, snap.manifest_list, table.metadata.format_version):
        out += [e for e in avro.load_manifest(table.io, m) if e.is_live]
    return out


def test_csv_write_partitions_sorted_files_and_metrics(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "t",
                    "id long not null, ts timestamptz, cat string, price decimal(9,2), score double",
                    partition="days(ts), truncate(2, cat)", sort="id desc nulls last")
    csv = tmp_path / "in.csv"
    csv.write_text("ID,ts,cat,price,score\n"
                   "1,2024-01-02T03:04:05Z,alpha,1.25,NaN\n"
                   "5,2024-01-02T23:00:00+00:00,alpine,2,1.5\n"
                   "3,2024-01-02 01:00:00,alpaca,,0.5\n"
                   "2,2024-01-03T10:00:00-05:00,beta,7.1,\n"
                   "4,,\"\",3,2\n")
    res = write_rows(t, str(csv))
    assert res.rows_read == 5 and res.input_format == "csv"
    a = res.append
    assert a.added_files == 3 and a.added_records == 5
    assert a.summary["added-records"] == "5" and a.summary["changed-partition-count"] == "3"
    paths = sorted(f["partition"] for f in a.files)
    # -05:00 moves 10:00 to 15:00 UTC, still the 3rd; a null ts is its own partition
    assert paths == ["ts_day=2024-01-02/cat_trunc=al", "ts_day=2024-01-03/cat_trunc=be",
                     "ts_day=null/cat_trunc="]
    for f in a.files:
        name = Path(f["file-path"]).name
        assert name.startswith("00000-0-") and name.endswith("-0000%d.parquet" % (a.files.index(f) + 1))
        assert f["file-path"].startswith(str(Path(t.location, "data", *f["partition"].split("/"))))
    al = next(f for f in a.files if "al" in f["partition"])
    rows = pq.read_table(al["file-path"]).to_pylist()
    assert [r["id"] for r in rows] == [5, 3, 1]  # sorted id desc
    assert rows[0]["price"] == Decimal("2.00") and rows[1]["price"] is None
    # field ids in the file, the compression of a new table (zstd), iceberg.schema footer key
    meta = pq.ParquetFile(al["file-path"]).metadata
    assert meta.schema.to_arrow_schema().field("id").metadata[b"PARQUET:field_id"] == b"1"
    assert meta.row_group(0).column(0).compression == "ZSTD"
    assert json.loads(meta.metadata[b"iceberg.schema"])["fields"][0]["name"] == "id"
    # metrics as the manifest records them
    entries = {e.data_file.file_path: e.data_file for e in live_entries(t)}
    df = entries[al["file-path"]]
    assert df.record_count == 3 and df.partition == (19724, "al")
    assert from_bytes(LONG, df.lower_bounds[1]) == 1 and from_bytes(LONG, df.upper_bounds[1]) == 5
    assert df.null_value_counts[4] == 1 and df.value_counts[4] == 3
    assert df.nan_value_counts[5] == 1
    assert from_bytes(DOUBLE, df.upper_bounds[5]) == 1.5  # NaN stays out of the bounds
    assert df.sort_order_id == 1 and df.split_offsets == (4,)


def test_json_lines_nested_columns_from_stdin(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "t", "id int not null, tags list<string>, attrs map<string, long>, "
                    "loc struct<lat: double not null, lon: double>, u uuid, b binary, d date, tm time",
                    partition="bucket(3, u)")
    lines = [
        {"id": 1, "tags": ["a", "b"], "attrs": {"x": 1, "y": 2}, "loc": {"lat": 1.5, "lon": 2.5},
         "u": "f79c3e09-677c-4bbd-a479-3f349cb785e7", "b": "6869", "d": "2024-02-29", "tm": "10:11:12.5"},
        {"id": 2, "tags": None, "attrs": None, "loc": None, "u": None},
        {"Id": 3, "tags": [], "loc": {"LAT": -1.0}},
    ]
    stdin = io.BytesIO("\n".join(json.dumps(x) for x in lines).encode())
    res = write_rows(t, "-", stdin=stdin)
    assert res.input_format == "json" and res.append.added_records == 3
    got = sorted((r for f in data_files(t) for r in pq.read_table(f).to_pylist()), key=lambda r: r["id"])
    assert got[0]["attrs"] == [("x", 1), ("y", 2)] and got[0]["loc"] == {"lat": 1.5, "lon": 2.5}
    assert got[0]["u"] == uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
    assert got[0]["b"] == b"hi" and got[0]["d"] == dt.date(2024, 2, 29)  # binary text is hex
    assert got[0]["tm"] == dt.time(10, 11, 12, 500000)
    assert got[1]["tags"] is None and got[1]["loc"] is None
    assert got[2]["tags"] == [] and got[2]["loc"] == {"lat": -1.0, "lon": None}


def test_parquet_input_cast_and_several_writes_one_snapshot_each(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "t", "id long not null, v int, ts timestamp", partition="hours(ts)",
                    format_version=1)
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int32()), "v": pa.array([10, None], pa.int64()),
                             "ts": pa.array([0, 3_600_000], pa.timestamp("ms"))}), str(src))
    first = write_rows(t, str(src)).append
    second = write_rows(Table.load(t.location), str(src), summary_properties={"job": "x"}).append
    assert second.parent_snapshot_id == first.snapshot_id
    assert second.summary["total-records"] == "4" and second.summary["job"] == "x"
    assert {f["partition"] for f in second.files} == {"ts_hour=1970-01-01-00", "ts_hour=1970-01-01-01"}


def test_write_to_branch_and_v3_lineage(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "t", "id long", format_version=3)
    tbl = pa.table({"id": pa.array(range(5), pa.int64())})
    a = write_rows(t, tbl, branch="audit").append
    t = Table.load(t.location)
    assert t.metadata.refs["audit"].snapshot_id == a.snapshot_id
    assert t.metadata.current_snapshot_id is None
    assert a.first_row_id == 0 and a.added_rows == 5 and t.metadata.next_row_id == 5


def test_rolls_files_at_the_target_size(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "t", "id long, s string",
                    properties={TARGET_FILE_SIZE: "20000", COMPRESSION: "uncompressed"})
    n = 20_000
    tbl = pa.table({"id": pa.array(range(n), pa.int64()), "s": [f"row-{i:08d}" for i in range(n)]})
    a = write_rows(t, tbl).append
    assert a.added_files > 5 and a.added_records == n
    names = [Path(f["file-path"]).name for f in a.files]
    assert [n_[-13:-8] for n_ in names] == [f"{i:05d}" for i in range(1, len(names) + 1)]
    sizes = [f["file-size-in-bytes"] for f in a.files]
    assert all(s < 20000 * 2 for s in sizes), sizes
    got = [r["id"] for f in a.files for r in pq.read_table(f["file-path"]).to_pylist()]
    assert sorted(got) == list(range(n))
    assert pq.ParquetFile(a.files[0]["file-path"]).metadata.row_group(0).column(0).compression == "UNCOMPRESSED"


def test_compression_default_without_property_is_gzip() -> None:
    assert ParquetWriteOptions.from_properties({}).compression == "gzip"
    assert ParquetWriteOptions.from_properties({COMPRESSION: "ZSTD"}).compression == "zstd"
    with pytest.raises(Exception):
        ParquetWriteOptions.from_properties({COMPRESSION: "lzo"})


def test_sort_order_with_transforms_nulls_and_nan(tmp_path: Path) -> None:
    schema = Schema((NestedField(1, "a", STRING), NestedField(2, "x", DOUBLE), NestedField(3, "id", LONG)))
    t = empty_table(tmp_path / "t", "a string, x double, id long",
                    sort="truncate(1, a) asc nulls last, x desc nulls first")
    order = t.metadata.sort_order
    data = conform_to_schema(pa.table({
        "a": ["bz", None, "ba", "c", "b"], "x": [1.0, 2.0, float("nan"), None, 5.0], "id": [0, 1, 2, 3, 4]}), schema)
    idx = sort_indices(data, order, schema).to_pylist()
    # "b*" group first (x desc, NaN highest), then "c", then the null a
    assert [data.column("id")[i].as_py() for i in idx] == [2, 4, 0, 3, 1]


def test_refusals_commit_nothing_and_leave_no_files(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "t", "id long not null, n int, s struct<k: string not null>",
                    partition="identity(n)")
    before = sorted(p.name for p in Path(t.location, "metadata").iterdir())
    cases = [
        (pa.table({"n": [1]}), "required column id is missing"),
        (pa.table({"id": [1, None]}), "column id is required but 1 row(s) are null"),
        (pa.table({"id": [1], "s": [{"k": None}]}), "column s.k is required"),
        (pa.table({"id": [1], "ID": [2]}), "both match column id and both have values"),
    ]
    for tbl, why in cases:
        with pytest.raises(ValidationError, match=why.replace("(", r"\(").replace(")", r"\)")):
            write_rows(Table.load(t.location), tbl)
    values = [  # a value that does not fit: bad input (exit 2), named by row and column
        (pa.table({"id": [1], "n": ["x"]}), "the input: row 1, column n: 'x' does not fit int: not a number"),
        (pa.table({"id": [1, 2], "n": [1, 2**40]}),
         "the input: row 2, column n: 1099511627776 does not fit int: out of range (-2147483648 to 2147483647)"),
    ]
    for tbl, why in values:
        with pytest.raises(InvalidInput) as caught:
            write_rows(Table.load(t.location), tbl)
        assert str(caught.value) == why
    with pytest.raises(NotFound, match="input column zzz is not in the table") as caught:  # an unknown column
        write_rows(Table.load(t.location), pa.table({"id": [1], "zzz": [2]}))
    assert caught.value.override == "ignore_extra_columns"
    with pytest.raises(InvalidInput):
        write_rows(t, pa.table({"id": pa.array([], pa.int64())}))
    # a failure after files were written (the commit) deletes them
    from icectl.ops.write import rows as w

    real = w.append_data_files
    def boom(*a, **k):
        assert data_files(t), "files are written before the commit"
        raise ValidationError("commit failed")
    w.append_data_files = boom
    try:
        with pytest.raises(ValidationError, match="commit failed"):
            write_rows(t, pa.table({"id": [1, 2], "n": [1, 2]}))
    finally:
        w.append_data_files = real
    assert data_files(t) == []
    assert sorted(p.name for p in Path(t.location, "metadata").iterdir()) == before
    # extra columns can be dropped on request
    a = write_rows(t, pa.table({"id": [1], "zzz": [2]}), ignore_extra_columns=True).append
    assert a.added_records == 1 and a.files[0]["partition"] == "n=null"


def test_partition_groups_order_and_values() -> None:
    schema = Schema((NestedField(1, "d", DATE), NestedField(2, "s", STRING)))
    from icectl.spec.partitioning import PartitionField, PartitionSpec

    spec = PartitionSpec(0, (PartitionField(1, 1000, "d_month", parse_transform("month")),
                             PartitionField(2, 1001, "s", parse_transform("identity"))))
    data = conform_to_schema(pa.table({"d": pa.array([0, 40, None, 31], pa.date32()),
                                       "s": ["a", "a", "b", "a"]}), schema)
    groups = partition_groups(data, spec, schema)
    assert [(p, rows.to_pylist()) for p, rows in groups] == [
        ((None, "b"), [2]), ((0, "a"), [0]), ((1, "a"), [1, 3])]
