"""Manifests and manifest lists through Avro: round trips, inheritance, files written by the
Java reference (tests/data/manifests, written by Spark 3.5.8 + Iceberg 1.10.2) and by pyiceberg.
"""

from __future__ import annotations

import json
import math
import uuid
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import fastavro
import pytest

from icectl.errors import CorruptMetadata, UnsupportedFeature, ValidationError
from icectl.io.manifest.records import (
    read_avro_metadata,
    read_avro_records,
    read_manifest,
    read_manifest_list,
    read_manifest_with_metadata,
    write_manifest,
    write_manifest_list,
    write_manifest_raw,
)
from icectl.spec.manifests import (
    ADDED,
    DATA,
    DELETED,
    EQUALITY_DELETES,
    EXISTING,
    MANIFEST_DATA,
    MANIFEST_DELETES,
    POSITION_DELETES,
    DataFile,
    FieldSummary,
    ManifestEntry,
    ManifestFile,
    manifest_entry_avro_schema,
    manifest_list_avro_schema,
)
from icectl.spec.partitioning import PartitionField, PartitionSpec
from icectl.spec.schema import Schema
from icectl.spec.transforms import parse_transform
from icectl.spec.types import (
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    TIMESTAMPTZ_NS,
    UUID,
    DecimalType,
    FixedType,
    NestedField,
    StructType,
)

DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "manifests"

# Every partition value type with values at awkward places: negatives, pre-epoch dates and
# timestamps, a timestamp outside Python's datetime range, -0.0, NaN, empty binary, big decimals.
_TYPES = [
    BOOLEAN, INT, LONG, FLOAT, DOUBLE, DATE, TIME, TIMESTAMP, TIMESTAMPTZ, STRING, UUID,
    FixedType(3), BINARY, DecimalType(9, 2), DecimalType(38, 10), DecimalType(9, 2),
]
_V3_TYPES = [TIMESTAMP_NS, TIMESTAMPTZ_NS]
_ROWS = [
    (True, -7, -(1 << 40), 1.5, -0.0, -1, 0, -62_135_596_800_000_000 - 1, 253_402_300_800_000_000,
     "héllo ✓", uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"), b"\x00\xff\x10", b"",
     Decimal("-0.01"), Decimal("-1234567890123456789012345678.0123456789"), Decimal("9999999.99")),
    (False, 2**31 - 1, 2**63 - 1, math.inf, math.nan, 2932896, 86_399_999_999, 0, -1,
     "", uuid.UUID(int=0), b"abc", b"\x00" * 40, Decimal("0.00"), Decimal("1E-10"),
     Decimal("-9999999.99")),
    tuple([None] * 16),
]


def _ptype(types) -> StructType:
    return StructType([NestedField(1000 + i, f"p{i}", t, False) for i, t in enumerate(types)])


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return a == b and type(a) is type(b)


def _assert_partitions_equal(got: tuple, want: tuple) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert _same(g, w), (g, w)


def _write(entries, ptype, version, snapshot_id=42, content=MANIFEST_DATA, spec_id=5):
    return write_manifest_raw(
        entries, partition_type=ptype, spec_id=spec_id,
        partition_spec_json=[{"name": f.name, "transform": "identity", "source-id": i + 1,
                              "field-id": f.field_id} for i, f in enumerate(ptype.fields())],
        schema_json={"type": "struct", "schema-id": 3, "fields": []},
        format_version=version, snapshot_id=snapshot_id, content=content)


def _file(i: int, partition: tuple = (), **kw) -> DataFile:
    base = dict(
        content=DATA, file_path=f"file:/wh/t/data/f{i}.parquet", file_format="PARQUET",
        partition=partition, record_count=10 + i, file_size_in_bytes=1000 + i,
        column_sizes={1: 11, 2: 22}, value_counts={1: 10 + i}, null_value_counts={1: 0},
        nan_value_counts={}, lower_bounds={1: b"\x01\x00\x00\x00"},
        upper_bounds={1: b"\x09\x00\x00\x00"}, split_offsets=(4, 1000), sort_order_id=0,
    )
    base.update(kw)
    return DataFile(**base)


