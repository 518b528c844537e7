"""Write rows into a table: ``write_rows(table, source, ...)``.

Rows come from a Parquet, CSV or JSON-lines file (or stdin), are cast to the table's schema, split
by the default partition spec, sorted by the table's sort order, written as Parquet data files
under ``<data location>/<partition path>/`` and committed as ONE ``append`` snapshot through the
same producer as ``icectl append`` (summaries, manifests, sequence numbers, v3 row lineage,
branches and extra summary entries behave the same).

Input columns are matched to the table's columns by name: an exact match first, otherwise a
case-insensitive one (as Spark does by default); an ambiguous case-insensitive match is refused.
Nested struct fields are matched the same way. A missing optional column is written as nulls; a
missing required column, a null in a required column, an input column the table does not have
(unless ``ignore_extra_columns``) and a value that does not fit its column's type are refused.
Text values (CSV, JSON strings) are parsed as icectl parses literals: ISO dates, times and
timestamps (for ``timestamptz`` an offset is converted to UTC and none means UTC), decimals,
canonical UUIDs; ``binary`` text is taken as its UTF-8 bytes. In CSV an unquoted empty field,
``NULL`` or ``null`` is a null. JSON objects for map columns become maps (keys with null values
are left out).

Partition values are computed on whole Arrow columns (bucket hashing on integers too) and equal
:mod:`icectl.spec.transforms` value by value. Files are named as the reference names them
(``00000-0-<operation uuid>-00001.parquet``, the last number counting files) and rolled at
``write.target-file-size-bytes``. Rows inside each file are ordered by the sort order's
transformed keys with its directions and null orders (NaN above every number, as the reference's
comparators). If anything fails - bad input, a write error, a failed commit - the data files
this call wrote are deleted and nothing is committed.
"""

from __future__ import annotations

import math
import os
import uuid as _uuid
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Callable, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from icectl.errors import IcectlError, InvalidInput, NotFound, StorageError, ValidationError
from icectl.io.files import join
from icectl.io.parquet import footer_metrics
from icectl.io.parquet_write import ParquetWriteOptions, arrow_schema, arrow_type, write_rolling
from icectl.ops.append import AppendResult, append_data_files, partition_path
from icectl.spec.manifests import DATA, DataFile
from icectl.spec.metrics import metrics_config
from icectl.spec.name_mapping import table_name_mapping
from icectl.spec.partitioning import PartitionSpec
from icectl.spec.schema import Schema
from icectl.spec.snapshots import MAIN_BRANCH
from icectl.spec.sorting import NullOrder, SortDirection, SortOrder
from icectl.spec.transforms import (
    MICROS_PER_DAY,
    MICROS_PER_HOUR,
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    YearTransform,
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
    UUID,
    DecimalType,
    FixedType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
)
from icectl.spec.values import parse_literal

__all__ = [
    "WriteResult", "write_rows", "read_rows", "conform_to_schema", "transform_array",
    "partition_groups", "sort_indices", "data_location", "FORMATS",
]

FORMATS = ("parquet", "csv", "json")
WRITE_DATA_PATH = "write.data.path"
_LEGACY_DATA_PATH = "write.folder-storage.path"
_EXTENSIONS = {
    ".parquet": "parquet", ".parq": "parquet", ".pq": "parquet",
    ".csv": "csv", ".tsv": "csv", ".txt": "csv",
    ".json": "json", ".jsonl": "json", ".ndjson": "json",
}
_INT_LIKE = (INT, LONG, DATE, TIME, TIMESTAMP, TIMESTAMPTZ, TIMESTAMP_NS, TIMESTAMPTZ_NS)
_NS = (TIMESTAMP_NS, TIMESTAMPTZ_NS)


@dataclass(frozen=True)
class WriteResult:
    """What a write committed: the append's result plus the rows read."""

    append: AppendResult
    rows_read: int
    input_format: str

    def to_json(self) -> dict[str, Any]:
        out = self.append.to_json()
        out["rows-written"] = self.rows_read
        out["input-format"] = self.input_format
        return out


# -- reading input --------------------------------------------------------------------------------


def _detect_format(source: str, data: bytes | None, fmt: str | None) -> str:
    if fmt:
        f = fmt.strip().lower()
        if f in ("jsonl", "ndjson"):
            f = "json"
        if f not in FORMATS:
            raise InvalidInput(f"unknown input format {fmt!r} (use parquet, csv or json)")
        return f
    if source != "-":
        name = source.lower()
        for comp in (".gz", ".bz2", ".zst", ".lz4"):
            if name.endswith(comp):
                name = name[: -len(comp)]
        ext = os.path.splitext(name)[1]
        if ext in _EXTENSIONS:
            return _EXTENSIONS[ext]
        raise InvalidInput(f"cannot tell the format of {source} from its name: use --format parquet|csv|json")
    head = (data or b"")[:64].lstrip()
    if (data or b"").startswith(b"PAR1"):
        return "parquet"
    if head.startswith(b"{"):
        return "json"
    if head:
        return "csv"
    raise InvalidInput("no input on stdin")


