"""File access for tables: :class:`FileIO` routes each path to the store of its URL scheme
(``io/storage/registry.py``: local disks, fsspec object stores, any store registered there) and
is the only way the rest of icectl reaches storage.

Paths keep the spelling the caller (or the table metadata) uses, e.g. ``file:/tmp/wh/t/metadata``
as Hadoop writes it; only the stores translate them. Every OSError becomes a StorageError naming
the path (a full disk too, also inside a library writing through :meth:`FileIO.open`).

The commit protocol needs two primitives that never overwrite: ``write_exclusive`` /
``create_if_absent`` (create a file that must not exist yet) and ``rename_no_replace`` (move a
finished file to a name that must not exist yet). What each store can promise is said by its
capabilities (:class:`icectl.io.storage.base.Storage`), which callers ask through
:meth:`FileIO.storage` or, for the path rules that need no FileIO, :func:`store_class`.
"""

from __future__ import annotations

from typing import Any, Iterator

from icectl.io.storage.base import DestinationExists, FileInfo, MappedFile, Storage, has_scheme, join, scheme_of
from icectl.io.storage.local import local_path
from icectl.io.storage.objectstore import default_storage_options
from icectl.io.storage.registry import DEFAULT_STORE, STORES, store_class

__all__ = ["FileIO", "FileInfo", "DestinationExists", "Storage", "local_path", "join", "has_scheme",
           "store_class", "identity", "os_path"]


def identity(path: str) -> str:
    """The identity of a file for comparisons, as its store spells it (the normalised OS path
    on local disks, ``scheme://bucket/key`` with equal schemes merged on object stores)."""
    return store_class(path).identity(path)


def os_path(path: str) -> str | None:
    """The OS path of a file on a local disk, None for a file of another store."""
    return store_class(path).os_path(path)