# -- round trips --------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2, 3])
def test_round_trip_every_partition_type(version):
    types = _TYPES + (_V3_TYPES if version >= 3 else [])
    ptype = _ptype(types)
    rows = [r + ((-5, 1_700_000_000_123_456_789) if version >= 3 else ()) for r in _ROWS[:2]]
    rows.append(tuple([None] * len(types)))
    entries = [ManifestEntry(ADDED, 42, None, None, _file(i, row)) for i, row in enumerate(rows)]
    data = _write(entries, ptype, version)
    got = read_manifest(data)
    assert len(got) == len(entries)
    for g, e in zip(got, entries):
        _assert_partitions_equal(g.data_file.partition, e.data_file.partition)
        assert replace(g.data_file, partition=e.data_file.partition, spec_id=0) == e.data_file
        assert g.data_file.spec_id == 5
        assert (g.status, g.snapshot_id) == (ADDED, 42)
        assert (g.sequence_number, g.file_sequence_number) == (None, None)


def test_round_trip_v3_content_fields_and_deletes():
    ptype = _ptype([INT])
    dv = _file(1, (3,), content=POSITION_DELETES, file_format="puffin", record_count=2,
               referenced_data_file="file:/wh/t/data/f0.parquet", content_offset=4,
               content_size_in_bytes=42, split_offsets=None, sort_order_id=None)
    eq = _file(2, (3,), content=EQUALITY_DELETES, equality_ids=(1, 2))
    entries = [ManifestEntry(ADDED, None, None, None, dv),
               ManifestEntry(EXISTING, 7, 3, 2, eq)]
    data = _write(entries, ptype, 3, content=MANIFEST_DELETES)
    meta, got = read_manifest_with_metadata(data)
    assert meta["content"] == "deletes"
    assert got[0].data_file == replace(dv, file_format="PUFFIN", spec_id=5)
    assert got[0].data_file.is_deletion_vector
    assert got[1].data_file.equality_ids == (1, 2)
    assert (got[1].snapshot_id, got[1].sequence_number, got[1].file_sequence_number) == (7, 3, 2)
    # a writer's snapshot id fills entries that have none
    assert got[0].snapshot_id == 42


def test_v2_drops_v3_only_fields():
    f = _file(0, (), first_row_id=9, content_offset=4, content_size_in_bytes=5,
              referenced_data_file="x")
    (got,) = read_manifest(_write([ManifestEntry(ADDED, 1, None, None, f)], _ptype([]), 2))
    assert got.data_file.first_row_id is None and got.data_file.content_offset is None
    assert got.data_file.referenced_data_file == "x"


def test_include_stats_false_skips_metrics_maps():
    data = _write([ManifestEntry(ADDED, 1, None, None, _file(0, (1,)))], _ptype([INT]), 2)
    (full,) = read_manifest(data)
    (slim,) = read_manifest(data, include_stats=False)
    assert full.data_file.lower_bounds == {1: b"\x01\x00\x00\x00"}
    assert slim.data_file.lower_bounds is None and slim.data_file.value_counts is None
    assert replace(slim.data_file, column_sizes=full.data_file.column_sizes,
                   value_counts=full.data_file.value_counts,
                   null_value_counts=full.data_file.null_value_counts,
                   nan_value_counts=full.data_file.nan_value_counts,
                   lower_bounds=full.data_file.lower_bounds,
                   upper_bounds=full.data_file.upper_bounds) == full.data_file


# -- written files: header and schema -----------------------------------------------------------


