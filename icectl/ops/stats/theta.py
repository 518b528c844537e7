"""``compute_table_stats``: a Puffin file of theta sketches (distinct values) registered in the
table's ``statistics``, as Iceberg Java's Spark action of that name does.

1. The snapshot (default: the current one) and its schema; the columns (default: every
   top-level column of a primitive type), each a primitive field, nested fields of structs by
   their dotted names.
2. The rows of the snapshot (deletes applied) are read task by task as the reference's
   ``planTasks`` packs them, each task feeding its own Alpha sketch, and the tasks' sketches
   are combined by a theta union (:mod:`icectl.spec.theta`). Exact sketches do not depend on
   the order of the rows; an estimating one depends on the order within each task, which Java
   takes from manifests read in parallel when a task holds files of several manifests (then
   the bytes may differ from Spark's, the estimate within the sketch's error). A value's bytes are Iceberg's
   single-value serialization of it as Spark hands it over: a UUID is read by Spark as its
   text, so its text is hashed.
3. ``metadata/<snapshot-id>-<uuid>.stats``: one ``apache-datasketches-theta-v1`` blob per column
   (zstd-compressed, properties ``ndv``), then one commit sets the snapshot's statistics file
   (replacing the one it had); a retry on a table whose snapshot is gone stops with
   CommitConflict, the written file deleted.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from icectl import __version__
from icectl.errors import CommitConflict, InvalidInput, NotFound
from icectl.io.formats.puffin_file import PuffinBlob, puffin_file
from icectl.io.storage.files import join
from icectl.spec.metadata import TableMetadata
from icectl.spec.result_json import JsonResult
from icectl.spec.schema import Schema
from icectl.spec.snapshots import Snapshot
from icectl.spec.statistics import statistics_entry, with_statistics
from icectl.spec.theta import (MAX_THETA, NDV_PROPERTY, THETA_BLOB_TYPE, AlphaSketch, CompactSketch,
                               union, iter_hashes)
from icectl.spec.types import (BOOLEAN, DATE, DOUBLE, FLOAT, INT, LONG, STRING, TIME, TIMESTAMP,
                               TIMESTAMP_NS, TIMESTAMPTZ, TIMESTAMPTZ_NS, UUID, IcebergType,
                               NestedField, StructType)
from icectl.spec.values import to_bytes
from icectl.table.store import metadata_dir
from icectl.table.table import Table

__all__ = ["compute_table_stats", "ColumnStats", "ComputeStatsResult", "column_sketches",
           "stats_columns"]

_INT32 = (INT, DATE)
_INT64 = (LONG, TIME, TIMESTAMP, TIMESTAMPTZ, TIMESTAMP_NS, TIMESTAMPTZ_NS)


@dataclass(frozen=True)
class ColumnStats(JsonResult):
    """One column's sketch: its field id, name, type, the estimate and the blob's size."""

    field_id: int
    name: str
    type: str
    ndv: int
    sketch_bytes: int
    exact: bool


@dataclass(frozen=True)
class ComputeStatsResult(JsonResult):
    location: str
    snapshot_id: int | None
    statistics_path: str | None
    file_size_in_bytes: int | None
    file_footer_size_in_bytes: int | None
    columns: tuple[ColumnStats, ...]
    committed: bool
    dry_run: bool
    metadata_file: str | None
    warnings: tuple[str, ...] = field(default=())


def stats_columns(schema: Schema, names: Sequence[str] | None) -> list[tuple[str, NestedField]]:
    """(name, field) of each column to sketch, in the order first named (default: every
    top-level primitive column)."""
    if names is None:
        picked = [(f.name, f) for f in schema.fields if f.type.is_primitive]
        if not picked:
            raise InvalidInput("the table has no column of a primitive type to compute statistics of")
        return picked
    out: dict[str, NestedField] = {}
    for name in names:
        f = schema.find_field_or_none(name)
        if f is None:
            raise InvalidInput(f"no column {name!r} in the snapshot's schema{schema.suggest(name)}",
                               argument="columns")
        if not f.type.is_primitive:
            raise InvalidInput(f"cannot compute statistics of column {name!r} of type {f.type} "
                               f"(not a primitive type)", argument="columns")
        if not _under_structs(schema, f.field_id):
            raise InvalidInput(f"cannot compute statistics of {name!r}: a field inside a list or "
                               f"map", argument="columns")
        out.setdefault(schema.column_name(f.field_id), f)
    if not out:
        raise InvalidInput("give at least one column", argument="columns")
    return list(out.items())


def _under_structs(schema: Schema, field_id: int) -> bool:
    parent = schema.parent_id(field_id)
    while parent is not None:
        if not isinstance(schema.find_type(parent), StructType):
            return False
        parent = schema.parent_id(parent)
    return True


# -- values to hashes ----------------------------------------------------------------------------


def _column(batch: pa.RecordBatch, path: Sequence[str]) -> pa.Array:
    arr: Any = batch.column(batch.schema.get_field_index(path[0]))
    for name in path[1:]:
        arr = pc.struct_field(arr, [arr.type.get_field_index(name)])
    return arr


_WIDTH = {INT: 4, LONG: 8}


def _distinct_bytes(t: IcebergType, arr: pa.Array) -> Iterable[Any]:
    """The bytes of each distinct non-null value of ``arr``, in order of first appearance (as
    buffers for fixed-width values: their little-endian Arrow form is Iceberg's single-value
    serialization of them)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if isinstance(arr, pa.ExtensionArray):
        arr = arr.storage
    if t in (FLOAT, DOUBLE):  # by bit pattern: -0.0 and each NaN keep their own bytes
        t = INT if t == FLOAT else LONG
    elif t in _INT32:
        t = INT
    elif t in _INT64:
        t = LONG
    if t in _WIDTH:
        width = _WIDTH[t]
        distinct = pc.unique(arr.view(pa.int32() if width == 4 else pa.int64()).drop_null())
        start = distinct.offset * width
        raw = distinct.buffers()[1].to_pybytes()[start:start + len(distinct) * width]
        return (raw[i:i + width] for i in range(0, len(raw), width))
    values = pc.unique(arr.drop_null()).to_pylist()
    if t == UUID:  # Spark reads a UUID as its text, and sketches the text
        return (str(uuid.UUID(bytes=bytes(v))).encode() for v in values)
    if t == BOOLEAN:
        return (b"\x01" if v else b"\x00" for v in values)
    if t == STRING:
        return (v.encode("utf-8") for v in values)
    return (to_bytes(t, v) for v in values)


