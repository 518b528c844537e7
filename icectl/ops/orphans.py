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
"""

from __future__ import annotations

import posixpath
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Iterator
from urllib.parse import urlsplit

from icectl.errors import CorruptMetadata, IcectlError, NotFound
from icectl.io import avro
from icectl.io.files import FileIO, FileInfo, is_local, local_path
from icectl.spec.manifests import DELETED, ManifestFile
from icectl.spec.metadata import TableMetadata
from icectl.table.store import version_hint_path
from icectl.table.table import Table

__all__ = ["OrphanResult", "find_orphan_files", "delete_orphan_files", "normalize_path",
           "DEFAULT_OLDER_THAN_MS"]

DEFAULT_OLDER_THAN_MS = 3 * 24 * 3600 * 1000
_EQUAL_SCHEMES = {"s3a": "s3", "s3n": "s3"}

Progress = Callable[[str, int, int], None]


def normalize_path(path: str) -> str:
    """The identity of a file for comparisons: the OS path for local files (``file:`` URLs and
    plain paths), else ``scheme://authority/path`` with equal schemes merged."""
    if is_local(path):
        p = local_path(path)
        return posixpath.normpath(p) if p else p
    parts = urlsplit(path)
    scheme = _EQUAL_SCHEMES.get(parts.scheme.lower(), parts.scheme.lower())
    return f"{scheme}://{parts.netloc}{posixpath.normpath(parts.path or '/')}"


def _inside(path: str, root: str) -> bool:
    p, r = normalize_path(path), normalize_path(root)
    return p == r or p.startswith(r.rstrip("/") + "/")


@dataclass(frozen=True)
class OrphanResult:
    location: str
    older_than_ms: int
    orphan_files: tuple[str, ...]
    deleted: bool  # True when deletion was asked for
    failed: tuple[tuple[str, str], ...]
    listed_files: int
    referenced_files: int
    listed_dirs: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "location": self.location,
            "older-than-ms": self.older_than_ms,
            "delete": self.deleted,
            "orphan-files-count": len(self.orphan_files),
            "orphan-files": list(self.orphan_files),
            "deleted-files-count": len(self.orphan_files) - len(self.failed) if self.deleted else 0,
            "failed-deletes": [{"path": p, "error": e} for p, e in self.failed],
            "listed-files-count": self.listed_files,
            "referenced-files-count": self.referenced_files,
            "listed-dirs": list(self.listed_dirs),
        }


def _hidden_filter(md: TableMetadata) -> Callable[[str, bool], bool]:
    partition_prefixes = tuple(
        f"{f.name}=" for spec in md.specs for f in spec.fields if f.name.startswith(("_", ".")))

    def hidden(name: str, is_dir: bool) -> bool:
        if not name.startswith(("_", ".")):
            return False
        return not (partition_prefixes and name.startswith(partition_prefixes))

    return hidden


def _walk(io: FileIO, root: str, hidden: Callable[[str, bool], bool]) -> Iterator[FileInfo]:
    for info in io.list_dir(root):
        if hidden(info.name, info.is_dir):
            continue
        if info.is_dir:
            yield from _walk(io, info.path, hidden)
        else:
            yield info


def referenced_files(io: FileIO, md: TableMetadata, metadata_location: str, location: str,
                     workers: int = 8, progress: Progress | None = None) -> set[str]:
    """Normalised paths of every file the table's metadata references (see module docs)."""
    refs: set[str] = set()
    refs.add(normalize_path(metadata_location))
    refs.update(normalize_path(e.metadata_file) for e in md.metadata_log)
    refs.add(normalize_path(version_hint_path(location)))
    for entry in tuple(md.statistics) + tuple(md.partition_statistics):
        p = entry.get("statistics-path")
        if isinstance(p, str):
            refs.add(normalize_path(p))

    lists = list(dict.fromkeys(s.manifest_list for s in md.snapshots if s.manifest_list))
    manifests: dict[str, ManifestFile] = {}

    # A file the metadata names but that cannot be read makes the reachable set unknowable:
    # stop rather than take the files only it would name for orphans.
    def load_list(path: str) -> list[ManifestFile]:
        try:
            return avro.load_manifest_list(io, path, md.format_version)
        except NotFound:
            raise CorruptMetadata(f"manifest list {path} is missing; not looking for orphans "
                                  "while the table's metadata is incomplete") from None

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for path, ms in zip(lists, pool.map(load_list, lists)):
            refs.add(normalize_path(path))
            for m in ms:
                manifests.setdefault(m.manifest_path, m)
        for s in md.snapshots:
            for p in s.manifests or ():
                manifests.setdefault(p, ManifestFile(manifest_path=p, manifest_length=0, partition_spec_id=0))

        def load_manifest(m: ManifestFile) -> list[str]:
            try:
                entries = avro.read_manifest(io.read(m.manifest_path), include_stats=False)
            except NotFound:
                raise CorruptMetadata(f"manifest {m.manifest_path} is missing; not looking for "
                                      "orphans while the table's metadata is incomplete") from None
            return [e.data_file.file_path for e in entries if e.status != DELETED]

        total = len(manifests)
        for i, (path, files) in enumerate(zip(manifests, pool.map(load_manifest, manifests.values())), 1):
            refs.add(normalize_path(path))
            refs.update(normalize_path(f) for f in files)
            if progress is not None:
                progress("reading manifests", i, total)
    return refs


def find_orphan_files(table: Table, *, older_than_ms: int, workers: int = 8,
                      progress: Progress | None = None) -> OrphanResult:
    """List the orphan files of ``table`` (nothing is deleted)."""
    return _run(table, older_than_ms, False, workers, progress)


def delete_orphan_files(table: Table, *, older_than_ms: int, workers: int = 8,
                        progress: Progress | None = None) -> OrphanResult:
    """Delete the orphan files of ``table``; failures are reported, not raised."""
    return _run(table, older_than_ms, True, workers, progress)


def _run(table: Table, older_than_ms: int, delete: bool, workers: int,
         progress: Progress | None) -> OrphanResult:
    io = table.io
    md = table.metadata
    location = table.location
    hidden = _hidden_filter(md)
    roots = [location]
    listed: list[FileInfo] = []
    for root in roots:
        listed.extend(_walk(io, root, hidden))
    candidates = [f for f in listed if f.mtime_ms < older_than_ms and _inside(f.path, location)]
    refs = referenced_files(io, md, table.metadata_location, location, workers, progress) if candidates else set()
    orphans = sorted(f.path for f in candidates if normalize_path(f.path) not in refs)

    failed: list[tuple[str, str]] = []
    if delete and orphans:
        from icectl.ops.expire import delete_file

        def one(path: str) -> tuple[str, str | None]:
            try:
                delete_file(io, path)
                return path, None
            except IcectlError as e:
                return path, str(e)

        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            for i, (path, error) in enumerate(pool.map(one, orphans), 1):
                if error is not None:
                    failed.append((path, error))
                if progress is not None:
                    progress("deleting files", i, len(orphans))
    return OrphanResult(location, older_than_ms, tuple(orphans), delete, tuple(failed), len(listed),
                        len(refs), tuple(roots))
