"""The storage protocol: what icectl asks of a store, derived from what its callers do.

A store serves every path of one URL scheme (``io/storage/registry.py`` maps schemes to store
classes); :class:`icectl.io.storage.files.FileIO` picks the store of each path and is the only
caller. Paths keep the spelling the caller (or the table metadata) uses, e.g.
``file:/tmp/wh/t/metadata`` as Hadoop writes it; only the store translates them. Every failure
is an icectl error naming the path: NotFound for a missing file, DestinationExists when a
no-replace write finds its target, StorageError else.

What differs between stores is said by their capabilities (class attributes, so the path
rules can ask them without a FileIO) and by the few methods whose answer depends on the store
(:meth:`Storage.os_path`, :meth:`Storage.real_path`, :meth:`Storage.sidecars`,
:meth:`Storage.remove_empty_dirs`); callers never test a path's scheme themselves.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any, ClassVar, Iterator, Protocol

from icectl.errors import StorageError

__all__ = ["Storage", "FileInfo", "DestinationExists", "scheme_of", "has_scheme", "join", "storage_error",
           "MappedFile"]


class DestinationExists(StorageError):
    """A no-replace write or rename found its target already there."""

    def __init__(self, path: str):
        super().__init__(f"file already exists: {path}")
        self.path = path


@dataclass(frozen=True)
class FileInfo:
    path: str  # in the caller's spelling (prefix + name)
    size: int
    mtime_ms: int
    is_dir: bool = False
    is_link: bool = False  # a symbolic link (only reported by ``list_dir(follow_symlinks=False)``)
    mtime_ns: int | None = None  # when the store gives it that precisely (local disks)

    @property
    def name(self) -> str:
        return posixpath.basename(self.path.rstrip("/"))


def scheme_of(path: str) -> str:
    """The URL scheme of ``path`` in lower case; "" for a plain OS path."""
    if "://" in path or path.startswith("file:"):
        scheme = path.split(":", 1)[0].lower()
        # Windows drive letters are not schemes; anything longer than one letter is.
        return scheme if len(scheme) > 1 else ""
    return ""


def has_scheme(path: str) -> bool:
    """Whether ``path`` is a URL (``file:``, ``s3://`` ...) rather than a plain OS path, which is
    relative to the working directory until made absolute."""
    return "://" in path or path.startswith("file:")


def join(base: str, *names: str) -> str:
    """Join with ``/`` keeping the base's spelling (``file:/t`` + ``metadata`` -> ``file:/t/metadata``)."""
    out = base.rstrip("/") if base not in ("/",) else base
    for n in names:
        n = n.strip("/")
        if n:
            out = f"{out}/{n}" if not out.endswith("/") else f"{out}{n}"
    return out


def storage_error(op: str, path: str, e: BaseException) -> StorageError:
    reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
    return StorageError(f"cannot {op} {path}: {reason}")


class MappedFile:
    """A writable file whose OS errors (a full disk above all) surface as StorageError naming the
    path, however deep in a writer library the write, flush or close happens."""

    def __init__(self, f: Any, path: str):
        self._f = f
        self._path = path

    def _call(self, name: str, *args: Any) -> Any:
        try:
            return getattr(self._f, name)(*args)
        except OSError as e:
            raise storage_error("write", self._path, e) from e

    def write(self, data: Any) -> Any:
        return self._call("write", data)

    def flush(self) -> None:
        self._call("flush")

    def close(self) -> None:
        if not self._f.closed:
            self._call("close")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._f, name)

    def __enter__(self) -> "MappedFile":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Storage(Protocol):
    """One store (local disks, an fsspec object store, a test's memory), built by the registry
    as ``cls(scheme, storage_options)``.

    Stores that change anything call :func:`icectl.io.storage.faults.before_change` just before
    each change they send (a write, a create attempt, a rename, a delete request), so the
    fault-injection tests can stop a process between any two of them.
    """

    # Capabilities ---------------------------------------------------------------------------
    #: rename_no_replace is one atomic step, so a commit writes a temporary file and renames it
    #: to the version's name (and the version hint is moved over the old one). Without it a
    #: commit creates the version file under its final name with create_if_absent, the hint is
    #: put over the old one in one request, and the listing of ``v*`` names is the truth.
    atomic_rename: ClassVar[bool]
    #: Paths may pass through symbolic links: a deletion resolves each path (real_path) just
    #: before it goes, and a walk never follows one. Without links a path is checked as text
    #: and deletions go in batches (delete_many).
    links: ClassVar[bool]
    #: "Directories" are key prefixes: one paged listing of a prefix returns every key below it
    #: (walk is one request, and a complete listing answers which directories hold a table),
    #: and listing by a name prefix fetches only those keys. Without it a directory is listed
    #: one level at a time, each listing a cheap system call.
    flat: ClassVar[bool]

    def waits_on_network(self, path: str) -> bool:
        """Whether a request under ``path`` mostly waits on a network (object stores, network
        filesystems), so that many requests at once finish sooner. On a local disk a read is
        decoding work and a deletion kernel work; threads there only contend for the
        interpreter lock and the directory's lock (see :meth:`FileIO.request_threads`)."""
        ...

    # Path rules (no I/O; static, so they need no instance) ----------------------------------
    @staticmethod
    def identity(path: str) -> str:
        """The identity of a file for comparisons: one spelling for each file on the store."""
        ...

    @staticmethod
    def os_path(path: str) -> str | None:
        """The OS path of a file on a local disk (for zero-copy readers and forked workers that
        open it themselves), None on stores without one."""
        ...

    @staticmethod
    def real_path(path: str, dirs: dict[str, str] | None = None) -> str:
        """``path`` with every symbolic link resolved (``dirs``: directories already resolved,
        kept by the caller); ``path`` itself on stores without links."""
        ...

    # Reading ---------------------------------------------------------------------------------
    def read(self, path: str) -> bytes: ...

    def read_range(self, path: str, start: int, length: int) -> bytes: ...

    def open(self, path: str, mode: str = "rb") -> Any:
        """A binary file object; ``"xb"`` creates only if absent (a conditional create)."""
        ...

    def exists(self, path: str) -> bool: ...

    def info(self, path: str) -> FileInfo: ...

    def list_dir(self, path: str, follow_symlinks: bool = True) -> list[FileInfo]:
        """Entries directly under a directory, sorted by path; [] when it does not exist."""
        ...

    def list_names(self, path: str, prefix: str = "") -> list[str]:
        """Names directly under a directory that start with ``prefix``, sorted; [] when missing."""
        ...

    def walk(self, path: str) -> Iterator[FileInfo]:
        """Every file (not directory) below ``path``, recursively."""
        ...

    def sidecars(self, path: str) -> list[str]:
        """Files another writer keeps beside ``path`` that go when it goes (Hadoop's local
        filesystem: the checksum ``.<name>.crc``); only those that exist."""
        ...

    # Writing ---------------------------------------------------------------------------------
    def require_safe_commits(self, path: str) -> None:
        """UnsafeStorage unless no-replace writes to ``path``'s store are proven to hold."""
        ...

    def write(self, path: str, data: bytes) -> None:
        """Write a whole file (replacing one there), creating parent directories."""
        ...

    def create_if_absent(self, path: str, data: bytes, durable: bool = True, attempts: int = 4) -> None:
        """Create ``path`` holding ``data``; DestinationExists when it is already there.
        ``durable``: on the disk before returning. An unknown outcome is settled by reading
        back, never by deleting (CommitStateUnknown when it cannot be)."""
        ...

    def rename_no_replace(self, src: str, dst: str, durable: bool = False) -> None:
        """Move ``src`` to ``dst``; DestinationExists (``src`` untouched) when ``dst`` exists."""
        ...

    def replace(self, src: str, dst: str) -> None:
        """Move ``src`` over ``dst`` (only for best-effort pointers like the version hint)."""
        ...

    def copy(self, src: str, dst: str, link: bool = False) -> None:
        """``dst`` gets ``src``'s bytes, never replacing a file; ``link``: a hard link may do."""
        ...

    def delete(self, path: str, missing_ok: bool = True) -> None: ...

    def delete_many(self, paths: list[str]) -> dict[str, str]:
        """Delete files (in batches where the store has them); missing ones count as deleted.
        path -> error for those that failed."""
        ...

    def remove_empty_dirs(self, root: str, below: list[str] | None = None, keep_root: bool = True) -> list[str]:
        """Remove the empty directories under ``root`` (with ``below``: only those above these
        files), deepest first; the removed ones. [] on stores without directories."""
        ...
