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

__all__ = ["FileIO", "FileInfo", "DestinationExists", "is_local", "local_path", "join",
           "STORAGE_OPTIONS_ENV", "UNSAFE_COMMITS", "set_storage_options", "default_storage_options",
           "parse_storage_option", "parse_storage_options_text"]


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


# -- storage options ------------------------------------------------------------------------------

STORAGE_OPTIONS_ENV = "ICECTL_STORAGE_OPTIONS"
UNSAFE_COMMITS = "icectl.unsafe-commits"  # true: commit to a store that ignores conditional creates
_OWN_PREFIX = "icectl."  # options icectl reads itself; never passed to fsspec
_CONDITIONAL_STORES = ("s3", "s3a", "s3n", "gs", "gcs", "az", "abfs", "abfss")
_process_options: dict[str, Any] = {}


def parse_option_value(text: str) -> Any:
    """A storage option's value: JSON when it parses as JSON (``true``, ``3``, ``{"a": 1}``,
    ``"007"``), else the text as it is."""
    import json

    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_storage_option(item: str) -> tuple[str, Any]:
    """``KEY=VALUE`` -> (key, parsed value)."""
    from icectl.errors import InvalidInput

    key, eq, value = item.partition("=")
    key = key.strip()
    if not eq or not key:
        raise InvalidInput(f"a storage option must be KEY=VALUE, got {item!r}", argument="storage_options")
    return key, parse_option_value(value)


def parse_storage_options_text(text: str, source: str = STORAGE_OPTIONS_ENV) -> dict[str, Any]:
    """The storage options of ``ICECTL_STORAGE_OPTIONS``: a JSON object, or ``k=v,k=v`` (values
    as :func:`parse_option_value` reads them; a value holding a comma needs the JSON form)."""
    import json

    from icectl.errors import InvalidInput

    text = text.strip()
    if not text:
        return {}
    if text.startswith("{"):
        try:
            obj = json.loads(text)
        except ValueError as e:
            raise InvalidInput(f"{source} is not a JSON object: {e}") from None
        if not isinstance(obj, dict):
            raise InvalidInput(f"{source} is not a JSON object")
        return obj
    out: dict[str, Any] = {}
    for item in text.split(","):
        if item.strip():
            try:
                key, value = parse_storage_option(item)
            except Exception:
                raise InvalidInput(f"{source}: expected a JSON object or KEY=VALUE,KEY=VALUE, got {item!r}") from None
            out[key] = value
    return out


def set_storage_options(options: dict[str, Any]) -> None:
    """The storage options of this process (the command line's), over ``ICECTL_STORAGE_OPTIONS``;
    every FileIO made afterwards uses them."""
    global _process_options
    _process_options = dict(options)


def default_storage_options() -> dict[str, Any]:
    env = os.environ.get(STORAGE_OPTIONS_ENV, "")
    return {**(parse_storage_options_text(env) if env else {}), **_process_options}


def _truthy(value: Any) -> bool:
    return value is True or str(value).strip().lower() in ("true", "1", "yes")


# -- object stores: conditional creates -------------------------------------------------------

# store key -> True (honours create-if-absent) / False; positive answers are also kept in the
# cache directory so that later processes do not probe again
_conditional_answers: dict[str, bool] = {}


def _answers_file() -> str:
    from icectl.io.manifest_cache import cache_dir

    return os.path.join(os.path.dirname(cache_dir()), "conditional-create.json")


def _remembered(key: str) -> bool | None:
    if key in _conditional_answers:
        return _conditional_answers[key]
    import json

    try:
        with open(_answers_file(), encoding="utf-8") as f:
            if json.load(f).get(key) is True:
                _conditional_answers[key] = True
                return True
    except (OSError, ValueError, AttributeError):
        pass
    return None


def _remember(key: str, honoured: bool) -> None:
    _conditional_answers[key] = honoured
    if not honoured:
        return  # a refusal is re-checked by the next process (the store may have been fixed)
    import json

    path = _answers_file()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            data = data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            data = {}
        data[key] = True
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(data, f)
        os.replace(tmp, path)
    except OSError:
        pass  # remembered in this process only


