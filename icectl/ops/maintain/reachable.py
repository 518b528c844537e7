"""What snapshots reach: their manifest lists, manifests, live data and delete files and
statistics files. The one reader behind ``expire`` (what expired snapshots alone reach) and
``orphans`` (what any snapshot reaches).

Reading is *strict* for everything a deletion must not touch: a missing manifest list or
manifest of a snapshot that stays makes the reachable set unknowable, and taking live files for
unreachable ones would delete them, so it raises CorruptMetadata instead. Expired snapshots are
read leniently (an interrupted earlier run may already have deleted some of their files).

Cost. The work follows what the history holds once, not what each snapshot repeats: a manifest
list is read once, and each of its entries is decoded once per table however many later lists
carry it (:class:`~icectl.io.manifest.manifest_list.SharedEntryReader` recognises an entry by
its bytes); a manifest is read once, by the column decoder (paths, content and status columns,
no record per entry); an expired snapshot's manifest whose list entry counts no live file is not
read at all; paths are normalised per directory (:class:`~icectl.ops.maintain.file_removal.PathIdentities`).
So a history of N snapshots of M manifests each costs N x M byte comparisons plus one decode of
each distinct manifest list entry and of each manifest, and the memory held is one entry per
distinct manifest plus the live file paths.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from icectl.errors import CorruptMetadata, NotFound, UnsupportedFeature
from icectl.io.manifest import records as avro
from icectl.io.manifest.manifest_list import SharedEntryReader
from icectl.io.storage.files import FileIO
from icectl.ops.maintain.file_removal import PathIdentities, Progress
from icectl.spec.manifests import DELETED, ManifestFile
from icectl.spec.metadata import TableMetadata
from icectl.spec.snapshots import Snapshot, statistics_path

__all__ = ["ManifestReader", "Reachable", "read_reachable", "statistics_files"]


@dataclass
class ManifestReader:
    """Reads manifest lists and manifests at most once each, in parallel: a retried commit or a
    second pass over the same snapshots reads nothing again (both are immutable).

    ``incomplete`` ends the message of a strict read that finds a file missing (what the
    command does not do because of it)."""

    io: FileIO
    format_version: int
    workers: int
    progress: Progress | None = None
    incomplete: str = "nothing is deleted while the table's metadata is incomplete"
    lists_read: int = 0
    manifests_read: int = 0
    _lists: dict[str, list[ManifestFile] | None] = field(default_factory=dict)
    _entries: dict[str, list[tuple[str, int]] | None] = field(default_factory=dict)
    _list_reader: SharedEntryReader = field(default_factory=SharedEntryReader)
    identities: PathIdentities = field(default_factory=PathIdentities)  # normalises the paths read

    def manifests_of(self, snapshots: Sequence[Snapshot], strict: bool = False) -> dict[str, ManifestFile]:
        """Manifests (by path) the snapshots list; missing manifest lists are skipped unless
        ``strict``."""
        todo = list(dict.fromkeys(s.manifest_list for s in snapshots
                                  if s.manifest_list and s.manifest_list not in self._lists))

        def load(path: str) -> tuple[str, list[ManifestFile] | None]:
            try:
                return path, self._list_reader.load(self.io, path)
            except NotFound:
                return path, None

        for path, got in self._map(load, todo, "reading manifest lists"):
            self._lists[path] = got
            self.lists_read += 1
        return snapshot_manifests(self._lists, snapshots, strict, self.incomplete)

    def live_files(self, manifests: Sequence[ManifestFile], phase: str, strict: bool = False) -> dict[str, int]:
        """Live (added or existing) file paths -> content, across the manifests; missing
        manifests are skipped unless ``strict``.

        Not ``strict`` (the manifests of expired snapshots, whose files may go), a manifest
        whose list entry counts no added and no existing file has no live entry and is not
        read: were the counts wrong, its files would be kept, never deleted. A strict read
        (what stays, what is referenced) reads every manifest."""
        todo = list({m.manifest_path: m for m in manifests
                     if m.manifest_path not in self._entries and (strict or _may_have_live(m))}.values())

        def load(m: ManifestFile) -> tuple[str, list[tuple[str, int]] | None]:
            try:
                data = self.io.read(m.manifest_path)
            except NotFound:
                return m.manifest_path, None
            return m.manifest_path, _live_entries(m, data)

        for path, files in self._map(load, todo, phase):
            self._entries[path] = files
            self.manifests_read += 1
        out: dict[str, int] = {}
        for m in manifests:
            if m.manifest_path not in self._entries:
                continue  # not read: no live entry
            files = self._entries[m.manifest_path]
            if files is None and strict:
                raise CorruptMetadata(f"manifest {m.manifest_path} is missing; {self.incomplete}")
            for path, content in files or ():
                out.setdefault(path, content)
        return out

    def _map(self, fn: Callable[[Any], Any], items: list, phase: str) -> Iterable[Any]:
        if not items:
            return
        if self.workers <= 1 or len(items) == 1:
            yield from self._counted(map(fn, items), phase, len(items))
            return
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            yield from self._counted(pool.map(fn, items), phase, len(items))

    def _counted(self, results: Iterable[Any], phase: str, total: int) -> Iterable[Any]:
        for done, result in enumerate(results, 1):
            yield result
            if self.progress is not None:
                self.progress(phase, done, total)


def snapshot_manifests(lists: dict[str, list[ManifestFile] | None], snapshots: Sequence[Snapshot], strict: bool,
                       incomplete: str) -> dict[str, ManifestFile]:
    """Manifests (by path) of the snapshots, from their manifest lists as read (``lists``: path ->
    manifests, None when missing: skipped unless ``strict``); every reader's one rule."""
    out: dict[str, ManifestFile] = {}
    for s in snapshots:
        if strict and s.manifest_list and lists.get(s.manifest_list) is None:
            raise CorruptMetadata(
                f"manifest list {s.manifest_list} of snapshot {s.snapshot_id} is missing; {incomplete}")
        if s.manifest_list:
            for m in lists.get(s.manifest_list) or ():
                out.setdefault(m.manifest_path, m)
        elif s.manifests:  # v1 inline manifests: only the path matters here
            for p in s.manifests:
                out.setdefault(p, ManifestFile(manifest_path=p, manifest_length=0, partition_spec_id=0,
                                               added_snapshot_id=s.snapshot_id))
    return out