def _csv_text_types(schema: Schema, names: Sequence[str]) -> dict[str, pa.DataType]:
    """Every CSV column the table knows is read as text; conform() parses it by type."""
    out = {}
    for n in names:
        if _match(schema.struct, n) is not None:
            out[n] = pa.string()
    return out


def _json_explicit(fields: Sequence[NestedField]) -> list[pa.Field]:
    out = []
    for f in fields:
        t = _json_type(f.type)
        if t is not None:
            out.append(pa.field(f.name, t))
    return out


def _json_type(t: IcebergType) -> pa.DataType | None:
    if isinstance(t, StructType):
        return pa.struct(_json_explicit(t.fields()))
    if isinstance(t, ListType):
        inner = _json_type(t.element_type)
        return pa.list_(inner) if inner is not None else None
    if isinstance(t, MapType):
        return None  # the JSON reader has no maps: objects arrive as structs
    if t in (BOOLEAN, INT, LONG, FLOAT, DOUBLE):
        return arrow_type(t)
    if isinstance(t, DecimalType):
        return None  # numbers or strings: inferred, then converted exactly below
    return pa.string()


def _arrow_owned(data: bytes) -> pa.Buffer:
    """A copy of ``data`` in memory Arrow owns.

    Arrow's threaded readers may drop their last reference to the input buffer on one of their
    own threads after the read returned. A buffer wrapping a Python object then needs the GIL
    to be released; at interpreter exit that thread is stopped inside a C++ destructor and the
    process aborts ("terminate called without an active exception"). A buffer Arrow allocated
    itself has no Python owner to release.
    """
    sink = pa.BufferOutputStream()
    sink.write(data)
    return sink.getvalue()


def _csv_header(data: pa.Buffer, parse: Any) -> list[str]:
    """The column names of a CSV text (the streaming reader is closed before returning)."""
    import pyarrow.csv as pcsv

    with pcsv.open_csv(pa.BufferReader(data), parse_options=parse,
                       read_options=pcsv.ReadOptions(use_threads=False)) as reader:
        return list(reader.schema.names)


def read_rows(file_io: Any, source: str, fmt: str | None = None, schema: Schema | None = None,
              stdin: Any = None) -> tuple[pa.Table, str]:
    """Rows of ``source`` (a path, a URL or ``-`` for ``stdin``) and the format they were read as."""
    import pyarrow.csv as pcsv
    import pyarrow.json as pjson
    import pyarrow.parquet as pq

    data: bytes | None = None
    if source == "-":
        stream = stdin
        if stream is None:
            raise InvalidInput("no stdin to read rows from")
        data = stream.read() if hasattr(stream, "read") else bytes(stream)
        if isinstance(data, str):
            data = data.encode("utf-8")
    fmt = _detect_format(source, data, fmt)
    try:
        if data is None:
            if not file_io.exists(source):
                raise NotFound(f"input file not found: {source}")
            with file_io.open(source, "rb") as f:
                data = f.read()
        if source != "-" and fmt != "parquet" and any(source.lower().endswith(c) for c in (".gz", ".bz2")):
            codec = "gzip" if source.lower().endswith(".gz") else "bz2"
            data = pa.CompressedInputStream(pa.BufferReader(data), codec).read()
        buf = _arrow_owned(data)
        if fmt == "parquet":
            return pq.read_table(pa.BufferReader(buf)), fmt
        if fmt == "csv":
            parse = pcsv.ParseOptions(delimiter="\t" if source.lower().endswith(".tsv") else ",")
            header = _csv_header(buf, parse)
            types = _csv_text_types(schema, header) if schema is not None else {}
            convert = pcsv.ConvertOptions(column_types=types, null_values=["", "NULL", "null"],
                                          strings_can_be_null=True, quoted_strings_can_be_null=False)
            return pcsv.read_csv(pa.BufferReader(buf), parse_options=parse, convert_options=convert), fmt
        explicit = pa.schema(_json_explicit(schema.fields)) if schema is not None else None
        opts = pjson.ParseOptions(explicit_schema=explicit, unexpected_field_behavior="infer")
        return pjson.read_json(pa.BufferReader(buf), parse_options=opts), fmt
    except IcectlError:
        raise
    except pa.ArrowInvalid as e:
        raise InvalidInput(f"cannot read {fmt} rows from {'stdin' if source == '-' else source}: {e}") from None
    except OSError as e:
        raise StorageError(f"cannot read {source}: {e}") from None


