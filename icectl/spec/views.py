"""Views of the table model as plain, JSON-ready data, and the text forms of its types, specs
and sort orders, shared by the operations' results and `icectl inspect`.

Every view is a dict or list of JSON scalars with kebab-case keys (the documented ``--json``
shape); the text forms read as `icectl create` takes them back. Pure: nothing here reads files.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from icectl.spec.metadata import TableMetadata
from icectl.spec.partitioning import PartitionSpec
from icectl.spec.schema import Schema, walk_fields
from icectl.spec.snapshots import Snapshot
from icectl.spec.sorting import SortOrder
from icectl.spec.types import IcebergType, ListType, MapType, StructType
from icectl.spec.values import to_json_value
from icectl.spec.wap import is_staged, staged_wap_id

__all__ = ["iso_ms", "type_string", "schema_string", "spec_string", "sort_order_string", "columns_view",
           "spec_view", "sort_order_view", "metadata_summary", "schema_view", "refs_by_snapshot",
           "snapshot_row", "partition_json", "json_value_or_text", "TOTAL_KEYS"]

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


def refs_by_snapshot(md: TableMetadata) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for name, ref in sorted(md.refs.items()):
        out.setdefault(ref.snapshot_id, []).append(name)
    return out


def snapshot_row(md: TableMetadata, s: Snapshot, refs: dict[int, list[str]] | None = None) -> dict[str, Any]:
    refs = refs_by_snapshot(md) if refs is None else refs
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
    # write-audit-publish: the id it was staged with; staged while main has not reached it
    row["wap-id"] = staged_wap_id(s)
    row["staged"] = is_staged(md, s)
    if md.format_version >= 3:
        row["first-row-id"] = s.first_row_id
        row["added-rows"] = s.added_rows
    return row


def partition_json(md: TableMetadata, spec_id: int, values: tuple) -> tuple[dict[str, Any], str]:
    """A file's partition as JSON values (Appendix D JSON form) and as a path-like string (the
    partition path's parts, shown unescaped)."""
    from icectl.spec.partition_path import partition_texts

    spec = md.specs_by_id().get(spec_id)
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
