"""``relocate_table(table, target, ...)``: the table at another location (Spark's
``rewrite_table_path`` procedure, then the copies it lists).

Every path the table's metadata records starts with the source prefix (default: the table's
location); relocation rewrites the metadata files with the target prefix in its place (see
:mod:`icectl.ops.relocate.rewrite` for what is rewritten) and either

* copies: the rewritten files are written at their new paths, the data, equality delete and
  statistics files copied there as they are, and the version files last, oldest first, each
  created only if absent, then ``version-hint.text`` (for ``v<N>.metadata.json`` names): a
  reader of the target sees no version before every file it needs is there; or
* with a copy plan: the rewritten files are written under a staging location (default: a new
  ``copy-table-staging-<uuid>/`` beside the plan) with the same relative paths, nothing is
  written at the target, and the plan lists every copy to make, one ``source,target`` line each
  (Spark's ``file_list``).

Incrementally (``start_version``: a version already relocated) only what is new since is
rewritten and copied; copying then needs the target to hold that very version. The source table
is never written to. A target that holds a table (or lies inside one, or holds one) is refused
before anything is written; a failure later removes every file this run wrote.
"""

from __future__ import annotations

import csv
import io as _io
import posixpath
import re
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from icectl import command_files
from icectl.errors import AlreadyExists, CommitStateUnknown, InvalidInput, NotFound, StorageError, ValidationError
from icectl.io.storage.files import DestinationExists, FileIO, has_scheme, join
from icectl.ops.relocate.paths import PrefixMove, relative_to
from icectl.ops.relocate.rewrite import RewritePlan, Version, is_gzip_name, rewrite_table_files
from icectl.spec.metadata import TableMetadata
from icectl.spec.metadata_json import metadata_from_bytes
from icectl.spec.result_json import JsonResult, json_field
from icectl.table import store
from icectl.table.catalog_files import find_catalog_version
from icectl.table.nesting import refuse_nesting
from icectl.table.versions import VERSION_NAME

if TYPE_CHECKING:
    from icectl.table.table import Table

__all__ = ["RelocateResult", "relocate_table"]

_NUMBERED = re.compile(r"^v?0*(\d+)[.-]")


@dataclass(frozen=True, kw_only=True)
class RelocateResult(JsonResult):
    """What a relocation wrote and copied (or, with a copy plan, lists to copy)."""

    source_location: str
    target_location: str
    source_prefix: str
    target_prefix: str
    start_version: str | None
    latest_version: str
    copied: bool
    staging_location: str | None
    copy_plan: str | None = json_field(key="file-list-location")
    rewritten_metadata_files: int
    rewritten_manifest_lists: int
    rewritten_manifests: int
    rewritten_delete_files: int
    copy_plan_entries: int = json_field(key="files-to-copy")
    copied_files: int
    copied_bytes: int
    already_there: int = json_field(key="skipped-files")
    metadata_location: str | None = json_field(default=None, key="metadata-file")


def _absolute(path: str) -> str:
    import os

    path = path.rstrip("/") or path
    return path if has_scheme(path) else os.path.abspath(path)


def _version_names(table: Table) -> list[str]:
    return [table.metadata_location] + [e.metadata_file for e in reversed(table.metadata.metadata_log)]


def _find(candidates: list[str], name: str, argument: str, table: Table) -> str:
    n = name.strip()
    for c in candidates:
        base = posixpath.basename(c)
        if n in (c, base):
            return c
        m = _NUMBERED.match(base)
        if n.isdigit() and m is not None and int(m.group(1)) == int(n):
            return c
    raise NotFound(f"no version {name!r} in the metadata log of {table.location} (give a file name "
                   "such as v3.metadata.json, or its number)", argument=argument)


def _read_version(io: FileIO, path: str) -> Version:
    if not io.exists(path):
        raise NotFound(f"metadata file {path} (in the metadata log) does not exist")
    data = io.read(path)
    return Version(path, metadata_from_bytes(data, path), data[:2] == b"\x1f\x8b" or is_gzip_name(path))


