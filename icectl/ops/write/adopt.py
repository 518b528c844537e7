"""Adopt a Hive-style Parquet directory as an Iceberg table, without copying a row.

* :func:`migrate_directory` makes the directory itself the table (Spark's ``migrate``): its
  location is the directory, its metadata goes to ``<dir>/metadata``, the files stay where they
  are and belong to the table from then on (property ``migrated=true``).
* :func:`snapshot_directory` creates a table elsewhere that references the directory's files
  (Spark's ``snapshot``): ``gc.enabled=false`` (and ``snapshot=true``) so that no expiry, orphan
  removal or purge of the new table ever deletes a file of the source, which is left untouched.
* :func:`directory_files` lists a directory for ``append`` (Spark's ``add_files`` with a path
  source): its files and the partition texts of their directories, checked against the table's
  spec; the append then refuses files already in the table.

The listing (:func:`list_directory`) keeps Parquet files (named ``*.parquet``, or any other name
whose bytes start with Parquet's magic ``PAR1``) and skips, naming them in the result, hidden
names and files of other kinds (:mod:`icectl.spec.hive_dirs` says which). Every kept file must
sit under the same sequence of ``key=value`` directories.

The new table's schema is the union of the files' columns (in order of first appearance, path
order; a column whose type differs takes the wider one when one promotes to the other, int to
long, float to double, else the files are refused), every column optional, as Spark reads
Parquet; the files' field ids when every file carries them (columns matched by id), else fresh
ids and the name mapping ``schema.name-mapping.default`` (as Java's migrate writes it) so that
readers find the columns by name. Partition keys the files do not hold become columns at the end, of the type
Spark's partition discovery infers (:func:`icectl.spec.hive_dirs.infer_partition_type`); the
spec is identity on every key, in path order. Each file's footer gives its metrics (the same
reading as ``append``'s, :mod:`icectl.ops.write.data_files`), and its partition value from its
directories is checked against the footer's statistics when the file holds the column: a
mismatch, a file that does not fit the schema, or a bad layout refuses the whole operation
before anything is written.
"""

from __future__ import annotations

import itertools
import os
import posixpath
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator, Mapping, Sequence

from icectl.errors import InvalidInput, NotFound, UnsupportedFeature, ValidationError
from icectl.io.formats.parquet import ParquetField, parquet_schema_fields
from icectl.io.storage.files import FileIO, has_scheme, identity
from icectl.ops.write.append import AppendResult, append_data_files
from icectl.ops.write.data_files import DEFAULT_WORKERS, ScanContext, describe, scan_all
from icectl.spec.hive_dirs import infer_partition_type, partition_parts, skipped_name
from icectl.spec.manifests import DataFile
from icectl.spec.metadata import TableMetadata, new_table_metadata
from icectl.spec.metrics import metrics_config
from icectl.spec.name_mapping import NAME_MAPPING_PROPERTY, mapping_from_schema, name_mapping_to_json, table_name_mapping
from icectl.spec.partitioning import PARTITION_DATA_ID_START, PartitionField, PartitionSpec
from icectl.spec.properties import GC_ENABLED
from icectl.spec.result_json import JsonResult, json_field, pairs
from icectl.spec.schema import Schema
from icectl.spec.sorting import UNSORTED_ORDER
from icectl.spec.transforms import IDENTITY
from icectl.spec.types import IcebergType, ListType, MapType, NestedField, StructType, is_promotion_allowed
from icectl.spec.views import schema_string, spec_string

__all__ = ["Listing", "AdoptResult", "list_directory", "directory_files", "migrate_directory",
           "snapshot_directory", "MIGRATED_PROPERTY", "SNAPSHOT_PROPERTY"]

MIGRATED_PROPERTY = "migrated"
SNAPSHOT_PROPERTY = "snapshot"
_PARQUET_MAGIC = b"PAR1"


# -- listing --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Listing:
    """The Parquet files of a directory: ``files`` (path order) with the ``(key, value)`` parts
    of their directories, the partition ``keys`` (path order) and the ``skipped`` files with why."""

    root: str
    files: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]
    keys: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...]

    def texts(self) -> dict[str, dict[str, str]]:
        """The partition texts of each file, by path."""
        return {path: dict(parts) for path, parts in self.files}


def _root(path: str) -> str:
    p = path.strip()
    if not p:
        raise InvalidInput("the directory is empty text")
    return os.path.abspath(os.path.expanduser(p)) if not has_scheme(p) else p.rstrip("/")


