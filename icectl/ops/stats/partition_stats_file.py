"""The partition statistics file (spec: "Partition Statistics File"): its schema, and its rows
written to and read from Parquet.

One row per (spec id, partition) with the columns of the spec's table, each carrying its field
id (``partition`` 1, whose children are the fields of the unified partition type with their
partition field ids; ``spec_id`` 2 ... ``last_updated_snapshot_id`` 12; ``dv_count`` 13 in v3).
For format versions 1 and 2 the delete counters (6-9) are optional and ``dv_count`` absent; in
v3 the counters are required and ``dv_count`` (default 0) is the last column, as the reference
lays the file out.

Rows here are plain dicts keyed by column name; ``partition`` is a dict from partition field id
to its internal value (:mod:`icectl.spec.values`), a missing id meaning null.
"""

from __future__ import annotations

import io as _io
import json
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from icectl.errors import CorruptMetadata
from icectl.io.formats.parquet import arrow_field_id
from icectl.io.formats.parquet_write import arrow_schema
from icectl.scan.arrow_values import internal_to_arrow, to_internal
from icectl.spec.schema import Schema
from icectl.spec.types import INT, LONG, NestedField, StructType

__all__ = ["PARTITION_FIELD_ID", "COUNTERS", "COLUMNS", "stats_schema", "write_stats_file",
           "read_stats_file"]

PARTITION_FIELD_ID = 1

# (field id, name, type) of the columns after ``partition``, in the file's order
_V2_COLUMNS = (
    (2, "spec_id", INT), (3, "data_record_count", LONG), (4, "data_file_count", INT),
    (5, "total_data_file_size_in_bytes", LONG), (6, "position_delete_record_count", LONG),
    (7, "position_delete_file_count", INT), (8, "equality_delete_record_count", LONG),
    (9, "equality_delete_file_count", INT), (10, "total_record_count", LONG),
    (11, "last_updated_at", LONG), (12, "last_updated_snapshot_id", LONG),
)
_DV_COUNT = (13, "dv_count", INT)
_REQUIRED = {2, 3, 4, 5}  # in every version; 6-9 and 13 too from v3 on
_V3_REQUIRED = {6, 7, 8, 9, 13}

# the counters: summed when rows merge, 0 when a file leaves them out (null in v1/v2 files)
COUNTERS = ("data_record_count", "data_file_count", "total_data_file_size_in_bytes",
            "position_delete_record_count", "position_delete_file_count",
            "equality_delete_record_count", "equality_delete_file_count", "dv_count")
COLUMNS = ("partition",) + tuple(name for _, name, _ in _V2_COLUMNS) + (_DV_COUNT[1],)


def stats_schema(unified: StructType, format_version: int) -> Schema:
    """The schema of the file for a table of ``format_version`` whose unified partition type is
    ``unified`` (it must have a field: an unpartitioned table has no partition statistics)."""
    required = _REQUIRED | (_V3_REQUIRED if format_version >= 3 else set())
    fields = [NestedField(PARTITION_FIELD_ID, "partition", unified, required=True)]
    columns = _V2_COLUMNS + ((_DV_COUNT,) if format_version >= 3 else ())
    for fid, name, t in columns:
        if fid == _DV_COUNT[0]:
            fields.append(NestedField(fid, name, t, required=True, initial_default=0, write_default=0,
                                      has_initial_default=True, has_write_default=True))
        else:
            fields.append(NestedField(fid, name, t, required=fid in required))
    return Schema(tuple(fields))


def write_stats_file(rows: list[dict[str, Any]], schema: Schema) -> bytes:
    """The Parquet bytes of ``rows`` (already in the file's order) under ``schema``."""
    target = arrow_schema(schema)
    arrays = []
    for f in schema.fields:
        values = [r.get(f.name) for r in rows]
        if f.field_id == PARTITION_FIELD_ID:
            arrays.append(internal_to_arrow(values, f.type))
        else:
            arrays.append(pa.array(values, target.field(f.name).type))
    table = pa.Table.from_arrays(arrays, schema=target)
    buf = _io.BytesIO()
    with pq.ParquetWriter(buf, target, compression="gzip", version="2.6", store_schema=False,
                          write_statistics=True) as writer:
        writer.add_key_value_metadata({"iceberg.schema": json.dumps(schema.to_json(), separators=(",", ":"))})
        writer.write_table(table)
    return buf.getvalue()


def _partition_column(arr: pa.Array, file_type: pa.StructType, unified: StructType) -> list[dict[int, Any]]:
    """The partition dicts of a file's ``partition`` column: children matched by field id
    (a field the file lacks reads null; one the unified type lacks is ignored)."""
    by_id = {f.field_id: f for f in unified.fields()}
    out: list[dict[int, Any]] = [{} for _ in range(len(arr))]
    kids = arr.flatten()
    for i in range(file_type.num_fields):
        fid = arrow_field_id(file_type.field(i))
        if fid not in by_id:
            continue
        for row, v in zip(out, to_internal(kids[i], by_id[fid].type)):
            if v is not None:
                row[fid] = v
    return out


def read_stats_file(data: bytes, unified: StructType, where: str) -> list[dict[str, Any]]:
    """The rows of a partition statistics file (Parquet), columns found by field id; counters a
    file leaves out or null read 0, the other columns null. CorruptMetadata naming ``where``
    when the bytes are not such a file."""
    try:
        table = pq.read_table(pa.BufferReader(data))
    except (pa.ArrowException, OSError) as e:
        raise CorruptMetadata(f"partition statistics file {where} is unreadable: {e}") from e
    names = {fid: name for fid, name, _ in _V2_COLUMNS + (_DV_COUNT,)}
    columns: dict[str, list[Any]] = {}
    partitions: list[dict[int, Any]] | None = None
    for i, field in enumerate(table.schema):
        fid = arrow_field_id(field)
        arr = table.column(i).combine_chunks()
        if fid == PARTITION_FIELD_ID and pa.types.is_struct(field.type):
            partitions = _partition_column(arr, field.type, unified)
        elif fid in names:
            columns[names[fid]] = arr.to_pylist()
    if partitions is None or "spec_id" not in columns:
        raise CorruptMetadata(f"partition statistics file {where} has no partition or spec_id column "
                              f"(field ids 1 and 2)")
    rows = []
    for i, part in enumerate(partitions):
        row: dict[str, Any] = {"partition": part}
        for name in COLUMNS[1:]:
            v = columns.get(name, [None] * len(partitions))[i]
            row[name] = (v or 0) if name in COUNTERS else v
        rows.append(row)
    return rows
