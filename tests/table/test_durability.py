"""Durability of commits: metadata flushed before it becomes visible, a no-replace fallback that
never shows a half-written version, unfinished newest versions recognised and repairable, and a
full disk reported as a storage error wherever icectl writes."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys

import pyarrow as pa
import pytest

from icectl.errors import CorruptMetadata, StorageError
from icectl.io.storage import local as files_mod  # the local store's primitives
from icectl.io.storage.files import DestinationExists, FileIO
from icectl.spec.metadata import with_properties
from icectl.table import store
from icectl.table.table import Table

from conftest import make_metadata


def _fd_path(fd: int) -> str:
    return os.readlink(f"/proc/self/fd/{fd}")


def test_new_version_and_directory_synced_before_and_after_the_rename(location, monkeypatch):
    Table.create(location, make_metadata(location))
    t = Table.load(location)
    events = []
    real_fsync, real_rename = os.fsync, files_mod._local_rename_no_replace

    def fsync(fd):
        events.append(("fsync", _fd_path(fd)))
        return real_fsync(fd)

    def rename(src, dst):
        events.append(("rename", dst))
        return real_rename(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(files_mod, "_local_rename_no_replace", rename)
    t.commit(lambda md: with_properties(md, {"a": "1"}))
    meta = os.path.realpath(os.path.join(location, "metadata"))
    i = events.index(("rename", os.path.join(location, "metadata", "v2.metadata.json")))
    before, after = events[:i], events[i + 1:]
    synced_files = [p for op, p in before if op == "fsync" and p.endswith(".metadata.json")]
    assert synced_files and os.path.dirname(synced_files[0]) == meta  # the temp file's bytes
    assert ("fsync", meta) in before and ("fsync", meta) in after


@pytest.fixture
def no_link_no_renameat2(monkeypatch):
    """A filesystem without hard links and without RENAME_NOREPLACE."""
    monkeypatch.setattr(files_mod, "_get_renameat2", lambda: None)

    def no_link(src, dst):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_link)
    created = []
    real_open = os.open

    def watch_open(path, flags, *args, **kw):
        if flags & os.O_CREAT:
            created.append(os.fsdecode(path))
        return real_open(path, flags, *args, **kw)

    monkeypatch.setattr(os, "open", watch_open)
    return created


def test_fallback_rename_never_creates_the_target_to_fill_it(tmp_path, no_link_no_renameat2):
    io = FileIO()
    src, dst = str(tmp_path / "tmp.json"), str(tmp_path / "v1.metadata.json")
    io.write_exclusive(src, b"x" * 10_000, durable=True)
    io.rename_no_replace(src, dst, durable=True)
    assert open(dst, "rb").read() == b"x" * 10_000 and not os.path.exists(src)
    # the target only ever appears by a rename of the finished file, never created and then written
    assert dst not in no_link_no_renameat2
    io.write_exclusive(src, b"y")
    with pytest.raises(DestinationExists):
        io.rename_no_replace(src, dst)
    assert open(dst, "rb").read() == b"x" * 10_000 and os.path.exists(src)
    os.mkdir(str(tmp_path / "v2.metadata.json.lock"))  # another writer holds the name
    with pytest.raises(DestinationExists):
        io.rename_no_replace(src, str(tmp_path / "v2.metadata.json"))
    assert not os.path.exists(str(tmp_path / "v2.metadata.json"))


def test_commits_work_on_the_fallback(location, no_link_no_renameat2):
    t = Table.create(location, make_metadata(location))
    t.commit(lambda md: with_properties(md, {"a": "1"}))
    assert Table.load(location).version == 2
    assert not any(n.endswith(".lock") for n in os.listdir(os.path.join(location, "metadata")))


def _table_with_unfinished_v4(location, hint="3"):
    t = Table.create(location, make_metadata(location))
    t.commit(lambda md: with_properties(md, {"a": "1"}))
    t.commit(lambda md: with_properties(md, {"b": "2"}))
    d = os.path.join(location, "metadata")
    data = open(os.path.join(d, "v3.metadata.json"), "rb").read()
    with open(os.path.join(d, "v4.metadata.json"), "wb") as f:
        f.write(data[: len(data) // 2])  # a crash in the middle of writing v4
    with open(os.path.join(d, "version-hint.text"), "w") as f:
        f.write(hint)
    return os.path.join(d, "v4.metadata.json")


def test_unfinished_newest_version_is_recognised_and_repairable(location):
    v4 = _table_with_unfinished_v4(location)
    io = FileIO()
    with pytest.raises(store.IncompleteMetadata, match=r"v4.metadata.json is incomplete.*v3 is the last complete"):
        Table.load(location)
    found = store.find_incomplete_versions(io, location)
    assert [(f.version, f.path, f.previous_version) for f in found] == [(4, v4, 3)]
    os.rename(v4, found[0].set_aside_path)  # the repair the error message gives (mv v4 v4.incomplete)
    assert os.path.exists(v4 + ".incomplete") and not os.path.exists(v4)
    t = Table.load(location)
    assert t.version == 3
    t.commit(lambda md: with_properties(md, {"c": "3"}))
    assert Table.load(location).version == 4 and store.find_incomplete_versions(io, location) == []


def test_unfinished_version_is_reported_by_commands(location):
    v4 = _table_with_unfinished_v4(location)
    r = subprocess.run([sys.executable, "-m", "icectl", "properties", "list", location],
                       capture_output=True, text=True)
    assert r.returncode == 8, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert "incomplete" in r.stderr and f"mv {v4} {v4}.incomplete" in r.stderr


@pytest.mark.parametrize("case", ["hint-names-it", "valid-json"])
def test_complete_or_acknowledged_versions_are_never_treated_as_unfinished(location, case):
    v4 = _table_with_unfinished_v4(location, hint="4" if case == "hint-names-it" else "3")
    if case == "valid-json":
        with open(v4, "w") as f:
            json.dump({"format-version": 2}, f)  # complete JSON, bad content: corrupt, not skipped
    with pytest.raises(CorruptMetadata) as info:
        Table.load(location)
    assert not isinstance(info.value, store.IncompleteMetadata)
    assert store.find_incomplete_versions(FileIO(), location) == []
    assert os.path.exists(v4)


# -- a full disk --------------------------------------------------------------------------------

@pytest.fixture
def full_disk(tmp_path):
    """A path on a full disk: a link to /dev/full, where every write fails with ENOSPC. Code
    under test may delete the path after the failure; that removes only the link."""
    link = tmp_path / "full.parquet"
    os.symlink("/dev/full", link)
    return str(link)


def test_full_disk_through_an_opened_file_is_a_storage_error(full_disk):
    f = FileIO().open(full_disk, "wb")
    with pytest.raises(StorageError, match="No space left"):
        f.write(b"x" * 100_000)
        f.close()


def test_full_disk_while_writing_parquet_is_a_storage_error(full_disk):
    from icectl.io.formats.parquet_write import ParquetWriteOptions, write_rolling
    from icectl.spec.schema import Schema

    schema = Schema.from_json({"type": "struct", "fields": [
        {"id": 1, "name": "id", "required": False, "type": "long"}]})
    data = pa.table({"id": pa.array(range(200_000), pa.int64())})
    with pytest.raises(StorageError, match="No space left"):
        write_rolling(FileIO(), data, schema, ParquetWriteOptions(), lambda: full_disk)


def test_full_disk_while_committing_metadata_is_a_storage_error(location, monkeypatch):
    t = Table.create(location, make_metadata(location))

    def full(fd, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(files_mod, "_write_all", full)
    with pytest.raises(StorageError, match="No space left"):
        t.commit(lambda md: with_properties(md, {"a": "1"}))
    assert sorted(os.listdir(os.path.join(location, "metadata"))) == ["v1.metadata.json", "version-hint.text"]


FULL_DISK_WRITE = """
import os, sys
import icectl.io.storage.local as files
real = files.local_path

def on_full_disk(p):
    # data files go to links to /dev/full (deleting one after the failure removes only the link)
    if p.endswith(".parquet") and "/data/" in p:
        link = real(p) + ".full"
        if not os.path.lexists(link):
            os.makedirs(os.path.dirname(link), exist_ok=True)
            os.symlink("/dev/full", link)
        return link
    return real(p)

files.local_path = on_full_disk
from icectl.cli.app import main
sys.argv = ["icectl"] + sys.argv[1:]
main()
"""


def test_full_disk_during_write_exits_with_the_storage_code(tmp_path):
    loc = str(tmp_path / "t")
    run = [sys.executable, "-m", "icectl"]
    assert subprocess.run(run + ["create", loc, "--schema", "id long"], capture_output=True).returncode == 0
    rows = tmp_path / "rows.csv"
    rows.write_text("id\n" + "\n".join(str(i) for i in range(50_000)) + "\n")
    r = subprocess.run([sys.executable, "-c", FULL_DISK_WRITE, "write", loc, str(rows)],
                       capture_output=True, text=True)
    assert r.returncode == 7, r.stderr
    assert "No space left" in r.stderr and "Traceback" not in r.stderr
    assert Table.load(loc).metadata.current_snapshot() is None
