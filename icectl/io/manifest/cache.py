"""A persistent cache of decoded manifests, shared by every icectl process of a user.

Manifests are immutable files, so a decoded manifest never goes stale. Entries live in
``$ICECTL_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/icectl``, else ``~/.cache/icectl``
(sub-directory ``manifests/``). An entry is keyed by a hash of the manifest's path, its length
(from the manifest list), its modification time in nanoseconds (so a manifest rewritten under
the same path and length is never served stale), the inheritance inputs and the format version
of the cache.

An entry is a header (magic, format version, key digest, payload length, CRC-32 of the payload)
followed by a pickle (protocol 5) of the value (for a manifest, the form of
:func:`icectl.io.manifest.columns.pack`: the columns pruning reads, and every other column
pickled on its own and unpickled on first use, so loading an entry builds only what the plan
touches). The header is checked before anything
is unpickled; a mismatch or truncation is a miss, and the caller decodes again and overwrites.
Writes go to a temporary file in the cache directory renamed into place (last writer wins;
entries for one key are equal by construction). The directory is bounded by
``ICECTL_CACHE_MAX`` bytes (default 1 GiB; suffixes K, M, G, T): a hit touches the entry's
mtime, and when a write pushes the running size estimate over the bound the least recently
used entries are removed. Entries are only read from a directory the user owns and nobody else
can write to. ``ICECTL_NO_CACHE=1`` (or :func:`set_enabled`) bypasses the cache.
A cache directory that cannot be written never fails a command: the cache is then skipped.
"""

from __future__ import annotations

import os
import pickle
import struct
import tempfile
import threading
import time
import zlib
from dataclasses import dataclass
from typing import Any

from icectl.errors import InvalidInput
from icectl.io.storage.cache_dir import cache_root
from icectl.io.storage.files import FileIO
from icectl.spec.result_json import JsonResult

__all__ = ["CacheInfo", "CacheCleared", "cache_dir", "cache_max", "clear", "file_key", "get",
           "info", "manifest_key", "put", "put_payload", "set_enabled"]

try:  # CPython's built-in SHA-256 (hashlib loads OpenSSL first: start-up time); same digests
    from _sha256 import sha256 as _sha256
except ImportError:  # pragma: no cover - Pythons without it (3.12 renamed it)
    from hashlib import sha256 as _sha256

FORMAT_VERSION = 5  # 2: manifest columns in their packed form (manifest_columns.pack); 3: per-field metrics;
# 4: plain fixed partition values read length-prefixed, as Java writes them; 5: the modules moved
# into rooms (icectl.io.manifest.*): a pickle names the classes' modules, so an older entry cannot load
_MAGIC = b"ICTLMC\x00\x03"
_HEADER = struct.Struct("<8sI32sQI")  # magic, version, key digest, payload length, crc32
_SUFFIX = ".mc"
_TMP_PREFIX = ".tmp-"
DEFAULT_MAX = 1 << 30
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}

_lock = threading.Lock()
_enabled = True
_unwritable: set[str] = set()  # directories found unwritable in this process
_estimates: dict[str, int] = {}  # directory -> running size estimate
_trusted: dict[str, bool] = {}  # directory -> owned by this user and writable by nobody else
_STALE_TMP_SECONDS = 3600


def set_enabled(enabled: bool) -> None:
    """Turn the persistent cache on or off for this process (``--no-cache``)."""
    global _enabled
    _enabled = enabled


def enabled() -> bool:
    return _enabled and os.environ.get("ICECTL_NO_CACHE", "") in ("", "0")


def cache_dir() -> str:
    """The directory holding the entries (it need not exist)."""
    return os.path.join(cache_root(), "manifests")


