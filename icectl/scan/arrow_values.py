"""Arrow columns <-> icectl's internal values (see :mod:`icectl.spec.values`), for reading rows.

``to_internal`` turns an Arrow array of an Iceberg type into a list of internal values (dates as
days, timestamps as micro- or nanoseconds, structs as dicts of field id -> value, ...): what the
row evaluator, equality deletes and the JSON single-value form take. ``internal_to_arrow``
builds an Arrow array of the type icectl writes (:func:`icectl.io.formats.parquet_write.arrow_type`)
from internal values (defaults, partition values).
"""

from __future__ import annotations

import uuid as _uuid
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from icectl.errors import InvalidInput
from icectl.io.formats.parquet import arrow_field_id
from icectl.io.formats.parquet_write import arrow_type
from icectl.spec.types import UUID, IcebergType, ListType, MapType, StructType

if TYPE_CHECKING:
    from icectl.spec.schema import Schema

__all__ = ["to_internal", "internal_to_arrow", "conform", "field_chain", "struct_field_column"]


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


def _storage_type(t: Any) -> Any:
    """``t`` with every extension type (uuid), also nested, replaced by its storage type:
    ``pa.array`` cannot build extension values from Python ones."""
    if isinstance(t, pa.BaseExtensionType):
        return t.storage_type
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(_storage_type(t.field(i).type))
                          for i in range(t.num_fields)])
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(_storage_type(t.key_type)),
                       t.item_field.with_type(_storage_type(t.item_type)))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        field = t.value_field.with_type(_storage_type(t.value_type))
        return pa.list_(field) if pa.types.is_list(t) else pa.large_list(field)
    return t


def internal_to_arrow(values: list[Any], t: IcebergType) -> Any:
    """An Arrow array (of ``arrow_type(t)``) of internal values. pyarrow builds no extension
    type (``uuid``) from Python values, so a type holding one is built on its storage type and
    cast."""
    target = arrow_type(t)
    if isinstance(target, pa.BaseExtensionType):
        storage = pa.array([_py(v, t) for v in values], target.storage_type)
        return pa.ExtensionArray.from_storage(target, storage)
    storage = _storage_type(target)
    arr = pa.array([_py(v, t) for v in values], storage)
    return arr if storage == target else arr.cast(target)


def _default_array(f: Any, n: int) -> Any:
    from icectl.spec.values import from_json_value

    value = from_json_value(f.type, f.initial_default) if f.has_initial_default else None
    return internal_to_arrow([value] * n, f.type)


def _file_children(file_field: Any, arr_type: Any) -> list[tuple[Any, Any]]:
    """``(field id or None, child file field or None)`` for each child of a nested column, in the
    Arrow type's order. ``file_field`` is the column's :class:`~icectl.io.formats.parquet.ParquetField`
    (ids from the file or the name mapping), its Arrow field (``PARQUET:field_id`` metadata) or
    None (no ids: struct fields are then matched by name)."""
    if pa.types.is_struct(arr_type):
        arrow_kids = [arr_type.field(i) for i in range(arr_type.num_fields)]
    elif pa.types.is_map(arr_type):
        arrow_kids = [arr_type.key_field, arr_type.item_field]
    else:
        arrow_kids = [arr_type.value_field]
    kids = getattr(file_field, "children", None)
    if file_field is not None and kids is not None and len(kids) == len(arrow_kids):
        return [(k.field_id, k) for k in kids]  # a ParquetField
    if file_field is None:
        return [(None, None)] * len(arrow_kids)
    return [(arrow_field_id(k), k) for k in arrow_kids]


def _is_list(arr_type: Any) -> bool:
    return (pa.types.is_list(arr_type) or pa.types.is_large_list(arr_type)
            or pa.types.is_fixed_size_list(arr_type))


def _offsets(arr: Any) -> tuple[Any, Any]:
    """A list or map array's offsets from 0 and a function cutting its child arrays to the
    entries they cover (a sliced array's offsets start elsewhere; Arrow builds no array from
    such offsets with a null bitmap)."""
    offsets = arr.offsets
    start, end = offsets[0].as_py(), offsets[-1].as_py()
    if start:
        offsets = pc.subtract(offsets, pa.scalar(start, offsets.type))
    return offsets, lambda child: child.slice(start, end - start)


