"""The fsspec store: every scheme without a store of its own (S3, GCS, Azure, HDFS, memory ...).

What differs between object stores (error codes, the conditional create, the probe that proves
a store honours it) lives in :mod:`icectl.io.storage.objectstore`; this class is the protocol
over it. One instance serves one scheme, with one fsspec filesystem made on first use.
"""

from __future__ import annotations

import errno
import posixpath
from typing import Any, Callable, Iterator
from urllib.parse import urlsplit

from icectl.io.storage import objectstore as _store
from icectl.io.storage.base import FileInfo, MappedFile, join
from icectl.io.storage.faults import ARMED, before_change

__all__ = ["FsspecStorage"]

_EQUAL_SCHEMES = {"s3a": "s3", "s3n": "s3"}
_COPY_CHUNK = 8 << 20


class FsspecStorage:
    """Object stores through fsspec: no rename (commits create under the final name), no
    links, keys listed by prefix."""

    atomic_rename = False
    links = False
    flat = True

    def __init__(self, scheme: str, options: dict[str, Any]):
        self.scheme = scheme
        self._options = options
        self._fs: Any = None

    def waits_on_network(self, path: str) -> bool:
        return True

    # -- helpers ---------------------------------------------------------------------------

    def filesystem(self, path: str) -> tuple[Any, str]:
        """The fsspec filesystem (made from the first path asked for) and ``path`` as it
        names the object."""
        if self._fs is None:
            self._fs = _store.filesystem(self.scheme, path, self._options)
        return self._fs, self._fs._strip_protocol(path)

    def _remote(self, op: str, path: str, fn: Callable[[Any, str], Any]) -> Any:
        """Run ``fn(fs, stripped_path)``, its failures as icectl errors."""
        fs, p = self.filesystem(path)
        return _store.call(op, path, lambda: fn(fs, p))

    # -- path rules ------------------------------------------------------------------------

    @staticmethod
    def identity(path: str) -> str:
        """``scheme://authority/path`` with equal schemes merged (``s3a``, ``s3n`` are ``s3``)."""
        parts = urlsplit(path)
        scheme = _EQUAL_SCHEMES.get(parts.scheme.lower(), parts.scheme.lower())
        return f"{scheme}://{parts.netloc}{posixpath.normpath(parts.path or '/')}"

    @staticmethod
    def os_path(path: str) -> str | None:
        return None

    @staticmethod
    def real_path(path: str, dirs: dict[str, str] | None = None) -> str:
        return path

    # -- reading ---------------------------------------------------------------------------

    def read(self, path: str) -> bytes:
        return self._remote("read", path, lambda fs, p: fs.cat_file(p))

    def read_range(self, path: str, start: int, length: int) -> bytes:
        return self._remote("read", path, lambda fs, p: fs.cat_file(p, start=start, end=start + length))

    def open(self, path: str, mode: str = "rb") -> Any:
        writing = any(c in mode for c in "wax")
        if writing:
            self.require_safe_commits(path)
            before_change()
        f = self._remote("open", path, lambda fs, p: fs.open(p, mode))
        if "x" in mode:  # a conditional create: a 412 answered to our own retry is settled
            fs, p = self.filesystem(path)
            f = _store.CreatedFile(f, fs, p, path)
        return f

    def exists(self, path: str) -> bool:
        return bool(self._remote("check", path, lambda fs, p: fs.exists(p)))

    def info(self, path: str) -> FileInfo:
        d = self._remote("stat", path, lambda fs, p: fs.info(p))
        return FileInfo(path, int(d.get("size") or 0), _store.mtime_ms(d), d.get("type") == "directory")

    def list_dir(self, path: str, follow_symlinks: bool = True) -> list[FileInfo]:
        entries = self._remote("list", path, _store.list_dir)
        return sorted((FileInfo(join(path, n), size, mtime, is_dir) for n, size, mtime, is_dir in entries),
                      key=lambda i: i.path)

    def list_names(self, path: str, prefix: str = "") -> list[str]:
        """Only the keys starting with ``prefix`` are listed."""
        return self._remote("list", path, lambda fs, p: _store.list_names(fs, p, prefix))

    def walk(self, path: str) -> Iterator[FileInfo]:
        """Every object under the prefix ``path/`` (one paged listing)."""
        found = self._remote("list", path, _store.list_tree)
        yield from [FileInfo(join(path, rel), size, mtime) for rel, size, mtime in found]

    def sidecars(self, path: str) -> list[str]:
        return []

    # -- writing ---------------------------------------------------------------------------

    def require_safe_commits(self, path: str) -> None:
        """UnsafeStorage unless the store is proven to honour conditional creates (see
        :func:`icectl.io.storage.objectstore.require_conditional_creates`)."""
        fs, _ = self.filesystem(path)
        _store.require_conditional_creates(fs, self.scheme, path, self._options)

    def write(self, path: str, data: bytes) -> None:
        self.require_safe_commits(path)
        before_change()
        self._remote("write", path, lambda fs, p: fs.pipe_file(p, data))

    def create_if_absent(self, path: str, data: bytes, durable: bool = True, attempts: int = 4) -> None:
        """A conditional create (every PUT is durable), an unknown outcome settled by reading
        back, never by deleting (see :func:`icectl.io.storage.objectstore.create_if_absent`)."""
        self.require_safe_commits(path)
        _store.create_if_absent(lambda: self.put_if_absent(path, data), lambda: self.read(path),
                                path, data, attempts, before_change if ARMED else None)

    def put_if_absent(self, path: str, data: bytes) -> None:
        """One conditional create request (see :func:`icectl.io.storage.objectstore.put_if_absent`)."""
        fs, p = self.filesystem(path)
        _store.put_if_absent(fs, self.scheme, p, data)

    def rename_no_replace(self, src: str, dst: str, durable: bool = False) -> None:
        """The bytes are created at ``dst`` with :meth:`create_if_absent`, then ``src`` goes."""
        self.create_if_absent(dst, self.read(src))
        self.delete(src)

    def replace(self, src: str, dst: str) -> None:
        """A PUT of the bytes over ``dst`` (atomic there), then ``src`` goes."""
        self.write(dst, self.read(src))
        self.delete(src)

    def copy(self, src: str, dst: str, link: bool = False) -> None:
        with self.open(src, "rb") as r, MappedFile(self.open(dst, "xb"), dst) as w:
            while True:
                chunk = r.read(_COPY_CHUNK)
                if not chunk:
                    break
                w.write(chunk)

    def delete(self, path: str, missing_ok: bool = True) -> None:
        before_change()

        def rm(fs: Any, p: str) -> None:
            if not missing_ok and not fs.exists(p):
                raise FileNotFoundError(errno.ENOENT, "No such file", path)
            try:
                fs.rm_file(p)  # one DELETE
            except FileNotFoundError:
                # a missing key: S3 answers 204, GCS and Azure 404 (gcsfs and adlfs raise)
                if not missing_ok:
                    raise

        self._remote("delete", path, rm)

    def delete_many(self, paths: list[str]) -> dict[str, str]:
        """In batches (S3: DeleteObjects, up to 1000 keys a request)."""
        if not paths:
            return {}
        before_change()
        fs, _ = self.filesystem(paths[0])
        return _store.delete_batch(fs, paths, self.delete)

    def remove_empty_dirs(self, root: str, below: list[str] | None = None, keep_root: bool = True) -> list[str]:
        return []  # no directories: nothing is left behind
