"""Tables never nest: where tables are, as seen from a location.

A directory *holds a table* when its ``metadata/`` holds a metadata file (``*.metadata.json`` in
any of the names icectl reads: ``v<N>.metadata.json``, ``v<N>.gz.metadata.json``,
``<NNNNN>-<uuid>.metadata.json``, the legacy ``*.metadata.json.gz``), as Java's
``HadoopCatalog.isTableDir`` decides. A table inside another table's directory is trouble for
both: the outer table's orphan cleanup sees the inner table's files as its own unreferenced ones,
and Spark's Hadoop catalog deletes the whole outer directory on DROP TABLE. So ``create`` and
``register`` refuse a location at, above or below a table (:func:`refuse_nesting`), and the
deleting commands keep the files of any other table they come across (``ops/maintain/file_removal.py``).

Looking *above* a location lists ``metadata/`` of each parent directory up to the root (the
bucket on object stores); looking *below* walks the directories under it, one listing a
directory, and stops at the first table found.
"""

from __future__ import annotations

import posixpath
from typing import Iterator
from urllib.parse import urlsplit

from icectl.errors import AlreadyExists, NotFound, StorageError, ValidationError
from icectl.io.storage.files import FileIO, os_path
from icectl.table.catalog_files import is_metadata_file
from icectl.table.store import metadata_dir

__all__ = ["holds_table", "parent_dirs", "table_above", "table_below", "refuse_nesting"]

_METADATA = "metadata"


def holds_table(io: FileIO, directory: str) -> bool:
    """Whether ``directory``'s ``metadata/`` holds a metadata file (one listing)."""
    try:
        names = io.list_names(metadata_dir(directory))
    except (NotFound, StorageError):
        return False
    return any(is_metadata_file(n) for n in names)


def _root_and_parts(path: str) -> tuple[str, list[str]]:
    """``("/", [a, b])`` for the local ``/a/b``; ``("s3://bucket", [a, b])`` for ``s3://bucket/a/b``."""
    local = os_path(path)
    if local is not None:
        p = posixpath.normpath(local or ".")
        return "/", [x for x in p.split("/") if x]
    parts = urlsplit(path)
    root = f"{parts.scheme}://{parts.netloc}"
    return root, [x for x in posixpath.normpath(parts.path or "/").split("/") if x]


def _join(root: str, parts: list[str]) -> str:
    if root == "/":
        return "/" + "/".join(parts)
    return "/".join([root, *parts]) if parts else root


def parent_dirs(path: str) -> Iterator[str]:
    """The directories above ``path``, nearest first, up to the root (a bucket on object
    stores); local paths are made absolute first."""
    local = os_path(path)
    if local is not None and not posixpath.isabs(local):
        import os

        path = os.path.abspath(local)
    root, parts = _root_and_parts(path)
    for n in range(len(parts) - 1, -1, -1):
        yield _join(root, parts[:n])


def table_above(io: FileIO, location: str) -> str | None:
    """The nearest directory above ``location`` that holds a table, or None."""
    for d in parent_dirs(location):
        if holds_table(io, d):
            return d
    return None


def table_below(io: FileIO, location: str) -> str | None:
    """A directory strictly below ``location`` that holds a table (the first found), or None.
    Symbolic links are not followed."""
    top = location.rstrip("/") or location
    pending = [top]
    while pending:
        d = pending.pop()
        try:
            entries = io.list_dir(d, follow_symlinks=False)
        except (NotFound, StorageError):
            continue
        subdirs = [e for e in entries if e.is_dir and not e.is_link]
        if d != top and any(e.name == _METADATA for e in subdirs) and holds_table(io, d):
            return d
        pending.extend(e.path for e in reversed(subdirs))
    return None


def refuse_nesting(io: FileIO, location: str, *, at: bool = True) -> None:
    """Refuse a new table at ``location`` when a table is there (``at``: AlreadyExists), or in
    a directory above it or below it (ValidationError: tables never nest). Nothing is written."""
    if at and holds_table(io, location):
        raise AlreadyExists(f"a table already exists at {location}")
    above = table_above(io, location)
    if above is not None:
        raise ValidationError(f"cannot put a table at {location}: it is inside the table at {above} "
                              "(tables never nest: the outer table's cleanup would delete its files)")
    below = table_below(io, location)
    if below is not None:
        raise ValidationError(f"cannot put a table at {location}: the table at {below} is inside it "
                              "(tables never nest: this table's cleanup would delete that table's files)")
