"""Safe ingestion, the parts of an append that go beyond registering files in place: comparing
files by content, placing copies under the table's data location, rewriting files whose rows
span partitions. :func:`icectl.ops.write.append.append_files` runs them; nothing here commits.

* Content: a file's SHA-256 (:func:`content_digest`); an append that compares by content records
  the digests (first 32 hex digits) of the files it took in its snapshot summary
  (:data:`CONTENT_DIGESTS`), and a later one skips a file whose digest a retained ancestor
  recorded or whose bytes equal a live file's of the same size.
* Placement: a copy (or, for a move on one local disk, a hard link) in the partition's directory
  under ``write.data.path`` (else ``<location>/data``), named ``<12 hex>-<source name>``; never
  replacing a file; flushed to disk before the commit names it. A move removes its sources only
  after the commit.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Sequence

from icectl import command_files
from icectl.errors import IcectlError, InvalidInput
from icectl.io.storage.files import join
from icectl.spec.manifests import DataFile
from icectl.spec.metadata import TableMetadata
from icectl.spec.snapshots import Snapshot, ancestors_of
from icectl.table.table import Table
from icectl.table.locations import data_location

if TYPE_CHECKING:
    from icectl.io.storage.files import FileIO

__all__ = ["PLACEMENTS", "SKIP_MODES", "ON_ERROR", "CONTENT_DIGESTS", "Rewriter", "content_digest",
           "recorded_digests", "same_content", "place_files", "remove_sources", "rewrite_into_partitions",
           "rewrite_all", "skip_mode", "refuse_moving_other_tables"]

PLACEMENTS = ("in-place", "copy", "move")
SKIP_MODES = ("path", "content")
ON_ERROR = ("fail", "skip")
# rewrite(path, written) -> the data files it wrote (every path written is appended to
# ``written`` first, so that a failure can remove them)
Rewriter = Callable[[str, list], Sequence[tuple[DataFile, str]]]



def skip_mode(skip_existing: bool | str) -> str | None:
    if skip_existing is False or skip_existing is None:
        return None
    if skip_existing is True:
        return "path"
    mode = str(skip_existing).strip().lower()
    if mode not in SKIP_MODES:
        raise InvalidInput(f"unknown way to compare files {skip_existing!r} (expected path or content)",
                           argument="skip_existing")
    return mode


# -- content digests ------------------------------------------------------------------------------

_CHUNK = 8 << 20


def content_digest(io: FileIO, path: str) -> str:
    """SHA-256 of a file's bytes (hex), read in chunks."""
    h = hashlib.sha256()
    with io.open(path, "rb") as f:
        while True:
            chunk = f.read(_CHUNK)
            if not chunk:
                return h.hexdigest()
            h.update(chunk)


CONTENT_DIGESTS = "icectl.content-digests"
"""Snapshot summary property: the content digests (first 32 hex digits of the SHA-256) of the
files an append compared by content added, comma-separated, so that a later run recognises a
source it already took even when the table's copy is gone (rewritten, or its rows deleted)."""
_DIGEST_CHARS = 32


def recorded_digests(md: TableMetadata, head: Snapshot | None) -> set[str]:
    out: set[str] = set()
    if head is None:
        return out
    for snap in ancestors_of(head.snapshot_id, md.snapshot_by_id):
        text = (snap.summary or {}).get(CONTENT_DIGESTS)
        if text:
            out.update(d for d in text.split(",") if d)
    return out