# -- casting to the table's schema -------------------------------------------------------------


def _match(struct: StructType, name: str) -> NestedField | None:
    exact = struct.field_by_name(name)
    if exact is not None:
        return exact
    hits = [f for f in struct.fields() if f.name.lower() == name.lower()]
    return hits[0] if len(hits) == 1 else None


def _internal_to_arrow(values: list[Any], t: IcebergType) -> pa.Array:
    """An Arrow array (in icectl's write types) of icectl internal values."""
    if t == DATE:
        return pa.array(values, pa.int32()).cast(pa.date32())
    if t in (TIME, TIMESTAMP, TIMESTAMPTZ, TIMESTAMP_NS, TIMESTAMPTZ_NS):
        return pa.array(values, pa.int64()).cast(arrow_type(t))
    if t == UUID:
        return pa.ExtensionArray.from_storage(
            pa.uuid(), pa.array([None if v is None else v.bytes for v in values], pa.binary(16)))
    return pa.array(values, arrow_type(t))


def _parse_text(arr: pa.Array, t: IcebergType, path: str) -> pa.Array:
    """Text parsed as icectl literals, value by distinct value."""
    uniques = pc.unique(arr)
    parsed = []
    for v in uniques.to_pylist():
        if v is None:
            parsed.append(None)
            continue
        try:
            parsed.append(parse_literal(t, v))
        except InvalidInput as e:
            raise ValidationError(f"column {path}: cannot convert {v!r} to {t}: {e}") from None
    return pc.take(_internal_to_arrow(parsed, t), pc.index_in(arr, value_set=uniques))