def _versions(table: Table, start_version: str | None, end_version: str | None
              ) -> tuple[list[Version], Version | None]:
    """The versions to rewrite (oldest first, the end version last) and the start version."""
    io = table.io
    end_path = table.metadata_location if end_version is None else \
        _find(_version_names(table), end_version, "end_version", table)
    end = _read_version(io, end_path)
    older = [e.metadata_file for e in reversed(end.metadata.metadata_log)]  # newest first
    start_path = None
    if start_version is not None:
        start_path = _find(_version_names(table), start_version, "start_version", table)
        if start_path not in older:
            raise InvalidInput(f"version {start_version!r} is not older than {posixpath.basename(end_path)}",
                               argument="start_version")
    paths = []
    for p in older:
        if p == start_path:
            break
        paths.append(p)
    versions = [_read_version(io, p) for p in reversed(paths)] + [end]
    return versions, None if start_path is None else _read_version(io, start_path)


def _check_target(io: FileIO, target: str, start: Version | None, source: TableMetadata,
                  move: PrefixMove) -> None:
    """Refuse a target that holds a table (copying incrementally: one that is not the relocated
    start version)."""
    if start is None:
        refuse_nesting(io, target)
        return
    found = store.find_current_version(io, target) or find_catalog_version(io, target)
    if found is None:
        raise NotFound(f"no table at {target} to add the versions after {posixpath.basename(start.path)} to "
                       "(copy the table without a start version first)")
    md = store.read_metadata(io, found[1])
    if posixpath.basename(found[1]) != posixpath.basename(start.path) or md.table_uuid != source.table_uuid \
            or md.location.rstrip("/") != move(start.metadata.location).rstrip("/"):
        raise ValidationError(f"the table at {target} is not {posixpath.basename(start.path)} of this table "
                              f"relocated (its current version is {posixpath.basename(found[1])})")


class _Sink:
    """Where the rewritten files go (the target, or the staging location), and the plan."""

    def __init__(self, io: FileIO, move: PrefixMove, staging: str | None):
        self.io = io
        self.move = move
        self.staging = staging
        self.written: list[str] = []
        self.pairs: list[tuple[str, str]] = []

    def put(self, source_path: str, data: bytes) -> None:
        dest = self.move(source_path) if self.staging is None else self.move.under(self.staging, source_path)
        command_files.register(self.io, dest)
        self.io.write_exclusive(dest, data)
        self.written.append(dest)
        self.pairs.append((dest, self.move(source_path)))

    def discard(self) -> None:
        command_files.discard(self.io, self.written)


def _copy_files(io: FileIO, sink: _Sink, copies: dict[str, int | None], incremental: bool) -> tuple[int, int, int]:
    """Copy the files as they are (in threads: the work waits on storage); (copied, bytes, skipped)."""
    from concurrent.futures import ThreadPoolExecutor

    def one(src: str) -> int | None:
        dst = sink.move(src)
        if incremental and io.exists(dst) and io.info(dst).size == io.info(src).size:
            return None  # (a statistics file an earlier version named, already copied)
        command_files.register(io, dst)
        io.copy(src, dst)
        with lock:
            sink.written.append(dst)
        return io.info(dst).size if copies[src] is None else copies[src]

    import threading

    lock = threading.Lock()
    with ThreadPoolExecutor(max(1, min(command_files.io_threads(), len(copies)))) as pool:
        sizes = list(pool.map(one, sorted(copies)))
    done = [n for n in sizes if n is not None]
    return len(done), sum(done), len(sizes) - len(done)


def _create_version(io: FileIO, path: str, data: bytes) -> None:
    """Create the version file ``path`` whole or not at all, never over a file: on a disk a
    flushed temporary file renamed without replacing, on object stores a conditional create. A
    rename whose answer is lost is settled by reading the file back."""
    if not io.storage(path).atomic_rename:
        io.create_if_absent(path, data)
        return
    tmp = command_files.register(io, join(posixpath.dirname(path), f".{uuid.uuid4()}-relocate.tmp"))
    io.write_exclusive(tmp, data, durable=True)
    try:
        io.rename_no_replace(tmp, path, durable=True)
    except DestinationExists:
        raise AlreadyExists(f"another writer created {path} meanwhile") from None
    except CommitStateUnknown:
        raise
    except StorageError as e:
        try:
            landed = io.exists(path) and io.read(path) == data
        except StorageError:
            raise CommitStateUnknown(f"cannot tell whether {path} was created: {e}") from e
        if not landed:
            raise


