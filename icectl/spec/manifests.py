"""Manifest lists, manifests and their entries (spec "Manifests", "Manifest Lists").

The model is pure: frozen dataclasses plus the record layouts of format versions 1, 2 and 3
as Iceberg struct types carrying the spec's field ids, and their conversion to Avro schemas in
the shape the Java reference writes (record names ``manifest_entry``, ``r2``, ``r102``,
``manifest_file``, ``r508``; maps with non-string keys as arrays of ``k<id>_v<id>`` records with
logical type ``map``; ``field-id`` / ``element-id`` / ``key-id`` / ``value-id`` attributes).
Reading and writing the Avro container files lives in :mod:`icectl.io.avro`.

Values inside a ``DataFile`` partition tuple use the internal representation: int/long/date/time/
timestamp* as ``int`` (days, microseconds or nanoseconds), float/double as ``float``, string as
``str``, binary/fixed as ``bytes``, decimal as ``decimal.Decimal``, uuid as ``uuid.UUID``,
boolean as ``bool``, and ``None`` for null.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

from icectl.errors import ValidationError
from icectl.spec.types import (
    BINARY,
    BOOLEAN,
    INT,
    LONG,
    STRING,
    DecimalType,
    FixedType,
    GeographyType,
    GeometryType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    field_to_json,
)

__all__ = [
    # constants
    "DATA", "POSITION_DELETES", "EQUALITY_DELETES",
    "EXISTING", "ADDED", "DELETED",
    "MANIFEST_DATA", "MANIFEST_DELETES",
    "V1_BLOCK_SIZE",
    # model
    "DataFile", "ManifestEntry", "FieldSummary", "ManifestFile",
    # record layouts
    "data_file_type", "manifest_entry_type", "manifest_file_type", "field_summary_type",
    "avro_schema", "partition_avro_schema", "manifest_entry_avro_schema",
    "manifest_list_avro_schema", "iceberg_schema_json", "decimal_required_bytes",
    "sanitize_avro_name",
    # helpers
    "inherit_sequence_numbers", "inherit_columns", "InheritedColumns",
    "assign_manifest_first_row_ids", "summarize_entries",
    "partition_summaries", "content_name", "content_from_name",
]

# -- enumerations (plain ints: cheap to build 200k times) ------------------------------------

DATA = 0
POSITION_DELETES = 1
EQUALITY_DELETES = 2
_FILE_CONTENT_NAMES = {DATA: "data", POSITION_DELETES: "position_deletes",
                       EQUALITY_DELETES: "equality_deletes"}

EXISTING = 0
ADDED = 1
DELETED = 2
_STATUS_NAMES = {EXISTING: "existing", ADDED: "added", DELETED: "deleted"}

MANIFEST_DATA = 0
MANIFEST_DELETES = 1

# The block size v1 writers must still put in the (required, deprecated) field 105; the
# reference writes 64 MiB.
V1_BLOCK_SIZE = 64 * 1024 * 1024


def content_name(content: int) -> str:
    """Manifest key-value metadata ``content`` value: ``"data"`` or ``"deletes"``."""
    return "deletes" if content == MANIFEST_DELETES else "data"


def content_from_name(name: str | None) -> int:
    return MANIFEST_DELETES if name == "deletes" else MANIFEST_DATA


# -- model ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DataFile:
    """A data or delete file as tracked by a manifest (the ``data_file`` struct).

    ``partition`` is a tuple in the order of the partition spec's fields; use
    :meth:`partition_dict` for access by name. Metrics maps are keyed by field id; bounds stay
    in their single-value binary form. ``spec_id`` is not stored in the file: readers set it
    from the manifest that listed the file.
    """

    content: int
    file_path: str
    file_format: str
    partition: tuple = ()
    record_count: int = 0
    file_size_in_bytes: int = 0
    column_sizes: dict[int, int] | None = field(default=None, hash=False)
    value_counts: dict[int, int] | None = field(default=None, hash=False)
    null_value_counts: dict[int, int] | None = field(default=None, hash=False)
    nan_value_counts: dict[int, int] | None = field(default=None, hash=False)
    lower_bounds: dict[int, bytes] | None = field(default=None, hash=False)
    upper_bounds: dict[int, bytes] | None = field(default=None, hash=False)
    key_metadata: bytes | None = None
    split_offsets: tuple[int, ...] | None = None
    equality_ids: tuple[int, ...] | None = None
    sort_order_id: int | None = None
    first_row_id: int | None = None
    referenced_data_file: str | None = None
    content_offset: int | None = None
    content_size_in_bytes: int | None = None
    spec_id: int = 0

    @property
    def is_data(self) -> bool:
        return self.content == DATA

    @property
    def is_deletion_vector(self) -> bool:
        """A v3 deletion vector: a position delete stored as a Puffin blob."""
        return self.content == POSITION_DELETES and self.file_format.upper() == "PUFFIN"

    @property
    def content_name(self) -> str:
        return _FILE_CONTENT_NAMES.get(self.content, str(self.content))

    def partition_dict(self, partition_type: StructType) -> dict[str, Any]:
        """Partition values by partition field name."""
        return {f.name: v for f, v in zip(partition_type.fields(), self.partition)}

    def partition_value(self, name: str, partition_type: StructType) -> Any:
        for f, v in zip(partition_type.fields(), self.partition):
            if f.name == name:
                return v
        raise KeyError(name)

    def with_first_row_id(self, first_row_id: int | None) -> "DataFile":
        return replace(self, first_row_id=first_row_id)


@dataclass(frozen=True)
class ManifestEntry:
    """One manifest row. ``sequence_number`` is the data sequence number.

    As written, ``snapshot_id`` and the sequence numbers may be ``None`` (to be inherited);
    entries returned by a reader given the manifest's list entry hold inherited values.
    """

    status: int
    snapshot_id: int | None
    sequence_number: int | None
    file_sequence_number: int | None
    data_file: DataFile

    @property
    def data_sequence_number(self) -> int | None:
        return self.sequence_number

    @property
    def is_live(self) -> bool:
        """ADDED or EXISTING: part of the snapshot's contents (DELETED entries are not)."""
        return self.status != DELETED

    @property
    def status_name(self) -> str:
        return _STATUS_NAMES.get(self.status, str(self.status))


