"""Writing Parquet data files the way Iceberg expects them.

* :func:`arrow_schema` - the Arrow schema of an Iceberg schema, every field (list elements, map
  keys and values too) carrying its Iceberg field id as ``PARQUET:field_id`` metadata, so the
  Parquet schema gets ``field_id`` on every node. Types follow the reference's Parquet mapping:
  timestamps as INT64 micros (``isAdjustedToUTC`` true only for ``timestamptz``), nanosecond types
  as INT64 nanos, decimals as INT32/INT64 up to precision 9/18 and fixed-length bytes beyond,
  ``uuid`` as FIXED_LEN_BYTE_ARRAY(16) with the UUID logical type, 3-level lists and maps.
* :class:`ParquetWriteOptions` - the table's ``write.parquet.*`` and
  ``write.target-file-size-bytes`` properties with the reference's defaults (a table without
  ``write.parquet.compression-codec`` is written with gzip, Iceberg Java's default; tables the
  reference or icectl create carry ``zstd``).
* :func:`write_rolling` - writes an Arrow table (already in the table's schema) as one or more
  files, starting a new file once the current one reaches the target size, and returns each
  file's footer as the writer produced it (no second read for metrics).

The key-value metadata ``iceberg.schema`` holds the schema JSON, as the reference writes it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import pyarrow as pa
import pyarrow.parquet as pq

from icectl.errors import IcectlError, InvalidInput, StorageError, UnsupportedFeature
from icectl.io.files import FileIO
from icectl.spec import properties as props_
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
    StructType,
)

__all__ = [
    "arrow_schema", "arrow_type", "arrow_field", "ParquetWriteOptions", "WrittenFile", "write_rolling",
    "COMPRESSION", "COMPRESSION_DEFAULT", "TARGET_FILE_SIZE", "TARGET_FILE_SIZE_DEFAULT",
    "ROW_GROUP_SIZE", "ROW_GROUP_SIZE_DEFAULT",
]

FIELD_ID_KEY = b"PARQUET:field_id"

# the properties this writer reads: keys and defaults from the catalogue (spec/properties.py)
COMPRESSION, COMPRESSION_DEFAULT = props_.PARQUET_COMPRESSION, props_.PARQUET_COMPRESSION_DEFAULT
COMPRESSION_LEVEL = props_.PARQUET_COMPRESSION_LEVEL
ROW_GROUP_SIZE, ROW_GROUP_SIZE_DEFAULT = props_.PARQUET_ROW_GROUP_SIZE, props_.PARQUET_ROW_GROUP_SIZE_DEFAULT
PAGE_SIZE, PAGE_SIZE_DEFAULT = props_.PARQUET_PAGE_SIZE, props_.PARQUET_PAGE_SIZE_DEFAULT
PAGE_ROW_LIMIT, PAGE_ROW_LIMIT_DEFAULT = props_.PARQUET_PAGE_ROW_LIMIT, props_.PARQUET_PAGE_ROW_LIMIT_DEFAULT
DICT_SIZE, DICT_SIZE_DEFAULT = props_.PARQUET_DICT_SIZE, props_.PARQUET_DICT_SIZE_DEFAULT
TARGET_FILE_SIZE, TARGET_FILE_SIZE_DEFAULT = props_.TARGET_FILE_SIZE, props_.TARGET_FILE_SIZE_DEFAULT

_CODECS = {"uncompressed": "none", "none": "none", "snappy": "snappy", "gzip": "gzip",
           "brotli": "brotli", "lz4": "lz4", "zstd": "zstd"}


# -- schema -----------------------------------------------------------------------------------


def _meta(field_id: int) -> dict[bytes, bytes]:
    return {FIELD_ID_KEY: str(field_id).encode("ascii")}


def arrow_type(t: IcebergType) -> pa.DataType:
    """The Arrow type icectl writes for an Iceberg type."""
    if isinstance(t, StructType):
        return pa.struct([arrow_field(f) for f in t.fields()])
    if isinstance(t, ListType):
        return pa.list_(arrow_field(t.element_field))
    if isinstance(t, MapType):
        return pa.map_(arrow_field(t.key_field), arrow_field(t.value_field))
    if isinstance(t, DecimalType):
        return pa.decimal128(t.precision, t.scale)
    if isinstance(t, FixedType):
        return pa.binary(t.length)
    simple = {
        BOOLEAN: pa.bool_(), INT: pa.int32(), LONG: pa.int64(), FLOAT: pa.float32(),
        DOUBLE: pa.float64(), DATE: pa.date32(), TIME: pa.time64("us"),
        TIMESTAMP: pa.timestamp("us"), TIMESTAMPTZ: pa.timestamp("us", tz="UTC"),
        TIMESTAMP_NS: pa.timestamp("ns"), TIMESTAMPTZ_NS: pa.timestamp("ns", tz="UTC"),
        STRING: pa.string(), BINARY: pa.binary(), UUID: pa.uuid(),
    }
    try:
        return simple[t]
    except KeyError:
        raise UnsupportedFeature(f"icectl cannot write columns of type {t}") from None


def arrow_field(f: NestedField) -> pa.Field:
    return pa.field(f.name, arrow_type(f.type), nullable=not f.required, metadata=_meta(f.field_id))


def arrow_schema(schema: Schema) -> pa.Schema:
    """The Arrow schema (with Parquet field ids) of an Iceberg schema."""
    return pa.schema([arrow_field(f) for f in schema.fields])


# -- options ----------------------------------------------------------------------------------


def _int_property(props: Mapping[str, str], key: str, default: int, minimum: int = 1) -> int:
    text = props.get(key)
    if text is None:
        return default
    try:
        value = int(str(text).strip())
    except ValueError:
        raise InvalidInput(f"table property {key}={text!r} is not an integer") from None
    if value < minimum:
        raise InvalidInput(f"table property {key}={text!r} must be at least {minimum}")
    return value


@dataclass(frozen=True)
class ParquetWriteOptions:
    compression: str = COMPRESSION_DEFAULT
    compression_level: int | None = None
    row_group_size_bytes: int = ROW_GROUP_SIZE_DEFAULT
    page_size_bytes: int = PAGE_SIZE_DEFAULT
    page_row_limit: int = PAGE_ROW_LIMIT_DEFAULT
    dict_size_bytes: int = DICT_SIZE_DEFAULT
    target_file_size_bytes: int = TARGET_FILE_SIZE_DEFAULT

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> "ParquetWriteOptions":
        codec = str(props.get(COMPRESSION, COMPRESSION_DEFAULT)).strip().lower()
        if codec not in _CODECS:
            raise UnsupportedFeature(
                f"table property {COMPRESSION}={codec!r}: icectl writes uncompressed, snappy, gzip, "
                "brotli, lz4 or zstd")
        level_text = props.get(COMPRESSION_LEVEL)
        level = None
        if level_text not in (None, ""):
            level = _int_property(props, COMPRESSION_LEVEL, 0, minimum=-(1 << 31))
        return cls(
            compression=codec,
            compression_level=level,
            row_group_size_bytes=_int_property(props, ROW_GROUP_SIZE, ROW_GROUP_SIZE_DEFAULT),
            page_size_bytes=_int_property(props, PAGE_SIZE, PAGE_SIZE_DEFAULT),
            page_row_limit=_int_property(props, PAGE_ROW_LIMIT, PAGE_ROW_LIMIT_DEFAULT),
            dict_size_bytes=_int_property(props, DICT_SIZE, DICT_SIZE_DEFAULT),
            target_file_size_bytes=_int_property(props, TARGET_FILE_SIZE, TARGET_FILE_SIZE_DEFAULT),
        )


# -- writing ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class WrittenFile:
    path: str
    file_size_in_bytes: int
    record_count: int
    footer: Any  # pyarrow.parquet.FileMetaData, as the writer produced it


def _open_writer(f: Any, schema: pa.Schema, options: ParquetWriteOptions, iceberg_json: str) -> Any:
    codec = _CODECS[options.compression]
    level = options.compression_level if codec not in ("none", "snappy") else None
    writer = pq.ParquetWriter(
        f, schema, compression=codec, compression_level=level, version="2.6",
        store_schema=False, store_decimal_as_integer=True, write_statistics=True,
        use_dictionary=True, dictionary_pagesize_limit=options.dict_size_bytes,
        data_page_size=options.page_size_bytes, max_rows_per_page=options.page_row_limit,
    )
    writer.add_key_value_metadata({"iceberg.schema": iceberg_json})
    return writer


def write_rolling(
    file_io: FileIO,
    data: pa.Table,
    schema: Schema,
    options: ParquetWriteOptions,
    next_path: Callable[[], str],
) -> list[WrittenFile]:
    """Write ``data`` (columns in ``arrow_schema(schema)`` form) as Parquet files.

    A new file is started once the current one reaches ``target_file_size_bytes``; row groups
    hold about ``row_group_size_bytes`` of (uncompressed) Arrow data. ``next_path()`` names
    each new file; the caller keeps the names to delete them should anything fail later.
    """
    target_schema = arrow_schema(schema)
    iceberg_json = json.dumps(schema.to_json(), separators=(",", ":"))
    if data.schema != target_schema:
        data = data.cast(target_schema)
    total = data.num_rows
    if total == 0:
        return []
    row_bytes = max(1.0, data.nbytes / total)
    rows_per_group = max(1, int(options.row_group_size_bytes / row_bytes))
    target = options.target_file_size_bytes
    out: list[WrittenFile] = []
    offset = 0
    while offset < total:
        path = next_path()
        try:
            f = file_io.open(path, "wb")
        except IcectlError:
            raise
        rows = 0
        try:
            writer = _open_writer(f, target_schema, options, iceberg_json)
            stored_per_row = row_bytes  # learnt from the bytes actually written
            while offset < total:
                written = f.tell()
                room = max(1, int((target - written) / stored_per_row))
                n = min(rows_per_group, total - offset, room)
                writer.write_table(data.slice(offset, n), row_group_size=n)
                offset += n
                rows += n
                size_now = f.tell()
                if size_now > 0:
                    stored_per_row = max(1e-3, size_now / rows)
                if size_now >= target:
                    break
            writer.close()
            size = f.tell()
            footer = writer.writer.metadata
        except IcectlError:
            raise
        except OSError as e:
            raise StorageError(f"cannot write {path}: {e}") from e
        finally:
            f.close()
        out.append(WrittenFile(path, size, rows, footer))
    return out
