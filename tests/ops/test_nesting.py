"""Tables never nest: `create` and `register` refuse a location at (exit 4), above or below
(exit 5) a table whose metadata files carry any of the names icectl reads, writing nothing; the
deleting commands' guard finds the table a file belongs to (local disks; S3 in
tests/objectstore/test_s3_nesting.py)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import pytest

from clirun import icectl
from icectl.errors import AlreadyExists, ValidationError
from icectl.io.storage.files import FileIO
from icectl.ops.metadata.create import build_create_metadata, create_table
from icectl.ops.maintain.file_removal import TableBoundary
from icectl.table.nesting import holds_table, parent_dirs, refuse_nesting
from icectl.table.table import Table

SCHEMA = "id long, v string"
UUID = "5d1c0a6e-8b36-4f4c-9a53-0b2e8c3f1e11"
# every name form of a metadata file icectl reads
FORMS = ["v1.metadata.json", "v1.gz.metadata.json", f"00001-{UUID}.metadata.json",
         f"00001-{UUID}.gz.metadata.json", "v1.metadata.json.gz"]


def foreign_table(loc: Path, form: str = "v1.metadata.json") -> Path:
    """A table at ``loc`` (made as another tool would: nothing checks for nesting) whose one
    metadata file carries the name ``form``."""
    Table.create(str(loc), build_create_metadata(str(loc), schema_text=SCHEMA))
    meta = loc / "metadata"
    data = (meta / "v1.metadata.json").read_bytes()
    for p in meta.iterdir():
        p.unlink()
    (meta / form).write_bytes(gzip.compress(data) if ".gz" in form else data)
    return loc


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def create(loc: Path):
    return icectl("create", str(loc), "--schema", SCHEMA)


def one_line(r) -> str:
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


@pytest.mark.parametrize("form", FORMS)
def test_create_below_a_table_is_refused(tmp_path: Path, form: str) -> None:
    outer = foreign_table(tmp_path / "w", form)
    before = tree(tmp_path)
    for loc in (outer / "db" / "t", outer / "data" / "x", outer / "metadata" / "x"):
        r = create(loc)
        assert r.returncode == 5, r.stderr
        assert f"it is inside the table at {outer}" in one_line(r)
    assert tree(tmp_path) == before  # nothing written, not even a directory
    with pytest.raises(ValidationError):
        create_table(str(outer / "db" / "t"), schema_text=SCHEMA)


@pytest.mark.parametrize("form", FORMS)
def test_create_above_a_table_is_refused(tmp_path: Path, form: str) -> None:
    inner = foreign_table(tmp_path / "w" / "db" / "inner", form)
    before = tree(tmp_path)
    for loc in (tmp_path / "w", tmp_path / "w" / "db", tmp_path):
        r = create(loc)
        assert r.returncode == 5, r.stderr
        assert f"the table at {inner} is inside it" in one_line(r)
    assert tree(tmp_path) == before


@pytest.mark.parametrize("form", FORMS)
def test_create_at_a_table_of_any_name_already_exists(tmp_path: Path, form: str) -> None:
    t = foreign_table(tmp_path / "t", form)
    before = tree(tmp_path)
    r = create(t)
    assert r.returncode == 4 and "a table already exists at" in one_line(r)
    assert tree(tmp_path) == before
    with pytest.raises(AlreadyExists):
        create_table(str(t), schema_text=SCHEMA)


def test_create_beside_a_table_and_over_non_table_directories_is_fine(tmp_path: Path) -> None:
    foreign_table(tmp_path / "wh" / "db" / "a")
    assert create(tmp_path / "wh" / "db" / "b").returncode == 0  # beside
    assert create(tmp_path / "wh" / "db" / "ab").returncode == 0  # a name that starts alike
    plain = tmp_path / "plain"
    (plain / "x" / "metadata").mkdir(parents=True)  # a metadata/ without metadata files
    (plain / "x" / "metadata" / "notes.txt").write_text("not a table")
    (plain / "y").mkdir()
    (plain / "y" / "v1.metadata.json").write_text("{}")  # a metadata file not under metadata/
    r = create(plain)
    assert r.returncode == 0, r.stderr
    # a metadata/ directory alone (a create that failed before its commit) is not a table either
    (tmp_path / "failed" / "metadata").mkdir(parents=True)
    assert create(tmp_path / "failed").returncode == 0


def test_symbolic_links_are_not_followed_looking_below(tmp_path: Path) -> None:
    foreign_table(tmp_path / "elsewhere" / "t")
    (tmp_path / "new").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "new" / "link")
    assert create(tmp_path / "new").returncode == 0


def test_parent_dirs_go_up_to_the_root_or_the_bucket() -> None:
    assert list(parent_dirs("/a/b/c")) == ["/a/b", "/a", "/"]
    assert list(parent_dirs("file:///a/b")) == ["/a", "/"]
    assert list(parent_dirs("s3://bucket/a/b")) == ["s3://bucket/a", "s3://bucket"]
    assert list(parent_dirs("s3://bucket")) == []


def test_refuse_nesting_without_at_leaves_the_location_itself_alone(tmp_path: Path) -> None:
    t = foreign_table(tmp_path / "t")
    io = FileIO()
    refuse_nesting(io, str(t), at=False)  # (register: the catalog's files are at the location)
    with pytest.raises(AlreadyExists):
        refuse_nesting(io, str(t))
    assert holds_table(io, str(t)) and not holds_table(io, str(tmp_path))


def _catalog_table(loc: Path) -> Path:
    """A table at ``loc`` whose only metadata file has a catalog's name (as pyiceberg's
    SqlCatalog writes them): what `register` adopts. Returns that file."""
    Table.create(str(loc), build_create_metadata(str(loc), schema_text=SCHEMA))
    meta = loc / "metadata"
    target = meta / f"00001-{UUID}.metadata.json"
    shutil.move(meta / "v1.metadata.json", target)
    (meta / "version-hint.text").unlink()
    return target


def test_register_below_or_above_a_table_is_refused(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    below = _catalog_table(wh / "db" / "t")
    foreign_table(wh / "db" / "t" / "nested")
    before = tree(tmp_path)
    r = icectl("register", "db.t", "-w", str(wh), "--metadata", str(below))
    assert r.returncode == 5, r.stderr
    assert f"the table at {wh / 'db' / 't' / 'nested'} is inside it" in one_line(r)
    above = _catalog_table(tmp_path / "wh2" / "db" / "t")
    foreign_table(tmp_path / "wh2" / "db")
    before = tree(tmp_path)
    r = icectl("register", "db.t", "-w", str(tmp_path / "wh2"), "--metadata", str(above))
    assert r.returncode == 5, r.stderr
    assert f"it is inside the table at {tmp_path / 'wh2' / 'db'}" in one_line(r)
    assert tree(tmp_path) == before


def test_register_with_no_table_around_adopts_it(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    f = _catalog_table(wh / "db" / "t")
    foreign_table(wh / "db" / "beside")
    r = icectl("register", "db.t", "-w", str(wh), "--metadata", str(f), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["version"] == 2
    assert icectl("register", "db.t", "-w", str(wh), "--metadata", str(f)).returncode == 4


def test_the_guard_names_the_table_a_file_belongs_to(tmp_path: Path) -> None:
    outer = foreign_table(tmp_path / "w")
    inner = foreign_table(tmp_path / "w" / "db" / "inner", f"00001-{UUID}.metadata.json")
    beside = foreign_table(tmp_path / "beside")
    io = FileIO()
    guard = TableBoundary(str(outer)).other_tables(io)
    assert guard.owner(f"{outer}/data/a.parquet") is None
    assert guard.owner(f"{outer}/metadata/snap-1.avro") is None
    assert guard.owner(f"{outer}/db/x.parquet") is None  # db/ itself is no table
    assert guard.owner(f"{inner}/data/a.parquet") == str(inner)
    assert guard.owner(f"{inner}/metadata/v1.metadata.json") == str(inner)
    assert guard.owner(f"file://{inner}/data/k=1/a.parquet") == str(inner)
    assert guard.owner(f"{beside}/data/a.parquet") == str(beside)  # registered in place
    assert guard.owner(f"{tmp_path}/incoming/a.parquet") is None  # in no table
    # the inner table's own files are its own, though a table is above it
    assert TableBoundary(str(inner)).other_tables(io).owner(f"{inner}/data/a.parquet") is None
    assert TableBoundary(str(inner)).other_tables(io).owner(f"{outer}/data/a.parquet") == str(outer)
    keep, skipped = guard.split([f"{outer}/data/a", f"{inner}/data/b", f"{inner}/c"], workers=4)
    assert keep == [f"{outer}/data/a"]
    assert skipped == [(f"{inner}/data/b", str(inner)), (f"{inner}/c", str(inner))]
    # through a symbolic link: the real path decides
    (inner / "data").mkdir()
    (outer / "data").mkdir()
    os.symlink(inner / "data", outer / "data" / "link", target_is_directory=True)
    assert guard.owner(f"{outer}/data/link/a.parquet") == str(inner)


def test_a_complete_listing_answers_the_guard_without_more_listings() -> None:
    """Orphans on an object store lists every key under the location once: the guard then lists
    no directory under it (one LIST each would cost a round trip a partition)."""

    class NoListing(FileIO):
        def list_names(self, path: str, prefix: str = "") -> list[str]:
            raise AssertionError(f"listed {path}")

    guard = TableBoundary("s3://b/w").other_tables(NoListing())
    guard.know_listing(["s3://b/w/metadata/v1.metadata.json", "s3://b/w/data/k=1/a.parquet",
                        f"s3a://b/w/db/inner/metadata/00001-{UUID}.metadata.json",
                        "s3://b/w/db/inner/data/b.parquet", "s3://b/w/x/metadata/notes.txt"])
    assert guard.owner("s3://b/w/data/k=1/a.parquet") is None
    assert guard.owner("s3://b/w/db/inner/data/b.parquet") == "s3://b/w/db/inner"
    assert guard.owner("s3://b/w/x/y.parquet") is None
    assert guard.owner("s3://b/w/new/dir/z.parquet") is None  # (no key there: no table)
