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
* :class:`RollingWriter` - writes Arrow rows (already in the table's schema) as they come, one
  row group at a time, as one or more files, starting a new file once the current one reaches
  the target size, and returns each file's footer as the writer produced it (no second read
  for metrics); :func:`write_rolling` is the same for a table given at once.

The key-value metadata ``iceberg.schema`` holds the schema JSON, as the reference writes it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from icectl.errors import IcectlError, InvalidInput, StorageError, UnsupportedFeature
from icectl.io.formats.parquet_dictionary import dictionary_columns
from icectl.io.storage.files import FileIO
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
    "RollingWriter",
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
    nan_counts: dict[int, int] | None = None  # of the ``nan_fields`` the writer was given


# the level the reference's Parquet writer uses when write.parquet.compression-level is unset
# (parquet-mr's ZSTD default is 3, Hadoop's zlib default 6; Arrow's own defaults are 1 and 9)
_DEFAULT_LEVELS = {"zstd": 3, "gzip": 6}


def compression_level(options: ParquetWriteOptions) -> int | None:
    """The compression level a file is written with: the table's, else the reference's default."""
    codec = _CODECS[options.compression]
    if codec in ("none", "snappy", "lz4"):
        return None
    return options.compression_level if options.compression_level is not None else _DEFAULT_LEVELS.get(codec)


def _open_writer(f: Any, schema: pa.Schema, options: ParquetWriteOptions, iceberg_json: str,
                 first_rows: pa.Table | None = None) -> Any:
    """A Parquet writer with the table's options. The columns whose dictionary pays on
    ``first_rows`` (the first rows the file receives) are dictionary-encoded, the others PLAIN,
    as the reference decides on a column's first page (:mod:`.parquet_dictionary`); the page
    index (column and offset indexes) is written, as the reference writes it."""
    codec = _CODECS[options.compression]
    dictionary: bool | list[str] = True
    if first_rows is not None:
        dictionary = dictionary_columns(first_rows, options.page_row_limit)
    writer = pq.ParquetWriter(
        f, schema, compression=codec, compression_level=compression_level(options), version="2.6",
        store_schema=False, store_decimal_as_integer=True, write_statistics=True,
        use_dictionary=dictionary, dictionary_pagesize_limit=options.dict_size_bytes,
        data_page_size=options.page_size_bytes, max_rows_per_page=options.page_row_limit,
        write_page_index=True,
    )
    writer.add_key_value_metadata({"iceberg.schema": iceberg_json})
    return writer


