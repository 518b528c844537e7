"""Row order by a sort order: ``sort_indices(data, order, schema)``.

Each sort field orders rows by its transformed value (computed on whole columns, as partition
values are) in its direction, with nulls first or last as it says and NaN above every number,
as the reference's comparators order them.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from icectl.ops.compute.arrow_values import column_by_id
from icectl.ops.compute.transforms import transform_array
from icectl.ops.compute.zorder import zorder_sort_keys
from icectl.spec.schema import Schema
from icectl.spec.sorting import NullOrder, SortDirection, SortOrder
from icectl.spec.zorder import ZOrder

__all__ = ["sort_indices", "sort_keys"]


def sort_indices(data: pa.Table, order: SortOrder, schema: Schema) -> pa.Array | None:
    """Row order of ``data`` by the sort order (None when unsorted). Each key sorts by its
    transformed value in its direction, nulls first or last as it says, NaN above all numbers.
    The sort is stable: rows with equal keys keep their order."""
    if order is None or not order.fields or data.num_rows < 2:
        return None
    keyed = sort_keys(data, order, schema)
    if keyed is None:
        return None
    return pc.sort_indices(keyed[0], sort_keys=keyed[1])


def sort_keys(data: pa.Table, order: SortOrder, schema: Schema
              ) -> tuple[pa.Table, list[tuple[str, str]]] | None:
    """The key columns of ``data`` by the sort order and the ``pyarrow.compute.sort_indices``
    keys that order them (None when the order has no key). A z-order
    (:class:`icectl.spec.zorder.ZOrder`) sorts by its interleaved values
    (:mod:`icectl.ops.compute.zorder`)."""
    if isinstance(order, ZOrder):
        return zorder_sort_keys(data, order, schema)
    cols: dict[str, pa.Array] = {}
    keys: list[tuple[str, str]] = []
    for i, sf in enumerate(order.fields):
        if sf.transform.is_void:
            continue
        arr, stype = column_by_id(data, schema, sf.source_id)
        res = transform_array(sf.transform, arr, stype)
        if isinstance(res.type, pa.BaseExtensionType):
            res = res.storage
        asc = sf.direction == SortDirection.ASC
        direction = "ascending" if asc else "descending"
        nulls_first = sf.null_order == NullOrder.NULLS_FIRST
        # per-key null placement: a null flag sorted ahead of the value
        cols[f"n{i}"] = pc.is_null(res)
        keys.append((f"n{i}", "descending" if nulls_first else "ascending"))
        if pa.types.is_floating(res.type):
            cols[f"x{i}"] = pc.fill_null(pc.is_nan(res), False)
            keys.append((f"x{i}", direction))  # NaN is the largest value
        if pa.types.is_fixed_size_binary(res.type):
            res = res.cast(pa.binary())
        cols[f"v{i}"] = res
        keys.append((f"v{i}", direction))
    if not keys:
        return None
    return pa.table(cols), keys