def _walk(schema, out):
    if isinstance(schema, list):
        for s in schema:
            _walk(s, out)
    elif isinstance(schema, dict):
        if schema.get("type") == "record":
            for f in schema["fields"]:
                out.append(f)
                _walk(f["type"], out)
        for k in ("items", "values", "type"):
            if isinstance(schema.get(k), (dict, list)):
                _walk(schema[k], out)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_written_manifest_header(version):
    ptype = _ptype([DATE, DecimalType(9, 2)])
    data = _write([ManifestEntry(ADDED, 1, None, None, _file(0, (1, Decimal("1.00"))))],
                  ptype, version)
    meta = read_avro_metadata(data)
    assert meta["avro.codec"] == "deflate"
    assert meta["format-version"] == str(version)
    assert meta["partition-spec-id"] == "5"
    assert meta["schema-id"] == "3"
    assert json.loads(meta["schema"]) == {"type": "struct", "schema-id": 3, "fields": []}
    assert json.loads(meta["partition-spec"])[1]["field-id"] == 1001
    assert ("content" in meta) == (version >= 2)
    schema = json.loads(meta["avro.schema"])
    assert schema == manifest_entry_avro_schema(ptype, version)
    fields = []
    _walk(schema, fields)
    assert fields and all(isinstance(f.get("field-id"), int) for f in fields)
    iceberg = json.loads(meta["iceberg.schema"])
    assert [f["id"] for f in iceberg["fields"]][:2] == [0, 1]
    # the logical types are in the header, and a plain Avro reader decodes them
    with_logical = list(fastavro.reader(__import__("io").BytesIO(data)))
    assert with_logical[0]["data_file"]["partition"]["p1"] == Decimal("1.00")


def test_v1_manifest_writes_block_size_and_rejects_deletes():
    data = _write([ManifestEntry(ADDED, None, None, None, _file(0))], _ptype([]), 1,
                  snapshot_id=77)
    _, records = read_avro_records(data)
    assert records[0]["data_file"]["block_size_in_bytes"] == 64 * 1024 * 1024
    assert records[0]["snapshot_id"] == 77
    with pytest.raises(ValidationError):
        _write([ManifestEntry(ADDED, 1, None, None, _file(0, content=POSITION_DELETES))],
               _ptype([]), 1)


def test_write_rejects_bad_entries():
    pt = _ptype([DecimalType(9, 2)])
    with pytest.raises(ValidationError):  # existing entries need explicit sequence numbers
        _write([ManifestEntry(EXISTING, 1, None, None, _file(0, (None,)))], pt, 2)
    with pytest.raises(ValidationError):  # more fraction digits than the scale
        _write([ManifestEntry(ADDED, 1, None, None, _file(0, (Decimal("1.001"),)))], pt, 2)
    with pytest.raises(ValidationError):  # too many digits for the precision
        _write([ManifestEntry(ADDED, 1, None, None, _file(0, (Decimal("12345678901"),)))], pt, 2)
    with pytest.raises(ValidationError):  # wrong arity
        _write([ManifestEntry(ADDED, 1, None, None, _file(0, (1, 2)))], pt, 2)
    with pytest.raises(UnsupportedFeature):
        _write([], pt, 4)


def test_unreadable_input_is_corrupt_metadata():
    with pytest.raises(CorruptMetadata):
        read_manifest(b"not avro at all")
    data = _write([ManifestEntry(ADDED, 1, None, None, _file(0))], _ptype([]), 2)
    with pytest.raises(CorruptMetadata):
        read_manifest(data[: len(data) - 30])
    with pytest.raises(CorruptMetadata):  # a manifest list is not a manifest
        read_manifest(write_manifest_list([], 2, 1, None, 1))


def test_write_manifest_with_spec_and_schema_objects():
    schema = Schema((NestedField(1, "id", LONG, True), NestedField(2, "ts", TIMESTAMPTZ, False)),
                    schema_id=4)
    spec = PartitionSpec(2, (
        PartitionField(1, 1000, "id_bucket", parse_transform("bucket[16]")),
        PartitionField(2, 1001, "ts_day", parse_transform("day")),
    ))
    f = _file(0, (3, 19000))
    data = write_manifest([ManifestEntry(ADDED, None, None, None, f)], spec, schema, 2, 99)
    meta, (got,) = read_manifest_with_metadata(data)
    assert meta["partition-spec-id"] == "2" and meta["schema-id"] == "4"
    assert json.loads(meta["partition-spec"]) == spec.fields_json()
    assert json.loads(meta["schema"]) == schema.to_json()
    part = json.loads(meta["avro.schema"])["fields"][-1]["type"]["fields"][3]["type"]
    assert [f["name"] for f in part["fields"]] == ["id_bucket", "ts_day"]
    assert part["fields"][1]["type"][1] == {"type": "int", "logicalType": "date"}
    assert got.data_file.partition == (3, 19000) and got.snapshot_id == 99
    assert got.data_file.partition_dict(spec.partition_type(schema)) == {
        "id_bucket": 3, "ts_day": 19000}


