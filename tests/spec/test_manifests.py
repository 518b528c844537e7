"""Manifest model: record layouts and their Avro form, inheritance rules, summaries."""

from __future__ import annotations

import math
import random
import struct
import uuid
from decimal import Decimal

import pytest

from icectl.spec.manifests import (
    ADDED,
    DATA,
    DELETED,
    EXISTING,
    MANIFEST_DATA,
    MANIFEST_DELETES,
    POSITION_DELETES,
    DataFile,
    FieldSummary,
    ManifestEntry,
    ManifestFile,
    assign_manifest_first_row_ids,
    avro_schema,
    data_file_type,
    decimal_required_bytes,
    iceberg_schema_json,
    inherit_sequence_numbers,
    manifest_entry_avro_schema,
    manifest_file_type,
    manifest_list_avro_schema,
    partition_avro_schema,
    partition_summaries,
    sanitize_avro_name,
    summarize_columns,
)
from icectl.spec.values import to_bytes
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
    ListType,
    MapType,
    NestedField,
    StructType,
)


def _ptype(*types) -> StructType:
    return StructType([NestedField(1000 + i, f"p{i}", t, False) for i, t in enumerate(types)])


def _walk_fields(schema, out):
    """Collect every record field of an Avro schema (dict form)."""
    if isinstance(schema, list):
        for s in schema:
            _walk_fields(s, out)
    elif isinstance(schema, dict):
        if schema.get("type") == "record":
            for f in schema["fields"]:
                out.append(f)
                _walk_fields(f["type"], out)
        for k in ("items", "values", "type"):
            if isinstance(schema.get(k), (dict, list)):
                _walk_fields(schema[k], out)


# -- decimal sizes and names --------------------------------------------------------------------


@pytest.mark.parametrize("precision, size", [
    (1, 1), (2, 1), (3, 2), (4, 2), (5, 3), (9, 4), (10, 5), (18, 8), (19, 9), (20, 9),
    (28, 12), (38, 16),
])
def test_decimal_required_bytes(precision, size):
    assert decimal_required_bytes(precision) == size
    # the largest unscaled value fits, and one byte less would not
    assert (10 ** precision - 1).bit_length() + 1 <= 8 * size
    assert (10 ** precision - 1).bit_length() + 1 > 8 * (size - 1)


@pytest.mark.parametrize("name, expected", [
    ("ok_name", "ok_name"),
    ("a-b", "a_x2Db"),
    ("1st", "_1st"),
    ("x.y", "x_x2Ey"),
    ("_", "_"),
])
def test_sanitize_avro_name(name, expected):
    assert sanitize_avro_name(name) == expected


# -- Avro layouts -------------------------------------------------------------------------------


