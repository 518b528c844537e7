"""Arrow data conformed to a table schema: ``conform_to_schema(data, schema)``.

Input columns are matched to the schema's columns by name: an exact match first, otherwise a
case-insensitive one (as Spark does by default); an ambiguous case-insensitive match is refused.
Nested struct fields are matched the same way. A missing optional column becomes nulls; a
missing required column, a null in a required column and an input column the schema does not
have (unless ``ignore_extra_columns``) are refused with ValidationError (NotFound for the
column). A value that does not fit its column is refused with InvalidInput naming the source,
the row (1-based, in input order; for a list element or map entry, the row holding it) and the
column. Numbers follow :mod:`icectl.ops.compute.fit`: stored exactly or refused, rounded only
with ``rounding``. Other text values are parsed as icectl parses literals (ISO dates, times and
timestamps, canonical UUIDs); ``binary`` and ``fixed`` text is hex (the JSON single-value form
``icectl scan`` prints; an optional ``0x``). A struct given for a map column is either the JSON
single-value form, exactly two lists ``keys`` and ``values`` (the i-th key maps to the i-th
value), or an object keyed by the map's keys (JSON objects; null values left out). The result
has exactly ``arrow_schema(schema)``: field ids on every field, required fields non-nullable
(values under null parents hold placeholders).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Callable

import pyarrow as pa
import pyarrow.compute as pc

from icectl.errors import InvalidInput, NotFound, ValidationError
from icectl.io.formats.parquet_write import arrow_schema, arrow_type
from icectl.ops.compute.arrow_values import internal_to_arrow
from icectl.ops.compute.fit import DoesNotFit, check_rounding, fit_array, fits_source, is_numeric
from icectl.spec.schema import Schema
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

__all__ = ["conform_to_schema", "match_column"]


def match_column(struct: StructType, name: str) -> NestedField | None:
    exact = struct.field_by_name(name)
    if exact is not None:
        return exact
    hits = [f for f in struct.fields() if f.name.lower() == name.lower()]
    return hits[0] if len(hits) == 1 else None


@dataclass(frozen=True)
class _Options:
    ignore_extra: bool
    rounding: str | None = None
    source: str | None = None


Rows = Callable[[int], int]  # a position in an array -> the (0-based) input row holding it


def _same_row(i: int) -> int:
    return i


def _element_rows(offsets: pa.Array, rows: Rows) -> Rows:
    """The rows of list elements / map entries, from their parent's offsets."""
    def locate(i: int) -> int:
        return rows(bisect.bisect_right(offsets.to_pylist(), i) - 1)
    return locate


def _parse_text(arr: pa.Array, t: IcebergType) -> pa.Array:
    """Text parsed as icectl literals, value by distinct value (DoesNotFit at the first that
    cannot be parsed)."""
    uniques = pc.unique(arr)
    codes = pc.index_in(arr, value_set=uniques)
    parsed = []
    for i, v in enumerate(uniques.to_pylist()):
        if v is None:
            parsed.append(None)
            continue
        try:
            parsed.append(parse_literal(t, v))
        except InvalidInput as e:
            raise DoesNotFit(v, t, str(e), index=pc.index(codes, i).as_py(),
                             text=f"cannot convert {v!r} to {t}: {e}") from None
    return pc.take(internal_to_arrow(parsed, t), codes)


