"""Find (and optionally delete) files under a table that its metadata does not reference.

As the reference's ``DeleteOrphanFilesSparkAction``:

* listed: everything under the table location, recursively (as Iceberg 1.10 does; a
  ``write.data.path`` outside the table location is not listed: nothing outside the table is
  ever touched);
* names starting with ``_`` or ``.`` are skipped (files and whole directories), except
  directories of partition fields whose own names start with those characters
  (``_bucket=3``); so Hadoop's ``.crc`` sidecars and icectl's pending-expire records stay;
* only files last modified strictly before the cut-off count (default: 3 days ago);
* referenced: every live data and delete file of every manifest of every snapshot, the
  manifests and manifest lists, the current metadata file and those in the metadata log,
  ``version-hint.text`` and the statistics files;
* paths compare by their URI path: ``file:/t/x``, ``file:///t/x`` and ``/t/x`` are the same file;
  for other URLs the schemes s3, s3a and s3n are equal.

Safety (``ops/maintain/file_removal.py`` holds the rules): symbolic links are never followed (a link under the
table is reported in ``skipped_links``, neither listed as an orphan nor deleted), and each file's
real path must lie inside the table location's real path just before it is deleted; a table
whose metadata records another location (a copy) is refused. Files inside the directory of
another table (one nested in this table's location) are never orphans of this table: they are
reported in ``skipped_other_tables`` with that table's location, listed or deleting (on object
stores the one listing tells where such tables are). Deleting also refuses, as the
reference's action and procedure do, when ``gc.enabled=false`` and when the cut-off is less than
24 hours ago (or in the future) unless ``allow_recent``: a commit still running may own younger
files. Listing is read-only and accepts any cut-off.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator

from icectl.errors import UnsupportedFeature, ValidationError
from icectl.io.storage.files import FileIO, FileInfo
from icectl.ops.maintain.file_removal import (
    NeedsOverride, PathIdentities, TableBoundary, default_workers, delete_files, location_mismatch, normalize_path,
    require_gc_enabled,
)
from icectl.ops.maintain.reachable import read_reachable
from icectl.spec.metadata import TableMetadata
from icectl.spec.result_json import (
    JsonResult, derived, failed_deletes, json_field, refused_deletes, skipped_in_other_tables)
from icectl.table.store import version_hint_path
from icectl.table.table import Table

__all__ = ["OrphanResult", "find_orphan_files", "delete_orphan_files", "require_old_enough", "normalize_path",
           "DEFAULT_OLDER_THAN_MS"]

DEFAULT_OLDER_THAN_MS = 3 * 24 * 3600 * 1000
MIN_DELETE_AGE_MS = 24 * 3600 * 1000  # the reference procedure's shortest interval

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True, kw_only=True)
class OrphanResult(JsonResult):
    """The orphan files found (and, with ``deleted``, deleted)."""

    location: str
    older_than_ms: int
    deleted: bool = json_field(key="delete")  # True when deletion was asked for
    orphan_files_count: int = derived(lambda r: len(r.orphan_files))
    orphan_files: tuple[str, ...]
    deleted_count: int = derived(
        lambda r: len(r.orphan_files) - len(r.failed) - len(r.refused) if r.deleted else 0,
        key="deleted-files-count")
    failed: tuple[tuple[str, str], ...] = failed_deletes()
    refused: tuple[tuple[str, str], ...] = refused_deletes(default=())  # not deleted for safety
    listed_files: int = json_field(key="listed-files-count")
    referenced_files: int = json_field(key="referenced-files-count")
    listed_dirs: tuple[str, ...]
    skipped_links: tuple[str, ...] = ()  # symbolic links under the table: not followed, not deleted
    # (path, table): another table's files
    skipped_other_tables: tuple[tuple[str, str], ...] = skipped_in_other_tables(default=())


def _hidden_filter(md: TableMetadata) -> Callable[[str, bool], bool]:
    partition_prefixes = tuple(
        f"{f.name}=" for spec in md.specs for f in spec.fields if f.name.startswith(("_", ".")))

    def hidden(name: str, is_dir: bool) -> bool:
        if not name.startswith(("_", ".")):
            return False
        return not (partition_prefixes and name.startswith(partition_prefixes))

    return hidden


def _walk(io: FileIO, root: str, hidden: Callable[[str, bool], bool], links: list[str],
          every_key: list[str] | None = None) -> Iterator[FileInfo]:
    """Files under ``root``, never following a symbolic link (links go to ``links``).

    On a flat store (an object store), one paged listing of every key under the prefix (there
    are no directories to descend into, nor links; each key, hidden or not, also goes to
    ``every_key``); the hidden rule applies to each part of the key below ``root``, the parts
    before the last as directories."""
    if io.storage(root).flat:
        base = root.rstrip("/") + "/"
        for info in io.walk(root):
            if every_key is not None:
                every_key.append(info.path)
            parts = info.path[len(base):].split("/") if info.path.startswith(base) else [info.name]
            if any(hidden(part, i < len(parts) - 1) for i, part in enumerate(parts)):
                continue
            yield info
        return
    for info in io.list_dir(root, follow_symlinks=False):
        if hidden(info.name, info.is_dir):
            continue
        if info.is_link:
            links.append(info.path)
        elif info.is_dir:
            yield from _walk(io, info.path, hidden, links)
        else:
            yield info


def referenced_files(io: FileIO, md: TableMetadata, metadata_location: str, location: str,
                     workers: int = 8, progress: Progress | None = None, engine: Any = None,
                     identities: PathIdentities | None = None) -> set[str]:
    """Normalised paths of every file the table's metadata references (see module docs).

    A manifest list or manifest the metadata names but that is missing makes the referenced set
    unknowable: CorruptMetadata, rather than taking the files only it names for orphans.
    ``engine``: read the manifests in that engine's tasks (``ops/maintain/distributed.py``)."""
    from icectl.ops.maintain.distributed import engine_reader

    reader = engine_reader(io, md.format_version, workers, progress,
                           "not looking for orphans while the table's metadata is incomplete", engine)
    if identities is not None:
        reader.identities = identities
    refs = read_reachable(reader, md).take_all_paths()
    refs.add(normalize_path(metadata_location))
    refs.update(normalize_path(e.metadata_file) for e in md.metadata_log)
    refs.add(normalize_path(version_hint_path(location)))
    return refs


