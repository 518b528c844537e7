"""Name mappings: JSON in the reference's form, lookups, and the mapping of a schema."""

from __future__ import annotations

import json

import pytest

from icectl.errors import CorruptMetadata
from icectl.spec.name_mapping import (
    MappedField,
    NameMapping,
    mapping_from_schema,
    name_mapping_from_json,
    name_mapping_to_json,
    parse_name_mapping,
    table_name_mapping,
)
from icectl.spec.schema import Schema
from icectl.spec.types import INT, LONG, STRING, ListType, MapType, NestedField, StructType

SPEC_EXAMPLE = """
[ { "field-id": 1, "names": ["id", "record_id"] },
  { "field-id": 2, "names": ["data"] },
  { "field-id": 3, "names": ["location"], "fields": [
      { "field-id": 4, "names": ["latitude", "lat"] },
      { "field-id": 5, "names": ["longitude", "long"] }
    ] } ]
"""


def test_parse_and_find() -> None:
    m = parse_name_mapping(SPEC_EXAMPLE)
    assert m.find_id(["record_id"]) == 1
    assert m.find_id(["id"]) == 1
    assert m.find_id(["location", "lat"]) == 4
    assert m.find_id(["location", "longitude"]) == 5
    assert m.find_id(["lat"]) is None
    assert m.find_id(["location", "x"]) is None
    assert m.find_by_id(3).names == ("location",)
    assert m.find_by_id(99) is None
    assert m.fields[0].fields is None and len(m.fields[2].fields) == 2


def test_optional_keys() -> None:
    m = name_mapping_from_json([{"names": ["a"]}, {"field-id": 7}, {"field-id": 8, "names": ["b", "b"]}])
    assert m.fields[0] == MappedField(None, ("a",))
    assert m.fields[1] == MappedField(7, ())
    assert m.fields[2].names == ("b",)
    assert m.find_id(["a"]) is None


@pytest.mark.parametrize("bad", [
    "{}", "[1]", "[{\"field-id\": \"1\", \"names\": [\"a\"]}]", "[{\"field-id\": 1, \"names\": \"a\"}]",
    "[{\"field-id\": 1, \"names\": [\"a\"]}, {\"field-id\": 1, \"names\": [\"b\"]}]",
    "[{\"field-id\": 1, \"names\": [\"a\"]}, {\"field-id\": 2, \"names\": [\"a\"]}]",
    "[{\"field-id\": 1, \"names\": [\"a\"], \"fields\": {}}]", "not json",
])
def test_invalid_mappings(bad: str) -> None:
    with pytest.raises(CorruptMetadata):
        parse_name_mapping(bad)


def _schema() -> Schema:
    return Schema((
        NestedField(1, "id", LONG, True),
        NestedField(2, "location", StructType([NestedField(5, "lat", INT), NestedField(6, "long", INT)])),
        NestedField(3, "tags", ListType(7, STRING)),
        NestedField(4, "props", MapType(8, STRING, 9, StructType([NestedField(10, "a", INT)]))),
    ))


# What the reference's NameMappingParser.toJson(MappingUtil.create(schema)) writes for _schema()
# (Jackson's default pretty printer; the interop test checks the same against Java).
EXPECTED_JSON = """[ {
  "field-id" : 1,
  "names" : [ "id" ]
}, {
  "field-id" : 2,
  "names" : [ "location" ],
  "fields" : [ {
    "field-id" : 5,
    "names" : [ "lat" ]
  }, {
    "field-id" : 6,
    "names" : [ "long" ]
  } ]
}, {
  "field-id" : 3,
  "names" : [ "tags" ],
  "fields" : [ {
    "field-id" : 7,
    "names" : [ "element" ]
  } ]
}, {
  "field-id" : 4,
  "names" : [ "props" ],
  "fields" : [ {
    "field-id" : 8,
    "names" : [ "key" ]
  }, {
    "field-id" : 9,
    "names" : [ "value" ],
    "fields" : [ {
      "field-id" : 10,
      "names" : [ "a" ]
    } ]
  } ]
} ]"""


def test_mapping_from_schema() -> None:
    m = mapping_from_schema(_schema())
    assert name_mapping_to_json(m) == EXPECTED_JSON
    assert m.find_id(["tags", "element"]) == 7
    assert m.find_id(["props", "key"]) == 8
    assert m.find_id(["props", "value", "a"]) == 10
    assert parse_name_mapping(EXPECTED_JSON) == m
    assert json.loads(name_mapping_to_json(m, pretty=False)) == json.loads(EXPECTED_JSON)


def test_round_trip_with_aliases_and_empty_lists() -> None:
    m = NameMapping((MappedField(1, ("a", "alias")), MappedField(2, (), ()),
                     MappedField(3, ("s",), (MappedField(4, ("x",)),))))
    text = name_mapping_to_json(m)
    assert '"names" : [ ]' in text and '"fields" : [ ]' in text
    assert parse_name_mapping(text) == m
    assert name_mapping_to_json(NameMapping(())) == "[ ]"


def test_table_name_mapping_prefers_the_property() -> None:
    schema = _schema()
    assert table_name_mapping({}, schema) == mapping_from_schema(schema)
    prop = {"schema.name-mapping.default": '[{"field-id": 1, "names": ["ident"]}]'}
    assert table_name_mapping(prop, schema).find_id(["ident"]) == 1
