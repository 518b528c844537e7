"""The local store: plain OS paths and ``file:`` URLs (``file:/x``, ``file:///x``, ``file://localhost/x``).

The commit protocol needs two primitives that never overwrite: :meth:`LocalStorage.create_if_absent`
(an exclusive create) and :meth:`LocalStorage.rename_no_replace`. The rename uses
``renameat2(RENAME_NOREPLACE)`` when the kernel and filesystem support it, else a hard link
followed by an unlink; both fail when the target exists instead of replacing it, which is what
makes two writers safe. Without either, writers serialise on an exclusive lock directory and use
a plain rename (see ``_locked_rename``). Every OSError becomes a StorageError naming the path (a
full disk too).
"""

from __future__ import annotations

import errno
import os
import posixpath
import re
import shutil
import stat as stat_module
from typing import Any, Iterable, Iterator

from icectl.errors import NotFound, StorageError
from icectl.io.storage.base import DestinationExists, FileInfo, join, scheme_of, storage_error
from icectl.io.storage.faults import before_change

__all__ = ["LocalStorage", "local_path", "LOCAL_SCHEMES"]

LOCAL_SCHEMES = ("", "file", "local")
_COPY_CHUNK = 8 << 20


def local_path(path: str) -> str:
    """The OS path for a local path or ``file:`` URL (``file:/x``, ``file:///x``, ``file://localhost/x``).

    Hadoop-style locations are not percent-encoded, so none is decoded here.
    """
    scheme = scheme_of(path)
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


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _silent_unlink(p: str) -> None:
    try:
        os.unlink(p)
    except OSError:
        pass


def prune_empty_dirs(dirs: Iterable[str]) -> list[str]:
    """Remove those of ``dirs`` that are empty, deepest first (so a parent its listed children
    emptied goes too); a directory that still holds anything stays."""
    removed = []
    for d in sorted(set(dirs), key=lambda x: x.count(os.sep), reverse=True):
        try:
            os.rmdir(d)
            removed.append(d)
        except OSError:
            continue
    return removed


# Filesystem types (the mount table's third field) whose requests wait on a network.
_NETWORK_FS = frozenset({"nfs", "nfs4", "cifs", "smb3", "smbfs", "ceph", "glusterfs", "lustre", "gpfs",
                         "beegfs", "9p", "afs", "ocfs2", "gfs2", "davfs", "sshfs", "juicefs", "alluxio"})
_mounts: list[tuple[str, str]] | None = None  # (mount point, filesystem type), longest first


def parse_mounts(text: str) -> list[tuple[str, str]]:
    """(mount point, filesystem type) of a mount table in ``/proc/self/mounts``' format (octal
    escapes such as ``\\040`` for a space undone), longest mount point first."""
    found = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 3:
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[1])
            found.append((point.rstrip("/") or "/", fields[2].lower()))
    return sorted(found, key=lambda m: len(m[0]), reverse=True)


def _mount_type(path: str) -> str:
    """The filesystem type of the mount holding ``path`` ("" when the mount table is unreadable)."""
    global _mounts
    if _mounts is None:
        try:
            with open("/proc/self/mounts", encoding="utf-8", errors="replace") as f:
                _mounts = parse_mounts(f.read())
        except OSError:
            _mounts = []
    for point, kind in _mounts:
        if point == "/" or path == point or path.startswith(point + "/"):
            return kind
    return ""