@dataclass(frozen=True)
class FieldSummary:
    """Partition field summary of a manifest (``r508``). Bounds are single-value bytes."""

    contains_null: bool
    contains_nan: bool | None = None
    lower_bound: bytes | None = None
    upper_bound: bytes | None = None


@dataclass(frozen=True)
class ManifestFile:
    """A manifest list entry (``manifest_file`` struct).

    ``sequence_number`` / ``min_sequence_number`` may be ``None`` for a manifest written by
    the commit in progress: the manifest list writer fills in the snapshot's sequence number.
    Counts may be ``None`` in v1 lists ("assumed non-zero").
    """

    manifest_path: str
    manifest_length: int
    partition_spec_id: int
    content: int = MANIFEST_DATA
    sequence_number: int | None = 0
    min_sequence_number: int | None = 0
    added_snapshot_id: int | None = None
    added_files_count: int | None = None
    existing_files_count: int | None = None
    deleted_files_count: int | None = None
    added_rows_count: int | None = None
    existing_rows_count: int | None = None
    deleted_rows_count: int | None = None
    partitions: tuple[FieldSummary, ...] | None = None
    key_metadata: bytes | None = None
    first_row_id: int | None = None

    def has_added_files(self) -> bool:
        return self.added_files_count is None or self.added_files_count > 0

    def has_existing_files(self) -> bool:
        return self.existing_files_count is None or self.existing_files_count > 0

    def has_deleted_files(self) -> bool:
        return self.deleted_files_count is None or self.deleted_files_count > 0

    @property
    def is_delete_manifest(self) -> bool:
        return self.content == MANIFEST_DELETES


# -- inheritance rules ------------------------------------------------------------------------


def _inherits_sequence_number(status: int, manifest_sequence_number: int) -> bool:
    # the reference: ADDED entries inherit; a v1 list (sequence number 0) stores none at all
    return manifest_sequence_number == 0 or status == ADDED


