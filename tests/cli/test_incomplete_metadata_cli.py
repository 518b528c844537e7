"""A table whose metadata names a manifest list or manifest that is gone: the commands that delete
what the metadata reaches (``drop --purge``, ``expire``) cannot know what it named, so they refuse
with exit 8 and change nothing; ``drop --purge --force`` deletes every file under the location."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from clirun import icectl
from support.tables import empty_table, write_text

EXIT_CORRUPT = 8


def _ok(*args: object) -> str:
    r = icectl(*args)
    assert r.returncode == 0, (args, r.stderr)
    return r.stdout


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def table(tmp_path: Path) -> Path:
    t = tmp_path / "db" / "t"
    empty_table(t, "id long")
    write_text(t, *(f"id\n{i}\n" for i in range(3)))
    return t


def _first_manifest(t: Path) -> Path:
    """The manifest of the first write, which every later snapshot still lists."""
    entries = json.loads(_ok("inspect", "manifests", t, "--json"))
    rows = entries if isinstance(entries, list) else entries["manifests"]
    first = min(rows, key=lambda m: m.get("sequence-number", m.get("added-snapshot-id")))
    path = first.get("path") or first.get("manifest-path")
    return Path(path.removeprefix("file:"))


@pytest.fixture
def broken(table: Path) -> Path:
    m = _first_manifest(table)
    data = json.loads(_ok("inspect", "files", table, "--json"))
    assert len(data if isinstance(data, list) else data["files"]) == 3
    m.unlink()
    return table


@pytest.mark.parametrize("dry_run", [False, True])
def test_drop_purge_refuses_a_table_with_a_missing_manifest(broken: Path, dry_run: bool) -> None:
    before = _tree(broken.parent)
    r = icectl("drop", broken, "--purge", *(["--dry-run"] if dry_run else []))
    assert r.returncode == EXIT_CORRUPT, r.stdout + r.stderr
    assert "is missing" in r.stderr and "--force" in r.stderr and r.stderr.count("\n") == 1
    assert r.stdout == ""
    assert _tree(broken.parent) == before


def test_drop_purge_refuses_a_table_with_a_missing_manifest_list(table: Path) -> None:
    snaps = json.loads(_ok("inspect", "snapshots", table, "--json"))
    rows = snaps if isinstance(snaps, list) else snaps["snapshots"]
    Path(rows[0]["manifest-list"].removeprefix("file:")).unlink()
    before = _tree(table.parent)
    r = icectl("drop", table, "--purge")
    assert r.returncode == EXIT_CORRUPT, r.stdout + r.stderr
    assert "manifest list" in r.stderr and "is missing" in r.stderr
    assert _tree(table.parent) == before


def test_drop_purge_force_deletes_everything_under_the_location(table: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.parquet"
    pq.write_table(pa.table({"id": pa.array([9], pa.int64())}), outside)
    _ok("append", table, outside)  # registered in place, outside the location: never deleted
    (table / "data" / "stray.bin").write_bytes(b"x")  # not in any metadata
    _first_manifest(table).unlink()
    broken = table
    out = json.loads(_ok("drop", broken, "--purge", "--force", "--json"))
    assert out["force"] is True and out["dropped"] is True
    assert not broken.exists()
    assert outside.exists() and str(outside) in out["kept-outside-location"]
    deleted = {Path(p).name for p in out["deleted-files"]}
    assert sum(n.endswith(".parquet") for n in deleted) == 3 and "stray.bin" in deleted  # lost manifest's file too


def test_drop_purge_force_dry_run_lists_and_keeps(broken: Path) -> None:
    before = _tree(broken.parent)
    r = icectl("drop", broken, "--purge", "--force", "--dry-run")
    assert r.returncode == 0, r.stderr
    assert sum(line.startswith("file\t") for line in r.stdout.splitlines()) == 3
    assert "would drop" in r.stderr and "purge every file under its location" in r.stderr
    assert _tree(broken.parent) == before


def test_force_without_purge_is_bad_usage(table: Path) -> None:
    before = _tree(table.parent)
    r = icectl("drop", table, "--force")
    assert r.returncode == 2 and "--purge" in r.stderr, r.stderr
    assert _tree(table.parent) == before


@pytest.mark.parametrize("args", [[], ["--dry-run"], ["--older-than", "0s", "--retain-last", "1"]])
def test_expire_refuses_a_table_with_a_missing_manifest(broken: Path, args: list[str]) -> None:
    before = _tree(broken.parent)
    r = icectl("expire", broken, *args)
    assert r.returncode == EXIT_CORRUPT, r.stdout + r.stderr
    assert "is missing" in r.stderr and r.stderr.count("\n") == 1
    assert _tree(broken.parent) == before


def test_drop_purge_of_a_whole_table_still_works(table: Path) -> None:
    out = json.loads(_ok("drop", table, "--purge", "--json"))
    assert out["force"] is False and out["dropped"] is True
    assert not table.exists()
