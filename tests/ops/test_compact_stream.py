"""Compaction streams (issue 21 item 4): a rewrite task hands reader batches to the rolling
writers instead of holding its group as one table; a sort spills sorted runs and merges them.

The reference for "the same result" is the whole-group path the task had before: all the rows
the task reads (deletes applied, in input order) as one table, split by partition and stably
sorted (``partitioned_batches``). The streamed task, with the default buffer and with a buffer
so small that every sort spills, must write exactly those rows in exactly that order."""

from __future__ import annotations

import math
import os
import random
import tempfile
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icectl.io.formats.parquet_write import ParquetWriteOptions, RollingWriter, write_rolling
from icectl.io.storage.files import FileIO
from icectl.ops.write import data_sink
from icectl.ops.maintain import rewrite_task
from icectl.ops.maintain.compact import CompactOptions, plan_compaction
from icectl.ops.compute import partitioned_batches
from icectl.ops.delete.merge_on_read import delete_rows
from icectl.ops.maintain.rewrite_task import run_rewrite_task
from icectl.ops.write.rows import write_rows
from icectl.scan.reader import open_scan
from icectl.spec.manifests import EQUALITY_DELETES, DataFile
from icectl.spec.partitioning import PartitionSpec
from icectl.spec.schema import Schema
from icectl.spec.sorting import SortOrder
from icectl.table.commit.row_delta import RowDeltaProducer
from icectl.table.table import Table

from support.tables import empty_table, with_files

SCHEMA = ("id long not null, cat string, v double, f float, st struct<a: int, b: string>, "
          "l list<double>, m map<string, long>")
FLOATS = [None, math.nan, -0.0, 0.0, -1.5, 2.25, -1e300, 1e-300]


def _create(tmp_path: Path, partition: str | None = "cat", sort: str | None = None,
            props: dict | None = None) -> Table:
    return empty_table(tmp_path / "t", SCHEMA, partition=partition, sort=sort,
                       properties={"write.delete.mode": "merge-on-read", **(props or {})})


def _rows(rnd: random.Random, start: int, n: int) -> pa.Table:
    def fl() -> Any:
        return rnd.choice(FLOATS) if rnd.random() < 0.5 else rnd.uniform(-5, 5)

    ids = list(range(start, start + n))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "cat": [rnd.choice(["a", "b", None]) for _ in ids],
        "v": pa.array([fl() for _ in ids], pa.float64()),
        "f": pa.array([fl() if rnd.random() < 0.9 else None for _ in ids], pa.float32()),
        "st": [None if rnd.random() < 0.1 else {"a": rnd.choice([None, -2, 0, 3]), "b": rnd.choice(["x", None])}
               for _ in ids],
        "l": pa.array([None if rnd.random() < 0.1 else [fl() for _ in range(rnd.randrange(3))] for _ in ids],
                      pa.list_(pa.float64())),
        "m": pa.array([None if rnd.random() < 0.1 else [(f"k{j}", rnd.choice([None, j - 1]))
                                                        for j in range(rnd.randrange(3))] for _ in ids],
                      pa.map_(pa.string(), pa.int64())),
    })


def _equality_delete(t: Table, cat: str, ids: list[int]) -> None:
    path = str(Path(t.location, "data", f"cat={cat}", f"eq-{uuid.uuid4()}.parquet"))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False, metadata={b"PARQUET:field_id": b"1"})])
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}, schema=schema), path)
    f = DataFile(content=EQUALITY_DELETES, file_path=path, file_format="PARQUET", partition=(cat,),
                 record_count=len(ids), file_size_in_bytes=Path(path).stat().st_size, equality_ids=(1,),
                 spec_id=t.metadata.spec.spec_id)
    RowDeltaProducer(t, t.metadata.current_snapshot_id, added_deletes=[(f, f"cat={cat}")]).commit()


