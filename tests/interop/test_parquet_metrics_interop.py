"""Differential test: Parquet footer metrics, name mappings and metrics configs against Java.

Files are written with pyarrow; the reference reads them with
``ParquetUtil.fileMetrics(Files.localInput(path), MetricsConfig, NameMapping)`` and
``ParquetUtil.getSplitOffsets(footer)``. Every metric map must be equal, byte for byte. (Column
kinds where icectl deliberately differs -- millisecond times, unsigned ints -- are left out.)
"""

from __future__ import annotations

import decimal
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icectl.io.storage.files import FileIO
from icectl.io.formats.parquet import footer_metrics, parquet_columns, read_footer
from icectl.spec.metrics import metrics_config
from icectl.spec.name_mapping import (
    MappedField,
    NameMapping,
    mapping_from_schema,
    name_mapping_to_json,
    parse_name_mapping,
)
from icectl.spec.schema import Schema
from icectl.spec.sorting import SortOrder
from icectl.spec.types import (
    INT,
    LONG,
    STRING,
    ListType,
    MapType,
    NestedField,
    StructType,
)

pytestmark = pytest.mark.interop

D = decimal.Decimal
NAN = float("nan")


def _f(name: str, t: pa.DataType, fid: int | None, nullable: bool = True) -> pa.Field:
    md = None if fid is None else {b"PARQUET:field_id": str(fid).encode()}
    return pa.field(name, t, nullable, metadata=md)


def _flat_table(ids: bool) -> pa.Table:
    """Every primitive column kind, with nulls, NaNs, signed zeros and long multibyte text."""
    cols: list[tuple[str, pa.DataType, list]] = [
        ("b", pa.bool_(), [True, None, False, True, None, False]),
        ("i8", pa.int8(), [1, -7, None, 100, -128, 3]),
        ("i32", pa.int32(), [2**31 - 1, -(2**31), None, 0, 5, 6]),
        ("i64", pa.int64(), [2**63 - 1, -(2**63), 0, None, 9, 9]),
        ("f32", pa.float32(), [0.0, NAN, 1.5, None, -2.5, 0.0]),
        ("f64", pa.float64(), [NAN, -0.0, 3.25, None, NAN, 0.0]),
        ("zero", pa.float64(), [0.0, 0.0, -0.0, 0.0, None, 0.0]),
        ("nan_only", pa.float64(), [NAN, NAN, None, NAN, NAN, NAN]),
        ("s", pa.string(), ["ab", "ééééééééééééééééééééé", None, "z" * 40,
                            "日本語テキスト" * 4, "\U0001F600" * 20]),
        ("s_top", pa.string(), ["a" + "\U0010FFFF" * 20, "aaa", None, "b" + "\ud7ff" * 17, "", "a"]),
        ("bin", pa.binary(), [b"\x00" * 30, b"\xff" * 18 + b"\x01", None, b"\x7f\xff\xff" + b"\x00" * 20,
                              b"", b"\x10"]),
        ("fixed", pa.binary(20), [bytes(range(20)), bytes(range(1, 21)), None, b"\xfe" + b"\xff" * 19,
                                  b"\x00" * 20, b"\x05" * 20]),
        ("dec9", pa.decimal128(9, 2), [D("1.25"), D("-3.50"), None, D("9999999.99"), D("0"), D("-0.01")]),
        ("dec18", pa.decimal128(18, 4), [D("12345678901234.5678"), D("-1"), None, D("0.0001"), D("7"), D("8")]),
        ("dec38", pa.decimal128(38, 10), [D("1" * 28 + ".0000000001"), D("-5"), None, D("0"), D("1"), D("2")]),
        ("date", pa.date32(), [0, -719162, None, 2932896, 19000, 1]),
        ("time", pa.time64("us"), [0, 86_399_999_999, None, 1, 2, 3]),
        ("ts", pa.timestamp("us"), [0, -62135596800000000, None, 253402300799999999, 1, 2]),
        ("tstz", pa.timestamp("us", tz="UTC"), [5, -5, None, 10**15, 6, 7]),
        ("tsns", pa.timestamp("ns"), [1, -1, None, 10**18, 2, 3]),
        ("u", pa.uuid(), [uuid.UUID(int=1).bytes, uuid.UUID(int=2**128 - 1).bytes, None,
                          uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7").bytes,
                          uuid.UUID(int=2**127).bytes, uuid.UUID(int=5).bytes]),
        ("all_null", pa.string(), [None] * 6),
    ]
    fields, arrays = [], []
    for n, (name, t, vals) in enumerate(cols, start=1):
        fields.append(_f(name, t, n if ids else None))
        if t == pa.uuid():
            arrays.append(pa.ExtensionArray.from_storage(t, pa.array(vals, pa.binary(16))))
        else:
            arrays.append(pa.array(vals, t))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _nested_table() -> pa.Table:
    point = pa.struct([_f("x", pa.float64(), 11), _f("y", pa.string(), 12)])
    schema = pa.schema([
        _f("id", pa.int64(), 1, False),
        _f("point", point, 2),
        _f("outer", pa.struct([_f("inner", pa.struct([_f("v", pa.int32(), 14)]), 13)]), 3),
        _f("tags", pa.list_(_f("element", pa.string(), 15)), 4),
        _f("props", pa.map_(_f("key", pa.string(), 16, False), _f("value", pa.int64(), 17)), 5),
        _f("pts", pa.list_(_f("element", pa.struct([_f("a", pa.int32(), 19)]), 18)), 6),
    ])
    return pa.table({
        "id": [1, 2, 3, 4],
        "point": [{"x": 1.0, "y": "p"}, None, {"x": NAN, "y": None}, {"x": -4.0, "y": "q" * 30}],
        "outer": [{"inner": {"v": 1}}, {"inner": None}, None, {"inner": {"v": -9}}],
        "tags": [["a", "b"], None, [], ["zz" * 20]],
        "props": [[("k", 1)], None, [("a", None), ("b", 2)], []],
        "pts": [[{"a": 1}], None, [{"a": None}], [{"a": 7}, {"a": -3}]],
    }, schema=schema)