def parse_size(text: str) -> int:
    """``"512M"`` -> 536870912; plain numbers are bytes."""
    t = text.strip().upper()
    if t.endswith("IB"):
        t = t[:-2]
    elif t.endswith("B") and len(t) > 1 and t[-2] in _UNITS:
        t = t[:-1]
    unit = t[-1:] if t[-1:] in _UNITS and not t[-1:].isdigit() else ""
    number = t[: len(t) - len(unit)]
    try:
        value = float(number)
    except ValueError:
        raise InvalidInput(f"ICECTL_CACHE_MAX: not a size: {text!r} (e.g. 1073741824, 512M, 2G)") from None
    if value < 0:
        raise InvalidInput(f"ICECTL_CACHE_MAX: negative size {text!r}")
    return int(value * _UNITS[unit])


def cache_max() -> int:
    text = os.environ.get("ICECTL_CACHE_MAX")
    return DEFAULT_MAX if not text else parse_size(text)


def _max_or_default() -> int:
    try:
        return cache_max()
    except InvalidInput:
        return DEFAULT_MAX


def _size_and_mtime(file_io: FileIO, path: str) -> tuple[int, int] | None:
    """A file's size and modification time in nanoseconds, or None when they cannot be had
    cheaply (then it is not cached; the read reports the real problem)."""
    try:
        fi = file_io.info(path)
        return fi.size, fi.mtime_ns if fi.mtime_ns is not None else fi.mtime_ms * 1_000_000
    except Exception:  # noqa: BLE001 - no key, no cache
        return None


def _digest(key: tuple) -> bytes:
    return _sha256(repr(key).encode("utf-8", "surrogatepass")).digest()


def manifest_key(file_io: FileIO, path: str, length: int, inputs: tuple) -> bytes | None:
    """The key digest of a manifest, or None when its modification time cannot be had cheaply
    or its size is not the recorded length (then it is not cached)."""
    found = _size_and_mtime(file_io, path)
    if found is None or found[0] != length:
        return None
    return _digest((FORMAT_VERSION, path, length, found[1], tuple(inputs)))


def file_key(file_io: FileIO, path: str, inputs: tuple) -> bytes | None:
    """The key digest of an immutable file whose length is not recorded anywhere (a manifest
    list): its path, size and modification time as found now, and ``inputs``; None when they
    cannot be had cheaply."""
    found = _size_and_mtime(file_io, path)
    if found is None:
        return None
    return _digest((FORMAT_VERSION, "file", path, found[0], found[1], tuple(inputs)))


def _entry_path(directory: str, key: bytes) -> str:
    return os.path.join(directory, key.hex()[:40] + _SUFFIX)


