"""Partition specs: JSON forms, partition types, binding terms to a schema as the reference does."""

from __future__ import annotations

import pytest

from icectl.errors import CorruptMetadata, InvalidInput, NotFound, ValidationError
from icectl.spec.parse import PartitionTerm, parse_schema
from icectl.spec.partitioning import (
    UNPARTITIONED_SPEC,
    PartitionField,
    PartitionSpec,
    build_spec,
    default_partition_name,
)
from icectl.spec.schema import Schema
from icectl.spec.transforms import (
    DAY,
    IDENTITY,
    VOID,
    YEAR,
    BucketTransform,
    TruncateTransform,
    UnknownTransform,
)
from icectl.spec.types import (
    DATE,
    INT,
    LONG,
    STRING,
    TIMESTAMPTZ,
    UNKNOWN,
    NestedField,
    StructType,
)

SCHEMA = parse_schema(
    "id long not null, ts timestamptz, d date, name string, cat string, price decimal(9, 2), "
    "f double, flag boolean, loc struct<lat: double, city: string>, tags list<string>, "
    "props map<string, struct<k: int>>, Mixed int"
)


def ids(spec: PartitionSpec) -> list[int]:
    return [f.field_id for f in spec.fields]


# ----------------------------------------------------------------------------------------------
# JSON


SPEC_JSON = {
    "spec-id": 3,
    "fields": [
        {"name": "ts_day", "transform": "day", "source-id": 2, "field-id": 1000},
        {"name": "id_bucket", "transform": "bucket[16]", "source-id": 1, "field-id": 1001},
        {"name": "name_trunc", "transform": "truncate[4]", "source-id": 4, "field-id": 1002},
    ],
}


def test_json_round_trip_is_exact():
    spec = PartitionSpec.from_json(SPEC_JSON)
    assert spec.spec_id == 3
    assert [str(f.transform) for f in spec.fields] == ["day", "bucket[16]", "truncate[4]"]
    assert spec.to_json() == SPEC_JSON
    assert list(spec.to_json()["fields"][0]) == ["name", "transform", "source-id", "field-id"]
    assert spec.fields_json() == SPEC_JSON["fields"]


def test_v1_field_list_without_field_ids_counts_from_1000():
    fields = [{"name": "a", "transform": "identity", "source-id": 1},
              {"name": "b", "transform": "bucket[2]", "source-id": 2}]
    spec = PartitionSpec.from_fields_json(fields)
    assert ids(spec) == [1000, 1001]
    assert spec.spec_id == 0


def test_unknown_transforms_and_v3_source_ids_round_trip():
    obj = {"spec-id": 1, "fields": [
        {"name": "z", "transform": "zorder[8]", "source-ids": [1, 4], "field-id": 1005},
        {"name": "x", "transform": "identity", "source-id": 1, "field-id": 1006},
    ]}
    spec = PartitionSpec.from_json(obj)
    z = spec.fields[0]
    assert isinstance(z.transform, UnknownTransform)
    assert z.source_ids == (1, 4) and z.source_id == 1 and z.all_source_ids == (1, 4)
    assert spec.has_unknown_transforms()
    assert spec.to_json() == obj


def test_single_element_source_ids_reads_as_source_id():
    spec = PartitionSpec.from_json({"spec-id": 0, "fields": [
        {"name": "x", "transform": "identity", "source-ids": [7], "field-id": 1000}]})
    assert spec.fields[0].source_id == 7
    assert spec.fields[0].to_json()["source-id"] == 7


@pytest.mark.parametrize("bad", [
    None, [], {"spec-id": 0}, {"spec-id": "x", "fields": []},
    {"spec-id": 0, "fields": [{"name": "a", "transform": "identity"}]},
    {"spec-id": 0, "fields": [{"transform": "identity", "source-id": 1, "field-id": 1000}]},
    {"spec-id": 0, "fields": [{"name": "a", "source-id": 1, "field-id": 1000}]},
    {"spec-id": 0, "fields": ["nope"]},
    {"spec-id": 0, "fields": [{"name": "a", "transform": "identity", "source-id": "q",
                                "field-id": 1000}]},
])
def test_bad_json_is_corrupt_metadata(bad):
    with pytest.raises(CorruptMetadata):
        PartitionSpec.from_json(bad)


# ----------------------------------------------------------------------------------------------
# properties


