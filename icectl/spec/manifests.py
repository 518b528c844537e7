"""Manifest lists, manifests and their entries (spec "Manifests", "Manifest Lists").

The model is pure: frozen dataclasses, the inheritance rules both manifest readers apply, and
manifest summaries. The record layouts and their Avro schemas live in :mod:`icectl.spec.manifest_layouts`
(re-exported here); reading and writing the Avro container files in :mod:`icectl.io.manifest.records`.

Values inside a ``DataFile`` partition tuple use the internal representation: int/long/date/time/
timestamp* as ``int`` (days, microseconds or nanoseconds), float/double as ``float``, string as
``str``, binary/fixed as ``bytes``, decimal as ``decimal.Decimal``, uuid as ``uuid.UUID``,
boolean as ``bool``, and ``None`` for null.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Sequence

from icectl.spec.manifest_layouts import (  # re-exported: the record layouts of this model
    DATA_FILE_FIELD_ID,
    PARTITION_FIELD_ID,
    avro_schema,
    data_file_type,
    decimal_required_bytes,
    field_summary_type,
    iceberg_schema_json,
    manifest_entry_avro_schema,
    manifest_entry_type,
    manifest_file_type,
    manifest_list_avro_schema,
    partition_avro_schema,
    sanitize_avro_name,
)
from icectl.spec.types import IcebergType, PrimitiveType, StructType

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
    "sanitize_avro_name", "PARTITION_FIELD_ID", "DATA_FILE_FIELD_ID",
    # helpers
    "inherit_sequence_numbers", "inherit_columns", "InheritedColumns",
    "assign_manifest_first_row_ids", "summarize_columns",
    "partition_summaries", "content_name", "content_from_name", "entry_key",
]

# -- enumerations (plain ints: cheap to build 200k times) ------------------------------------

# the codes' one home is spec/reserved.py; re-exported here
from icectl.spec.reserved import ADDED, DATA, DELETED, EXISTING  # noqa: E402
from icectl.spec.reserved import EQUALITY_DELETES, MANIFEST_DATA, MANIFEST_DELETES, POSITION_DELETES  # noqa: E402

_FILE_CONTENT_NAMES = {DATA: "data", POSITION_DELETES: "position_deletes",
                       EQUALITY_DELETES: "equality_deletes"}

_STATUS_NAMES = {EXISTING: "existing", ADDED: "added", DELETED: "deleted"}

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
    in their single-value binary form. ``spec_id`` and ``manifest_path`` are not stored in the
    file: readers set them from the manifest that listed the file.
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
    manifest_path: str | None = field(default=None, compare=False, hash=False, repr=False)

    @property
    def is_data(self) -> bool:
        return self.content == DATA

    @property
    def is_deletion_vector(self) -> bool:
        """A v3 deletion vector: a position delete stored as a Puffin blob."""
        return self.content == POSITION_DELETES and self.file_format.upper() == "PUFFIN"

    @property
    def counted_size_in_bytes(self) -> int:
        """The size snapshot summaries count for it: a deletion vector's blob, else the file."""
        if self.is_deletion_vector and self.content_size_in_bytes is not None:
            return self.content_size_in_bytes
        return self.file_size_in_bytes

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


def _sort_key(t: IcebergType) -> Callable[[Any], Any] | None:
    """The key ordering partition values of type ``t`` as the reference does, or None when the
    values' own order is it."""
    if isinstance(t, PrimitiveType) and t.name in ("float", "double"):
        # -0.0 sorts before +0.0 (IEEE 754 totalOrder, as Java's Double.compare).
        return lambda v: (v, math.copysign(1.0, v))
    if isinstance(t, PrimitiveType) and t.name == "uuid":
        return lambda v: v.bytes
    return None


def partition_summaries(
    partition_type: StructType,
    partitions: Iterable[tuple],
    to_bytes: Callable[[IcebergType, Any], bytes],
) -> tuple[FieldSummary, ...]:
    """Field summaries over partition tuples: null/NaN flags and serialized min/max (of equal
    values, the first seen).

    ``to_bytes(type, value)`` is the single-value serializer (spec Appendix D). Each field is
    summarized as one column (``min``/``max`` over its values): a merge summarizes 200,000
    entries.
    """
    parts = partitions if isinstance(partitions, list) else list(partitions)
    out = []
    for i, f in enumerate(partition_type.fields()):
        col = [p[i] for p in parts]
        vals = [v for v in col if v is not None]
        has_null = len(vals) < len(col)
        has_nan = False
        if isinstance(f.type, PrimitiveType) and f.type.name in ("float", "double"):
            numbers = [v for v in vals if v == v]
            has_nan = len(numbers) < len(vals)
            vals = numbers
        lo = hi = None
        if vals:
            key = _sort_key(f.type)
            lo_v, hi_v = (min(vals), max(vals)) if key is None else (min(vals, key=key),
                                                                      max(vals, key=key))
            lo, hi = to_bytes(f.type, lo_v), to_bytes(f.type, hi_v)
        out.append(FieldSummary(has_null, has_nan, lo, hi))
    return tuple(out)


def summarize_columns(
    status: Sequence[int],
    record_count: Sequence[int],
    sequence_number: Sequence[int | None],
    partitions: Sequence[tuple],
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
    """The manifest list entry describing a manifest whose entries have these statuses, record
    counts, data sequence numbers and partition tuples.

    ``min_sequence_number`` is the least explicit data sequence number of the live entries, as
    the reference's manifest writer computes it (entries still to inherit the new snapshot's
    number cannot be lower); with none it is left ``None`` for the manifest list writer. Partition summaries count all entries, deleted ones included, as the
    reference does; they need ``partition_type`` and ``to_bytes``.
    """
    counts = [0, 0, 0]
    rows = [0, 0, 0]
    min_seq: int | None = None
    for st, rc, seq in zip(status, record_count, sequence_number):
        counts[st] += 1
        rows[st] += rc
        if st != DELETED and seq is not None:
            if min_seq is None or seq < min_seq:
                min_seq = seq
    summaries = None
    if partition_type is not None:
        if to_bytes is None:
            raise ValueError("partition summaries need a single-value serializer")
        summaries = partition_summaries(partition_type, partitions, to_bytes)
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


def entry_key(f: DataFile) -> tuple:
    """What identifies a live file entry (to remove it): its content kind and path, and the
    offset of its blob, as deletion vectors share a Puffin file."""
    return (f.content, f.file_path, f.content_offset)
