"""Rows split by partition and sorted: what every writer does before writing files.

``partitioned_batches(data, schema, spec, order)`` takes rows already in the schema's Arrow
form (see :func:`icectl.ops.compute.conform.conform_to_schema`) and returns one
:class:`PartitionBatch` per partition: its partition tuple (icectl's internal values, one per
spec field, as manifests hold them) and its rows ordered by the sort order. Batches come in
partition-tuple order (nulls first), so files are written in a stable order. Data writers,
delete-file writers and compaction all go through here; partition values are computed on whole
columns by :mod:`icectl.ops.compute.transforms`.
"""

from __future__ import annotations

import math
import uuid as _uuid
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icectl.ops.compute.arrow_values import column_by_id, internal_values
from icectl.ops.compute.fit import DoesNotFit
from icectl.ops.compute.sort import sort_indices
from icectl.ops.compute.transforms import transform_array
from icectl.spec.partition_identity import float_key
from icectl.spec.partitioning import PartitionSpec
from icectl.spec.schema import Schema
from icectl.spec.sorting import SortOrder

__all__ = ["PartitionBatch", "partitioned_batches", "partition_groups", "partition_sort_key"]


@dataclass(frozen=True)
class PartitionBatch:
    """The rows of one partition, sorted by the sort order."""

    partition: tuple[Any, ...]
    rows: pa.Table


def partitioned_batches(data: pa.Table | pa.RecordBatch, schema: Schema, spec: PartitionSpec,
                        order: SortOrder | None = None) -> list[PartitionBatch]:
    """``data`` (in ``schema``'s Arrow form) split by ``spec`` and each part sorted by ``order``."""
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    out = []
    for part, rows in partition_groups(data, spec, schema):
        chunk = data.take(rows)
        idx = sort_indices(chunk, order, schema)
        out.append(PartitionBatch(part, chunk if idx is None else chunk.take(idx)))
    return out


def partition_groups(data: pa.Table, spec: PartitionSpec, schema: Schema) -> list[tuple[tuple, pa.Array]]:
    """(partition tuple in internal values, row indices) per partition, ordered by tuple."""
    n = data.num_rows
    if not spec.fields:
        return [((), pa.array(range(n), pa.int64()))]
    cols = {}
    types = []
    for i, pf in enumerate(spec.fields):
        arr, stype = column_by_id(data, schema, pf.source_id)
        if pf.transform.is_void:
            cols[f"p{i}"] = pa.nulls(n, pa.int32())
            types.append(None)
            continue
        try:
            res = transform_array(pf.transform, arr, stype)
        except DoesNotFit as e:  # a partition value the type cannot hold: name row and column
            at = f"row {(e.index or 0) + 1}, column {schema.column_name(pf.source_id)}"
            raise DoesNotFit(e.value, e.type, e.reason, index=e.index, text=f"{at}: {e}") from None
        if isinstance(res.type, pa.BaseExtensionType):
            res = res.storage
        cols[f"p{i}"] = _one_nan(res)
        types.append(pf.transform.result_type(stype))
    cols["__row"] = pa.array(range(n), pa.int64())
    keys = [f"p{i}" for i in range(len(spec.fields))]
    grouped = pa.table(cols).group_by(keys, use_threads=False).aggregate([("__row", "list")])
    out = []
    key_values = [internal_values(grouped.column(k).combine_chunks(), t) for k, t in zip(keys, types)]
    rows = grouped.column("__row_list").combine_chunks()
    for g in range(grouped.num_rows):
        part = tuple(kv[g] for kv in key_values)
        out.append((part, rows[g].values))
    out.sort(key=lambda item: partition_sort_key(item[0]))
    return out


def _one_nan(values: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Float partition values with every NaN replaced by one: Arrow's grouping tells NaNs of
    other sign or payload apart, the reference's partition identity does not
    (:mod:`icectl.spec.partition_identity`); -0.0 and 0.0 stay apart in both."""
    if not pa.types.is_floating(values.type):
        return values
    nan = pc.is_nan(values)
    if not pc.any(nan).as_py():
        return values
    return pc.if_else(nan, pa.scalar(math.nan, values.type), values)


def partition_sort_key(part: tuple) -> tuple:
    """The key partition tuples are ordered by (nulls first, NaN last)."""
    return tuple((v is not None, _sortable(v)) for v in part)


def _sortable(v: Any) -> Any:
    if v is None:
        return 0
    if isinstance(v, _uuid.UUID):
        return v.bytes
    if isinstance(v, float):
        return float_key(v)  # -0.0 before 0.0, NaN last
    return v
