"""Tables another catalog manages (pyiceberg's SqlCatalog on sqlite): read by icectl through
their location or a metadata file, refused for writes with the reason, adopted by `register`."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest

from icectl.errors import UnsupportedFeature, ValidationError
from icectl.table.table import Table
from clirun import icectl


def _icectl(*args: str) -> subprocess.CompletedProcess:
    return icectl(*args)



def _catalog(tmp_path: Path):
    from pyiceberg.catalog.sql import SqlCatalog

    wh = tmp_path / "wh"
    wh.mkdir()
    cat = SqlCatalog("t", uri=f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=f"file://{wh}")
    cat.create_namespace("db")
    return cat, wh


def _rows(n: int, start: int = 0) -> pa.Table:
    return pa.table({
        "id": pa.array(range(start, start + n), pa.int64()),
        "cat": pa.array([["a", "b", None][i % 3] for i in range(start, start + n)], pa.string()),
        "v": pa.array([float(i) / 4 if i % 5 else None for i in range(start, start + n)], pa.float64()),
    })


@pytest.fixture
def sql_table(tmp_path: Path):
    """A partitioned pyiceberg table with three appends and a delete: five metadata files."""
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import DoubleType, LongType, NestedField, StringType

    cat, wh = _catalog(tmp_path)
    schema = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "cat", StringType(), required=False),
                    NestedField(3, "v", DoubleType(), required=False))
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="cat"))
    t = cat.create_table("db.events", schema=schema, partition_spec=spec)
    for k in range(3):
        t.append(_rows(10, 10 * k))
    t.delete("id = 4")
    t = cat.load_table("db.events")
    return cat, wh, t


def _location(t) -> Path:
    return Path(t.location().removeprefix("file://"))


def _metadata_file(t) -> Path:
    return Path(t.metadata_location.removeprefix("file://"))


def test_the_location_reads_the_newest_catalog_file(sql_table) -> None:
    _cat, _wh, t = sql_table
    loc = _location(t)
    assert not list((loc / "metadata").glob("v*.metadata.json"))  # catalog names only
    tbl = Table.load(str(loc))
    assert tbl.metadata_location.endswith(_metadata_file(t).name)
    assert tbl.metadata.current_snapshot_id == t.metadata.current_snapshot_id
    assert tbl.read_only and "managed by a catalog" in tbl.read_only


@pytest.mark.parametrize("how", ["location", "metadata-file"])
def test_inspect_plan_scan_and_check(sql_table, how: str) -> None:
    _cat, _wh, t = sql_table
    arg = str(_location(t)) if how == "location" else str(_metadata_file(t))
    r = _icectl("inspect", "table", arg, "--json")
    assert r.returncode == 0, r.stderr
    assert str(json.loads(r.stdout)["current-snapshot-id"]) == str(t.metadata.current_snapshot_id)
    expected = sorted(tuple(r.values()) for r in t.scan().to_arrow().to_pylist())
    r = _icectl("scan", arg, "--format", "jsonl")
    assert r.returncode == 0, r.stderr
    got = sorted(tuple(json.loads(line).values()) for line in r.stdout.splitlines())
    assert got == expected and len(got) == 29
    # planning agrees with pyiceberg's on a filter
    r = _icectl("plan", arg, "--filter", "cat = 'b'", "--json")
    assert r.returncode == 0, r.stderr
    planned = sorted(f["path"] for f in json.loads(r.stdout)["files"])
    theirs = sorted(task.file.file_path for task in t.scan(row_filter="cat = 'b'").plan_files())
    assert [p.removeprefix("file:") .lstrip("/") for p in planned] == [p.removeprefix("file:").lstrip("/") for p in theirs]
    r = _icectl("check", arg, "--deep", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["clean"], r.stdout
    r = _icectl("orphans", arg, "--json")
    assert r.returncode == 0, r.stderr


def test_an_older_metadata_file_reads_that_version(sql_table) -> None:
    _cat, _wh, t = sql_table
    first = sorted((_location(t) / "metadata").glob("00001-*.metadata.json"))[0]
    r = _icectl("scan", str(first), "--format", "jsonl")
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 10, r.stderr


@pytest.mark.parametrize("command", [
    ["append", "{t}", "{f}"], ["write", "{t}", "{f}"], ["delete", "{t}", "--filter", "id = 1"],
    ["properties", "set", "{t}", "a=b"], ["expire", "{t}", "--older-than", "0s"],
    ["orphans", "{t}", "--delete", "--older-than", "30d"],
])
def test_writes_are_refused_with_the_reason(sql_table, tmp_path: Path, command: list[str]) -> None:
    import pyarrow.parquet as pq

    _cat, _wh, t = sql_table
    f = tmp_path / "more.parquet"
    pq.write_table(_rows(2, 100), f)
    before = sorted(p.name for p in (_location(t) / "metadata").iterdir())
    for arg in (str(_location(t)), str(_metadata_file(t))):
        r = _icectl(*[c.format(t=arg, f=f) for c in command])
        assert r.returncode == 9, (command, r.stderr)
        [line] = r.stderr.strip().splitlines()
        assert "managed by a catalog" in line and "icectl register" in line, line
    assert sorted(p.name for p in (_location(t) / "metadata").iterdir()) == before


def test_two_files_with_the_newest_number_are_ambiguous(sql_table) -> None:
    _cat, _wh, t = sql_table
    newest = _metadata_file(t)
    number = newest.name.split("-", 1)[0]
    twin = newest.with_name(f"{number}-00000000-0000-4000-8000-000000000000.metadata.json")
    shutil.copy(newest, twin)
    r = _icectl("inspect", "table", str(_location(t)))
    assert r.returncode == 5 and len(r.stderr.strip().splitlines()) == 1 and "name the file" in r.stderr
    with pytest.raises(ValidationError):
        Table.load(str(_location(t)))
    # naming the file decides it
    assert _icectl("inspect", "table", str(newest)).returncode == 0


def test_a_missing_metadata_file_is_not_found(tmp_path: Path) -> None:
    r = _icectl("scan", str(tmp_path / "metadata" / "00003-x.metadata.json"))
    assert r.returncode == 3 and "metadata file not found" in r.stderr


def test_register_adopts_the_table_and_pyiceberg_rows_stay(sql_table) -> None:
    _cat, wh, t = sql_table
    newest = _metadata_file(t)
    number = int(newest.name.split("-", 1)[0])
    r = _icectl("register", "db.events", "--warehouse", str(wh), "--metadata", str(newest), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["version"] == number + 1
    loc = _location(t)
    assert (loc / "metadata" / f"v{number + 1}.metadata.json").exists()
    assert (loc / "metadata" / "version-hint.text").read_text() == str(number + 1)
    tbl = Table.load(str(loc))
    assert tbl.read_only is None and tbl.version == number + 1
    assert [e.metadata_file for e in tbl.metadata.metadata_log][-1].endswith(newest.name)
    # now a filesystem table: icectl commits to it, and the rows are pyiceberg's plus the new ones
    import pyarrow.parquet as pq

    f = loc.parent / "more.parquet"
    pq.write_table(_rows(3, 200), f)
    r = _icectl("append", str(loc), str(f), "--rewrite-spanning")
    assert r.returncode == 0, r.stderr
    r = _icectl("scan", str(loc), "--format", "jsonl")
    assert len(r.stdout.splitlines()) == 32
    # registering again: a filesystem table is there
    r = _icectl("register", "db.events", "--warehouse", str(wh), "--metadata", str(newest))
    assert r.returncode == 4


def test_register_refuses_a_table_located_elsewhere(sql_table, tmp_path: Path) -> None:
    _cat, _wh, t = sql_table
    other = tmp_path / "other-wh"
    other.mkdir()
    r = _icectl("register", "db.events", "--warehouse", str(other), "--metadata", str(_metadata_file(t)))
    assert r.returncode == 5 and len(r.stderr.strip().splitlines()) == 1
    assert "location" in r.stderr and not (other / "db").exists()


def test_read_only_table_refuses_commits_in_the_library(sql_table) -> None:
    _cat, _wh, t = sql_table
    tbl = Table.load(str(_metadata_file(t)))
    with pytest.raises(UnsupportedFeature):
        tbl.commit(lambda md: md)


def test_gzip_catalog_metadata_is_read(sql_table) -> None:
    import gzip

    _cat, _wh, t = sql_table
    newest = _metadata_file(t)
    number = int(newest.name.split("-", 1)[0])
    # the same metadata, gzip-compressed, as the next catalog file (Java's gzip naming)
    gz = newest.with_name(f"{number + 1:05d}-11111111-2222-4333-8444-555555555555.gz.metadata.json")
    gz.write_bytes(gzip.compress(newest.read_bytes()))
    for arg in (str(_location(t)), str(gz)):
        r = _icectl("inspect", "table", arg, "--json")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["metadata-file"].endswith(gz.name)
        r = _icectl("scan", arg, "--format", "jsonl")
        assert r.returncode == 0 and len(r.stdout.splitlines()) == 29, r.stderr
