"""Parquet footer metrics and schema fields (files written with pyarrow, compared with pyiceberg
and with the reference's rules; the interop test compares with Iceberg Java itself)."""

from __future__ import annotations

import decimal
import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.io.pyarrow import (
    compute_statistics_plan,
    data_file_statistics_from_parquet_metadata,
    parquet_path_to_id_mapping,
)
from pyiceberg.schema import Schema as PyIcebergSchema

from icectl.errors import InvalidInput, ValidationError
from icectl.io.storage.files import FileIO
from icectl.io.formats.parquet_schema import check_file_schema
from icectl.io.formats.parquet import (
    footer_metrics,
    parquet_schema_fields,
    read_footer,
)
from icectl.spec.metrics import metrics_config
from icectl.spec.name_mapping import MappedField, NameMapping, table_name_mapping
from icectl.spec.schema import Schema
from icectl.spec.types import (
    BINARY,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMPTZ,
    UUID,
    DecimalType,
    ListType,
    MapType,
    NestedField,
    StructType,
)
from icectl.spec.values import from_bytes

D = decimal.Decimal
NAN = float("nan")


def _f(name: str, t: pa.DataType, fid: int | None, nullable: bool = True) -> pa.Field:
    return pa.field(name, t, nullable, metadata=None if fid is None else {b"PARQUET:field_id": str(fid).encode()})


FLAT = Schema((
    NestedField(1, "i", LONG), NestedField(2, "s", STRING), NestedField(3, "d", DOUBLE),
    NestedField(4, "b", BINARY), NestedField(5, "dec", DecimalType(10, 2)), NestedField(6, "dt", DATE),
    NestedField(7, "f", FLOAT), NestedField(8, "small", INT),
))


def _flat_table(ids: bool = True) -> pa.Table:
    schema = pa.schema([
        _f("i", pa.int64(), 1 if ids else None), _f("s", pa.string(), 2 if ids else None),
        _f("d", pa.float64(), 3 if ids else None), _f("b", pa.binary(), 4 if ids else None),
        _f("dec", pa.decimal128(10, 2), 5 if ids else None), _f("dt", pa.date32(), 6 if ids else None),
        _f("f", pa.float32(), 7 if ids else None), _f("small", pa.int32(), 8 if ids else None),
    ])
    return pa.table({
        "i": [1, None, 3, -4, 5], "s": ["abc" * 10, "é" * 30, None, "\U0001F600" * 17, "b"],
        "d": [1.5, None, -2.0, NAN, 0.0], "b": [b"\x01" * 20, b"\xff" * 20, None, b"", b"\x02"],
        "dec": [D("1.10"), None, D("-2.55"), D("99999999.99"), D("0")], "dt": [1, 2, None, -1, 0],
        "f": [NAN, NAN, None, 2.5, -0.0], "small": [None, None, None, None, None],
    }, schema=schema)


def _write(tmp_path: Path, table: pa.Table, name: str = "f.parquet", **kwargs: Any) -> str:
    path = tmp_path / name
    pq.write_table(table, path, **kwargs)
    return str(path)


def _metrics(path: str, props: dict[str, str] | None = None, mapping: NameMapping | None = None):
    return footer_metrics(read_footer(FileIO(), path), metrics_config(props or {}), mapping)


def _pyiceberg(path: str, schema: Schema, props: dict[str, str]) -> dict[str, Any]:
    ps = PyIcebergSchema.model_validate_json(json.dumps(schema.to_json()))
    md = pq.ParquetFile(path).metadata
    stats = data_file_statistics_from_parquet_metadata(
        md, compute_statistics_plan(ps, props), parquet_path_to_id_mapping(ps))
    return stats.to_serialized_dict()


@pytest.mark.parametrize("props", [{}, {"write.metadata.metrics.default": "full"},
                                   {"write.metadata.metrics.default": "truncate(4)"},
                                   {"write.metadata.metrics.default": "counts"}])
