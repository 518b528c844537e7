"""The rewriting half of relocation: every metadata file of the versions in range, with its paths
moved, handed to a sink, and the files to copy as they are.

What is rewritten, and what is copied (as Java's RewriteTablePath decides it):

* every metadata version from the end version back to (not including) the start version:
  ``location``, the ``metadata-log``, each snapshot's ``manifest-list``, the statistics and
  partition statistics paths and the location properties (``write.data.path``,
  ``write.metadata.path``, ``write.object-storage.path``, ``write.folder-storage.path``) moved;
* the manifest list of every snapshot of the end version that the start version does not have;
* the manifests those lists name (incrementally: only those added by snapshots the start version
  does not have; the others are read too, for the length the lists record);
* the position delete files live in those delete manifests (``file_path`` column, or a deletion
  vector's ``referenced-data-file``);
* copied as they are: the data and equality delete files live in the rewritten manifests
  (incrementally: only those added by a new snapshot) and the statistics files the versions name.
"""

from __future__ import annotations

import dataclasses
import posixpath
from dataclasses import dataclass, field
from typing import Callable
from icectl.errors import UnsupportedFeature
from icectl.io.formats.relocate_deletes import relocated_deletion_vectors, relocated_position_deletes
from icectl.io.manifest.relocate import (
    DeleteRewrite,
    ManifestRef,
    RawAvro,
    content_refs,
    manifest_refs,
    read_raw,
    relocated_manifest,
    relocated_manifest_list,
)
from icectl.io.storage.files import FileIO
from icectl.ops.relocate.paths import PrefixMove
from icectl.spec.metadata import TableMetadata
from icectl.spec.metadata_json import metadata_to_bytes
from icectl.spec.reserved import DELETED, MANIFEST_DELETES, POSITION_DELETES

__all__ = ["Version", "RewritePlan", "LOCATION_PROPERTIES", "moved_metadata", "rewrite_table_files"]

LOCATION_PROPERTIES = ("write.data.path", "write.metadata.path", "write.object-storage.path",
                       "write.folder-storage.path")


@dataclass(frozen=True)
class Version:
    path: str
    metadata: TableMetadata
    gzip: bool


@dataclass
class RewritePlan:
    """What a relocation writes (the version files, by source path, oldest first: every other
    rewritten file went to the sink as it was made) and copies (source path -> size)."""

    rewritten: dict[str, bytes] = field(default_factory=dict)
    versions: list[str] = field(default_factory=list)
    copies: dict[str, int | None] = field(default_factory=dict)
    manifest_lists: int = 0
    manifests: int = 0
    delete_files: int = 0


def moved_metadata(md: TableMetadata, move: PrefixMove) -> TableMetadata:
    """``md`` with every location it records moved."""
    snapshots = []
    for s in md.snapshots:
        if s.manifest_list is None:
            raise UnsupportedFeature(f"snapshot {s.snapshot_id} lists its manifests inline (format v1 "
                                     "without a manifest list): relocating it is not supported")
        snapshots.append(dataclasses.replace(s, manifest_list=move(s.manifest_list, "manifest list")))
    props = dict(md.properties)
    for key in LOCATION_PROPERTIES:
        if key in props:
            props[key] = move(props[key], f"table property {key}")

    def stats(entries: tuple) -> tuple:
        return tuple({**e, "statistics-path": move(e["statistics-path"], "statistics file")}
                     if "statistics-path" in e else dict(e) for e in entries)

    return dataclasses.replace(
        md, location=move(md.location, "table location"), properties=props, snapshots=tuple(snapshots),
        metadata_log=tuple(dataclasses.replace(e, metadata_file=move(e.metadata_file, "metadata file"))
                           for e in md.metadata_log),
        statistics=stats(md.statistics), partition_statistics=stats(md.partition_statistics))


def _statistics_files(md: TableMetadata) -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for e in (*md.statistics, *md.partition_statistics):
        if "statistics-path" in e:
            out[e["statistics-path"]] = e.get("file-size-in-bytes")
    return out


