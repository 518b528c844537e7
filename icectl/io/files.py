"""File access for tables: local paths and ``file:`` URLs first-class, other fsspec URLs best-effort.

Paths keep the spelling the caller (or the table metadata) uses, e.g. ``file:/tmp/wh/t/metadata``
as Hadoop writes it; only the operations translate them. Every OSError becomes a StorageError
naming the path, a full disk (ENOSPC, EDQUOT) included - also when it
happens inside a library writing through a file from :meth:`FileIO.open`.

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

__all__ = ["FileIO", "FileInfo", "DestinationExists", "is_local", "local_path", "join"]


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
    """Reads and writes table files. One instance serves any mix of local and fsspec paths."""

    def __init__(self, storage_options: dict[str, Any] | None = None):
        self._options = dict(storage_options or {})
        self._fs_cache: dict[str, Any] = {}

    # -- helpers ---------------------------------------------------------------------------

    def _fs(self, path: str) -> tuple[Any, str]:
        import fsspec.core

        scheme = _scheme(path)
        try:
            fs = self._fs_cache.get(scheme)
            if fs is None:
                fs, _ = fsspec.core.url_to_fs(path, **self._options)
                self._fs_cache[scheme] = fs
            return fs, fs._strip_protocol(path)
        except (ImportError, ValueError) as e:
            raise StorageError(f"no filesystem for {path}: {e}") from e

    # -- reading ---------------------------------------------------------------------------

    def read(self, path: str) -> bytes:
        try:
            if is_local(path):
                with open(local_path(path), "rb") as f:
                    return f.read()
            fs, p = self._fs(path)
            return fs.cat_file(p)
        except FileNotFoundError as e:
            raise NotFound(f"file not found: {path}") from e
        except (OSError, Exception) as e:  # fsspec backends raise assorted errors
            if isinstance(e, (NotFound, StorageError)):
                raise
            raise _storage_error("read", path, e) from e

    def read_range(self, path: str, start: int, length: int) -> bytes:
        try:
            if is_local(path):
                with open(local_path(path), "rb") as f:
                    f.seek(start)
                    return f.read(length)
            fs, p = self._fs(path)
            return fs.cat_file(p, start=start, end=start + length)
        except FileNotFoundError as e:
            raise NotFound(f"file not found: {path}") from e
        except OSError as e:
            raise _storage_error("read", path, e) from e

    def open(self, path: str, mode: str = "rb") -> Any:
        """A binary file object (for streaming readers such as Avro and Parquet)."""
        writing = any(c in mode for c in "wax")
        if _FAULT_ARMED and writing:
            _before_change()
        try:
            if is_local(path):
                if writing:
                    os.makedirs(os.path.dirname(local_path(path)) or ".", exist_ok=True)
                f = open(local_path(path), mode)
            else:
                fs, p = self._fs(path)
                f = fs.open(p, mode)
            return _MappedFile(f, path) if writing else f
        except FileNotFoundError as e:
            raise NotFound(f"file not found: {path}") from e
        except OSError as e:
            raise _storage_error("open", path, e) from e

    def exists(self, path: str) -> bool:
        try:
            if is_local(path):
                return os.path.exists(local_path(path))
            fs, p = self._fs(path)
            return bool(fs.exists(p))
        except OSError as e:
            raise _storage_error("check", path, e) from e

    def info(self, path: str) -> FileInfo:
        try:
            if is_local(path):
                st = os.stat(local_path(path))
                return FileInfo(path, st.st_size, int(st.st_mtime * 1000), stat_module.S_ISDIR(st.st_mode))
            fs, p = self._fs(path)
            d = fs.info(p)
            return FileInfo(path, int(d.get("size") or 0), _mtime_ms(d), d.get("type") == "directory")
        except FileNotFoundError as e:
            raise NotFound(f"file not found: {path}") from e
        except OSError as e:
            raise _storage_error("stat", path, e) from e

    def list_dir(self, path: str, follow_symlinks: bool = True) -> list[FileInfo]:
        """Entries directly under a directory (files and directories); [] when it does not exist.

        With ``follow_symlinks=False`` a local symbolic link is reported as itself (``is_link``,
        never ``is_dir``), so a walk can refuse to leave the directory through it."""
        try:
            if is_local(path):
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
            fs, p = self._fs(path)
            if not fs.exists(p):
                return []
            out = []
            for d in fs.ls(p, detail=True):
                name = posixpath.basename(d["name"].rstrip("/"))
                out.append(FileInfo(join(path, name), int(d.get("size") or 0), _mtime_ms(d),
                                    d.get("type") == "directory"))
            return sorted(out, key=lambda i: i.path)
        except NotADirectoryError as e:
            raise StorageError(f"not a directory: {path}") from e
        except OSError as e:
            raise _storage_error("list", path, e) from e

    def list_names(self, path: str) -> list[str]:
        """Names directly under a directory, without looking at each entry; [] when missing."""
        try:
            if is_local(path):
                try:
                    return sorted(os.listdir(local_path(path)))
                except FileNotFoundError:
                    return []
            return sorted(i.name for i in self.list_dir(path))
        except NotADirectoryError as e:
            raise StorageError(f"not a directory: {path}") from e
        except OSError as e:
            raise _storage_error("list", path, e) from e

    def walk(self, path: str) -> Iterator[FileInfo]:
        """Every file (not directory) below ``path``, recursively."""
        for info in self.list_dir(path):
            if info.is_dir:
                yield from self.walk(info.path)
            else:
                yield info

    # -- writing ---------------------------------------------------------------------------

    def mkdirs(self, path: str) -> None:
        try:
            if is_local(path):
                os.makedirs(local_path(path), exist_ok=True)
                return
            fs, p = self._fs(path)
            fs.makedirs(p, exist_ok=True)
        except OSError as e:
            raise _storage_error("create directory", path, e) from e

    def write(self, path: str, data: bytes, overwrite: bool = True) -> None:
        """Write a whole file, creating parent directories. Without ``overwrite`` it is exclusive."""
        if not overwrite:
            self.write_exclusive(path, data)
            return
        if _FAULT_ARMED:
            _before_change()
        try:
            if is_local(path):
                lp = local_path(path)
                os.makedirs(os.path.dirname(lp) or ".", exist_ok=True)
                with open(lp, "wb") as f:
                    f.write(data)
                return
            fs, p = self._fs(path)
            fs.pipe_file(p, data)
        except OSError as e:
            raise _storage_error("write", path, e) from e

    def write_exclusive(self, path: str, data: bytes, durable: bool = False) -> None:
        """Create ``path`` with ``data``; DestinationExists if it is already there. ``durable``
        flushes the bytes to the disk (fsync) before returning."""
        if _FAULT_ARMED:
            _before_change()
        try:
            if is_local(path):
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
                return
            # Other filesystems: exclusive mode when the backend has it, else check-then-write.
            fs, p = self._fs(path)
            if fs.exists(p):
                raise DestinationExists(path)
            try:
                f = fs.open(p, "xb")
            except (ValueError, NotImplementedError):
                f = fs.open(p, "wb")
            with f:
                f.write(data)
        except (DestinationExists, StorageError):
            raise
        except FileExistsError:
            raise DestinationExists(path) from None
        except OSError as e:
            raise _storage_error("write", path, e) from e

    def rename_no_replace(self, src: str, dst: str, durable: bool = False) -> None:
        """Move ``src`` to ``dst``; DestinationExists (src untouched) when ``dst`` exists.

        Local disks: atomic and race-free. Other filesystems: check-then-move, best-effort.
        ``durable`` syncs the directory before the move (the source's name is on disk) and after
        it (the new name is), so a crash leaves either the old state or the whole new file.
        """
        if _FAULT_ARMED:
            _before_change()
        try:
            if is_local(src) and is_local(dst):
                directory = os.path.dirname(local_path(dst))
                if durable:
                    _sync_dir(directory)
                try:
                    _local_rename_no_replace(local_path(src), local_path(dst))
                except FileExistsError:
                    raise DestinationExists(dst) from None
                if durable:
                    _sync_dir(directory)
                return
            fs, s = self._fs(src)
            _, d = self._fs(dst)
            if fs.exists(d):
                raise DestinationExists(dst)
            fs.mv(s, d)
        except DestinationExists:
            raise
        except FileNotFoundError as e:
            raise NotFound(f"cannot rename {src} to {dst}: {e.strerror or e}") from e
        except OSError as e:
            raise StorageError(f"cannot rename {src} to {dst}: {e.strerror or e}") from e

    def replace(self, src: str, dst: str) -> None:
        """Move ``src`` over ``dst`` (replacing it). Only for best-effort pointers like the version hint."""
        if _FAULT_ARMED:
            _before_change()
        try:
            if is_local(src) and is_local(dst):
                os.replace(local_path(src), local_path(dst))
                return
            fs, s = self._fs(src)
            _, d = self._fs(dst)
            if fs.exists(d):
                fs.rm(d)
            fs.mv(s, d)
        except OSError as e:
            raise StorageError(f"cannot move {src} to {dst}: {e.strerror or e}") from e

    def delete(self, path: str, missing_ok: bool = True) -> None:
        if _FAULT_ARMED:
            _before_change()
        try:
            if is_local(path):
                try:
                    os.unlink(local_path(path))
                except FileNotFoundError:
                    if not missing_ok:
                        raise
                return
            fs, p = self._fs(path)
            if not fs.exists(p):
                if missing_ok:
                    return
                raise FileNotFoundError(errno.ENOENT, "No such file", path)
            fs.rm(p)
        except FileNotFoundError as e:
            raise NotFound(f"file not found: {path}") from e
        except OSError as e:
            raise _storage_error("delete", path, e) from e

    def delete_quietly(self, path: str) -> bool:
        """Delete, ignoring every failure; True when the file is gone."""
        try:
            self.delete(path)
            return True
        except Exception:  # noqa: BLE001 - best-effort cleanup by design
            return False

    def temp_name(self, directory: str, suffix: str = "") -> str:
        import uuid

        return join(directory, f"{uuid.uuid4()}{suffix}")


def _silent_unlink(p: str) -> None:
    try:
        os.unlink(p)
    except OSError:
        pass


def _mtime_ms(d: dict[str, Any]) -> int:
    for key in ("mtime", "LastModified", "last_modified", "updated", "created"):
        v = d.get(key)
        if v is None:
            continue
        if hasattr(v, "timestamp"):
            return int(v.timestamp() * 1000)
        try:
            return int(float(v) * 1000)
        except (TypeError, ValueError):
            continue
    return 0
