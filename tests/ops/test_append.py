"""append_files: partition inference, name mapping, formats, and every refusal leaving the table
as it was."""

from __future__ import annotations

import datetime as dt
import json
import os
from decimal import Decimal

import fastavro
import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

from icectl.errors import InvalidInput, NotFound, ValidationError
from icectl.io.manifest import records as avro
from icectl.ops.write.append import NAME_MAPPING_PROPERTY, append_files
from icectl.spec.partition_path import parse_partition_value, partition_path
from icectl.spec.partitioning import PartitionField
from icectl.spec.transforms import parse_transform
from icectl.spec.types import DATE, LONG, STRING, TIMESTAMPTZ
from icectl.table.table import Table
from support.tables import empty_table

UTC = dt.timezone.utc
SCHEMA = "id long not null, ts timestamptz, cat string, amount decimal(9, 2)"


def write(path, ids, ts=None, cat=None, amount=None, field_ids: bool = False) -> str:
    n = len(ids)
    ts = ts if ts is not None else [dt.datetime(2024, 1, 2, 10, tzinfo=UTC)] * n
    cat = cat if cat is not None else ["a"] * n
    amount = amount if amount is not None else [Decimal("1.50")] * n
    fields = [pa.field("id", pa.int64(), nullable=False), pa.field("ts", pa.timestamp("us", tz="UTC")),
              pa.field("cat", pa.string()), pa.field("amount", pa.decimal128(9, 2))]
    if field_ids:
        fields = [f.with_metadata({b"PARQUET:field_id": str(i + 1).encode()}) for i, f in enumerate(fields)]
    t = pa.table([pa.array(ids, pa.int64()), pa.array(ts, pa.timestamp("us", tz="UTC")),
                  pa.array(cat, pa.string()), pa.array(amount, pa.decimal128(9, 2))],
                 schema=pa.schema(fields))
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    pq.write_table(t, str(path))
    return str(path)


def files_of(table: Table) -> dict[str, tuple]:
    snap = table.metadata.current_snapshot()
    out = {}
    for m in avro.load_manifest_list(table.io, snap.manifest_list):
        for e in avro.load_manifest(table.io, m):
            out[e.data_file.file_path] = e.data_file
    return out


def state(table: Table) -> tuple:
    meta = sorted(os.listdir(os.path.join(table.location, "metadata")))
    return Table.load(table.location).version, meta


# -- partition inference -------------------------------------------------------------------------


@pytest.mark.parametrize("partition, expected", [
    ("days(ts)", (19724,)),
    ("hours(ts)", (19724 * 24 + 10,)),
    ("months(ts)", (648,)),
    ("years(ts)", (54,)),
    ("cat", ("a",)),
    ("truncate(1, cat)", ("a",)),
    ("bucket(4, id)", None),  # filled below: bucket of the single id
    ("truncate(10, id)", (40,)),
    ("amount", (Decimal("1.50"),)),
])
def test_partition_from_statistics(tmp_path, partition, expected) -> None:
    table = empty_table(tmp_path / "t", SCHEMA, partition=partition)
    path = write(tmp_path / "in" / "f.parquet", [42, 42])
    result = append_files(table, [path])
    got = files_of(table)[path].partition
    if expected is None:
        expected = (parse_transform("bucket[4]").apply(42, LONG),)
    assert got == expected
    assert result.added_files == 1 and result.added_records == 2


@pytest.mark.parametrize("partition, ids, ts", [
    ("days(ts)", [1, 2], [dt.datetime(2024, 1, 2, tzinfo=UTC), dt.datetime(2024, 1, 3, tzinfo=UTC)]),
    ("cat", [1, 2], None),
    ("truncate(10, id)", [1, 11], None),
])
def test_a_file_spanning_partitions_is_refused(tmp_path, partition, ids, ts) -> None:
    table = empty_table(tmp_path / "t", SCHEMA, partition=partition)
    good = write(tmp_path / "in" / "good.parquet", [1])
    cats = ["a", "b"] if partition == "cat" else None
    bad = write(tmp_path / "in" / "bad.parquet", ids, ts=ts, cat=cats)
    before = state(table)
    with pytest.raises(ValidationError, match="span several partitions"):
        append_files(table, [good, bad])
    assert state(table) == before