def test_unpartitioned():
    assert UNPARTITIONED_SPEC.is_unpartitioned()
    assert UNPARTITIONED_SPEC.to_json() == {"spec-id": 0, "fields": []}
    assert UNPARTITIONED_SPEC.last_assigned_field_id() == 999
    only_void = PartitionSpec(1, (PartitionField(1, 1000, "id_null", VOID),))
    assert only_void.is_unpartitioned() and not only_void.is_partitioned()
    spec = PartitionSpec.from_json(SPEC_JSON)
    assert spec.is_partitioned()
    assert spec.last_assigned_field_id() == 1002


def test_partition_type():
    spec = build_spec(SCHEMA, [PartitionTerm("ts", DAY), PartitionTerm("id", BucketTransform(8)),
                               PartitionTerm("name", TruncateTransform(2)),
                               PartitionTerm("d", YEAR, "y"), PartitionTerm("cat", IDENTITY),
                               PartitionTerm("price", IDENTITY)])
    pt = spec.partition_type(SCHEMA)
    assert [(f.field_id, f.name, str(f.type), f.required) for f in pt.fields()] == [
        (1000, "ts_day", "date", False),
        (1001, "id_bucket", "int", False),
        (1002, "name_trunc", "string", False),
        (1003, "y", "int", False),
        (1004, "cat", "string", False),
        (1005, "price", "decimal(9, 2)", False),
    ]


def test_partition_type_with_a_dropped_source_column():
    spec = PartitionSpec(2, (PartitionField(99, 1000, "gone_null", VOID),
                             PartitionField(98, 1001, "gone_day", DAY),
                             PartitionField(97, 1002, "gone_bucket", BucketTransform(2))))
    assert [f.type for f in spec.partition_type(SCHEMA).fields()] == [UNKNOWN, DATE, INT]


def test_compatibility_ignores_spec_id_and_field_ids():
    a = build_spec(SCHEMA, "days(ts), bucket(16, id)", spec_id=0)
    b = build_spec(SCHEMA, "days(ts), bucket(16, id)", spec_id=4, last_partition_id=1010)
    assert a.compatible_with(b) and not a.same_fields(b) and a != b
    assert a.same_fields(a.with_spec_id(9))
    c = build_spec(SCHEMA, "days(ts), bucket(8, id)")
    assert not a.compatible_with(c)
    d = build_spec(SCHEMA, "days(ts) as day, bucket(16, id)")
    assert not a.compatible_with(d)
    assert not a.compatible_with(build_spec(SCHEMA, "days(ts)"))


# ----------------------------------------------------------------------------------------------
# build_spec: names, ids, refusals


def test_default_names_match_spark_create_table():
    spec = build_spec(SCHEMA, "identity(cat), bucket(16, id), truncate(4, name), years(ts), "
                              "months(d), void(flag)")
    assert [(f.name, str(f.transform)) for f in spec.fields] == [
        ("cat", "identity"), ("id_bucket", "bucket[16]"), ("name_trunc", "truncate[4]"),
        ("ts_year", "year"), ("d_month", "month"), ("flag_null", "void"),
    ]
    assert ids(spec) == [1000, 1001, 1002, 1003, 1004, 1005]
    assert [f.source_id for f in spec.fields] == [
        SCHEMA.find_field(n).field_id for n in ("cat", "id", "name", "ts", "d", "flag")]
    assert [f.name for f in build_spec(SCHEMA, "days(ts) as a, months(d) as b").fields] == ["a", "b"]
    assert build_spec(SCHEMA, "hours(ts)").fields[0].name == "ts_hour"
    assert build_spec(SCHEMA, "days(d)").fields[0].name == "d_day"


def test_default_partition_name_for_unknown_transform_is_refused():
    with pytest.raises(InvalidInput):
        default_partition_name("x", UnknownTransform("zorder"))


def test_field_ids_continue_after_last_partition_id_and_spec_id_is_kept():
    spec = build_spec(SCHEMA, "cat, bucket(4, id)", spec_id=2, last_partition_id=1003)
    assert ids(spec) == [1004, 1005] and spec.spec_id == 2


def test_columns_match_case_insensitively_and_nested_paths_work():
    spec = build_spec(SCHEMA, "CAT, bucket(4, ID), mixed, loc.city, bucket(2, LOC.CITY)")
    assert [f.name for f in spec.fields] == ["cat", "id_bucket", "Mixed", "loc.city",
                                             "loc.city_bucket"]
    assert spec.fields[3].source_id == SCHEMA.find_field("loc.city").field_id