class RollingWriter:
    """Rows in, Parquet files out, one row group at a time: :meth:`write` takes Arrow tables
    (or batches) in ``arrow_schema(schema)`` form as they come, :meth:`close` writes what is
    left and returns every file written.

    Rows wait in memory until they fill a row group of about ``row_group_size_bytes`` of Arrow
    data (or the room left before the current file reaches ``target_file_size_bytes``, judged
    by the bytes per row the file has stored so far); a new file is started once the current
    one reaches the target. Given all rows in one :meth:`write`, the files and row groups are
    those :func:`write_rolling` writes. ``next_path()`` names each new file (the caller keeps
    the names to delete them should anything fail); ``nan_fields`` (field id -> top-level
    column name) are counted for :attr:`WrittenFile.nan_counts`. :meth:`abort` closes the open
    file without finishing it.
    """

    def __init__(self, file_io: FileIO, schema: Schema, options: ParquetWriteOptions,
                 next_path: Callable[[], str], nan_fields: Mapping[int, str] | None = None) -> None:
        self.file_io, self.options, self.next_path = file_io, options, next_path
        self.schema = arrow_schema(schema)
        self.iceberg_json = json.dumps(schema.to_json(), separators=(",", ":"))
        self.nan_fields = dict(nan_fields or {})
        self.files: list[WrittenFile] = []
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self._seen_rows = 0
        self._seen_bytes = 0
        self._f: Any = None
        self._writer: Any = None
        self._path = ""
        self._rows = 0  # in the open file
        self._stored_per_row = 1.0
        self._nans: dict[int, int] = {}

    @property
    def pending_bytes(self) -> int:
        """Arrow bytes of the rows waiting for their row group."""
        return sum(t.nbytes for t in self._pending)

    def write(self, data: pa.Table | pa.RecordBatch) -> None:
        if isinstance(data, pa.RecordBatch):
            data = pa.Table.from_batches([data])
        if data.num_rows == 0:
            return
        if data.schema != self.schema:
            data = data.cast(self.schema)
        self._seen_rows += data.num_rows
        self._seen_bytes += data.nbytes
        self._pending.append(data)
        self._pending_rows += data.num_rows
        while self._pending_rows and self._pending_rows >= self._next_group_rows():
            self._write_group()

    def flush(self) -> None:
        """Write the waiting rows now (a smaller row group), to free their memory."""
        while self._pending_rows:
            self._write_group()

    def close(self) -> list[WrittenFile]:
        self.flush()
        self._finish_file()
        return self.files

    def abort(self) -> None:
        self._pending, self._pending_rows = [], 0
        if self._f is not None:
            try:
                self._f.close()
            except Exception:  # noqa: BLE001 - the caller deletes the file
                pass
            self._f = self._writer = None

    def _next_group_rows(self) -> int:
        row_bytes = max(1.0, self._seen_bytes / max(1, self._seen_rows))
        rows_per_group = max(1, int(self.options.row_group_size_bytes / row_bytes))
        if self._f is None:
            stored, per_row = 0, row_bytes
        else:
            stored, per_row = self._f.tell(), self._stored_per_row
        room = max(1, int((self.options.target_file_size_bytes - stored) / per_row))
        return min(rows_per_group, room)

    def _write_group(self) -> None:
        n = min(self._next_group_rows(), self._pending_rows)
        data = self._pending[0] if len(self._pending) == 1 else pa.concat_tables(self._pending)
        group, rest = data.slice(0, n), data.slice(n)
        if self._f is None:
            self._open_file(group)
        self._pending = [rest] if rest.num_rows else []
        self._pending_rows = rest.num_rows
        try:
            self._writer.write_table(group, row_group_size=n)
            self._rows += n
            size_now = self._f.tell()
        except IcectlError:
            raise
        except OSError as e:
            raise StorageError(f"cannot write {self._path}: {e}") from e
        for fid, name in self.nan_fields.items():
            col = group.column(name)
            self._nans[fid] = self._nans.get(fid, 0) + int(
                pc.sum(pc.is_nan(col).cast(pa.int64())).as_py() or 0)
        if size_now > 0:
            self._stored_per_row = max(1e-3, size_now / self._rows)
        if size_now >= self.options.target_file_size_bytes:
            self._finish_file()

    def _open_file(self, first_rows: pa.Table) -> None:
        self._path = self.next_path()
        self._f = self.file_io.open(self._path, "wb")
        self._rows = 0
        self._nans = {fid: 0 for fid in self.nan_fields}
        self._stored_per_row = max(1.0, self._seen_bytes / max(1, self._seen_rows))
        try:
            self._writer = _open_writer(self._f, self.schema, self.options, self.iceberg_json, first_rows)
        except BaseException:
            self.abort()
            raise

    def _finish_file(self) -> None:
        if self._f is None:
            return
        f, path = self._f, self._path
        try:
            self._writer.close()
            size = f.tell()
            footer = self._writer.writer.metadata
        except IcectlError:
            raise
        except OSError as e:
            raise StorageError(f"cannot write {path}: {e}") from e
        finally:
            f.close()
            self._f = self._writer = None
        self.files.append(WrittenFile(path, size, self._rows, footer,
                                      dict(self._nans) if self.nan_fields else None))


def write_rolling(
    file_io: FileIO,
    data: pa.Table,
    schema: Schema,
    options: ParquetWriteOptions,
    next_path: Callable[[], str],
) -> list[WrittenFile]:
    """Write ``data`` (columns in ``arrow_schema(schema)`` form) as Parquet files, rolled at
    ``target_file_size_bytes`` (see :class:`RollingWriter`, which this is with all rows given
    at once). ``next_path()`` names each new file; the caller keeps the names to delete them
    should anything fail later.
    """
    writer = RollingWriter(file_io, schema, options, next_path)
    try:
        writer.write(data)
        return writer.close()
    except BaseException:
        writer.abort()
        raise