def _cast_primitive(arr: pa.Array, t: PrimitiveType, path: str, rounding: str | None = None) -> pa.Array:
    target = arrow_type(t)
    src = arr.type
    if src == target:
        return arr
    if isinstance(src, pa.BaseExtensionType):
        arr = arr.storage
        src = arr.type
    if pa.types.is_dictionary(src):  # a categorical column: its values, by the same rules
        arr = arr.dictionary_decode()
        src = arr.type
        if src == target:
            return arr
    if is_numeric(t) and fits_source(src):
        return fit_array(arr, t, rounding)
    is_text = pa.types.is_string(src) or pa.types.is_large_string(src)
    if t == UUID:
        if is_text:
            return _parse_text(arr.cast(pa.string()), t)
        if pa.types.is_fixed_size_binary(src) and src.byte_width == 16:
            return pa.ExtensionArray.from_storage(pa.uuid(), arr)
        if pa.types.is_binary(src) or pa.types.is_large_binary(src):
            try:
                return pa.ExtensionArray.from_storage(pa.uuid(), arr.cast(pa.binary(16)))
            except pa.ArrowInvalid:
                raise ValidationError(f"column {path}: uuid values must be 16 bytes") from None
        raise ValidationError(f"column {path}: cannot write {src} values into a uuid column")
    if is_text and (t == BINARY or isinstance(t, FixedType)):
        return _parse_text(arr.cast(pa.string()), t)  # hex, the form scan prints
    if is_text and t in (TIME, TIMESTAMP, TIMESTAMPTZ, TIMESTAMP_NS, TIMESTAMPTZ_NS, DATE):
        try:
            return pc.cast(arr, target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return _parse_text(arr.cast(pa.string()), t)
    if (pa.types.is_timestamp(src) and src.tz is not None and pa.types.is_timestamp(target)
            and target.tz is None):
        arr = arr.cast(pa.timestamp(src.unit))  # the UTC wall clock, as the value is stored
    try:
        return pc.cast(arr, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise ValidationError(f"column {path}: cannot write {src} values into a {t} column: {e}") from None


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
                    opts: _Options, parent_valid: pa.Array | None, rows: Rows = _same_row) -> list[pa.Array]:
    used: dict[int, list[str]] = {}
    for name in children:
        f = match_column(struct, name)
        if f is None:
            if opts.ignore_extra:
                continue
            raise NotFound(f"input column {prefix}{name} is not in the table",
                           override="ignore_extra_columns", effect="to drop it")
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
        arr = _conform(children[names[0]], f.type, path, opts, rows)
        for other in names[1:]:  # the same column spelt differently (JSON lines): coalesce
            more = _conform(children[other], f.type, path, opts, rows)
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
    return internal_to_arrow([_PLACEHOLDERS[t]] * n, t)


def _null_array(t: IcebergType, n: int) -> pa.Array:
    """``n`` nulls of ``t``; a struct's required fields hold placeholders under the nulls."""
    if isinstance(t, StructType) and n:
        kids = [_placeholder(f.type, n) if f.required else _null_array(f.type, n) for f in t.fields()]
        return pa.StructArray.from_arrays(kids, fields=list(arrow_type(t)),
                                          mask=pa.array([True] * n, pa.bool_()))
    return pa.nulls(n, arrow_type(t))


def _conform(arr: Any, t: IcebergType, path: str, opts: _Options, rows: Rows = _same_row) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    src = arr.type
    if isinstance(t, StructType):
        if not pa.types.is_struct(src):
            raise ValidationError(f"column {path}: cannot write {src} values into a struct column")
        valid = pc.is_valid(arr) if arr.null_count else None
        # flatten(): values under a null struct are null (field() gives placeholders, such as
        # "" for text, that would be parsed as values)
        children = dict(zip((src.field(i).name for i in range(src.num_fields)), arr.flatten()))
        if len(children) != src.num_fields:
            raise ValidationError(f"column {path}: input struct has duplicate field names")
        kids = _conform_struct(children, len(arr), t, path + ".", opts, valid, rows)
        target = arrow_type(t)
        mask = pc.is_null(arr) if arr.null_count else None
        return pa.StructArray.from_arrays(kids, fields=list(target), mask=mask)
    if isinstance(t, ListType):
        if not (pa.types.is_list(src) or pa.types.is_large_list(src) or pa.types.is_fixed_size_list(src)):
            raise ValidationError(f"column {path}: cannot write {src} values into a list column")
        if not pa.types.is_list(src):
            arr = arr.cast(pa.list_(src.value_type))
        values = _conform(arr.values, t.element_type, path + ".element", opts,
                          _element_rows(arr.offsets, rows))
        if t.element_required:
            _check_required(values, None, path + ".element")
        mask = pc.is_null(arr) if arr.null_count else None
        return pa.ListArray.from_arrays(arr.offsets, values, type=arrow_type(t), mask=mask)
    if isinstance(t, MapType):
        if pa.types.is_struct(src):
            return _struct_to_map(arr, t, path, opts, rows)
        if not pa.types.is_map(src):
            raise ValidationError(f"column {path}: cannot write {src} values into a map column")
        entry_rows = _element_rows(arr.offsets, rows)
        keys = _conform(arr.keys, t.key_type, path + ".key", opts, entry_rows)
        _check_required(keys, None, path + ".key")
        items = _conform(arr.items, t.value_type, path + ".value", opts, entry_rows)
        if t.value_required:
            _check_required(items, None, path + ".value")
        return _map_array(arr.offsets, keys, items, t, pc.is_null(arr))
    if pa.types.is_nested(src):
        raise ValidationError(f"column {path}: cannot write {src} values into a {t} column")
    try:
        return _cast_primitive(arr, t, path, opts.rounding)
    except DoesNotFit as e:
        raise _located(e, path, rows, opts) from None


def _located(e: DoesNotFit, path: str, rows: Rows, opts: _Options) -> InvalidInput:
    """The one-line error of a value that does not fit: source, row, column, why."""
    where = f"row {rows(e.index or 0) + 1}, column {path}"
    where = f"{opts.source}: {where}" if opts.source else where
    if e.roundable and opts.rounding is None:
        return InvalidInput(f"{where}: {e}", override="rounding", effect="half-even|half-up|down to round it")
    return InvalidInput(f"{where}: {e}")


def _is_keys_values(src: pa.DataType) -> bool:
    """A struct of exactly two lists, ``keys`` and ``values``: a map in the JSON single-value
    form (Appendix D, as ``scan`` prints maps), not an object keyed by the map's keys."""
    names = {src.field(i).name for i in range(src.num_fields)}
    return names == {"keys", "values"} and all(
        pa.types.is_list(src.field(n).type) or pa.types.is_large_list(src.field(n).type) for n in names)


def _keys_values_to_map(arr: pa.Array, t: MapType, path: str, opts: _Options, rows: Rows) -> pa.Array:
    """A map from ``{"keys": [...], "values": [...]}``: the i-th key holds the i-th value."""
    keys, values = _kv_lists(arr)
    nk, nv = pc.list_value_length(keys), pc.list_value_length(values)
    differ = pc.fill_null(pc.not_equal(nk, nv), True)
    differ = pc.and_(differ, pc.or_(pc.is_valid(nk), pc.is_valid(nv)))  # both null: a null map
    if pc.any(differ).as_py():
        i = pc.index(differ, True).as_py()
        raise InvalidInput(f"{opts.source + ': ' if opts.source else ''}row {rows(i) + 1}, column {path}: "
                           "a map's keys and values must be lists of the same length")
    nulls = pc.is_null(nk)
    offsets = pa.concat_arrays([pa.array([0], pa.int32()),
                                pc.cumulative_sum(pc.fill_null(nk, 0)).cast(pa.int32())])
    entry_rows = _element_rows(offsets, rows)
    key_arr = _conform(keys.flatten(), t.key_type, path + ".key", opts, entry_rows)
    _check_required(key_arr, None, path + ".key")
    val_arr = _conform(values.flatten(), t.value_type, path + ".value", opts, entry_rows)
    if t.value_required:
        _check_required(val_arr, None, path + ".value")
    return _map_array(offsets, key_arr, val_arr, t, nulls)


def _kv_lists(arr: pa.Array) -> tuple[pa.Array, pa.Array]:
    """The keys and values lists of a keys/values struct, null where the struct is."""
    src = arr.type
    kids = dict(zip((src.field(i).name for i in range(src.num_fields)), arr.flatten()))
    return tuple(a if pa.types.is_list(a.type) else a.cast(pa.list_(a.type.value_type))
                 for a in (kids["keys"], kids["values"]))  # type: ignore[return-value]


def _struct_to_map(arr: pa.Array, t: MapType, path: str, opts: _Options, rows: Rows) -> pa.Array:
    if _is_keys_values(arr.type):
        return _keys_values_to_map(arr, t, path, opts, rows)
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
    entry_rows = _element_rows(pa.array(offsets, pa.int32()), rows)
    key_arr = _conform(pa.array(keys, pa.string()), t.key_type, path + ".key", opts, entry_rows)
    val_arr = _conform(pa.array(values) if values else pa.nulls(0), t.value_type, path + ".value",
                       opts, entry_rows)
    return _map_array(pa.array(offsets, pa.int32()), key_arr, val_arr, t, pc.is_null(arr))


def _map_array(offsets: pa.Array, keys: pa.Array, items: pa.Array, t: MapType, nulls: pa.Array) -> pa.Array:
    """A map array null where ``nulls`` is true: null offsets make null maps (a null scalar of
    a map type holding an extension type, such as uuid, cannot be built)."""
    if pc.any(nulls).as_py():
        nulls = pa.concat_arrays([nulls, pa.array([False])])
        offsets = pc.if_else(nulls, pa.scalar(None, offsets.type), offsets)
    return pa.MapArray.from_arrays(offsets, keys, items, type=arrow_type(t))


def conform_to_schema(data: pa.Table | pa.RecordBatch, schema: Schema, *,
                      ignore_extra_columns: bool = False, rounding: str | None = None,
                      source: str | None = None) -> pa.Table:
    """``data`` cast to ``schema`` (see the module docs). ``rounding`` (one of
    :data:`icectl.ops.compute.fit.ROUNDINGS`) lets numbers with more digits than their column
    keeps be rounded; ``source`` names the input in errors."""
    opts = _Options(ignore_extra_columns, check_rounding(rounding), source)
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    names = data.column_names
    if len(set(names)) != len(names):
        raise ValidationError("the input has duplicate column names")
    children = {n: data.column(n) for n in names}
    cols = _conform_struct(children, data.num_rows, schema.struct, "", opts, None)
    return pa.Table.from_arrays(cols, schema=arrow_schema(schema))
