"""Sorting more rows than should be held at once: sorted runs spilled to temporary files and
merged back.

:class:`SpillSorter` takes Arrow tables in any number of pieces (:meth:`~SpillSorter.add`) and
gives them back ordered by a sort order (:meth:`~SpillSorter.sorted_tables`), with the order of
:func:`icectl.ops.compute.sort.sort_indices` (transformed keys, directions, null orders, NaN
above every number) and its stability: rows with equal keys come out in the order they went in,
so the result is exactly the stable sort of all the rows together.

* While the rows it holds stay under ``run_bytes`` (Arrow bytes) nothing is spilled: the rows
  are sorted in memory at the end, as one sort.
* Beyond that, each ``run_bytes`` of rows is sorted and written as a *run* to an anonymous
  temporary file (Arrow IPC, LZ4-compressed, in batches of ``run_bytes / 16``, at most
  ``SPILL_BATCH_BYTES``). The
  file is unlinked as soon as it is created (``tempfile.TemporaryFile``), so it disappears with
  the sorter or its process on every exit path, a kill included.
* The runs are merged a batch at a time: each round sorts the rows buffered from every run
  together (stable, runs in the order they were written), emits every row up to the earliest
  "last buffered row" of a run that has more rows to come (no later row can sort before it:
  every unread row of a run sorts after that run's buffered rows, whose last one sorts at or
  after the bound, ties broken by run and position), keeps the rest and tops up the runs whose
  buffer ran low. Each run buffers about ``run_bytes / runs`` (at least one batch), so a
  round holds about ``run_bytes`` plus its sort.
"""

from __future__ import annotations

import tempfile
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.compute as pc

from icectl.errors import StorageError
from icectl.ops.compute.sort import sort_indices, sort_keys
from icectl.spec.schema import Schema
from icectl.spec.sorting import SortOrder

__all__ = ["SpillSorter", "RUN_BYTES_DEFAULT", "SPILL_BATCH_BYTES"]

RUN_BYTES_DEFAULT = 128 * 1024 * 1024
SPILL_BATCH_BYTES = 4 * 1024 * 1024


