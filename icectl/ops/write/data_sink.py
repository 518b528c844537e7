"""Rows in, data files out: :class:`DataFileSink`, the one writer of a table's data files.

Rows (in the table schema's Arrow form) arrive in pieces (:meth:`DataFileSink.write`) and are
split by the table's default partition spec; each partition has its own rolling Parquet writer
(:class:`icectl.io.formats.parquet_write.RollingWriter`), so rows flow through a row group at a time
and files roll at ``write.target-file-size-bytes``. With a sort order, a partition's rows go
through a :class:`icectl.ops.write.spill_sort.SpillSorter` first and are written, sorted, when the
partition is finished: its files are sorted across all of them (the first holds the smallest
keys), as if all its rows had been sorted at once. Memory stays bounded: when the rows waiting
in all partitions pass ``buffer_bytes``, the biggest sorter spills a run or the biggest writer
writes its row group early.

:meth:`DataFileSink.close` finishes every partition, in partition order, and returns each file
as a ``DataFile`` (metrics from the writer's footer, NaN counts from the rows) with its
partition path. ``write(..., whole=True)`` says the partitions of those rows get no more: they
are sorted in memory and finished at once (what :func:`write_data_files` does
with a table it holds anyway). Files are named ``<task index>-0-<operation id>-<n>.parquet``
under ``<data location>/<partition path>/``; every path is registered with the command
(:mod:`icectl.command_files`) and appended to ``written_paths`` before its file is created. On
failure call :meth:`DataFileSink.abort` and delete ``written_paths``.
"""

from __future__ import annotations

import uuid as _uuid
from typing import TYPE_CHECKING, Any, Callable

import pyarrow as pa

from icectl import command_files
from icectl.io.storage.files import join
from icectl.io.formats.parquet import footer_metrics
from icectl.io.formats.parquet_write import ParquetWriteOptions, RollingWriter, arrow_schema
from icectl.ops.compute.partition import partition_groups, partition_sort_key
from icectl.ops.compute.sort import sort_indices
from icectl.ops.compute.zorder import cell_boundary
from icectl.ops.write.spill_sort import RUN_BYTES_DEFAULT, SpillSorter
from icectl.spec.manifests import DATA, DataFile
from icectl.spec.metrics import metrics_config
from icectl.spec.name_mapping import table_name_mapping
from icectl.spec.partition_identity import partition_key
from icectl.spec.partition_path import partition_path
from icectl.spec.types import DOUBLE, FLOAT
from icectl.spec.zorder import ZOrder
from icectl.table.locations import data_location

if TYPE_CHECKING:
    from icectl.table.table import Table

__all__ = ["DataFileSink", "BUFFER_BYTES_DEFAULT", "write_data_files"]

BUFFER_BYTES_DEFAULT = RUN_BYTES_DEFAULT


