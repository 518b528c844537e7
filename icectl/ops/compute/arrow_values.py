"""Columns found by field id, and icectl's internal values (:mod:`icectl.spec.values`) to and
from Arrow arrays: the conversions are the reader's (:mod:`icectl.scan.arrow_values`), one
implementation for reading and writing."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from icectl.errors import ValidationError
from icectl.scan.arrow_values import internal_to_arrow
from icectl.scan.arrow_values import to_internal as internal_values
from icectl.spec.schema import Schema
from icectl.spec.types import IcebergType, NestedField, StructType

__all__ = ["internal_to_arrow", "internal_values", "column_by_id", "arrow_owned"]


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


def arrow_owned(data: bytes) -> pa.Buffer:
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
