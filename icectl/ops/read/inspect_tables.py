"""The metadata-table views of `icectl inspect`, shaped like the reference's metadata tables.

``partitions`` (per partition value: file and record counts, sizes, delete counts, last update),
``entries`` (every manifest entry of a snapshot, deleted ones included), ``all-files`` (live
files of every manifest reachable from any snapshot, each manifest read once) and
``position-deletes`` (the rows of a snapshot's position delete files and deletion vectors).
Every function returns JSON-ready rows with kebab-case keys; nothing here prints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from icectl.spec.metadata import TableMetadata
from icectl.spec.partitioning import unified_partition_type, unified_partition_values
from icectl.spec.reserved import DATA, POSITION_DELETES
from icectl.spec.snapshots import Snapshot
from icectl.spec.views import iso_ms, json_value_or_text
from icectl.table.commit.snapshot_manifests import read_manifests, snapshot_entries

if TYPE_CHECKING:
    from icectl.io.storage.files import FileIO
    from icectl.spec.manifests import DataFile


def unified_partition_fields(md: TableMetadata) -> list[tuple[int, str, Any]]:
    """(field id, name, type) of the reference's unified partition type
    (:func:`icectl.spec.partitioning.unified_partition_type`)."""
    return [(f.field_id, f.name, f.type) for f in unified_partition_type(md.specs, md.schema).fields()]


def _unified_partition(md: TableMetadata, unified: list[tuple[int, str, Any]], spec_id: int,
                       values: tuple) -> dict[str, Any]:
    by_id = unified_partition_values(md.specs_by_id().get(spec_id), values)
    out: dict[str, Any] = {}
    for fid, name, t in unified:
        v = by_id.get(fid)
        out[name] = None if v is None else json_value_or_text(t, v)
    return out


def partitions_table(io: FileIO, md: TableMetadata, snapshot: Snapshot | None) -> list[dict[str, Any]]:
    """The reference's ``partitions`` table: live files of a snapshot grouped by partition."""
    import json

    unified = unified_partition_fields(md)
    groups: dict[str, dict[str, Any]] = {}
    for _, e in snapshot_entries(io, md, snapshot):
        if not e.is_live:
            continue
        f = e.data_file
        part = _unified_partition(md, unified, f.spec_id, f.partition)
        g = groups.setdefault(json.dumps(part, sort_keys=True), {
            "partition": part, "spec-id": None, "record-count": 0, "file-count": 0,
            "total-data-file-size-in-bytes": 0, "position-delete-record-count": 0,
            "position-delete-file-count": 0, "equality-delete-record-count": 0,
            "equality-delete-file-count": 0, "last-updated-at-ms": None, "last-updated-at": None,
            "last-updated-snapshot-id": None})
        added = md.snapshot_by_id(e.snapshot_id) if e.snapshot_id is not None else None
        if added is not None and (g["last-updated-at-ms"] is None or added.timestamp_ms > g["last-updated-at-ms"]):
            g["last-updated-at-ms"] = added.timestamp_ms
            g["last-updated-at"] = iso_ms(added.timestamp_ms)
            g["last-updated-snapshot-id"] = added.snapshot_id
        if f.content == DATA:
            g["record-count"] += f.record_count
            g["file-count"] += 1
            g["spec-id"] = f.spec_id
            g["total-data-file-size-in-bytes"] += f.file_size_in_bytes
        elif f.content == POSITION_DELETES:
            g["position-delete-record-count"] += f.record_count
            g["position-delete-file-count"] += 1
        else:
            g["equality-delete-record-count"] += f.record_count
            g["equality-delete-file-count"] += 1
    rows = list(groups.values())
    if not unified:
        for r in rows:
            del r["partition"]
    return rows


def _counts(m: dict[int, int] | None) -> dict[str, int] | None:
    return None if m is None else {str(k): v for k, v in sorted(m.items())}


def _bounds(m: dict[int, bytes] | None) -> dict[str, str] | None:
    return None if m is None else {str(k): v.hex() for k, v in sorted(m.items())}