@pytest.mark.parametrize("row_group_size", [2, 100])
def test_agrees_with_pyiceberg(tmp_path: Path, props: dict[str, str], row_group_size: int) -> None:
    path = _write(tmp_path, _flat_table(), row_group_size=row_group_size)
    ours = _metrics(path, props)
    theirs = _pyiceberg(path, FLAT, props)
    assert ours.record_count == theirs["record_count"] == 5
    assert ours.column_sizes == theirs["column_sizes"]
    assert ours.value_counts == theirs["value_counts"]
    assert ours.null_value_counts == theirs["null_value_counts"]
    assert list(ours.split_offsets) == theirs["split_offsets"]
    assert ours.lower_bounds == theirs["lower_bounds"]
    assert ours.upper_bounds == theirs["upper_bounds"]


def test_values_of_every_kind(tmp_path: Path) -> None:
    m = _metrics(_write(tmp_path, _flat_table(), row_group_size=2))
    lo = {k: from_bytes(FLAT.find_type(k), v) for k, v in m.lower_bounds.items()}
    hi = {k: from_bytes(FLAT.find_type(k), v) for k, v in m.upper_bounds.items()}
    assert (lo[1], hi[1]) == (-4, 5)
    assert lo[2] == "abc" * 5 + "a" and hi[2] == "\U0001F600" * 15 + "\U0001F601"
    assert lo[4] == b"" and 4 not in hi                       # 0xFF * 16 cannot be rounded up
    assert (lo[5], hi[5]) == (D("-2.55"), D("99999999.99"))
    assert (lo[6], hi[6]) == (-1, 2)
    # NaN never becomes a bound; a zero minimum reads as -0.0
    assert lo[3] == -2.0 and hi[3] == 1.5
    assert (str(lo[7]), hi[7]) == ("-0.0", 2.5)
    assert 8 not in lo and m.null_value_counts[8] == 5 and m.value_counts[8] == 5
    assert m.nan_value_counts == {}


def test_nan_only_chunks_give_no_bounds(tmp_path: Path) -> None:
    t = pa.table({"x": pa.array([NAN, NAN, 1.0], pa.float64())},
                 schema=pa.schema([_f("x", pa.float64(), 1)]))
    m = _metrics(_write(tmp_path, t, row_group_size=2))
    assert from_bytes(DOUBLE, m.lower_bounds[1]) == 1.0 == from_bytes(DOUBLE, m.upper_bounds[1])
    t = pa.table({"x": pa.array([NAN, NAN], pa.float64())}, schema=pa.schema([_f("x", pa.float64(), 1)]))
    m = _metrics(_write(tmp_path, t, "n.parquet"))
    assert m.lower_bounds == {} and m.value_counts == {1: 2} and m.null_value_counts == {1: 0}


def test_modes(tmp_path: Path) -> None:
    path = _write(tmp_path, _flat_table())
    m = _metrics(path, {"write.metadata.metrics.default": "none", "write.metadata.metrics.column.s": "truncate(2)",
                        "write.metadata.metrics.column.i": "counts"})
    assert set(m.column_sizes) == {1, 2} and set(m.value_counts) == {1, 2}
    assert set(m.lower_bounds) == {2}
    assert m.lower_bounds[2] == b"ab" and m.upper_bounds[2] == "\U0001F600\U0001F601".encode()
    full = _metrics(path, {"write.metadata.metrics.default": "full"})
    assert full.upper_bounds[2] == ("\U0001F600" * 17).encode()


def test_missing_statistics_drop_counts_and_bounds(tmp_path: Path) -> None:
    path = _write(tmp_path, _flat_table(), write_statistics=["s"], row_group_size=3)
    m = _metrics(path)
    assert set(m.value_counts) == set(m.null_value_counts) == set(m.lower_bounds) == {2}
    assert set(m.column_sizes) == set(range(1, 9))


