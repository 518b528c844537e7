"""The storage registry is the only place a path's store is chosen: a store that exists nowhere
but in this module (a dict of bytes, no fsspec, no disk), registered under a scheme nothing else
knows, carries a table through the commands that write, read, rewrite and delete files, run as a
user runs them (those that run in this process: a spawned engine worker would start without the
registration and without the dict). Any code that branched on a path's scheme itself, opened a file by its OS path
or called fsspec directly would fail here: fsspec has no ``dictstore`` filesystem and no OS path
names these files."""

from __future__ import annotations

import io as _io
import json
import posixpath
import time
from typing import Any, Iterator

import pytest

from clirun import icectl
from icectl.errors import NotFound
from icectl.io.storage import registry
from icectl.io.storage.base import DestinationExists, FileInfo, join
from icectl.io.storage.files import FileIO

SCHEME = "dictstore"


class _Writer(_io.BytesIO):
    def __init__(self, store: "DictStorage", path: str, exclusive: bool):
        super().__init__()
        self._store, self._path, self._exclusive = store, path, exclusive

    def close(self) -> None:
        if not self.closed:
            data = self.getvalue()
            super().close()
            if self._exclusive:
                self._store.create_if_absent(self._path, data)
            else:
                self._store.write(self._path, data)


class DictStorage:
    """A flat store in a dict, shared by every instance (one "bucket space" per test)."""

    atomic_rename = False
    links = False
    flat = True
    objects: dict[str, tuple[bytes, int]] = {}  # key -> (bytes, mtime ms)
    calls: list[str] = []

    def __init__(self, scheme: str, options: dict[str, Any]):
        self.scheme = scheme

    @staticmethod
    def _key(path: str) -> str:
        assert path.startswith(f"{SCHEME}://"), path
        return posixpath.normpath(path[len(SCHEME) + 3:])

    @staticmethod
    def identity(path: str) -> str:
        return f"{SCHEME}://{DictStorage._key(path)}"

    @staticmethod
    def os_path(path: str) -> str | None:
        return None

    @staticmethod
    def real_path(path: str, dirs: dict[str, str] | None = None) -> str:
        return path

    def _get(self, path: str) -> bytes:
        self.calls.append("read")
        try:
            return self.objects[self._key(path)][0]
        except KeyError:
            raise NotFound(f"file not found: {path}") from None

    def read(self, path: str) -> bytes:
        return self._get(path)

    def read_range(self, path: str, start: int, length: int) -> bytes:
        return self._get(path)[start:start + length]

    def open(self, path: str, mode: str = "rb") -> Any:
        if "r" in mode:
            return _io.BytesIO(self._get(path))
        return _Writer(self, path, exclusive="x" in mode)

    def exists(self, path: str) -> bool:
        return self._key(path) in self.objects

    def info(self, path: str) -> FileInfo:
        data = self._get(path)
        return FileInfo(path, len(data), self.objects[self._key(path)][1])

    def _below(self, path: str) -> Iterator[tuple[str, str]]:
        base = self._key(path).rstrip("/") + "/"
        for key in sorted(self.objects):
            if key.startswith(base):
                yield key, key[len(base):]

    def list_dir(self, path: str, follow_symlinks: bool = True) -> list[FileInfo]:
        self.calls.append("list")
        out: dict[str, FileInfo] = {}
        for key, rest in self._below(path):
            name, _, more = rest.partition("/")
            data, mtime = self.objects[key]
            out[name] = FileInfo(join(path, name), 0 if more else len(data), mtime, bool(more))
        return sorted(out.values(), key=lambda i: i.path)

    def list_names(self, path: str, prefix: str = "") -> list[str]:
        return sorted({i.name for i in self.list_dir(path) if i.name.startswith(prefix)})

    def walk(self, path: str) -> Iterator[FileInfo]:
        self.calls.append("list")
        for key, rest in list(self._below(path)):
            data, mtime = self.objects[key]
            yield FileInfo(join(path, rest), len(data), mtime)

    def sidecars(self, path: str) -> list[str]:
        return []

    def require_safe_commits(self, path: str) -> None:
        return None

    def write(self, path: str, data: bytes) -> None:
        self.calls.append("write")
        self.objects[self._key(path)] = (bytes(data), int(time.time() * 1000))

    def create_if_absent(self, path: str, data: bytes, durable: bool = True, attempts: int = 4) -> None:
        if self._key(path) in self.objects:
            raise DestinationExists(path)
        self.write(path, data)

    def rename_no_replace(self, src: str, dst: str, durable: bool = False) -> None:
        self.create_if_absent(dst, self._get(src))
        self.delete(src)

    def replace(self, src: str, dst: str) -> None:
        self.write(dst, self._get(src))
        self.delete(src)

    def copy(self, src: str, dst: str, link: bool = False) -> None:
        self.create_if_absent(dst, self._get(src))

    def delete(self, path: str, missing_ok: bool = True) -> None:
        self.calls.append("delete")
        if self.objects.pop(self._key(path), None) is None and not missing_ok:
            raise NotFound(f"file not found: {path}")

    def delete_many(self, paths: list[str]) -> dict[str, str]:
        for p in paths:
            self.delete(p)
        return {}

    def remove_empty_dirs(self, root: str, below: list[str] | None = None, keep_root: bool = True) -> list[str]:
        return []


