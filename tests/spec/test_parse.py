"""CLI text parsers: types, column lists, partition terms, sort terms."""

from __future__ import annotations

import pytest

from icectl.errors import InvalidInput
from icectl.spec.parse import (
    PartitionTerm,
    SortTerm,
    parse_partition_terms,
    parse_schema,
    parse_sort_order,
    parse_type,
)
from icectl.spec.transforms import (
    DAY,
    HOUR,
    IDENTITY,
    MONTH,
    VOID,
    YEAR,
    BucketTransform,
    TruncateTransform,
)
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
    UNKNOWN,
    UUID,
    VARIANT,
    DecimalType,
    FixedType,
    GeographyType,
    GeometryType,
    ListType,
    MapType,
    NestedField,
    StructType,
    type_to_json,
)

# ----------------------------------------------------------------------------------------------
# types


@pytest.mark.parametrize(("text", "expected"), [
    ("int", INT), ("integer", INT), ("INT", INT),
    ("long", LONG), ("bigint", LONG),
    ("boolean", BOOLEAN), ("bool", BOOLEAN),
    ("float", FLOAT), ("double", DOUBLE), ("string", STRING), ("binary", BINARY),
    ("date", DATE), ("time", TIME), ("timestamp", TIMESTAMP), ("timestamptz", TIMESTAMPTZ),
    ("timestamp_ns", TIMESTAMP_NS), ("timestamptz_ns", TIMESTAMPTZ_NS), ("uuid", UUID),
    ("unknown", UNKNOWN), ("variant", VARIANT),
    ("decimal(9,2)", DecimalType(9, 2)), ("decimal( 38 , 0 )", DecimalType(38, 0)),
    ("fixed[16]", FixedType(16)), ("fixed(16)", FixedType(16)),
    ("geometry", GeometryType()), ("geometry(srid:4326)", GeometryType("srid:4326")),
    ("geography", GeographyType()),
    ("geography(OGC:CRS84, karney)", GeographyType("OGC:CRS84", "karney")),
])
def test_primitive_types(text, expected):
    assert parse_type(text) == expected


def test_nested_types_with_placeholder_ids():
    t = parse_type("map<string, struct<a: int, b: list<double not null> not null>>")
    assert type_to_json(t) == {
        "type": "map", "key-id": 1, "key": "string", "value-id": 2, "value-required": False,
        "value": {"type": "struct", "fields": [
            {"id": 3, "name": "a", "required": False, "type": "int"},
            {"id": 4, "name": "b", "required": True, "type": {
                "type": "list", "element-id": 5, "element": "double", "element-required": True}},
        ]},
    }
    assert parse_type("list<string>") == ListType(1, STRING, False)
    assert parse_type("array<string>") == ListType(1, STRING, False)
    assert parse_type("map<string, int not null>") == MapType(1, STRING, 2, INT, True)
    assert parse_type("map<string not null, int>") == MapType(1, STRING, 2, INT, False)
    assert parse_type("struct<>") == StructType(())
    assert parse_type("struct<`a b`: int, c string>").fields()[0].name == "a b"


@pytest.mark.parametrize(("text", "position", "word"), [
    ("", 1, "expected a type"),
    ("list<", 6, "expected a type"),
    ("list<int", 9, "'>'"),
    ("map<int>", 8, "','"),
    ("decimal(40, 2)", 1, "precision"),
    ("decimal(9, 10)", 1, "scale"),
    ("decimal", 8, "'('"),
    ("fixed[0]", 1, "positive"),
    ("smallint", 1, "16-bit"),
    ("tinyint", 1, "8-bit"),
    ("varchar", 1, "string"),
    ("foo", 1, "unknown type 'foo'"),
    ("struct<a int, A int>", 15, "duplicate"),
    ("map<string null, int>", 16, "keys"),
    ("int int", 5, "unexpected"),
    ("list<int> x", 11, "unexpected"),
    ("struct<a: int", 14, "'>'"),
    ("int ;", 5, "unexpected character"),
    ("struct<`a: int>", 8, "unterminated"),
])
def test_type_errors_point_at_the_problem(text, position, word):
    with pytest.raises(InvalidInput) as err:
        parse_type(text)
    msg = str(err.value)
    assert f"position {position}" in msg and word in msg, msg


# ----------------------------------------------------------------------------------------------
# schemas


def test_schema_column_list():
    s = parse_schema("id long not null, ts timestamptz, tags list<string>, "
                     "loc struct<lat: double, lon: double not null>, "
                     "`my col`: string comment 'it''s here', "
                     "m map<string, list<int>> required, note string null")
    assert [(f.field_id, f.name, str(f.type), f.required) for f in s.fields] == [
        (1, "id", "long", True), (2, "ts", "timestamptz", False),
        (3, "tags", "list<string>", False), (4, "loc", "struct<lat: double, lon: double>", False),
        (5, "my col", "string", False), (6, "m", "map<string, list<int>>", True),
        (7, "note", "string", False),
    ]
    assert s.find_field("my col").doc == "it's here"
    # nested ids come after all top-level ids, as the reference assigns them
    assert s.find_field("tags.element").field_id == 8
    assert s.find_field("loc.lat").field_id == 9
    assert s.find_field("loc.lon").required
    assert s.find_field("m.key").field_id == 11 and s.find_field("m.value").field_id == 12
    assert s.find_field("m.value.element").field_id == 13
    assert s.highest_field_id() == 13