def test_empty_terms_give_an_empty_spec():
    spec = build_spec(SCHEMA, [])
    assert spec.fields == () and spec.is_unpartitioned()
    assert build_spec(SCHEMA, "") == UNPARTITIONED_SPEC


@pytest.mark.parametrize(("terms", "kind", "words"), [
    ("days(nope)", NotFound, ["nope"]),
    ("truncate(4, d)", ValidationError, ["truncate[4]", "'d'", "date"]),
    ("truncate(4, ts)", ValidationError, ["ts"]),
    ("hours(d)", ValidationError, ["hour", "'d'"]),
    ("years(id)", ValidationError, ["year", "'id'"]),
    ("days(name)", ValidationError, ["day", "'name'"]),
    ("bucket(4, f)", ValidationError, ["bucket[4]", "'f'", "double"]),
    ("bucket(4, flag)", ValidationError, ["'flag'", "boolean"]),
    ("truncate(4, f)", ValidationError, ["'f'"]),
    ("loc", ValidationError, ["'loc'", "non-primitive"]),
    ("tags", ValidationError, ["'tags'"]),
    ("tags.element", ValidationError, ["tags", "list"]),
    ("props.value.k", ValidationError, ["props", "map"]),
    ("days(ts), hours(ts)", ValidationError, ["redundant", "ts"]),
    ("days(ts), days(ts) as other", ValidationError, ["redundant"]),
    ("bucket(4, id), bucket(4, id) as b2", ValidationError, ["redundant"]),
    ("cat, identity(cat) as c2", ValidationError, ["redundant"]),
    ("days(ts) as x, bucket(4, id) as x", ValidationError, ["more than once", "'x'"]),
    ("bucket(4, id) as name", ValidationError, ["'name'", "column"]),
    ("identity(cat) as name", ValidationError, ["'name'", "different column"]),
])
def test_refusals_name_the_column(terms, kind, words):
    with pytest.raises(kind) as err:
        build_spec(SCHEMA, terms)
    for w in words:
        assert w in str(err.value), (w, str(err.value))


def test_allowed_combinations():
    # the reference accepts several buckets of one column, identity on double and boolean
    spec = build_spec(SCHEMA, "bucket(4, id), bucket(8, id) as b8, f, flag, truncate(2, name), name")
    assert len(spec.fields) == 6
    # ... but two default names collide, as with Spark's CREATE TABLE
    with pytest.raises(ValidationError, match="more than once"):
        build_spec(SCHEMA, "bucket(4, id), bucket(8, id)")
    # an identity field may carry its own column's name (case as written in the schema)
    assert build_spec(SCHEMA, "identity(cat) as cat").fields[0].name == "cat"


def test_unknown_transform_terms_are_refused():
    with pytest.raises(ValidationError):
        build_spec(SCHEMA, [PartitionTerm("id", UnknownTransform("zorder"), "z")])


def test_sources_in_struct_are_allowed_but_not_struct_itself():
    schema = Schema((NestedField(1, "s", StructType([NestedField(2, "a", LONG),
                                                     NestedField(3, "b", STRING)])),
                     NestedField(4, "t", TIMESTAMPTZ)))
    spec = build_spec(schema, "bucket(2, s.a), days(t)")
    assert [f.source_id for f in spec.fields] == [2, 4]


def test_unified_partition_type_takes_the_newest_name_and_orders_by_field_id() -> None:
    """One unified partition type (scan's ``_partition`` column and the partitions/entries
    tables): every field of every spec by field id, all optional, and a renamed field under
    the name of the newest spec that has it, as the reference names it."""
    from icectl.spec.partitioning import PartitionField, PartitionSpec, unified_partition_type
    from icectl.spec.transforms import IDENTITY, BucketTransform

    schema = parse_schema("id long not null, region string")
    v0 = PartitionSpec(0, (PartitionField(1, 1000, "id", IDENTITY),))
    v1 = PartitionSpec(1, (PartitionField(1, 1000, "id_renamed", IDENTITY),
                           PartitionField(2, 1001, "region_bucket", BucketTransform(4))))
    v2 = PartitionSpec(2, (PartitionField(2, 1001, "region_b", BucketTransform(4)),))
    for specs in ([v0, v1, v2], [v2, v0, v1]):
        got = unified_partition_type(specs, schema)
        assert [(f.field_id, f.name, str(f.type), f.required) for f in got.fields()] == [
            (1000, "id_renamed", "long", False), (1001, "region_b", "int", False)]
    assert len(unified_partition_type([], schema).fields()) == 0
