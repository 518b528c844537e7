"""The views of `icectl inspect`: plain, JSON-ready data computed from a table.

Every function returns dicts and lists of JSON scalars with kebab-case keys (the documented
``--json`` shape); the CLI renders the same data as text. Nothing here prints.
"""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING, Any, Iterable

from icectl.spec.metadata import TableMetadata, select_snapshot
from icectl.spec.partitioning import PartitionSpec
from icectl.spec.reserved import DATA, EQUALITY_DELETES, MANIFEST_DELETES, POSITION_DELETES
from icectl.spec.schema import Schema, walk_fields
from icectl.spec.snapshots import Snapshot, ancestor_ids
from icectl.spec.sorting import SortOrder
from icectl.spec.types import IcebergType, ListType, MapType, NestedField, PrimitiveType, StructType
from icectl.spec.values import from_bytes, to_human, to_json_value

if TYPE_CHECKING:  # manifests are read only by the views that need them (start-up time)
    from icectl.io.files import FileIO
    from icectl.spec.manifests import ManifestEntry, ManifestFile

FILE_CONTENT_NAMES = {DATA: "data", POSITION_DELETES: "position-deletes", EQUALITY_DELETES: "equality-deletes"}

TOTAL_KEYS = (
    "total-records",
    "total-data-files",
    "total-delete-files",
    "total-files-size",
    "total-position-deletes",
    "total-equality-deletes",
)


def iso_ms(ms: int | None) -> str | None:
    if ms is None:
        return None
    return _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.timezone.utc).isoformat(timespec="milliseconds")


# -- strings a user can read (and feed back to `icectl create`) --------------------------------


def type_string(t: IcebergType) -> str:
    if isinstance(t, StructType):
        inner = ", ".join(f"{f.name}: {type_string(f.type)}{'' if not f.required else ' not null'}" for f in t.fields())
        return f"struct<{inner}>"
    if isinstance(t, ListType):
        return f"list<{type_string(t.element_type)}{' not null' if t.element_required else ''}>"
    if isinstance(t, MapType):
        return f"map<{type_string(t.key_type)}, {type_string(t.value_type)}{' not null' if t.value_required else ''}>"
    return str(t)


def schema_string(schema: Schema) -> str:
    return ", ".join(f"{f.name} {type_string(f.type)}{' not null' if f.required else ''}" for f in schema.fields)


def _source_name(schema: Schema, source_id: int) -> str:
    f = schema.find_field_or_none(source_id)
    return schema.column_name(source_id) if f is not None else f"<dropped column {source_id}>"


def spec_string(spec: PartitionSpec, schema: Schema) -> str:
    if not spec.fields:
        return "unpartitioned"
    return ", ".join(f"{_transform_call(str(f.transform), _source_name(schema, f.source_id))} AS {f.name}"
                     for f in spec.fields)


def _transform_call(transform: str, column: str) -> str:
    if transform == "identity":
        return column
    if "[" in transform:
        name, arg = transform.rstrip("]").split("[", 1)
        return f"{name}({arg}, {column})"
    return f"{transform}({column})"


def sort_order_string(order: SortOrder, schema: Schema) -> str:
    if order.is_unsorted():
        return "unsorted"
    parts = []
    for f in order.fields:
        term = _transform_call(str(f.transform), _source_name(schema, f.source_id))
        parts.append(f"{term} {f.direction.value} {f.null_order.value.replace('-', ' ')}")
    return ", ".join(parts)


# -- views ---------------------------------------------------------------------------------------


def columns_view(schema: Schema) -> list[dict[str, Any]]:
    return [
        {"id": f.field_id, "name": name, "type": type_string(f.type), "required": f.required, "doc": f.doc}
        for name, f, _ in walk_fields(schema.struct)
    ]


def spec_view(spec: PartitionSpec, schema: Schema) -> dict[str, Any]:
    return {
        "spec-id": spec.spec_id,
        "fields": [
            {"field-id": f.field_id, "name": f.name, "source-id": f.source_id,
             "source-column": _source_name(schema, f.source_id), "transform": str(f.transform)}
            for f in spec.fields
        ],
    }


def sort_order_view(order: SortOrder, schema: Schema) -> dict[str, Any]:
    return {
        "order-id": order.order_id,
        "fields": [
            {"source-id": f.source_id, "source-column": _source_name(schema, f.source_id),
             "transform": str(f.transform), "direction": f.direction.value, "null-order": f.null_order.value}
            for f in order.fields
        ],
    }


