"""The views of `icectl inspect`: plain, JSON-ready data computed from a table.

Every function returns dicts and lists of JSON scalars with kebab-case keys (the documented
``--json`` shape); the CLI renders the same data as text. Nothing here prints. The views other
operations show too (a schema, a spec, a sort order, the table summary, a file's partition) are
:mod:`icectl.spec.views`; a snapshot's manifests are read by :mod:`icectl.table.commit.snapshot_manifests`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from icectl.spec.metadata import TableMetadata, select_snapshot
from icectl.spec.reserved import DATA, EQUALITY_DELETES, MANIFEST_DELETES, POSITION_DELETES
from icectl.spec.snapshots import Snapshot, ancestor_ids
from icectl.spec.views import (iso_ms, metadata_summary, partition_json, refs_by_snapshot, schema_view,
                               snapshot_row, spec_string, spec_view)
from icectl.ops.read.inspect_all import summary_bound
from icectl.table.commit.snapshot_manifests import live_entries, read_manifests

if TYPE_CHECKING:
    from icectl.io.storage.files import FileIO
    from icectl.spec.manifests import ManifestFile

FILE_CONTENT_NAMES = {DATA: "data", POSITION_DELETES: "position-deletes", EQUALITY_DELETES: "equality-deletes"}


def partitions_view(md: TableMetadata) -> dict[str, Any]:
    schema = md.schema
    specs = []
    for spec in md.specs:
        v = spec_view(spec, schema)
        v["default"] = spec.spec_id == md.default_spec_id
        v["string"] = spec_string(spec, schema)
        specs.append(v)
    return {"default-spec-id": md.default_spec_id, "last-partition-id": md.last_partition_id, "specs": specs}


def snapshots_view(md: TableMetadata) -> list[dict[str, Any]]:
    refs = refs_by_snapshot(md)
    return [snapshot_row(md, s, refs) for s in sorted(md.snapshots, key=lambda s: (s.timestamp_ms, s.sequence_number))]


def manifest_row(md: TableMetadata, m: ManifestFile) -> dict[str, Any]:
    row: dict[str, Any] = {
        "path": m.manifest_path,
        "length": m.manifest_length,
        "content": "deletes" if m.content == MANIFEST_DELETES else "data",
        "partition-spec-id": m.partition_spec_id,
        "sequence-number": m.sequence_number,
        "min-sequence-number": m.min_sequence_number,
        "added-snapshot-id": m.added_snapshot_id,
        "added-files-count": m.added_files_count,
        "existing-files-count": m.existing_files_count,
        "deleted-files-count": m.deleted_files_count,
        "added-rows-count": m.added_rows_count,
        "existing-rows-count": m.existing_rows_count,
        "deleted-rows-count": m.deleted_rows_count,
    }
    summaries = []
    spec = md.specs_by_id().get(m.partition_spec_id)
    if m.partitions is not None and spec is not None:
        ptype = spec.partition_type(md.schema)
        for field, pf, fs in zip(spec.fields, ptype.fields(), m.partitions):
            src = md.schema.find_field_or_none(field.source_id)
            src_type = src.type if src is not None else None
            summaries.append({
                "field": pf.name,
                "contains-null": fs.contains_null,
                "contains-nan": fs.contains_nan,
                "lower-bound": summary_bound(pf.type, fs.lower_bound, field.transform, src_type),
                "upper-bound": summary_bound(pf.type, fs.upper_bound, field.transform, src_type),
            })
    row["partition-summaries"] = summaries
    if md.format_version >= 3:
        row["first-row-id"] = m.first_row_id
    return row


def manifests_view(io: FileIO, md: TableMetadata, snapshot: Snapshot | None) -> list[dict[str, Any]]:
    return [manifest_row(md, m) for m in read_manifests(io, md, snapshot)]


def snapshot_view(io: FileIO, md: TableMetadata, snapshot: Snapshot) -> dict[str, Any]:
    row = snapshot_row(md, snapshot)
    row["manifests"] = manifests_view(io, md, snapshot)
    return row


def history_view(md: TableMetadata) -> list[dict[str, Any]]:
    current = md.current_snapshot()
    ancestors = set(ancestor_ids(current.snapshot_id, md.snapshot_by_id)) if current else set()
    out = []
    for e in md.snapshot_log:
        s = md.snapshot_by_id(e.snapshot_id)
        out.append({
            "made-current-at-ms": e.timestamp_ms,
            "made-current-at": iso_ms(e.timestamp_ms),
            "snapshot-id": e.snapshot_id,
            "parent-id": s.parent_snapshot_id if s else None,
            "is-current-ancestor": e.snapshot_id in ancestors,
        })
    return out


def refs_view(md: TableMetadata) -> list[dict[str, Any]]:
    return [
        {"name": name, "type": ref.type, "snapshot-id": ref.snapshot_id,
         "max-ref-age-ms": ref.max_ref_age_ms, "min-snapshots-to-keep": ref.min_snapshots_to_keep,
         "max-snapshot-age-ms": ref.max_snapshot_age_ms}
        for name, ref in sorted(md.refs.items(), key=lambda kv: (kv[0] != "main", kv[0]))
    ]


def metadata_log_view(md: TableMetadata, metadata_location: str | None) -> list[dict[str, Any]]:
    rows = [{"timestamp-ms": e.timestamp_ms, "timestamp": iso_ms(e.timestamp_ms), "metadata-file": e.metadata_file,
             "current": False} for e in md.metadata_log]
    rows.append({"timestamp-ms": md.last_updated_ms, "timestamp": iso_ms(md.last_updated_ms),
                 "metadata-file": metadata_location, "current": True})
    return rows


def files_view(io: FileIO, md: TableMetadata, snapshot: Snapshot | None, content: str | None = None) -> list[dict[str, Any]]:
    """Live data and delete files of a snapshot, as Spark's ``files`` metadata table lists them."""
    rows = []
    for m, e in live_entries(io, md, snapshot):
        f = e.data_file
        kind = FILE_CONTENT_NAMES.get(f.content, str(f.content))
        if content is not None and content != ("data" if f.content == DATA else "deletes") and content != kind:
            continue
        pjson, ppath = partition_json(md, f.spec_id, f.partition)
        row: dict[str, Any] = {
            "content": kind,
            "file-path": f.file_path,
            "file-format": f.file_format,
            "spec-id": f.spec_id,
            "partition": pjson,
            "partition-path": ppath,
            "record-count": f.record_count,
            "file-size-in-bytes": f.file_size_in_bytes,
            "status": e.status_name,
            "snapshot-id": e.snapshot_id,
            "data-sequence-number": e.sequence_number,
            "file-sequence-number": e.file_sequence_number,
            "manifest": m.manifest_path,
        }
        if f.content == EQUALITY_DELETES:
            row["equality-ids"] = list(f.equality_ids or ())
        if f.referenced_data_file is not None:
            row["referenced-data-file"] = f.referenced_data_file
        if f.content_offset is not None:
            row["content-offset"] = f.content_offset
            row["content-size-in-bytes"] = f.content_size_in_bytes
        if md.format_version >= 3 and f.content == DATA:
            row["first-row-id"] = f.first_row_id
        rows.append(row)
    return rows


# re-exported for the CLI's text rendering
__all__ = [
    "metadata_summary", "schema_view", "partitions_view", "snapshots_view", "snapshot_view", "select_snapshot",
    "manifests_view", "history_view", "refs_view", "metadata_log_view", "files_view", "iso_ms",
    "FILE_CONTENT_NAMES",
]