class SpillSorter:
    """Rows in, the same rows out sorted by ``order`` (module docs). Use it as a context
    manager (or call :meth:`close`): the spill files go when it is closed."""

    def __init__(self, order: SortOrder, schema: Schema, run_bytes: int = RUN_BYTES_DEFAULT) -> None:
        self.order, self.schema = order, schema
        self.run_bytes = max(1, run_bytes)
        self._buffer: list[pa.Table] = []
        self._buffered = 0
        self._runs: list[Any] = []  # open anonymous files, one sorted run each
        self.spilled_runs = 0

    def __enter__(self) -> "SpillSorter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def buffered_bytes(self) -> int:
        return self._buffered

    @property
    def empty(self) -> bool:
        return not self._buffer and not self._runs

    def add(self, data: pa.Table) -> None:
        if data.num_rows == 0:
            return
        self._buffer.append(data)
        self._buffered += data.nbytes
        if self._buffered >= self.run_bytes:
            self.spill()

    def spill(self) -> None:
        """Sort the rows held in memory and write them as a run."""
        if not self._buffer:
            return
        rows = self._sorted_buffer()
        self._buffer, self._buffered = [], 0
        batch_bytes = min(SPILL_BATCH_BYTES, max(1, self.run_bytes // 16))
        batch_rows = max(1, int(batch_bytes / max(1.0, rows.nbytes / rows.num_rows)))
        f = tempfile.TemporaryFile(prefix="icectl-sort-")
        self._runs.append(f)
        try:
            options = pa.ipc.IpcWriteOptions(compression="lz4")
            with pa.ipc.new_file(pa.PythonFile(f, mode="w"), rows.schema, options=options) as w:
                w.write_table(rows, max_chunksize=batch_rows)
        except OSError as e:
            raise StorageError(f"cannot write a temporary sort file: {e}") from e
        self.spilled_runs += 1

    def sorted_tables(self) -> Iterator[pa.Table]:
        """Every row added, sorted (module docs), as tables of bounded size once spilled."""
        if not self._runs:
            if self._buffer:
                rows = self._sorted_buffer()
                self._buffer, self._buffered = [], 0
                yield rows
            return
        self.spill()
        yield from _merge([_Run(f) for f in self._runs], self.order, self.schema, self.run_bytes)

    def close(self) -> None:
        self._buffer, self._buffered = [], 0
        for f in self._runs:
            try:
                f.close()
            except OSError:  # an anonymous file: nothing is left behind either way
                pass
        self._runs = []

    def _sorted_buffer(self) -> pa.Table:
        rows = self._buffer[0] if len(self._buffer) == 1 else pa.concat_tables(self._buffer)
        idx = sort_indices(rows, self.order, self.schema)
        return rows if idx is None else rows.take(idx)


class _Run:
    """A spilled run read back a few batches at a time, with the rows read but not yet
    emitted."""

    def __init__(self, f: Any) -> None:
        f.seek(0)
        self.reader = pa.ipc.open_file(pa.PythonFile(f, mode="r"))
        self.next_batch = 0
        self.rows: pa.Table | None = None
        self.row_bytes = 1.0

    @property
    def exhausted(self) -> bool:
        return self.next_batch >= self.reader.num_record_batches

    def top_up(self, want_bytes: int) -> None:
        """Read batches while fewer than ``want_bytes`` (at least one batch) are buffered."""
        have = self.rows.num_rows if self.rows is not None else 0
        while not self.exhausted and (have == 0 or have * self.row_bytes < want_bytes):
            b = self.reader.get_batch(self.next_batch)
            self.next_batch += 1
            self.row_bytes = max(1.0, b.nbytes / max(1, b.num_rows))
            t = pa.Table.from_batches([b])
            self.rows = t if self.rows is None or self.rows.num_rows == 0 else pa.concat_tables([self.rows, t])
            have = self.rows.num_rows


def _merge(runs: list[_Run], order: SortOrder, schema: Schema, budget: int) -> Iterator[pa.Table]:
    share = budget // max(1, len(runs))  # rows buffered per run, about
    while True:
        for r in runs:
            r.top_up(share)
        live = [r for r in runs if r.rows is not None and r.rows.num_rows]
        if not live:
            return
        data = pa.concat_tables([r.rows for r in live])
        keyed = sort_keys(data, order, schema)
        idx = pc.sort_indices(keyed[0], sort_keys=keyed[1]) if keyed is not None else \
            pa.array(range(data.num_rows), pa.int64())
        # the bound: the earliest, in sorted order, of the last buffered rows of runs with more
        # to come; every row sorted at or before it can go
        ends, start = [], 0
        for r in live:
            start += r.rows.num_rows
            if not r.exhausted:
                ends.append(start - 1)
        cut = data.num_rows if not ends else min(pc.index(idx, e).as_py() for e in ends) + 1
        emitted = idx.slice(0, cut)
        yield data.take(emitted)
        # what each run keeps: the rows not emitted, a suffix of its buffer (its rows sort in
        # the order they sit in the run)
        taken = pc.value_counts(_run_of(emitted, live)) if cut else None
        counts = dict(zip(taken.field("values").to_pylist(), taken.field("counts").to_pylist())) \
            if taken is not None else {}
        for i, r in enumerate(live):
            r.rows = r.rows.slice(counts.get(i, 0))


def _run_of(positions: pa.Array, live: list[_Run]) -> pa.Array:
    """The index (in ``live``) of the run each position of the merged buffer came from."""
    bounds, start = [], 0
    for r in live:
        start += r.rows.num_rows
        bounds.append(start)
    out = pa.nulls(len(positions), pa.int32()).fill_null(len(live) - 1)
    for i in range(len(live) - 2, -1, -1):
        out = pc.if_else(pc.less(positions, bounds[i]), pa.scalar(i, pa.int32()), out)
    return out