def _table(tmp_path: Path, files: int = 6, n: int = 400, **kw: Any) -> Table:
    rnd = random.Random(21)
    t = with_files(_create(tmp_path, **kw), files, lambda i: _rows(rnd, i * n, n))
    gone = rnd.sample(range(files * n), files * n // 10)
    delete_rows(Table.load(t.location), f"id in ({', '.join(map(str, gone[: len(gone) // 2]))})")  # positions
    if kw.get("partition") == "cat" or "partition" not in kw:
        _equality_delete(Table.load(t.location), "a", gone[len(gone) // 2:])
    return Table.load(t.location)


def _norm(v: Any) -> Any:
    """Values compared exactly: NaN equals NaN, -0.0 differs from 0.0."""
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, dict):
        return {k: _norm(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_norm(x) for x in v]
    return v


def _whole_group_reference(task: Any) -> dict[tuple, list]:
    """What the task wrote before it streamed: every row it reads as one table, split by
    partition and stably sorted, per partition."""
    schema = Schema.from_json(task.schema)
    spec = PartitionSpec.from_json(task.spec)
    order = SortOrder.from_json(task.sort_order) if task.sort_order else None
    got: list[pa.RecordBatch] = []
    table = rewrite_task._TaskTable(task, schema, spec, order)
    rewrite_task._stream_rows(table, schema, task, lambda b: got.append(b) if b.num_rows else None)
    whole = pa.Table.from_batches(got)
    return {b.partition: _norm(b.rows.to_pylist()) for b in partitioned_batches(whole, schema, spec, order)}


def _written(result: Any) -> dict[tuple, list]:
    out: dict[tuple, list] = {}
    for f, _ in result.files:
        out.setdefault(f.partition, []).extend(_norm(pq.read_table(f.file_path).to_pylist()))
        assert pq.read_metadata(f.file_path).num_rows == f.record_count
    return out


def _scan_rows(t: Table) -> list:
    return sorted(map(repr, _norm(pa.Table.from_batches(list(open_scan(Table.load(t.location)).batches()))
                                  .to_pylist())))


@pytest.mark.parametrize("sort", [None, "v desc nulls last, id", "st.a desc, f asc nulls last"])
def test_streamed_and_spilled_tasks_write_the_whole_group_rows_in_its_order(tmp_path: Path, sort: Any) -> None:
    t = _table(tmp_path)
    opts = CompactOptions(strategy="sort" if sort else "binpack", sort_order=sort, min_input_files=2)
    _, _, groups = plan_compaction(t, options=opts)
    assert [g.partition for g in groups] == [(None,), ("a",), ("b",)]
    total = []
    for task in (task for g in groups for task in g.tasks):
        want = _whole_group_reference(task)
        streamed = run_rewrite_task(task)
        small = run_rewrite_task(replace(task, buffer_bytes=5_000, operation_id=str(uuid.uuid4())))
        assert _written(streamed) == want and _written(small) == want
        assert len(streamed.files) == len(small.files) == len(want)
        assert streamed.spilled_runs == 0 and (small.spilled_runs >= 3 if sort else small.spilled_runs == 0)
        assert streamed.rows_read == small.rows_read == streamed.rows_written
        total += [repr(r) for rows in want.values() for r in rows]
    assert sorted(total) == _scan_rows(t)  # deletes applied: the table's rows, none lost


def test_files_of_an_older_spec_fan_out_per_partition_with_a_small_buffer(tmp_path: Path) -> None:
    t = _table(tmp_path, partition=None, sort="id desc")
    from typer.testing import CliRunner

    from icectl.cli.app import app

    r = CliRunner().invoke(app, ["partition", "add", t.location, "cat"])
    assert r.exit_code == 0, r.output
    _, _, groups = plan_compaction(Table.load(t.location), options=CompactOptions(min_input_files=2))
    (task,) = [task for g in groups for task in g.tasks]
    want = _whole_group_reference(task)
    assert set(want) == {(None,), ("a",), ("b",)}
    got = run_rewrite_task(replace(task, buffer_bytes=20_000))
    assert _written(got) == want and got.spilled_runs >= 3
    unsorted = replace(task, sort_order=None, buffer_bytes=20_000, operation_id=str(uuid.uuid4()))
    assert _written(run_rewrite_task(unsorted)) == _whole_group_reference(unsorted)


def _peak_allocations(monkeypatch: Any) -> list[int]:
    """pyarrow's allocated bytes, sampled every time rows reach the sink or a row group is
    written (where a task holds the most)."""
    samples: list[int] = []
    for cls, name in ((data_sink.DataFileSink, "write"), (RollingWriter, "_write_group")):
        real = getattr(cls, name)

        def sampled(self: Any, *a: Any, _real: Any = real, **k: Any) -> Any:
            samples.append(pa.total_allocated_bytes())
            out = _real(self, *a, **k)
            samples.append(pa.total_allocated_bytes())
            return out

        monkeypatch.setattr(cls, name, sampled)
    return samples


@pytest.mark.parametrize("sort", [None, "id desc"])
def test_a_group_many_times_the_memory_cap_streams(tmp_path: Path, monkeypatch: Any, sort: Any) -> None:
    t = _create(tmp_path, partition=None, props={"write.parquet.row-group-size-bytes": "200000"})
    for i in range(16):
        write_rows(Table.load(t.location), pa.table({
            "id": pa.array(range(i * 20_000, (i + 1) * 20_000), pa.int64()), "cat": ["x" * 40] * 20_000}))
    opts = CompactOptions(strategy="sort" if sort else "binpack", sort_order=sort, min_input_files=2)
    _, _, groups = plan_compaction(Table.load(t.location), options=opts)
    (task,) = [task for g in groups for task in g.tasks]  # one task reads all sixteen files
    held = sum(b.nbytes for b in _whole_group_reference_batches(task))
    assert held > 20_000_000
    samples = _peak_allocations(monkeypatch)
    base = pa.total_allocated_bytes()
    result = run_rewrite_task(replace(task, buffer_bytes=400_000))
    # a sorted run per reader batch (each bigger than the buffer), none without a sort
    assert result.rows_written == 320_000 and result.spilled_runs == (16 if sort else 0)
    assert max(samples) - base < held / 4  # the whole group as one table would be all of it
    ids = [i for f, _ in result.files for i in pq.read_table(f.file_path).column("id").to_pylist()]
    read = [i for b in _whole_group_reference_batches(task) for i in b.column("id").to_pylist()]
    assert ids == (sorted(read, reverse=True) if sort else read)


def _whole_group_reference_batches(task: Any) -> list[pa.RecordBatch]:
    schema = Schema.from_json(task.schema)
    got: list[pa.RecordBatch] = []
    table = rewrite_task._TaskTable(task, schema, PartitionSpec.from_json(task.spec), None)
    rewrite_task._stream_rows(table, schema, task, got.append)
    return got


def test_spill_files_are_gone_on_success_and_on_failure(tmp_path: Path, monkeypatch: Any) -> None:
    t = _table(tmp_path, files=4)
    _, _, groups = plan_compaction(t, options=CompactOptions(strategy="sort", sort_order="v", min_input_files=2))
    task = replace(groups[1].tasks[0], buffer_bytes=5_000)
    listed = set(os.listdir(tempfile.gettempdir()))
    spills: list[Any] = []  # every spill file made, held here so it outlives its writer
    real_temporary = tempfile.TemporaryFile

    def recorded(*args: Any, **kwargs: Any) -> Any:
        f = real_temporary(*args, **kwargs)
        spills.append(f)
        return f

    monkeypatch.setattr(tempfile, "TemporaryFile", recorded)
    ok = run_rewrite_task(task)
    assert ok.spilled_runs >= 3 and len(spills) == ok.spilled_runs
    assert all(f.closed for f in spills)
    spills.clear()
    before = {str(p) for p in Path(t.location).rglob("*")}
    calls = [0]
    real = RollingWriter._write_group

    def failing(self: Any) -> None:  # the second row group: a file is open, runs are merging
        calls[0] += 1
        if calls[0] == 2:
            raise OSError("disk gone")
        real(self)

    monkeypatch.setattr(RollingWriter, "_write_group", failing)
    with pytest.raises(OSError, match="disk gone"):
        run_rewrite_task(replace(task, operation_id=str(uuid.uuid4()),
                                 properties={**task.properties, "write.parquet.row-group-size-bytes": "2000"}))
    assert calls[0] == 2
    assert spills and all(f.closed for f in spills)  # the anonymous spill files are closed, so gone
    assert {str(p) for p in Path(t.location).rglob("*")} == before  # no partial output
    assert not {n for n in set(os.listdir(tempfile.gettempdir())) - listed if n.startswith("icectl-sort")}


def test_a_drop_filter_past_the_buffer_reads_the_input_again(tmp_path: Path) -> None:
    t = _create(tmp_path, partition=None)
    for i in range(3):
        write_rows(Table.load(t.location), _rows(random.Random(i), i * 3000, 3000))
    _, _, groups = plan_compaction(Table.load(t.location), options=CompactOptions(min_input_files=2))
    (task,) = [task for g in groups for task in g.tasks]
    # the first file's last row and the third file's first row match; the second file none
    task = replace(task, drop_filter="id = 2999 or id = 6000")
    roomy = run_rewrite_task(task)
    tight = run_rewrite_task(replace(task, buffer_bytes=1_000, operation_id=str(uuid.uuid4())))
    for r in (roomy, tight):
        assert r.rows_read == 9000 and r.rows_dropped == 2 and r.rows_written == 5998
        assert r.rewritten == (task.inputs[0].path, task.inputs[2].path)
    assert _written(roomy) == _written(tight)


def test_rows_given_in_pieces_roll_like_rows_given_at_once(tmp_path: Path) -> None:
    schema = Schema.from_json({"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "required": False, "type": "long"},
        {"id": 2, "name": "s", "required": False, "type": "string"}]})
    data = pa.table({"id": pa.array(range(100_000), pa.int64()), "s": [f"v{i % 977}-{i * 2654435761 % 2**32:x}" for i in range(100_000)]})
    opts = ParquetWriteOptions(target_file_size_bytes=300_000, row_group_size_bytes=150_000, compression="zstd")
    names = iter(range(1000))

    def next_path() -> str:
        return str(tmp_path / f"{next(names)}.parquet")

    whole = write_rolling(FileIO(), data, schema, opts, next_path)
    w = RollingWriter(FileIO(), schema, opts, next_path)
    for b in data.to_batches(max_chunksize=3_000):
        w.write(b)
    pieces = w.close()
    assert len(pieces) == len(whole) >= 3
    # the bytes per row are learnt as rows come: files roll within a row group of the same place
    for a, b in zip(pieces, whole):
        assert abs(a.record_count - b.record_count) <= b.record_count // 100
    assert pa.concat_tables([pq.read_table(f.path) for f in pieces]).column("id").to_pylist() == list(range(100_000))
