"""Arrow columns <-> icectl's internal values (see :mod:`icectl.spec.values`), for reading rows.

``to_internal`` turns an Arrow array of an Iceberg type into a list of internal values (dates as
days, timestamps as micro- or nanoseconds, structs as dicts of field id -> value, ...): what the
row evaluator, equality deletes and the JSON single-value form take. ``internal_to_arrow``
builds an Arrow array of the type icectl writes (:func:`icectl.io.parquet_write.arrow_type`)
from internal values (defaults, partition values).
"""

from __future__ import annotations

import uuid as _uuid
from typing import Any

import pyarrow as pa

from icectl.io.parquet import arrow_field_id
from icectl.io.parquet_write import arrow_type
from icectl.spec.types import UUID, IcebergType, ListType, MapType, StructType

__all__ = ["to_internal", "internal_to_arrow", "conform"]


def _storage(arr: Any) -> Any:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if isinstance(arr.type, pa.BaseExtensionType):
        arr = arr.storage
    return arr


def _nested_slices(arr: Any, values: list[Any]) -> list[Any]:
    offsets = arr.offsets.to_pylist()
    valid = arr.is_valid().to_pylist()
    return [values[offsets[i]:offsets[i + 1]] if valid[i] else None for i in range(len(arr))]


def to_internal(arr: Any, t: IcebergType) -> list[Any]:
    """The internal values of an Arrow array holding values of Iceberg type ``t``."""
    arr = _storage(arr)
    if isinstance(t, StructType):
        valid = arr.is_valid().to_pylist()
        cols = []
        kids = arr.flatten()
        for f in t.fields():
            idx = arr.type.get_field_index(f.name)
            if idx < 0:
                continue
            cols.append((f.field_id, to_internal(kids[idx], f.type)))
        return [{fid: vals[i] for fid, vals in cols} if valid[i] else None
                for i in range(len(arr))]
    if isinstance(t, ListType):
        return _nested_slices(arr, to_internal(arr.values, t.element_type))
    if isinstance(t, MapType):
        keys = to_internal(arr.keys, t.key_type)
        vals = to_internal(arr.items, t.value_type)
        pairs = _nested_slices(arr, list(zip(keys, vals)))
        return [None if p is None else dict(p) for p in pairs]
    if t == UUID:
        return [None if b is None else _uuid.UUID(bytes=b) for b in arr.to_pylist()]
    at = arr.type
    if pa.types.is_date32(at):
        return arr.cast(pa.int32()).to_pylist()
    if pa.types.is_date64(at):
        return [None if v is None else v // 86_400_000 for v in arr.cast(pa.int64()).to_pylist()]
    if pa.types.is_timestamp(at) or pa.types.is_time(at):
        return arr.cast(pa.int64()).to_pylist()
    return arr.to_pylist()


def _py(v: Any, t: IcebergType) -> Any:
    """An internal value as pyarrow's ``pa.array`` takes it for ``arrow_type(t)``."""
    if v is None:
        return None
    if isinstance(t, StructType):
        return {f.name: _py(v.get(f.field_id), f.type) for f in t.fields()}
    if isinstance(t, ListType):
        return [_py(x, t.element_type) for x in v]
    if isinstance(t, MapType):
        return [(_py(k, t.key_type), _py(x, t.value_type)) for k, x in v.items()]
    if t == UUID:
        return v.bytes
    return v


def internal_to_arrow(values: list[Any], t: IcebergType) -> Any:
    """An Arrow array (of ``arrow_type(t)``) of internal values."""
    target = arrow_type(t)
    if isinstance(target, pa.BaseExtensionType):
        storage = pa.array([_py(v, t) for v in values], target.storage_type)
        return pa.ExtensionArray.from_storage(target, storage)
    return pa.array([_py(v, t) for v in values], target)


def _default_array(f: Any, n: int) -> Any:
    from icectl.spec.values import from_json_value

    value = from_json_value(f.type, f.initial_default) if f.has_initial_default else None
    return internal_to_arrow([value] * n, f.type)


def conform(arr: Any, t: IcebergType, file_field: Any = None) -> Any:
    """A column read from a data file in the Arrow type icectl uses for ``t``: promoted
    (int -> long, float -> double, wider decimals), timestamp units normalized; struct fields
    matched by the file's field ids (``file_field``, the column's Arrow field), missing ones
    filled with their initial default or null."""
    target = arrow_type(t)
    arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    if arr.type == target:
        return arr
    if isinstance(t, StructType) and file_field is not None and pa.types.is_struct(arr.type):
        by_id = {}
        for i in range(arr.type.num_fields):
            fid = arrow_field_id(arr.type.field(i))
            by_id[fid if fid is not None else arr.type.field(i).name] = i
        children = []
        kids = arr.flatten()
        for f in t.fields():
            i = by_id.get(f.field_id, by_id.get(f.name))
            if i is None:
                children.append(_default_array(f, len(arr)))
            else:
                children.append(conform(kids[i], f.type, arr.type.field(i)))
        return pa.StructArray.from_arrays(children, fields=list(target),
                                          mask=arr.is_null())
    if isinstance(target, pa.BaseExtensionType):
        return pa.ExtensionArray.from_storage(target, _storage(arr).cast(target.storage_type))
    return _storage(arr).cast(target)
