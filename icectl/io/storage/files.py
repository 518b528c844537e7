"""File access for tables: local paths and ``file:`` URLs; other URLs through
:mod:`icectl.io.storage.objectstore` (fsspec, conditional creates, batch deletes).

Paths keep the spelling the caller (or the table metadata) uses, e.g. ``file:/tmp/wh/t/metadata``
as Hadoop writes it; only the operations translate them. Every OSError becomes a StorageError
naming the path (a full disk too, also inside a library writing through :meth:`FileIO.open`).

The commit protocol needs two primitives that never overwrite: ``write_exclusive`` (create a
file that must not exist yet) and ``rename_no_replace`` (move a finished file to a name that must
not exist yet). On local disks the rename uses ``renameat2(RENAME_NOREPLACE)`` when the kernel
and filesystem support it, else a hard link followed by an unlink; both fail when the target
exists instead of replacing it, which is what makes two writers safe. Without either, writers
serialise on an exclusive lock directory and use a plain rename (see ``_locked_rename``).
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat as stat_module
from dataclasses import dataclass
from typing import Any, Iterator

from icectl.errors import NotFound, StorageError
from icectl.io.storage import objectstore as _store
from icectl.io.storage.objectstore import DestinationExists, default_storage_options  # noqa: F401 - re-exported

__all__ = ["FileIO", "FileInfo", "DestinationExists", "is_local", "local_path", "join"]


@dataclass(frozen=True)
class FileInfo:
    path: str  # in the caller's spelling (prefix + name)
    size: int
    mtime_ms: int
    is_dir: bool = False
    is_link: bool = False  # a symbolic link (only reported by ``list_dir(follow_symlinks=False)``)

    @property
    def name(self) -> str:
        return posixpath.basename(self.path.rstrip("/"))


def _scheme(path: str) -> str:
    if "://" in path or path.startswith("file:"):
        scheme = path.split(":", 1)[0].lower()
        # Windows drive letters are not schemes; anything longer than one letter is.
        return scheme if len(scheme) > 1 else ""
    return ""


def is_local(path: str) -> bool:
    return _scheme(path) in ("", "file", "local")


def local_path(path: str) -> str:
    """The OS path for a local path or ``file:`` URL (``file:/x``, ``file:///x``, ``file://localhost/x``).

    Hadoop-style locations are not percent-encoded, so none is decoded here.
    """
    scheme = _scheme(path)
    if scheme == "":
        return path
    if scheme not in ("file", "local"):
        raise StorageError(f"not a local path: {path}")
    rest = path[len(scheme) + 1:]
    if rest.startswith("//"):
        host_and_path = rest[2:]
        slash = host_and_path.find("/")
        host = host_and_path if slash < 0 else host_and_path[:slash]
        if host not in ("", "localhost"):
            raise StorageError(f"file URL with a remote host is not supported: {path}")
        rest = "/" if slash < 0 else host_and_path[slash:]
    return rest or "/"


def join(base: str, *names: str) -> str:
    """Join with ``/`` keeping the base's spelling (``file:/t`` + ``metadata`` -> ``file:/t/metadata``)."""
    out = base.rstrip("/") if base not in ("/",) else base
    for n in names:
        n = n.strip("/")
        if n:
            out = f"{out}/{n}" if not out.endswith("/") else f"{out}{n}"
    return out


# -- renameat2 ---------------------------------------------------------------------------------

_AT_FDCWD = -100
_RENAME_NOREPLACE = 1
_renameat2: Any = None
_renameat2_checked = False


def _get_renameat2() -> Any:
    global _renameat2, _renameat2_checked
    if not _renameat2_checked:
        _renameat2_checked = True
        import ctypes  # (here: reading commands never rename, and ctypes costs start-up time)
        import ctypes.util

        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            fn = libc.renameat2
            fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
            fn.restype = ctypes.c_int
            _renameat2 = fn
        except (OSError, AttributeError):
            _renameat2 = None
    return _renameat2


def _local_rename_no_replace(src: str, dst: str) -> None:
    """Move src to dst, failing with FileExistsError if dst exists. Never overwrites."""
    fn = _get_renameat2()
    if fn is not None:
        rc = fn(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), _RENAME_NOREPLACE)
        if rc == 0:
            return
        import ctypes

        err = ctypes.get_errno()
        if err == errno.EEXIST:
            raise FileExistsError(err, os.strerror(err), dst)
        if err not in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EPERM):
            raise OSError(err, os.strerror(err), src)
        # The filesystem does not support the flag: fall through to link + unlink.
    try:
        os.link(src, dst)  # fails with EEXIST instead of replacing
    except OSError as e:
        if e.errno == errno.EEXIST:
            raise
        if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        _locked_rename(src, dst)
        return
    os.unlink(src)