# -- inheritance --------------------------------------------------------------------------------


def _list_entry(version, **kw) -> ManifestFile:
    base = dict(manifest_path="m.avro", manifest_length=1, partition_spec_id=5, content=0,
                sequence_number=8, min_sequence_number=3, added_snapshot_id=500,
                added_files_count=1, existing_files_count=1, deleted_files_count=1,
                added_rows_count=1, existing_rows_count=1, deleted_rows_count=1)
    base.update(kw)
    return ManifestFile(**base)


def test_sequence_number_and_snapshot_inheritance_v2():
    entries = [
        ManifestEntry(ADDED, None, None, None, _file(0)),
        ManifestEntry(ADDED, None, 2, None, _file(1)),  # data sequence number given explicitly
        ManifestEntry(EXISTING, 300, 3, 3, _file(2)),
        ManifestEntry(DELETED, 400, 4, 4, _file(3)),
    ]
    data = _write(entries, _ptype([]), 2, snapshot_id=None)
    raw = read_manifest(data)
    assert [(e.snapshot_id, e.sequence_number, e.file_sequence_number) for e in raw] == [
        (None, None, None), (None, 2, None), (300, 3, 3), (400, 4, 4)]
    got = read_manifest(data, _list_entry(2, partition_spec_id=6))
    assert [(e.snapshot_id, e.sequence_number, e.file_sequence_number) for e in got] == [
        (500, 8, 8), (500, 2, 8), (300, 3, 3), (400, 4, 4)]
    assert {e.data_file.spec_id for e in got} == {6}


def test_v1_manifests_read_with_sequence_number_zero():
    data = _write([ManifestEntry(ADDED, 11, None, None, _file(0)),
                   ManifestEntry(EXISTING, 10, None, None, _file(1))], _ptype([]), 1)
    lst = write_manifest_list([_list_entry(1, manifest_length=len(data))], 1, 11, 10, 0)
    (mf,) = read_manifest_list(lst, 1)
    assert (mf.sequence_number, mf.min_sequence_number, mf.content) == (0, 0, MANIFEST_DATA)
    got = read_manifest(data, mf)
    assert [(e.sequence_number, e.file_sequence_number) for e in got] == [(0, 0), (0, 0)]
    assert [e.data_file.content for e in got] == [DATA, DATA]


def test_first_row_id_inheritance():
    entries = [
        ManifestEntry(ADDED, 1, None, None, _file(0, record_count=5)),
        ManifestEntry(EXISTING, 1, 1, 1, _file(1, record_count=7, first_row_id=1000)),
        ManifestEntry(DELETED, 1, 1, 1, _file(2, record_count=3)),  # deleted: takes no ids
        ManifestEntry(ADDED, 1, None, None, _file(3, record_count=2)),
        ManifestEntry(EXISTING, 1, 1, 1, _file(4, record_count=4)),  # existing nulls inherit too
    ]
    data = _write(entries, _ptype([]), 3)
    got = read_manifest(data, _list_entry(3, first_row_id=100))
    assert [e.data_file.first_row_id for e in got] == [100, 1000, None, 105, 107]
    # a manifest without a first row id leaves no ids (delete manifests, pre-v3 manifests)
    got = read_manifest(data, _list_entry(3, first_row_id=None))
    assert [e.data_file.first_row_id for e in got] == [None] * 5
    # read without its list entry: exactly as stored
    assert [e.data_file.first_row_id for e in read_manifest(data)] == [
        None, 1000, None, None, None]


# -- manifest lists -----------------------------------------------------------------------------


def _summaries():
    return (FieldSummary(True, False, b"\x01\x00\x00\x00", b"\x09\x00\x00\x00"),
            FieldSummary(False, None, None, None))