def column_sketches(table: Table, snapshot: Snapshot, columns: list[tuple[str, NestedField]],
                    schema: Schema) -> list[CompactSketch]:
    """One sketch per column of the snapshot's rows: an Alpha sketch per planned task, their
    union (module docs)."""
    from icectl.scan.planner import plan_scan
    from icectl.scan.reader import scan_files, scan_of_plan

    plan = plan_scan(table, snapshot_id=snapshot.snapshot_id, columns=[n for n, _ in columns],
                     case_sensitive=True, filter_deletes=True)
    scan = scan_of_plan(table, plan)
    paths = [[schema.find_field(fid).name for fid in _path_ids(schema, f.field_id)] for _, f in columns]
    parts: list[list[tuple[int, set[int]]]] = [[] for _ in columns]
    seen_value = [False] * len(columns)
    done: set[str] = set()
    for task in plan.tasks():
        sketches = [AlphaSketch() for _ in columns]
        for planned in task.files:
            if planned.path in done:
                continue
            done.add(planned.path)
            for batch in scan.file_batches(scan_files([planned])[0]):
                for i, (_, f) in enumerate(columns):
                    hashes = list(iter_hashes(_distinct_bytes(f.type, _column(batch, paths[i]))))
                    seen_value[i] = seen_value[i] or bool(hashes)  # (empty values are skipped)
                    sketches[i].update_all(hashes)
        for i, s in enumerate(sketches):
            parts[i].append(s.valid())
    return [union(p, any_value=seen) for p, seen in zip(parts, seen_value)]


def _path_ids(schema: Schema, field_id: int) -> list[int]:
    ids = [field_id]
    while (parent := schema.parent_id(ids[0])) is not None:
        ids.insert(0, parent)
    return ids


# -- the operation -------------------------------------------------------------------------------


def _snapshot(md: TableMetadata, snapshot_id: int | None) -> Snapshot | None:
    if snapshot_id is None:
        return md.current_snapshot()
    snap = md.snapshot_by_id(snapshot_id)
    if snap is None:
        raise NotFound(f"snapshot {snapshot_id} not found", argument="snapshot_id")
    return snap


def compute_table_stats(table: Table, columns: Sequence[str] | None = None, *,
                        snapshot_id: int | None = None, dry_run: bool = False) -> ComputeStatsResult:
    """Write the snapshot's theta sketches to a Puffin file and set it as the snapshot's
    statistics file (module docs). A table without snapshots has nothing to compute: nothing
    is written."""
    md = table.metadata
    snap = _snapshot(md, snapshot_id)
    if snap is None:
        return ComputeStatsResult(table.location, None, None, None, None, (), False, dry_run,
                                  table.metadata_location, ("the table has no snapshot",))
    schema = md.schema_by_id(snap.schema_id) if snap.schema_id is not None else md.schema
    picked = stats_columns(schema, None if columns is None else list(columns))
    sketches = column_sketches(table, snap, picked, schema)
    blobs = [PuffinBlob(THETA_BLOB_TYPE, s.to_bytes(), (f.field_id,), {NDV_PROPERTY: str(s.ndv)},
                        snapshot_id=snap.snapshot_id, sequence_number=snap.sequence_number,
                        compression="zstd") for s, (_, f) in zip(sketches, picked)]
    data, placed = puffin_file(blobs, {"created-by": f"icectl {__version__}"})
    footer_size = len(data) - max(b.offset + b.length for b in placed)
    cols = tuple(ColumnStats(f.field_id, name, str(f.type), s.ndv, len(s.to_bytes()),
                             s.theta >= MAX_THETA)
                 for s, (name, f) in zip(sketches, picked))
    path = join(metadata_dir(table.location), f"{snap.snapshot_id}-{uuid.uuid4()}.stats")
    entry = statistics_entry(snap.snapshot_id, path, len(data), footer_size,
                             [b.footer_entry() for b in placed])
    if dry_run:
        return ComputeStatsResult(table.location, snap.snapshot_id, None, len(data), footer_size,
                                  cols, False, True, table.metadata_location, tuple(table.warnings))

    def update(base: TableMetadata, attempt: Any) -> TableMetadata:
        if base.snapshot_by_id(snap.snapshot_id) is None:
            raise CommitConflict(f"snapshot {snap.snapshot_id} was removed while its statistics "
                                 f"were computed; nothing was changed")
        attempt.track(path)  # every attempt's: the winner's files are kept
        if not wrote:
            table.io.write_exclusive(path, data)
            wrote.append(path)
        return with_statistics(base, entry)

    wrote: list[str] = []

    table.commit_transaction(update)
    return ComputeStatsResult(table.location, snap.snapshot_id, path, len(data), footer_size, cols,
                              True, False, table.metadata_location, tuple(table.warnings))
