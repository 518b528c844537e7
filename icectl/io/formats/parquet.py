"""Parquet footers: the file's columns as Iceberg fields, and data-file metrics from statistics.

Only the footer is read (through :class:`~icectl.io.storage.files.FileIO`), never a data page.

Columns get their field ids from the file (``field_id`` in the Parquet schema) or, for columns
without one, from a name mapping (:mod:`icectl.spec.name_mapping`). Metrics follow the
reference's footer metrics (``ParquetUtil.footerMetrics`` / ``ParquetMetrics`` in Iceberg 1.10):

- ``record_count`` is the sum of the row groups' row counts; ``split_offsets`` the row groups'
  starting positions (dictionary page if there is one, else first data page), ascending;
- ``column_sizes`` (compressed chunk sizes, summed) for every column whose metrics mode is not
  ``none``, also inside lists and maps;
- for columns not inside a list or map (and not INT96): ``value_counts`` and
  ``null_value_counts`` summed over row groups, but only when every chunk has statistics;
  bounds from the statistics' min/max over all chunks, then truncated once per the mode
  (``truncate(N)`` cuts string and binary bounds; an upper bound that cannot be rounded up is
  left out). A float/double chunk whose min or max is NaN gives no bounds; a 0.0 minimum is
  widened to -0.0 and a -0.0 maximum to 0.0, as parquet-mr reads them;
- metrics modes (:mod:`icectl.spec.metrics`) are looked up by the column's dotted name;
- footers have no NaN counts: ``nan_value_counts`` is empty, as in the reference.

Where the reference would record a wrong bound, icectl records the right one: TIMESTAMP(MILLIS)
and TIME(MILLIS) statistics are converted to microseconds (the reference stores the raw
milliseconds), and unsigned 32-bit integers are read as unsigned. UUID columns are typed
``uuid`` (the reference says ``fixed[16]``; the bound bytes are the same). A chunk whose
statistics lack a null count counts as having no statistics.

Footer statistics are read in one place (``_fold``): :func:`footer_metrics` truncates and
serializes them as manifest metrics, :func:`column_stats` gives them untruncated in icectl's
internal values (``icectl append`` places files in partitions with them). Whether a file's
columns fit a table schema is :mod:`icectl.io.formats.parquet_schema`'s job.
"""

from __future__ import annotations

import json
import math
import threading
import uuid as _uuid
from dataclasses import dataclass, field
from typing import Any, Collection, Sequence

from icectl.errors import IcectlError, InvalidInput, StorageError, UnsupportedFeature, ValidationError
from icectl.io.storage.files import FileIO
from icectl.spec.metrics import (
    MetricsConfig,
    MetricsMode,
    truncate_lower_bound,
    truncate_upper_bound,
)
from icectl.spec.name_mapping import NameMapping
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
    PrimitiveType,
)
from icectl.spec.values import to_bytes, unscaled_to_decimal

__all__ = [
    "FileMetrics", "ParquetField", "ParquetColumn",
    "parquet_schema_fields", "parquet_columns", "footer_metrics", "read_footer", "ColumnStats",
    "column_stats", "arrow_field_id",
]

_FIELD_ID_KEY = b"PARQUET:field_id"


# -- results -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FileMetrics:
    """What a manifest entry records about a data file, from its footer. Maps are keyed by field
    id; bounds are single-value serialized bytes."""

    record_count: int
    file_size_in_bytes: int
    column_sizes: dict[int, int] = field(default_factory=dict, hash=False)
    value_counts: dict[int, int] = field(default_factory=dict, hash=False)
    null_value_counts: dict[int, int] = field(default_factory=dict, hash=False)
    nan_value_counts: dict[int, int] = field(default_factory=dict, hash=False)
    lower_bounds: dict[int, bytes] = field(default_factory=dict, hash=False)
    upper_bounds: dict[int, bytes] = field(default_factory=dict, hash=False)
    split_offsets: tuple[int, ...] = ()


@dataclass(frozen=True)
class ParquetField:
    """A node of the file's schema as Iceberg sees it.

    ``kind`` is ``struct``, ``list``, ``map`` or ``primitive``. ``name`` is the Parquet name
    (``element``/``key``/``value`` stand for list elements and map keys/values whatever the file
    calls them); ``path`` is the Iceberg-style dotted name. ``iceberg_type`` is set for
    primitives the spec can represent; otherwise ``problem`` says why not.
    """

    name: str
    path: str
    field_id: int | None
    kind: str
    required: bool
    children: tuple["ParquetField", ...] = ()
    iceberg_type: PrimitiveType | None = None
    physical_type: str | None = None
    logical_type: str | None = None
    problem: str | None = None
    file_has_id: bool = False