def _is_parquet(io: FileIO, path: str, size: int) -> bool:
    if path.lower().endswith(".parquet"):
        return True
    return size >= 12 and io.read_range(path, 0, 4) == _PARQUET_MAGIC


def list_directory(io: FileIO, directory: str) -> Listing:
    """The Parquet files under ``directory`` and their partition directories (see the module
    docs); NotFound when it is not a directory, InvalidInput for a layout that is not Hive's."""
    root = _root(directory)
    try:
        info = io.info(root)
    except NotFound:
        raise NotFound(f"directory not found: {root}") from None
    if not info.is_dir:
        raise InvalidInput(f"{root} is a file, not a directory of data files")
    base = root.rstrip("/") + "/"
    files, skipped = [], []
    for f in sorted(io.walk(root), key=lambda x: x.path):
        rel = f.path[len(base):] if f.path.startswith(base) else posixpath.basename(f.path)
        *dirs, name = rel.split("/")
        if any(skipped_name(d, True) for d in dirs) or skipped_name(name, False):
            skipped.append((f.path, "hidden"))
            continue
        if not _is_parquet(io, f.path, f.size):
            skipped.append((f.path, "not a Parquet file"))
            continue
        parts = partition_parts(dirs)
        if isinstance(parts, str):
            raise InvalidInput(f"{f.path}: directory {parts!r} is not a partition directory (name=value); "
                               f"a Hive-style table has only name=value directories")
        files.append((f.path, tuple(parts)))
    keys = _keys(files)
    return Listing(root, tuple(files), keys, tuple(skipped))


def _keys(files: Sequence[tuple[str, tuple[tuple[str, str], ...]]]) -> tuple[str, ...]:
    """The partition keys every file's directories name, in order (the same for all)."""
    if not files:
        return ()
    first_path, first = files[0]
    keys = tuple(k for k, _ in first)
    if len(set(keys)) != len(keys):
        raise InvalidInput(f"{first_path}: a partition key is repeated in its directories")
    for path, parts in files[1:]:
        if tuple(k for k, _ in parts) != keys:
            raise InvalidInput(
                f"conflicting partition directories: {first_path} is under "
                f"{'/'.join(keys) or 'no partition directory'}, {path} under "
                f"{'/'.join(k for k, _ in parts) or 'no partition directory'}")
    return keys


# -- the schema and spec of a new table ----------------------------------------------------------


def _iceberg_type(f: ParquetField, path: str, next_id: Callable[[int | None], int]) -> IcebergType:
    if f.kind == "primitive":
        if f.iceberg_type is None:
            raise UnsupportedFeature(f"{path}: column {f.path!r} cannot be an Iceberg column: {f.problem}")
        return f.iceberg_type
    if f.kind == "struct":
        return StructType([_field(c, path, next_id) for c in f.children])
    if f.kind == "list":
        (el,) = f.children
        return ListType(next_id(el.field_id), _iceberg_type(el, path, next_id), False)
    key, value = f.children
    kid, vid = next_id(key.field_id), next_id(value.field_id)
    return MapType(kid, _iceberg_type(key, path, next_id), vid, _iceberg_type(value, path, next_id), False)


def _field(f: ParquetField, path: str, next_id: Callable[[int | None], int]) -> NestedField:
    fid = next_id(f.field_id)
    return NestedField(fid, f.name, _iceberg_type(f, path, next_id), False)


def _has_ids(fields: Sequence[ParquetField]) -> bool:
    def every(fs: Sequence[ParquetField]) -> bool:
        return all(f.file_has_id and f.field_id is not None and every(f.children) for f in fs)
    return bool(fields) and every(fields)


def _file_schema(io: FileIO, path: str, counter: Iterator[int]) -> tuple[list[NestedField], bool]:
    """The columns of a Parquet file, all optional; whether the ids are the file's (else they
    come from ``counter``, shared by the files, so that they never clash)."""
    fields = parquet_schema_fields(io, path, None)
    keep = _has_ids(fields)

    def next_id(file_id: int | None) -> int:
        return file_id if keep and file_id is not None else next(counter)

    return [_field(f, path, next_id) for f in fields], keep