def _totals(snapshot: Snapshot | None) -> dict[str, int | None]:
    summary = (snapshot.summary or {}) if snapshot else {}
    out: dict[str, int | None] = {}
    for k in TOTAL_KEYS:
        v = summary.get(k)
        try:
            out[k] = int(v) if v is not None else (0 if snapshot is None else None)
        except ValueError:
            out[k] = None
    return out


def metadata_summary(md: TableMetadata, metadata_location: str | None) -> dict[str, Any]:
    """The `inspect table` view."""
    schema = md.schema
    spec = md.spec
    order = md.sort_order
    current = md.current_snapshot()
    return {
        "location": md.location,
        "metadata-file": metadata_location,
        "table-uuid": md.table_uuid,
        "format-version": md.format_version,
        "last-updated-ms": md.last_updated_ms,
        "last-updated": iso_ms(md.last_updated_ms),
        "last-sequence-number": md.last_sequence_number,
        "next-row-id": md.next_row_id,
        "current-snapshot-id": current.snapshot_id if current else None,
        "current-snapshot": snapshot_row(md, current) if current else None,
        "snapshot-count": len(md.snapshots),
        "refs": sorted(md.refs),
        "current-schema-id": md.current_schema_id,
        "schema": columns_view(schema),
        "schema-string": schema_string(schema),
        "identifier-fields": schema.identifier_field_names(),
        "default-spec-id": md.default_spec_id,
        "partition-spec": spec_view(spec, schema)["fields"],
        "partition-spec-string": spec_string(spec, schema),
        "default-sort-order-id": md.default_sort_order_id,
        "sort-order": sort_order_view(order, schema)["fields"],
        "sort-order-string": sort_order_string(order, schema),
        "properties": dict(sorted(md.properties.items())),
        "totals": _totals(current),
    }


def schema_view(md: TableMetadata, schema_id: int | None = None) -> dict[str, Any]:
    schema = md.schema if schema_id is None else md.schema_by_id(schema_id)
    return {
        "schema-id": schema.schema_id,
        "current": schema.schema_id == md.current_schema_id,
        "identifier-fields": schema.identifier_field_names(),
        "columns": columns_view(schema),
        "schema-string": schema_string(schema),
        "json": schema.to_json(),
    }


def partitions_view(md: TableMetadata) -> dict[str, Any]:
    schema = md.schema
    specs = []
    for spec in md.specs:
        v = spec_view(spec, schema)
        v["default"] = spec.spec_id == md.default_spec_id
        v["string"] = spec_string(spec, schema)
        specs.append(v)
    return {"default-spec-id": md.default_spec_id, "last-partition-id": md.last_partition_id, "specs": specs}


def _refs_by_snapshot(md: TableMetadata) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for name, ref in sorted(md.refs.items()):
        out.setdefault(ref.snapshot_id, []).append(name)
    return out


def snapshot_row(md: TableMetadata, s: Snapshot, refs: dict[int, list[str]] | None = None) -> dict[str, Any]:
    refs = _refs_by_snapshot(md) if refs is None else refs
    row: dict[str, Any] = {
        "snapshot-id": s.snapshot_id,
        "parent-snapshot-id": s.parent_snapshot_id,
        "sequence-number": s.sequence_number,
        "timestamp-ms": s.timestamp_ms,
        "timestamp": iso_ms(s.timestamp_ms),
        "operation": s.operation,
        "schema-id": s.schema_id,
        "manifest-list": s.manifest_list,
        "refs": refs.get(s.snapshot_id, []),
        # the operation is a field of its own, as in the reference's `snapshots` table
        "summary": {k: v for k, v in (s.summary or {}).items() if k != "operation"},
    }
    if md.format_version >= 3:
        row["first-row-id"] = s.first_row_id
        row["added-rows"] = s.added_rows
    return row


def snapshots_view(md: TableMetadata) -> list[dict[str, Any]]:
    refs = _refs_by_snapshot(md)
    return [snapshot_row(md, s, refs) for s in sorted(md.snapshots, key=lambda s: (s.timestamp_ms, s.sequence_number))]