class FileIO:
    """Reads and writes table files. One instance serves any mix of stores.

    ``storage_options`` go to the stores (over the process's defaults: ``ICECTL_STORAGE_OPTIONS``
    and what :func:`icectl.io.storage.objectstore.set_storage_options` set); keys starting with
    ``icectl.`` are icectl's own (``icectl.unsafe-commits``).
    """

    def __init__(self, storage_options: dict[str, Any] | None = None):
        self._options = {**default_storage_options(), **dict(storage_options or {})}
        self._stores: dict[Any, Storage] = {}
        self._by_scheme: dict[str, Storage] = {}  # (the same stores, by the schemes seen)

    @property
    def storage_options(self) -> dict[str, Any]:  # (to hand to a worker's FileIO)
        return dict(self._options)

    def request_threads(self, path: str) -> int:
        """Threads for reading and deleting many files under ``path`` at once, by default: many
        (:func:`icectl.command_files.io_threads`) where requests wait on a network, one on a
        local disk, where more threads made expire and orphans slower, not faster: on a
        2,000-snapshot table expire took 3.7 s with one thread and 6.4-7.8 s with two or eight
        (their decoding fights over the interpreter lock, their unlinks over the directory's
        lock; ``bench/maintenance_bench.py``)."""
        from icectl import command_files

        waits = getattr(self.storage(path), "waits_on_network", None)
        return command_files.io_threads() if waits is None or waits(path) else 1

    def storage(self, path: str) -> Storage:
        """The store serving ``path`` (one per scheme, or one for all the schemes of a store
        that says ``scheme_free``, as local disks do)."""
        scheme = scheme_of(path)
        store = self._by_scheme.get(scheme)
        if store is None:
            cls = STORES.get(scheme, DEFAULT_STORE)
            key = cls if getattr(cls, "scheme_free", False) else (cls, scheme)
            store = self._stores.get(key)
            if store is None:
                store = self._stores[key] = cls(scheme, self._options)
            self._by_scheme[scheme] = store
        return store

    def os_path(self, path: str) -> str | None:
        """The OS path of a local file (zero-copy readers, forked workers), else None."""
        return self.storage(path).os_path(path)

    # -- reading ---------------------------------------------------------------------------

    def read(self, path: str) -> bytes:
        return self.storage(path).read(path)

    def read_range(self, path: str, start: int, length: int) -> bytes:
        return self.storage(path).read_range(path, start, length)

    def open(self, path: str, mode: str = "rb") -> Any:
        """A binary file object (for streaming readers such as Avro and Parquet); ``"xb"``
        creates only if absent."""
        f = self.storage(path).open(path, mode)
        return MappedFile(f, path) if any(c in mode for c in "wax") else f

    def exists(self, path: str) -> bool:
        return self.storage(path).exists(path)

    def info(self, path: str) -> FileInfo:
        return self.storage(path).info(path)

    def list_dir(self, path: str, follow_symlinks: bool = True) -> list[FileInfo]:
        """Entries directly under a directory (files and directories); [] when it does not exist.

        With ``follow_symlinks=False`` a local symbolic link is reported as itself (``is_link``,
        never ``is_dir``), so a walk can refuse to leave the directory through it."""
        return self.storage(path).list_dir(path, follow_symlinks)

    def list_names(self, path: str, prefix: str = "") -> list[str]:
        """Names directly under a directory (starting with ``prefix``: object stores list only
        those keys), without looking at each entry; [] when missing."""
        return self.storage(path).list_names(path, prefix)

    def walk(self, path: str) -> Iterator[FileInfo]:
        """Every file (not directory) below ``path``, recursively (flat stores: one listing)."""
        return self.storage(path).walk(path)

    def sidecars(self, path: str) -> list[str]:
        """The files another writer keeps beside ``path`` that go with it (Hadoop's ``.crc``)."""
        return self.storage(path).sidecars(path)

    # -- writing ---------------------------------------------------------------------------

    def write(self, path: str, data: bytes, overwrite: bool = True) -> Any:
        """Write a whole file, creating parent directories. Without ``overwrite`` it is exclusive."""
        if not overwrite:
            self.write_exclusive(path, data)
            return
        self.storage(path).write(path, data)

    def write_exclusive(self, path: str, data: bytes, durable: bool = False) -> None:
        """Create ``path`` with ``data``; DestinationExists if it is already there. ``durable``
        flushes the bytes to the disk (fsync) before returning. On object stores this is a
        conditional create (every PUT is durable there)."""
        self.storage(path).create_if_absent(path, data, durable=durable)

    def create_if_absent(self, path: str, data: bytes, attempts: int = 4) -> None:
        """Create ``path`` holding ``data`` only if no file has that name; DestinationExists
        when one has. Local paths: an exclusive, flushed create. Object stores: a conditional
        create, an unknown outcome settled by reading back, never by deleting (see
        :func:`icectl.io.storage.objectstore.create_if_absent`)."""
        self.storage(path).create_if_absent(path, data, durable=True, attempts=attempts)

    def require_safe_commits(self, path: str) -> None:
        """UnsafeStorage unless the store of ``path`` is proven to honour no-replace writes
        (object stores: see :func:`icectl.io.storage.objectstore.require_conditional_creates`)."""
        self.storage(path).require_safe_commits(path)

    def rename_no_replace(self, src: str, dst: str, durable: bool = False) -> None:
        """Move ``src`` to ``dst``; DestinationExists (src untouched) when ``dst`` exists.

        Within a store that has it, its own no-replace rename (local disks: atomic and
        race-free); else the bytes are created at ``dst`` with :meth:`create_if_absent` and
        ``src`` is deleted after. ``durable``: a crash leaves either the old state or the whole
        new file."""
        store = self.storage(src)
        if store is self.storage(dst):
            store.rename_no_replace(src, dst, durable)
            return
        self.create_if_absent(dst, self.read(src))
        self.delete(src)

    def replace(self, src: str, dst: str) -> None:
        """Move ``src`` over ``dst`` (replacing it). Only for best-effort pointers like the version
        hint. On object stores a PUT of the bytes over ``dst`` (atomic there), then ``src`` goes."""
        store = self.storage(src)
        if store is self.storage(dst):
            store.replace(src, dst)
            return
        self.write(dst, self.read(src))
        self.delete(src)

    def copy(self, src: str, dst: str, link: bool = False) -> None:
        """``dst`` gets ``src``'s bytes; never replaces an existing file. ``link``: a hard link
        will do where the store has them (local copies are flushed to disk before returning)."""
        store = self.storage(src)
        if store is self.storage(dst):
            store.copy(src, dst, link)
            return
        with self.open(src, "rb") as r, self.open(dst, "xb") as w:
            while True:
                chunk = r.read(8 << 20)
                if not chunk:
                    break
                w.write(chunk)

    def delete(self, path: str, missing_ok: bool = True) -> Any:
        self.storage(path).delete(path, missing_ok)

    def delete_many(self, paths: list[str]) -> dict[str, str]:
        """Delete files, each store's in one call (object stores in batches: S3 DeleteObjects,
        up to 1000 keys a request); missing ones count as deleted. Returns path -> error for
        those that failed."""
        groups: dict[int, tuple[Storage, list[str]]] = {}
        for path in paths:
            store = self.storage(path)
            groups.setdefault(id(store), (store, []))[1].append(path)
        failed: dict[str, str] = {}
        for store, group in groups.values():
            failed.update(store.delete_many(group))
        return failed

    def delete_quietly(self, path: str) -> bool:
        """Delete, ignoring every failure; True when the file is gone."""
        try:
            self.delete(path)
            return True
        except Exception:  # noqa: BLE001 - best-effort cleanup by design
            return False

    def remove_empty_dirs(self, root: str, below: list[str] | None = None, keep_root: bool = True) -> list[str]:
        """Remove the directories under ``root`` that are empty (with ``below``: only those above
        these deleted files of the same store), deepest first; never a directory that still
        holds anything. The removed ones; [] on stores without directories."""
        store = self.storage(root)
        if below is not None:
            below = [p for p in below if self.storage(p) is store]
        return store.remove_empty_dirs(root, below, keep_root)