def inherit_sequence_numbers(
    status: int, sequence_number: int | None, file_sequence_number: int | None,
    manifest_sequence_number: int,
) -> tuple[int | None, int | None]:
    """The data and file sequence numbers an entry has after inheritance.

    A null value takes the manifest's sequence number when the entry is ADDED, or when the
    manifest's sequence number is 0 (a v1 manifest list, where nothing was stored); otherwise
    it stays null, as in the reference.
    """
    if _inherits_sequence_number(status, manifest_sequence_number):
        if sequence_number is None:
            sequence_number = manifest_sequence_number
        if file_sequence_number is None:
            file_sequence_number = manifest_sequence_number
    return sequence_number, file_sequence_number


@dataclass(frozen=True)
class InheritedColumns:
    snapshot_id: list
    sequence_number: list
    file_sequence_number: list
    first_row_id: list


def inherit_columns(
    status: Sequence[int],
    snapshot_id: list,
    sequence_number: list,
    file_sequence_number: list,
    first_row_id: list,
    record_count: Sequence[int],
    *,
    added_snapshot_id: int | None,
    manifest_sequence_number: int | None,
    manifest_first_row_id: int | None,
) -> InheritedColumns:
    """The values entries of one manifest inherit from its manifest list entry, column-wise
    (the one implementation both manifest readers use).

    - a null ``snapshot_id`` takes ``added_snapshot_id``;
    - null sequence numbers follow :func:`inherit_sequence_numbers` (nothing is inherited when
      ``manifest_sequence_number`` is None);
    - v3 row ids: with ``manifest_first_row_id``, each non-DELETED entry whose file has no
      ``first_row_id`` gets the running next row id, which then grows by the file's record
      count; without one, the files' values are cleared (delete manifests, pre-v3 manifests).
    """
    if added_snapshot_id is not None and None in snapshot_id:
        snapshot_id = [added_snapshot_id if s is None else s for s in snapshot_id]
    ms = manifest_sequence_number
    if ms is not None:
        inherit = _inherits_sequence_number
        if None in sequence_number:
            sequence_number = [ms if s is None and inherit(st, ms) else s
                               for s, st in zip(sequence_number, status)]
        if None in file_sequence_number:
            file_sequence_number = [ms if s is None and inherit(st, ms) else s
                                    for s, st in zip(file_sequence_number, status)]
    if manifest_first_row_id is None:
        row_ids: list = [None] * len(status)
    else:
        row_ids = []
        nxt = manifest_first_row_id
        for r, st, rc in zip(first_row_id, status, record_count):
            if r is None and st != DELETED:
                row_ids.append(nxt)
                nxt += rc
            else:
                row_ids.append(r)
    return InheritedColumns(snapshot_id, sequence_number, file_sequence_number, row_ids)


def assign_manifest_first_row_ids(
    manifests: Sequence[ManifestFile], first_row_id: int,
) -> tuple[list[ManifestFile], int]:
    """v3 manifest list row-id assignment; returns the manifests and the next free row id.

    Data manifests without a ``first_row_id`` get the running next row id, which then grows by
    their added plus existing row counts; delete manifests and manifests that already carry one
    are left as they are. ``next - first_row_id`` is the snapshot's ``added-rows``.
    """
    out: list[ManifestFile] = []
    next_id = first_row_id
    for m in manifests:
        if m.content == MANIFEST_DATA and m.first_row_id is None:
            out.append(replace(m, first_row_id=next_id))
            next_id += (m.added_rows_count or 0) + (m.existing_rows_count or 0)
        else:
            out.append(m)
    return out, next_id


# -- manifest summaries -----------------------------------------------------------------------


def _sort_key(t: IcebergType) -> Callable[[Any], Any]:
    if isinstance(t, PrimitiveType) and t.name in ("float", "double"):
        # -0.0 sorts before +0.0 (IEEE 754 totalOrder, as Java's Double.compare).
        return lambda v: (v, math.copysign(1.0, v))
    if isinstance(t, PrimitiveType) and t.name == "uuid":
        return lambda v: v.bytes
    return lambda v: v


