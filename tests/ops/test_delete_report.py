"""What `icectl delete` reports matches what it does (copy-on-write dry runs count the rows the
real run removes; a v3 delete names its one Puffin file once), and manifests listing only
deleted entries are not carried into later snapshots (as the reference's merging producers)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from icectl.io.manifest import records as avro
from icectl.ops.delete.merge_on_read import delete_rows
from icectl.ops.write.rows import write_rows
from icectl.table.table import Table

from support.tables import MOR, empty_table, with_files
from tests.ops.ops_support import files_on_disk as _files


def _table(tmp_path: Path, fv: int = 2) -> Table:
    t = empty_table(tmp_path / "t", "id long, cat string", partition="cat", format_version=fv,
                    properties=MOR)
    return with_files(t, 2, lambda i: {  # two files per partition
        "id": pa.array(range(100 * i, 100 * i + 60), pa.int64()), "cat": ["a", "b", "c"] * 20})


def test_copy_on_write_dry_run_counts_the_rows_the_real_run_removes(tmp_path: Path) -> None:
    t = _table(tmp_path)
    filt = "id < 40 or (cat = 'c' and id > 150)"
    before = _files(t)
    dry = delete_rows(t, filt, mode="copy-on-write", dry_run=True)
    assert _files(t) == before and not dry.committed
    real = delete_rows(Table.load(t.location), filt, mode="copy-on-write")
    assert real.committed
    assert dry.deleted_positions == real.deleted_positions > 0
    assert dry.files_with_row_deletes == real.files_with_row_deletes
    assert dry.removed_records == real.removed_records
    assert dry.deleted_positions + dry.removed_records == 40 + 3  # ids 0..39; c: 153, 156, 159


def test_a_v3_delete_names_its_one_puffin_file_once(tmp_path: Path) -> None:
    t = _table(tmp_path, fv=3)
    r = delete_rows(t, "id > 10 and id < 150", mode="merge-on-read")
    assert len(r.position_delete_files) == 1 and r.position_delete_files[0].endswith(".puffin")
    assert len(r.files_with_row_deletes) == 6 and r.summary["added-dvs"] == "6"
    p = subprocess.run([sys.executable, "-m", "icectl", "delete", t.location, "--filter",
                        "id = 5 or id = 7", "--mode", "merge-on-read"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    shown = [line.split()[-1] for line in p.stdout.splitlines()
             if line.startswith("position delete files")]
    assert shown == ["1"], p.stdout


def test_delete_help_names_both_operations() -> None:
    p = subprocess.run([sys.executable, "-m", "icectl", "delete", "--help"], capture_output=True,
                       text=True, env={"COLUMNS": "200", "PATH": ""})
    text = " ".join(p.stdout.split())
    assert "one `overwrite` snapshot" in text and "`delete` when files are only dropped" in text
    assert "as one `delete` snapshot" not in text


def _manifests(t: Table) -> list:
    t = Table.load(t.location)
    snap = t.metadata.current_snapshot()
    return avro.load_manifest_list(t.io, snap.manifest_list, t.metadata.format_version)


@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
def test_manifests_of_only_deleted_entries_are_dropped_on_the_next_commit(tmp_path: Path, mode: str) -> None:
    t = empty_table(tmp_path / "t", "id long, cat string", partition="cat", properties={
        **MOR, "commit.manifest-merge.enabled": "false"})
    write_rows(t, pa.table({"id": pa.array([1, 2], pa.int64()), "cat": ["a", "a"]}))
    write_rows(Table.load(t.location), pa.table({"id": pa.array([3], pa.int64()), "cat": ["b"]}))
    r = delete_rows(Table.load(t.location), "cat = 'a'", mode=mode)  # drops the first file whole
    assert r.removed_data_files
    dead = [m for m in _manifests(t)
            if (m.added_files_count or 0) + (m.existing_files_count or 0) == 0]
    assert len(dead) == 1 and dead[0].added_snapshot_id == r.snapshot_id  # this commit's record
    r2 = delete_rows(Table.load(t.location), "id = 3", mode=mode)
    paths = {m.manifest_path for m in _manifests(t)}
    assert dead[0].manifest_path not in paths  # not carried into the next snapshot
    assert all((m.added_files_count or 0) + (m.existing_files_count or 0) > 0
               or m.added_snapshot_id == r2.snapshot_id for m in _manifests(t))
