"""FileIO: local paths and file: URLs, exclusive writes and renames that never overwrite."""

from __future__ import annotations

import multiprocessing as mp
import os

import pytest

from icectl.errors import NotFound, StorageError
from icectl.io.storage import local as local_store
from icectl.io.storage.files import DestinationExists, FileIO, join, local_path


@pytest.mark.parametrize("url, path", [
    ("/tmp/a/b", "/tmp/a/b"),
    ("file:/tmp/a/b", "/tmp/a/b"),
    ("file:///tmp/a/b", "/tmp/a/b"),
    ("file://localhost/tmp/a b", "/tmp/a b"),
    ("relative/dir", "relative/dir"),
])
def test_local_path(url, path):
    assert local_path(url) == path


def test_join_keeps_spelling():
    assert join("file:/t/", "metadata", "v1.metadata.json") == "file:/t/metadata/v1.metadata.json"
    assert join("/t", "x") == "/t/x"


def test_remote_host_file_url_is_refused():
    with pytest.raises(StorageError, match="remote host"):
        local_path("file://otherhost/tmp/x")


@pytest.mark.parametrize("prefix", ["", "file:", "file://"])
def test_read_write_list_delete(tmp_path, prefix):
    io = FileIO()
    base = prefix + str(tmp_path)
    p = join(base, "d", "f.bin")
    io.write(p, b"hello")
    assert io.read(p) == b"hello"
    assert io.read_range(p, 1, 3) == b"ell"
    assert io.exists(p)
    assert io.info(p).size == 5
    listed = io.list_dir(join(base, "d"))
    assert [i.path for i in listed] == [p] and listed[0].name == "f.bin"
    assert [i.path for i in io.walk(base)] == [p]
    io.delete(p)
    assert not io.exists(p)
    io.delete(p)  # missing is fine by default
    with pytest.raises(NotFound):
        io.delete(p, missing_ok=False)
    with pytest.raises(NotFound, match="f.bin"):
        io.read(p)
    assert io.list_dir(join(base, "nowhere")) == []


def test_write_exclusive(tmp_path):
    io = FileIO()
    p = str(tmp_path / "x")
    io.write_exclusive(p, b"1")
    with pytest.raises(DestinationExists, match="already exists"):
        io.write_exclusive(p, b"2")
    assert io.read(p) == b"1"


@pytest.mark.parametrize("use_renameat2", [True, False])
def test_rename_no_replace_never_overwrites(tmp_path, monkeypatch, use_renameat2):
    if not use_renameat2:
        monkeypatch.setattr(local_store, "_renameat2_checked", True)
        monkeypatch.setattr(local_store, "_renameat2", None)
    io = FileIO()
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    io.write(src, b"new")
    io.write(dst, b"old")
    with pytest.raises(DestinationExists) as e:
        io.rename_no_replace(src, dst)
    assert str(dst) in str(e.value)
    assert io.read(dst) == b"old" and io.read(src) == b"new"
    io.delete(dst)
    io.rename_no_replace("file:" + src, "file:" + dst)
    assert io.read(dst) == b"new" and not io.exists(src)


def test_rename_missing_source(tmp_path):
    with pytest.raises(NotFound):
        FileIO().rename_no_replace(str(tmp_path / "nope"), str(tmp_path / "dst"))


def test_os_errors_become_storage_errors_naming_the_path(tmp_path):
    io = FileIO()
    blocker = tmp_path / "file"
    blocker.write_bytes(b"")
    target = str(blocker / "child")  # a path below a regular file
    with pytest.raises(StorageError) as e:
        io.write(target, b"x")
    assert target in str(e.value) or str(blocker) in str(e.value)


def _race(args):
    directory, i = args
    io = FileIO()
    src = os.path.join(directory, f"tmp-{i}")
    io.write(src, str(i).encode())
    try:
        io.rename_no_replace(src, os.path.join(directory, "final"))
        return i
    except DestinationExists:
        io.delete(src)
        return None


def test_concurrent_renames_have_exactly_one_winner(tmp_path):
    ctx = mp.get_context("fork")
    with ctx.Pool(4) as pool:
        results = pool.map(_race, [(str(tmp_path), i) for i in range(16)])
    winners = [r for r in results if r is not None]
    assert len(winners) == 1
    assert (tmp_path / "final").read_text() == str(winners[0])
    assert sorted(os.listdir(tmp_path)) == ["final"]


def test_memory_filesystem_best_effort():
    io = FileIO()
    io.write("memory://icectl-test/a", b"1")
    assert io.read("memory://icectl-test/a") == b"1"
    with pytest.raises(DestinationExists):
        io.write_exclusive("memory://icectl-test/a", b"2")
    io.write("memory://icectl-test/b", b"2")
    with pytest.raises(DestinationExists):
        io.rename_no_replace("memory://icectl-test/b", "memory://icectl-test/a")
    io.rename_no_replace("memory://icectl-test/b", "memory://icectl-test/c")
    assert io.read("memory://icectl-test/c") == b"2" and not io.exists("memory://icectl-test/b")
    assert sorted(i.name for i in io.list_dir("memory://icectl-test")) == ["a", "c"]