@dataclass(frozen=True)
class ParquetColumn:
    """A leaf column of the file: its chunk index, Parquet path, Iceberg field and how to read
    its statistics."""

    index: int
    parquet_path: str
    field: ParquetField
    in_list_or_map: bool
    unit_scale: int = 1  # multiply raw values by this to get the Iceberg unit (ms -> us: 1000)
    unsigned: bool = False


# -- reading the footer ----------------------------------------------------------------------


def read_footer(file_io: FileIO, path: str) -> Any:
    """The footer (``pyarrow.parquet.FileMetaData``) of a Parquet file; only the footer is read."""
    import pyarrow.parquet as pq

    try:
        with file_io.open(path, "rb") as f:
            return pq.ParquetFile(f).metadata
    except IcectlError:
        raise
    except OSError as e:
        raise StorageError(f"cannot read Parquet footer of {path}: {e}") from e
    except Exception as e:  # pyarrow raises ArrowInvalid & co for non-Parquet input
        raise InvalidInput(f"{path} is not a readable Parquet file: {e}") from e


# -- Parquet types -> Iceberg types -------------------------------------------------------------


def _logical(col: Any) -> dict[str, Any]:
    lt = col.logical_type
    try:
        return json.loads(lt.to_json())
    except (AttributeError, ValueError):
        return {"Type": str(getattr(lt, "type", "None"))}


def _iceberg_primitive(col: Any) -> tuple[PrimitiveType | None, str | None, int, bool]:
    """(type, problem, unit scale, unsigned) for a Parquet leaf column schema."""
    physical = col.physical_type
    lt = _logical(col)
    kind = str(lt.get("Type", "None")).lower()
    if kind in ("string", "enum", "json"):
        return STRING, None, 1, False
    if kind == "bson":
        return BINARY, None, 1, False
    if kind == "decimal":
        p, s = int(lt.get("precision", col.precision)), int(lt.get("scale", col.scale))
        if p > 38:
            return None, f"decimal({p}, {s}) has more than 38 digits", 1, False
        return DecimalType(p, s), None, 1, False
    if kind == "date":
        return DATE, None, 1, False
    if kind in ("time", "timestamp"):
        unit = str(lt.get("timeUnit", "")).lower()
        utc = bool(lt.get("isAdjustedToUTC", False))
        scale = {"milliseconds": 1000, "microseconds": 1, "nanoseconds": 1}.get(unit)
        if scale is None:
            return None, f"unknown {kind} unit {unit!r}", 1, False
        if kind == "time":
            if unit == "nanoseconds":
                return None, "TIME(NANOS) has no Iceberg type (time is in microseconds)", 1, False
            return TIME, None, scale, False
        if unit == "nanoseconds":
            return (TIMESTAMPTZ_NS if utc else TIMESTAMP_NS), None, 1, False
        return (TIMESTAMPTZ if utc else TIMESTAMP), None, scale, False
    if kind == "int":
        width, signed = int(lt.get("bitWidth", 32)), bool(lt.get("isSigned", True))
        if width == 64 and not signed:
            return None, "unsigned 64-bit integers have no Iceberg type", 1, False
        if width < 32 or (width == 32 and signed):
            return INT, None, 1, not signed
        return LONG, None, 1, not signed
    if kind == "uuid":
        return UUID, None, 1, False
    if kind not in ("none", "null", "unknown"):
        return None, f"Parquet logical type {lt.get('Type')} has no Iceberg type", 1, False
    if physical == "BOOLEAN":
        return BOOLEAN, None, 1, False
    if physical == "INT32":
        return INT, None, 1, False
    if physical == "INT64":
        return LONG, None, 1, False
    if physical == "FLOAT":
        return FLOAT, None, 1, False
    if physical == "DOUBLE":
        return DOUBLE, None, 1, False
    if physical == "FIXED_LEN_BYTE_ARRAY":
        return FixedType(int(col.length)), None, 1, False
    if physical == "BYTE_ARRAY":
        return BINARY, None, 1, False
    if physical == "INT96":
        return TIMESTAMPTZ, None, 1, False
    return None, f"Parquet type {physical} has no Iceberg type", 1, False


def arrow_field_id(arrow_field: Any) -> int | None:
    """The Iceberg field id an Arrow field carries (``PARQUET:field_id``), None without one or
    when it is not a number."""
    md = arrow_field.metadata or {}
    raw = md.get(_FIELD_ID_KEY)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        return None


