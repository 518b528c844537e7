"""Table properties (set, unset, list) and format-version upgrades.

Reserved properties (``format-version``, ``uuid``, ``current-snapshot-id`` ...) describe the
table and are never stored: setting ``format-version`` upgrades the table (never downgrades it),
the others are refused. Property changes carry no requirement, so a retry simply re-applies
them on the winner's metadata.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from icectl.errors import InvalidInput, ValidationError
from icectl.spec.result_json import JsonResult, derived
from icectl.ops.metadata.schema import EvolveResult, run_change
from icectl.spec.metadata import (
    RESERVED_PROPERTIES,
    SUPPORTED_FORMAT_VERSIONS,
    TableMetadata,
    upgrade_format_version,
    with_properties,
)
from icectl.table.table import Table

__all__ = ["set_properties", "unset_properties", "list_properties", "show_properties", "upgrade_table",
           "PropertiesChange", "PropertiesView", "FormatVersionChange"]


@dataclass(frozen=True)
class PropertiesChange(EvolveResult):
    """A properties change; its JSON view adds the format version and all properties after it."""

    format_version: int = derived(lambda r: r.after.format_version)
    properties: dict[str, str] = derived(lambda r: dict(r.after.properties))


@dataclass(frozen=True)
class FormatVersionChange(EvolveResult):
    """A format-version upgrade; its JSON view adds the version before and after."""

    previous_format_version: int = derived(lambda r: r.before.format_version)
    format_version: int = derived(lambda r: r.after.format_version)


@dataclass(frozen=True)
class PropertiesView(JsonResult):
    """A table's stored properties, in the table's order."""

    location: str
    format_version: int
    properties: dict[str, str]


def _no_requirements(md: TableMetadata) -> tuple:
    return ()


def set_properties(table: Table, updates: Mapping[str, str], *, dry_run: bool = False) -> PropertiesChange:
    if not updates:
        raise InvalidInput("give at least one KEY=VALUE")
    updates = dict(updates)
    return run_change(table, lambda base: with_properties(base, updates), _no_requirements,
                      "properties", dry_run, PropertiesChange)


def unset_properties(table: Table, keys: Iterable[str], *, dry_run: bool = False) -> PropertiesChange:
    keys = list(keys)
    if not keys:
        raise InvalidInput("give at least one property key")
    if "format-version" in keys:
        raise ValidationError("format-version cannot be removed (it is part of the table's metadata)")
    return run_change(table, lambda base: with_properties(base, None, keys), _no_requirements,
                      "properties", dry_run, PropertiesChange)


def list_properties(md: TableMetadata) -> dict[str, str]:
    """The stored properties, in the table's order."""
    return dict(md.properties)


def show_properties(table: Table) -> PropertiesView:
    """The table's properties as a result with its JSON view."""
    md = table.metadata
    return PropertiesView(table.location, md.format_version, list_properties(md))


def upgrade_table(table: Table, format_version: int, *, dry_run: bool = False) -> FormatVersionChange:
    """Raise the table's format version (1 -> 2 -> 3; skipping a version is fine)."""
    if format_version not in SUPPORTED_FORMAT_VERSIONS:
        raise InvalidInput(f"the format version must be 1, 2 or 3 (got {format_version})")

    def change(base: TableMetadata) -> TableMetadata:
        if format_version < base.format_version:
            raise ValidationError(
                f"cannot downgrade format version from v{base.format_version} to v{format_version}")
        return upgrade_format_version(base, format_version)

    return run_change(table, change, _no_requirements, "format version", dry_run, FormatVersionChange)


RESERVED = RESERVED_PROPERTIES
