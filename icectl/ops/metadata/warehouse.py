"""Warehouse-level operations: list the tables of a warehouse, drop a table, register a table.

A warehouse is a directory laid out as Spark's Hadoop catalog lays it out: a table ``ns.name``
lives at ``WAREHOUSE/ns/name``; a directory is a table when its ``metadata/`` holds metadata
files (``*.metadata.json``, as Java's ``HadoopCatalog.isTableDir`` decides), and a namespace is
a directory with tables somewhere below it (namespaces nest: ``a.b.t`` is ``WAREHOUSE/a/b/t``).

``drop_table`` without ``purge`` removes the table's ``metadata/`` directory: no catalog finds
the table any more, and its data files stay where they are (Java's ``HadoopCatalog.dropTable``
deletes the whole table directory, data included, even without purge; icectl keeps the data,
as other catalogs' drop without purge does). With ``purge``, every file the metadata reaches
(all snapshots: data and delete files, manifests, manifest lists, statistics) that lies inside
the table location is deleted too, then the metadata directory and the directories left empty;
files recorded outside the location are never deleted (they are reported), nor are files inside
another table's directory (``ops/maintain/file_removal.py``: kept and reported as skipped), and a table with
``gc.enabled=false`` is refused (its files may be shared with other tables). The metadata is read
strictly: a missing manifest list or manifest (whose files cannot be known) refuses the purge
with CorruptMetadata before anything is deleted, unless ``force``, which deletes every file under
the table location instead, whatever the metadata reaches (another table's files still excepted).

``register_table`` adopts a table whose metadata a catalog wrote (``NNNNN-<uuid>.metadata.json``
files, e.g. pyiceberg's SqlCatalog) as a filesystem table: the given metadata becomes the next
version ``v<N+1>.metadata.json`` (N the catalog's file number, else 1) with ``version-hint.text``,
next to the catalog's files. Manifests name files by absolute path and a Hadoop catalog finds a
table only at ``WAREHOUSE/ns/name``, so this is possible only when the table's location already
is that directory; otherwise it is refused with the reason. As ``create``, it refuses a location
inside another table's directory or holding another table below it (``table/nesting.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from icectl.errors import AlreadyExists, CorruptMetadata, IcectlError, InvalidInput, NotFound, UnsupportedFeature, ValidationError
from icectl.io.storage.files import FileIO
from icectl.ops.maintain.file_removal import (
    TableBoundary, classify, delete_files, require_gc_enabled, same_place,
)
from icectl.ops.maintain.reachable import ManifestReader, statistics_files
from icectl.spec.result_json import (
    JsonResult, derived, failed_deletes, json_field, refused_deletes, skipped_in_other_tables)
from icectl.table import catalog_files, store
from icectl.table.nesting import refuse_nesting
from icectl.table.table import Table, resolve_table_location

__all__ = ["TableEntry", "ListResult", "list_tables", "DropResult", "drop_table", "RegisterResult",
           "register_table"]

_CATALOG_NUMBER = re.compile(r"^(\d+)-")


# -- list ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TableEntry(JsonResult):
    identifier: str
    namespace: str = derived(lambda t: t.identifier.rpartition(".")[0])
    name: str = derived(lambda t: t.identifier.rpartition(".")[2])
    location: str
    kind: str  # "filesystem" (v<N> versions), "catalog" (only NNNNN-uuid files) or "sql" (a SQL catalog's)


@dataclass(frozen=True, kw_only=True)
class ListResult(JsonResult):
    warehouse: str
    namespace: str | None
    catalog: str | None = None  # a SQL catalog's name (None: the warehouse directory)
    namespaces: tuple[str, ...]
    tables: tuple[TableEntry, ...]


def _namespace_dir(warehouse: str, namespace: str | None) -> str:
    if not namespace:
        return warehouse
    parts = namespace.split(".")
    if any(not p for p in parts):
        raise InvalidInput(f"invalid namespace {namespace!r} (expected a or a.b)")
    return "/".join([warehouse, *parts])


def _table_kind(io: FileIO, directory: str) -> str | None:
    names = io.list_names(store.metadata_dir(directory))
    metadata = [n for n in names if catalog_files.is_metadata_file(n)]
    if not metadata:
        return None
    return "filesystem" if store.newest_listed(io, directory) is not None else "catalog"


def list_tables(warehouse: str, namespace: str | None = None, io: FileIO | None = None) -> ListResult:
    """The tables and namespaces under ``warehouse`` (or one of its namespaces), nested, sorted.
    NotFound when the warehouse or namespace directory does not exist."""
    io = io or FileIO()
    warehouse = warehouse.rstrip("/") or warehouse
    root = _namespace_dir(warehouse, namespace)
    if not io.exists(root):
        raise NotFound(f"no {'namespace ' + namespace + ' in the ' if namespace else ''}warehouse "
                       f"directory {root}")
    if _table_kind(io, root):
        raise InvalidInput(f"{root} is a table, not a warehouse or namespace")
    tables: list[TableEntry] = []
    namespaces: list[str] = []

    def walk(directory: str, prefix: list[str]) -> bool:
        found = False
        for info in io.list_dir(directory, follow_symlinks=False):
            if not info.is_dir or info.name.startswith((".", "_")):
                continue
            parts = prefix + [info.name]
            kind = _table_kind(io, info.path)
            if kind is not None:
                if len(parts) >= 2:  # a table needs a namespace (Hadoop catalog's rule)
                    tables.append(TableEntry(".".join(parts), info.path, kind))
                    found = True
                continue
            if walk(info.path, parts):
                namespaces.append(".".join(parts))
                found = True
        return found

    walk(root, namespace.split(".") if namespace else [])
    return ListResult(warehouse=warehouse, namespace=namespace, namespaces=tuple(sorted(namespaces)),
                      tables=tuple(sorted(tables, key=lambda t: t.identifier)))


# -- drop ---------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class DropResult(JsonResult):
    location: str
    purge: bool
    force: bool = False  # purged every file under the location, not only what the metadata reaches
    dry_run: bool
    dropped: bool = derived(lambda r: not r.dry_run and not r.failed)
    deleted_files_count: int = derived(lambda r: len(r.deleted_files))
    deleted_files: tuple[str, ...]  # content files, manifests, manifest lists, statistics
    metadata_files_count: int = derived(lambda r: len(r.metadata_files))
    metadata_files: tuple[str, ...]  # everything under metadata/ (removed with it)
    kept_outside_location: tuple[str, ...]
    failed: tuple[tuple[str, str], ...] = failed_deletes()
    refused: tuple[tuple[str, str], ...] = refused_deletes()
    removed_directories: tuple[str, ...]
    skipped_other_tables: tuple[tuple[str, str], ...] = skipped_in_other_tables(default=())  # (path, table)


_INCOMPLETE = "nothing is deleted while the table's metadata is incomplete"


def _reached(table: Table, workers: int, strict: bool) -> list[str]:
    """Every file any snapshot of the table reaches; ``strict``: CorruptMetadata when a manifest
    list or manifest is missing (else what it named is skipped)."""
    md = table.metadata
    reader = ManifestReader(table.io, md.format_version, workers, incomplete=_INCOMPLETE)
    manifests = reader.manifests_of(md.snapshots, strict=strict)
    files = reader.live_files(list(manifests.values()), "reading manifests", strict=strict)
    out = list(files) + list(manifests)
    out += [s.manifest_list for s in md.snapshots if s.manifest_list]
    out += sorted(statistics_files(md))
    return list(dict.fromkeys(out))


def _purge_candidates(table: Table, workers: int, force: bool) -> list[str]:
    """What the metadata reaches, read strictly; with ``force`` as much as can be read (an
    unreadable manifest list or manifest is skipped: everything under the location goes anyway)."""
    if not force:
        try:
            return _reached(table, workers, strict=True)
        except CorruptMetadata as e:
            raise CorruptMetadata(str(e), override="force",
                                  effect="to purge every file under the table location instead") from e
    try:
        return _reached(table, workers, strict=False)
    except CorruptMetadata:
        return []


def drop_table(table: Table, *, purge: bool = False, dry_run: bool = False, workers: int = 8,
               force: bool = False) -> DropResult:
    """Drop ``table`` (see the module docs); a catalog's table is also removed from its catalog."""
    if force and not purge:
        raise InvalidInput("forcing applies only to a purge (it purges every file under the table location)",
                           argument="force")
    if table.read_only is not None:
        raise UnsupportedFeature(table.read_only)
    io = table.io
    location = table.location
    in_catalog = table.operations.home != "filesystem"  # the catalog's row is the pointer
    problem = None if same_place(location, table.metadata.location or location) else table.metadata.location
    if problem is not None:
        raise ValidationError(f"cannot drop the table at {location}: its metadata records the location "
                              f"{problem} (a copied or moved table?), so its files are another table's")
    boundary = TableBoundary(location)
    meta_dir = store.metadata_dir(location)
    deleted: list[str] = []
    kept: list[str] = []
    failed: list[tuple[str, str]] = []
    refused: list[tuple[str, str]] = []
    skipped: list[tuple[str, str]] = []
    if purge:
        require_gc_enabled(table.metadata.properties, "purge the table's files")
        # (files under metadata/ go with the directory below); read strictly before anything changes
        reached = [p for p in _purge_candidates(table, workers, force) if not _under_dir(p, meta_dir)]
    if not dry_run and in_catalog:
        table.operations.forget()  # first, as the reference: no catalog names a half-purged table
    if purge:
        kept = [p for p in reached if not boundary.contains(p) and not boundary.inside(p)]
        todo = [p for p in reached if p not in set(kept)]
        if force:  # also what unreadable metadata named, and whatever else lies under the location
            todo = list(dict.fromkeys(todo + sorted(info.path for info in io.walk(location)
                                                    if not _under_dir(info.path, meta_dir))))
        if dry_run:
            outcome = classify(io, todo, boundary, allow_external=False, workers=workers)
        else:
            outcome = delete_files(io, todo, boundary, allow_external=False, workers=workers)
        deleted, failed, refused, skipped = outcome.deleted, outcome.failed, outcome.refused, outcome.skipped
    # a catalog's table without --purge keeps every file (as the reference's catalogs do)
    listed = sorted(info.path for info in io.walk(meta_dir)) if purge or not in_catalog else []
    metadata_files, more = boundary.other_tables(io).split(listed)
    skipped += more
    removed_dirs: list[str] = []
    if not dry_run and not failed:
        for path in metadata_files:
            try:
                io.delete(path)
            except IcectlError as e:
                failed.append((path, str(e)))
        if not failed:
            removed_dirs = io.remove_empty_dirs(meta_dir, keep_root=False)
            if purge:
                removed_dirs += io.remove_empty_dirs(location, keep_root=False)
    return DropResult(location=location, purge=purge, dry_run=dry_run, deleted_files=tuple(deleted),
                      metadata_files=tuple(metadata_files), kept_outside_location=tuple(kept),
                      failed=tuple(failed), refused=tuple(refused),
                      removed_directories=tuple(removed_dirs), force=force,
                      skipped_other_tables=tuple(skipped))


