"""Partition spec evolution operations (add, drop, rename, replace partition fields).

One commit per change set. A retry re-runs the change on the winner's metadata only if the
default spec and last-partition-id it was based on are unchanged (the spec's
``assert-default-spec-id`` and ``assert-last-assigned-partition-id``); otherwise CommitConflict.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from icectl.ops.metadata.schema import EvolveResult, as_result, run_change
from icectl.spec.metadata import TableMetadata
from icectl.spec.result_json import derived
from icectl.spec.spec_update import SpecUpdate, update_table_spec
from icectl.table.table import Table

__all__ = ["SpecChange", "as_result", "evolve_spec", "add_partition_field", "drop_partition_field",
           "rename_partition_field", "replace_partition_field"]


def _spec_view(md: TableMetadata) -> dict[str, Any]:
    from icectl.spec.views import spec_string, spec_view

    spec = spec_view(md.spec, md.schema)
    spec["string"] = spec_string(md.spec, md.schema)
    return spec


@dataclass(frozen=True)
class SpecChange(EvolveResult):
    """A partition spec change; its JSON view adds the new default spec."""

    previous_spec_id: int = derived(lambda r: r.before.default_spec_id)
    last_partition_id: int = derived(lambda r: r.after.last_partition_id)
    spec: dict[str, Any] = derived(lambda r: _spec_view(r.after))


def spec_requirements(md: TableMetadata) -> tuple:
    return (md.default_spec_id, md.last_partition_id)


def evolve_spec(table: Table, build: Callable[[SpecUpdate], Any], *, dry_run: bool = False) -> SpecChange:
    def change(base: TableMetadata) -> TableMetadata:
        update = SpecUpdate(base)
        build(update)
        return update_table_spec(base, update)

    return run_change(table, change, spec_requirements, "partition spec", dry_run, SpecChange)


def add_partition_field(table: Table, term: str, name: str | None = None, *, dry_run: bool = False) -> SpecChange:
    return evolve_spec(table, lambda u: u.add_field(term, name), dry_run=dry_run)


def drop_partition_field(table: Table, field: str, *, dry_run: bool = False) -> SpecChange:
    return evolve_spec(table, lambda u: u.remove_field(field), dry_run=dry_run)


def rename_partition_field(table: Table, field: str, new_name: str, *, dry_run: bool = False) -> SpecChange:
    return evolve_spec(table, lambda u: u.rename_field(field, new_name), dry_run=dry_run)


def replace_partition_field(table: Table, field: str, term: str, name: str | None = None, *,
                            dry_run: bool = False) -> SpecChange:
    return evolve_spec(table, lambda u: u.replace_field(field, term, name), dry_run=dry_run)