class DataFileSink:
    """See the module docs. ``table`` needs ``io`` and ``metadata`` (schema, spec,
    sort_order, properties); ``data_dir`` is the table's data location."""

    def __init__(self, table: Table, data_dir: str, written_paths: list[str], *,
                 operation_id: str | None = None, task_index: int = 0,
                 buffer_bytes: int | None = None, rows_per_file: int | None = None,
                 files_per_partition: int | None = None) -> None:
        md = table.metadata
        self.rows_per_file = rows_per_file  # also roll a partition's file after this many rows
        self.files_per_partition = files_per_partition  # ... into at most this many files
        self.io = table.io
        self.schema, self.spec, self.order = md.schema, md.spec, md.sort_order
        self.sorted = self.order is not None and any(not f.transform.is_void for f in self.order.fields)
        self.options = ParquetWriteOptions.from_properties(md.properties)
        self.config = metrics_config(md.properties, self.schema, self.order)
        self.mapping = table_name_mapping(dict(md.properties), self.schema)
        self.base_dir = data_dir
        self.operation_id = operation_id or str(_uuid.uuid4())
        self.task_index = task_index
        self.buffer_bytes = max(1, buffer_bytes or BUFFER_BYTES_DEFAULT)
        self.written_paths = written_paths
        self.arrow_schema = arrow_schema(self.schema)
        self.nan_fields = {f.field_id: f.name for f in self.schema.fields
                           if f.type in (FLOAT, DOUBLE) and self.config.column_mode(f.name).keeps_metrics}
        self.files: list[tuple[DataFile, str]] = []
        self.spilled_runs = 0  # sorted runs written to temporary files (0: sorted in memory)
        self._parts: dict[tuple, _Partition] = {}  # by partition_key (-0.0 apart, one NaN)
        self._counter = 0
        # told (rows finished, rows) as ``write(..., whole=True)`` finishes each partition
        self.progress: Callable[[int, int], None] | None = None

    def write(self, data: pa.Table | pa.RecordBatch, *, whole: bool = False) -> None:
        if isinstance(data, pa.RecordBatch):
            data = pa.Table.from_batches([data])
        if data.num_rows == 0:
            return
        if data.schema != self.arrow_schema:
            data = data.cast(self.arrow_schema)
        done = 0
        if whole and self.progress is not None:
            self.progress(0, data.num_rows)
        for part, rows in partition_groups(data, self.spec, self.schema):
            chunk = data if len(rows) == data.num_rows else data.take(rows)
            key = partition_key(part)
            p = self._parts.get(key)
            if p is None:
                p = self._parts[key] = _Partition(self, part)
            if whole:
                p.finish(chunk)
                del self._parts[key]
                done += len(rows)
                if self.progress is not None:
                    self.progress(done, data.num_rows)
            else:
                p.add(chunk)
                self._bound_memory()

    def close(self) -> list[tuple[DataFile, str]]:
        """Finish every partition (in partition order); all files written."""
        for key in sorted(self._parts, key=lambda k: partition_sort_key(self._parts[k].part)):
            self._parts.pop(key).finish(None)
        return self.files

    def abort(self) -> None:
        """Close what is open (the caller deletes ``written_paths``)."""
        for p in self._parts.values():
            p.abort()
        self._parts = {}

    def _bound_memory(self) -> None:
        waiting = sum(p.waiting_bytes for p in self._parts.values())
        floor = self.buffer_bytes if self.sorted else max(self.buffer_bytes, self.options.row_group_size_bytes)
        while waiting > floor:
            biggest = max(self._parts.values(), key=lambda p: p.waiting_bytes)
            before = biggest.waiting_bytes
            biggest.relieve()
            waiting -= before - biggest.waiting_bytes
            if biggest.waiting_bytes == before:
                break

    def _next_path(self, directory: str) -> str:
        self._counter += 1
        p = join(directory, f"{self.task_index:05d}-0-{self.operation_id}-{self._counter:05d}.parquet")
        self.written_paths.append(p)
        return command_files.register(self.io, p)