def test_nested_columns(tmp_path: Path) -> None:
    schema = pa.schema([
        _f("p", pa.struct([_f("x", pa.int32(), 11), _f("y", pa.string(), 12)]), 1),
        _f("l", pa.list_(_f("element", pa.int64(), 13)), 2),
        _f("m", pa.map_(_f("key", pa.string(), 14, False), _f("value", pa.int32(), 15)), 3),
    ])
    t = pa.table({"p": [{"x": 1, "y": "a"}, None], "l": [[1, 2], None], "m": [[("k", 1)], None]}, schema=schema)
    m = _metrics(_write(tmp_path, t))
    assert set(m.column_sizes) == {11, 12, 13, 14, 15}
    # values inside lists and maps get sizes only, struct members everything
    assert set(m.value_counts) == set(m.lower_bounds) == {11, 12}
    assert m.null_value_counts == {11: 1, 12: 1}


def test_int96_gets_sizes_only(tmp_path: Path) -> None:
    t = pa.table({"ts": pa.array([1, 2], pa.timestamp("us"))}, schema=pa.schema([_f("ts", pa.timestamp("us"), 1)]))
    path = _write(tmp_path, t, use_deprecated_int96_timestamps=True)
    m = _metrics(path)
    assert set(m.column_sizes) == {1} and m.value_counts == {} and m.lower_bounds == {}


def test_millisecond_times_and_unsigned_ints(tmp_path: Path) -> None:
    schema = pa.schema([_f("ts", pa.timestamp("ms"), 1), _f("t", pa.time32("ms"), 2), _f("u", pa.uint32(), 3)])
    t = pa.table({"ts": [1, 2000], "t": [5, 6], "u": [1, 2**32 - 1]}, schema=schema)
    m = _metrics(_write(tmp_path, t))
    assert from_bytes(TIMESTAMP, m.upper_bounds[1]) == 2_000_000
    assert from_bytes(TIME, m.lower_bounds[2]) == 5000
    assert from_bytes(LONG, m.upper_bounds[3]) == 2**32 - 1


def test_split_offsets_are_row_group_starts(tmp_path: Path) -> None:
    path = _write(tmp_path, _flat_table(), row_group_size=2, use_dictionary=False)
    md = pq.ParquetFile(path).metadata
    m = _metrics(path)
    assert m.split_offsets == tuple(md.row_group(i).column(0).data_page_offset for i in range(3))
    assert m.split_offsets[0] == 4
    path = _write(tmp_path, _flat_table(), "d.parquet", row_group_size=2)
    assert _metrics(path).split_offsets[0] == 4  # the dictionary page comes first


def test_name_mapping_for_files_without_ids(tmp_path: Path) -> None:
    path = _write(tmp_path, _flat_table(ids=False))
    with_ids = _metrics(_write(tmp_path, _flat_table(), "ids.parquet"))
    # the table's mapping (what an append reads files with) is the table's own names when it
    # has no mapping property
    m = _metrics(path, mapping=table_name_mapping({}, FLAT))
    assert m.lower_bounds == with_ids.lower_bounds and m.value_counts == with_ids.value_counts
    aliased = NameMapping(tuple(MappedField(i, (n, f"old_{n}")) for i, n in
                                [(1, "i"), (2, "s"), (3, "d"), (4, "b"), (5, "dec"), (6, "dt"), (7, "f"), (8, "small")]))
    assert _metrics(path, mapping=aliased).value_counts == with_ids.value_counts
    partial = NameMapping((MappedField(1, ("i",)),))
    with pytest.raises(ValidationError, match="'s'"):
        _metrics(path, mapping=partial)
    prop = {"schema.name-mapping.default": json.dumps([{"field-id": 100 + k, "names": [n]} for k, n in
                                                      enumerate(["i", "s", "d", "b", "dec", "dt", "f", "small"])])}
    assert set(_metrics(path, mapping=table_name_mapping(prop, FLAT)).column_sizes) == set(range(100, 108))


class _TrackingIO(FileIO):
    def __init__(self) -> None:
        super().__init__()
        self.reads: list[tuple[int, int]] = []

    def open(self, path: str, mode: str = "rb") -> Any:
        inner = super().open(path, mode)
        reads = self.reads

        class Tracked:
            def __getattr__(self, name: str) -> Any:
                return getattr(inner, name)

            def read(self, n: int = -1) -> bytes:
                pos = inner.tell()
                data = inner.read(n)
                reads.append((pos, len(data)))
                return data

            def __enter__(self) -> Any:
                return self

            def __exit__(self, *exc: Any) -> None:
                inner.close()

        return Tracked()