class LocalStorage:
    """Local disks (see the module docstring)."""

    atomic_rename = True
    links = True
    flat = False
    scheme_free = True  # plain paths and file: URLs name the same files: one store serves them all

    def __init__(self, scheme: str = "", options: dict[str, Any] | None = None):
        self.scheme = scheme

    def waits_on_network(self, path: str) -> bool:
        """True under a network filesystem's mount point (NFS, SMB, FUSE, Ceph, Lustre...), as
        the mount table says; a path it cannot place counts as a local disk."""
        p = local_path(path)
        if not p:
            return False
        kind = _mount_type(os.path.abspath(p))
        return kind in _NETWORK_FS or kind.startswith("fuse.")  # (fuseblk: a local disk)

    # -- path rules ------------------------------------------------------------------------

    @staticmethod
    def identity(path: str) -> str:
        p = local_path(path)
        return posixpath.normpath(p) if p else p

    @staticmethod
    def os_path(path: str) -> str | None:
        return local_path(path)

    @staticmethod
    def real_path(path: str, dirs: dict[str, str] | None = None) -> str:
        p = local_path(path)
        if dirs is None:
            return os.path.realpath(p)
        d, name = os.path.split(p)
        if name in ("", ".", ".."):
            return os.path.realpath(p)
        real_dir = dirs.get(d)
        if real_dir is None:
            real_dir = dirs[d] = os.path.realpath(d)
        full = os.path.join(real_dir, name)
        return os.path.realpath(full) if os.path.islink(full) else full

    # -- reading ---------------------------------------------------------------------------

    def read(self, path: str) -> bytes:
        try:
            with open(local_path(path), "rb") as f:
                return f.read()
        except FileNotFoundError as e:
            raise NotFound(f"file not found: {path}") from e
        except OSError as e:
            raise storage_error("read", path, e) from e

    def read_range(self, path: str, start: int, length: int) -> bytes:
        try:
            with open(local_path(path), "rb") as f:
                f.seek(start)
                return f.read(length)
        except FileNotFoundError as e:
            raise NotFound(f"file not found: {path}") from e
        except OSError as e:
            raise storage_error("read", path, e) from e

    def open(self, path: str, mode: str = "rb") -> Any:
        writing = any(c in mode for c in "wax")
        if writing:
            before_change()
        try:
            if writing:
                os.makedirs(os.path.dirname(local_path(path)) or ".", exist_ok=True)
            return open(local_path(path), mode)
        except FileNotFoundError as e:
            raise NotFound(f"file not found: {path}") from e
        except OSError as e:
            raise storage_error("open", path, e) from e

    def exists(self, path: str) -> bool:
        try:
            return os.path.exists(local_path(path))
        except OSError as e:
            raise storage_error("check", path, e) from e

    def info(self, path: str) -> FileInfo:
        try:
            st = os.stat(local_path(path))
            return FileInfo(path, st.st_size, int(st.st_mtime * 1000), stat_module.S_ISDIR(st.st_mode),
                            mtime_ns=st.st_mtime_ns)
        except FileNotFoundError as e:
            raise NotFound(f"file not found: {path}") from e
        except OSError as e:
            raise storage_error("stat", path, e) from e

    def list_dir(self, path: str, follow_symlinks: bool = True) -> list[FileInfo]:
        """With ``follow_symlinks=False`` a symbolic link is reported as itself (``is_link``,
        never ``is_dir``), so a walk can refuse to leave the directory through it."""
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
            raise storage_error("list", path, e) from e

    def list_names(self, path: str, prefix: str = "") -> list[str]:
        try:
            try:
                names = sorted(os.listdir(local_path(path)))
            except FileNotFoundError:
                return []
            return [n for n in names if n.startswith(prefix)] if prefix else names
        except NotADirectoryError as e:
            raise StorageError(f"not a directory: {path}") from e
        except OSError as e:
            raise storage_error("list", path, e) from e

    def walk(self, path: str) -> Iterator[FileInfo]:
        for info in self.list_dir(path):
            if info.is_dir:
                yield from self.walk(info.path)
            else:
                yield info

    def sidecars(self, path: str) -> list[str]:
        d, name = posixpath.split(path)
        sidecar = posixpath.join(d, f".{name}.crc")
        return [sidecar] if os.path.lexists(local_path(sidecar)) else []

    # -- writing ---------------------------------------------------------------------------

    def require_safe_commits(self, path: str) -> None:
        return None  # exclusive creates and no-replace renames hold on local disks

    def write(self, path: str, data: bytes) -> None:
        before_change()
        try:
            lp = local_path(path)
            os.makedirs(os.path.dirname(lp) or ".", exist_ok=True)
            with open(lp, "wb") as f:
                f.write(data)
        except OSError as e:
            raise storage_error("write", path, e) from e

    def create_if_absent(self, path: str, data: bytes, durable: bool = True, attempts: int = 4) -> None:
        """An exclusive create (``O_EXCL``); ``durable`` flushes the bytes (fsync) first."""
        before_change()
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
            raise storage_error("write", path, e) from e

    def rename_no_replace(self, src: str, dst: str, durable: bool = False) -> None:
        """Atomic and race-free. ``durable`` syncs the directory before the move (the source's
        name is on disk) and after it (the new name is), so a crash leaves either the old state
        or the whole new file."""
        before_change()
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
        before_change()
        try:
            os.replace(local_path(src), local_path(dst))
        except OSError as e:
            raise StorageError(f"cannot move {src} to {dst}: {e.strerror or e}") from e

    def copy(self, src: str, dst: str, link: bool = False) -> None:
        """A hard link when ``link`` and the filesystem has them, else a copy flushed to disk
        (so a commit that names it next finds it whole)."""
        s, d = local_path(src), local_path(dst)
        try:
            os.makedirs(os.path.dirname(d), exist_ok=True)
            if link:
                try:
                    os.link(s, d)
                    return
                except OSError as e:
                    if e.errno not in (errno.EXDEV, errno.EPERM, errno.ENOTSUP, errno.EMLINK):
                        raise
            with open(s, "rb") as r, open(d, "xb") as w:
                shutil.copyfileobj(r, w, _COPY_CHUNK)
                w.flush()
                os.fsync(w.fileno())
        except FileNotFoundError:
            raise NotFound(f"data file not found: {src}") from None
        except OSError as e:
            raise StorageError(f"cannot copy {src} to {dst}: {e.strerror or e}") from None

    def delete(self, path: str, missing_ok: bool = True) -> None:
        before_change()
        try:
            try:
                os.unlink(local_path(path))
            except FileNotFoundError:
                if not missing_ok:
                    raise
        except FileNotFoundError as e:
            raise NotFound(f"file not found: {path}") from e
        except OSError as e:
            raise storage_error("delete", path, e) from e

    def delete_many(self, paths: list[str]) -> dict[str, str]:
        failed: dict[str, str] = {}
        for path in paths:
            try:
                self.delete(path)
            except (NotFound, StorageError) as e:
                failed[path] = str(e)
        return failed

    def remove_empty_dirs(self, root: str, below: list[str] | None = None, keep_root: bool = True) -> list[str]:
        """The directories are OS paths; a directory that still holds anything stays."""
        if below is None:
            top = local_path(root)
            return prune_empty_dirs(d for d, _subdirs, _files in os.walk(top, topdown=False, followlinks=False)
                                    if not (keep_root and d == top))
        top = os.path.normpath(local_path(root))
        candidates: set[str] = set()
        for p in below:
            d = os.path.dirname(os.path.normpath(local_path(p)))
            while d.startswith(top + os.sep):
                candidates.add(d)
                d = os.path.dirname(d)
        return prune_empty_dirs(candidates)