def same_content(io: FileIO, live: Sequence[tuple[str, int]], recorded: set[str],
                  paths: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """The given paths whose bytes equal a live file's, a file an earlier append recorded
    (``recorded`` digests of retained snapshots) or an earlier given file's; and the digest of
    every other given file (to record). Live files are hashed only when their size equals a
    given file's. A file that cannot be read is not a duplicate (the append reports it)."""
    by_size: dict[int, list[str]] = {}
    for path, size in live:
        by_size.setdefault(size, []).append(path)
    table_digests: dict[int, set[str]] = {}
    seen: set[str] = set()
    skipped: list[str] = []
    digests: dict[str, str] = {}
    for p in paths:
        try:
            size = io.info(p).size
            digest = content_digest(io, p)[:_DIGEST_CHARS]
        except IcectlError:
            continue
        if size in by_size and size not in table_digests:
            found = set()
            for q in by_size[size]:
                try:
                    found.add(content_digest(io, q)[:_DIGEST_CHARS])
                except IcectlError:
                    continue
            table_digests[size] = found
        if digest in recorded or digest in seen or digest in table_digests.get(size, ()):
            skipped.append(p)
        else:
            digests[p] = digest
        seen.add(digest)
    return skipped, digests


# -- placing files under the table -----------------------------------------------------------------


def place_files(table: Table, files: Sequence[tuple[DataFile, str]], move: bool,
                 written: list[str]) -> tuple[list[tuple[DataFile, str]], list[tuple[str, str]]]:
    """Copy (or hard-link, for a move on one local disk) each file into its partition's directory
    under the table's data location; the copies are registered instead of the sources."""
    base_dir = data_location(table.location, table.metadata.properties)
    out: list[tuple[DataFile, str]] = []
    placed: list[tuple[str, str]] = []
    for df, ppath in files:
        directory = join(base_dir, ppath) if ppath else base_dir
        name = df.file_path.replace("\\", "/").rsplit("/", 1)[-1]
        target = join(directory, f"{uuid.uuid4().hex[:12]}-{name}")
        written.append(target)
        _copy(table.io, df.file_path, target, link=move)
        out.append((replace(df, file_path=target), ppath))
        placed.append((df.file_path, target))
    return out, placed


def _copy(io: FileIO, src: str, dst: str, link: bool) -> None:
    """``dst`` gets ``src``'s bytes; never replaces an existing file. Local copies are flushed to
    disk before the commit names them."""
    io.copy(src, dst, link=link)


def refuse_moving_other_tables(table: Table, paths: Sequence[str]) -> None:
    """A move deletes its sources: one inside another table's directory (``ops/maintain/file_removal.py``'s
    rule on other tables' files) is that table's file, so the move is refused before anything
    is written."""
    from icectl.errors import ValidationError
    from icectl.ops.maintain.file_removal import TableBoundary

    _, others = TableBoundary(table.location).other_tables(table.io).split(paths)
    if others:
        path, owner = others[0]
        raise ValidationError(f"cannot move {path}: it is in the directory of the table at {owner}, and "
                              "removing it would break that table (a copy leaves it there)")


def remove_sources(io: FileIO, placed: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """After a move committed: delete each source; what could not be deleted is reported."""
    failed = []
    for src, _ in placed:
        try:
            io.delete(src)
        except IcectlError as e:
            failed.append((src, str(e)))
    return failed


def rewrite_into_partitions(table: Table) -> Rewriter:
    def rewrite(path: str, written: list) -> Sequence[tuple[DataFile, str]]:
        from icectl.ops.compute import conform_to_schema
        from icectl.ops.write.data_sink import write_data_files  # (only for files spanning partitions)
        from icectl.ops.write.row_sources import read_rows

        schema = table.metadata.schema
        raw, _ = read_rows(table.io, path, None, schema)
        data = conform_to_schema(raw, schema).combine_chunks()
        return write_data_files(table, data, written)

    return rewrite


def rewrite_all(rewrite: Rewriter | None, paths: Sequence[str], written: list[str],
                 errors: list[tuple[str, str]] | None, io: FileIO) -> tuple[list[str], list[tuple[DataFile, str]]]:
    """Rewrite each partition-spanning file; with ``errors`` a file that fails is set aside."""
    done: list[str] = []
    files: list[tuple[DataFile, str]] = []
    if rewrite is None:
        return done, files
    for path in paths:
        before = len(written)
        try:
            files.extend(rewrite(path, written))
            done.append(path)
        except IcectlError as e:
            if errors is None:
                raise
            command_files.discard(io, written[before:])
            del written[before:]
            errors.append((path, f"cannot rewrite it into partitioned files: {e}"))
    return done, files