def test_reads_only_the_footer(tmp_path: Path) -> None:
    big = pa.table({"x": pa.array(range(200_000), pa.int64())}, schema=pa.schema([_f("x", pa.int64(), 1)]))
    path = _write(tmp_path, big, compression="none", use_dictionary=False)
    io = _TrackingIO()
    read_footer(io, path)
    size = os.path.getsize(path)
    footer_len = int.from_bytes(open(path, "rb").read()[-8:-4], "little")
    assert io.reads and all(pos + n >= size - footer_len - 8 for pos, n in io.reads if n)
    assert sum(n for _, n in io.reads) < 200_000


def test_schema_fields_and_compatibility(tmp_path: Path) -> None:
    schema = pa.schema([
        _f("id", pa.int32(), 1, False), _f("name", pa.string(), 2),
        _f("p", pa.struct([_f("x", pa.float32(), 11)]), 3),
        _f("tags", pa.list_(_f("element", pa.string(), 12)), 4),
        _f("u", pa.uuid(), 5), _f("ts", pa.timestamp("us", tz="UTC"), 6),
        _f("amount", pa.decimal128(9, 2), 7),
    ])
    t = pa.Table.from_arrays([pa.array([1], pa.int32()), pa.array(["a"]),
                              pa.array([{"x": 1.0}]), pa.array([["t"]]),
                              pa.ExtensionArray.from_storage(pa.uuid(), pa.array([b"0" * 16], pa.binary(16))),
                              pa.array([1], pa.timestamp("us", tz="UTC")),
                              pa.array([D("1.00")], pa.decimal128(9, 2))], schema=schema)
    path = _write(tmp_path, t)
    fields = parquet_schema_fields(FileIO(), path)
    by_path = {f.path: f for f in fields}
    assert by_path["id"].iceberg_type == INT and by_path["id"].required
    assert by_path["p"].kind == "struct" and by_path["p"].children[0].iceberg_type == FLOAT
    assert by_path["tags"].children[0].path == "tags.element"
    assert by_path["u"].iceberg_type == UUID and by_path["ts"].iceberg_type == TIMESTAMPTZ
    table = Schema((
        NestedField(1, "id", LONG, True), NestedField(2, "name", STRING),
        NestedField(3, "p", StructType([NestedField(11, "x", DOUBLE)])),
        NestedField(4, "tags", ListType(12, STRING)), NestedField(5, "u", UUID),
        NestedField(6, "ts", TIMESTAMPTZ), NestedField(7, "amount", DecimalType(12, 2)),
    ))
    assert check_file_schema(fields, table) == []  # int->long, float->double, wider decimal
    bad = Schema((
        NestedField(1, "id", STRING, True), NestedField(3, "p", MapType(20, STRING, 21, INT)),
        NestedField(6, "ts", TIMESTAMP), NestedField(7, "amount", DecimalType(8, 2)),
        NestedField(30, "must", INT, True),
    ))
    problems = "\n".join(check_file_schema(fields, bad))
    assert "'id' has type int" in problems and "cannot be read as string" in problems
    assert "'p' is a struct in the file" in problems
    assert "'name' has field id 2, which is not in the table schema" in problems
    assert "timestamptz" in problems and "decimal(8, 2)" in problems
    assert "required table column 'must' is missing" in problems
    no_ids = parquet_schema_fields(FileIO(), _write(tmp_path, _flat_table(ids=False), "n.parquet"))
    assert "has no field id" in check_file_schema(no_ids, FLAT)[0]


def test_not_parquet(tmp_path: Path) -> None:
    p = tmp_path / "x.parquet"
    p.write_bytes(b"not parquet at all")
    with pytest.raises(InvalidInput, match="not a readable Parquet file"):  # bad input, as in write
        read_footer(FileIO(), str(p))
