"""A Parquet file's schema as Iceberg types, read from the footer only.

Used by ``icectl schema union``: column names, types, nullability and nesting matter; field ids
in the file are ignored (the union matches columns by name and gives new columns fresh ids).
Arrow types map to Iceberg types as the reference reads Parquet: 8/16/32-bit integers and
unsigned 8/16-bit to ``int``, 64-bit and unsigned 32-bit to ``long``, ``timestamp`` with a zone
to ``timestamptz``, nanosecond timestamps to the v3 ``_ns`` types, 16-byte fixed with the UUID
logical type to ``uuid``. Types with no Iceberg equivalent are refused.
"""

from __future__ import annotations

import itertools
from typing import Any

from icectl.errors import IcectlError, StorageError, UnsupportedFeature, ValidationError
from icectl.io.files import FileIO
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
    UNKNOWN,
    UUID,
    DecimalType,
    FixedType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    StructType,
)

__all__ = ["read_parquet_schema", "arrow_schema_to_struct", "arrow_type_to_iceberg"]


def read_parquet_schema(file_io: FileIO, path: str) -> StructType:
    """The Iceberg struct of a Parquet file's columns (placeholder ids 1, 2, ...)."""
    import pyarrow.parquet as pq

    try:
        with file_io.open(path, "rb") as f:
            arrow_schema = pq.ParquetFile(f).schema_arrow
    except IcectlError:
        raise
    except FileNotFoundError:
        from icectl.errors import NotFound

        raise NotFound(f"no such Parquet file: {path}") from None
    except OSError as e:
        raise StorageError(f"cannot read Parquet footer of {path}: {e}") from e
    except Exception as e:  # pyarrow raises ArrowInvalid & co for non-Parquet input
        raise ValidationError(f"{path} is not a readable Parquet file: {e}") from e
    return arrow_schema_to_struct(arrow_schema)


def arrow_schema_to_struct(schema: Any) -> StructType:
    counter = itertools.count(1)
    return StructType([_field(f, lambda: next(counter)) for f in schema])


def _field(f: Any, next_id: Any) -> NestedField:
    fid = next_id()
    return NestedField(fid, f.name, arrow_type_to_iceberg(f.type, next_id, f.name), not f.nullable)


def arrow_type_to_iceberg(t: Any, next_id: Any = None, name: str = "") -> IcebergType:
    import pyarrow as pa
    import pyarrow.types as pt

    if next_id is None:
        counter = itertools.count(1)
        next_id = lambda: next(counter)  # noqa: E731
    if pt.is_struct(t):
        return StructType([_field(t.field(i), next_id) for i in range(t.num_fields)])
    if pt.is_map(t):
        kid, vid = next_id(), next_id()
        return MapType(kid, arrow_type_to_iceberg(t.key_type, next_id, name), vid,
                       arrow_type_to_iceberg(t.item_type, next_id, name), not t.item_field.nullable)
    if pt.is_list(t) or pt.is_large_list(t) or pt.is_fixed_size_list(t):
        eid = next_id()
        return ListType(eid, arrow_type_to_iceberg(t.value_type, next_id, name), not t.value_field.nullable)
    if pt.is_boolean(t):
        return BOOLEAN
    if pt.is_int8(t) or pt.is_int16(t) or pt.is_int32(t) or pt.is_uint8(t) or pt.is_uint16(t):
        return INT
    if pt.is_int64(t) or pt.is_uint32(t):
        return LONG
    if pt.is_float16(t) or pt.is_float32(t):
        return FLOAT
    if pt.is_float64(t):
        return DOUBLE
    if pt.is_decimal(t):
        if t.precision > 38:
            raise UnsupportedFeature(f"column {name!r}: decimal precision {t.precision} is over 38")
        return DecimalType(t.precision, t.scale)
    if pt.is_date32(t) or pt.is_date64(t):
        return DATE
    if pt.is_time(t):
        return TIME
    if pt.is_timestamp(t):
        if t.unit == "ns":
            return TIMESTAMPTZ_NS if t.tz else TIMESTAMP_NS
        return TIMESTAMPTZ if t.tz else TIMESTAMP
    if pt.is_string(t) or pt.is_large_string(t) or getattr(pt, "is_string_view", lambda _: False)(t):
        return STRING
    ext = getattr(t, "extension_name", None)
    if ext in ("arrow.uuid",) or (isinstance(t, pa.ExtensionType) and "uuid" in str(ext)):
        return UUID
    if pt.is_fixed_size_binary(t):
        return FixedType(t.byte_width)
    if pt.is_binary(t) or pt.is_large_binary(t):
        return BINARY
    if pt.is_null(t):
        return UNKNOWN
    raise UnsupportedFeature(f"column {name!r} has Arrow type {t}, which has no Iceberg equivalent")