def test_nulls_and_values_span_two_partitions(tmp_path) -> None:
    table = empty_table(tmp_path / "t", SCHEMA, partition="cat")
    bad = write(tmp_path / "in" / "bad.parquet", [1, 2], cat=["a", None])
    with pytest.raises(ValidationError, match="null"):
        append_files(table, [bad])
    only_null = write(tmp_path / "in" / "n.parquet", [1, 2], cat=[None, None])
    append_files(table, [only_null])
    assert files_of(table)[only_null].partition == (None,)


def test_bucket_with_different_values_needs_the_path(tmp_path) -> None:
    table = empty_table(tmp_path / "t", SCHEMA, partition="bucket(1, id)")
    f = write(tmp_path / "in" / "f.parquet", [1, 2])
    with pytest.raises(ValidationError, match="cannot tell"):
        append_files(table, [f])
    g = write(tmp_path / "in" / "id_bucket=0" / "g.parquet", [1, 2])
    append_files(table, [g])
    assert files_of(table)[g].partition == (0,)


def test_hive_path_and_partition_option(tmp_path) -> None:
    table = empty_table(tmp_path / "t", SCHEMA, partition="days(ts), bucket(2, id)")
    b = parse_transform("bucket[2]").apply(1, LONG)
    f1 = write(tmp_path / "in" / "ts_day=2024-01-02" / f"id_bucket={b}" / "f1.parquet", [1, 1])
    f2 = write(tmp_path / "in" / "other" / "f2.parquet", [1, 1])
    append_files(table, [f1])
    append_files(table, [f2], partition_values={"id_bucket": str(b)})
    got = files_of(table)
    assert got[f1].partition == (19724, b) == got[f2].partition


def test_a_path_contradicting_the_statistics_is_refused(tmp_path) -> None:
    table = empty_table(tmp_path / "t", SCHEMA, partition="days(ts)")
    f = write(tmp_path / "in" / "ts_day=2024-01-05" / "f.parquet", [1])
    before = state(table)
    with pytest.raises(ValidationError, match="its path says ts_day=2024-01-05 but its rows have ts_day=2024-01-02"):
        append_files(table, [f])
    with pytest.raises(ValidationError, match="the given partition value"):
        append_files(table, [write(tmp_path / "in2" / "g.parquet", [1])], partition_values={"ts_day": "2024-01-09"})
    assert state(table) == before


def test_unknown_partition_option_field(tmp_path) -> None:
    table = empty_table(tmp_path / "t", SCHEMA, partition="days(ts)")
    f = write(tmp_path / "in" / "f.parquet", [1])
    with pytest.raises(NotFound, match="nope") as info:  # an unknown partition field
        append_files(table, [f], partition_values={"nope": "1"})
    assert info.value.argument == "partition_values"


@pytest.mark.parametrize("transform, source, text, value", [
    ("year", TIMESTAMPTZ, "2024", 54),
    ("month", TIMESTAMPTZ, "2024-02", 649),
    ("day", DATE, "2024-01-02", 19724),
    ("hour", TIMESTAMPTZ, "1970-01-02-03", 27),
    ("bucket[16]", LONG, "7", 7),
    ("truncate[3]", STRING, "abc", "abc"),
    ("identity", STRING, "a b", "a b"),
    ("identity", TIMESTAMPTZ, "2024-01-02T10:00:00Z", 1704189600000000),
    ("identity", STRING, "null", None),
])
def test_parse_partition_value(transform, source, text, value) -> None:
    pf = PartitionField(1, 1000, "p", parse_transform(transform))
    assert parse_partition_value(pf, source, text) == value


@pytest.mark.parametrize("transform, source, text", [
    ("bucket[16]", LONG, "16"), ("month", TIMESTAMPTZ, "2024-13"), ("truncate[3]", STRING, "abcd"),
    ("day", DATE, "yesterday"),
])
def test_parse_partition_value_refuses_bad_text(transform, source, text) -> None:
    pf = PartitionField(1, 1000, "p", parse_transform(transform))
    with pytest.raises(InvalidInput):
        parse_partition_value(pf, source, text)


def test_partition_path_escapes_like_java(tmp_path) -> None:
    table = empty_table(tmp_path / "t", SCHEMA, partition="cat, days(ts)")
    md = table.metadata
    assert partition_path(md.spec, md.schema, ("a b/c~", 19724)) == "cat=a+b%2Fc%7E/ts_day=2024-01-02"
    assert partition_path(md.spec, md.schema, (None, None)) == "cat=null/ts_day=null"


