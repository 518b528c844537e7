"""Where a filesystem table's versions are: ``metadata/v<N>.metadata.json`` names, the version
hint, and finding versions by name and by listing (the layout of the reference's Hadoop tables;
how a version is committed is :mod:`icectl.table.store`)."""

from __future__ import annotations

import re

from icectl.errors import NotFound, StorageError, ValidationError
from icectl.io.storage.files import FileIO, join
from icectl.spec.properties import METADATA_COMPRESSION

__all__ = ["VERSION_HINT", "VERSION_NAME", "metadata_dir", "version_hint_path", "metadata_file_path",
           "codec_name", "find_metadata_file", "read_hint", "list_versions", "newest_listed",
           "probe_forward"]

VERSION_HINT = "version-hint.text"

VERSION_NAME = re.compile(r"^v(\d+)(\.metadata\.json|\.gz\.metadata\.json|\.metadata\.json\.gz)$")


def metadata_dir(location: str) -> str:
    return join(location, "metadata")


def version_hint_path(location: str) -> str:
    return join(metadata_dir(location), VERSION_HINT)


def metadata_file_path(location: str, version: int, codec: str = "none") -> str:
    ext = ".gz.metadata.json" if codec_name(codec) == "gzip" else ".metadata.json"
    return join(metadata_dir(location), f"v{version}{ext}")


def codec_name(name: str | None) -> str:
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


def read_hint(io: FileIO, location: str) -> int | None:
    try:
        text = io.read(version_hint_path(location)).decode("utf-8").strip()
        value = int(text)
        return value if value >= 0 else None
    except (NotFound, StorageError, UnicodeDecodeError, ValueError):
        return None


def list_versions(io: FileIO, location: str) -> list[int]:
    versions = []
    for name in io.list_names(metadata_dir(location), prefix="v"):
        m = VERSION_NAME.match(name)
        if m:
            versions.append(int(m.group(1)))
    return versions


def newest_listed(io: FileIO, location: str) -> tuple[int, str] | None:
    """The highest version whose file exists, by listing ``metadata/``."""
    for v in sorted(set(list_versions(io, location)), reverse=True):
        p = find_metadata_file(io, location, v)
        if p is not None:
            return v, p
    return None


def probe_forward(io: FileIO, location: str, version: int, path: str) -> tuple[int, str]:
    while True:
        nxt = find_metadata_file(io, location, version + 1)
        if nxt is None:
            return version, path
        version, path = version + 1, nxt