def test_partition_avro_schema_type_mapping():
    pt = _ptype(BOOLEAN, INT, LONG, FLOAT, DOUBLE, DATE, TIME, TIMESTAMP, TIMESTAMPTZ,
                TIMESTAMP_NS, TIMESTAMPTZ_NS, STRING, UUID, FixedType(7), BINARY,
                DecimalType(9, 2), DecimalType(38, 10), DecimalType(9, 2))
    rec = partition_avro_schema(pt)
    assert rec["type"] == "record" and rec["name"] == "r102"
    fields = rec["fields"]
    assert [f["field-id"] for f in fields] == list(range(1000, 1018))
    assert all(f["default"] is None and f["type"][0] == "null" for f in fields)
    t = [f["type"][1] for f in fields]
    assert t[0:5] == ["boolean", "int", "long", "float", "double"]
    assert t[5] == {"type": "int", "logicalType": "date"}
    assert t[6] == {"type": "long", "logicalType": "time-micros"}
    assert t[7] == {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": False}
    assert t[8] == {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": True}
    assert t[9] == {"type": "long", "logicalType": "timestamp-nanos", "adjust-to-utc": False}
    assert t[10] == {"type": "long", "logicalType": "timestamp-nanos", "adjust-to-utc": True}
    assert t[11] == "string"
    assert t[12] == {"type": "fixed", "name": "uuid_fixed", "size": 16, "logicalType": "uuid"}
    assert t[13] == {"type": "fixed", "name": "fixed_7", "size": 7}
    assert t[14] == "bytes"
    assert t[15] == {"type": "fixed", "name": "decimal_9_2", "size": 4, "logicalType": "decimal",
                     "precision": 9, "scale": 2}
    assert t[16]["size"] == 16 and t[16]["name"] == "decimal_38_10"
    # a named type is defined once, then referenced by name (Avro forbids redefinition)
    assert t[17] == "decimal_9_2"


def test_partition_field_names_are_sanitized_with_original_kept():
    pt = StructType([NestedField(1000, "a-b", INT, False)])
    (f,) = partition_avro_schema(pt)["fields"]
    assert f["name"] == "a_x2Db"
    assert f["iceberg-field-name"] == "a-b"
    assert f["field-id"] == 1000


@pytest.mark.parametrize("version", [1, 2, 3])
def test_manifest_entry_schema_names_and_ids(version):
    schema = manifest_entry_avro_schema(_ptype(INT, DecimalType(9, 2)), version)
    assert schema["name"] == "manifest_entry"
    fields = []
    _walk_fields(schema, fields)
    # every record field carries a field id, except nothing
    assert all("field-id" in f for f in fields)
    top = [(f["name"], f["field-id"]) for f in schema["fields"]]
    if version == 1:
        assert top == [("status", 0), ("snapshot_id", 1), ("data_file", 2)]
    else:
        assert top == [("status", 0), ("snapshot_id", 1), ("sequence_number", 3),
                       ("file_sequence_number", 4), ("data_file", 2)]
    df = schema["fields"][-1]["type"]
    assert df["name"] == "r2"
    names = {f["name"]: f for f in df["fields"]}
    assert names["partition"]["type"]["name"] == "r102"
    lower = names["lower_bounds"]["type"][1]
    assert lower == {
        "type": "array", "logicalType": "map",
        "items": {"type": "record", "name": "k126_v127", "fields": [
            {"name": "key", "type": "int", "field-id": 126},
            {"name": "value", "type": "bytes", "field-id": 127}]},
    }
    assert names["split_offsets"]["type"][1] == {"type": "array", "items": "long",
                                                 "element-id": 133}
    ids = [f["field-id"] for f in df["fields"]]
    expected = {
        1: [100, 101, 102, 103, 104, 105, 108, 109, 110, 137, 125, 128, 131, 132, 140],
        2: [134, 100, 101, 102, 103, 104, 108, 109, 110, 137, 125, 128, 131, 132, 135, 140, 143],
        3: [134, 100, 101, 102, 103, 104, 108, 109, 110, 137, 125, 128, 131, 132, 135, 140, 142,
            143, 144, 145],
    }[version]
    assert ids == expected


@pytest.mark.parametrize("version, ids", [
    (1, [500, 501, 502, 503, 504, 505, 506, 507, 512, 513, 514, 519]),
    (2, [500, 501, 502, 517, 515, 516, 503, 504, 505, 506, 512, 513, 514, 507, 519]),
    (3, [500, 501, 502, 517, 515, 516, 503, 504, 505, 506, 512, 513, 514, 507, 519, 520]),
])
def test_manifest_list_schema(version, ids):
    schema = manifest_list_avro_schema(version)
    assert schema["name"] == "manifest_file"
    assert [f["field-id"] for f in schema["fields"]] == ids
    parts = next(f for f in schema["fields"] if f["name"] == "partitions")
    arr = parts["type"][1]
    assert arr["element-id"] == 508
    assert arr["items"]["name"] == "r508"
    assert [(f["name"], f["field-id"]) for f in arr["items"]["fields"]] == [
        ("contains_null", 509), ("contains_nan", 518), ("lower_bound", 510), ("upper_bound", 511)]
    required = {f["name"] for f in schema["fields"] if not isinstance(f["type"], list)}
    if version == 1:
        assert required == {"manifest_path", "manifest_length", "partition_spec_id",
                            "added_snapshot_id"}
    else:
        assert "added_rows_count" in required and "sequence_number" in required


def test_generic_avro_conversion_of_nested_types():
    st = StructType([
        NestedField(1, "m", MapType(2, STRING, 3, LONG, False), True),
        NestedField(4, "l", ListType(5, StructType([NestedField(6, "x", INT, True)]), False), False),
    ])
    schema = avro_schema(st, "root")
    m = schema["fields"][0]["type"]
    assert m == {"type": "map", "values": ["null", "long"], "key-id": 2, "value-id": 3}
    lst = schema["fields"][1]["type"][1]
    assert lst["element-id"] == 5
    assert lst["items"][1]["name"] == "r5"


def test_iceberg_schema_json_of_layout():
    j = iceberg_schema_json(manifest_file_type(3))
    assert j["type"] == "struct" and j["schema-id"] == 0
    assert j["fields"][-1] == {"id": 520, "name": "first_row_id", "required": False,
                               "type": "long"}


def test_data_file_type_embeds_partition_type():
    pt = _ptype(INT)
    part = data_file_type(pt, 2).field_by_id(102)
    assert part.type == pt and part.required


# -- model --------------------------------------------------------------------------------------


def test_data_file_partition_access_by_name():
    pt = StructType([NestedField(1000, "day", DATE, False), NestedField(1001, "b", INT, False)])
    f = DataFile(DATA, "s3://b/f.parquet", "PARQUET", (19000, None), 3, 10)
    assert f.partition_dict(pt) == {"day": 19000, "b": None}
    assert f.partition_value("day", pt) == 19000
    with pytest.raises(KeyError):
        f.partition_value("nope", pt)
    assert f.is_data and not f.is_deletion_vector
    dv = DataFile(POSITION_DELETES, "x.puffin", "PUFFIN", (), 1, 10)
    assert dv.is_deletion_vector


def test_model_values_are_frozen_and_hashable():
    f = DataFile(DATA, "a", "PARQUET", (1,), 1, 1, lower_bounds={1: b"\x01"})
    with pytest.raises(AttributeError):
        f.record_count = 5  # type: ignore[misc]
    e = ManifestEntry(ADDED, None, None, None, f)
    assert hash(e) == hash(ManifestEntry(ADDED, None, None, None, f))


def test_manifest_file_count_semantics():
    m = ManifestFile("m.avro", 10, 0, added_files_count=None, existing_files_count=0)
    assert m.has_added_files()  # null means "assumed non-zero"
    assert not m.has_existing_files()
    assert not ManifestFile("m", 1, 0, content=MANIFEST_DATA).is_delete_manifest


# -- inheritance --------------------------------------------------------------------------------


@pytest.mark.parametrize("status, seq, fseq, manifest_seq, expected", [
    (ADDED, None, None, 7, (7, 7)),
    (ADDED, 3, None, 7, (3, 7)),  # an explicit data sequence number is kept
    (EXISTING, None, None, 7, (None, None)),  # only ADDED entries inherit
    (DELETED, None, None, 7, (None, None)),
    (EXISTING, 2, 2, 7, (2, 2)),
    (EXISTING, None, None, 0, (0, 0)),  # v1 manifest lists: everything is 0
])
def test_inherit_sequence_numbers(status, seq, fseq, manifest_seq, expected):
    assert inherit_sequence_numbers(status, seq, fseq, manifest_seq) == expected


def test_assign_manifest_first_row_ids():
    ms = [
        ManifestFile("a", 1, 0, MANIFEST_DATA, added_rows_count=5, existing_rows_count=2),
        ManifestFile("d", 1, 0, MANIFEST_DELETES, added_rows_count=9, existing_rows_count=0),
        ManifestFile("b", 1, 0, MANIFEST_DATA, added_rows_count=1, existing_rows_count=0,
                     first_row_id=40),
        ManifestFile("c", 1, 0, MANIFEST_DATA, added_rows_count=0, existing_rows_count=3),
    ]
    out, next_id = assign_manifest_first_row_ids(ms, 100)
    assert [m.first_row_id for m in out] == [100, None, 40, 107]
    assert next_id == 110


# -- summaries ----------------------------------------------------------------------------------


def _le_bytes(t, v) -> bytes:
    if t == INT:
        return struct.pack("<i", v)
    if t == DOUBLE:
        return struct.pack("<d", v)
    if t == STRING:
        return v.encode()
    raise AssertionError(t)


def test_partition_summaries_nulls_nans_and_signed_zero():
    pt = _ptype(INT, DOUBLE, STRING)
    parts = [(3, 0.0, "b"), (None, -0.0, "a"), (-2, math.nan, None), (7, 1.5, "c")]
    s = partition_summaries(pt, parts, _le_bytes)
    assert s[0] == FieldSummary(True, False, struct.pack("<i", -2), struct.pack("<i", 7))
    assert s[1].contains_nan and not s[1].contains_null
    assert s[1].lower_bound == struct.pack("<d", -0.0)  # -0.0 precedes +0.0
    assert s[1].upper_bound == struct.pack("<d", 1.5)
    assert s[2] == FieldSummary(True, False, b"a", b"c")


def test_partition_summaries_all_null():
    s = partition_summaries(_ptype(INT), [(None,), (None,)], _le_bytes)
    assert s == (FieldSummary(True, False, None, None),)


def _summarize(entries, **kwargs):
    """:func:`summarize_columns` (what a producer summarizes a written manifest with) of the
    entries' columns."""
    return summarize_columns([e.status for e in entries], [e.data_file.record_count for e in entries],
                             [e.sequence_number for e in entries],
                             [e.data_file.partition for e in entries], **kwargs)


def test_summarize_columns():
    def f(n, part=(1,)):
        return DataFile(DATA, f"f{n}", "PARQUET", part, n, 100)

    entries = [
        ManifestEntry(ADDED, 9, None, None, f(10, (1,))),
        ManifestEntry(EXISTING, 5, 2, 2, f(20, (4,))),
        ManifestEntry(DELETED, 9, 1, 1, f(5, (None,))),
    ]
    m = _summarize(entries, manifest_path="m.avro", manifest_length=123,
                   partition_spec_id=2, content=MANIFEST_DATA, snapshot_id=9,
                   partition_type=_ptype(INT), to_bytes=_le_bytes)
    assert (m.added_files_count, m.existing_files_count, m.deleted_files_count) == (1, 1, 1)
    assert (m.added_rows_count, m.existing_rows_count, m.deleted_rows_count) == (10, 20, 5)
    # the least explicit sequence number of the live entries: the ADDED entry will inherit the
    # new snapshot's (higher) number, the DELETED one does not count
    assert m.sequence_number is None and m.min_sequence_number == 2
    only_added = _summarize(entries[:1], manifest_path="m", manifest_length=1,
                            partition_spec_id=0, content=MANIFEST_DATA, snapshot_id=9)
    assert only_added.min_sequence_number is None  # assigned by the manifest list writer
    assert m.partitions == (FieldSummary(True, False, struct.pack("<i", 1), struct.pack("<i", 4)),)
    explicit = _summarize(entries[1:], manifest_path="m", manifest_length=1,
                          partition_spec_id=0, content=MANIFEST_DATA, snapshot_id=9)
    assert explicit.min_sequence_number == 2 and explicit.partitions is None


def test_decimal_partition_values_compare_numerically():
    pt = _ptype(DecimalType(9, 2))
    seen = []
    partition_summaries(pt, [(Decimal("10.00"),), (Decimal("9.50"),)],
                        lambda t, v: seen.append(v) or b"")
    assert seen == [Decimal("9.50"), Decimal("10.00")]


def _summaries_one_by_one(partition_type, partitions, to_bytes):
    """The plain reading of the rule: one value at a time, the least and greatest by the
    reference's order (-0.0 before +0.0, uuids by their bytes), NaN and null only flagged."""
    out = []
    for i, f in enumerate(partition_type.fields()):
        lo = hi = None
        null = nan = False
        for part in partitions:
            v = part[i]
            if v is None:
                null = True
            elif isinstance(v, float) and v != v:
                nan = True
            else:
                k = ((lambda x: (x, math.copysign(1.0, x))) if isinstance(v, float)
                     else (lambda x: x.bytes) if isinstance(v, uuid.UUID) else (lambda x: x))
                if lo is None or k(v) < k(lo):
                    lo = v
                if hi is None or k(v) > k(hi):
                    hi = v
        out.append(FieldSummary(null, nan, None if lo is None else to_bytes(f.type, lo),
                                None if hi is None else to_bytes(f.type, hi)))
    return tuple(out)


@pytest.mark.parametrize("seed", range(40))
def test_partition_summaries_agree_with_the_one_by_one_rule(seed):
    rng = random.Random(seed)
    gens = {
        INT: lambda: rng.choice([0, -1, 1, -(2**31), 2**31 - 1, rng.randint(-(2**31), 2**31 - 1)]),
        LONG: lambda: rng.randint(-(2**63), 2**63 - 1),
        DATE: lambda: rng.randint(-800_000, 800_000),  # pre-1970 days too
        DOUBLE: lambda: rng.choice([0.0, -0.0, math.nan, math.inf, -math.inf, rng.uniform(-1e9, 1e9)]),
        FLOAT: lambda: rng.choice([0.0, -0.0, math.nan, -1.5, 2.25]),
        STRING: lambda: rng.choice(["", "a", "ab", "b", "é", "\U0001f600", "Z"]),
        BINARY: lambda: rng.choice([b"", b"\x00", b"\xff", b"ab"]),
        UUID: lambda: uuid.UUID(int=rng.getrandbits(128)),
        DecimalType(9, 2): lambda: Decimal(rng.randint(-10**9 + 1, 10**9 - 1)).scaleb(-2),
        BOOLEAN: lambda: rng.choice([True, False]),
    }
    types = rng.sample(list(gens), rng.randint(1, 4))
    null_share = rng.choice([0.0, 0.3, 1.0])
    parts = [tuple(None if rng.random() < null_share else gens[t]() for t in types)
             for _ in range(rng.choice([1, 2, 50, 400]))]
    pt = _ptype(*types)
    assert partition_summaries(pt, parts, to_bytes) == _summaries_one_by_one(pt, parts, to_bytes)
    assert partition_summaries(pt, iter(parts), to_bytes) == _summaries_one_by_one(pt, parts, to_bytes)