def partition_summaries(
    partition_type: StructType,
    partitions: Iterable[tuple],
    to_bytes: Callable[[IcebergType, Any], bytes],
) -> tuple[FieldSummary, ...]:
    """Field summaries over partition tuples: null/NaN flags and serialized min/max.

    ``to_bytes(type, value)`` is the single-value serializer (spec Appendix D).
    """
    fields = partition_type.fields()
    n = len(fields)
    lows: list[Any] = [None] * n
    highs: list[Any] = [None] * n
    nulls = [False] * n
    nans = [False] * n
    keys = [_sort_key(f.type) for f in fields]
    for part in partitions:
        for i in range(n):
            v = part[i]
            if v is None:
                nulls[i] = True
                continue
            if isinstance(v, float) and v != v:
                nans[i] = True
                continue
            k = keys[i]
            if lows[i] is None or k(v) < k(lows[i]):
                lows[i] = v
            if highs[i] is None or k(v) > k(highs[i]):
                highs[i] = v
    out = []
    for i, f in enumerate(fields):
        lo = None if lows[i] is None else to_bytes(f.type, lows[i])
        hi = None if highs[i] is None else to_bytes(f.type, highs[i])
        out.append(FieldSummary(nulls[i], nans[i], lo, hi))
    return tuple(out)


def summarize_entries(
    entries: Sequence[ManifestEntry],
    *,
    manifest_path: str,
    manifest_length: int,
    partition_spec_id: int,
    content: int,
    snapshot_id: int | None,
    partition_type: StructType | None = None,
    to_bytes: Callable[[IcebergType, Any], bytes] | None = None,
    key_metadata: bytes | None = None,
) -> ManifestFile:
    """The manifest list entry describing a manifest with these entries.

    ``min_sequence_number`` is the least explicit data sequence number of the live entries, as
    the reference's manifest writer computes it (entries still to inherit the new snapshot's
    number cannot be lower); with none it is left ``None`` for the manifest list writer. Partition summaries count all entries, deleted ones included, as the
    reference does; they need ``partition_type`` and ``to_bytes``.
    """
    counts = [0, 0, 0]
    rows = [0, 0, 0]
    min_seq: int | None = None
    for e in entries:
        counts[e.status] += 1
        rows[e.status] += e.data_file.record_count
        if e.status != DELETED and e.sequence_number is not None:
            if min_seq is None or e.sequence_number < min_seq:
                min_seq = e.sequence_number
    summaries = None
    if partition_type is not None:
        if to_bytes is None:
            raise ValueError("partition summaries need a single-value serializer")
        summaries = partition_summaries(
            partition_type, (e.data_file.partition for e in entries), to_bytes)
    return ManifestFile(
        manifest_path=manifest_path,
        manifest_length=manifest_length,
        partition_spec_id=partition_spec_id,
        content=content,
        sequence_number=None,
        min_sequence_number=min_seq,
        added_snapshot_id=snapshot_id,
        added_files_count=counts[ADDED],
        existing_files_count=counts[EXISTING],
        deleted_files_count=counts[DELETED],
        added_rows_count=rows[ADDED],
        existing_rows_count=rows[EXISTING],
        deleted_rows_count=rows[DELETED],
        partitions=summaries,
        key_metadata=key_metadata,
    )


# -- record layouts (Iceberg struct types with the spec's field ids) ---------------------------


def _opt(fid: int, name: str, t: IcebergType) -> NestedField:
    return NestedField(fid, name, t, False)


def _req(fid: int, name: str, t: IcebergType) -> NestedField:
    return NestedField(fid, name, t, True)


def _int_long_map(fid: int, name: str, key_id: int, value_id: int) -> NestedField:
    return _opt(fid, name, MapType(key_id, INT, value_id, LONG, True))


def _int_binary_map(fid: int, name: str, key_id: int, value_id: int) -> NestedField:
    return _opt(fid, name, MapType(key_id, INT, value_id, BINARY, True))


