"""Types and schemas: type strings, Appendix C JSON, promotions, lookups, fresh id assignment."""

from __future__ import annotations

import copy

import pytest

from icectl.errors import CorruptMetadata, NotFound
from icectl.spec.schema import Schema, assign_fresh_ids, walk_fields
from icectl.spec.types import (
    BINARY,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    UNKNOWN,
    DecimalType,
    FixedType,
    GeographyType,
    GeometryType,
    ListType,
    MapType,
    NestedField,
    StructType,
    is_promotion_allowed,
    primitive_from_string,
    type_from_json,
    type_to_json,
)

# A schema as Spark + Iceberg writes it (struct inside a list, map with struct values, v3
# defaults, docs, identifier fields, and a key this version does not know).
SCHEMA_JSON = {
    "type": "struct",
    "schema-id": 2,
    "identifier-field-ids": [1],
    "fields": [
        {"id": 1, "name": "id", "required": True, "type": "long"},
        {"id": 2, "name": "price", "required": False, "type": "decimal(9, 2)", "doc": "in EUR"},
        {"id": 3, "name": "points", "required": False, "type": {
            "type": "list", "element-id": 6, "element-required": True, "element": {
                "type": "struct", "fields": [
                    {"id": 7, "name": "x", "required": True, "type": "double"},
                    {"id": 8, "name": "y", "required": False, "type": "double"}]}}},
        {"id": 4, "name": "attrs", "required": False, "type": {
            "type": "map", "key-id": 9, "key": "string", "value-id": 10, "value-required": False,
            "value": {"type": "struct", "fields": [
                {"id": 11, "name": "v", "required": False, "type": "fixed[4]"}]}}},
        {"id": 5, "name": "Status", "required": False, "type": "string",
         "initial-default": "new", "write-default": "open"},
    ],
    "x-future-key": {"kept": True},
}


def test_schema_json_round_trip_is_exact():
    s = Schema.from_json(copy.deepcopy(SCHEMA_JSON))
    assert s.to_json() == SCHEMA_JSON
    assert list(s.to_json()) == list(SCHEMA_JSON)
    assert s.schema_id == 2 and s.identifier_field_ids == (1,)
    assert s.identifier_field_names() == ["id"]
    assert s.find_field("Status").initial_default == "new"