class _Rewriter:
    def __init__(self, io: FileIO, move: PrefixMove, incremental: bool, new_snapshot_ids: set[int],
                 put: Callable[[str, bytes], None]):
        self.io = io
        self.put = put
        self.move = move
        self.incremental = incremental
        self.new_ids = new_snapshot_ids
        self.plan = RewritePlan()
        self._raw: dict[str, RawAvro] = {}
        self._deletes: dict[str, DeleteRewrite] = {}

    def _read(self, path: str, what: str) -> RawAvro:
        raw = self._raw.get(path)
        if raw is None:
            raw = self._raw[path] = read_raw(self.io.read(path), f"{what} {path}")
        return raw

    def new(self, snapshot_id: int | None) -> bool:
        return not self.incremental or snapshot_id in self.new_ids

    def _position_deletes(self, manifest: ManifestRef) -> None:
        for e in content_refs(self._read(manifest.path, "manifest"), manifest.added_snapshot_id):
            if e.status == DELETED or e.content != POSITION_DELETES or e.path in self._deletes:
                continue
            self.move.relative(e.path, "delete file")
            data = self.io.read(e.path)
            if e.file_format == "PUFFIN":
                out, offsets = relocated_deletion_vectors(data, self.move, e.path), None
            else:
                out, offsets = relocated_position_deletes(data, self.move, e.path)
            self._deletes[e.path] = DeleteRewrite(len(out), offsets)
            if self.new(e.snapshot_id):
                self.put(e.path, out)
                self.plan.delete_files += 1

    def manifest(self, manifest: ManifestRef) -> int:
        """Rewrite (or, when it is not new, only measure) one manifest; its new length."""
        raw = self._read(manifest.path, "manifest")
        out = relocated_manifest(raw, self.move, self._deletes)
        if self.new(manifest.added_snapshot_id):
            self.put(manifest.path, out)
            self.plan.manifests += 1
            for e in content_refs(raw, manifest.added_snapshot_id):
                if e.status != DELETED and e.content != POSITION_DELETES and self.new(e.snapshot_id):
                    self.move.relative(e.path, "data file")
                    self.plan.copies[e.path] = e.size
        self._raw.pop(manifest.path, None)
        return len(out)

    def snapshots(self, lists: list[str]) -> None:
        raws = {p: self._read(p, "manifest list") for p in lists}
        manifests: dict[str, ManifestRef] = {}
        for raw in raws.values():
            for m in manifest_refs(raw):
                self.move.relative(m.path, "manifest")
                manifests.setdefault(m.path, m)
        for m in manifests.values():
            if m.content == MANIFEST_DELETES:
                self._position_deletes(m)
        lengths = {p: self.manifest(m) for p, m in manifests.items()}
        for p, raw in raws.items():
            self.put(p, relocated_manifest_list(raw, self.move, lengths))
            self.plan.manifest_lists += 1


def rewrite_table_files(io: FileIO, move: PrefixMove, versions: list[Version], start: TableMetadata | None,
                        put: Callable[[str, bytes], None]) -> RewritePlan:
    """Rewrite ``versions`` (oldest first, the end version last) and what they reach that
    ``start`` (the start version's metadata, None for all) does not have; every rewritten file
    but the versions goes to ``put(source path, bytes)`` as soon as it is made."""
    end = versions[-1].metadata
    start_ids = set() if start is None else {s.snapshot_id for s in start.snapshots}
    new_ids = {s.snapshot_id for v in versions for s in v.metadata.snapshots} - start_ids
    r = _Rewriter(io, move, start is not None, new_ids, put)
    r.snapshots([s.manifest_list for s in end.snapshots
                 if s.snapshot_id not in start_ids and s.manifest_list is not None])
    for v in versions:
        for p, size in _statistics_files(v.metadata).items():
            move.relative(p, "statistics file")
            r.plan.copies[p] = size
    for v in versions:
        r.plan.rewritten[v.path] = metadata_to_bytes(moved_metadata(v.metadata, move), compress=v.gzip)
        r.plan.versions.append(v.path)
    return r.plan


def is_gzip_name(path: str) -> bool:
    name = posixpath.basename(path)
    return name.endswith(".gz.metadata.json") or name.endswith(".metadata.json.gz")
