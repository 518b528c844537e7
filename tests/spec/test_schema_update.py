"""SchemaUpdate: the reference's schema evolution rules, as pure functions."""

from __future__ import annotations

import json

import pytest

from icectl.errors import NotFound, ValidationError
from icectl.spec.metadata import new_table_metadata, with_properties
from icectl.spec.name_mapping import NAME_MAPPING_PROPERTY, mapping_from_schema, name_mapping_to_json, parse_name_mapping
from icectl.spec.parse import parse_schema, parse_type
from icectl.spec.partitioning import build_spec
from icectl.spec.schema import Schema
from icectl.spec.schema_metadata import update_name_mapping, update_table_schema
from icectl.spec.schema_update import SchemaUpdate
from icectl.spec.sorting import build_sort_order
from icectl.spec.types import DOUBLE, LONG, TIMESTAMP

SCHEMA = parse_schema(
    "id int not null, name string, loc struct<lat: float, lon: float>, "
    "points list<struct<x: int, y: int>>, attrs map<string, struct<v: int>>, price decimal(9, 2), d date")


def update(schema: Schema = SCHEMA, version: int = 2) -> SchemaUpdate:
    return SchemaUpdate(schema, schema.highest_field_id(), version)


def names(schema: Schema) -> list[str]:
    return [schema.column_name(i) for i in schema.all_field_ids()]


def test_add_assigns_ids_from_last_column_id_parents_first() -> None:
    last = SCHEMA.highest_field_id()
    s = update().add_column(None, "tags", parse_type("map<string, struct<a: int, b: list<long>>>")).apply()
    f = s.find_field("tags")
    assert f.field_id == last + 1
    assert (f.type.key_id, f.type.value_id) == (last + 2, last + 3)
    assert s.find_field("tags.value.a").field_id == last + 4
    assert s.find_field("tags.value.b").field_id == last + 5
    assert s.find_field("tags.value.b.element").field_id == last + 6
    assert not f.required


def test_add_nested_into_struct_list_element_and_map_value() -> None:
    u = update()
    u.add_column("loc", "alt", DOUBLE).add_column("points", "z", LONG).add_column("attrs", "w", LONG)
    s = u.apply()
    assert [f.name for f in s.find_field("loc").type.fields()] == ["lat", "lon", "alt"]
    assert s.find_field("points.element.z").type == LONG
    assert s.find_field("attrs.value.w").type == LONG


def test_add_with_position() -> None:
    u = update()
    u.add_column(None, "region", parse_type("string")).move_after("region", "id")
    u.add_column(None, "first_col", LONG).move_first("first_col")
    u.add_column("loc", "alt", DOUBLE).move_before("loc.alt", "loc.lat")
    s = u.apply()
    assert [f.name for f in s.fields][:3] == ["first_col", "id", "region"]
    assert [f.name for f in s.find_field("loc").type.fields()] == ["alt", "lat", "lon"]


def test_rename_keeps_id_and_identifier_fields() -> None:
    base = Schema(SCHEMA.fields, 0, (SCHEMA.find_field("id").field_id,))
    s = update(base).rename_column("id", "key").rename_column("loc.lat", "latitude").apply()
    assert s.find_field("key").field_id == base.find_field("id").field_id
    assert s.find_field("loc.latitude").field_id == base.find_field("loc.lat").field_id
    assert s.identifier_field_names() == ["key"]


def test_drop_and_re_add_same_name_gets_new_id() -> None:
    u = update().drop_column("name")
    u.add_column(None, "name", LONG)
    s = u.apply()
    assert s.find_field("name").field_id == SCHEMA.highest_field_id() + 1
    assert s.find_field("name").type == LONG