def _files(tmp: Path) -> dict[str, Path]:
    out = {}
    flat = _flat_table(ids=True)
    for name, kwargs in {
        "flat_one_group": {},
        "flat_row_groups": {"row_group_size": 2},
        "flat_plain": {"use_dictionary": False, "row_group_size": 4, "compression": "none"},
        "flat_partial_stats": {"write_statistics": ["i32", "s", "f64"], "row_group_size": 3},
        "flat_int_decimals": {"store_decimal_as_integer": True, "row_group_size": 3},
    }.items():
        p = tmp / f"{name}.parquet"
        pq.write_table(flat, p, **kwargs)
        out[name] = p
    p = tmp / "nested.parquet"
    pq.write_table(_nested_table(), p, row_group_size=2)
    out["nested"] = p
    p = tmp / "no_ids.parquet"
    pq.write_table(_flat_table(ids=False), p, row_group_size=4)
    out["no_ids"] = p
    return out


def _no_ids_mapping() -> NameMapping:
    names = _flat_table(ids=False).schema.names
    return NameMapping(tuple(MappedField(i + 1, (n,)) for i, n in enumerate(names)))


CONFIGS: dict[str, dict[str, str]] = {
    "default": {},
    "full": {"write.metadata.metrics.default": "full"},
    "counts": {"write.metadata.metrics.default": "counts"},
    "truncate2": {"write.metadata.metrics.default": "truncate(2)"},
    "mixed": {
        "write.metadata.metrics.default": "none",
        "write.metadata.metrics.column.s": "truncate(3)",
        "write.metadata.metrics.column.bin": "full",
        "write.metadata.metrics.column.i32": "counts",
        "write.metadata.metrics.column.fixed": "truncate(1)",
        "write.metadata.metrics.column.point.y": "truncate(1)",
        "write.metadata.metrics.column.tags.element": "full",
        "write.metadata.metrics.column.f32": "bogus",
    },
}