@pytest.mark.parametrize("version", [1, 2, 3])
def test_manifest_list_round_trip(version):
    ms = [
        _list_entry(version, manifest_path="a.avro", partitions=_summaries(),
                    key_metadata=b"k", first_row_id=None, sequence_number=None,
                    min_sequence_number=None, added_snapshot_id=None, added_rows_count=10,
                    existing_rows_count=5),
        _list_entry(version, manifest_path="b.avro", content=MANIFEST_DELETES if version > 1
                    else MANIFEST_DATA, partitions=None, added_snapshot_id=9),
        _list_entry(version, manifest_path="c.avro", sequence_number=2, min_sequence_number=1,
                    added_snapshot_id=9, first_row_id=3 if version == 3 else None),
    ]
    data = write_manifest_list(ms, version, snapshot_id=500, parent_id=None,
                               sequence_number=8, first_row_id=40 if version == 3 else None)
    meta = read_avro_metadata(data)
    assert meta["snapshot-id"] == "500"
    assert meta["parent-snapshot-id"] == "null"
    assert meta["format-version"] == str(version)
    assert ("sequence-number" in meta) == (version >= 2)
    assert meta.get("first-row-id") == ("40" if version == 3 else None)
    assert json.loads(meta["avro.schema"]) == manifest_list_avro_schema(version)
    got = read_manifest_list(data, version)
    assert [m.manifest_path for m in got] == ["a.avro", "b.avro", "c.avro"]
    a, b, c = got
    assert a.partitions == _summaries() and b.partitions is None
    assert a.key_metadata == b"k" and a.added_snapshot_id == 500
    if version == 1:
        assert [(m.sequence_number, m.min_sequence_number, m.content) for m in got] == [
            (0, 0, 0)] * 3
        assert [m.first_row_id for m in got] == [None] * 3
    else:
        assert (a.sequence_number, a.min_sequence_number) == (8, 8)  # assigned at write
        assert (c.sequence_number, c.min_sequence_number) == (2, 1)
        assert b.content == (MANIFEST_DELETES)
    if version == 3:
        # data manifests without an id get one; delete manifests never; kept ids stay
        assert [m.first_row_id for m in got] == [40, None, 3]
    assert (a.added_rows_count, a.existing_rows_count) == (10, 5)


def test_manifest_list_parent_and_unassigned_checks():
    data = write_manifest_list([], 2, 5, 4, 3)
    assert read_avro_metadata(data)["parent-snapshot-id"] == "4"
    assert read_manifest_list(data) == []
    foreign = _list_entry(2, sequence_number=None, added_snapshot_id=1)
    with pytest.raises(ValidationError):
        write_manifest_list([foreign], 2, 5, 4, 3)
    with pytest.raises(ValidationError):
        write_manifest_list([_list_entry(2, added_rows_count=None)], 2, 5, 4, 3)
    with pytest.raises(ValidationError):
        write_manifest_list([], 3, 5, 4, 3)  # v3 needs the snapshot's first row id


# -- files written by the Java reference --------------------------------------------------------