@pytest.fixture
def dictstore(monkeypatch):
    monkeypatch.setitem(registry.STORES, SCHEME, DictStorage)
    monkeypatch.setattr(DictStorage, "objects", {})
    monkeypatch.setattr(DictStorage, "calls", [])
    return DictStorage


def _run(*args: Any) -> Any:
    r = icectl(*args)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def _keys(store: type[DictStorage], under: str) -> list[str]:
    return sorted(k for k in store.objects if k.startswith(under + "/"))


def test_a_registered_store_carries_a_table_through_every_kind_of_file_operation(dictstore, tmp_path) -> None:
    t = f"{SCHEME}://bucket/db/events"
    _run("create", t, "--schema", "id long, v string", "--partition", "bucket(4, id)")
    assert "bucket/db/events/metadata/v1.metadata.json" in dictstore.objects
    csv = tmp_path / "rows.csv"
    csv.write_text("id,v\n" + "".join(f"{i},v{i}\n" for i in range(1, 21)))
    assert json.loads(_run("write", t, str(csv), "--json").stdout)["added-records"] == 20
    csv.write_text("id,v\n" + "".join(f"{i},w{i}\n" for i in range(21, 31)))
    _run("write", t, str(csv))
    # an existing data file in the store, registered in place
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = pa.BufferOutputStream()
    pq.write_table(pa.table({"id": pa.array([100], pa.int64()), "v": ["a"]}), buf)
    DictStorage.objects["bucket/incoming/more.parquet"] = (buf.getvalue().to_pybytes(), 0)
    _run("append", t, f"{SCHEME}://bucket/incoming/more.parquet")
    _run("delete", t, "--filter", "id <= 3", "--mode", "merge-on-read")
    _run("rewrite-manifests", t)
    rows = [json.loads(x) for x in _run("scan", t, "--format", "jsonl").stdout.splitlines()]
    assert sorted(r["id"] for r in rows) == list(range(4, 31)) + [100]
    before = set(_keys(dictstore, "bucket/db/events"))
    expired = json.loads(_run("expire", t, "--older-than", "0s", "--retain-last", "1", "--json").stdout)
    assert expired["expired-snapshot-ids"] if "expired-snapshot-ids" in expired else expired
    after = set(_keys(dictstore, "bucket/db/events"))
    gone = before - after  # the files only the expired snapshots needed are gone from the store
    assert [k for k in gone if posixpath.basename(k).startswith("snap-")], gone
    DictStorage.objects["bucket/db/events/data/orphan.parquet"] = (b"not referenced", 0)
    orphans = json.loads(_run("orphans", t, "--older-than", "0s", "--json").stdout)
    assert orphans["orphan-files"] == [f"{t}/data/orphan.parquet"]
    _run("orphans", t, "--older-than", "0s", "--delete", "--allow-recent")
    assert "bucket/db/events/data/orphan.parquet" not in dictstore.objects
    assert icectl("check", t, "--deep").returncode == 0
    rows = [json.loads(x) for x in _run("scan", t, "--format", "jsonl").stdout.splitlines()]
    assert sorted(r["id"] for r in rows) == list(range(4, 31)) + [100]
    # every file of the table is in the store, none was left half-made by a rename
    assert not [k for k in dictstore.objects if not k.startswith(("bucket/db/events/", "bucket/incoming/"))]
    assert {"read", "write", "list", "delete"} <= set(dictstore.calls)


def test_file_io_routes_each_scheme_to_its_store(dictstore, tmp_path) -> None:
    io = FileIO()
    io.write(f"{SCHEME}://b/x", b"1")
    local = str(tmp_path / "y")
    io.write(local, b"2")
    assert DictStorage.objects == {"b/x": (b"1", DictStorage.objects["b/x"][1])}
    assert io.read(local) == b"2" and io.os_path(local) == local and io.os_path(f"{SCHEME}://b/x") is None
    io.rename_no_replace(local, f"{SCHEME}://b/y")  # across stores: create, then delete the source
    assert io.read(f"{SCHEME}://b/y") == b"2" and not (tmp_path / "y").exists()
    with pytest.raises(DestinationExists):
        io.write_exclusive(f"{SCHEME}://b/y", b"3")