def _java_map(jvm: Any, props: dict[str, str]) -> Any:
    m = jvm.java.util.HashMap()
    for k, v in props.items():
        m.put(k, v)
    return m


def _bytes_map(jvm: Any, jmap: Any) -> dict[int, bytes]:
    if jmap is None:
        return {}
    return {int(k): bytes(jvm.org.apache.iceberg.util.ByteBuffers.toByteArray(v))
            for k, v in jmap.items()}


def _long_map(jmap: Any) -> dict[int, int]:
    return {} if jmap is None else {int(k): int(v) for k, v in jmap.items()}


def _java_footer(jvm: Any, spark: Any, path: Path) -> Any:
    shaded = jvm.org.apache.iceberg.shaded.org.apache.parquet
    conf = spark._jsc.hadoopConfiguration()
    hfile = shaded.hadoop.util.HadoopInputFile.fromPath(jvm.org.apache.hadoop.fs.Path(str(path)), conf)
    reader = shaded.hadoop.ParquetFileReader.open(hfile)
    try:
        return reader.getFooter()
    finally:
        reader.close()


def _java_metrics(jvm: Any, spark: Any, path: Path, props: dict[str, str],
                  mapping: NameMapping | None) -> dict[str, Any]:
    ice = jvm.org.apache.iceberg
    config = ice.MetricsConfig.fromProperties(_java_map(jvm, props))
    jmapping = None if mapping is None else ice.mapping.NameMappingParser.fromJson(
        name_mapping_to_json(mapping))
    m = ice.parquet.ParquetUtil.fileMetrics(ice.Files.localInput(str(path)), config, jmapping)
    offsets = ice.parquet.ParquetUtil.getSplitOffsets(_java_footer(jvm, spark, path))
    return {
        "record_count": int(m.recordCount()),
        "column_sizes": _long_map(m.columnSizes()),
        "value_counts": _long_map(m.valueCounts()),
        "null_value_counts": _long_map(m.nullValueCounts()),
        "nan_value_counts": _long_map(m.nanValueCounts()),
        "lower_bounds": _bytes_map(jvm, m.lowerBounds()),
        "upper_bounds": _bytes_map(jvm, m.upperBounds()),
        "split_offsets": tuple(int(o) for o in offsets),
    }


def _ours(path: Path, props: dict[str, str], mapping: NameMapping | None) -> dict[str, Any]:
    footer = read_footer(FileIO(), str(path))
    m = footer_metrics(footer, metrics_config(props), mapping)
    return {k: getattr(m, k) for k in (
        "record_count", "column_sizes", "value_counts", "null_value_counts", "nan_value_counts",
        "lower_bounds", "upper_bounds", "split_offsets")}


@pytest.fixture(scope="module")
def parquet_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return _files(tmp_path_factory.mktemp("parquet-metrics"))


@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("name", ["flat_one_group", "flat_row_groups", "flat_plain",
                                  "flat_partial_stats", "flat_int_decimals", "nested", "no_ids"])
def test_footer_metrics_match_java(jvm: Any, spark: Any, parquet_files: dict[str, Path],
                                   name: str, config: str) -> None:
    path = parquet_files[name]
    props = CONFIGS[config]
    mapping = _no_ids_mapping() if name == "no_ids" else None
    theirs = _java_metrics(jvm, spark, path, props, mapping)
    ours = _ours(path, props, mapping)
    diffs = _differences(ours, theirs)
    assert not diffs, "\n".join(diffs)
    assert ours == theirs


