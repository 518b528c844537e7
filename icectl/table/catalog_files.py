"""Tables other catalogs manage, found by their files, and metadata files named directly: their
current metadata for the read-only commands (commits go through a table's home: its directory,
``table/store.py``, or its catalog, ``icectl/catalog``)."""

from __future__ import annotations

import re

from icectl.errors import NotFound, StorageError, ValidationError
from icectl.io.storage.files import FileIO, join
from icectl.table.store import VERSION_NAME, find_current_version, metadata_dir

__all__ = ["is_metadata_file", "find_catalog_version", "catalog_managed", "locate_metadata_file",
           "METADATA_FILE_SUFFIXES"]

# Catalogs (pyiceberg's SqlCatalog, Java's JDBC/Hive/REST ones) name each version
# ``<NNNNN>-<uuid>.metadata.json`` and keep the current one in the catalog, not in the directory.
_CATALOG_NAME = re.compile(r"^(\d+)-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                           r"[0-9a-fA-F]{12}(\.metadata\.json|\.gz\.metadata\.json|\.metadata\.json\.gz)$")
METADATA_FILE_SUFFIXES = (".metadata.json", ".metadata.json.gz")


def is_metadata_file(path: str) -> bool:
    """Whether ``path`` names a metadata file rather than a table location."""
    return path.rstrip("/").endswith(METADATA_FILE_SUFFIXES)


def find_catalog_version(io: FileIO, location: str) -> tuple[int, str] | None:
    """``(NNNNN, file)`` of the highest catalog-named metadata file under ``location``, or None.
    ValidationError when two files carry that number (which one is current only the catalog
    knows)."""
    try:
        names = io.list_names(metadata_dir(location))
    except (NotFound, StorageError):
        return None
    found: dict[int, list[str]] = {}
    for name in names:
        m = _CATALOG_NAME.match(name)
        if m:
            found.setdefault(int(m.group(1)), []).append(name)
    if not found:
        return None
    top = max(found)
    if len(found[top]) > 1:
        raise ValidationError(f"cannot tell the current metadata of {location}: "
                              f"{' and '.join(sorted(found[top]))} share version {top}; name the file")
    return top, join(metadata_dir(location), found[top][0])


def catalog_managed(location: str) -> str:
    """Why commits to a catalog's table are refused (a one-line reason)."""
    return (f"the table at {location} is managed by a catalog (metadata file names NNNNN-uuid): change it "
            "through its catalog (as namespace.table of that catalog), or adopt it as a filesystem table "
            "(icectl register)")


def locate_metadata_file(io: FileIO, path: str) -> tuple[str, int, str | None]:
    """For a metadata file named directly: ``(table location, version, why commits are
    refused or None)``. The location is the directory above ``metadata/`` (else the one the
    file records); commits are allowed only when the file is a filesystem table's current
    version. NotFound when the file does not exist."""
    path = path.rstrip("/")
    if not io.exists(path):
        raise NotFound(f"metadata file not found: {path}")
    directory, name = path.rsplit("/", 1) if "/" in path else ("", path)
    location = directory.rsplit("/", 1)[0] if directory.rsplit("/", 1)[-1] == "metadata" else ""
    m = VERSION_NAME.match(name)
    if m and location:
        version = int(m.group(1))
        current = find_current_version(io, location)
        if current is not None and current[0] == version:
            return location, version, None
        newest = f"v{current[0]}" if current else "none"
        return location, version, (f"{path} is not the current version of the table at {location} "
                                   f"(current: {newest}); only the current version can be changed")
    m = _CATALOG_NAME.match(name)
    if m:
        return location, int(m.group(1)), catalog_managed(location or directory)
    return location, 0, f"the table was loaded from the metadata file {path}; only filesystem tables are changed"
