"""The rewrite task: read data files through their deletes, write them again.

One task function serves every operation that rewrites data files (``icectl compact`` and
copy-on-write ``icectl delete``) on every engine (:mod:`icectl.engines`):

* :class:`RewriteTask` is plain data (picklable, no open files, no table): the input data files
  as the plan that selected them gave them, each with the delete files the planner attached
  (the reader's :class:`~icectl.scan.reader.ScanFile`, from :func:`task_inputs`), the table
  schema, the output partition spec and sort order as their JSON forms, the table properties,
  the target file size, the table location (new files go to its data location), and optionally
  a row filter whose matching rows are *dropped*.
* :func:`run_rewrite_task` (module level, pure: it writes only the data files it names and
  reports them) reads the rows with the scan reader (:mod:`icectl.scan.reader`, which applies
  position deletes, deletion vectors and equality deletes), drops the rows the filter matches
  (the scan's row filter, :mod:`icectl.scan.arrow_filter`, the same semantics as ``icectl
  delete`` and ``icectl scan``), and streams the rest, batch by batch, into a
  :class:`icectl.ops.write.data_sink.DataFileSink` (partitioned by the output spec, rolled at the
  target size, field ids and metrics as every icectl writer): the task never holds its inputs
  whole. Without a sort order rows go straight to the rolling writer a row group at a time;
  with one they are sorted across the whole task, in memory while they fit in
  ``buffer_bytes`` and else as sorted runs spilled to temporary files and merged
  (:mod:`icectl.ops.write.spill_sort`), so the output is the same either way. With a drop filter,
  an input in which no row matches is left out (it needs no rewrite); the result names the
  inputs the new files replace.
* It returns :class:`RewriteTaskResult`: the new files' metadata (``DataFile`` values with
  their partition paths) and counts.

A failing task raises; its partly written files are deleted before the exception leaves it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from icectl.expr.expressions import TRUE, AlwaysFalse, AlwaysTrue, Expression, referenced_field_ids
from icectl import command_files
from icectl.io.storage.files import FileIO
from icectl.io.formats.parquet_write import TARGET_FILE_SIZE
from icectl.ops.write.data_sink import BUFFER_BYTES_DEFAULT, DataFileSink
from icectl.scan.reader import Scan, ScanFile, scan_files
from icectl.spec.manifests import DataFile
from icectl.spec.partitioning import PartitionSpec
from icectl.spec.schema import Schema
from icectl.spec.sorting import SortOrder
from icectl.spec.zorder import sort_order_from_json
from icectl.table.locations import data_location

if TYPE_CHECKING:
    from icectl.scan.plan_result import PlannedFile

__all__ = ["RewriteTask", "RewriteTaskResult", "run_rewrite_task", "run_rewrite_task_guarded",
           "TaskFailed", "results_or_raise", "task_inputs"]


@dataclass(frozen=True)
class RewriteTask:
    """Everything one rewrite needs, as plain data (see the module docs)."""

    inputs: tuple[ScanFile, ...]  # the plan's files, read whole (see task_inputs)
    schema: dict[str, Any]  # Schema.to_json()
    spec: dict[str, Any]  # the output PartitionSpec.to_json()
    sort_order: dict[str, Any] | None  # SortOrder.to_json() (or a ZOrder's); None or no fields: unsorted
    properties: dict[str, str]
    format_version: int
    target_file_size: int
    table_location: str  # new files go to its data location (``write.data.path`` honoured)
    operation_id: str  # new files are named <task index>-0-<operation id>-<n>.parquet
    task_index: int = 0
    drop_filter: str | Expression | None = None  # rows matching it are not written (text, or bound)
    case_sensitive: bool = False
    storage_options: dict[str, Any] = field(default_factory=dict)
    buffer_bytes: int = 0  # rows held in memory before sorted runs spill (0: the default)
    rows_per_file: int | None = None  # also roll output files after this many rows (z-order)
    files_per_partition: int | None = None  # and into at most this many files per partition

    @property
    def input_bytes(self) -> int:
        return sum(f.file_size_in_bytes for f in self.inputs)


@dataclass(frozen=True)
class RewriteTaskResult:
    """What a task wrote: the new data files (with partition paths) and row counts."""

    task_index: int
    files: tuple[tuple[DataFile, str], ...]
    rows_read: int
    rows_dropped: int
    bytes_read: int
    # the inputs the new files replace: all of them, except, with a drop filter, those in which
    # no row matched (they stay as they are)
    rewritten: tuple[str, ...] = ()
    spilled_runs: int = 0  # sorted runs written to temporary files (0: sorted in memory)

    @property
    def rows_written(self) -> int:
        return sum(f.record_count for f, _ in self.files)

    @property
    def bytes_written(self) -> int:
        return sum(f.file_size_in_bytes for f, _ in self.files)


@dataclass(frozen=True)
class TaskFailed:
    """A task that raised, as plain data (exceptions need not pickle): the error's kind
    (an :mod:`icectl.errors` class name) and message."""

    task_index: int
    kind: str
    message: str


def run_rewrite_task_guarded(task: RewriteTask) -> RewriteTaskResult | TaskFailed:
    """:func:`run_rewrite_task`, with a failure returned instead of raised: an engine then
    hands back every other task's result, so the driver can remove all the files written
    before it reports the failure (see :func:`results_or_raise`)."""
    try:
        return run_rewrite_task(task)
    except Exception as e:  # noqa: BLE001 - reported to the driver, which raises it
        return TaskFailed(task.task_index, type(e).__name__, str(e))


def results_or_raise(file_io: FileIO, outcomes: Sequence[RewriteTaskResult | TaskFailed]
                     ) -> list[RewriteTaskResult]:
    """The results of guarded tasks; if any failed, the files the others wrote are deleted and
    the first failure is raised (as its icectl error kind, else as a RuntimeError)."""
    failed = [o for o in outcomes if isinstance(o, TaskFailed)]
    if not failed:
        return list(outcomes)  # type: ignore[arg-type]
    command_files.discard(file_io, [f.file_path for o in outcomes if isinstance(o, RewriteTaskResult)
                                    for f, _ in o.files])
    from icectl import errors

    first = failed[0]
    kind = getattr(errors, first.kind, None)
    if isinstance(kind, type) and issubclass(kind, errors.IcectlError):
        raise kind(first.message)
    raise RuntimeError(f"rewrite task {first.task_index} failed: {first.kind}: {first.message}")


def task_inputs(planned: Iterable[PlannedFile]) -> tuple[ScanFile, ...]:
    """The task's inputs: planned files (the scan planner's ``PlannedFile``) as the reader
    reads them, with the delete files the plan attached, whole (residuals ignored)."""
    return tuple(scan_files(list(planned), whole=True))


class _TaskMetadata:
    """The little of a table's metadata the scan reader and the data file writer consult:
    the output spec and sort order stand for the table's defaults, and the target file size
    for ``write.target-file-size-bytes``."""

    def __init__(self, task: RewriteTask, schema: Schema, spec: PartitionSpec,
                 order: SortOrder | None):
        self.properties = dict(task.properties)
        self.properties[TARGET_FILE_SIZE] = str(task.target_file_size)
        self.format_version = task.format_version
        self.schema = schema
        self.spec = spec
        self.sort_order = order
        self._specs = {spec.spec_id: spec}

    def specs_by_id(self) -> Mapping[int, PartitionSpec]:
        return self._specs


class _TaskTable:
    """A stand-in for a loaded table: what the scan reader and the writer need (``io``,
    ``metadata``, ``location``)."""

    def __init__(self, task: RewriteTask, schema: Schema, spec: PartitionSpec,
                 order: SortOrder | None):
        self.io = FileIO(task.storage_options or None)
        self.metadata = _TaskMetadata(task, schema, spec, order)
        self.location = task.table_location


def run_rewrite_task(task: RewriteTask) -> RewriteTaskResult:
    """Rewrite the task's input files (see the module docs). Pure: it writes only new data
    files, returns their metadata, and deletes them again if it fails."""
    schema = Schema.from_json(task.schema)
    spec = PartitionSpec.from_json(task.spec)
    order = sort_order_from_json(task.sort_order) if task.sort_order else None
    table = _TaskTable(task, schema, spec, order)
    written: list[str] = []
    sink = DataFileSink(table, data_location(task.table_location, task.properties), written,
                        operation_id=task.operation_id, task_index=task.task_index,
                        buffer_bytes=task.buffer_bytes or None, rows_per_file=task.rows_per_file,
                        files_per_partition=task.files_per_partition)
    try:
        read, dropped, rewritten = _stream_rows(table, schema, task, sink.write)
        files = sink.close()
    except BaseException:
        sink.abort()
        command_files.discard(table.io, written)
        raise
    command_files.check_driver()
    if order is not None and order.order_id == 0:  # an order that is not one of the table's
        files = [(replace(f, sort_order_id=None), p) for f, p in files]
    return RewriteTaskResult(task_index=task.task_index, files=tuple(files), rows_read=read,
                             rows_dropped=dropped, bytes_read=task.input_bytes,
                             rewritten=tuple(rewritten), spilled_runs=sink.spilled_runs)


def _stream_rows(table: _TaskTable, schema: Schema, task: RewriteTask,
                 emit: Callable[[pa.RecordBatch], None]) -> tuple[int, int, list[str]]:
    """Hand the live rows of the inputs (deletes applied), minus those the drop filter matches,
    to ``emit`` batch by batch, in the inputs' order; (rows read, rows dropped, inputs
    rewritten). With a drop filter, an input none of whose rows matches is not rewritten: its
    batches are held back until a row matches (past the task's buffer they are let go, and the
    input is read again from its start should a row match later)."""
    from icectl.scan.plan_setup import bind_filter

    drop = TRUE
    if task.drop_filter is not None:
        text = task.drop_filter if isinstance(task.drop_filter, str) else None
        drop = bind_filter(text, None if text is not None else task.drop_filter, schema,
                           task.case_sensitive)
    ids = sorted(referenced_field_ids(drop)) if task.drop_filter is not None else []
    budget = task.buffer_bytes or BUFFER_BYTES_DEFAULT
    rewritten: list[str] = []
    read = dropped = 0
    # one scan of all inputs (its delete-file caches are shared), read one file at a time
    scan = Scan(table=table, schema=schema, projected=list(schema.fields), snapshot_id=None,
                files=list(task.inputs))
    for f in scan.files:
        if task.drop_filter is None:
            for b in scan.file_batches(f):
                read += b.num_rows
                emit(b)
            rewritten.append(f.path)
            continue
        n_read, n_dropped = _filtered_input(scan, f, drop, ids, schema, emit, budget)
        read += n_read
        if n_dropped:
            dropped += n_dropped
            rewritten.append(f.path)
    return read, dropped, rewritten


def _filtered_input(scan: Scan, f: ScanFile, drop: Expression, ids: Sequence[int], schema: Schema,
                    emit: Callable[[pa.RecordBatch], None], budget: int) -> tuple[int, int]:
    """One input (``f``, one of the scan's files) through the drop filter: its kept rows go to ``emit``
    only once a row matched (module docs of :func:`_stream_rows`); (rows read, rows dropped)."""
    held: list[pa.RecordBatch] | None = []  # None: let go, past the budget
    held_bytes = read = dropped = 0
    again = False
    batches = scan.file_batches(f)
    try:
        for b in batches:
            read += b.num_rows
            kept, n = _drop_matching(b, drop, ids, schema)
            dropped += n
            if dropped and held is None:  # rows before this one were let go
                again = True
                break
            if dropped:
                for h in held or ():
                    emit(h)
                held = []
                emit(kept)
            elif held is not None:
                held.append(kept)
                held_bytes += kept.nbytes
                if held_bytes > budget:
                    held = None
    finally:
        batches.close()
    if not again:
        return read, dropped
    read = dropped = 0  # read the input again, from its start
    for b in scan.file_batches(f):
        read += b.num_rows
        kept, n = _drop_matching(b, drop, ids, schema)
        dropped += n
        emit(kept)
    return read, dropped


def _drop_matching(b: pa.RecordBatch, expr: Expression, ids: Sequence[int], schema: Schema
                   ) -> tuple[pa.RecordBatch, int]:
    """``b`` without the rows ``expr`` matches (the scan's row filter, on whole columns)."""
    from icectl.scan.arrow_filter import row_mask

    if isinstance(expr, AlwaysFalse):
        return b, 0
    if isinstance(expr, AlwaysTrue):
        return b.slice(0, 0), b.num_rows
    cols = {fid: _column(b, schema, fid) for fid in ids}
    kept = b.filter(pc.invert(row_mask(expr, lambda p: cols.get(p.field_id), b.num_rows)))
    return kept, b.num_rows - kept.num_rows


def _column(b: pa.RecordBatch, schema: Schema, fid: int) -> Any:
    """The batch's values of field ``fid``: a top-level column, or a field of nested structs."""
    from icectl.scan.arrow_values import field_chain, struct_field_column

    chain = field_chain(schema, fid)
    return struct_field_column(b.column(schema.find_field(chain[0]).name), schema, chain)