def _differences(ours: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    out = []
    for key in ours:
        a, b = ours[key], theirs[key]
        if isinstance(a, dict):
            for fid in sorted(set(a) | set(b)):
                if a.get(fid) != b.get(fid):
                    out.append(f"{key}[{fid}]: icectl {a.get(fid)!r} java {b.get(fid)!r}")
        elif a != b:
            out.append(f"{key}: icectl {a!r} java {b!r}")
    return out


def test_flat_file_has_bounds_for_every_type(parquet_files: dict[str, Path]) -> None:
    """Guard against a vacuous comparison: the generated file exercises every bound kind."""
    ours = _ours(parquet_files["flat_row_groups"], {}, None)
    cols = parquet_columns(read_footer(FileIO(), str(parquet_files["flat_row_groups"])))
    by_name = {c.field.path: c.field.field_id for c in cols}
    no_bounds = {"nan_only", "all_null"}
    for name, fid in by_name.items():
        assert (fid in ours["lower_bounds"]) == (name not in no_bounds), name
    assert len(ours["split_offsets"]) == 3


# -- name mappings --------------------------------------------------------------------------------


def _nested_schema() -> Schema:
    return Schema((
        NestedField(1, "id", LONG, True),
        NestedField(2, "location", StructType([
            NestedField(5, "lat", INT), NestedField(6, "long", INT)])),
        NestedField(3, "tags", ListType(7, STRING, False)),
        NestedField(4, "props", MapType(8, STRING, 9, StructType([
            NestedField(10, "a", INT), NestedField(11, "b", StructType([]))]), True)),
    ), schema_id=0)


def test_mapping_from_schema_and_json_match_java(jvm: Any) -> None:
    ice = jvm.org.apache.iceberg
    schema = _nested_schema()
    import json as _json
    jschema = ice.SchemaParser.fromJson(_json.dumps(schema.to_json()))
    java_text = ice.mapping.NameMappingParser.toJson(ice.mapping.MappingUtil.create(jschema))
    ours = mapping_from_schema(schema)
    assert name_mapping_to_json(ours) == java_text
    assert parse_name_mapping(java_text) == ours
    # And Java parses what we write for a mapping with aliases, missing ids and empty names.
    aliased = NameMapping((
        MappedField(1, ("id", "record_id")),
        MappedField(2, ()),
        MappedField(3, ("loc",), (MappedField(4, ("latitude", "lat")),)),
    ))
    text = name_mapping_to_json(aliased)
    back = ice.mapping.NameMappingParser.toJson(ice.mapping.NameMappingParser.fromJson(text))
    assert back == text


# -- metrics configs ----------------------------------------------------------------------------


def test_metrics_config_matches_java_for_wide_sorted_table(spark: Any, jvm: Any, ice_table: Any) -> None:
    cols = ", ".join(f"c{i} int" for i in range(5))
    spark.sql(f"CREATE TABLE {ice_table.ident} (id bigint, s struct<a: int, b: string>, "
              f"l array<int>, m map<string, int>, {cols}) USING iceberg "
              "TBLPROPERTIES ('write.metadata.metrics.max-inferred-column-defaults'='4', "
              "'write.metadata.metrics.column.c4'='full', "
              "'write.metadata.metrics.column.c3'='nonsense')")
    spark.sql(f"ALTER TABLE {ice_table.ident} WRITE ORDERED BY c2, bucket(4, c1)")
    from spark_support import java_table

    table = java_table(spark, ice_table.location)
    config = jvm.org.apache.iceberg.MetricsConfig.forTable(table)
    import json as _json

    schema = Schema.from_json(_json.loads(jvm.org.apache.iceberg.SchemaParser.toJson(table.schema())))
    order_json = _json.loads(jvm.org.apache.iceberg.SortOrderParser.toJson(table.sortOrder()))
    order = SortOrder.from_json(order_json)
    props = {k: v for k, v in table.properties().items()}
    ours = metrics_config(props, schema, order)
    for name in [n for n, _ in schema.leaf_fields()]:
        assert str(ours.column_mode(name)) == str(config.columnMode(name)), name
    assert str(ours.default_mode) == "none"