@pytest.mark.parametrize("old,new,version,ok", [
    ("id", "long", 2, True),
    ("loc.lat", "double", 2, True),
    ("price", "decimal(12, 2)", 2, True),
    ("price", "decimal(12, 3)", 2, False),
    ("price", "decimal(8, 2)", 2, False),
    ("name", "int", 2, False),
    ("id", "string", 2, False),
    ("d", "timestamp", 2, False),
    ("d", "timestamp", 3, True),
    ("d", "timestamptz", 3, False),
])
def test_promotions(old: str, new: str, version: int, ok: bool) -> None:
    u = update(version=version)
    if ok:
        assert u.update_column(old, parse_type(new)).apply().find_field(old).type == parse_type(new)
    else:
        with pytest.raises(ValidationError):
            u.update_column(old, parse_type(new))


def test_optional_and_doc() -> None:
    s = update().make_optional("id").update_doc("name", "a name").apply()
    assert not s.find_field("id").required
    assert s.find_field("name").doc == "a name"


@pytest.mark.parametrize("build,error", [
    (lambda u: u.add_column(None, "name", LONG), ValidationError),
    (lambda u: u.add_column(None, "n", LONG, required=True), ValidationError),
    (lambda u: u.add_column("nope", "n", LONG), NotFound),
    (lambda u: u.add_column("name", "n", LONG), ValidationError),
    (lambda u: u.drop_column("nope"), NotFound),
    (lambda u: u.rename_column("name", "id"), ValidationError),
    (lambda u: u.move_after("loc.lat", "id"), ValidationError),
    (lambda u: u.move_before("id", "loc.lat"), ValidationError),
    (lambda u: u.drop_column("points.element"), ValidationError),
    (lambda u: u.drop_column("attrs.key"), ValidationError),
    (lambda u: u.set_identifier_fields(["name"]), ValidationError),
    (lambda u: u.set_identifier_fields(["loc.lat"]), ValidationError),
    (lambda u: u.set_identifier_fields(["points.element.x"]), ValidationError),
])
def test_refusals(build, error) -> None:
    with pytest.raises(error):
        build(update()).apply()


def test_identifier_field_cannot_be_dropped() -> None:
    base = Schema(SCHEMA.fields, 0, (1,))
    with pytest.raises(ValidationError, match="identifier"):
        update(base).drop_column("id").apply()
    # unless the identifier fields change in the same update
    s = update(base).set_identifier_fields([]).drop_column("id").apply()
    assert s.find_field_or_none("id") is None and s.identifier_field_ids == ()


def test_required_add_with_default() -> None:
    s = update(version=3).add_column(None, "flag", parse_type("boolean"), required=True, default=True).apply()
    f = s.find_field("flag")
    assert f.required and f.initial_default is True and f.write_default is True
    j = s.to_json()["fields"][-1]
    assert j["initial-default"] is True and j["write-default"] is True


def test_union_by_name() -> None:
    other = parse_schema("id long, name string not null, loc struct<lat: double, alt: int>, extra list<int>")
    u = update()
    u.union_by_name(other)
    s = u.apply()
    last = SCHEMA.highest_field_id()
    assert s.find_field("id").type == LONG and s.find_field("id").required is False
    assert s.find_field("name").required is False  # never made required
    assert s.find_field("loc.lat").type == DOUBLE
    assert s.find_field("loc.alt").field_id == last + 1
    assert s.find_field("extra").field_id == last + 2
    assert s.find_field("extra.element").field_id == last + 3
    # a narrower type in the other schema is fine; an incompatible one is not
    update().union_by_name(parse_schema("price decimal(5, 2)")).apply()
    with pytest.raises(ValidationError):
        update().union_by_name(parse_schema("name int")).apply()


def _md(version: int = 2, **kw):
    return new_table_metadata(SCHEMA, build_spec(SCHEMA, kw.get("spec", "bucket(4, id)")),
                              build_sort_order(SCHEMA, kw.get("order", "")), "/tmp/t",
                              format_version=version, timestamp_ms=1)


def test_table_refuses_dropping_partition_or_sort_source() -> None:
    md = _md()
    with pytest.raises(ValidationError, match="partition"):
        update_table_schema(md, SchemaUpdate(md.schema, md.last_column_id).drop_column("id"))
    md = _md(spec="", order="name desc")
    with pytest.raises(ValidationError, match="sort order"):
        update_table_schema(md, SchemaUpdate(md.schema, md.last_column_id).drop_column("name"))