def read_manifests(io: FileIO, md: TableMetadata, snapshot: Snapshot | None) -> list[ManifestFile]:
    from icectl.io.avro import load_manifest_list  # not on the path of metadata-only views
    from icectl.spec.manifests import ManifestFile

    if snapshot is None:
        return []
    if snapshot.manifest_list:
        return load_manifest_list(io, snapshot.manifest_list, md.format_version)
    if snapshot.manifests:  # v1 snapshots may list manifests inline (no list file, no counts)
        return [ManifestFile(manifest_path=p, manifest_length=io.info(p).size, partition_spec_id=_spec_of(io, p),
                             added_snapshot_id=snapshot.snapshot_id) for p in snapshot.manifests]
    return []


def _spec_of(io: FileIO, path: str) -> int:
    from icectl.io.avro import read_avro_metadata

    return int(read_avro_metadata(io.read(path)).get("partition-spec-id", 0))


def _summary_value(t: IcebergType, b: bytes | None, transform: Any = None,
                   source_type: IcebergType | None = None) -> str | None:
    """A partition summary bound as text. Like the reference's ``manifests`` table, the
    transform renders it (a year bound reads ``2024``, an hour ``2024-01-02-10``, and a missing
    bound - all values null - reads ``null``, as the transform renders a null)."""
    if b is None:
        return transform.to_human_string(None, source_type) if transform is not None else None
    try:
        value = from_bytes(t, b)
        if transform is not None:
            return transform.to_human_string(value, source_type)
        return to_human(t, value)
    except Exception:  # noqa: BLE001 - an unreadable bound is shown raw, never fatal
        return b.hex()


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
    spec = _spec_or_none(md, m.partition_spec_id)
    if m.partitions is not None and spec is not None:
        ptype = spec.partition_type(md.schema)
        for field, pf, fs in zip(spec.fields, ptype.fields(), m.partitions):
            src = md.schema.find_field_or_none(field.source_id)
            src_type = src.type if src is not None else None
            summaries.append({
                "field": pf.name,
                "contains-null": fs.contains_null,
                "contains-nan": fs.contains_nan,
                "lower-bound": _summary_value(pf.type, fs.lower_bound, field.transform, src_type),
                "upper-bound": _summary_value(pf.type, fs.upper_bound, field.transform, src_type),
            })
    row["partition-summaries"] = summaries
    if md.format_version >= 3:
        row["first-row-id"] = m.first_row_id
    return row


def _spec_or_none(md: TableMetadata, spec_id: int) -> PartitionSpec | None:
    try:
        return md.spec_by_id(spec_id)
    except Exception:  # noqa: BLE001
        return None


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


def snapshot_entries(io: FileIO, md: TableMetadata, snapshot: Snapshot | None, *,
                     stats: bool = False) -> Iterable[tuple[ManifestFile, ManifestEntry]]:
    """Every entry of every manifest of a snapshot, with its manifest; column metrics only
    with ``stats``."""
    from icectl.io.avro import load_manifest

    for m in read_manifests(io, md, snapshot):
        for e in load_manifest(io, m, include_stats=stats):
            yield m, e


def live_entries(io: FileIO, md: TableMetadata, snapshot: Snapshot | None) -> Iterable[tuple[ManifestFile, ManifestEntry]]:
    from icectl.spec.manifests import DELETED

    return ((m, e) for m, e in snapshot_entries(io, md, snapshot) if e.status != DELETED)


def partition_json(md: TableMetadata, spec_id: int, values: tuple) -> tuple[dict[str, Any], str]:
    """A file's partition as JSON values (Appendix D JSON form) and as a path-like string (the
    partition path's parts, shown unescaped)."""
    from icectl.spec.partition_path import partition_texts

    spec = _spec_or_none(md, spec_id)
    if spec is None or not spec.fields:
        return {}, ""
    schema = md.schema
    ptype = spec.partition_type(schema)
    out: dict[str, Any] = {}
    for pf, tf, v in zip(spec.fields, ptype.fields(), values):
        out[pf.name] = None if v is None else json_value_or_text(tf.type, v)
    return out, "/".join(f"{name}={human}" for name, human in partition_texts(spec, schema, values))


def json_value_or_text(t: IcebergType, v: Any) -> Any:
    """A value's JSON single-value form (Appendix D), or its text when it has none."""
    try:
        return to_json_value(t, v)
    except Exception:  # noqa: BLE001
        return str(v)


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
    "NestedField", "PrimitiveType",
]