def test_schema_comment_then_not_null():
    s = parse_schema("a int comment 'x' not null")
    assert s.fields[0].required and s.fields[0].doc == "x"


@pytest.mark.parametrize(("text", "word"), [
    ("", "at least one column"),
    ("a int, A long", "duplicate column name 'A'"),
    ("a int,", "field name"),
    ("a", "type"),
    ("a int not", "NULL"),
    ("a int comment x", "quoted comment"),
    ("a int comment 'x", "unterminated string"),
])
def test_schema_errors(text, word):
    with pytest.raises(InvalidInput) as err:
        parse_schema(text)
    assert word in str(err.value)


# ----------------------------------------------------------------------------------------------
# partition terms


def test_partition_terms_spark_syntax_and_aliases():
    terms = parse_partition_terms(
        "days(ts), bucket(16, id), truncate(4, name), identity(cat), cat, "
        "day(a), date(a), years(a), year(a), months(a), month(a), hours(a), hour(a), "
        "date_hour(a), void(a), BUCKET(2, `weird col`), truncate(name, 3) AS t, "
        "s.inner.x, `a.b`.c, hours(x) as `h h`")
    assert terms == [
        PartitionTerm("ts", DAY), PartitionTerm("id", BucketTransform(16)),
        PartitionTerm("name", TruncateTransform(4)), PartitionTerm("cat", IDENTITY),
        PartitionTerm("cat", IDENTITY),
        PartitionTerm("a", DAY), PartitionTerm("a", DAY), PartitionTerm("a", YEAR),
        PartitionTerm("a", YEAR), PartitionTerm("a", MONTH), PartitionTerm("a", MONTH),
        PartitionTerm("a", HOUR), PartitionTerm("a", HOUR), PartitionTerm("a", HOUR),
        PartitionTerm("a", VOID), PartitionTerm("weird col", BucketTransform(2)),
        PartitionTerm("name", TruncateTransform(3), "t"),
        PartitionTerm("s.inner.x", IDENTITY), PartitionTerm("a.b.c", IDENTITY),
        PartitionTerm("x", HOUR, "h h"),
    ]


def test_columns_named_like_functions_are_columns():
    assert parse_partition_terms("date, hour") == [PartitionTerm("date", IDENTITY),
                                                   PartitionTerm("hour", IDENTITY)]
    assert parse_partition_terms("`1`") == [PartitionTerm("1", IDENTITY)]
    assert parse_partition_terms("  ") == []


@pytest.mark.parametrize(("text", "word"), [
    ("bucket(id)", "bucket(N, column)"),
    ("bucket(16, id, x)", "bucket(N, column)"),
    ("bucket(4, 5)", "bucket(N, column)"),
    ("bucket(0, id)", "positive"),
    ("truncate(2147483648, id)", "positive"),
    ("days(a, b)", "one column"),
    ("days(3)", "one column"),
    ("foo(x)", "unknown transform 'foo'"),
    ("days(ts) as", "partition field name"),
    ("days(ts),", "column name"),
    ("days(ts) days(x)", "unexpected"),
    ("days(ts", "')'"),
    ("a.", "after '.'"),
])
def test_partition_term_errors(text, word):
    with pytest.raises(InvalidInput) as err:
        parse_partition_terms(text)
    assert word in str(err.value)
    assert "position" in str(err.value)


# ----------------------------------------------------------------------------------------------
# sort terms


def test_sort_terms():
    assert parse_sort_order("id desc nulls last, ts, bucket(4, cat) asc, "
                            "days(t) NULLS FIRST, x ASC NULLS LAST") == [
        SortTerm("id", IDENTITY, "desc", "nulls-last"),
        SortTerm("ts", IDENTITY),
        SortTerm("cat", BucketTransform(4), "asc"),
        SortTerm("t", DAY, None, "nulls-first"),
        SortTerm("x", IDENTITY, "asc", "nulls-last"),
    ]
    assert parse_sort_order("") == []


@pytest.mark.parametrize(("text", "word"), [
    ("id desc nulls", "FIRST or LAST"),
    ("id up", "unexpected"),
    ("id nulls first desc", "unexpected"),
    ("id,,ts", "column name"),
])
def test_sort_term_errors(text, word):
    with pytest.raises(InvalidInput) as err:
        parse_sort_order(text)
    assert word in str(err.value)


def test_non_text_is_invalid_input():
    with pytest.raises(InvalidInput):
        parse_type(None)  # type: ignore[arg-type]


def test_struct_field_type_helpers_are_consistent():
    # parse_type's struct is the same value parse_schema would build for the same text
    t = parse_type("struct<a: int not null>")
    assert t == StructType([NestedField(1, "a", INT, True)])
