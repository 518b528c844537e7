"""Set or clear a table's default sort order.

A retry re-applies the order on the winner's metadata only if the default sort order and the
current schema it was bound to are unchanged (the spec's ``assert-default-sort-order-id``).
"""

from __future__ import annotations

from icectl.ops.evolve_schema import EvolveResult, run_change
from icectl.spec.metadata import TableMetadata, add_sort_order
from icectl.spec.sorting import UNSORTED_ORDER, build_sort_order
from icectl.table.table import Table

__all__ = ["set_sort_order", "unset_sort_order"]


def _requirements(md: TableMetadata) -> tuple:
    return (md.default_sort_order_id, md.current_schema_id)


def set_sort_order(table: Table, text: str, *, dry_run: bool = False) -> EvolveResult:
    """Make ``text`` (``"id desc nulls last, bucket(4, cat)"``) the default order; an equal
    existing order is reused, an empty text means unsorted."""

    def change(base: TableMetadata) -> TableMetadata:
        next_id = max((o.order_id for o in base.sort_orders), default=0) + 1
        order = build_sort_order(base.schema, text, order_id=next_id) if text.strip() else UNSORTED_ORDER
        return add_sort_order(base, order)

    return run_change(table, change, _requirements, "sort order", dry_run)


def unset_sort_order(table: Table, *, dry_run: bool = False) -> EvolveResult:
    """Make the table unsorted (order id 0)."""
    return run_change(table, lambda base: add_sort_order(base, UNSORTED_ORDER), _requirements,
                      "sort order", dry_run)
