"""Applying a schema update to table metadata (the part of schema evolution that knows the table).

:func:`update_table_schema` checks what the table requires of the new schema (partition and sort
sources of the current spec and order still exist, v3-only types and defaults only in v3), adds
the schema, updates the name mapping (``schema.name-mapping.default``: renamed fields keep their
old names as aliases, added fields get entries) and the per-column properties of renamed and
dropped columns, as the reference does.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping

from icectl.errors import ValidationError
from icectl.spec.metadata import TableMetadata, add_schema, with_properties
from icectl.spec.name_mapping import (
    NAME_MAPPING_PROPERTY,
    MappedField,
    NameMapping,
    mapping_from_schema,
    name_mapping_to_json,
    parse_name_mapping,
)
from icectl.spec.schema import Schema, walk_fields
from icectl.spec.schema_update import ROOT_ID, SchemaUpdate
from icectl.spec.types import MIN_FORMAT_VERSION, IcebergType, ListType, MapType, NestedField, PrimitiveType, StructType

__all__ = ["update_table_schema", "update_name_mapping", "check_schema_for_version", "COLUMN_PROPERTY_PREFIXES"]

# Properties keyed by column name that follow renames and drops (as the reference does).
COLUMN_PROPERTY_PREFIXES = (
    "write.metadata.metrics.column.",
    "write.parquet.bloom-filter-enabled.column.",
    "write.parquet.stats-enabled.column.",
)


def check_schema_for_version(schema: Schema, format_version: int) -> None:
    """Refuse types and default values the table's format version cannot hold."""
    for name, f, _ in walk_fields(schema.struct):
        if isinstance(f.type, PrimitiveType):
            need = MIN_FORMAT_VERSION.get(f.type.name, 1)
            if format_version < need:
                raise ValidationError(
                    f"column {name!r} has type {f.type}, which needs format version {need} "
                    f"(table is v{format_version}; see `icectl upgrade`)")
            if f.type.name == "unknown" and f.required:
                raise ValidationError(f"column {name!r} of type unknown must be optional")
        if format_version < 3 and (f.initial_default is not None or f.write_default is not None):
            raise ValidationError(
                f"column {name!r} has a default value, which needs format version 3 "
                f"(table is v{format_version}; see `icectl upgrade`)")


# -- name mapping -----------------------------------------------------------------------------


def _mapped_fields_for_type(t: IcebergType) -> tuple[MappedField, ...] | None:
    if not isinstance(t, (StructType, ListType, MapType)):
        return None
    holder = mapping_from_schema(Schema((NestedField(0, "x", t),)))
    return holder.fields[0].fields


def update_name_mapping(mapping: NameMapping, updated: Mapping[int, NestedField],
                        added: Mapping[int, list[int]]) -> NameMapping:
    """A mapping after a schema change (the reference's ``MappingUtil.update``).

    A field whose name changed keeps its old names and gains the new one; a name taken by a
    renamed sibling is removed from the field that had it; added fields get entries with
    their own names (nested types mapped fully).
    """

    def add_new(fields: tuple[MappedField, ...] | None, parent_id: int) -> tuple[MappedField, ...] | None:
        ids = added.get(parent_id) or []
        if not ids:
            return fields
        out = list(fields or ())
        for fid in ids:
            f = updated[fid]
            out.append(MappedField(fid, (f.name,), _mapped_fields_for_type(f.type)))
        return tuple(out)

    def visit_fields(fields: tuple[MappedField, ...]) -> tuple[MappedField, ...]:
        results = [visit_field(f) for f in fields]
        taken = {updated[f.field_id].name: f.field_id for f in results
                 if f.field_id is not None and f.field_id in updated}
        return tuple(
            MappedField(f.field_id, tuple(n for n in f.names if taken.get(n, f.field_id) == f.field_id),
                        f.fields)
            for f in results)

    def visit_field(f: MappedField) -> MappedField:
        names = list(f.names)
        upd = updated.get(f.field_id) if f.field_id is not None else None
        if upd is not None and upd.name not in names:
            names.append(upd.name)
        nested = visit_fields(f.fields) if f.fields is not None else None
        if f.field_id is not None:
            nested = add_new(nested, f.field_id)
        return MappedField(f.field_id, tuple(names), nested)

    top = visit_fields(mapping.fields)
    return NameMapping(add_new(top, ROOT_ID) or ())