class _Partition:
    """One partition's writer (and sorter, with a sort order)."""

    def __init__(self, sink: DataFileSink, part: tuple) -> None:
        self.sink, self.part = sink, part
        self.ppath = partition_path(sink.spec, sink.schema, part) if sink.spec.fields else ""
        directory = join(sink.base_dir, self.ppath) if self.ppath else sink.base_dir
        self._new_writer = lambda: RollingWriter(sink.io, sink.schema, sink.options,
                                                 lambda: sink._next_path(directory), sink.nan_fields)
        self.writer = self._new_writer()
        self.closed: list[Any] = []  # files of writers rolled at rows_per_file
        self.rows_in_writer = 0
        self.target = sink.rows_per_file  # rows of this writer up to the next equal-share boundary
        self.sorter = SpillSorter(sink.order, sink.schema, sink.buffer_bytes) if sink.sorted else None

    @property
    def waiting_bytes(self) -> int:
        return self.sorter.buffered_bytes if self.sorter is not None else self.writer.pending_bytes

    def add(self, rows: pa.Table) -> None:
        if self.sorter is not None:
            self._counting(lambda: self.sorter.add(rows))
        else:
            self._write(rows)

    def _write(self, rows: pa.Table) -> None:
        cap = self.sink.rows_per_file
        if cap is None:
            self.writer.write(rows)
            return
        # z-order: each cut within 5% of its equal-share boundary, at a z-cell's edge (the
        # boundaries stay k * cap rows into the partition, so shares do not drift)
        order = self.sink.order
        slack = cap // 20 if isinstance(order, ZOrder) else 0
        most = self.sink.files_per_partition
        while rows.num_rows:
            if most is not None and len(self.closed) + 1 >= most:
                self.writer.write(rows)  # the last file takes the rest
                self.rows_in_writer += rows.num_rows
                return
            need = self.target - self.rows_in_writer
            lo, hi = max(1, need - slack), min(rows.num_rows - 1, need + slack)
            if slack and need + slack <= 0:
                n, cut = 0, True  # past the window (rows came one at a time): cut here
            elif rows.num_rows < need - slack or (slack and hi < lo):
                n, cut = rows.num_rows, False  # no boundary in these rows
            elif slack:
                n, cut = cell_boundary(rows, order, self.sink.schema, lo, hi, need), True
            else:
                n = min(rows.num_rows, need)
                cut = n == need
            self.writer.write(rows.slice(0, n))
            rows = rows.slice(n)
            self.rows_in_writer += n
            if cut:
                self.closed += self.writer.close()
                self.target = cap - (self.rows_in_writer - self.target)
                self.writer, self.rows_in_writer = self._new_writer(), 0

    def relieve(self) -> None:
        if self.sorter is not None:
            self._counting(self.sorter.spill)
        else:
            self.writer.flush()

    def _counting(self, step: Any) -> None:
        before = self.sorter.spilled_runs
        step()
        self.sink.spilled_runs += self.sorter.spilled_runs - before

    def finish(self, rows: pa.Table | None) -> None:
        """Write the partition's last ``rows`` and all it holds; its files join the sink's."""
        try:
            if self.sorter is not None and self.sorter.empty and rows is not None:
                idx = sort_indices(rows, self.sink.order, self.sink.schema)  # all of it: in memory
                self._write(rows if idx is None else rows.take(idx))
            elif self.sorter is not None:
                if rows is not None:
                    self._counting(lambda: self.sorter.add(rows))
                if self.sorter.spilled_runs:
                    self._counting(self.sorter.spill)  # the last run joins the merge
                for t in self.sorter.sorted_tables():
                    self._write(t)
            elif rows is not None:
                self._write(rows)
            written = self.closed + self.writer.close()
        finally:
            if self.sorter is not None:
                self.sorter.close()
        for wf in written:
            command_files.check_driver()  # a worker hands on no file once its driver is gone
            self.sink.files.append((self._data_file(wf), self.ppath))

    def abort(self) -> None:
        self.writer.abort()
        if self.sorter is not None:
            self.sorter.close()

    def _data_file(self, wf: Any) -> DataFile:
        sink = self.sink
        fm = footer_metrics(wf.footer, sink.config, sink.mapping, wf.file_size_in_bytes, path=wf.path)
        return DataFile(
            content=DATA, file_path=wf.path, file_format="PARQUET", partition=self.part,
            record_count=wf.record_count, file_size_in_bytes=wf.file_size_in_bytes,
            column_sizes=fm.column_sizes or None, value_counts=fm.value_counts or None,
            null_value_counts=fm.null_value_counts or None,
            nan_value_counts=wf.nan_counts,
            lower_bounds=fm.lower_bounds or None, upper_bounds=fm.upper_bounds or None,
            split_offsets=fm.split_offsets or None, spec_id=sink.spec.spec_id,
            sort_order_id=sink.order.order_id if sink.order is not None else None,
        )


def write_data_files(table: Table, data: pa.Table, written_paths: list[str], *,
                     operation_id: str | None = None, task_index: int = 0,
                     progress: Callable[[int, int], None] | None = None) -> list[tuple[DataFile, str]]:
    """Write ``data`` (conformed to the table's schema) as Parquet data files of the default
    spec, split by partition and sorted by the sort order; returns each file with its partition
    path. Every path is appended to ``written_paths`` and registered with the command
    (:mod:`icectl.command_files`) before its file is created (the caller removes them if
    anything fails). Files are named ``<task index>-0-<operation id>-<n>.parquet`` (a new
    operation id unless one is given: the tasks of one operation share it). The rows given in
    pieces instead: :class:`DataFileSink`."""
    sink = DataFileSink(table, data_location(table.location, table.metadata.properties), written_paths,
                        operation_id=operation_id, task_index=task_index)
    sink.progress = progress
    try:
        sink.write(data, whole=True)
        return sink.close()
    except BaseException:
        sink.abort()
        raise