def _golden(table: str) -> tuple[list[ManifestFile], dict[str, list[ManifestEntry]]]:
    d = DATA_DIR / table
    lst = read_manifest_list((d / "manifest-list.avro").read_bytes())
    entries = {}
    for m in lst:
        name = m.manifest_path.rsplit("/", 1)[-1]
        entries[name] = read_manifest((d / name).read_bytes(), m)
    return lst, entries


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def test_java_v2_identity_partitions_of_every_spark_type():
    lst, entries = _golden("t2")
    assert [(m.sequence_number, m.min_sequence_number, m.added_files_count,
             m.existing_files_count, m.deleted_files_count) for m in lst] == [
        (2, 2, 1, 0, 0), (3, 1, 0, 2, 1)]
    rows = {e.data_file.partition[0]: e for es in entries.values() for e in es}
    a = rows[1]
    assert a.status == DELETED and (a.sequence_number, a.file_sequence_number) == (1, 1)
    _assert_partitions_equal(a.data_file.partition, (
        1, 10000000000, "a", 18263, 1577934245123456, 1577934245500000, Decimal("12.34"),
        Decimal("1234567890123456.7890"), True, b"\x01\x02", 1.5, 2.5))
    c = rows[-1]
    _assert_partitions_equal(c.data_file.partition, (
        -1, -5, "é", -1, -1, -2208988800000000, Decimal("-0.01"), Decimal("-1.0000"), False,
        b"", math.nan, 0.0))
    assert c.status == EXISTING
    assert rows[None].data_file.partition == (None,) * 12
    added = rows[2]
    assert added.status == ADDED and added.sequence_number == 2 and added.file_sequence_number == 2
    assert added.snapshot_id == lst[0].added_snapshot_id
    f = added.data_file
    assert f.file_format == "PARQUET" and f.record_count == 1 and f.split_offsets == (4,)
    assert f.lower_bounds[1] == b"\x02\x00\x00\x00" and f.sort_order_id == 0
    assert lst[1].partitions[0] == FieldSummary(True, False, b"\xff\xff\xff\xff",
                                                b"\x01\x00\x00\x00")


def test_java_v1_table():
    lst, entries = _golden("t1")
    assert all((m.sequence_number, m.min_sequence_number, m.content) == (0, 0, 0) for m in lst)
    for es in entries.values():
        for e in es:
            assert (e.sequence_number, e.file_sequence_number) == (0, 0)
            assert e.snapshot_id is not None and e.data_file.content == DATA
    assert sorted(e.status for es in entries.values() for e in es) == [ADDED, ADDED, ADDED,
                                                                      DELETED]


def test_java_v3_row_lineage():
    lst, entries = _golden("t3")
    assert [m.first_row_id for m in lst] == [3, 4]
    ids = {e.data_file.partition[0]: e.data_file.first_row_id
           for es in entries.values() for e in es}
    # rows 0..2 got ids in the first commit (stored explicitly when rewritten), the new file
    # inherits its manifest's first row id
    assert ids == {None: 0, 1: 1, -1: 2, 2: 3}

    lst, entries = _golden("u3")
    by_name = {_name(m.manifest_path): m for m in lst}
    m2 = next(es for n, es in entries.items() if by_name[n].added_files_count == 4)
    assert [e.data_file.first_row_id for e in m2] == [10, 11, 12, 13]
    # rewritten files keep their data sequence number, the file sequence number is inherited
    assert {(e.sequence_number, e.file_sequence_number) for e in m2} == {(4, 5)}
    deleted = [e for n, es in entries.items() if by_name[n].deleted_files_count for e in es]
    assert sorted(e.data_file.first_row_id for e in deleted) == [0, 2, 3, 6]
    assert {e.data_file.spec_id for e in m2} == {1}


def test_java_position_deletes_and_deletion_vectors():
    lst, entries = _golden("d2")
    deletes = next(m for m in lst if m.content == MANIFEST_DELETES)
    (d,) = entries[_name(deletes.manifest_path)]
    assert d.data_file.content == POSITION_DELETES and d.data_file.file_format == "PARQUET"
    assert d.data_file.referenced_data_file is None
    assert d.data_file.lower_bounds[2147483546] == d.data_file.upper_bounds[2147483546]

    lst, entries = _golden("d3")
    deletes = next(m for m in lst if m.content == MANIFEST_DELETES)
    assert deletes.first_row_id is None
    (dv,) = entries[_name(deletes.manifest_path)]
    f = dv.data_file
    assert f.is_deletion_vector and f.record_count == 1
    assert (f.content_offset, f.content_size_in_bytes) == (4, 42)
    assert _name(f.referenced_data_file).endswith("-00002.parquet")
    assert f.first_row_id is None
    data = next(m for m in lst if m.content == MANIFEST_DATA)
    assert [e.data_file.first_row_id for e in entries[_name(data.manifest_path)]] == [0, 4]