# -- schema matching, name mapping -----------------------------------------------------------------


def test_name_mapping_is_created_once_for_files_without_ids(tmp_path) -> None:
    table = empty_table(tmp_path / "t", SCHEMA)
    r = append_files(table, [write(tmp_path / "in" / "a.parquet", [1])])
    assert r.name_mapping_created
    mapping = json.loads(table.metadata.properties[NAME_MAPPING_PROPERTY])
    assert [m["names"] for m in mapping] == [["id"], ["ts"], ["cat"], ["amount"]]
    assert [m["field-id"] for m in mapping] == [1, 2, 3, 4]
    r2 = append_files(table, [write(tmp_path / "in" / "b.parquet", [2])])
    assert not r2.name_mapping_created


def test_files_with_field_ids_need_no_mapping(tmp_path) -> None:
    table = empty_table(tmp_path / "t", SCHEMA)
    r = append_files(table, [write(tmp_path / "in" / "a.parquet", [1], field_ids=True)])
    assert not r.name_mapping_created
    assert NAME_MAPPING_PROPERTY not in table.metadata.properties
    f = next(iter(files_of(table).values()))
    assert f.value_counts == {1: 1, 2: 1, 3: 1, 4: 1}
    assert f.null_value_counts == {1: 0, 2: 0, 3: 0, 4: 0}
    assert f.lower_bounds[1] == (1).to_bytes(8, "little")
    assert f.split_offsets == (4,)


def test_metrics_by_name(tmp_path) -> None:
    table = empty_table(tmp_path / "t", SCHEMA)
    path = write(tmp_path / "in" / "a.parquet", [5, 9], cat=["x", None])
    append_files(table, [path])
    f = files_of(table)[path]
    assert f.record_count == 2 and f.file_size_in_bytes == os.path.getsize(path)
    assert f.null_value_counts[3] == 1 and f.value_counts[3] == 2
    assert f.lower_bounds[1] == (5).to_bytes(8, "little") and f.upper_bounds[1] == (9).to_bytes(8, "little")
    assert f.lower_bounds[3] == b"x"


REQUIRED_ID = pa.field("id", pa.int64(), nullable=False)


@pytest.mark.parametrize("fields, arrays, message", [
    ([REQUIRED_ID, pa.field("extra", pa.int32())], [[1], [1]],
     "column 'extra' has field id None|'extra' has no field id"),
    ([pa.field("ts", pa.timestamp("us", tz="UTC"))], [[None]], "required table column 'id' is missing"),
    ([pa.field("id", pa.string(), nullable=False)], [["1"]], "cannot be read as long"),
    ([pa.field("id", pa.int64())], [[1, None]],
     "column 'id' is optional in the file and has 1 null\\(s\\), but table column 'id' is required"),
])
def test_files_that_do_not_fit_the_schema_are_refused(tmp_path, fields, arrays, message) -> None:
    table = empty_table(tmp_path / "t", SCHEMA)
    path = str(tmp_path / "in" / "bad.parquet")
    os.makedirs(os.path.dirname(path))
    schema = pa.schema(fields)
    pq.write_table(pa.table([pa.array(a, f.type) for a, f in zip(arrays, fields)], schema=schema), path)
    before = state(table)
    with pytest.raises(ValidationError, match=message):
        append_files(table, [write(tmp_path / "in" / "ok.parquet", [1]), path])
    assert state(table) == before


# -- refusals -------------------------------------------------------------------------------------


def test_missing_file_is_refused(tmp_path) -> None:
    table = empty_table(tmp_path / "t", SCHEMA)
    ok = write(tmp_path / "in" / "ok.parquet", [1])
    before = state(table)
    with pytest.raises(NotFound, match="nope.parquet"):
        append_files(table, [ok, str(tmp_path / "in" / "nope.parquet")])
    assert state(table) == before


def test_duplicates_in_the_input_and_in_the_table_are_refused(tmp_path) -> None:
    table = empty_table(tmp_path / "t", SCHEMA)
    a = write(tmp_path / "in" / "a.parquet", [1])
    b = write(tmp_path / "in" / "b.parquet", [2])
    before = state(table)
    with pytest.raises(ValidationError, match="given twice"):
        append_files(table, [a, b, "file://" + a])
    assert state(table) == before
    append_files(table, [a])
    before = state(table)
    with pytest.raises(ValidationError, match="already in the table"):
        append_files(table, [b, os.path.relpath(a)])
    assert state(table) == before