_CONTENT = _req(134, "content", INT)
_FILE_PATH = _req(100, "file_path", STRING)
_FILE_FORMAT = _req(101, "file_format", STRING)
_RECORD_COUNT = _req(103, "record_count", LONG)
_FILE_SIZE = _req(104, "file_size_in_bytes", LONG)
_BLOCK_SIZE = _req(105, "block_size_in_bytes", LONG)
_COLUMN_SIZES = _int_long_map(108, "column_sizes", 117, 118)
_VALUE_COUNTS = _int_long_map(109, "value_counts", 119, 120)
_NULL_VALUE_COUNTS = _int_long_map(110, "null_value_counts", 121, 122)
_NAN_VALUE_COUNTS = _int_long_map(137, "nan_value_counts", 138, 139)
_LOWER_BOUNDS = _int_binary_map(125, "lower_bounds", 126, 127)
_UPPER_BOUNDS = _int_binary_map(128, "upper_bounds", 129, 130)
_KEY_METADATA = _opt(131, "key_metadata", BINARY)
_SPLIT_OFFSETS = _opt(132, "split_offsets", ListType(133, LONG, True))
_EQUALITY_IDS = _opt(135, "equality_ids", ListType(136, INT, True))
_SORT_ORDER_ID = _opt(140, "sort_order_id", INT)
_FIRST_ROW_ID = _opt(142, "first_row_id", LONG)
_REFERENCED_DATA_FILE = _opt(143, "referenced_data_file", STRING)
_CONTENT_OFFSET = _opt(144, "content_offset", LONG)
_CONTENT_SIZE = _opt(145, "content_size_in_bytes", LONG)

PARTITION_FIELD_ID = 102
DATA_FILE_FIELD_ID = 2


def _check_version(format_version: int) -> None:
    if format_version not in (1, 2, 3):
        from icectl.errors import UnsupportedFeature

        raise UnsupportedFeature(f"manifest format version {format_version} is not supported")


def data_file_type(partition_type: StructType, format_version: int) -> StructType:
    """The ``data_file`` struct (field 2) for a format version, in the reference's field order."""
    _check_version(format_version)
    partition = _req(PARTITION_FIELD_ID, "partition", partition_type)
    metrics = [_COLUMN_SIZES, _VALUE_COUNTS, _NULL_VALUE_COUNTS, _NAN_VALUE_COUNTS,
               _LOWER_BOUNDS, _UPPER_BOUNDS, _KEY_METADATA, _SPLIT_OFFSETS]
    if format_version == 1:
        fields = [_FILE_PATH, _FILE_FORMAT, partition, _RECORD_COUNT, _FILE_SIZE, _BLOCK_SIZE,
                  *metrics, _SORT_ORDER_ID]
    elif format_version == 2:
        fields = [_CONTENT, _FILE_PATH, _FILE_FORMAT, partition, _RECORD_COUNT, _FILE_SIZE,
                  *metrics, _EQUALITY_IDS, _SORT_ORDER_ID, _REFERENCED_DATA_FILE]
    else:
        fields = [_CONTENT, _FILE_PATH, _FILE_FORMAT, partition, _RECORD_COUNT, _FILE_SIZE,
                  *metrics, _EQUALITY_IDS, _SORT_ORDER_ID, _FIRST_ROW_ID, _REFERENCED_DATA_FILE,
                  _CONTENT_OFFSET, _CONTENT_SIZE]
    return StructType(fields)


def manifest_entry_type(partition_type: StructType, format_version: int) -> StructType:
    """The ``manifest_entry`` struct for a format version (snapshot_id optional in all, as
    the reference writes it)."""
    df = _req(DATA_FILE_FIELD_ID, "data_file", data_file_type(partition_type, format_version))
    if format_version == 1:
        return StructType([_req(0, "status", INT), _opt(1, "snapshot_id", LONG), df])
    return StructType([
        _req(0, "status", INT), _opt(1, "snapshot_id", LONG),
        _opt(3, "sequence_number", LONG), _opt(4, "file_sequence_number", LONG), df,
    ])