def _bucket_url(path: str) -> str:
    """``scheme://bucket`` of an object-store URL."""
    scheme, _, rest = path.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0]}"


def _remote_error(op: str, path: str, e: BaseException) -> StorageError | NotFound:
    """An fsspec backend's failure as one line naming the bucket and what is missing."""
    name = type(e).__name__
    text = " ".join((str(e) or name).split())
    where = _bucket_url(path) if "://" in path else path
    chain = [e] + [c for c in (e.__cause__, e.__context__) if c is not None]
    names = {type(c).__name__ for c in chain}
    codes = set()
    for c in chain:
        err_info = (getattr(c, "response", None) or {}).get("Error", {}) if isinstance(
            getattr(c, "response", None), dict) else {}
        if err_info.get("Code"):
            codes.add(str(err_info["Code"]))
    if names & {"NoCredentialsError", "PartialCredentialsError", "CredentialRetrievalError",
                "DefaultCredentialsError", "ClientAuthenticationError"} \
            or "Unable to locate credentials" in text:
        return StorageError(f"cannot {op} {path}: no credentials for {where} ({name}); give them in "
                            "the environment (e.g. AWS_ACCESS_KEY_ID, GOOGLE_APPLICATION_CREDENTIALS) "
                            "or as storage options")
    if isinstance(e, PermissionError) or codes & {"AccessDenied", "403", "InvalidAccessKeyId",
                                                  "SignatureDoesNotMatch", "AllAccessDisabled"}:
        return StorageError(f"cannot {op} {path}: access denied to {where} ({text})")
    if codes & {"NoSuchBucket"} or "bucket does not exist" in text.lower():
        return NotFound(f"cannot {op} {path}: the bucket {where} does not exist")
    if isinstance(e, FileNotFoundError):
        return NotFound(f"file not found: {path}")
    reason = e.strerror if isinstance(e, OSError) and e.strerror else text
    return StorageError(f"cannot {op} {path}: {reason}")


def _precondition_failed(e: BaseException) -> bool:
    """Whether a failed create was refused because the object exists (HTTP 412 / 409 on Azure's
    BlobAlreadyExists / GCS's conditionNotMet)."""
    if isinstance(e, FileExistsError):
        return True
    for c in (e, e.__cause__, e.__context__):
        if c is None:
            continue
        response = getattr(c, "response", None)
        if isinstance(response, dict):
            info = response.get("Error", {})
            if info.get("Code") in ("PreconditionFailed", "412") and info.get("Condition", "If-None-Match") \
                    == "If-None-Match":
                return True
        if type(c).__name__ == "ResourceExistsError" or getattr(c, "code", None) == 412:
            return True
    return False


class _Unknown(Exception):
    """The outcome of a conditional create is not known (raised inside FileIO only)."""


# -- FileIO --------------------------------------------------------------------------------------