def _union(schemas: Sequence[tuple[str, list[NestedField], bool]]) -> tuple[list[NestedField], bool]:
    """The columns of every file, in order of first appearance, matched by field id when every
    file has ids, else by name; a column whose type differs between files takes the wider type
    when one promotes to the other, else the files are refused."""
    keep = all(k for _, _, k in schemas)
    merged: dict[Any, tuple[str, NestedField]] = {}
    for path, columns, _ in schemas:
        for c in columns:
            key = c.field_id if keep else c.name
            seen = merged.get(key)
            if seen is None:
                merged[key] = (path, c)
            elif str(seen[1].type) != str(c.type) or seen[1].name != c.name:
                if seen[1].name == c.name and is_promotion_allowed(seen[1].type, c.type):
                    merged[key] = (seen[0], replace(seen[1], type=c.type))
                elif not (seen[1].name == c.name and is_promotion_allowed(c.type, seen[1].type)):
                    raise ValidationError(
                        f"{path}: column {c.name!r} ({c.type}) does not fit column {seen[1].name!r} "
                        f"({seen[1].type}) of {seen[0]}; the files need one schema")
    columns = [c for _, c in merged.values()]
    names = [c.name for c in columns]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise ValidationError(f"the files give column {dup!r} different field ids")
    return columns, keep


def _table_schema(io: FileIO, listing: Listing, max_workers: int | None) -> tuple[Schema, bool]:
    """The new table's schema (partition keys the files lack appended) and whether its ids are
    the files' own."""
    counter = itertools.count(1)
    paths = [p for p, _ in listing.files]
    with ThreadPoolExecutor(max_workers=max(1, min(max_workers or DEFAULT_WORKERS, len(paths))),
                            thread_name_prefix="icectl-schema") as pool:
        read = list(pool.map(lambda p: (p, *_file_schema(io, p, counter)), paths))
    columns, keep = _union(read)
    names = {c.name for c in columns}
    next_id = Schema(tuple(columns)).highest_field_id() + 1
    values: dict[str, list[str]] = {k: [] for k in listing.keys}
    for _, parts in listing.files:
        for k, v in parts:
            values[k].append(v)
    for k in listing.keys:
        if k in names:
            continue
        columns.append(NestedField(next_id, k, infer_partition_type(values[k]), False))
        next_id += 1
    schema = Schema(tuple(columns))
    for k in listing.keys:
        f = schema.find_field(k, True)
        if not f.type.is_primitive:
            raise InvalidInput(f"partition directory key {k!r} names a column of type {f.type}, "
                               "which cannot be an identity partition")
    return schema, keep


def _identity_spec(schema: Schema, keys: Sequence[str]) -> PartitionSpec:
    return PartitionSpec(0, tuple(
        PartitionField(schema.find_field(k, True).field_id, PARTITION_DATA_ID_START + i, k, IDENTITY)
        for i, k in enumerate(keys)))


def _new_metadata(location: str, schema: Schema, keys: Sequence[str], keep_ids: bool,
                  properties: Mapping[str, str], format_version: int) -> TableMetadata:
    """Metadata v1 of the adopted table: fresh ids (and the name mapping), or the files' ids."""
    props = dict(properties)
    md = new_table_metadata(schema, _identity_spec(schema, keys), UNSORTED_ORDER, location, props,
                            format_version)
    if keep_ids:
        own = schema.with_schema_id(0)
        md = replace(md, schemas=(own,), last_column_id=own.highest_field_id(),
                     specs=(_identity_spec(own, keys),))
    elif NAME_MAPPING_PROPERTY not in md.properties:
        mapping = name_mapping_to_json(mapping_from_schema(md.schema), pretty=False)
        md = replace(md, properties={**md.properties, NAME_MAPPING_PROPERTY: mapping})
    return md


# -- reading the files ------------------------------------------------------------------------------


def _describe_all(io: FileIO, md: TableMetadata, paths: Sequence[str], texts: Mapping[str, Mapping[str, str]],
                  workers: int | None, progress: Any) -> list[tuple[DataFile, str]]:
    """Each file's metrics and partition (its directories' values checked against its
    statistics), in the terms of ``md``."""
    ctx = ScanContext(table_name_mapping(dict(md.properties), md.schema),
                      metrics_config(md.properties, md.schema, md.sort_order),
                      frozenset(f.source_id for f in md.spec.fields))
    scanned = scan_all(io, list(paths), "parquet", md.schema, ctx, workers, progress)
    return [describe(sc, md.spec, md.schema, {}, path_values=texts[sc.path]) for sc in scanned]


def directory_files(io: FileIO, directory: str, md: TableMetadata) -> tuple[Listing, dict[str, dict[str, str]]]:
    """The files of ``directory`` to append to a table of metadata ``md`` and their partition
    texts by path: its keys must be the names of the default spec's partition fields (a
    partitioned directory into an unpartitioned table is refused, as Java's add_files does)."""
    listing = list_directory(io, directory)
    names = [f.name for f in md.spec.fields]
    if listing.keys and not names:
        raise ValidationError(f"{listing.root} holds partition directories ({'/'.join(listing.keys)}) "
                              "but the table is unpartitioned")
    unknown = [k for k in listing.keys if k not in names]
    if unknown:
        raise ValidationError(f"{listing.root}: partition directory key(s) {', '.join(unknown)} are not "
                              f"partition fields of the table (partition fields: {', '.join(names)})")
    return listing, listing.texts()