def field_summary_type() -> StructType:
    return StructType([
        _req(509, "contains_null", BOOLEAN),
        _opt(518, "contains_nan", BOOLEAN),
        _opt(510, "lower_bound", BINARY),
        _opt(511, "upper_bound", BINARY),
    ])


def manifest_file_type(format_version: int) -> StructType:
    """The ``manifest_file`` struct of manifest lists for a format version."""
    _check_version(format_version)
    path = _req(500, "manifest_path", STRING)
    length = _req(501, "manifest_length", LONG)
    spec_id = _req(502, "partition_spec_id", INT)
    partitions = _opt(507, "partitions", ListType(508, field_summary_type(), True))
    key_metadata = _opt(519, "key_metadata", BINARY)
    if format_version == 1:
        return StructType([
            path, length, spec_id, _req(503, "added_snapshot_id", LONG),
            _opt(504, "added_files_count", INT), _opt(505, "existing_files_count", INT),
            _opt(506, "deleted_files_count", INT), partitions,
            _opt(512, "added_rows_count", LONG), _opt(513, "existing_rows_count", LONG),
            _opt(514, "deleted_rows_count", LONG), key_metadata,
        ])
    fields = [
        path, length, spec_id, _req(517, "content", INT), _req(515, "sequence_number", LONG),
        _req(516, "min_sequence_number", LONG), _req(503, "added_snapshot_id", LONG),
        _req(504, "added_files_count", INT), _req(505, "existing_files_count", INT),
        _req(506, "deleted_files_count", INT), _req(512, "added_rows_count", LONG),
        _req(513, "existing_rows_count", LONG), _req(514, "deleted_rows_count", LONG),
        partitions, key_metadata,
    ]
    if format_version >= 3:
        fields.append(_opt(520, "first_row_id", LONG))
    return StructType(fields)


# -- Iceberg type -> Avro schema (spec Appendix A, as the reference's TypeToSchema) ------------


def decimal_required_bytes(precision: int) -> int:
    """Fewest bytes whose two's complement holds every unscaled value of ``precision`` digits."""
    if precision <= 0:
        raise ValueError(f"invalid decimal precision {precision}")
    limit = 10 ** precision - 1
    n = 1
    while (1 << (8 * n - 1)) - 1 < limit:
        n += 1
    return n


def _valid_avro_name(name: str) -> bool:
    if not name:
        return False
    first = name[0]
    if not (first.isascii() and (first.isalpha() or first == "_")):
        return False
    return all(c.isascii() and (c.isalnum() or c == "_") for c in name[1:])


def _sanitize_char(c: str) -> str:
    if c.isdigit():
        return "_" + c
    return "_x" + format(ord(c), "X")


def sanitize_avro_name(name: str) -> str:
    """An Avro-legal field name, replacing characters the way the reference does
    (a leading digit ``d`` -> ``_d``, other characters -> ``_x<HEX>``)."""
    if _valid_avro_name(name):
        return name
    out = []
    for i, c in enumerate(name):
        ok = c.isascii() and (c.isalpha() or c == "_" or (i > 0 and c.isdigit()))
        out.append(c if ok else _sanitize_char(c))
    return "".join(out)


def _primitive_avro(t: PrimitiveType, named: set[str]) -> Any:
    def named_type(name: str, body: dict) -> Any:
        if name in named:
            return name
        named.add(name)
        return body

    n = t.name
    if isinstance(t, DecimalType):
        name = f"decimal_{t.precision}_{t.scale}"
        return named_type(name, {
            "type": "fixed", "name": name, "size": decimal_required_bytes(t.precision),
            "logicalType": "decimal", "precision": t.precision, "scale": t.scale,
        })
    if isinstance(t, FixedType):
        name = f"fixed_{t.length}"
        return named_type(name, {"type": "fixed", "name": name, "size": t.length})
    if isinstance(t, (GeometryType, GeographyType)):
        return "bytes"
    simple = {
        "boolean": "boolean", "int": "int", "long": "long", "float": "float",
        "double": "double", "string": "string", "binary": "bytes", "unknown": "null",
    }
    if n in simple:
        return simple[n]
    if n == "date":
        return {"type": "int", "logicalType": "date"}
    if n == "time":
        return {"type": "long", "logicalType": "time-micros"}
    if n in ("timestamp", "timestamptz"):
        return {"type": "long", "logicalType": "timestamp-micros",
                "adjust-to-utc": n == "timestamptz"}
    if n in ("timestamp_ns", "timestamptz_ns"):
        return {"type": "long", "logicalType": "timestamp-nanos",
                "adjust-to-utc": n == "timestamptz_ns"}
    if n == "uuid":
        return named_type("uuid_fixed", {
            "type": "fixed", "name": "uuid_fixed", "size": 16, "logicalType": "uuid"})
    raise ValidationError(f"type {t} cannot be stored in Avro")


