"""Nested columns in the reader and the evaluators: struct fields matched by field id at any
depth (inside lists and maps too), files without field ids read through the name mapping,
pruned projections, filters on struct fields, and ``is [not] null`` on struct/list/map columns
never decided by metrics (files built with pyarrow, committed through the producer)."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from icectl.errors import InvalidInput
from icectl.expr.binding import bind
from icectl.expr.evaluators import MetricsEvaluator
from icectl.expr.eval_strict import StrictMetricsEvaluator
from icectl.expr.expressions import AlwaysFalse
from icectl.expr.parser import parse_filter
from icectl.io.manifest.columns import clear_cache
from icectl.scan.planner import plan_scan
from icectl.scan.reader import open_scan
from icectl.spec.manifests import DATA, DataFile
from icectl.spec.schema import Schema, select_fields
from icectl.spec.types import INT, LONG, STRING, ListType, MapType, NestedField, StructType
from icectl.table.table import Table

from support.tables import empty_table
from support.files import commit, data_file, field, write_parquet

SCHEMA = ("id long, info struct<a: int, b: string>, tags list<string>, m map<string, int>, "
          "pts list<struct<x: int, y: int>>")
# ids icectl assigns: id 1, info 2, tags 3, m 4, pts 5, info.a 6, info.b 7, tags.element 8,
# m.key 9, m.value 10, pts.element 11, pts.x 12, pts.y 13


def rows(t: Table, text: str | None = None, **kw):
    clear_cache()
    s = open_scan(Table.load(t.location), text, **kw)
    return [r for b in s.batches() for r in b.to_pylist()]


def _file_fields(ids: bool = True, info_names=("a", "b")) -> list[pa.Field]:
    f = field if ids else (lambda n, t, _: pa.field(n, t))
    info = pa.struct([f(info_names[0], pa.int32(), 6), f(info_names[1], pa.string(), 7)])
    pts = pa.list_(f("element", pa.struct([f("x", pa.int32(), 12), f("y", pa.int32(), 13)]), 11))
    return [f("id", pa.int64(), 1), f("info", info, 2),
            f("tags", pa.list_(f("element", pa.string(), 8)), 3),
            f("m", pa.map_(f("key", pa.string(), 9).with_nullable(False),
                           f("value", pa.int32(), 10)), 4),
            f("pts", pts, 5)]


ROWS = {
    "id": [1, 2, 3],
    "info": [{"a": 5, "b": "x"}, None, {"a": None, "b": "z"}],
    "tags": [["a"], None, [None]],
    "m": [[("k", 1)], None, []],
    "pts": [[{"x": 1, "y": 2}, None], None, [{"x": None, "y": 4}]],
}


def nested_table(tmp_path, ids: bool = True, info_names=("a", "b")) -> Table:
    t = empty_table(tmp_path / "t", SCHEMA, format_version=3)  # v3: a nested field added with an initial default
    p = write_parquet(tmp_path / "t/data/a.parquet", dict(ROWS, info=[
        None if v is None else dict(zip(info_names, v.values())) for v in ROWS["info"]]),
        _file_fields(ids, info_names), row_group_size=2)
    commit(t, [data_file(p, 3)])
    return Table.load(t.location)


def _evolve(t: Table) -> Table:
    from icectl.ops.metadata.schema import add_column, evolve_schema

    evolve_schema(t, lambda u: (u.rename_column("info.a", "aa"), u.update_column("info.a", LONG),
                                u.rename_column("pts.x", "xx"), u.update_column("pts.y", LONG)))
    evolve_schema(Table.load(t.location), lambda u: (add_column(u, "info.c", STRING, default="d"),
                                                     add_column(u, "pts.z", STRING)))
    return Table.load(t.location)


EVOLVED = [
    {"id": 1, "info": {"aa": 5, "b": "x", "c": "d"}, "tags": ["a"], "m": [("k", 1)],
     "pts": [{"xx": 1, "y": 2, "z": None}, None]},
    {"id": 2, "info": None, "tags": None, "m": None, "pts": None},
    {"id": 3, "info": {"aa": None, "b": "z", "c": "d"}, "tags": [None], "m": [],
     "pts": [{"xx": None, "y": 4, "z": None}]},
]


def test_evolved_structs_read_by_field_id_inside_lists_too(tmp_path):
    t = _evolve(nested_table(tmp_path))
    got = rows(t)
    assert got == EVOLVED
    s = open_scan(t)
    info = s.arrow_schema().field("info").type
    assert [info.field(i).name for i in range(info.num_fields)] == ["aa", "b", "c"]
    assert info.field(0).type == pa.int64()


def test_files_without_field_ids_read_nested_fields_through_the_name_mapping(tmp_path):
    # the file names info's fields "alpha" and "beta"; the mapping knows them by those names
    t = nested_table(tmp_path, ids=False, info_names=("alpha", "beta"))
    from icectl.ops.metadata.properties import set_properties
    from icectl.spec.name_mapping import mapping_from_schema

    mapping = mapping_from_schema(t.metadata.schema).to_json()
    for entry in mapping:
        if entry["names"] == ["info"]:
            for sub in entry["fields"]:
                sub["names"].append({"a": "alpha", "b": "beta"}[sub["names"][0]])
    set_properties(t, {"schema.name-mapping.default": json.dumps(mapping)})
    t = Table.load(t.location)
    assert rows(t, columns=["id", "info"]) == [
        {"id": 1, "info": {"a": 5, "b": "x"}}, {"id": 2, "info": None},
        {"id": 3, "info": {"a": None, "b": "z"}}]
    assert rows(t, "info.b = 'z'", columns=["id"]) == [{"id": 3}]


def test_pruned_projection_and_nested_filters(tmp_path):
    t = _evolve(nested_table(tmp_path))
    assert rows(t, columns=["pts.z", "info.aa"]) == [
        {"pts": [{"z": None}, None], "info": {"aa": 5}}, {"pts": None, "info": None},
        {"pts": [{"z": None}], "info": {"aa": None}}]
    assert rows(t, "info.aa >= 5", columns=["id"]) == [{"id": 1}]
    assert rows(t, "info.c = 'd'", columns=["id"]) == [{"id": 1}, {"id": 3}]  # initial default
    assert rows(t, "info.aa is null", columns=["id"]) == [{"id": 2}, {"id": 3}]
    assert rows(t, "info is null", columns=["id"]) == [{"id": 2}]
    assert rows(t, "tags is not null and m is not null and pts is not null",
                columns=["id"]) == [{"id": 1}, {"id": 3}]
    assert rows(t, "not (info is null)", columns=["id"]) == [{"id": 1}, {"id": 3}]


def test_select_fields_prunes_structs_at_any_depth():
    s = Schema.from_json({"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "required": True, "type": "long"},
        {"id": 2, "name": "info", "required": False, "type": {"type": "struct", "fields": [
            {"id": 6, "name": "a", "required": False, "type": "int"},
            {"id": 7, "name": "b", "required": False, "type": "string"}]}},
        {"id": 5, "name": "pts", "required": False, "type": {
            "type": "list", "element-id": 11, "element-required": False, "element": {
                "type": "struct", "fields": [
                    {"id": 12, "name": "x", "required": False, "type": "int"},
                    {"id": 13, "name": "y", "required": False, "type": "int"}]}}},
        {"id": 4, "name": "m", "required": False, "type": {
            "type": "map", "key-id": 9, "key": "string", "value-id": 10,
            "value-required": False, "value": "int"}}]})
    (info,) = select_fields(s.fields, {7})
    assert info.type == StructType([NestedField(7, "b", STRING)])
    (pts,) = select_fields(s.fields, {13})
    assert pts.type == ListType(11, StructType([NestedField(13, "y", INT)]), False)
    assert select_fields(s.fields, {11}) == [s.find_field(5)]  # the element: the whole list
    assert select_fields(s.fields, {9}) == [s.find_field(4)]
    assert isinstance(select_fields(s.fields, {10})[0].type, MapType)
    assert select_fields(s.fields, {2, 6}) == [s.find_field(2)]  # a whole struct wins
    assert select_fields(s.fields, {1, 7})[0] == s.find_field(1)
    assert select_fields(s.fields, set()) == []


def _schema(t: Table) -> Schema:
    return t.metadata.schema


def test_nested_nullness_is_never_decided_by_metrics(tmp_path):
    """Counts a writer may keep under a struct, list or map id say nothing sound about the
    column's own nulls (a list's null count may count null elements; a struct's children do
    not tell whether the struct is null): inclusive metrics might match, strict ones prove
    nothing."""
    t = nested_table(tmp_path)
    s = _schema(t)
    df = DataFile(DATA, "x.parquet", "PARQUET", (), 3, 100,
                  value_counts={2: 3, 3: 3, 4: 3, 6: 3}, null_value_counts={2: 0, 3: 3, 4: 0, 6: 3})
    for text in ("info is null", "tags is not null", "m is null", "pts is null"):
        assert MetricsEvaluator(bind(parse_filter(text), s), s).eval(df)[0], text
    for text in ("info is not null", "tags is null", "m is not null", "info is null"):
        assert not StrictMetricsEvaluator(bind(parse_filter(text), s), s).eval(df), text
    # a primitive struct field's metrics still prune
    assert not MetricsEvaluator(bind(parse_filter("info.a = 1"), s), s).eval(df)[0]


def test_columnar_planning_keeps_files_whatever_the_struct_counts_say(tmp_path):
    t = empty_table(tmp_path / "t", SCHEMA)
    p = write_parquet(tmp_path / "t/data/a.parquet", ROWS, _file_fields(), row_group_size=2)
    # counts under the struct's and the list's own ids claiming "no nulls" (not how Java keeps
    # metrics, but nothing forbids a writer to): the file must still be planned and read
    df = DataFile(DATA, p, "PARQUET", (), 3, data_file(p, 3).file_size_in_bytes,
                  value_counts={2: 3, 3: 3}, null_value_counts={2: 0, 3: 0})
    commit(t, [df])
    t = Table.load(t.location)
    clear_cache()
    assert len(plan_scan(t, "info is null").files) == 1
    assert len(plan_scan(t, "tags is null").files) == 1
    assert rows(t, "info is null or tags is null", columns=["id"]) == [{"id": 2}]


def test_binding_nested_fields():
    s = Schema.from_json({"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "s", "required": False, "type": {"type": "struct", "fields": [
            {"id": 2, "name": "r", "required": True, "type": "int"}]}},
        {"id": 3, "name": "q", "required": True, "type": {"type": "struct", "fields": [
            {"id": 4, "name": "r", "required": True, "type": "int"}]}},
        {"id": 5, "name": "l", "required": False, "type": {
            "type": "list", "element-id": 6, "element-required": False, "element": "int"}}]})
    # a required field of an optional struct is null where the struct is: not folded away
    assert not isinstance(bind(parse_filter("s.r is null"), s), AlwaysFalse)
    assert isinstance(bind(parse_filter("q.r is null"), s), AlwaysFalse)
    assert isinstance(bind(parse_filter("q is null"), s), AlwaysFalse)
    bind(parse_filter("l is not null and s is null"), s)
    with pytest.raises(InvalidInput, match="takes only 'is null'"):
        bind(parse_filter("s = 1"), s)
    with pytest.raises(InvalidInput, match="inside a list or map"):
        bind(parse_filter("l.element = 1"), s)


def test_a_nested_field_dropped_and_added_again_under_its_name_reads_null(tmp_path):
    # the new info.b has a new id: the old file's info.b (same name, same Arrow type) is not it
    from icectl.ops.metadata.schema import add_column, evolve_schema

    t = nested_table(tmp_path)
    evolve_schema(t, lambda u: u.drop_column("info.b"))
    evolve_schema(Table.load(t.location), lambda u: add_column(u, "info.b", STRING))
    t = Table.load(t.location)
    assert t.metadata.schema.find_field("info.b").field_id != 7
    assert rows(t, columns=["info"]) == [{"info": {"a": 5, "b": None}}, {"info": None},
                                         {"info": {"a": None, "b": None}}]
    assert rows(t, "info.b is not null", columns=["id"]) == []


def test_maps_and_lists_rebuilt_for_a_promoted_value_keep_their_nulls(tmp_path):
    from icectl.ops.metadata.schema import evolve_schema

    t = nested_table(tmp_path)
    evolve_schema(t, lambda u: (u.update_column("m.value", LONG), u.update_column("pts.y", LONG)))
    t = Table.load(t.location)
    s = open_scan(t, columns=["m"])
    assert s.arrow_schema().field("m").type.item_type == pa.int64()
    assert rows(t, columns=["id", "m"]) == [{"id": 1, "m": [("k", 1)]}, {"id": 2, "m": None},
                                            {"id": 3, "m": []}]
    assert rows(t, "m is null", columns=["id"]) == [{"id": 2}]
    # batches of one row (row groups of two)
    clear_cache()
    s = open_scan(Table.load(t.location), columns=["m", "pts"], batch_rows=1)
    got = [r for b in s.batches() for r in b.to_pylist()]
    assert got == [{"m": [("k", 1)], "pts": [{"x": 1, "y": 2}, None]},
                   {"m": None, "pts": None}, {"m": [], "pts": [{"x": None, "y": 4}]}]


def test_conform_sliced_nested_columns_by_field_id():
    from icectl.scan.arrow_values import conform

    elem = pa.struct([field("x", pa.int32(), 12), field("y", pa.int32(), 13)])
    lf = field("pts", pa.list_(field("element", elem, 11)), 5)
    arr = pa.array([[{"x": 0, "y": 0}], None, [{"x": 1, "y": None}, None], []], lf.type)
    t = ListType(11, StructType([NestedField(13, "y", LONG), NestedField(12, "xx", INT),
                                 NestedField(14, "z", STRING)]), False)
    got = conform(arr.slice(1, 3), t, lf)
    assert got.to_pylist() == [None, [{"y": None, "xx": 1, "z": None}, None], []]
    mf = field("m", pa.map_(field("key", pa.string(), 9).with_nullable(False),
                            field("value", pa.int32(), 10)), 4)
    marr = pa.array([[("a", 1)], None, [("b", 2), ("c", None)]], mf.type)
    got = conform(marr.slice(1, 2), MapType(9, STRING, 10, LONG), mf)
    assert got.type.item_type == pa.int64()
    assert got.to_pylist() == [None, [("b", 2), ("c", None)]]


def test_json_value_by_names_at_every_depth():
    from icectl.spec.values import to_json_value

    inner = StructType([NestedField(3, "p", INT), NestedField(4, "d", LONG)])
    t = MapType(1, STRING, 2, ListType(5, inner, False))
    value = {"k": [{3: 1, 4: None}, None]}
    assert to_json_value(t, value, names=True) == {"keys": ["k"],
                                                   "values": [[{"p": 1, "d": None}, None]]}
    # the spec's single-value form (defaults, partition JSON) stays keyed by field id
    assert to_json_value(t, value) == {"keys": ["k"], "values": [[{"3": 1, "4": None}, None]]}