# -- the operations ---------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class AdoptResult(JsonResult):
    """A table made from a directory of Parquet files."""

    mode: str  # migrate or snapshot
    source: str
    schema: str
    partition_spec: str
    field_ids: str  # "files" (the files' own) or "name-mapping"
    properties: dict[str, str]
    ignored_files: tuple[tuple[str, str], ...] = json_field(value=pairs("path", "reason"))
    append: AppendResult = json_field(flatten=True)


def _adopt(mode: str, directory: str, location: str | None, *, catalog: Any, identifier: Any,
           properties: Mapping[str, str] | None, format_version: int, summary_properties: Mapping[str, str] | None,
           max_workers: int | None, progress: Any) -> AdoptResult:
    from icectl.table.nesting import refuse_nesting
    from icectl.table.table import Table

    io = FileIO()
    listing = list_directory(io, directory)
    if not listing.files:
        raise InvalidInput(f"no Parquet data files under {listing.root}")
    props = {k: v for k, v in (properties or {}).items()}
    props |= ({MIGRATED_PROPERTY: "true"} if mode == "migrate" else {SNAPSHOT_PROPERTY: "true", GC_ENABLED: "false"})
    schema, keep = _table_schema(io, listing, max_workers)
    state: dict[str, Any] = {}

    def build(where: str) -> TableMetadata:
        where = _root(where)
        if mode == "snapshot":
            _refuse_overlap(listing.root, where)
        refuse_nesting(io, where)  # (a table at DIR already is refused too)
        md = _new_metadata(where, schema, listing.keys, keep, props, format_version)
        state["files"] = _describe_all(io, md, [p for p, _ in listing.files], listing.texts(), max_workers, progress)
        return md

    if catalog is not None:  # (the catalog writes nothing before build returns)
        table = catalog.create(identifier, build)
    else:
        where = _root(location or listing.root)
        table = Table.create(where, build(where), io)
    appended = append_data_files(table, state["files"], summary_properties=summary_properties)
    return AdoptResult(mode=mode, source=listing.root,
                       schema=schema_string(table.metadata.schema),
                       partition_spec=spec_string(table.metadata.spec, table.metadata.schema),
                       field_ids="files" if keep else "name-mapping",
                       properties={k: v for k, v in table.metadata.properties.items() if k in props},
                       ignored_files=listing.skipped, append=appended)


def _refuse_overlap(source: str, location: str) -> None:
    src, dst = identity(source).rstrip("/"), identity(location).rstrip("/")
    if src == dst:
        raise ValidationError("the snapshot table's location cannot be the source directory "
                              "(migrate adopts a directory in place)")
    if dst.startswith(src + "/") or src.startswith(dst + "/"):
        raise ValidationError(f"the snapshot table's location {location} and the source directory {source} "
                              "must not be inside one another: the source is left untouched")


def migrate_directory(directory: str, *, properties: Mapping[str, str] | None = None, format_version: int = 2,
                      summary_properties: Mapping[str, str] | None = None, max_workers: int | None = None,
                      progress: Callable[[int, int], None] | None = None) -> AdoptResult:
    """Make ``directory`` an Iceberg table in place (see the module docs)."""
    return _adopt("migrate", directory, None, catalog=None, identifier=None, properties=properties,
                  format_version=format_version, summary_properties=summary_properties,
                  max_workers=max_workers, progress=progress)


def snapshot_directory(directory: str, location: str | None, *, catalog: Any = None, identifier: Any = None,
                       properties: Mapping[str, str] | None = None, format_version: int = 2,
                       summary_properties: Mapping[str, str] | None = None, max_workers: int | None = None,
                       progress: Callable[[int, int], None] | None = None) -> AdoptResult:
    """Create a table at ``location`` (or ``identifier`` of ``catalog``) referencing the files of
    ``directory``, with ``gc.enabled=false`` (see the module docs)."""
    if catalog is None and not location:
        raise InvalidInput("the snapshot table needs a location", argument="location")
    return _adopt("snapshot", directory, location, catalog=catalog, identifier=identifier,
                  properties=properties, format_version=format_version,
                  summary_properties=summary_properties, max_workers=max_workers, progress=progress)