@pytest.mark.parametrize("table", ["t1", "t2", "t3", "d2", "d3", "u3"])
def test_rewriting_java_files_gives_java_layout(table):
    """Re-writing what Java wrote yields the same Avro schema (docs aside) and entries."""
    d = DATA_DIR / table
    lst_bytes = (d / "manifest-list.avro").read_bytes()
    lmeta = read_avro_metadata(lst_bytes)
    version = int(lmeta["format-version"])
    for m in read_manifest_list(lst_bytes):
        raw = (d / _name(m.manifest_path)).read_bytes()
        meta, stored = read_manifest_with_metadata(raw)
        schema = json.loads(meta["schema"])
        spec = PartitionSpec.from_fields_json(json.loads(meta["partition-spec"]),
                                              int(meta["partition-spec-id"]))
        mine = write_manifest_raw(
            stored, partition_type=spec.partition_type(Schema.from_json(schema)),
            spec_id=spec.spec_id, partition_spec_json=spec.fields_json(), schema_json=schema,
            format_version=version, snapshot_id=None, content=m.content)
        assert _strip_docs(json.loads(meta["avro.schema"])) == json.loads(
            read_avro_metadata(mine)["avro.schema"])
        again = read_manifest(mine)
        assert len(again) == len(stored)
        for x, y in zip(again, stored):
            _assert_partitions_equal(x.data_file.partition, y.data_file.partition)
            assert replace(x, data_file=replace(x.data_file, partition=())) == replace(
                y, data_file=replace(y.data_file, partition=()))
    lst_schema = json.loads(lmeta["avro.schema"])
    assert _strip_docs(lst_schema) == manifest_list_avro_schema(version)


def _strip_docs(x):
    if isinstance(x, dict):
        return {k: _strip_docs(v) for k, v in x.items() if k != "doc"}
    if isinstance(x, list):
        return [_strip_docs(v) for v in x]
    return x


# -- pyiceberg interop --------------------------------------------------------------------------