def data_file_view(md: TableMetadata, f: DataFile, unified: list[tuple[int, str, Any]]) -> dict[str, Any]:
    """A manifest entry's data_file as the reference's ``entries`` table shows it (binary
    bounds as hex; the partition over the fields of every spec, as in ``partitions``)."""
    pjson = _unified_partition(md, unified, f.spec_id, f.partition)
    return {
        "content": f.content,
        "file-path": f.file_path,
        "file-format": f.file_format,
        "spec-id": f.spec_id,
        "partition": pjson,
        "record-count": f.record_count,
        "file-size-in-bytes": f.file_size_in_bytes,
        "column-sizes": _counts(f.column_sizes),
        "value-counts": _counts(f.value_counts),
        "null-value-counts": _counts(f.null_value_counts),
        "nan-value-counts": _counts(f.nan_value_counts),
        "lower-bounds": _bounds(f.lower_bounds),
        "upper-bounds": _bounds(f.upper_bounds),
        "key-metadata": None if f.key_metadata is None else f.key_metadata.hex(),
        "split-offsets": None if f.split_offsets is None else list(f.split_offsets),
        "equality-ids": None if f.equality_ids is None else list(f.equality_ids),
        "sort-order-id": f.sort_order_id,
        "first-row-id": f.first_row_id,
        "referenced-data-file": f.referenced_data_file,
        "content-offset": f.content_offset,
        "content-size-in-bytes": f.content_size_in_bytes,
    }


def entries_table(io: FileIO, md: TableMetadata, snapshot: Snapshot | None) -> list[dict[str, Any]]:
    """The reference's ``entries`` table: every entry of a snapshot's manifests (status 0
    existing, 1 added, 2 deleted) with its sequence numbers and data file."""
    unified = unified_partition_fields(md)
    return [
        {"status": e.status, "status-name": e.status_name, "snapshot-id": e.snapshot_id,
         "sequence-number": e.sequence_number, "file-sequence-number": e.file_sequence_number,
         "manifest": m.manifest_path, "data-file": data_file_view(md, e.data_file, unified)}
        for m, e in snapshot_entries(io, md, snapshot, stats=True)
    ]


def all_files_table(io: FileIO, md: TableMetadata) -> list[dict[str, Any]]:
    """The reference's ``all_files`` table: the live files of every manifest reachable from any
    snapshot, each manifest read once (a file listed by two manifests appears twice)."""
    from icectl.io.manifest.records import load_manifest

    unified = unified_partition_fields(md)
    seen: set[str] = set()
    rows = []
    for s in sorted(md.snapshots, key=lambda s: (s.sequence_number, s.timestamp_ms)):
        for m in read_manifests(io, md, s):
            if m.manifest_path in seen:
                continue
            seen.add(m.manifest_path)
            for e in load_manifest(io, m, include_stats=True):
                if e.is_live:
                    row = data_file_view(md, e.data_file, unified)
                    row["manifest"] = m.manifest_path
                    rows.append(row)
    return rows


def position_deletes_table(io: FileIO, md: TableMetadata, snapshot: Snapshot | None) -> list[dict[str, Any]]:
    """The reference's ``position_deletes`` table (without its ``row`` column): one row per
    deleted position of every live position delete file and deletion vector of a snapshot."""
    from icectl.io.formats.puffin import read_deletion_vector

    unified = unified_partition_fields(md)
    rows = []
    for _, e in snapshot_entries(io, md, snapshot):
        f = e.data_file
        if not e.is_live or f.content != POSITION_DELETES:
            continue
        pjson = _unified_partition(md, unified, f.spec_id, f.partition)
        if f.content_offset is not None or str(f.file_format).upper() == "PUFFIN":
            pairs = [(f.referenced_data_file, p) for p in read_deletion_vector(
                io, f.file_path, f.content_offset, f.content_size_in_bytes)]
        else:
            pairs = _parquet_positions(io, f.file_path)
        for path, pos in pairs:
            rows.append({"file-path": path, "pos": pos, "partition": pjson, "spec-id": f.spec_id,
                         "delete-file-path": f.file_path})
    return rows


def _parquet_positions(io: FileIO, path: str) -> list[tuple[str, int]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from icectl.errors import CorruptMetadata, StorageError
    from icectl.ops.compute.arrow_values import arrow_owned

    try:
        data = io.read(path)
    except OSError as e:
        raise StorageError(f"cannot read position delete file {path}: {e}") from e
    try:
        table = pq.read_table(pa.BufferReader(arrow_owned(data)), columns=["file_path", "pos"])
    except (pa.ArrowException, KeyError) as e:
        raise CorruptMetadata(f"position delete file {path} is unreadable: {e}") from e
    return list(zip(table.column(0).to_pylist(), table.column(1).to_pylist()))
