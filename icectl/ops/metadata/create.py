"""Create a table: parse the user's schema, partitioning and sort order, write metadata v1."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from icectl.errors import CorruptMetadata, InvalidInput
from icectl.io.storage.files import FileIO, has_scheme
from icectl.spec.metadata import TableMetadata, new_table_metadata
from icectl.spec.parse import parse_partition_terms, parse_schema, parse_sort_order
from icectl.spec.partitioning import UNPARTITIONED_SPEC, build_spec
from icectl.spec.result_json import JsonResult, derived, json_field
from icectl.spec.schema import Schema
from icectl.spec.sorting import UNSORTED_ORDER, build_sort_order
from icectl.spec.types import MIN_FORMAT_VERSION, IcebergType, ListType, MapType, StructType
from icectl.table.nesting import refuse_nesting
from icectl.table.table import Table

SUPPORTED_FORMAT_VERSIONS = (1, 2, 3)


def _summary(r: "CreateResult") -> dict[str, Any]:
    from icectl.spec.views import metadata_summary

    return metadata_summary(r.metadata, r.metadata_location)


@dataclass(frozen=True)
class CreateResult(JsonResult):
    """A new table; its JSON view is the table's summary, as `icectl inspect table --json`
    shows it."""

    location: str = json_field(omit=True)
    metadata_location: str = json_field(omit=True)
    metadata: TableMetadata = json_field(omit=True)
    summary: dict[str, Any] = derived(_summary, flatten=True)


def schema_from_json_text(text: str, source: str = "schema file") -> Schema:
    """An Iceberg schema from its JSON form (ids are reassigned fresh on create)."""
    try:
        obj: Any = json.loads(text)
    except json.JSONDecodeError as e:
        raise InvalidInput(f"{source} is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    try:
        return Schema.from_json(obj)
    except CorruptMetadata as e:
        raise InvalidInput(f"{source} is not an Iceberg schema: {e}") from None


def _check_types_for_version(schema: Schema, format_version: int) -> None:
    def visit(t: IcebergType, name: str) -> None:
        if isinstance(t, (StructType, ListType, MapType)):
            for f in t.fields():
                visit(f.type, f"{name}.{f.name}" if name else f.name)
            return
        need = MIN_FORMAT_VERSION.get(getattr(t, "name", ""), 1)
        if format_version < need:
            raise InvalidInput(
                f"column {name!r} has type {t}, which needs format version {need} (table is v{format_version})"
            )

    visit(schema.struct, "")


def build_create_metadata(
    location: str,
    *,
    schema_text: str | None = None,
    schema_json: str | None = None,
    partition_text: str | None = None,
    sort_order_text: str | None = None,
    properties: dict[str, str] | None = None,
    format_version: int = 2,
) -> TableMetadata:
    """Metadata for a new table, validated; nothing is written."""
    if format_version not in SUPPORTED_FORMAT_VERSIONS:
        raise InvalidInput(f"the format version must be 1, 2 or 3 (got {format_version})")
    if (schema_text is None) == (schema_json is None):
        raise InvalidInput("give exactly one schema: as text or as Iceberg schema JSON")
    schema = parse_schema(schema_text) if schema_text is not None else schema_from_json_text(schema_json or "")
    if not schema.fields:
        raise InvalidInput("the schema has no columns")
    _check_types_for_version(schema, format_version)
    props = dict(properties or {})
    if "format-version" in props:
        raise InvalidInput("format-version is not a property: it is set as the table's format version")
    spec = UNPARTITIONED_SPEC
    if partition_text and partition_text.strip():
        spec = build_spec(schema, parse_partition_terms(partition_text))
    order = UNSORTED_ORDER
    if sort_order_text and sort_order_text.strip():
        order = build_sort_order(schema, parse_sort_order(sort_order_text))
    return new_table_metadata(schema, spec, order, location, props, format_version)


def absolute_location(location: str) -> str:
    """Plain local paths become absolute (as Spark's Hadoop catalog writes them); URLs stay."""
    if not has_scheme(location):
        return os.path.abspath(os.path.expanduser(location))
    return location.rstrip("/")


def create_table(location: str | None, *, catalog: Any = None, identifier: Any = None, **kwargs: Any) -> CreateResult:
    """Create a table at ``location``, or the table ``identifier`` of ``catalog`` (an
    ``icectl.catalog`` Catalog: it picks the location); AlreadyExists when one is there (metadata
    files of any name), ValidationError when a table is above or below it (tables never nest)."""
    if catalog is not None:
        build_create_metadata("", **kwargs)  # refuse bad input before the catalog is touched
        def build(where: str) -> Any:
            where = absolute_location(where)
            refuse_nesting(FileIO(), where)  # a catalog's table never nests in another either
            return build_create_metadata(where, **kwargs)

        table = catalog.create(identifier, build)
        return CreateResult(table.location, table.metadata_location, table.metadata)
    location = absolute_location(location or "")
    metadata = build_create_metadata(location, **kwargs)
    io = FileIO()
    refuse_nesting(io, location)
    table = Table.create(location, metadata, io)
    return CreateResult(table.location, table.metadata_location, table.metadata)