def test_empty_input_is_refused(tmp_path) -> None:
    with pytest.raises(InvalidInput):
        append_files(empty_table(tmp_path / "t", SCHEMA), [])


# -- other formats, several appends, v3 --------------------------------------------------------------


def test_orc_and_avro_files_with_record_counts(tmp_path) -> None:
    table = empty_table(tmp_path / "t", SCHEMA, partition="cat")
    o = str(tmp_path / "in" / "cat=a" / "x.orc")
    os.makedirs(os.path.dirname(o))
    orc.write_table(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "cat": ["a"] * 3}), o)
    a = str(tmp_path / "in" / "cat=b" / "y.data")
    os.makedirs(os.path.dirname(a))
    schema = {"type": "record", "name": "r", "fields": [{"name": "id", "type": "long"}]}
    with open(a, "wb") as fh:
        fastavro.writer(fh, schema, [{"id": i} for i in range(5)], sync_interval=20)
    with pytest.raises(InvalidInput, match="the file format") as info:
        append_files(table, [o, a])
    assert info.value.argument == "file_format"  # the CLI names its option (--format)
    append_files(table, [o])
    append_files(table, [a], file_format="avro")
    got = files_of(table)
    assert (got[o].file_format, got[o].record_count, got[o].partition) == ("ORC", 3, ("a",))
    assert (got[a].file_format, got[a].record_count, got[a].partition) == ("AVRO", 5, ("b",))


def test_v3_append_tracks_row_lineage(tmp_path) -> None:
    table = empty_table(tmp_path / "t", SCHEMA, partition="days(ts)", format_version=3)
    r1 = append_files(table, [write(tmp_path / "in" / "a.parquet", [1, 2, 3])])
    r2 = append_files(table, [write(tmp_path / "in" / "b.parquet", [4, 5])], summary_properties={"run": "7"})
    assert (r1.first_row_id, r1.added_rows, r2.first_row_id, r2.added_rows) == (0, 3, 3, 2)
    assert table.metadata.next_row_id == 5
    assert r2.summary["run"] == "7" and r2.summary["total-records"] == "5"
    assert r2.sequence_number == 2 and r2.parent_snapshot_id == r1.snapshot_id


def test_many_files_in_parallel_go_into_one_manifest(tmp_path) -> None:
    table = empty_table(tmp_path / "t", SCHEMA, partition="cat")
    paths = [write(tmp_path / "in" / f"f{i:03d}.parquet", [i], cat=[f"c{i % 7}"]) for i in range(60)]
    seen = []
    r = append_files(table, paths, max_workers=8, progress=lambda d, t: seen.append((d, t)))
    assert seen[-1] == (60, 60)
    assert len(r.manifests_written) == 1
    assert r.summary["changed-partition-count"] == "7"
    assert [f["file-path"] for f in r.files] == paths


# -- skip_existing against a concurrent writer ---------------------------------------------------------


def test_skip_existing_leaves_out_files_a_concurrent_commit_added(tmp_path) -> None:
    table = empty_table(tmp_path / "t", SCHEMA)
    c, d = write(tmp_path / "in" / "c.parquet", [1]), write(tmp_path / "in" / "d.parquet", [2])
    other = Table.load(table.location)

    def concurrent(done: int, total: int) -> None:  # footers read, commit not yet made
        if done == total:
            append_files(other, [c])

    res = append_files(table, [c, d], skip_existing=True, progress=concurrent, max_workers=1)
    assert res.committed and res.skipped_files == (c,) and [f["file-path"] for f in res.files] == [d]
    assert sorted(files_of(Table.load(table.location))) == sorted([c, d])
    # all of them added concurrently: nothing is committed, the result says so
    e = write(tmp_path / "in" / "e.parquet", [3])
    res = append_files(Table.load(table.location), [e], skip_existing=True, max_workers=1,
                       progress=lambda done, total: append_files(Table.load(table.location), [e]))
    assert not res.committed and res.skipped_files == (e,) and res.snapshot_id is None
    # without skip_existing the same race is refused
    f = write(tmp_path / "in" / "f.parquet", [4])
    with pytest.raises(ValidationError, match="already in the table"):
        append_files(Table.load(table.location), [f], max_workers=1,
                     progress=lambda done, total: append_files(Table.load(table.location), [f]))