def _locked_rename(src: str, dst: str) -> None:
    """The fallback without hard links or RENAME_NOREPLACE (some network and FUSE filesystems).

    Creating ``dst`` exclusively and then writing it would let readers see a half-written file,
    and a crash would leave one behind. Instead writers of ``dst`` take an exclusive lock
    directory (``mkdir`` is atomic on every POSIX filesystem, NFS included), check under it that
    ``dst`` is free, and move the finished file with a plain rename, which readers see whole or
    not at all. A writer that finds the lock held gets FileExistsError, as if ``dst`` existed. A
    lock left by a crash (``<dst>.lock``, an empty directory) blocks that name until removed.
    """
    lock = dst + ".lock"
    try:
        os.mkdir(lock)
    except FileExistsError:
        raise FileExistsError(errno.EEXIST, f"locked by another writer ({lock})", dst) from None
    try:
        if os.path.lexists(dst):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), dst)
        os.rename(src, dst)
    finally:
        os.rmdir(lock)


def _sync_dir(directory: str) -> None:
    """fsync a directory so the names created or renamed in it survive a crash (best-effort on
    filesystems that cannot sync directories)."""
    try:
        fd = os.open(directory or ".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno not in (errno.EINVAL, errno.EBADF, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EROFS):
            raise
    finally:
        os.close(fd)


class _MappedFile:
    """A writable file whose OS errors (a full disk above all) surface as StorageError naming the
    path, however deep in a writer library the write, flush or close happens."""

    def __init__(self, f: Any, path: str):
        self._f = f
        self._path = path

    def _call(self, name: str, *args: Any) -> Any:
        try:
            return getattr(self._f, name)(*args)
        except OSError as e:
            raise _storage_error("write", self._path, e) from e

    def write(self, data: Any) -> Any:
        return self._call("write", data)

    def flush(self) -> None:
        self._call("flush")

    def close(self) -> None:
        if not self._f.closed:
            self._call("close")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._f, name)

    def __enter__(self) -> "_MappedFile":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


# Testing hook, for the fault-injection tests only: with ICECTL_FAULT_KILL_AT=N the process sends
# itself SIGKILL just before its Nth file write, rename or delete (counting from 1); with
# ICECTL_FAULT_STOP_AT=N it sends SIGSTOP instead (the test resumes it with SIGCONT). Unset, the
# only cost is one comparison per operation.
def _fault_at(name: str) -> int:
    value = os.environ.get(name, "")
    return int(value) if value.isdigit() else 0


_FAULT_KILL_AT = _fault_at("ICECTL_FAULT_KILL_AT")
_FAULT_STOP_AT = _fault_at("ICECTL_FAULT_STOP_AT")
_FAULT_ARMED = bool(_FAULT_KILL_AT or _FAULT_STOP_AT)
_fault_ops = 0


def _before_change() -> None:
    """Called before every file write, rename and delete (see the testing hook above)."""
    global _fault_ops
    _fault_ops += 1
    import signal

    if _fault_ops == _FAULT_KILL_AT:
        os.kill(os.getpid(), signal.SIGKILL)
    if _fault_ops == _FAULT_STOP_AT:
        os.kill(os.getpid(), signal.SIGSTOP)


def _storage_error(op: str, path: str, e: BaseException) -> StorageError:
    reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
    return StorageError(f"cannot {op} {path}: {reason}")


# -- FileIO --------------------------------------------------------------------------------------