def _option(schema: Any) -> list:
    return ["null", schema]


def _avro(t: IcebergType, record_name: str, named: set[str], names: Mapping[int, str],
          field_id: int | None) -> Any:
    if isinstance(t, StructType):
        fields = []
        for f in t.fields():
            sub_name = names.get(f.field_id, f"r{f.field_id}")
            ftype = _avro(f.type, sub_name, named, names, f.field_id)
            avro_name = sanitize_avro_name(f.name)
            entry: dict[str, Any] = {"name": avro_name}
            if f.required:
                entry["type"] = ftype
            else:
                entry["type"] = _option(ftype)
                entry["default"] = None
            if avro_name != f.name:
                entry["iceberg-field-name"] = f.name
            entry["field-id"] = f.field_id
            fields.append(entry)
        named.add(record_name)
        return {"type": "record", "name": record_name, "fields": fields}
    if isinstance(t, ListType):
        element = _avro(t.element_type, names.get(t.element_id, f"r{t.element_id}"), named,
                        names, t.element_id)
        return {"type": "array", "items": element if t.element_required else _option(element),
                "element-id": t.element_id}
    if isinstance(t, MapType):
        key = _avro(t.key_type, f"r{t.key_id}", named, names, t.key_id)
        value = _avro(t.value_type, f"r{t.value_id}", named, names, t.value_id)
        if not t.value_required:
            value = _option(value)
        if key == "string":
            return {"type": "map", "values": value, "key-id": t.key_id, "value-id": t.value_id}
        rec = f"k{t.key_id}_v{t.value_id}"
        named.add(rec)
        return {
            "type": "array",
            "items": {"type": "record", "name": rec, "fields": [
                {"name": "key", "type": key, "field-id": t.key_id},
                {"name": "value", "type": value, "field-id": t.value_id},
            ]},
            "logicalType": "map",
        }
    if isinstance(t, PrimitiveType):
        if t.name == "variant":
            named.add(record_name)
            return {"type": "record", "name": record_name, "logicalType": "variant", "fields": [
                {"name": "metadata", "type": "bytes"}, {"name": "value", "type": "bytes"}]}
        return _primitive_avro(t, named)
    raise ValidationError(f"type {t!r} cannot be stored in Avro")


def avro_schema(struct: StructType, record_name: str,
                names: Mapping[int, str] | None = None) -> dict:
    """The Avro record schema for an Iceberg struct.

    Nested records are named ``r<field id>`` unless ``names`` maps that field id to a name;
    named types (fixed, decimal, uuid) are defined once and referenced by name afterwards.
    """
    return _avro(struct, record_name, set(), names or {}, None)


def partition_avro_schema(partition_type: StructType) -> dict:
    """The ``r102`` record for a partition type (every partition field optional)."""
    return avro_schema(partition_type, f"r{PARTITION_FIELD_ID}")


def manifest_entry_avro_schema(partition_type: StructType, format_version: int) -> dict:
    return avro_schema(manifest_entry_type(partition_type, format_version), "manifest_entry")


def manifest_list_avro_schema(format_version: int) -> dict:
    return avro_schema(manifest_file_type(format_version), "manifest_file")


def iceberg_schema_json(struct: StructType) -> dict:
    """The Iceberg schema JSON of a record layout (the ``iceberg.schema`` Avro metadata key)."""
    return {"type": "struct", "schema-id": 0, "fields": [field_to_json(f) for f in struct.fields()]}
