"""Facts about existing data files that an append needs, read without reading their rows.

* :func:`detect_format` - PARQUET, ORC or AVRO from the file name (or an explicit choice).
* :func:`orc_record_count` / :func:`avro_record_count` - record counts from the ORC footer and
  from the Avro block headers (blocks are skipped, not decoded).
* :func:`parquet_footer_stats` - record count, split offsets and per-column statistics of a
  Parquet footer, columns named by their dotted path and Parquet field id (if any), min/max in
  icectl's internal value form. Used to place a file in its partition; the table's metrics
  themselves come from :mod:`icectl.io.parquet` when it is present.
"""

from __future__ import annotations

import datetime as dt
import io as _io
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from icectl.errors import CorruptMetadata, InvalidInput, NotFound, StorageError

__all__ = [
    "FORMATS", "detect_format", "orc_record_count", "avro_record_count", "ColumnStats",
    "ParquetFooter", "parquet_footer_stats",
]

FORMATS = ("PARQUET", "ORC", "AVRO")
_EXTENSIONS = {".parquet": "PARQUET", ".parq": "PARQUET", ".pqt": "PARQUET", ".orc": "ORC",
               ".avro": "AVRO"}


def detect_format(path: str, explicit: str | None = None) -> str:
    """The data file format: ``explicit`` (any case) or the one its extension names."""
    if explicit:
        fmt = explicit.strip().upper()
        if fmt not in FORMATS:
            raise InvalidInput(f"unknown file format {explicit!r} (expected parquet, orc or avro)")
        return fmt
    name = path.rsplit("/", 1)[-1].lower()
    for suffix in (".gz", ".zst", ".snappy"):
        if name.endswith(suffix) and not name.endswith(".parquet"):
            name = name[: -len(suffix)]
    for ext, fmt in _EXTENSIONS.items():
        if name.endswith(ext):
            return fmt
    raise InvalidInput(f"cannot tell the format of {path} from its name; give --format parquet|orc|avro")


def _open(file_io: Any, path: str) -> Any:
    return file_io.open(path, "rb")


def orc_record_count(file_io: Any, path: str) -> int:
    """Rows in an ORC file, from its footer."""
    try:
        from pyarrow import orc
    except ImportError as e:  # pragma: no cover - pyarrow builds without ORC
        raise StorageError(f"ORC support is missing from pyarrow: {e}") from e
    try:
        with _open(file_io, path) as f:
            return int(orc.ORCFile(f).nrows)
    except (NotFound, StorageError):
        raise
    except Exception as e:  # noqa: BLE001 - pyarrow raises ArrowInvalid and friends
        raise CorruptMetadata(f"{path} is not a readable ORC file: {e}") from e


def avro_record_count(file_io: Any, path: str) -> int:
    """Records in an Avro container file: the sum of its block counts (no record decoding)."""
    import fastavro

    try:
        with _open(file_io, path) as f:
            data = f.read()
        return sum(block.num_records for block in fastavro.block_reader(_io.BytesIO(data)))
    except (NotFound, StorageError):
        raise
    except Exception as e:  # noqa: BLE001
        raise CorruptMetadata(f"{path} is not a readable Avro file: {e}") from e


@dataclass
class ColumnStats:
    """Statistics of one leaf column over the whole file."""

    path: str
    field_id: int | None
    physical_type: str
    logical_type: str
    null_count: int | None = 0
    value_count: int = 0  # including nulls
    min: Any = None
    max: Any = None
    has_bounds: bool = True
    compressed_size: int = 0


@dataclass
class ParquetFooter:
    record_count: int
    split_offsets: tuple[int, ...]
    columns: dict[str, ColumnStats] = field(default_factory=dict)
    top_level: list[tuple[str, int | None]] = field(default_factory=list)  # (name, field id)