def _commit_versions(io: FileIO, sink: _Sink, plan: RewritePlan, target: str) -> str:
    """Create the version files at the target, oldest first; then the version hint."""
    last = ""
    with command_files.critical():
        for path in plan.versions:
            last = sink.move(path)
            command_files.register(io, last)
            _create_version(io, last, plan.rewritten[path])
            sink.written.append(last)
    m = VERSION_NAME.match(posixpath.basename(last))
    if m is not None and posixpath.dirname(last) == store.metadata_dir(target):
        store.write_version_hint(io, target, int(m.group(1)))
    command_files.settle(sink.written)
    return last


def _write_plan(io: FileIO, path: str, pairs: list[tuple[str, str]]) -> None:
    buf = _io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    for row in sorted(pairs):
        w.writerow(row)
    io.write(path, buf.getvalue().encode("utf-8"))


def relocate_table(table: Table, target: str, *, source_prefix: str | None = None,
                   start_version: str | None = None, end_version: str | None = None,
                   copy_plan: str | None = None, staging: str | None = None) -> RelocateResult:
    """Relocate ``table`` to ``target`` (see the module docs); the source is never written to."""
    io = table.io
    target_prefix = _absolute(target)
    source = (source_prefix or table.metadata.location).rstrip("/") or "/"
    move = PrefixMove(source, target_prefix)
    target = move(table.metadata.location, "table location")
    if staging is not None and copy_plan is None:
        raise InvalidInput("a staging location is only used with a copy plan (without one the "
                           "rewritten files are written at the target)", argument="staging")
    for here in {table.location, table.metadata.location}:
        if relative_to(target, here) is not None or relative_to(here, target) is not None:
            raise ValidationError(f"the new location {target} is the table's location {here}, inside it or "
                                  "above it")
    versions, start = _versions(table, start_version, end_version)
    if copy_plan is None:
        _check_target(io, target, start, table.metadata, move)
    else:
        copy_plan = _absolute(copy_plan)
        staging = _absolute(staging) if staging is not None else \
            join(posixpath.dirname(copy_plan), f"copy-table-staging-{uuid.uuid4()}")
        if relative_to(staging, table.location) is not None:
            raise ValidationError(f"the staging location {staging} is inside the table's location", argument="staging")
        if any(True for _ in io.walk(staging)):
            raise AlreadyExists(f"the staging location {staging} is not empty", argument="staging")
        if start is None:
            try:
                refuse_nesting(io, target)
            except StorageError:
                pass  # (a new location this process cannot list: the copies are made elsewhere)
    sink = _Sink(io, move, staging)
    copied = nbytes = skipped = 0
    metadata_file = None
    try:
        plan = rewrite_table_files(io, move, versions, None if start is None else start.metadata, sink.put)
        if copy_plan is None:
            copied, nbytes, skipped = _copy_files(io, sink, plan.copies, start is not None)
            metadata_file = _commit_versions(io, sink, plan, target)
        else:
            for path in plan.versions:
                sink.put(path, plan.rewritten[path])
            sink.pairs.extend((src, move(src)) for src in plan.copies)
            _write_plan(io, copy_plan, sink.pairs)
    except BaseException:
        sink.discard()
        raise
    return RelocateResult(
        source_location=table.location, target_location=target, source_prefix=source, target_prefix=target_prefix,
        start_version=None if start is None else posixpath.basename(start.path),
        latest_version=posixpath.basename(versions[-1].path), copied=copy_plan is None,
        staging_location=staging, copy_plan=copy_plan, rewritten_metadata_files=len(plan.versions),
        rewritten_manifest_lists=plan.manifest_lists, rewritten_manifests=plan.manifests,
        rewritten_delete_files=plan.delete_files,
        copy_plan_entries=len(sink.pairs) + (len(plan.versions) + len(plan.copies) if copy_plan is None else 0),
        copied_files=copied, copied_bytes=nbytes,
        already_there=skipped, metadata_location=metadata_file)
