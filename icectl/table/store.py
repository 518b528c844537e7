"""Filesystem-table storage: where the current metadata is and how a new version is committed.

Same layout and protocol as the reference's Hadoop tables (HadoopTableOperations):

* versions are ``metadata/v<N>.metadata.json`` (``v<N>.gz.metadata.json`` with gzip; the legacy
  ``v<N>.metadata.json.gz`` is read too); a new table starts at v1;
* ``metadata/version-hint.text`` holds the newest N as decimal text, best-effort: readers use it,
  fall back to listing ``metadata/`` when it is missing or unreadable, and then probe N+1, N+2 ...
  so a stale hint still finds the newest version. A hint naming a missing file is an error;
* a commit writes the whole new metadata to ``metadata/<uuid>.metadata.json``, then renames it to
  ``v<N+1>`` with a rename that can never replace an existing file. If ``v<N+1>`` appeared in the
  meantime another writer won: the temp file is removed and :class:`VersionConflict` raised.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, replace

from icectl.errors import CommitConflict, CorruptMetadata, NotFound, StorageError, ValidationError
from icectl.io.files import DestinationExists, FileIO, join
from icectl.spec.metadata import (
    TableMetadata,
    metadata_from_bytes,
    metadata_to_bytes,
    now_ms,
    with_previous_metadata,
)

__all__ = [
    "VersionConflict", "CommittedVersion", "metadata_dir", "version_hint_path", "metadata_file_path",
    "find_metadata_file", "find_current_version", "read_metadata", "load_current", "commit",
    "write_version_hint", "VERSION_HINT", "METADATA_COMPRESSION", "DELETE_AFTER_COMMIT",
]

VERSION_HINT = "version-hint.text"
METADATA_COMPRESSION = "write.metadata.compression-codec"
DELETE_AFTER_COMMIT = "write.metadata.delete-after-commit.enabled"
WRITE_METADATA_LOCATION = "write.metadata.path"

_VERSION_NAME = re.compile(r"^v(\d+)(\.metadata\.json|\.gz\.metadata\.json|\.metadata\.json\.gz)$")


class VersionConflict(CommitConflict):
    """The version this commit wanted to create already exists: another writer won the race."""

    def __init__(self, version: int, path: str):
        super().__init__(f"version {version} already exists: {path}")
        self.version = version
        self.path = path


@dataclass(frozen=True)
class CommittedVersion:
    """A loaded or committed table version."""

    version: int
    metadata_location: str
    metadata: TableMetadata


def metadata_dir(location: str) -> str:
    return join(location, "metadata")


def version_hint_path(location: str) -> str:
    return join(metadata_dir(location), VERSION_HINT)


def metadata_file_path(location: str, version: int, codec: str = "none") -> str:
    ext = ".gz.metadata.json" if _codec(codec) == "gzip" else ".metadata.json"
    return join(metadata_dir(location), f"v{version}{ext}")


def _codec(name: str | None) -> str:
    codec = (name or "none").strip().lower()
    if codec not in ("none", "gzip"):
        raise ValidationError(f"invalid {METADATA_COMPRESSION}: {name!r} (expected none or gzip)")
    return codec


def find_metadata_file(io: FileIO, location: str, version: int) -> str | None:
    """The existing metadata file for a version, trying each name the reference may have used."""
    d = metadata_dir(location)
    for name in (f"v{version}.metadata.json", f"v{version}.gz.metadata.json", f"v{version}.metadata.json.gz"):
        path = join(d, name)
        if io.exists(path):
            return path
    return None


def _read_hint(io: FileIO, location: str) -> int | None:
    try:
        text = io.read(version_hint_path(location)).decode("utf-8").strip()
        value = int(text)
        return value if value >= 0 else None
    except (NotFound, StorageError, UnicodeDecodeError, ValueError):
        return None


def _list_versions(io: FileIO, location: str) -> list[int]:
    versions = []
    for info in io.list_dir(metadata_dir(location)):
        m = _VERSION_NAME.match(info.name)
        if m and not info.is_dir:
            versions.append(int(m.group(1)))
    return versions


def find_current_version(io: FileIO, location: str) -> tuple[int, str] | None:
    """``(version, metadata file)`` of the newest version, or None when there is no table.

    Raises CorruptMetadata when the version hint names a version whose file is missing.
    """
    hinted = _read_hint(io, location)
    if hinted is not None:
        version = hinted
        path = find_metadata_file(io, location, version)
        if path is None:
            if version == 0:
                return None
            raise CorruptMetadata(
                f"{version_hint_path(location)} names version {version}, but its metadata file is missing")
    else:
        versions = sorted(set(_list_versions(io, location)), reverse=True)
        version, path = 0, None
        for v in versions:
            p = find_metadata_file(io, location, v)
            if p is not None:
                version, path = v, p
                break
        if path is None:
            return None
    # The hint (or listing) may be stale: follow newer versions until one is missing.
    while True:
        nxt = find_metadata_file(io, location, version + 1)
        if nxt is None:
            return version, path
        version, path = version + 1, nxt


def read_metadata(io: FileIO, path: str) -> TableMetadata:
    return metadata_from_bytes(io.read(path), path)


def load_current(io: FileIO, location: str) -> CommittedVersion:
    """Load the newest version; NotFound naming the location when there is no table there."""
    found = find_current_version(io, location)
    if found is None:
        raise NotFound(f"no Iceberg table at {location} (no metadata/v<N>.metadata.json)")
    version, path = found
    try:
        md = read_metadata(io, path)
    except NotFound:
        # Deleted between listing and reading (metadata cleanup by a concurrent commit): retry once.
        found = find_current_version(io, location)
        if found is None:
            raise NotFound(f"no Iceberg table at {location}") from None
        version, path = found
        md = read_metadata(io, path)
    return CommittedVersion(version, path, md)


def write_version_hint(io: FileIO, location: str, version: int) -> bool:
    """Best-effort: point ``version-hint.text`` at ``version``. Returns False if it failed.

    The hint is written to a temp file and moved over the old one, and Hadoop's checksum sidecar
    ``.version-hint.text.crc`` is removed so Java readers do not reject the new content.
    """
    d = metadata_dir(location)
    tmp = join(d, f"{uuid.uuid4()}-version-hint.temp")
    try:
        io.write_exclusive(tmp, str(version).encode("utf-8"))
        io.delete(join(d, f".{VERSION_HINT}.crc"))
        io.replace(tmp, version_hint_path(location))
        return True
    except Exception:  # noqa: BLE001 - the hint is only an optimisation
        io.delete_quietly(tmp)
        return False


def commit(
    io: FileIO,
    location: str,
    base: CommittedVersion | None,
    new: TableMetadata,
) -> CommittedVersion:
    """Write ``new`` as version base.version + 1 (v1 for a new table).

    Adds ``base`` to the metadata log, writes the temp file, renames it into place without
    replacing, updates the hint, and with ``write.metadata.delete-after-commit.enabled`` removes
    metadata files that fell off the log. VersionConflict (the temp file removed) when another
    writer created that version first.
    """
    if WRITE_METADATA_LOCATION in new.properties:
        raise ValidationError(f"filesystem tables cannot relocate metadata ({WRITE_METADATA_LOCATION})")
    if base is not None:
        if new.location.rstrip("/") != base.metadata.location.rstrip("/"):
            raise ValidationError("filesystem tables cannot be relocated")
        if new.last_updated_ms == base.metadata.last_updated_ms:
            new = replace(new, last_updated_ms=max(now_ms(), base.metadata.last_updated_ms + 1))
        new = with_previous_metadata(new, base.metadata_location, base.metadata.last_updated_ms)

    codec = _codec(new.properties.get(METADATA_COMPRESSION))
    ext = ".gz.metadata.json" if codec == "gzip" else ".metadata.json"
    next_version = (base.version if base is not None else 0) + 1
    final = metadata_file_path(location, next_version, codec)
    temp = join(metadata_dir(location), f"{uuid.uuid4()}{ext}")
    data = metadata_to_bytes(new, compress=codec == "gzip")

    io.write_exclusive(temp, data)
    try:
        # Names of other codecs for the same version also mean "taken".
        other = find_metadata_file(io, location, next_version)
        if other is not None:
            raise VersionConflict(next_version, other)
        io.rename_no_replace(temp, final)
    except DestinationExists:
        io.delete_quietly(temp)
        raise VersionConflict(next_version, final) from None
    except BaseException:
        io.delete_quietly(temp)
        raise

    write_version_hint(io, location, next_version)

    if base is not None and new.property_as_bool(DELETE_AFTER_COMMIT, False):
        kept = {e.metadata_file for e in new.metadata_log}
        for entry in base.metadata.metadata_log:
            if entry.metadata_file not in kept:
                io.delete_quietly(entry.metadata_file)
    return CommittedVersion(next_version, final, new)