def _may_have_live(m: ManifestFile) -> bool:
    """False when the manifest list entry counts no added and no existing file (v1 lists may
    leave the counts out: then it may)."""
    return not (m.added_files_count == 0 and m.existing_files_count == 0)


def _live_entries(m: ManifestFile, data: bytes) -> list[tuple[str, int]]:
    """(path, content) of the live entries of a manifest's bytes, by the column decoder (no
    record per entry); a manifest it cannot decode is read by the record reader."""
    from icectl.io.formats.avro_container import naming_file
    from icectl.io.manifest.columns import decode_manifest

    try:
        with naming_file("manifest", m.manifest_path):
            cols = decode_manifest(data, path=m.manifest_path, added_snapshot_id=m.added_snapshot_id,
                                   sequence_number=m.sequence_number, first_row_id=m.first_row_id)
    except UnsupportedFeature:
        entries = avro.read_manifest(data, include_stats=False)
        return [(e.data_file.file_path, e.data_file.content) for e in entries if e.status != DELETED]
    return [(p, c) for p, c, st in zip(cols.file_path, cols.content, cols.status) if st != DELETED]


def statistics_files(md: TableMetadata, snapshot_ids: set[int] | None = None) -> set[str]:
    """Statistics and partition-statistics files of the metadata (of some snapshots only)."""
    out: set[str] = set()
    for entry in tuple(md.statistics) + tuple(md.partition_statistics):
        if snapshot_ids is not None and entry.get("snapshot-id") not in snapshot_ids:
            continue
        p = statistics_path(entry)
        if p is not None:
            out.add(p)
    return out


@dataclass(frozen=True)
class Reachable:
    """Everything the snapshots of a metadata version reach (normalised paths), read whole."""

    manifest_lists: frozenset[str]
    manifests: frozenset[str]
    files: frozenset[str]
    statistics: frozenset[str]
    spec_ids: frozenset[int]

    @property
    def all_paths(self) -> frozenset[str]:
        return self.manifest_lists | self.manifests | self.files | self.statistics


def read_reachable(reader: ManifestReader, md: TableMetadata, phase: str = "reading manifests") -> Reachable:
    """Strict: a missing manifest list or manifest raises CorruptMetadata."""
    manifests = reader.manifests_of(md.snapshots, strict=True)
    files = reader.live_files(list(manifests.values()), phase, strict=True)
    norm = reader.identities
    return Reachable(
        manifest_lists=frozenset(norm(s.manifest_list) for s in md.snapshots if s.manifest_list),
        manifests=frozenset(map(norm, manifests)),
        files=frozenset(map(norm, files)),
        statistics=frozenset(map(norm, statistics_files(md))),
        spec_ids=frozenset(m.partition_spec_id for m in manifests.values()))