def get(key: bytes) -> Any:
    """The value stored under ``key``, or None (miss, corrupt, truncated or disabled)."""
    if not enabled():
        return None
    directory = cache_dir()
    if not _is_trusted(directory):
        return None
    p = _entry_path(directory, key)
    try:
        with open(p, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if len(data) < _HEADER.size:
        return None
    magic, version, digest, length, crc = _HEADER.unpack_from(data)
    payload = memoryview(data)[_HEADER.size:]
    if (magic != _MAGIC or version != FORMAT_VERSION or digest != key or length != len(payload)
            or zlib.crc32(payload) != crc):
        return None
    try:
        value = pickle.loads(payload)
    except Exception:  # noqa: BLE001 - checked above; any failure is still only a miss
        return None
    try:
        os.utime(p)  # least recently used goes first
    except OSError:
        pass
    return value


def entry_stamp(key: bytes) -> tuple[int, int, int] | None:
    """Identity of the entry stored under ``key`` now (inode, size, modification time), or None:
    a copy of an entry kept in memory is valid while its stamp is unchanged."""
    if not enabled():
        return None
    try:
        st = os.stat(_entry_path(cache_dir(), key))
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def put(key: bytes, value: Any) -> bool:
    """Store ``value`` under ``key``; False when the cache is off or cannot be written."""
    if not enabled():
        return False
    directory = cache_dir()
    if directory in _unwritable:
        return False
    return put_payload(key, pickle.dumps(value, protocol=5))


def put_payload(key: bytes, payload: bytes) -> bool:
    """Store an already pickled value (:func:`put` does the pickling)."""
    if not enabled():
        return False
    directory = cache_dir()
    if directory in _unwritable:
        return False
    header = _HEADER.pack(_MAGIC, FORMAT_VERSION, key, len(payload), zlib.crc32(payload))
    tmp = None
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        if not _is_trusted(directory):
            raise PermissionError(directory)
        fd, tmp = tempfile.mkstemp(prefix=_TMP_PREFIX, suffix=_SUFFIX, dir=directory)
        with os.fdopen(fd, "wb") as f:
            f.write(header)
            f.write(payload)
        os.replace(tmp, _entry_path(directory, key))
        tmp = None
    except OSError:
        with _lock:
            _unwritable.add(directory)
        return False
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    _account(directory, _HEADER.size + len(payload))
    return True


def _is_trusted(directory: str) -> bool:
    """Entries are only read from (and written to) a directory this user owns and nobody else
    may write to, so nothing another user planted is ever unpickled. Checked once per process;
    a directory that does not exist yet is checked again when it is created."""
    got = _trusted.get(directory)
    if got is not None:
        return got
    try:
        st = os.stat(directory)
    except OSError:
        return False
    getuid = getattr(os, "getuid", None)
    ok = (getuid is None or st.st_uid == getuid()) and not st.st_mode & 0o022
    with _lock:
        _trusted[directory] = ok
    return ok


def _scan(directory: str) -> list[tuple[float, int, str]]:
    """(mtime, size, path) of every entry."""
    out = []
    try:
        with os.scandir(directory) as it:
            for e in it:
                if e.name.endswith(_SUFFIX) and not e.name.startswith(_TMP_PREFIX):
                    try:
                        st = e.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    out.append((st.st_mtime, st.st_size, e.path))
    except OSError:
        pass
    return out


def _account(directory: str, written: int) -> None:
    """Add ``written`` to the running size estimate (the first write of a process scans the
    directory once); over the bound, remove least recently used entries down to 90% of it."""
    limit = _max_or_default()
    with _lock:
        estimate = _estimates.get(directory)
        if estimate is None:
            estimate = sum(s for _, s, _ in _scan(directory))
        else:
            estimate += written
        if estimate <= limit:
            _estimates[directory] = estimate
            return
        entries = sorted(_scan(directory))
        total = sum(s for _, s, _ in entries)
        target = limit * 9 // 10
        for _, size, p in entries:
            if total <= target:
                break
            try:
                os.unlink(p)
                total -= size
            except OSError:
                pass
        _estimates[directory] = total


@dataclass
class CacheInfo(JsonResult):
    directory: str
    entries: int
    total_bytes: int
    max_bytes: int
    enabled: bool


@dataclass
class CacheCleared(JsonResult):
    directory: str
    removed: int
    removed_bytes: int


def info() -> CacheInfo:
    directory = cache_dir()
    entries = _scan(directory)
    return CacheInfo(directory, len(entries), sum(s for _, s, _ in entries), cache_max(),
                     enabled())


def clear() -> CacheCleared:
    """Remove every entry (and stale temporary files) of the cache directory."""
    directory = cache_dir()
    removed = removed_bytes = 0
    try:
        names = os.listdir(directory)
    except OSError:
        names = []
    now = time.time()
    for name in names:
        if not name.endswith(_SUFFIX):
            continue
        p = os.path.join(directory, name)
        try:
            st = os.lstat(p)
            if name.startswith(_TMP_PREFIX) and now - st.st_mtime < _STALE_TMP_SECONDS:
                continue  # another process is writing it
            size = st.st_size
            os.unlink(p)
        except OSError:
            continue
        if not name.startswith(_TMP_PREFIX):
            removed += 1
            removed_bytes += size
    with _lock:
        _estimates.pop(directory, None)
    return CacheCleared(directory, removed, removed_bytes)