def _cast_primitive(arr: pa.Array, t: PrimitiveType, path: str) -> pa.Array:
    target = arrow_type(t)
    src = arr.type
    if src == target:
        return arr
    if isinstance(src, pa.BaseExtensionType):
        arr = arr.storage
        src = arr.type
    is_text = pa.types.is_string(src) or pa.types.is_large_string(src)
    if t == UUID:
        if is_text:
            return _parse_text(arr.cast(pa.string()), t, path)
        if pa.types.is_fixed_size_binary(src) and src.byte_width == 16:
            return pa.ExtensionArray.from_storage(pa.uuid(), arr)
        if pa.types.is_binary(src) or pa.types.is_large_binary(src):
            try:
                return pa.ExtensionArray.from_storage(pa.uuid(), arr.cast(pa.binary(16)))
            except pa.ArrowInvalid:
                raise ValidationError(f"column {path}: uuid values must be 16 bytes") from None
        raise ValidationError(f"column {path}: cannot write {src} values into a uuid column")
    if is_text and t in (TIME, TIMESTAMP, TIMESTAMPTZ, TIMESTAMP_NS, TIMESTAMPTZ_NS, DATE) \
            or is_text and isinstance(t, (DecimalType, FixedType)):
        if isinstance(t, FixedType):
            arr = arr.cast(pa.binary())
        else:
            try:
                return pc.cast(arr, target)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                return _parse_text(arr.cast(pa.string()), t, path)
    if (pa.types.is_timestamp(src) and src.tz is not None and pa.types.is_timestamp(target)
            and target.tz is None):
        arr = arr.cast(pa.timestamp(src.unit))  # the UTC wall clock, as the value is stored
    try:
        return pc.cast(arr, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise ValidationError(f"column {path}: cannot write {src} values into a {t} column: {e}") from None


def _validity(arr: pa.Array) -> pa.Array | None:
    return pc.is_null(arr) if arr.null_count else None


def _check_required(child: pa.Array, parent_valid: pa.Array | None, path: str) -> None:
    if child.null_count == 0:
        return
    bad = pc.is_null(child)
    if parent_valid is not None:
        bad = pc.and_(bad, parent_valid)
    n = pc.sum(bad.cast(pa.int64())).as_py() or 0
    if n:
        first = pc.index(bad, True).as_py()
        raise ValidationError(f"column {path} is required but {n} row(s) are null (first at row {first})")


def _conform_struct(children: dict[str, pa.Array], length: int, struct: StructType, prefix: str,
                    ignore_extra: bool, parent_valid: pa.Array | None) -> list[pa.Array]:
    used: dict[int, list[str]] = {}
    for name in children:
        f = _match(struct, name)
        if f is None:
            if ignore_extra:
                continue
            raise ValidationError(f"input column {prefix}{name} is not in the table "
                                  "(use --ignore-extra-columns to drop it)")
        used.setdefault(f.field_id, []).append(name)
    out = []
    for f in struct.fields():
        path = f"{prefix}{f.name}"
        if f.field_id not in used:
            if f.required:
                raise ValidationError(f"required column {path} is missing from the input")
            out.append(_null_array(f.type, length))
            continue
        names = used[f.field_id]
        arr = _conform(children[names[0]], f.type, path, ignore_extra)
        for other in names[1:]:  # the same column spelt differently (JSON lines): coalesce
            more = _conform(children[other], f.type, path, ignore_extra)
            if pc.any(pc.and_(pc.is_valid(arr), pc.is_valid(more))).as_py():
                raise ValidationError(f"input columns {prefix}{names[0]} and {prefix}{other} both "
                                      f"match column {path} and both have values in one row")
            arr = _where_null(arr, more)
        if f.required:
            _check_required(arr, parent_valid, path)
            if arr.null_count:  # nulls under null parents only: store placeholders there
                arr = _where_null(arr, _placeholder(f.type, length))
        out.append(arr)
    return out


def _where_null(arr: pa.Array, other: pa.Array) -> pa.Array:
    """``arr`` with its nulls taken from ``other``."""
    if isinstance(arr.type, pa.BaseExtensionType):
        return pa.ExtensionArray.from_storage(arr.type, _where_null(arr.storage, other.storage))
    return pc.if_else(pc.is_null(arr), other, arr)


_PLACEHOLDERS: dict[Any, Any] = {BOOLEAN: False, INT: 0, LONG: 0, FLOAT: 0.0, DOUBLE: 0.0, DATE: 0,
                                 TIME: 0, TIMESTAMP: 0, TIMESTAMPTZ: 0, TIMESTAMP_NS: 0,
                                 TIMESTAMPTZ_NS: 0, STRING: "", BINARY: b""}


def _placeholder(t: IcebergType, n: int) -> pa.Array:
    """A non-null array of ``n`` arbitrary values of ``t`` (stored under null parents)."""
    if isinstance(t, StructType):
        return pa.StructArray.from_arrays([_placeholder(f.type, n) for f in t.fields()],
                                          fields=list(arrow_type(t)))
    if isinstance(t, (ListType, MapType)):
        empty = pa.array([[]] * n, pa.list_(pa.int8()))
        if isinstance(t, ListType):
            return pa.ListArray.from_arrays(empty.offsets, pa.nulls(0, arrow_type(t.element_type)),
                                            type=arrow_type(t))
        return pa.MapArray.from_arrays(empty.offsets, pa.nulls(0, arrow_type(t.key_type)),
                                       pa.nulls(0, arrow_type(t.value_type)), type=arrow_type(t))
    if t == UUID:
        return pa.ExtensionArray.from_storage(pa.uuid(), pa.array([b"\0" * 16] * n, pa.binary(16)))
    if isinstance(t, FixedType):
        return pa.array([b"\0" * t.length] * n, pa.binary(t.length))
    if isinstance(t, DecimalType):
        return pa.array([Decimal(0)] * n, arrow_type(t))
    return _internal_to_arrow([_PLACEHOLDERS[t]] * n, t)


def _null_array(t: IcebergType, n: int) -> pa.Array:
    """``n`` nulls of ``t``; a struct's required fields hold placeholders under the nulls."""
    if isinstance(t, StructType) and n:
        kids = [_placeholder(f.type, n) if f.required else _null_array(f.type, n) for f in t.fields()]
        return pa.StructArray.from_arrays(kids, fields=list(arrow_type(t)),
                                          mask=pa.array([True] * n, pa.bool_()))
    return pa.nulls(n, arrow_type(t))


def _conform(arr: Any, t: IcebergType, path: str, ignore_extra: bool) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    src = arr.type
    if isinstance(t, StructType):
        if not pa.types.is_struct(src):
            raise ValidationError(f"column {path}: cannot write {src} values into a struct column")
        valid = pc.is_valid(arr) if arr.null_count else None
        children = {src.field(i).name: arr.field(i) for i in range(src.num_fields)}
        if len(children) != src.num_fields:
            raise ValidationError(f"column {path}: input struct has duplicate field names")
        kids = _conform_struct(children, len(arr), t, path + ".", ignore_extra, valid)
        target = arrow_type(t)
        mask = pc.is_null(arr) if arr.null_count else None
        return pa.StructArray.from_arrays(kids, fields=list(target), mask=mask)
    if isinstance(t, ListType):
        if not (pa.types.is_list(src) or pa.types.is_large_list(src) or pa.types.is_fixed_size_list(src)):
            raise ValidationError(f"column {path}: cannot write {src} values into a list column")
        if not pa.types.is_list(src):
            arr = arr.cast(pa.list_(src.value_type))
        values = _conform(arr.values, t.element_type, path + ".element", ignore_extra)
        if t.element_required:
            _check_required(values, None, path + ".element")
        mask = pc.is_null(arr) if arr.null_count else None
        return pa.ListArray.from_arrays(arr.offsets, values, type=arrow_type(t), mask=mask)
    if isinstance(t, MapType):
        if pa.types.is_struct(src):
            return _struct_to_map(arr, t, path, ignore_extra)
        if not pa.types.is_map(src):
            raise ValidationError(f"column {path}: cannot write {src} values into a map column")
        keys = _conform(arr.keys, t.key_type, path + ".key", ignore_extra)
        _check_required(keys, None, path + ".key")
        items = _conform(arr.items, t.value_type, path + ".value", ignore_extra)
        if t.value_required:
            _check_required(items, None, path + ".value")
        out = pa.MapArray.from_arrays(arr.offsets, keys, items, type=arrow_type(t))
        if arr.null_count:
            out = pc.if_else(pc.is_null(arr), pa.scalar(None, out.type), out)
        return out
    if pa.types.is_nested(src):
        raise ValidationError(f"column {path}: cannot write {src} values into a {t} column")
    return _cast_primitive(arr, t, path)


def _struct_to_map(arr: pa.Array, t: MapType, path: str, ignore_extra: bool) -> pa.Array:
    rows = arr.to_pylist()
    offsets = [0]
    keys: list[Any] = []
    values: list[Any] = []
    for r in rows:
        if r is not None:
            for k, v in r.items():
                if v is not None:
                    keys.append(k)
                    values.append(v)
        offsets.append(len(keys))
    key_arr = _conform(pa.array(keys, pa.string()), t.key_type, path + ".key", ignore_extra)
    val_arr = _conform(pa.array(values) if values else pa.nulls(0), t.value_type, path + ".value",
                       ignore_extra)
    out = pa.MapArray.from_arrays(pa.array(offsets, pa.int32()), key_arr, val_arr, type=arrow_type(t))
    if arr.null_count:
        out = pc.if_else(pc.is_null(arr), pa.scalar(None, out.type), out)
    return out


def conform_to_schema(data: pa.Table, schema: Schema, *, ignore_extra_columns: bool = False) -> pa.Table:
    """``data`` cast to the table's schema (see the module docs); ValidationError when it does not fit."""
    names = data.column_names
    if len(set(names)) != len(names):
        raise ValidationError("the input has duplicate column names")
    children = {n: data.column(n) for n in names}
    cols = _conform_struct(children, data.num_rows, schema.struct, "", ignore_extra_columns, None)
    return pa.Table.from_arrays(cols, schema=arrow_schema(schema))


# -- transforms on Arrow arrays ----------------------------------------------------------------

_U32 = pa.uint32()


def _u32(v: int) -> pa.Scalar:
    return pa.scalar(v & 0xFFFFFFFF, _U32)


def _rotl(x: pa.Array, r: int) -> pa.Array:
    return pc.bit_wise_or(pc.shift_left(x, _u32(r)), pc.shift_right(x, _u32(32 - r)))


def _murmur3_longs(v: pa.Array) -> pa.Array:
    """Murmur3 x86 32 (seed 0) of each value as 8 little-endian bytes, as uint32."""
    u = pc.cast(v, pa.uint64(), safe=False)
    lo = pc.cast(pc.bit_wise_and(u, pa.scalar(0xFFFFFFFF, pa.uint64())), _U32)
    hi = pc.cast(pc.shift_right(u, pa.scalar(32, pa.uint64())), _U32)
    c1, c2 = _u32(0xCC9E2D51), _u32(0x1B873593)
    h = pa.nulls(len(v), _U32).fill_null(0)
    for k in (lo, hi):
        k = pc.multiply(k, c1)
        k = _rotl(k, 15)
        k = pc.multiply(k, c2)
        h = pc.bit_wise_xor(h, k)
        h = _rotl(h, 13)
        h = pc.add(pc.multiply(h, _u32(5)), _u32(0xE6546B64))
    h = pc.bit_wise_xor(h, _u32(8))
    h = pc.bit_wise_xor(h, pc.shift_right(h, _u32(16)))
    h = pc.multiply(h, _u32(0x85EBCA6B))
    h = pc.bit_wise_xor(h, pc.shift_right(h, _u32(13)))
    h = pc.multiply(h, _u32(0xC2B2AE35))
    return pc.bit_wise_xor(h, pc.shift_right(h, _u32(16)))


def _floor_div(x: pa.Array, d: int) -> pa.Array:
    """Floor division of int64 values by a positive constant."""
    ds = pa.scalar(d, pa.int64())
    q = pc.divide(x, ds)  # truncates toward zero
    inexact = pc.and_(pc.less(x, pa.scalar(0, pa.int64())), pc.not_equal(pc.multiply(q, ds), x))
    return pc.if_else(inexact, pc.subtract(q, pa.scalar(1, pa.int64())), q)


def _as_longs(arr: pa.Array, t: IcebergType) -> pa.Array:
    """int/long/date/time/timestamp values as int64 (days, micros; nanos floored to micros)."""
    if isinstance(arr.type, pa.BaseExtensionType):
        arr = arr.storage
    if t == DATE:
        return arr.cast(pa.int32()).cast(pa.int64())
    out = arr.cast(pa.int64()) if not pa.types.is_int64(arr.type) else arr
    if t in _NS:
        out = _floor_div(out, 1000)
    return out


def _per_distinct(arr: pa.Array, fn: Callable[[Any], Any], result: pa.DataType) -> pa.Array:
    uniques = pc.unique(arr)
    mapped = pa.array([None if v is None else fn(v) for v in uniques.to_pylist()], result)
    return pc.take(mapped, pc.index_in(arr, value_set=uniques))


def _to_internal_scalar_fn(t: IcebergType) -> Callable[[Any], Any]:
    if t == UUID:
        return lambda b: _uuid.UUID(bytes=bytes(b))
    return lambda v: v


def transform_array(transform: Transform, arr: pa.Array, source_type: IcebergType) -> pa.Array:
    """``transform`` applied to every value of ``arr`` (an array in icectl's write types)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    n = len(arr)
    if transform.is_void:
        return pa.nulls(n, arrow_type(source_type))  # void keeps the source type, always null
    if isinstance(transform, IdentityTransform):
        return arr
    if isinstance(transform, BucketTransform):
        nb = transform.num_buckets
        if source_type in _INT_LIKE:
            h = pc.cast(pc.bit_wise_and(_murmur3_longs(_as_longs(arr, source_type)), _u32(0x7FFFFFFF)),
                        pa.int64())
            q = pc.divide(h, pa.scalar(nb, pa.int64()))
            return pc.subtract(h, pc.multiply(q, pa.scalar(nb, pa.int64()))).cast(pa.int32())
        storage = arr.storage if isinstance(arr.type, pa.BaseExtensionType) else arr
        conv = _to_internal_scalar_fn(source_type)
        return _per_distinct(storage, lambda v: transform.apply(conv(v), source_type), pa.int32())
    if isinstance(transform, TruncateTransform):
        w = transform.width
        if source_type in (INT, LONG):
            typ = pa.int32() if source_type == INT else pa.int64()
            ws = pa.scalar(w, typ)

            def rem(x: pa.Array) -> pa.Array:  # Java's %, in wrapping arithmetic
                return pc.subtract(x, pc.multiply(pc.divide(x, ws), ws))

            return pc.subtract(arr, rem(pc.add(rem(arr), ws)))
        if source_type == STRING:
            return pc.utf8_slice_codeunits(arr, 0, w)
        if source_type == BINARY:
            return pc.binary_slice(arr, 0, w)
        return _per_distinct(arr, lambda v: transform.apply(v, source_type), arr.type)
    if isinstance(transform, (YearTransform, MonthTransform, DayTransform, HourTransform)):
        longs = _as_longs(arr, source_type)
        if isinstance(transform, HourTransform):
            if source_type == DATE:
                return pc.multiply(longs, pa.scalar(24, pa.int64())).cast(pa.int32())
            return _floor_div(longs, MICROS_PER_HOUR).cast(pa.int32())
        days = longs if source_type == DATE else _floor_div(longs, MICROS_PER_DAY)
        if isinstance(transform, DayTransform):
            return days.cast(pa.int32())
        dates = days.cast(pa.int32()).cast(pa.date32())
        years = pc.subtract(pc.year(dates), pa.scalar(1970, pa.int64()))
        if isinstance(transform, YearTransform):
            return years.cast(pa.int32())
        months = pc.add(pc.multiply(years, pa.scalar(12, pa.int64())),
                        pc.subtract(pc.month(dates), pa.scalar(1, pa.int64())))
        return months.cast(pa.int32())
    # unknown transforms: one value at a time
    conv = _to_internal_scalar_fn(source_type)
    return pa.array([transform.apply(conv(v), source_type) if v is not None else None
                     for v in arr.to_pylist()])


def _internal_values(arr: pa.Array, t: IcebergType) -> list[Any]:
    """icectl's internal values (values.py) of an array of a transform's results."""
    if isinstance(arr.type, pa.BaseExtensionType):
        arr = arr.storage
    if t == UUID:
        return [None if b is None else _uuid.UUID(bytes=b) for b in arr.to_pylist()]
    if pa.types.is_date32(arr.type):
        return arr.cast(pa.int32()).to_pylist()
    if pa.types.is_timestamp(arr.type) or pa.types.is_time(arr.type):
        return arr.cast(pa.int64()).to_pylist()
    return arr.to_pylist()


# -- columns by field id -------------------------------------------------------------------------


def _path_to(struct: StructType, field_id: int) -> list[NestedField] | None:
    for f in struct.fields():
        if f.field_id == field_id:
            return [f]
        if isinstance(f.type, StructType):
            rest = _path_to(f.type, field_id)
            if rest is not None:
                return [f] + rest
    return None


def _column(data: pa.Table, schema: Schema, field_id: int) -> tuple[pa.Array, IcebergType]:
    path = _path_to(schema.struct, field_id)
    if path is None:
        raise ValidationError(f"field id {field_id} is not a column outside lists and maps")
    arr = data.column(path[0].name)
    arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    for f in path[1:]:
        arr = pc.struct_field(arr, f.name)  # a null struct gives a null field
    return arr, path[-1].type


# -- partitioning and sorting ---------------------------------------------------------------------


def partition_groups(data: pa.Table, spec: PartitionSpec, schema: Schema) -> list[tuple[tuple, pa.Array]]:
    """(partition tuple in internal values, row indices) per partition, ordered by tuple."""
    n = data.num_rows
    if not spec.fields:
        return [((), pa.array(range(n), pa.int64()))]
    cols = {}
    types = []
    for i, pf in enumerate(spec.fields):
        arr, stype = _column(data, schema, pf.source_id)
        if pf.transform.is_void:
            cols[f"p{i}"] = pa.nulls(n, pa.int32())
            types.append(None)
            continue
        res = transform_array(pf.transform, arr, stype)
        if isinstance(res.type, pa.BaseExtensionType):
            res = res.storage
        cols[f"p{i}"] = res
        types.append(pf.transform.result_type(stype))
    cols["__row"] = pa.array(range(n), pa.int64())
    keys = [f"p{i}" for i in range(len(spec.fields))]
    grouped = pa.table(cols).group_by(keys, use_threads=False).aggregate([("__row", "list")])
    out = []
    key_values = [_internal_values(grouped.column(k).combine_chunks(), t) for k, t in zip(keys, types)]
    rows = grouped.column("__row_list").combine_chunks()
    for g in range(grouped.num_rows):
        part = tuple(kv[g] for kv in key_values)
        out.append((part, rows[g].values))
    out.sort(key=lambda item: tuple((v is not None, _sortable(v)) for v in item[0]))
    return out


def _sortable(v: Any) -> Any:
    if v is None:
        return 0
    if isinstance(v, _uuid.UUID):
        return v.bytes
    if isinstance(v, float) and math.isnan(v):
        return math.inf
    return v


def sort_indices(data: pa.Table, order: SortOrder, schema: Schema) -> pa.Array | None:
    """Row order of ``data`` by the sort order (None when unsorted). Each key sorts by its
    transformed value in its direction, nulls first or last as it says, NaN above all numbers."""
    if order is None or not order.fields or data.num_rows < 2:
        return None
    cols: dict[str, pa.Array] = {}
    keys: list[tuple[str, str]] = []
    for i, sf in enumerate(order.fields):
        if sf.transform.is_void:
            continue
        arr, stype = _column(data, schema, sf.source_id)
        res = transform_array(sf.transform, arr, stype)
        if isinstance(res.type, pa.BaseExtensionType):
            res = res.storage
        asc = sf.direction == SortDirection.ASC
        direction = "ascending" if asc else "descending"
        nulls_first = sf.null_order == NullOrder.NULLS_FIRST
        # per-key null placement: a null flag sorted ahead of the value
        cols[f"n{i}"] = pc.is_null(res)
        keys.append((f"n{i}", "descending" if nulls_first else "ascending"))
        if pa.types.is_floating(res.type):
            cols[f"x{i}"] = pc.fill_null(pc.is_nan(res), False)
            keys.append((f"x{i}", direction))  # NaN is the largest value
        if pa.types.is_fixed_size_binary(res.type):
            res = res.cast(pa.binary())
        cols[f"v{i}"] = res
        keys.append((f"v{i}", direction))
    if not keys:
        return None
    return pc.sort_indices(pa.table(cols), sort_keys=keys)


# -- locations ----------------------------------------------------------------------------------


def data_location(table_location: str, properties: Mapping[str, str]) -> str:
    """Where new data files go: ``write.data.path``, else the legacy folder-storage path, else
    ``<table location>/data``."""
    for key in (WRITE_DATA_PATH, _LEGACY_DATA_PATH):
        v = properties.get(key)
        if v:
            return v.rstrip("/")
    return join(table_location, "data")


# -- the operation ------------------------------------------------------------------------------


def write_rows(
    table: Any,
    source: str | pa.Table,
    *,
    file_format: str | None = None,
    summary_properties: Mapping[str, str] | None = None,
    branch: str = MAIN_BRANCH,
    ignore_extra_columns: bool = False,
    merge: bool | None = None,
    stdin: Any = None,
) -> WriteResult:
    """Write the rows of ``source`` (a path/URL, ``-`` for ``stdin``, or an Arrow table) to
    ``table`` as one append snapshot of ``branch`` (see the module docs)."""
    md = table.metadata
    schema, spec, order = md.schema, md.spec, md.sort_order
    if isinstance(source, pa.Table):
        raw, fmt = source, "arrow"
    else:
        raw, fmt = read_rows(table.io, source, file_format, schema, stdin)
    if raw.num_rows == 0:
        raise InvalidInput("the input has no rows: nothing to write")
    data = conform_to_schema(raw, schema, ignore_extra_columns=ignore_extra_columns)
    data = data.combine_chunks()

    options = ParquetWriteOptions.from_properties(md.properties)
    config = metrics_config(md.properties, schema, order)
    mapping = table_name_mapping(dict(md.properties), schema)
    base_dir = data_location(table.location, md.properties)
    operation_id = str(_uuid.uuid4())
    counter = [0]
    written_paths: list[str] = []

    files: list[tuple[DataFile, str]] = []
    try:
        for part, rows in partition_groups(data, spec, schema):
            chunk = data.take(rows)
            idx = sort_indices(chunk, order, schema)
            if idx is not None:
                chunk = chunk.take(idx)
            ppath = partition_path(spec, schema, part) if spec.fields else ""
            directory = join(base_dir, ppath) if ppath else base_dir

            def next_path(directory: str = directory) -> str:
                counter[0] += 1
                p = join(directory, f"00000-0-{operation_id}-{counter[0]:05d}.parquet")
                written_paths.append(p)
                return p

            start = 0
            for wf in write_rolling(table.io, chunk, schema, options, next_path):
                fm = footer_metrics(wf.footer, config, mapping, wf.file_size_in_bytes, path=wf.path)
                nan_counts = _nan_counts(chunk.slice(start, wf.record_count), schema, config)
                start += wf.record_count
                df = DataFile(
                    content=DATA, file_path=wf.path, file_format="PARQUET", partition=part,
                    record_count=wf.record_count, file_size_in_bytes=wf.file_size_in_bytes,
                    column_sizes=fm.column_sizes or None, value_counts=fm.value_counts or None,
                    null_value_counts=fm.null_value_counts or None,
                    nan_value_counts=nan_counts,
                    lower_bounds=fm.lower_bounds or None, upper_bounds=fm.upper_bounds or None,
                    split_offsets=fm.split_offsets or None, spec_id=spec.spec_id,
                    sort_order_id=order.order_id if order is not None else None,
                )
                files.append((df, ppath))
        result = append_data_files(table, files, summary_properties=summary_properties,
                                   branch=branch, merge=merge)
    except BaseException:
        for p in written_paths:
            table.io.delete_quietly(p)
        raise
    return WriteResult(result, data.num_rows, fmt)


def _nan_counts(rows: pa.Table, schema: Schema, config: Any) -> dict[int, int] | None:
    """NaN counts of the file's top-level float/double columns (the reference's writers count
    them)."""
    out: dict[int, int] = {}
    for f in schema.fields:
        if f.type in (FLOAT, DOUBLE) and config.column_mode(f.name).keeps_metrics:
            col = rows.column(f.name)
            out[f.field_id] = int(pc.sum(pc.is_nan(col).cast(pa.int64())).as_py() or 0)
    return out or None