def _same_ids(t: IcebergType, arr_type: Any, file_field: Any) -> bool:
    """Whether the nested fields of a column whose Arrow type equals ``t``'s carry ``t``'s field
    ids (fields without an id in the file match by their equal names)."""
    if not isinstance(t, (StructType, ListType, MapType)):
        return True
    arr_type = arr_type.storage_type if isinstance(arr_type, pa.BaseExtensionType) else arr_type
    kids = _file_children(file_field, arr_type)
    fields = t.fields()
    if len(kids) != len(fields):
        return False
    if pa.types.is_struct(arr_type):
        types = [arr_type.field(i).type for i in range(arr_type.num_fields)]
    elif pa.types.is_map(arr_type):
        types = [arr_type.key_type, arr_type.item_type]
    else:
        types = [arr_type.value_type]
    return all((fid is None or fid == f.field_id) and _same_ids(f.type, at, ff)
               for (fid, ff), f, at in zip(kids, fields, types))


def conform(arr: Any, t: IcebergType, file_field: Any = None) -> Any:
    """A column read from a data file in the Arrow type icectl uses for ``t``: promoted
    (int -> long, float -> double, wider decimals), timestamp units normalized; struct fields
    matched by the file's field ids (``file_field``: the column's ParquetField or Arrow field) at
    any depth, inside lists and maps too, so renamed fields take their current names and fields
    the file lacks read as their initial default or null; fields the type does not hold (pruned
    by a projection, dropped from the schema) are left out."""
    target = arrow_type(t)
    arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    if arr.type == target and _same_ids(t, arr.type, file_field):
        return arr  # the common case: the file was written with the current schema
    src = _storage(arr).type
    if isinstance(t, StructType) and pa.types.is_struct(src):
        arr = _storage(arr)
        by_key: dict[Any, int] = {}
        kids_ff = _file_children(file_field, src)
        for i, (fid, _) in enumerate(kids_ff):
            by_key.setdefault(fid if fid is not None else src.field(i).name, i)
        children = []
        kids = arr.flatten()
        for f in t.fields():
            i = by_key.get(f.field_id, by_key.get(f.name))
            if i is None:
                children.append(_default_array(f, len(arr)))
            else:
                children.append(conform(kids[i], f.type, kids_ff[i][1]))
        return pa.StructArray.from_arrays(children, fields=list(target),
                                          mask=arr.is_null() if arr.null_count else None)
    if isinstance(t, ListType) and _is_list(src):
        arr = _storage(arr)
        if not pa.types.is_list(src):
            arr = arr.cast(pa.list_(src.value_field))
        ((_, eff),) = _file_children(file_field, src)
        offsets, span = _offsets(arr)
        values = conform(span(arr.values), t.element_type, eff)
        return pa.ListArray.from_arrays(offsets, values, type=target,
                                        mask=arr.is_null() if arr.null_count else None)
    if isinstance(t, MapType) and pa.types.is_map(src):
        arr = _storage(arr)
        (_, kff), (_, vff) = _file_children(file_field, src)
        offsets, span = _offsets(arr)
        keys = conform(span(arr.keys), t.key_type, kff)
        items = conform(span(arr.items), t.value_type, vff)
        out = pa.MapArray.from_arrays(offsets, keys, items, type=target)
        if arr.null_count:
            out = pc.if_else(arr.is_null(), pa.scalar(None, target), out)
        return out
    if arr.type == target:
        return arr
    if isinstance(target, pa.BaseExtensionType):
        return pa.ExtensionArray.from_storage(target, _storage(arr).cast(target.storage_type))
    return _storage(arr).cast(target)


def field_chain(schema: Schema, field_id: int) -> list[int]:
    """The ids from a top-level column down to ``field_id``, every step a struct field; raises
    InvalidInput for a field inside a list or map (rows are filtered on struct fields only)."""
    chain = [field_id]
    while (parent := schema.parent_id(chain[-1])) is not None:
        if not isinstance(schema.find_field(parent).type, StructType):
            raise InvalidInput(f"{schema.column_name(field_id)!r} is inside a list or map; rows "
                               "can be filtered on struct fields only")
        chain.append(parent)
    chain.reverse()
    return chain


def struct_field_column(top: Any, schema: Schema, chain: list[int]) -> Any:
    """The values of the field at the end of ``chain`` (see :func:`field_chain`) in ``top``, the
    column of ``chain[0]`` conformed to the schema: null where it or any enclosing struct is."""
    arr = top
    for fid in chain[1:]:
        name = schema.find_field(fid).name
        arr = pc.struct_field(arr, [arr.type.get_field_index(name)])
    return arr