def _column_properties(props: dict[str, str], deleted: list[str], renamed: dict[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in props.items():
        prefix = next((p for p in COLUMN_PROPERTY_PREFIXES if k.startswith(p)), None)
        if prefix is None:
            out[k] = v
            continue
        col = k[len(prefix):]
        if col in deleted:
            continue
        out[prefix + renamed.get(col, col)] = v
    return out


# -- table metadata ---------------------------------------------------------------------------


def update_table_schema(md: TableMetadata, update: SchemaUpdate, *,
                        timestamp_ms: int | None = None) -> TableMetadata:
    """New table metadata with the update applied (``md`` is a TableMetadata).

    Refuses a schema the table cannot take: a dropped column still used by the current
    partition spec (other than a void field) or sort order, types or defaults beyond the
    table's format version.
    """
    result = update.result()
    old = update.schema
    new = result.schema
    for pf in md.spec.fields:
        for sid in pf.all_source_ids:
            if new.find_field_or_none(sid) is None and not pf.transform.is_void:
                raise ValidationError(
                    f"cannot drop column {old.column_name(sid)!r}: it is the source of partition "
                    f"field {pf.name!r} ({pf.transform}) of the current spec; drop the partition field first")
    for sf in md.sort_order.fields:
        for sid in sf.all_source_ids:
            if new.find_field_or_none(sid) is None:
                raise ValidationError(
                    f"cannot drop column {old.column_name(sid)!r}: it is used by the current sort order; "
                    f"change the sort order first")
    for fid, upd in result.updated.items():
        before = old.find_field_or_none(fid)
        if before is not None and before.type != upd.type and before.type.name == "date":
            for spec in md.specs:
                for pf in spec.fields:
                    if fid in pf.all_source_ids and pf.transform.name not in ("year", "month", "day", "void"):
                        raise ValidationError(
                            f"cannot promote {old.column_name(fid)!r} from date to {upd.type}: partition "
                            f"field {pf.name!r} ({pf.transform}) would produce different values")
    check_schema_for_version(new, md.format_version)

    out = add_schema(md, new, timestamp_ms=timestamp_ms)
    if out.last_column_id < result.last_column_id:
        out = replace(out, last_column_id=result.last_column_id)
    if out is md:
        return md

    props = dict(out.properties)
    mapping_text = props.get(NAME_MAPPING_PROPERTY)
    if mapping_text is not None:
        try:
            mapping = parse_name_mapping(mapping_text)
            props[NAME_MAPPING_PROPERTY] = name_mapping_to_json(
                update_name_mapping(mapping, result.updated, result.added))
        except Exception:  # noqa: BLE001 - like the reference: a bad mapping does not stop the change
            pass
    deleted = [old.column_name(i) for i in result.deleted]
    added_ids = {i for ids in result.added.values() for i in ids}
    renamed = {}
    for fid in result.updated:
        if fid in added_ids:
            continue
        before_name = old.column_name(fid)
        after_name = new.column_name(fid) if new.find_field_or_none(fid) is not None else before_name
        if before_name != after_name:
            renamed[before_name] = after_name
    if deleted or renamed:
        props = _column_properties(props, deleted, renamed)
    if props != out.properties:
        removals = [k for k in out.properties if k not in props]
        changes = {k: v for k, v in props.items() if out.properties.get(k) != v}
        out = with_properties(out, changes, removals, timestamp_ms=timestamp_ms)
    return out
