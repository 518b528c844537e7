"""`icectl compact --deletes`: position delete files merged per partition (positions of data
files no longer live dropped), dangling delete files removed, DVs left one per data file."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from icectl.engines import LocalEngine
from icectl.errors import CommitConflict
from icectl.io.manifest import records as avro
from icectl.ops.maintain.compact_deletes import compact_deletes
from icectl.ops.delete.merge_on_read import delete_rows
from icectl.table.table import Table
from support.tables import small_files
from clirun import icectl, icectl_process


def build(tmp_path: Path, fv: int = 2) -> str:
    loc = small_files(tmp_path / "t", 3, format_version=fv).location
    for i in range(3):  # one delete file per data file touched
        delete_rows(Table.load(loc), f"id = {i * 10} or id = {i * 10 + 6}")
    delete_rows(Table.load(loc), "id >= 20 and id < 30")  # drops the last write's files whole
    return loc


def live(loc: str) -> tuple[set[str], list]:
    t = Table.load(loc)
    snap = t.metadata.current_snapshot()
    data, deletes = set(), []
    for m in avro.load_manifest_list(t.io, snap.manifest_list, t.metadata.format_version):
        for e in avro.load_manifest(t.io, m):
            if e.is_live:
                (data.add(e.data_file.file_path) if e.data_file.content == 0 else deletes.append(e))
    return data, deletes


def rows(loc: str) -> list[str]:
    return sorted(icectl("scan", loc, "--format", "jsonl").stdout.splitlines())


def test_merges_per_partition_and_removes_dangling_deletes(tmp_path: Path) -> None:
    loc = build(tmp_path)
    before_rows = rows(loc)
    assert len(before_rows) == 16
    _, before = live(loc)
    assert len(before) == 6  # 2 partitions x 3 data files; the last write's two are dangling now
    dry = icectl("compact", loc, "--deletes", "--min-input-files", "2", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    d = json.loads(dry.stdout)
    assert d["dry-run"] and not d["committed"] and d["dangling-delete-files-count"] == 2
    assert d["rewritten-delete-files-count"] == 4 and d["file-groups"] == 2
    r = icectl_process("compact", loc, "--deletes", "--min-input-files", "2", "--workers", "2", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    s = out["summary"]
    assert s["operation"] == "replace"
    assert (s["removed-position-delete-files"], s["added-position-delete-files"]) == ("6", "2")
    assert s["total-delete-files"] == "2" and s["total-position-deletes"] == "4"
    assert rows(loc) == before_rows
    data, deletes = live(loc)
    assert len(deletes) == 2
    for e in deletes:
        t = pq.read_table(e.data_file.file_path)
        paths = t.column("file_path").to_pylist()
        assert set(paths) <= data and len(set(paths)) == 2  # two data files of one partition
        assert list(zip(paths, t.column("pos").to_pylist())) == sorted(zip(paths, t.column("pos").to_pylist()))
        assert e.sequence_number == Table.load(loc).metadata.current_snapshot().sequence_number
    # nothing left to do
    again = compact_deletes(Table.load(loc), min_input_files=2)
    assert not again.committed and again.groups == 0 and not again.dangling_delete_files


def test_defaults_leave_few_files_alone_but_drop_dangling_ones(tmp_path: Path) -> None:
    loc = build(tmp_path)
    out = compact_deletes(Table.load(loc), engine=LocalEngine(workers=1))
    assert out.committed and out.groups == 0 and len(out.dangling_delete_files) == 2
    assert len(live(loc)[1]) == 4


def test_v3_deletion_vectors_stay_one_per_data_file(tmp_path: Path) -> None:
    loc = build(tmp_path, fv=3)
    _, before = live(loc)
    assert all(e.data_file.file_format.upper() == "PUFFIN" for e in before)
    out = compact_deletes(Table.load(loc), min_input_files=1, rewrite_all=True)
    assert out.groups == 0 and len(out.dangling_delete_files) == 2
    _, after = live(loc)
    assert len(after) == 4 and len({e.data_file.referenced_data_file for e in after}) == 4


def test_a_concurrently_removed_delete_file_is_a_conflict_and_leaves_nothing(tmp_path: Path) -> None:
    loc = build(tmp_path)
    stale = Table.load(loc)  # planned on this version ...
    compact_deletes(Table.load(loc))  # ... while another run removed the dangling files
    files_before = set(Path(loc).rglob("*-deletes.parquet"))
    with pytest.raises(CommitConflict, match="no longer live"):
        compact_deletes(stale, min_input_files=2)
    assert set(Path(loc).rglob("*-deletes.parquet")) == files_before


def test_bad_options_are_refused(tmp_path: Path) -> None:
    loc = build(tmp_path)
    r = icectl("compact", loc, "--deletes", "--strategy", "sort")
    assert r.returncode == 2 and r.stderr.splitlines() == [
        "icectl: error: --strategy: a strategy other than binpack does not apply to compacting delete files"]
    r = icectl("compact", loc, "--deletes", "--min-input-files", "0")
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0


def test_a_failing_task_leaves_no_file_of_any_task(tmp_path: Path) -> None:
    from icectl.errors import CorruptMetadata

    loc = build(tmp_path)
    planned = compact_deletes(Table.load(loc), min_input_files=2, dry_run=True)
    # a file the merge reads (not a dangling one, which is dropped unread)
    victim = sorted(p for p in planned.rewritten_delete_files if "cat=b" in p)[0]
    Path(victim).write_bytes(b"not parquet at all")
    files_before = set(Path(loc).rglob("*.parquet"))
    version = Table.load(loc).version
    with pytest.raises(CorruptMetadata, match="unreadable"):
        compact_deletes(Table.load(loc), min_input_files=2, engine=LocalEngine(workers=2))
    assert set(Path(loc).rglob("*.parquet")) == files_before
    assert Table.load(loc).version == version