def test_table_refuses_date_promotion_under_identity_partition() -> None:
    md = _md(3, spec="d")
    with pytest.raises(ValidationError, match="partition"):
        update_table_schema(md, SchemaUpdate(md.schema, md.last_column_id, 3).update_column("d", TIMESTAMP))
    md = _md(3, spec="days(d)")
    out = update_table_schema(md, SchemaUpdate(md.schema, md.last_column_id, 3).update_column("d", TIMESTAMP))
    assert out.schema.find_field("d").type == TIMESTAMP


def test_table_refuses_defaults_and_v3_types_before_v3() -> None:
    md = _md(2)
    u = SchemaUpdate(md.schema, md.last_column_id, 2).add_column(None, "f", LONG, default=1)
    with pytest.raises(ValidationError, match="format version 3"):
        update_table_schema(md, u)
    u = SchemaUpdate(md.schema, md.last_column_id, 2).add_column(None, "ns", parse_type("timestamp_ns"))
    with pytest.raises(ValidationError, match="format version 3"):
        update_table_schema(md, u)


def test_table_schema_ids_last_column_id_and_reuse() -> None:
    md = _md()
    md2 = update_table_schema(md, SchemaUpdate(md.schema, md.last_column_id).add_column(None, "x", LONG))
    assert md2.current_schema_id == 1 and md2.last_column_id == md.last_column_id + 1
    md3 = update_table_schema(md2, SchemaUpdate(md2.schema, md2.last_column_id).drop_column("x"))
    assert md3.current_schema_id == 0  # the identical first schema is reused
    assert md3.last_column_id == md2.last_column_id  # never goes down
    assert [s.schema_id for s in md3.schemas] == [0, 1]


def test_name_mapping_update_keeps_old_names_and_adds_entries() -> None:
    md = _md()
    md = with_properties(md, {NAME_MAPPING_PROPERTY: name_mapping_to_json(mapping_from_schema(md.schema))})
    u = SchemaUpdate(md.schema, md.last_column_id).rename_column("name", "full_name")
    u.add_column(None, "tags", parse_type("list<string>")).add_column("loc", "alt", DOUBLE)
    out = update_table_schema(md, u)
    m = parse_name_mapping(out.properties[NAME_MAPPING_PROPERTY])
    name_id = md.schema.find_field("name").field_id
    assert m.find(["name"]).field_id == name_id and m.find(["full_name"]).field_id == name_id
    assert m.find(["tags"]).field_id == out.schema.find_field("tags").field_id
    assert m.find(["tags", "element"]).field_id == out.schema.find_field("tags.element").field_id
    assert m.find(["loc", "alt"]).field_id == out.schema.find_field("loc.alt").field_id


def test_name_mapping_moves_a_name_taken_by_a_rename() -> None:
    s = parse_schema("a int, b int")
    mapping = mapping_from_schema(s)
    u = SchemaUpdate(s, 2).rename_column("a", "c").rename_column("b", "a")
    r = u.result()
    m = update_name_mapping(mapping, r.updated, r.added)
    assert set(m.find_by_id(1).names) == {"c"}  # "a" now belongs to field 2
    assert set(m.find_by_id(2).names) == {"a", "b"}


def test_column_properties_follow_renames_and_drops() -> None:
    md = _md(spec="")
    md = with_properties(md, {"write.metadata.metrics.column.name": "full",
                              "write.metadata.metrics.column.price": "counts"})
    u = SchemaUpdate(md.schema, md.last_column_id).rename_column("name", "nm").drop_column("price")
    props = update_table_schema(md, u).properties
    assert props.get("write.metadata.metrics.column.nm") == "full"
    assert "write.metadata.metrics.column.name" not in props
    assert "write.metadata.metrics.column.price" not in props
    json.dumps(props)