def _internal(v: Any) -> Any:
    """A pyarrow statistics value in icectl's internal form (dates as days, timestamps as
    microseconds or nanoseconds, the rest as is)."""
    if isinstance(v, dt.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=dt.timezone.utc)
        delta = v - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(v, dt.date):
        return (v - dt.date(1970, 1, 1)).days
    if isinstance(v, dt.time):
        return ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v)
    if isinstance(v, Decimal):
        return v
    if hasattr(v, "value") and type(v).__name__ == "Timestamp":  # pandas, nanosecond precision
        return int(v.value)
    return v


def _field_ids(schema: Any) -> dict[str, int | None]:
    """Dotted leaf path -> Parquet field id, from the Arrow schema pyarrow derives."""
    out: dict[str, int | None] = {}

    def fid(f: Any) -> int | None:
        md = f.metadata or {}
        raw = md.get(b"PARQUET:field_id")
        return int(raw) if raw is not None else None

    def walk(f: Any, prefix: str) -> None:
        import pyarrow as pa

        name = prefix + f.name
        out[name] = fid(f)
        t = f.type
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                walk(t.field(i), name + ".")
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            walk(t.value_field, name + ".list.")
        elif pa.types.is_map(t):
            walk(t.key_field, name + ".key_value.")
            walk(t.item_field, name + ".key_value.")

    for f in schema:
        walk(f, "")
    return out


def parquet_footer_stats(file_io: Any, path: str, footer: Any = None) -> ParquetFooter:
    """Row count, row-group offsets and raw (untruncated) per-leaf statistics of a Parquet
    footer; ``footer`` (a ``pyarrow.parquet.FileMetaData``) saves reading it again."""
    import pyarrow.parquet as pq

    try:
        if footer is None:
            with _open(file_io, path) as f:
                footer = pq.ParquetFile(f).metadata
        md = footer
        arrow_schema = md.schema.to_arrow_schema()
    except (NotFound, StorageError):
        raise
    except Exception as e:  # noqa: BLE001
        raise CorruptMetadata(f"{path} is not a readable Parquet file: {e}") from e
    ids = _field_ids(arrow_schema)
    footer = ParquetFooter(record_count=md.num_rows, split_offsets=())
    footer.top_level = [(f.name, ids.get(f.name)) for f in arrow_schema]
    offsets = []
    for rg in range(md.num_row_groups):
        group = md.row_group(rg)
        if group.num_columns:
            c0 = group.column(0)
            start = c0.dictionary_page_offset if c0.has_dictionary_page and c0.dictionary_page_offset \
                else c0.data_page_offset
            offsets.append(int(start))
        for ci in range(group.num_columns):
            col = group.column(ci)
            p = col.path_in_schema
            st = footer.columns.get(p)
            if st is None:
                desc = md.schema.column(ci)
                st = footer.columns[p] = ColumnStats(
                    p, ids.get(_arrow_path(p)), desc.physical_type, str(desc.logical_type))
            st.compressed_size += int(col.total_compressed_size)
            stats = col.statistics
            rows = group.num_rows
            if stats is None:
                st.null_count = None
                st.has_bounds = False
                st.value_count += rows
                continue
            nulls = stats.null_count if stats.has_null_count else None
            if nulls is None or st.null_count is None:
                st.null_count = None
            else:
                st.null_count += nulls
            st.value_count += int(stats.num_values) + (nulls or 0)
            if stats.has_min_max:
                lo, hi = _internal(stats.min), _internal(stats.max)
                if st.has_bounds:
                    st.min = lo if st.min is None or lo < st.min else st.min
                    st.max = hi if st.max is None or hi > st.max else st.max
            elif (stats.num_values or 0) > 0:
                st.has_bounds = False
    footer.split_offsets = tuple(sorted(offsets))
    return footer


def _arrow_path(parquet_path: str) -> str:
    """Parquet leaf path -> the key :func:`_field_ids` uses (they agree for Arrow-written
    files; list leaves are ``x.list.element`` in both)."""
    return parquet_path