class FileIO:
    """Reads and writes table files. One instance serves any mix of local and fsspec paths.

    ``storage_options`` go to fsspec (over the process's defaults: ``ICECTL_STORAGE_OPTIONS``
    and what :func:`set_storage_options` set); keys starting with ``icectl.`` are icectl's own
    (``icectl.unsafe-commits``)."""

    def __init__(self, storage_options: dict[str, Any] | None = None):
        self._options = {**default_storage_options(), **dict(storage_options or {})}
        self._fs_cache: dict[str, Any] = {}

    @property
    def storage_options(self) -> dict[str, Any]:
        """The options this FileIO was made with (to hand to a worker's FileIO)."""
        return dict(self._options)

    @property
    def unsafe_commits(self) -> bool:
        return _truthy(self._options.get(UNSAFE_COMMITS, False))

    # -- helpers ---------------------------------------------------------------------------

    def _fs(self, path: str) -> tuple[Any, str]:
        import fsspec.core

        scheme = _scheme(path)
        try:
            fs = self._fs_cache.get(scheme)
            if fs is None:
                options = {k: v for k, v in self._options.items() if not k.startswith(_OWN_PREFIX)}
                if scheme in _CONDITIONAL_STORES:
                    # commits list and probe names that other processes create: never from a cache
                    options.setdefault("use_listings_cache", False)
                fs, _ = fsspec.core.url_to_fs(path, **options)
                self._fs_cache[scheme] = fs
            return fs, fs._strip_protocol(path)
        except ImportError as e:
            extra = {"s3": "s3", "s3a": "s3", "s3n": "s3", "gs": "gcs", "gcs": "gcs", "az": "azure",
                     "abfs": "azure", "abfss": "azure"}.get(scheme)
            hint = f" (install icectl[{extra}])" if extra else ""
            raise StorageError(f"no filesystem for {path}: {e}{hint}") from e
        except (ValueError, TypeError) as e:
            raise StorageError(f"no filesystem for {path}: {e}") from e

    def _remote(self, op: str, path: str, fn: Any) -> Any:
        """Run ``fn(fs, stripped_path)`` on a non-local path, its failures as icectl errors."""
        fs, p = self._fs(path)
        try:
            return fn(fs, p)
        except (NotFound, StorageError):
            raise
        except Exception as e:  # noqa: BLE001 - fsspec backends raise assorted errors
            raise _remote_error(op, path, e) from e

    def is_object_store(self, path: str) -> bool:
        """Whether ``path`` lives on a store without atomic no-replace renames (anything not
        local): commits there create the version file directly with a conditional create."""
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
        if not is_local(path):
            if writing:
                self.require_safe_commits(path)
                if _FAULT_ARMED:
                    _before_change()
            f = self._remote("open", path, lambda fs, p: fs.open(p, mode))
            return _MappedFile(f, path) if writing else f
        if _FAULT_ARMED and writing:
            _before_change()
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
            return FileInfo(path, int(d.get("size") or 0), _mtime_ms(d), d.get("type") == "directory")
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
            def ls(fs: Any, p: str) -> list[FileInfo]:
                try:
                    entries = fs.ls(p, detail=True)
                except FileNotFoundError:
                    return []
                out = []
                for d in entries:
                    name = posixpath.basename(d["name"].rstrip("/"))
                    if d["name"].rstrip("/") == p.rstrip("/"):
                        continue  # a "directory" marker object, or ``p`` itself as a file
                    out.append(FileInfo(join(path, name), int(d.get("size") or 0), _mtime_ms(d),
                                        d.get("type") == "directory"))
                return sorted(out, key=lambda i: i.path)

            return self._remote("list", path, ls)
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
        """Names directly under a directory (starting with ``prefix``), without looking at each
        entry; [] when missing. On object stores only keys starting with the prefix are listed."""
        if not is_local(path):
            def names(fs: Any, p: str) -> list[str]:
                base = p.rstrip("/") + "/"
                try:
                    found = fs.find(base, prefix=prefix) if prefix else [d["name"] for d in fs.ls(p, detail=True)]
                except FileNotFoundError:
                    return []
                out = set()
                for full in found:
                    rest = full[len(base):] if full.startswith(base) else posixpath.basename(full.rstrip("/"))
                    name = rest.split("/", 1)[0]
                    if name and name.startswith(prefix):
                        out.add(name)
                return sorted(out)

            return self._remote("list", path, names)
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
        """Every file (not directory) below ``path``, recursively. On object stores: one listing
        of every key under the prefix (they have no directories to descend into)."""
        if not is_local(path):
            yield from self.list_tree(path)
            return
        for info in self.list_dir(path):
            if info.is_dir:
                yield from self.walk(info.path)
            else:
                yield info

    def list_tree(self, path: str) -> list[FileInfo]:
        """Every object under the prefix ``path/`` of an object store, by one (paged) listing."""
        def find(fs: Any, p: str) -> list[FileInfo]:
            base = p.rstrip("/") + "/"
            try:
                found = fs.find(base, detail=True)
            except FileNotFoundError:
                return []
            out = []
            for name, d in found.items():
                if not name.startswith(base) or d.get("type") == "directory" or name.endswith("/"):
                    continue
                out.append(FileInfo(join(path, name[len(base):]), int(d.get("size") or 0), _mtime_ms(d)))
            return sorted(out, key=lambda i: i.path)

        return self._remote("list", path, find)

    # -- writing ---------------------------------------------------------------------------

    def mkdirs(self, path: str) -> None:
        if not is_local(path):
            return  # object stores have no directories
        try:
            os.makedirs(local_path(path), exist_ok=True)
        except OSError as e:
            raise _storage_error("create directory", path, e) from e

    def write(self, path: str, data: bytes, overwrite: bool = True) -> None:
        """Write a whole file, creating parent directories. Without ``overwrite`` it is exclusive."""
        if not overwrite:
            self.write_exclusive(path, data)
            return
        if not is_local(path):
            self.require_safe_commits(path)
        if _FAULT_ARMED:
            _before_change()
        if not is_local(path):
            self._remote("write", path, lambda fs, p: fs.pipe_file(p, data))
            return
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

    # -- object stores: create-if-absent ----------------------------------------------------

    def _put_if_absent(self, fs: Any, p: str, path: str, data: bytes) -> None:
        """One conditional create: S3 ``If-None-Match: *`` (s3fs ``mode="create"``), GCS
        ``ifGenerationMatch=0`` (gcsfs ``mode="create"``), Azure ``If-None-Match: *`` (adlfs
        ``overwrite=False``), else an exclusive open. FileExistsError (or an error
        :func:`_precondition_failed` recognises) when the object exists."""
        scheme = _scheme(path)
        if scheme in ("az", "abfs", "abfss"):
            fs.pipe_file(p, data, overwrite=False)
        elif scheme in _CONDITIONAL_STORES:
            fs.pipe_file(p, data, mode="create")
        else:
            with fs.open(p, "xb") as f:
                f.write(data)

    def create_if_absent(self, path: str, data: bytes, attempts: int = 4) -> None:
        """Create ``path`` holding ``data`` only if no object has that name; DestinationExists
        when one has (another writer's). Local paths: an exclusive create.

        An object store can fail in a way that leaves the outcome unknown (a timeout, a 5xx, a
        409, a reset connection), and a client's own retry of a PUT that did land is refused
        with 412. Either is resolved by reading the object back and comparing bytes: ours ->
        created; someone else's -> DestinationExists; absent -> the conditional create is tried
        again (it can never overwrite). Nothing is ever deleted to resolve it. When reading back
        does not tell either, CommitStateUnknown."""
        if is_local(path):
            self.write_exclusive(path, data, durable=True)
            return
        from icectl.errors import CommitStateUnknown

        if not data:
            raise StorageError(f"cannot create {path} conditionally: empty objects are not supported")
        self.require_safe_commits(path)
        fs, p = self._fs(path)
        last = ""
        for attempt in range(max(1, attempts)):
            if _FAULT_ARMED:
                _before_change()
            try:
                self._put_if_absent(fs, p, path, data)
                return
            except Exception as e:  # noqa: BLE001 - sorted below
                if not _precondition_failed(e):
                    failure = _remote_error("write", path, e)
                    if "access denied" in str(failure) or "no credentials" in str(failure) \
                            or isinstance(failure, NotFound):
                        raise failure from e  # nothing was written
                    last = str(failure)
            verdict = self._read_back(path, data)
            if verdict is True:
                return
            if verdict is False:
                raise DestinationExists(path)
            if verdict == "error":
                last = last or "reading it back failed"
            if attempt + 1 < attempts:
                import time

                time.sleep(0.05 * 2 ** attempt)
        raise CommitStateUnknown(f"cannot tell whether {path} was created ({last}); it was not "
                                 "deleted; look at the table again before retrying")

    def _read_back(self, path: str, data: bytes) -> bool | str | None:
        """True: ``path`` holds ``data``; False: other bytes; None: absent; "error": unreadable."""
        try:
            return self.read(path) == data
        except NotFound:
            return None
        except StorageError:
            return "error"

    def require_safe_commits(self, path: str) -> None:
        """On an object store, prove once per store (bucket and endpoint) that it honours
        create-if-absent, before anything is written there; UnsafeStorage when it does not
        (unless the storage option ``icectl.unsafe-commits`` is true).

        The proof: a probe object next to ``path`` (named ``_icectl-probe-<uuid>``; names
        starting with ``_`` are never table files) created twice with a conditional create; the
        second create must be refused. The probe object is then deleted. A positive answer is
        remembered in the cache directory (``conditional-create.json``)."""
        if is_local(path) or self.unsafe_commits or _scheme(path) == "memory":
            return
        key = self._store_key(path)
        known = _remembered(key)
        if known is None:
            known = self._probe(path)
            _remember(key, known)
        if not known:
            from icectl.errors import UnsafeStorage

            raise UnsafeStorage(
                f"{_bucket_url(path)} does not honour conditional creates (If-None-Match), so "
                f"concurrent commits could silently overwrite each other; nothing was written (to "
                f"write anyway, set the storage option {UNSAFE_COMMITS}=true)")

    def _store_key(self, path: str) -> str:
        opts = self._options
        client = opts.get("client_kwargs") if isinstance(opts.get("client_kwargs"), dict) else {}
        endpoint = (opts.get("endpoint_url") or client.get("endpoint_url")
                    or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
                    or opts.get("account_name") or os.environ.get("AZURE_STORAGE_ACCOUNT_NAME") or "")
        return f"{endpoint}|{_bucket_url(path)}"

    def _probe(self, path: str) -> bool:
        import uuid

        probe = join(posixpath.dirname(path), f"_icectl-probe-{uuid.uuid4()}")
        fs, p = self._fs(probe)
        try:
            try:
                self._put_if_absent(fs, p, probe, b"icectl conditional-create probe 1")
            except Exception as e:  # noqa: BLE001
                raise _remote_error("write", probe, e) from e
            try:
                self._put_if_absent(fs, p, probe, b"icectl conditional-create probe 2")
            except Exception as e:  # noqa: BLE001
                if _precondition_failed(e):
                    return True
                raise _remote_error("write", probe, e) from e
            return False
        finally:
            try:
                fs.rm(p)
            except Exception:  # noqa: BLE001 - the probe is hidden (``_``) anyway
                pass

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

    def delete(self, path: str, missing_ok: bool = True) -> None:
        if _FAULT_ARMED:
            _before_change()
        if not is_local(path):
            def rm(fs: Any, p: str) -> None:
                if not missing_ok and not fs.exists(p):
                    raise FileNotFoundError(errno.ENOENT, "No such file", path)
                try:
                    fs.rm_file(p)  # one DELETE; deleting a missing key succeeds on object stores
                except FileNotFoundError:
                    if not missing_ok:
                        raise

            self._remote("delete", path, rm)
            return
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
        """Delete object-store files in batches (S3: DeleteObjects, up to 1000 keys a request);
        missing ones count as deleted. Returns path -> error for those that failed."""
        failed: dict[str, str] = {}
        by_scheme: dict[str, list[str]] = {}
        for path in paths:
            by_scheme.setdefault(_scheme(path), []).append(path)
        for scheme, group in by_scheme.items():
            if scheme in ("", "file", "local"):
                for path in group:
                    try:
                        self.delete(path)
                    except (NotFound, StorageError) as e:
                        failed[path] = str(e)
                continue
            fs, _ = self._fs(group[0])
            for start in range(0, len(group), 1000):
                chunk = group[start:start + 1000]
                if _FAULT_ARMED:
                    _before_change()
                try:
                    fs.rm([fs._strip_protocol(p) for p in chunk])
                except FileNotFoundError:
                    pass
                except Exception:  # noqa: BLE001 - fall back to one at a time to name failures
                    for path in chunk:
                        try:
                            self.delete(path)
                        except (NotFound, StorageError) as e:
                            failed[path] = str(e)
        return failed

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