def find_orphan_files(table: Table, *, older_than_ms: int, workers: int | None = None,
                      progress: Progress | None = None, engine: Any = None) -> OrphanResult:
    """List the orphan files of ``table`` (nothing is deleted). ``engine`` (an engine object or
    ``"spark"``; default: this process): where the listing and the manifest reads run."""
    _check_location(table)
    return _run(table, older_than_ms, False, workers, progress, engine)


def delete_orphan_files(table: Table, *, older_than_ms: int, workers: int | None = None,
                        progress: Progress | None = None, allow_recent: bool = False,
                        now: int | None = None, engine: Any = None) -> OrphanResult:
    """Delete the orphan files of ``table``; failures and refusals are reported, not raised.

    Refused (nothing deleted): a table whose metadata records another location, ``gc.enabled``
    false, and unless ``allow_recent`` a cut-off less than 24 hours before ``now``. ``engine``:
    as for :func:`find_orphan_files`, the deletions too."""
    from icectl.spec.timetext import now_ms

    _check_location(table)
    if getattr(table, "read_only", None):
        raise UnsupportedFeature(table.read_only)  # a catalog's table: its catalog owns its files
    require_gc_enabled(table.metadata.properties, "delete orphan files")
    require_old_enough(older_than_ms, now if now is not None else now_ms(), allow_recent)
    return _run(table, older_than_ms, True, workers, progress, engine)


def require_old_enough(older_than_ms: int, now: int, allow_recent: bool = False) -> None:
    """The 24-hour rule of deleting orphan files: unless ``allow_recent``, NeedsOverride for a
    cut-off less than 24 hours before ``now`` (or after it)."""
    if not allow_recent and older_than_ms > now - MIN_DELETE_AGE_MS:
        raise NeedsOverride(
            "cannot delete orphan files with a cut-off less than 24 hours ago (or in the future): "
            "files of commits still in progress could be deleted", "allow_recent",
            "delete them when no other writer can be at work on the table")


def _check_location(table: Table) -> None:
    problem = location_mismatch(table.location, table.metadata.location)
    if problem is not None:
        raise ValidationError(f"cannot look for orphan files: {problem}")


def _run(table: Table, older_than_ms: int, delete: bool, workers: int | None,
         progress: Progress | None, engine: Any = None) -> OrphanResult:
    from icectl.ops.maintain import distributed

    workers = workers or default_workers(table)

    engine = distributed.resolve_engine(engine)
    walk = _walk if engine is None else distributed.engine_lister(engine, _walk, _hidden_filter,
                                                                  table.metadata.specs)
    remove = delete_files if engine is None else distributed.engine_deleter(engine)
    io = table.io
    md = table.metadata
    location = table.location
    boundary = TableBoundary(location)
    hidden = _hidden_filter(md)
    roots = [location]
    listed: list[FileInfo] = []
    links: list[str] = []
    every_key: list[str] = []
    for root in roots:
        listed.extend(walk(io, root, hidden, links, every_key))
    if io.storage(location).flat:  # the listing was complete: it says where tables are
        boundary.other_tables(io).know_listing(every_key)
    norm = PathIdentities()
    candidates = [(f.path, n) for f in listed if f.mtime_ms < older_than_ms
                  and boundary.contains_identity(n := norm(f.path))]
    refs = referenced_files(io, md, table.metadata_location, location, workers, progress, engine, norm) \
        if candidates else set()
    unreferenced = sorted(p for p, n in candidates if n not in refs)
    orphans, others = boundary.other_tables(io).split(unreferenced, workers)

    failed: tuple[tuple[str, str], ...] = ()
    refused: tuple[tuple[str, str], ...] = ()
    if delete and orphans:
        done = remove(io, orphans, boundary, allow_external=False, workers=workers, progress=progress)
        failed, refused = tuple(done.failed), tuple(done.refused)
    return OrphanResult(location=location, older_than_ms=older_than_ms, orphan_files=tuple(orphans),
                        deleted=delete, failed=failed, listed_files=len(listed),
                        listed_dirs=tuple(roots), referenced_files=len(refs),
                        skipped_links=tuple(sorted(links)), refused=refused,
                        skipped_other_tables=tuple(others))