class _Builder:
    """Walks the Arrow view of the footer schema in step with the Parquet leaf columns."""

    def __init__(self, parquet_schema: Any, mapping: NameMapping | None):
        self.schema = parquet_schema
        self.mapping = mapping
        self.leaf = 0
        self.columns: list[ParquetColumn] = []
        self.any_file_ids = False

    def _id(self, arrow_field: Any, names: Sequence[str], alt_names: Sequence[str]) -> tuple[int | None, bool]:
        fid = arrow_field_id(arrow_field)
        if fid is not None:
            self.any_file_ids = True
            return fid, True
        if self.mapping is None:
            return None, False
        found = self.mapping.find(names)
        if found is None and list(alt_names) != list(names):
            found = self.mapping.find(alt_names)
        return (None if found is None else found.field_id), False

    def node(self, arrow_field: Any, names: list[str], alt: list[str], iceberg_names: list[str],
             in_list_or_map: bool) -> ParquetField:
        import pyarrow as pa

        t = arrow_field.type
        if isinstance(t, pa.ExtensionType):
            t = t.storage_type
        if isinstance(t, pa.DictionaryType):
            t = t.value_type
        fid, from_file = self._id(arrow_field, names, alt)
        path = ".".join(iceberg_names)
        required = not arrow_field.nullable
        if isinstance(t, pa.StructType):
            children = tuple(
                self.node(t.field(i), names + [t.field(i).name], alt + [t.field(i).name],
                          iceberg_names + [t.field(i).name], in_list_or_map)
                for i in range(t.num_fields))
            return ParquetField(arrow_field.name, path, fid, "struct", required, children,
                                file_has_id=from_file)
        if isinstance(t, pa.MapType):
            k = self.node(t.key_field, names + [t.key_field.name], alt + ["key"],
                          iceberg_names + ["key"], True)
            v = self.node(t.item_field, names + [t.item_field.name], alt + ["value"],
                          iceberg_names + ["value"], True)
            return ParquetField(arrow_field.name, path, fid, "map", required, (k, v),
                                file_has_id=from_file)
        if isinstance(t, (pa.ListType, pa.LargeListType, pa.FixedSizeListType)) or (
                hasattr(pa, "ListViewType") and isinstance(t, (pa.ListViewType, pa.LargeListViewType))):
            vf = t.value_field
            e = self.node(vf, names + [vf.name], alt + ["element"], iceberg_names + ["element"], True)
            return ParquetField(arrow_field.name, path, fid, "list", required, (e,),
                                file_has_id=from_file)
        # a leaf: the next Parquet column
        if self.leaf >= len(self.schema):
            raise UnsupportedFeature("cannot match the Parquet schema to its Arrow form")
        col = self.schema.column(self.leaf)
        itype, problem, scale, unsigned = _iceberg_primitive(col)
        lt = _logical(col).get("Type")
        pf = ParquetField(arrow_field.name, path, fid, "primitive", required, (), itype,
                          col.physical_type, None if lt in (None, "None") else str(lt), problem,
                          from_file)
        self.columns.append(ParquetColumn(self.leaf, col.path, pf, in_list_or_map, scale, unsigned))
        self.leaf += 1
        return pf


# Files of one table nearly always share a schema: the Iceberg view of a footer schema is built
# once per distinct (Parquet schema, Arrow schema, name mapping) and shared (its parts are frozen).
_BUILT: dict[tuple, tuple[list[ParquetField], list[ParquetColumn]]] = {}
_BUILT_LOCK = threading.Lock()
_BUILT_MAX = 256


def _build(footer: Any, mapping: NameMapping | None) -> tuple[list[ParquetField], list[ParquetColumn]]:
    pschema = footer.schema
    # str() of a Parquet schema names every column with its repetition, physical and logical
    # type and field id; the Arrow form adds what the writer's stored Arrow schema says
    # (its first line names the Python object's address: leave it out)
    text = str(pschema).partition("\n")[2]
    key = (text, pschema.to_arrow_schema().serialize().to_pybytes(), mapping)
    built = _BUILT.get(key)
    if built is None:
        built = _build_uncached(footer, mapping)
        with _BUILT_LOCK:
            if len(_BUILT) >= _BUILT_MAX:
                _BUILT.clear()
            _BUILT[key] = built
    return list(built[0]), list(built[1])


def _build_uncached(footer: Any, mapping: NameMapping | None) -> tuple[list[ParquetField], list[ParquetColumn]]:
    pschema = footer.schema
    arrow = pschema.to_arrow_schema()
    b = _Builder(pschema, mapping)
    fields = [b.node(f, [f.name], [f.name], [f.name], False) for f in arrow]
    if b.leaf != len(pschema):
        raise UnsupportedFeature(
            f"cannot match the file's {len(pschema)} Parquet columns to its schema")
    return fields, b.columns


