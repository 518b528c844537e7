"""The manifests of a snapshot and their entries, read for the views that list them (`icectl
inspect`, cherry-pick's added files)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from icectl.spec.metadata import TableMetadata
from icectl.spec.snapshots import Snapshot

if TYPE_CHECKING:
    from icectl.io.storage.files import FileIO
    from icectl.spec.manifests import ManifestEntry, ManifestFile

__all__ = ["read_manifests", "snapshot_entries", "live_entries"]


def read_manifests(io: FileIO, md: TableMetadata, snapshot: Snapshot | None) -> list[ManifestFile]:
    """The manifests of a snapshot (none for no snapshot): its manifest list's, or a v1
    snapshot's inline manifest paths with their sizes and specs (no counts)."""
    from icectl.io.manifest.records import load_manifest_list  # not on the path of metadata-only views
    from icectl.spec.manifests import ManifestFile

    if snapshot is None:
        return []
    if snapshot.manifest_list:
        return load_manifest_list(io, snapshot.manifest_list, md.format_version)
    if snapshot.manifests:  # v1 snapshots may list manifests inline (no list file, no counts)
        return [ManifestFile(manifest_path=p, manifest_length=io.info(p).size, partition_spec_id=_spec_of(io, p),
                             added_snapshot_id=snapshot.snapshot_id) for p in snapshot.manifests]
    return []


def _spec_of(io: FileIO, path: str) -> int:
    from icectl.io.manifest.records import read_avro_metadata

    return int(read_avro_metadata(io.read(path)).get("partition-spec-id", 0))


def snapshot_entries(io: FileIO, md: TableMetadata, snapshot: Snapshot | None, *,
                     stats: bool = False) -> Iterable[tuple[ManifestFile, ManifestEntry]]:
    """Every entry of every manifest of a snapshot, with its manifest; column metrics only
    with ``stats``."""
    from icectl.io.manifest.records import load_manifest

    for m in read_manifests(io, md, snapshot):
        for e in load_manifest(io, m, include_stats=stats):
            yield m, e


def live_entries(io: FileIO, md: TableMetadata, snapshot: Snapshot | None
                 ) -> Iterable[tuple[ManifestFile, ManifestEntry]]:
    """The entries of a snapshot's manifests that are not deleted, with their manifest."""
    from icectl.spec.manifests import DELETED

    return ((m, e) for m, e in snapshot_entries(io, md, snapshot) if e.status != DELETED)
