"""icectl's internal values (:mod:`icectl.spec.values`) to and from Arrow arrays in the types
icectl writes (:func:`icectl.io.parquet_write.arrow_type`), and columns found by field id."""

from __future__ import annotations

import uuid as _uuid
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icectl.errors import ValidationError
from icectl.io.parquet_write import arrow_type
from icectl.spec.schema import Schema
from icectl.spec.types import (
    DATE,
    TIME,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    TIMESTAMPTZ_NS,
    UUID,
    IcebergType,
    NestedField,
    StructType,
)

__all__ = ["internal_to_arrow", "internal_values", "column_by_id"]


def internal_to_arrow(values: list[Any], t: IcebergType) -> pa.Array:
    """An Arrow array (in icectl's write types) of icectl internal values."""
    if t == DATE:
        return pa.array(values, pa.int32()).cast(pa.date32())
    if t in (TIME, TIMESTAMP, TIMESTAMPTZ, TIMESTAMP_NS, TIMESTAMPTZ_NS):
        return pa.array(values, pa.int64()).cast(arrow_type(t))
    if t == UUID:
        return pa.ExtensionArray.from_storage(
            pa.uuid(), pa.array([None if v is None else v.bytes for v in values], pa.binary(16)))
    return pa.array(values, arrow_type(t))


def internal_values(arr: pa.Array, t: IcebergType) -> list[Any]:
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


def _path_to(struct: StructType, field_id: int) -> list[NestedField] | None:
    for f in struct.fields():
        if f.field_id == field_id:
            return [f]
        if isinstance(f.type, StructType):
            rest = _path_to(f.type, field_id)
            if rest is not None:
                return [f] + rest
    return None


def column_by_id(data: pa.Table, schema: Schema, field_id: int) -> tuple[pa.Array, IcebergType]:
    """The array of a column outside lists and maps (struct fields included) and its type."""
    path = _path_to(schema.struct, field_id)
    if path is None:
        raise ValidationError(f"field id {field_id} is not a column outside lists and maps")
    arr = data.column(path[0].name)
    arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    for f in path[1:]:
        arr = pc.struct_field(arr, f.name)  # a null struct gives a null field
    return arr, path[-1].type