def parquet_schema_fields(
    file_io: FileIO, path: str, name_mapping: NameMapping | None = None, footer: Any = None,
) -> list[ParquetField]:
    """The file's top-level fields with nested children, Iceberg types and field ids (from the
    file, else from ``name_mapping``; None when neither gives one)."""
    footer = footer if footer is not None else read_footer(file_io, path)
    return _build(footer, name_mapping)[0]


def parquet_columns(footer: Any, name_mapping: NameMapping | None = None) -> list[ParquetColumn]:
    """The file's leaf columns, in chunk order."""
    return _build(footer, name_mapping)[1]


# -- metrics -----------------------------------------------------------------------------------


def _chunk_start(chunk: Any) -> int:
    dict_offset = chunk.dictionary_page_offset if chunk.has_dictionary_page else None
    data_offset = chunk.data_page_offset
    if dict_offset is not None and 0 < dict_offset < data_offset:
        return int(dict_offset)
    return int(data_offset)


def _value(col: ParquetColumn, stats: Any, which: str) -> Any:
    """The Iceberg value of a statistic (``min`` or ``max``) of a column chunk."""
    t = col.field.iceberg_type
    raw = getattr(stats, f"{which}_raw")
    if col.unsigned:
        raw = getattr(stats, which)  # pyarrow turns the signed physical value into unsigned
    if t == STRING:
        return bytes(raw).decode("utf-8", errors="replace") if isinstance(raw, (bytes, bytearray)) else str(raw)
    if isinstance(t, DecimalType):
        if isinstance(raw, (bytes, bytearray)):
            return int.from_bytes(bytes(raw), "big", signed=True)
        return int(raw)
    if t == UUID or t == BINARY or isinstance(t, FixedType):
        return bytes(raw) if not isinstance(raw, str) else raw.encode("utf-8")
    if t in (FLOAT, DOUBLE):
        return float(raw)
    if t == BOOLEAN:
        return bool(raw)
    return int(raw) * col.unit_scale


def _key(t: IcebergType, v: Any) -> Any:
    if t in (FLOAT, DOUBLE):
        return (v, math.copysign(1.0, v))
    return v


def _serialize(t: IcebergType, v: Any) -> bytes:
    if t == STRING:
        return v.encode("utf-8", errors="surrogatepass")
    if t == BINARY or isinstance(t, FixedType):
        return bytes(v)
    if t == UUID:
        return bytes(v)
    if isinstance(t, DecimalType):
        return to_bytes(t, unscaled_to_decimal(v, t.scale))
    return to_bytes(t, v)


@dataclass
class ColumnStats:
    """One leaf column's statistics over the whole file, values in icectl's internal form
    (:mod:`icectl.spec.values`): untruncated, as the footer has them."""

    field_id: int
    null_count: int
    value_count: int  # including nulls
    min: Any = None
    max: Any = None
    has_bounds: bool = True  # min and max cover every non-null value of every row group
    nan_count: int | None = None  # float/double NaN values; None: unknown (footers carry none)


def _fold(c: ParquetColumn, chunks: Sequence[Any], bounds: bool,
          ) -> tuple[int, int, Any, Any, bool] | None:
    """(value count, null count, min, max, bounds cover all) of a column not inside a list or
    map, from its chunks' statistics as the reference reads them; None when a chunk has no
    usable statistics. Raw values as :func:`_value` gives them."""
    t = c.field.iceberg_type
    value_count = null_count = 0
    lo: Any = None
    hi: Any = None
    complete = True
    for ch in chunks:
        stats = ch.statistics if ch.is_stats_set else None
        if stats is None or not stats.has_null_count:
            # No statistics, or none with a null count (the reference would count -1): unknown.
            return None
        value_count += ch.num_values
        null_count += stats.null_count
        if not bounds or t is None or not stats.has_min_max:
            complete = complete and ch.num_values == stats.null_count
            continue
        cmin, cmax = _value(c, stats, "min"), _value(c, stats, "max")
        if t in (FLOAT, DOUBLE):
            if math.isnan(cmin) or math.isnan(cmax):
                complete = False
                continue  # order with NaN is undefined: the chunk gives no bounds
            if cmin == 0.0:
                cmin = -0.0  # a zero minimum may hide -0.0 values, a zero maximum +0.0 ones
            if cmax == 0.0:
                cmax = 0.0
        if lo is None or _key(t, cmin) < _key(t, lo):
            lo = cmin
        if hi is None or _key(t, cmax) > _key(t, hi):
            hi = cmax
    return value_count, null_count, lo, hi, complete


