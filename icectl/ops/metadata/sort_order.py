"""Set or clear a table's default sort order.

A retry re-applies the order on the winner's metadata only if the default sort order and the
current schema it was bound to are unchanged (the spec's ``assert-default-sort-order-id``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from icectl.ops.metadata.schema import EvolveResult, run_change
from icectl.ops.metadata.partition_spec import as_result
from icectl.spec.metadata import TableMetadata, add_sort_order
from icectl.spec.result_json import derived
from icectl.spec.sorting import UNSORTED_ORDER, build_sort_order
from icectl.table.table import Table

__all__ = ["SortOrderChange", "set_sort_order", "unset_sort_order"]


def _order_view(md: TableMetadata) -> dict[str, Any]:
    from icectl.spec.views import sort_order_string, sort_order_view

    order = sort_order_view(md.sort_order, md.schema)
    order["string"] = sort_order_string(md.sort_order, md.schema)
    return order


@dataclass(frozen=True)
class SortOrderChange(EvolveResult):
    """A sort order change; its JSON view adds the new default order."""

    previous_sort_order_id: int = derived(lambda r: r.before.default_sort_order_id)
    sort_order: dict[str, Any] = derived(lambda r: _order_view(r.after))


def _requirements(md: TableMetadata) -> tuple:
    return (md.default_sort_order_id, md.current_schema_id)


def set_sort_order(table: Table, text: str, *, dry_run: bool = False) -> SortOrderChange:
    """Make ``text`` (``"id desc nulls last, bucket(4, cat)"``) the default order; an equal
    existing order is reused, an empty text means unsorted."""

    def change(base: TableMetadata) -> TableMetadata:
        next_id = max((o.order_id for o in base.sort_orders), default=0) + 1
        order = build_sort_order(base.schema, text, order_id=next_id) if text.strip() else UNSORTED_ORDER
        return add_sort_order(base, order)

    return as_result(SortOrderChange, run_change(table, change, _requirements, "sort order", dry_run))


def unset_sort_order(table: Table, *, dry_run: bool = False) -> SortOrderChange:
    """Make the table unsorted (order id 0)."""
    return as_result(SortOrderChange, run_change(table, lambda base: add_sort_order(base, UNSORTED_ORDER),
                                                 _requirements, "sort order", dry_run))