class FileIO:
    """Reads and writes table files. One instance serves any mix of local and fsspec paths.

    ``storage_options`` go to fsspec (over the process's defaults: ``ICECTL_STORAGE_OPTIONS``
    and what :func:`set_storage_options` set); keys starting with ``icectl.`` are icectl's own
    (``icectl.unsafe-commits``). Paths that are not local go through :mod:`icectl.io.storage.objectstore`.
    """

    def __init__(self, storage_options: dict[str, Any] | None = None):
        self._options = {**default_storage_options(), **dict(storage_options or {})}
        self._fs_cache: dict[str, Any] = {}

    @property
    def storage_options(self) -> dict[str, Any]:  # (to hand to a worker's FileIO)
        return dict(self._options)

    # -- helpers ---------------------------------------------------------------------------

    def _fs(self, path: str) -> tuple[Any, str]:
        scheme = _scheme(path)
        fs = self._fs_cache.get(scheme)
        if fs is None:
            fs = self._fs_cache[scheme] = _store.filesystem(scheme, path, self._options)
        return fs, fs._strip_protocol(path)

    def _remote(self, op: str, path: str, fn: Any) -> Any:
        """Run ``fn(fs, stripped_path)`` on a non-local path, its failures as icectl errors."""
        fs, p = self._fs(path)
        return _store.call(op, path, lambda: fn(fs, p))

    def is_object_store(self, path: str) -> bool:
        """Not local: commits there create the version file with a conditional create."""
        return not is_local(path)

    # -- reading ---------------------------------------------------------------------------

    def read(self, path: str) -> bytes:
        if not is_local(path):
            return self._remote("read", path, lambda fs, p: fs.cat_file(p))
        try:
            with open(local_path(path), "rb") as f:
                return f.read()
        except FileNotFoundError as e:
            raise NotFound(f"file not found: {path}") from e
        except OSError as e:
            raise _storage_error("read", path, e) from e

    def read_range(self, path: str, start: int, length: int) -> bytes:
        if not is_local(path):
            return self._remote("read", path, lambda fs, p: fs.cat_file(p, start=start, end=start + length))
        try:
            with open(local_path(path), "rb") as f:
                f.seek(start)
                return f.read(length)
        except FileNotFoundError as e:
            raise NotFound(f"file not found: {path}") from e
        except OSError as e:
            raise _storage_error("read", path, e) from e

    def open(self, path: str, mode: str = "rb") -> Any:
        """A binary file object (for streaming readers such as Avro and Parquet)."""
        writing = any(c in mode for c in "wax")
        if writing and not is_local(path):
            self.require_safe_commits(path)
        if _FAULT_ARMED and writing:
            _before_change()
        if not is_local(path):
            f = self._remote("open", path, lambda fs, p: fs.open(p, mode))
            if "x" in mode:  # a conditional create: a 412 answered to our own retry is settled
                fs, p = self._fs(path)
                f = _store.CreatedFile(f, fs, p, path)
            return _MappedFile(f, path) if writing else f
        try:
            if writing:
                os.makedirs(os.path.dirname(local_path(path)) or ".", exist_ok=True)
            f = open(local_path(path), mode)
            return _MappedFile(f, path) if writing else f
        except FileNotFoundError as e:
            raise NotFound(f"file not found: {path}") from e
        except OSError as e:
            raise _storage_error("open", path, e) from e

    def exists(self, path: str) -> bool:
        if not is_local(path):
            return bool(self._remote("check", path, lambda fs, p: fs.exists(p)))
        try:
            return os.path.exists(local_path(path))
        except OSError as e:
            raise _storage_error("check", path, e) from e

    def info(self, path: str) -> FileInfo:
        if not is_local(path):
            d = self._remote("stat", path, lambda fs, p: fs.info(p))
            return FileInfo(path, int(d.get("size") or 0), _store.mtime_ms(d), d.get("type") == "directory")
        try:
            st = os.stat(local_path(path))
            return FileInfo(path, st.st_size, int(st.st_mtime * 1000), stat_module.S_ISDIR(st.st_mode))
        except FileNotFoundError as e:
            raise NotFound(f"file not found: {path}") from e
        except OSError as e:
            raise _storage_error("stat", path, e) from e

    def list_dir(self, path: str, follow_symlinks: bool = True) -> list[FileInfo]:
        """Entries directly under a directory (files and directories); [] when it does not exist.

        With ``follow_symlinks=False`` a local symbolic link is reported as itself (``is_link``,
        never ``is_dir``), so a walk can refuse to leave the directory through it."""
        if not is_local(path):
            entries = self._remote("list", path, _store.list_dir)
            return sorted((FileInfo(join(path, n), size, mtime, is_dir) for n, size, mtime, is_dir in entries),
                          key=lambda i: i.path)
        try:
            lp = local_path(path)
            out = []
            try:
                entries = list(os.scandir(lp))
            except FileNotFoundError:
                return []
            for e in entries:
                try:
                    st = e.stat(follow_symlinks=follow_symlinks)
                except FileNotFoundError:
                    continue  # deleted while listing
                out.append(FileInfo(join(path, e.name), st.st_size, int(st.st_mtime * 1000),
                                    stat_module.S_ISDIR(st.st_mode), stat_module.S_ISLNK(st.st_mode)))
            return sorted(out, key=lambda i: i.path)
        except NotADirectoryError as e:
            raise StorageError(f"not a directory: {path}") from e
        except OSError as e:
            raise _storage_error("list", path, e) from e

    def list_names(self, path: str, prefix: str = "") -> list[str]:
        """Names directly under a directory (starting with ``prefix``: object stores list only
        those keys), without looking at each entry; [] when missing."""
        if not is_local(path):
            return self._remote("list", path, lambda fs, p: _store.list_names(fs, p, prefix))
        try:
            try:
                names = sorted(os.listdir(local_path(path)))
            except FileNotFoundError:
                return []
            return [n for n in names if n.startswith(prefix)] if prefix else names
        except NotADirectoryError as e:
            raise StorageError(f"not a directory: {path}") from e
        except OSError as e:
            raise _storage_error("list", path, e) from e

    def walk(self, path: str) -> Iterator[FileInfo]:
        """Every file (not directory) below ``path``, recursively (object stores: one listing)."""
        if not is_local(path):
            yield from self.list_tree(path)
            return
        for info in self.list_dir(path):
            if info.is_dir:
                yield from self.walk(info.path)
            else:
                yield info

    def list_tree(self, path: str) -> list[FileInfo]:
        """Every object under the prefix ``path/`` of an object store (one paged listing)."""
        found = self._remote("list", path, _store.list_tree)
        return [FileInfo(join(path, rel), size, mtime) for rel, size, mtime in found]

    # -- writing ---------------------------------------------------------------------------

    def write(self, path: str, data: bytes, overwrite: bool = True) -> Any:
        """Write a whole file, creating parent directories. Without ``overwrite`` it is exclusive."""
        if not overwrite:
            self.write_exclusive(path, data)
            return
        if not is_local(path):
            self.require_safe_commits(path)
            if _FAULT_ARMED:
                _before_change()
            return self._remote("write", path, lambda fs, p: fs.pipe_file(p, data))
        if _FAULT_ARMED:
            _before_change()
        try:
            lp = local_path(path)
            os.makedirs(os.path.dirname(lp) or ".", exist_ok=True)
            with open(lp, "wb") as f:
                f.write(data)
        except OSError as e:
            raise _storage_error("write", path, e) from e

    def write_exclusive(self, path: str, data: bytes, durable: bool = False) -> None:
        """Create ``path`` with ``data``; DestinationExists if it is already there. ``durable``
        flushes the bytes to the disk (fsync) before returning. On object stores this is
        :meth:`create_if_absent` (a conditional create; every PUT is durable there)."""
        if not is_local(path):
            self.create_if_absent(path, data)
            return
        if _FAULT_ARMED:
            _before_change()
        try:
            lp = local_path(path)
            os.makedirs(os.path.dirname(lp) or ".", exist_ok=True)
            try:
                fd = os.open(lp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                raise DestinationExists(path) from None
            ok = False
            try:
                _write_all(fd, data)
                if durable:
                    os.fsync(fd)
                ok = True
            finally:
                os.close(fd)
                if not ok:
                    _silent_unlink(lp)
        except (DestinationExists, StorageError):
            raise
        except FileExistsError:
            raise DestinationExists(path) from None
        except OSError as e:
            raise _storage_error("write", path, e) from e

    def create_if_absent(self, path: str, data: bytes, attempts: int = 4) -> None:
        """Create ``path`` holding ``data`` only if no object has that name; DestinationExists
        when one has. Local paths: an exclusive, flushed create. Object stores: a conditional
        create, an unknown outcome settled by reading back, never by deleting (see
        :func:`icectl.io.storage.objectstore.create_if_absent`)."""
        if is_local(path):
            self.write_exclusive(path, data, durable=True)
            return
        self.require_safe_commits(path)
        fs, p = self._fs(path)
        _store.create_if_absent(lambda: self._put_if_absent(fs, p, path, data), lambda: self.read(path),
                                path, data, attempts, _before_change if _FAULT_ARMED else None)

    def _put_if_absent(self, fs: Any, p: str, path: str, data: bytes) -> None:
        _store.put_if_absent(fs, _scheme(path), p, data)

    def require_safe_commits(self, path: str) -> None:
        """On an object store, UnsafeStorage unless the store is proven to honour conditional
        creates (see :func:`icectl.io.storage.objectstore.require_conditional_creates`)."""
        if not is_local(path):
            fs, _ = self._fs(path)
            _store.require_conditional_creates(fs, _scheme(path), path, self._options)

    def rename_no_replace(self, src: str, dst: str, durable: bool = False) -> None:
        """Move ``src`` to ``dst``; DestinationExists (src untouched) when ``dst`` exists.

        Local disks: atomic and race-free. Object stores: the bytes are created at ``dst`` with
        :meth:`create_if_absent` and ``src`` is deleted after.
        ``durable`` syncs the directory before the move (the source's name is on disk) and after
        it (the new name is), so a crash leaves either the old state or the whole new file.
        """
        if not (is_local(src) and is_local(dst)):
            self.create_if_absent(dst, self.read(src))
            self.delete(src)
            return
        if _FAULT_ARMED:
            _before_change()
        try:
            directory = os.path.dirname(local_path(dst))
            if durable:
                _sync_dir(directory)
            try:
                _local_rename_no_replace(local_path(src), local_path(dst))
            except FileExistsError:
                raise DestinationExists(dst) from None
            if durable:
                _sync_dir(directory)
        except DestinationExists:
            raise
        except FileNotFoundError as e:
            raise NotFound(f"cannot rename {src} to {dst}: {e.strerror or e}") from e
        except OSError as e:
            raise StorageError(f"cannot rename {src} to {dst}: {e.strerror or e}") from e

    def replace(self, src: str, dst: str) -> None:
        """Move ``src`` over ``dst`` (replacing it). Only for best-effort pointers like the version
        hint. On object stores a PUT of the bytes over ``dst`` (atomic there), then ``src`` goes."""
        if not (is_local(src) and is_local(dst)):
            self.write(dst, self.read(src))
            self.delete(src)
            return
        if _FAULT_ARMED:
            _before_change()
        try:
            os.replace(local_path(src), local_path(dst))
        except OSError as e:
            raise StorageError(f"cannot move {src} to {dst}: {e.strerror or e}") from e

    def delete(self, path: str, missing_ok: bool = True) -> Any:
        if _FAULT_ARMED:
            _before_change()
        if not is_local(path):
            def rm(fs: Any, p: str) -> None:
                if not missing_ok and not fs.exists(p):
                    raise FileNotFoundError(errno.ENOENT, "No such file", path)
                try:
                    fs.rm_file(p)  # one DELETE
                except FileNotFoundError:
                    # a missing key: S3 answers 204, GCS and Azure 404 (gcsfs and adlfs raise)
                    if not missing_ok:
                        raise

            return self._remote("delete", path, rm)
        try:
            try:
                os.unlink(local_path(path))
            except FileNotFoundError:
                if not missing_ok:
                    raise
        except FileNotFoundError as e:
            raise NotFound(f"file not found: {path}") from e
        except OSError as e:
            raise _storage_error("delete", path, e) from e

    def delete_many(self, paths: list[str]) -> dict[str, str]:
        """Delete files, object-store ones in batches (S3: DeleteObjects, up to 1000 keys a
        request); missing ones count as deleted. Returns path -> error for those that failed."""
        failed: dict[str, str] = {}
        remote: dict[str, list[str]] = {}
        for path in paths:
            if is_local(path):
                try:
                    self.delete(path)
                except (NotFound, StorageError) as e:
                    failed[path] = str(e)
            else:
                remote.setdefault(_scheme(path), []).append(path)
        for group in remote.values():
            if _FAULT_ARMED:
                _before_change()
            fs, _ = self._fs(group[0])
            failed.update(_store.delete_batch(fs, group, self.delete))
        return failed

    def delete_quietly(self, path: str) -> bool:
        """Delete, ignoring every failure; True when the file is gone."""
        try:
            self.delete(path)
            return True
        except Exception:  # noqa: BLE001 - best-effort cleanup by design
            return False


def _silent_unlink(p: str) -> None:
    try:
        os.unlink(p)
    except OSError:
        pass