def _pyiceberg_setup(with_fixed: bool = True):
    """Schema, spec and partition values of every type. ``with_fixed=False`` replaces the
    fixed[3] column by a binary one: icectl writes fixed partition values length-prefixed, as
    Iceberg Java 1.10.2 writes (and alone reads) them, and pyiceberg 0.12 reads them as plain
    Avro fixed, so it misreads both Java's and icectl's (its C decoder crashes on them)."""
    from pyiceberg import types as pt
    from pyiceberg.partitioning import PartitionField as PField
    from pyiceberg.partitioning import PartitionSpec as PSpec
    from pyiceberg.schema import Schema as PSchema
    from pyiceberg.transforms import IdentityTransform

    types = [pt.IntegerType(), pt.LongType(), pt.StringType(), pt.DateType(),
             pt.TimestampType(), pt.TimestamptzType(), pt.DecimalType(9, 2),
             pt.DecimalType(20, 4), pt.BooleanType(), pt.BinaryType(), pt.FloatType(),
             pt.DoubleType(), pt.UUIDType(), pt.FixedType(3) if with_fixed else pt.BinaryType(),
             pt.TimeType()]
    schema = PSchema(*[pt.NestedField(i + 1, f"c{i}", t, required=False)
                       for i, t in enumerate(types)])
    spec = PSpec(*[PField(i + 1, 1000 + i, IdentityTransform(), f"c{i}")
                   for i in range(len(types))], spec_id=3)
    values = (5, 1 << 40, "héllo", 18000, 1577934245123456, -5, Decimal("12.34"),
              Decimal("-1.0001"), True, b"\x00\x01", 1.5, -0.0,
              uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"), b"abc", 3_600_000_000)
    return schema, spec, values


@pytest.mark.parametrize("version", [1, 2])
def test_reads_manifests_written_by_pyiceberg(tmp_path, version):
    from pyiceberg.io.pyarrow import PyArrowFileIO
    from pyiceberg.manifest import DataFile as PDataFile
    from pyiceberg.manifest import DataFileContent, FileFormat
    from pyiceberg.manifest import ManifestEntry as PEntry
    from pyiceberg.manifest import ManifestEntryStatus
    from pyiceberg.manifest import write_manifest as py_write_manifest
    from pyiceberg.manifest import write_manifest_list as py_write_manifest_list
    from pyiceberg.typedef import Record

    schema, spec, values = _pyiceberg_setup()
    io = PyArrowFileIO()
    nulls = (None,) * len(values)
    # pyiceberg's writers take files in its default layout for every format version
    files = [PDataFile.from_args(
        content=DataFileContent.DATA,
        file_path=f"file:/wh/f{i}.parquet", file_format=FileFormat.PARQUET,
        partition=Record(*part), record_count=10 + i, file_size_in_bytes=100 + i,
        lower_bounds={1: b"\x05\x00\x00\x00"}, upper_bounds={1: b"\x07\x00\x00\x00"},
        value_counts={1: 10}, split_offsets=[4]) for i, part in enumerate([values, nulls])]
    mpath = str(tmp_path / "m.avro")
    with py_write_manifest(version, spec, schema, io.new_output(mpath), 77, "deflate") as w:
        for f in files:
            w.add_entry(PEntry.from_args(status=ManifestEntryStatus.ADDED, snapshot_id=77,
                                         data_file=f))
        mf = w.to_manifest_file()
    lpath = str(tmp_path / "snap.avro")
    with py_write_manifest_list(version, io.new_output(lpath), 77, 76,
                                4 if version > 1 else None, "deflate") as lw:
        lw.add_manifests([mf])

    (m,) = read_manifest_list(Path(lpath).read_bytes(), version)
    assert m.manifest_path == mpath and m.partition_spec_id == 3
    assert m.added_snapshot_id == 77 and m.added_files_count == 2 and m.added_rows_count == 21
    assert m.sequence_number == (4 if version > 1 else 0)
    assert m.partitions[2] == FieldSummary(True, False, "héllo".encode(), "héllo".encode())
    got = read_manifest(Path(mpath).read_bytes(), m)
    _assert_partitions_equal(got[0].data_file.partition, values)
    assert got[1].data_file.partition == nulls
    assert got[0].data_file.lower_bounds == {1: b"\x05\x00\x00\x00"}
    assert got[0].data_file.split_offsets == (4,) and got[0].data_file.file_format == "PARQUET"
    assert [e.sequence_number for e in got] == [m.sequence_number] * 2
    assert [e.data_file.spec_id for e in got] == [3, 3]


@pytest.mark.parametrize("version", [1, 2])
def test_pyiceberg_reads_what_icectl_writes(tmp_path, version):
    from pyiceberg.io.pyarrow import PyArrowFileIO
    from pyiceberg.manifest import read_manifest_list as py_read_manifest_list

    pschema, pspec, values = _pyiceberg_setup(with_fixed=False)
    schema = Schema.from_json(json.loads(pschema.model_dump_json(by_alias=True)))
    spec = PartitionSpec.from_json(json.loads(pspec.model_dump_json(by_alias=True)))
    f = _file(0, values)
    mpath = tmp_path / "m.avro"
    mdata = write_manifest([ManifestEntry(ADDED, None, None, None, f)], spec, schema,
                           version, 77)
    mpath.write_bytes(mdata)
    mf = ManifestFile(str(mpath), len(mdata), 3, MANIFEST_DATA, None, None, 77, 1, 0, 0,
                      f.record_count, 0, 0, (FieldSummary(False, False, b"\x05", b"\x05"),))
    lpath = tmp_path / "l.avro"
    lpath.write_bytes(write_manifest_list([mf], version, 77, None, 6))

    io = PyArrowFileIO()
    (pm,) = list(py_read_manifest_list(io.new_input(str(lpath))))
    assert pm.manifest_path == str(mpath) and pm.added_snapshot_id == 77
    assert pm.sequence_number == (6 if version > 1 else 0)
    (pe,) = pm.fetch_manifest_entry(io)
    assert pe.snapshot_id == 77 and pe.sequence_number == (6 if version > 1 else 0)
    df = pe.data_file
    assert df.file_path == f.file_path and df.record_count == f.record_count
    assert dict(df.lower_bounds) == f.lower_bounds
    _assert_partitions_equal(tuple(df.partition), values)