def test_null_default_is_kept_when_present():
    obj = {"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "a", "required": False, "type": "int", "initial-default": None}]}
    assert Schema.from_json(obj).to_json() == obj


def test_lookups():
    s = Schema.from_json(SCHEMA_JSON)
    assert s.find_field(7).name == "x"
    assert s.column_name(7) == "points.element.x"
    assert s.find_field("points.element.x").field_id == 7
    assert s.find_field("points.x").field_id == 7  # the reference's short form
    assert s.find_field("attrs.value.v").field_id == 11
    assert s.find_field("attrs.v").field_id == 11
    assert s.find_field("attrs.key").field_id == 9
    assert s.find_field("status", case_sensitive=False).field_id == 5
    assert s.find_field_or_none("status") is None
    assert s.parent_id(7) == 6 and s.parent_id(6) == 3 and s.parent_id(1) is None
    assert s.highest_field_id() == 11
    assert sorted(s.all_field_ids()) == list(range(1, 12))
    assert [n for n, _ in s.leaf_fields()] == [
        "id", "price", "points.element.x", "points.element.y", "attrs.key", "attrs.value.v",
        "Status"]
    with pytest.raises(NotFound, match="nope"):
        s.find_field("nope")
    with pytest.raises(NotFound, match="99"):
        s.column_name(99)


def test_walk_fields_is_depth_first_parents_first():
    s = Schema.from_json(SCHEMA_JSON)
    assert [f.field_id for _, f, _ in walk_fields(s.struct)] == [1, 2, 3, 6, 7, 8, 4, 9, 10, 11, 5]


def test_assign_fresh_ids_matches_the_reference_order():
    s = Schema.from_json(SCHEMA_JSON)
    fresh = assign_fresh_ids(s)
    # top-level fields first (1-5), then each one's children breadth by level
    assert [(n, f.field_id) for n, f, _ in walk_fields(fresh.struct)] == [
        ("id", 1), ("price", 2), ("points", 3), ("points.element", 6), ("points.element.x", 7),
        ("points.element.y", 8), ("attrs", 4), ("attrs.key", 9), ("attrs.value", 10),
        ("attrs.value.v", 11), ("Status", 5)]
    assert fresh.identifier_field_ids == (1,)
    shifted = assign_fresh_ids(s, iter(range(100, 200)).__next__)
    assert shifted.find_field("id").field_id == 100
    assert shifted.identifier_field_ids == (100,)
    assert shifted.find_field("Status").initial_default == "new"


def test_same_structure_ignores_schema_id():
    a = Schema.from_json(SCHEMA_JSON)
    assert a.same_structure(a.with_schema_id(9))
    b = Schema(a.fields, 2, ())
    assert not a.same_structure(b)


@pytest.mark.parametrize("bad", [
    None, [], {"type": "list", "fields": []}, {"type": "struct"},
    {"type": "struct", "fields": [{"id": 1, "name": "a", "type": "int"}]},
    {"type": "struct", "fields": [{"id": 1, "name": "a", "required": True, "type": "int8"}]},
    {"type": "struct", "fields": [{"id": 1, "name": "a", "required": True,
                                   "type": {"type": "list", "element": "int"}}]},
    {"type": "struct", "fields": [{"id": 1, "name": "a", "required": True,
                                   "type": {"type": "tuple"}}]},
])
def test_bad_schema_json_is_corrupt(bad):
    with pytest.raises(CorruptMetadata):
        Schema.from_json(bad)


# ----------------------------------------------------------------------------------------------
# type strings


@pytest.mark.parametrize(("text", "expected", "rendered"), [
    ("decimal(9,2)", DecimalType(9, 2), "decimal(9, 2)"),
    ("decimal(9, 2)", DecimalType(9, 2), "decimal(9, 2)"),
    ("DECIMAL(38,0)", DecimalType(38, 0), "decimal(38, 0)"),
    ("fixed[16]", FixedType(16), "fixed[16]"),
    ("timestamp_ns", TIMESTAMP_NS, "timestamp_ns"),
    ("unknown", UNKNOWN, "unknown"),
    ("geometry", GeometryType(), "geometry"),
    ("geometry(srid:4326)", GeometryType("srid:4326"), "geometry(srid:4326)"),
    ("GEOMETRY(srid:4326)", GeometryType("srid:4326"), "geometry(srid:4326)"),
    ("geography(OGC:CRS84, karney)", GeographyType("OGC:CRS84", "karney"),
     "geography(OGC:CRS84, karney)"),
    ("geography(srid:4269)", GeographyType("srid:4269"), "geography(srid:4269)"),
])
def test_primitive_strings(text, expected, rendered):
    t = primitive_from_string(text)
    assert t == expected
    assert str(t) == rendered
    assert type_from_json(type_to_json(t)) == t


@pytest.mark.parametrize("text", ["decimal(9)", "fixed(16)", "int8", "list<int>", ""])
def test_not_primitive_strings(text):
    assert primitive_from_string(text) is None


def test_nested_type_json_round_trip_and_strings():
    t = MapType(1, STRING, 2, ListType(3, StructType([NestedField(4, "a", INT, True)]), True))
    assert type_from_json(type_to_json(t)) == t
    assert str(t) == "map<string, list<struct<a: int>>>"
    assert t.key_field.required and not t.value_field.required
    assert ListType(5, DATE).element_field == NestedField(5, "element", DATE, False)


def test_types_are_hashable_values():
    assert len({DecimalType(9, 2), DecimalType(9, 2), FixedType(3), LONG, LONG}) == 3
    assert DecimalType(9, 2) != DecimalType(9, 3) and FixedType(2) != BINARY


# ----------------------------------------------------------------------------------------------
# promotions (spec "Schema Evolution")


@pytest.mark.parametrize(("old", "new", "version", "allowed"), [
    (INT, LONG, 2, True),
    (LONG, INT, 2, False),
    (FLOAT, DOUBLE, 1, True),
    (DOUBLE, FLOAT, 2, False),
    (DecimalType(9, 2), DecimalType(18, 2), 2, True),
    (DecimalType(9, 2), DecimalType(18, 3), 2, False),
    (DecimalType(9, 2), DecimalType(8, 2), 2, False),
    (DATE, TIMESTAMP, 2, False),
    (DATE, TIMESTAMP, 3, True),
    (DATE, TIMESTAMP_NS, 3, True),
    (DATE, TIMESTAMPTZ, 3, False),
    (UNKNOWN, STRING, 3, True),
    (STRING, BINARY, 2, False),
    (INT, STRING, 2, False),
    (FixedType(4), FixedType(4), 2, True),
])
def test_promotions(old, new, version, allowed):
    assert is_promotion_allowed(old, new, version) is allowed