def _under_dir(path: str, directory: str) -> bool:
    from icectl.ops.maintain.file_removal import normalize_path

    p, d = normalize_path(path), normalize_path(directory).rstrip("/")
    return p.startswith(d + "/")




# -- register -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RegisterResult(JsonResult):
    identifier: str
    location: str
    metadata_location: str = json_field(key="metadata-file")
    version: int
    registered_from: str


def register_table(ident: str, metadata_file: str, warehouse: str | None = None,
                   io: FileIO | None = None) -> RegisterResult:
    """Adopt the table whose metadata is ``metadata_file`` as the filesystem table ``ident``
    (see the module docs). AlreadyExists when a filesystem table is there already."""
    io = io or FileIO()
    target = resolve_table_location(ident, warehouse)
    if not catalog_files.is_metadata_file(metadata_file):
        raise InvalidInput(f"{metadata_file} is not a metadata file (*.metadata.json)", argument="metadata")
    if not io.exists(metadata_file):
        raise NotFound(f"metadata file not found: {metadata_file}")
    md = store.read_metadata(io, metadata_file)
    if store.find_current_version(io, target) is not None:
        raise AlreadyExists(f"a filesystem table already exists at {target}")
    if not md.location or not same_place(md.location, target):
        raise ValidationError(
            f"the table's location is {md.location}, not {target}: a Hadoop catalog finds a table only "
            f"at WAREHOUSE/namespace/name and manifests name files by absolute path, so it cannot be "
            f"adopted there; register it under the identifier its location gives")
    refuse_nesting(io, target, at=False)  # (at: the catalog's own files are there)
    name = metadata_file.rstrip("/").rsplit("/", 1)[-1]
    m = _CATALOG_NUMBER.match(name)
    number = int(m.group(1)) if m else 0
    base = store.CommittedVersion(number, metadata_file, md)
    # commit on top of the catalog's file: the new version names it in its metadata log
    committed = store.commit(io, target, base, md)
    return RegisterResult(ident, target, committed.metadata_location, committed.version, metadata_file)
