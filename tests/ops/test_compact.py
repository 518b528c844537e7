"""`icectl compact`: the reference's bin-pack planning, rows kept through deletes, the replace
snapshot (starting sequence number, dangling deletes removed), conflicts, the CLI."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icectl.errors import CommitConflict, InvalidInput
from icectl.ops.maintain.compact import CompactOptions, _Rules, compact_table, plan_compaction
from icectl.ops.delete.merge_on_read import delete_rows
from icectl.ops.maintain.rewrite_task import run_rewrite_task
from icectl.ops.write.rows import write_rows
from icectl.spec.manifests import ADDED, DATA, EQUALITY_DELETES, DataFile
from icectl.table.commit.row_delta import RowDeltaProducer
from icectl.table.table import Table

from clirun import icectl
from support.tables import MOR, empty_table, small_files
from tests.ops.ops_support import InProcess, files_on_disk, live_entries, rows


def test_compacts_small_files_through_position_deletes(tmp_path: Path) -> None:
    t = small_files(tmp_path / "t")
    delete_rows(t, "id in (1, 13, 27)")
    before = rows(t.location)
    start = Table.load(t.location).metadata.current_snapshot()
    r = compact_table(Table.load(t.location), engine=InProcess())
    assert r.committed and len(r.groups) == 2
    assert r.rewritten_data_files == 12 and r.added_data_files == 2
    assert r.removed_delete_files == 3  # every position delete file pointed at a rewritten file
    assert rows(t.location) == before and len(before) == 57
    entries = live_entries(t.location)
    assert [c for c, _ in entries] == [0, 0]
    snap = Table.load(t.location).metadata.current_snapshot()
    s = snap.summary
    assert s["operation"] == "replace"
    assert s["deleted-data-files"] == "12" and s["added-data-files"] == "2"
    assert s["removed-position-delete-files"] == "3" and s["removed-delete-files"] == "3"
    assert s["total-delete-files"] == "0" and s["total-records"] == "57"
    for _, e in entries:  # the new files keep the starting snapshot's data sequence number
        assert e.status == ADDED and e.sequence_number == start.sequence_number
        assert e.file_sequence_number == snap.sequence_number
        t_ = pq.read_table(e.data_file.file_path)
        assert [f.metadata[b"PARQUET:field_id"] for f in t_.schema] == [b"1", b"2"]


def test_planning_follows_the_reference_rules(tmp_path: Path) -> None:
    t = small_files(tmp_path / "t", n=4)
    _, _, groups = plan_compaction(t)  # 4 files per partition < min-input-files 5
    assert groups == []
    _, _, groups = plan_compaction(t, options=CompactOptions(min_input_files=4))
    assert [len(g.input_files) for g in groups] == [4, 4]
    assert [g.partition_values for g in groups] == [{"cat": "a"}, {"cat": "b"}]
    _, _, groups = plan_compaction(t, "cat = 'b'", CompactOptions(min_input_files=2))
    assert [g.partition_path for g in groups] == ["cat=b"]
    # a single small file is never a group; one with enough deletes is
    _, _, groups = plan_compaction(t, options=CompactOptions(min_input_files=1))
    assert len(groups) == 2
    with pytest.raises(InvalidInput, match="sort order"):
        plan_compaction(t, options=CompactOptions(strategy="sort"))
    with pytest.raises(InvalidInput, match="without columns"):
        plan_compaction(t, options=CompactOptions(strategy="zorder"))
    with pytest.raises(InvalidInput, match="unknown strategy"):
        plan_compaction(t, options=CompactOptions(strategy="hilbert"))
    with pytest.raises(InvalidInput, match="maximum file size"):
        plan_compaction(t, options=CompactOptions(target_file_size=10, max_file_size=10))


def test_expected_output_files_and_split_size_as_the_reference() -> None:
    mb = 1024 * 1024
    r = _Rules(CompactOptions(), 100 * mb, 75 * mb, 180 * mb)
    assert r.write_max == 140 * mb
    assert r.expected_output_files(50 * mb) == 1
    assert r.expected_output_files(1010 * mb) == 10  # the remainder spread over ten files
    assert r.expected_output_files(1080 * mb) == 11  # a remainder above the minimum: own file
    assert r.expected_output_files(1050 * mb) == 10
    assert r.split_size(50 * mb) == 100 * mb
    assert r.split_size(1010 * mb) == 101 * mb + 5 * 1024


def test_delete_file_threshold_rewrites_a_lone_file(tmp_path: Path) -> None:
    t = small_files(tmp_path / "t", n=1)
    delete_rows(t, "id = 1")
    assert plan_compaction(Table.load(t.location))[2] == []
    _, _, groups = plan_compaction(Table.load(t.location),
                                   options=CompactOptions(delete_file_threshold=1))
    assert [g.partition_path for g in groups] == ["cat=a"]
    r = compact_table(Table.load(t.location), options=CompactOptions(delete_file_threshold=1),
                      engine=InProcess())
    assert r.removed_delete_files == 1 and rows(t.location) == [
        (i, "a" if i < 5 else "b") for i in range(10) if i != 1]
    assert all(c == 0 for c, _ in live_entries(t.location))


def test_equality_deletes_applied_and_a_concurrent_one_still_applies(tmp_path: Path) -> None:
    t = small_files(tmp_path / "t")
    _equality_delete(t, "a", [3, 21])  # before the compaction: applied while rewriting

    def concurrent() -> None:  # committed while the tasks run: must still apply afterwards
        _equality_delete(Table.load(t.location), "a", [40, 51])

    r = compact_table(Table.load(t.location), engine=InProcess(after=concurrent))
    assert r.committed
    got = rows(t.location)
    assert not {(3, "a"), (21, "a"), (40, "a"), (51, "a")} & set(got)
    assert len(got) == 60 - 4
    kinds = sorted((c, e.data_file.content) for c, e in live_entries(t.location))
    # the first equality delete had nothing left to delete: removed; the concurrent one stays
    assert kinds == [(0, DATA), (0, DATA), (1, EQUALITY_DELETES)]


def _equality_delete(t: Table, cat: str, ids: list[int]) -> None:
    path = str(Path(t.location, "data", f"cat={cat}", f"eq-{ids[0]}.parquet"))
    schema = pa.schema([pa.field("id", pa.int64(), metadata={b"PARQUET:field_id": b"1"})])
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}, schema=schema), path)
    f = DataFile(content=EQUALITY_DELETES, file_path=path, file_format="PARQUET",
                 partition=(cat,), record_count=len(ids),
                 file_size_in_bytes=Path(path).stat().st_size, equality_ids=(1,), spec_id=0)
    RowDeltaProducer(t, t.metadata.current_snapshot_id,
                     added_deletes=[(f, f"cat={cat}")]).commit()


def test_concurrent_position_delete_on_an_input_is_a_conflict(tmp_path: Path) -> None:
    t = small_files(tmp_path / "t")
    initial = files_on_disk(t.location)
    by_delete: set[str] = set()

    def concurrent() -> None:
        before = files_on_disk(t.location)
        delete_rows(Table.load(t.location), "id = 2")
        by_delete.update(files_on_disk(t.location) - before)

    with pytest.raises(CommitConflict, match="run it again"):
        compact_table(Table.load(t.location), engine=InProcess(after=concurrent))
    assert by_delete and files_on_disk(t.location) == initial | by_delete  # nothing of ours left
    assert Table.load(t.location).metadata.current_snapshot().summary["operation"] == "delete"


def test_concurrent_append_is_fine_and_partial_progress_commits_per_group(tmp_path: Path) -> None:
    t = small_files(tmp_path / "t")
    engine = InProcess(after=lambda: write_rows(Table.load(t.location), pa.table({
        "id": pa.array([100], pa.int64()), "cat": ["a"]})) if engine.calls == 1 else None)
    r = compact_table(Table.load(t.location), None, CompactOptions(partial_progress=1),
                      engine=engine)
    assert len(r.snapshot_ids) == 2 and engine.calls == 2
    md = Table.load(t.location).metadata
    ops = [md.snapshot_by_id(s).summary["operation"] for s in r.snapshot_ids]
    assert ops == ["replace", "replace"]
    assert len(rows(t.location)) == 61


def test_files_of_an_older_spec_are_rewritten_into_the_current_one(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "t", "id long, cat string", properties=MOR)  # unpartitioned
    for i in range(3):
        write_rows(Table.load(t.location), pa.table({
            "id": pa.array(range(i * 4, i * 4 + 4), pa.int64()), "cat": ["a", "b", "a", "b"]}))
    p = subprocess.run([sys.executable, "-m", "icectl", "partition", "add", t.location, "cat"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    before = rows(t.location)
    r = compact_table(Table.load(t.location), options=CompactOptions(min_input_files=2),
                      engine=InProcess())
    assert [g.spec_id for g in r.groups] == [None]  # the older spec's files, one group
    assert rows(t.location) == before
    files = [e.data_file for _, e in live_entries(t.location)]
    assert sorted(f.partition for f in files) == [("a",), ("b",)]
    assert {f.spec_id for f in files} == {Table.load(t.location).metadata.spec.spec_id}


def test_sort_strategy_orders_rows(tmp_path: Path) -> None:
    t = small_files(tmp_path / "t", n=5)
    r = compact_table(Table.load(t.location), options=CompactOptions(strategy="sort",
                      sort_order="id desc"), engine=InProcess())
    assert r.committed
    for _, e in live_entries(t.location):
        ids = pq.read_table(e.data_file.file_path).column("id").to_pylist()
        assert ids == sorted(ids, reverse=True)
        assert e.data_file.sort_order_id is None  # not one of the table's orders


def test_target_size_rolls_output_files(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "t", "id long, s string", properties=MOR)
    for i in range(5):
        write_rows(Table.load(t.location), pa.table({
            "id": pa.array(range(i * 4000, i * 4000 + 4000), pa.int64()),
            # text that does not compress away: the 5 KB split overhead stays small beside a file
            "s": [random.Random(i * 4000 + j).randbytes(24).hex() for j in range(4000)]}))
    sizes = [e.data_file.file_size_in_bytes for _, e in live_entries(t.location)]
    target = sum(sizes) // 3
    # binpack: each file is 0.6 of the target and none can share a split of the target size
    # (as the reference packs them); sort reads the whole group and rolls at the write maximum
    # (target + half the way to 1.8 x target)
    r = compact_table(Table.load(t.location), options=CompactOptions(target_file_size=target),
                      engine=InProcess())
    assert len(r.groups) == 1 and len(r.groups[0].tasks) == 5 and r.added_data_files == 5
    r = compact_table(Table.load(t.location), options=CompactOptions(
        target_file_size=target, strategy="sort", sort_order="id"), engine=InProcess())
    out = [e.data_file for _, e in live_entries(t.location)]
    assert r.committed and 2 <= len(out) <= 3  # sorted rows compress better
    assert all(f.file_size_in_bytes <= 2 * target for f in out)  # the writer estimates
    assert len(rows(t.location)) == 20000


def test_task_is_plain_data_and_runs_in_worker_processes(tmp_path: Path) -> None:
    import pickle

    t = small_files(tmp_path / "t")
    _, _, groups = plan_compaction(t)
    task = groups[0].tasks[0]
    assert pickle.loads(pickle.dumps(task)) == task
    result = run_rewrite_task(task)
    assert pickle.loads(pickle.dumps(result)).rows_written == 30
    for f, _ in result.files:
        Path(f.file_path).unlink()
    r = compact_table(Table.load(t.location), workers=2)  # the local engine: spawned processes
    assert r.committed and len(rows(t.location)) == 60


def test_dry_run_writes_nothing_and_cli(tmp_path: Path) -> None:
    t = small_files(tmp_path / "t")
    before = files_on_disk(t.location)
    r = compact_table(Table.load(t.location), dry_run=True)
    assert not r.committed and len(r.groups) == 2 and files_on_disk(t.location) == before
    p = _cli("compact", t.location, "--dry-run", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["dry-run"] and out["rewritten-data-files-count"] == 12 and out["file-groups"] == 2
    assert files_on_disk(t.location) == before
    p = _cli("compact", t.location, "--strategy", "zorder")
    assert p.returncode == 2 and p.stdout == "" and len(p.stderr.strip().splitlines()) == 1
    p = _cli("compact", t.location, "--workers", "1", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["committed"] and out["added-data-files-count"] == 2
    assert out["summaries"][0]["operation"] == "replace"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return icectl(*args)


def test_a_failing_task_leaves_no_files_of_the_others(tmp_path: Path) -> None:
    from icectl.errors import StorageError

    t = small_files(tmp_path / "t")
    before = files_on_disk(t.location)
    victim = [e.data_file.file_path for _, e in live_entries(t.location)
              if e.data_file.partition == ("b",)][0]
    Path(victim).rename(victim + ".away")  # the second group's task cannot read it
    with pytest.raises(StorageError, match="away|cannot read|not found|No such"):
        compact_table(Table.load(t.location), engine=InProcess())
    Path(victim + ".away").rename(victim)
    assert files_on_disk(t.location) == before  # the first group's output was removed
