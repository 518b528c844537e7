"""expire keeps files outside the table location unless asked, and removes partition
directories it emptied."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from icectl.ops.write.append import append_files
from icectl.ops.metadata.create import create_table
from icectl.ops.delete.merge_on_read import delete_rows
from icectl.ops.maintain.expire import expire_snapshots
from icectl.ops.write.rows import write_rows
from icectl.table.table import Table
from clirun import icectl as _icectl


def _setup(tmp_path: Path) -> tuple[Table, Path]:
    loc = str(tmp_path / "wh" / "db" / "t")
    create_table(loc, schema_text="id long, cat string", partition_text="cat")
    outside = tmp_path / "landing" / "jan05.parquet"
    outside.parent.mkdir()
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64()), "cat": ["a", "a"]}), outside)
    append_files(Table.load(loc), [str(outside)])
    write_rows(Table.load(loc), pa.table({"id": pa.array([3], pa.int64()), "cat": ["b"]}))
    delete_rows(Table.load(loc), "id < 10")  # whole files: dropped from the table
    return Table.load(loc), outside


def test_expire_keeps_and_reports_files_outside_the_location(tmp_path: Path) -> None:
    t, outside = _setup(tmp_path)
    dry = _icectl("expire", t.location, "--older-than", "0s", "--retain-last", "1", "--dry-run", "--json")
    assert json.loads(dry.stdout)["kept-outside-location"] == [str(outside)]
    r = _icectl("expire", t.location, "--older-than", "0s", "--retain-last", "1", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["kept-outside-location"] == [str(outside)] and out["deleted-outside-location-count"] == 0
    assert out["deleted_data_files_count"] == 1 and outside.exists()
    assert "kept" in r.stderr and str(outside) in r.stderr
    text = _icectl("expire", t.location, "--older-than", "0s")
    assert text.returncode == 0


def test_delete_outside_location_deletes_them_as_iceberg_does(tmp_path: Path) -> None:
    t, outside = _setup(tmp_path)
    r = expire_snapshots(t, older_than_ms=t.metadata.last_updated_ms + 1, retain_last=1,
                         delete_outside_location=True)
    assert r.deleted_outside_location == 1 and not outside.exists() and r.kept_outside_location == ()


def test_expire_removes_partition_directories_it_emptied(tmp_path: Path) -> None:
    t, _outside = _setup(tmp_path)
    data = Path(t.location) / "data"
    assert (data / "cat=b").is_dir()
    keep = data / "cat=z"
    keep.mkdir()  # an empty directory expire did not empty: left alone
    r = expire_snapshots(t, older_than_ms=t.metadata.last_updated_ms + 1, retain_last=1)
    assert not (data / "cat=b").exists() and data.is_dir() and keep.is_dir()
    assert str(data / "cat=b") in r.removed_directories


def test_plain_check_finds_a_registered_file_that_was_moved_away(tmp_path: Path) -> None:
    loc = str(tmp_path / "wh" / "db" / "t")
    create_table(loc, schema_text="id long, cat string")
    landing = tmp_path / "landing" / "day60.parquet"
    landing.parent.mkdir()
    pq.write_table(pa.table({"id": pa.array([1], pa.int64()), "cat": ["a"]}), landing)
    append_files(Table.load(loc), [str(landing)])
    write_rows(Table.load(loc), pa.table({"id": pa.array([2], pa.int64()), "cat": ["b"]}))
    r = _icectl("check", loc, "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["checked"]["files-verified"] == 1
    (tmp_path / "archive").mkdir()
    landing.rename(tmp_path / "archive" / landing.name)  # the usual housekeeping
    r = _icectl("check", loc, "--json")
    out = json.loads(r.stdout)
    assert r.returncode == 10 and [p["code"] for p in out["problems"]] == ["file-missing"]
    assert out["problems"][0]["where"] == str(landing)