def _summarize(c: ParquetColumn, chunks: Sequence[Any], mode: MetricsMode,
               ) -> tuple[int, int, bytes | None, bytes | None] | None:
    """(value count, null count, lower, upper) of a top-level or struct column; None when a
    chunk has no usable statistics."""
    t = c.field.iceberg_type
    folded = _fold(c, chunks, mode.has_bounds)
    if folded is None:
        return None
    value_count, null_count, lo, hi, _ = folded
    if t is None or lo is None:
        return value_count, null_count, None, None
    kept_hi = truncate_upper_bound(t, hi, mode)
    return (value_count, null_count, _serialize(t, truncate_lower_bound(t, lo, mode)),
            None if kept_hi is None else _serialize(t, kept_hi))


def _internal(t: IcebergType, v: Any) -> Any:
    if isinstance(t, DecimalType):
        return unscaled_to_decimal(v, t.scale)
    if t == UUID:
        return _uuid.UUID(bytes=bytes(v))
    return v


def column_stats(footer: Any, name_mapping: NameMapping | None = None,
                 field_ids: Collection[int] | None = None,
                 row_group: int | None = None) -> dict[int, ColumnStats]:
    """Untruncated statistics, by field id, of the file's columns outside lists and maps (only
    ``field_ids`` when given), from the same reading of the footer as :func:`footer_metrics`;
    of one row group when ``row_group`` is given, else of the whole file.
    Columns without usable statistics in some row group are left out."""
    groups = ([footer.row_group(i) for i in range(footer.num_row_groups)] if row_group is None
              else [footer.row_group(row_group)])
    out: dict[int, ColumnStats] = {}
    for c in parquet_columns(footer, name_mapping):
        fid, t = c.field.field_id, c.field.iceberg_type
        if fid is None or c.in_list_or_map or c.field.physical_type == "INT96":
            continue
        if field_ids is not None and fid not in field_ids:
            continue
        folded = _fold(c, [rg.column(c.index) for rg in groups], True)
        if folded is None:
            continue
        values, nulls, lo, hi, complete = folded
        if t in (FLOAT, DOUBLE) and (lo == 0.0 or hi == 0.0):
            complete = False  # the sign of a zero bound is widened: not a value of the file
        st = ColumnStats(fid, nulls, values, has_bounds=complete and lo is not None)
        if st.has_bounds:
            st.min, st.max = _internal(t, lo), _internal(t, hi)
        out[fid] = st
    return out


def footer_metrics(
    footer: Any, config: MetricsConfig, name_mapping: NameMapping | None = None,
    file_size_in_bytes: int = 0, *, path: str = "",
) -> FileMetrics:
    """Metrics from a footer (see the module doc). Raises ValidationError naming a column that
    has neither a field id in the file nor one from ``name_mapping``."""
    columns = parquet_columns(footer, name_mapping)
    for c in columns:
        if c.field.field_id is None:
            where = f" of {path}" if path else ""
            raise ValidationError(
                f"column {c.field.path!r}{where} has no field id and the name mapping does not map it")

    sizes: dict[int, int] = {}
    values: dict[int, int] = {}
    nulls: dict[int, int] = {}
    lower: dict[int, bytes] = {}
    upper: dict[int, bytes] = {}
    groups = [footer.row_group(i) for i in range(footer.num_row_groups)]
    record_count = sum(rg.num_rows for rg in groups)
    offsets = sorted(_chunk_start(rg.column(0)) for rg in groups if rg.num_columns)

    for c in columns:
        fid = c.field.field_id
        assert fid is not None
        mode = config.column_mode(c.field.path)
        if not mode.keeps_metrics:
            continue
        chunks = [rg.column(c.index) for rg in groups]
        sizes[fid] = sizes.get(fid, 0) + sum(ch.total_compressed_size for ch in chunks)
        if c.in_list_or_map or c.field.physical_type == "INT96":
            continue  # repeated values and INT96 statistics are not used
        summary = _summarize(c, chunks, mode)
        if summary is None:
            continue  # a chunk without statistics: counts and bounds are unknown
        values[fid], nulls[fid], lo, hi = summary
        if lo is not None:
            lower[fid] = lo
        if hi is not None:
            upper[fid] = hi

    return FileMetrics(
        record_count=record_count,
        file_size_in_bytes=file_size_in_bytes,
        column_sizes=sizes,
        value_counts=values,
        null_value_counts=nulls,
        nan_value_counts={},
        lower_bounds=lower,
        upper_bounds=upper,
        split_offsets=tuple(offsets),
    )
